// sst_compat: writes an SST with the dlcbf filter, or verifies one written
// by another RocksDB version (the cross-version format check of
// tools/run.sh rocksdb-source and of the committed fixtures in tests/data/).
//
//   sst_compat write  <file.sst> <n>   n keys, filter policy dlcbf:10
//   sst_compat verify <file.sst> <n>   ingest into a fresh DB, then Get the
//                                      n keys and n absent keys
//
// Key i (i < n) is "dlcbf-compat-key-%08u" of 2i, value "v%08u" of i; the
// absent keys are the odd numbers in between, inside the file's key range
// (a key outside it would skip the file without asking the filter). The file is written with format_version=5 (the
// newest table format RocksDB 7.8.3 reads; 11.x writes 7 by default) and no
// compression, so both the Debian 7.8.3 build and a current source build
// read it.
//
// verify exits 0 only if (1) the table property rocksdb.filter.policy names
// our policy (the filter block was written by dlcbf), (2) every one of the n
// keys is found with its value (zero false negatives), and (3)
// rocksdb.bloom.filter.useful > 0 (the filter was read and answered "no").
// It prints the end-to-end FPR of the absent keys:
//   sst_compat verify: rocksdb 11.8.1 file=... keys_found=4000/4000
//     false_negatives=0 filter_useful=3962 fpr=0.0095 policy=...
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/filter_policy.h"
#include "dlcbf/rocksdb/registration.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/version.h"

namespace {

constexpr const char* kPolicyId = "dlcbf:10";

std::string Key(uint64_t k) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "dlcbf-compat-key-%08" PRIu64, k);
  return buf;
}
std::string PresentKey(uint32_t i) { return Key(2 * uint64_t{i}); }
std::string AbsentKey(uint32_t i) { return Key(2 * uint64_t{i} + 1); }
std::string Value(uint32_t i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "v%08u", i);
  return buf;
}

int Fail(const std::string& what, const rocksdb::Status& s = rocksdb::Status::OK()) {
  std::fprintf(stderr, "sst_compat: %s%s%s\n", what.c_str(), s.ok() ? "" : ": ",
               s.ok() ? "" : s.ToString().c_str());
  return 1;
}

// Options with the dlcbf filter, created through its registered id.
rocksdb::Status MakeOptions(rocksdb::Options* o) {
  // Registers the ids (idempotent; in the in-tree build RocksDB's plugin
  // table has done it already).
  dlcbf::RegisterAll(*rocksdb::ObjectLibrary::Default(), "");
  std::shared_ptr<const rocksdb::FilterPolicy> policy;
  rocksdb::ConfigOptions cfg;
  rocksdb::Status s = rocksdb::FilterPolicy::CreateFromString(cfg, kPolicyId, &policy);
  if (!s.ok()) return s;
  if (policy == nullptr) return rocksdb::Status::NotFound("no filter policy for dlcbf:10");
  rocksdb::BlockBasedTableOptions t;
  t.filter_policy = policy;
  t.format_version = 5;
  t.whole_key_filtering = true;
  o->table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  o->compression = rocksdb::kNoCompression;
  return rocksdb::Status::OK();
}

int Write(const std::string& path, uint32_t n) {
  rocksdb::Options o;
  rocksdb::Status s = MakeOptions(&o);
  if (!s.ok()) return Fail("options", s);
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), o);
  s = w.Open(path);
  for (uint32_t i = 0; s.ok() && i < n; ++i) {
    s = w.Put(PresentKey(i), Value(i));  // keys sort by i
  }
  if (s.ok()) s = w.Finish();
  if (!s.ok()) return Fail("writing " + path, s);
  std::printf("sst_compat write: rocksdb %d.%d.%d file=%s keys=%u filter=%s format_version=5\n",
              ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH, path.c_str(), n, kPolicyId);
  return 0;
}

int Verify(const std::string& path, uint32_t n) {
  rocksdb::Options o;
  rocksdb::Status s = MakeOptions(&o);
  if (!s.ok()) return Fail("options", s);
  o.create_if_missing = true;
  o.statistics = rocksdb::CreateDBStatistics();
  std::string dir;
  char tmpl[] = "/tmp/sst_compat.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Fail("mkdtemp");
  dir = std::string(tmpl) + "/db";
  rocksdb::DB* raw = nullptr;
  s = dlcbf::compat::OpenDB(o, dir, &raw);
  if (!s.ok()) return Fail("open " + dir, s);
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = false;  // copy: the input file stays untouched
  s = db->IngestExternalFile({path}, ingest);
  if (!s.ok()) return Fail("ingest " + path, s);

  rocksdb::TablePropertiesCollection props;
  s = db->GetPropertiesOfAllTables(&props);
  if (!s.ok() || props.size() != 1) return Fail("table properties", s);
  const std::string policy_name = props.begin()->second->filter_policy_name;

  o.statistics->Reset().PermitUncheckedError();
  uint32_t found = 0, false_negatives = 0, absent_found = 0;
  rocksdb::ReadOptions ro;
  for (uint32_t i = 0; i < n; ++i) {
    std::string v;
    rocksdb::Status g = db->Get(ro, PresentKey(i), &v);
    if (g.ok() && v == Value(i)) {
      ++found;
    } else {
      ++false_negatives;
      if (false_negatives <= 5) {
        std::fprintf(stderr, "sst_compat: key %u: %s\n", i, g.ToString().c_str());
      }
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    std::string v;
    if (db->Get(ro, AbsentKey(i), &v).ok()) ++absent_found;
  }
  const uint64_t useful = o.statistics->getTickerCount(rocksdb::BLOOM_FILTER_USEFUL);
  const uint64_t positive = o.statistics->getTickerCount(rocksdb::BLOOM_FILTER_FULL_POSITIVE);
  const uint64_t true_positive =
      o.statistics->getTickerCount(rocksdb::BLOOM_FILTER_FULL_TRUE_POSITIVE);
  const uint64_t fp = positive - true_positive;
  const double fpr = (fp + useful) ? static_cast<double>(fp) / static_cast<double>(fp + useful) : 0;
  std::printf("sst_compat verify: rocksdb %d.%d.%d file=%s keys_found=%u/%u false_negatives=%u "
              "absent_found=%u filter_useful=%" PRIu64 " fpr=%.4f policy=%s\n",
              ROCKSDB_MAJOR, ROCKSDB_MINOR, ROCKSDB_PATCH, path.c_str(), found, n,
              false_negatives, absent_found, useful, fpr, policy_name.c_str());
  db->Close().PermitUncheckedError();
  db.reset();
  rocksdb::DestroyDB(dir, o).PermitUncheckedError();
  std::remove(tmpl);
  if (policy_name != dlcbf::DLeftFilterPolicyName()) return Fail("the SST's filter policy is not dlcbf: '" + policy_name + "'");
  if (false_negatives != 0) return Fail("false negatives");
  if (absent_found != 0) return Fail("absent keys found");
  if (useful == 0) return Fail("rocksdb.bloom.filter.useful is 0: the filter was not used");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: sst_compat {write|verify} <file.sst> <n>\n");
    return 2;
  }
  const std::string mode = argv[1];
  const uint32_t n = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
  if (n == 0) return Fail("n must be > 0");
  if (mode == "write") return Write(argv[2], n);
  if (mode == "verify") return Verify(argv[2], n);
  std::fprintf(stderr, "usage: sst_compat {write|verify} <file.sst> <n>\n");
  return 2;
}
