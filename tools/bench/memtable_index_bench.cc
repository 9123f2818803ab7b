// memtable_index_bench: point lookups against a memtable-resident dataset,
// comparing at equal index memory
//   skip_list         no memtable filter
//   skip_list+bloom   RocksDB's memtable Bloom (memtable_whole_key_filtering,
//                     memtable_prefix_bloom_size_ratio = index bytes / write
//                     buffer size)
//   dlcbf_index       our decorator (dlcbf/rocksdb/memtable_index.h), its
//                     default fast kernel (one 64-byte line per probe)
//   dlcbf_index_general  the same on the general kernel (d = 2, L = 3,
//                     r = 14: 20 instead of 24 bits per key, so it gets its
//                     own sizing's bytes, printed in its filter_bytes)
//   dlcbf_index_dense the same on the dense kernel (id field "dense":
//                     16-bit remainders at 0.75, 24.4 bits per key; not
//                     in the default set)
//   dlcbf_index_dense8  the dense kernel's 8-bit class (id field "dense8":
//                     at 0.85, 12.5 bits per key; not in the default set)
// in two cases: the index sized for the number of keys, and sized for
// 1/drift of them (default 10x more keys than sized). Before those, two
// probes of the index's filter alone (--kernel_probe, --migration_probe):
// KERNELPROBE lines (lookup cost of each kernel) and MIGRATION lines (the
// insert latency through the migration to the ABF).
//
// Workload: a DB with a write buffer large enough that nothing is flushed,
// --num keys written in random order (WAL off), then --reads Gets of
// present keys (readrandom) and of absent keys of the same length
// (readmissing), single-threaded, each timed --repeats times (the median is
// printed). FPR over the readmissing keys: for the built-in Bloom from the
// perf context (bloom_memtable_hit_count / (hit + miss)), for dlcbf_index
// from its statistics (false_positives / (false_positives + skipped)),
// measured in a separate pass so the perf counters do not slow the timed
// runs.
//
// Example:
//   memtable_index_bench --num=1000000 --reads=1000000 --drift=10
#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/memtable_index.h"
#include "filter_policy/rocksdb/memtable_index/memtable_index_internal.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"
#include "rocksdb/table.h"
#include "tools/bench/bench_banner.h"

DEFINE_uint64(num, 1000000, "keys written into the memtable");
DEFINE_uint64(reads, 1000000, "Gets per timed pass (readrandom and readmissing)");
DEFINE_uint64(fpr_reads, 200000, "absent-key Gets of the FPR pass");
DEFINE_uint64(drift, 10, "the drift case sizes the index for num/drift keys (0 = skip)");
DEFINE_uint64(value_size, 32, "value bytes");
DEFINE_int32(repeats, 3, "timed passes per measurement (median reported)");
DEFINE_string(configs, "skip_list,skip_list+bloom,dlcbf_index,dlcbf_index_general",
              "configurations to run");
DEFINE_string(cases, "sized,drift", "cases to run");
DEFINE_bool(kernel_probe, true,
            "first time the index's two kernels alone (ElasticFilter::ContainsHash, the "
            "rep's settings, --num keys), interleaved: KERNELPROBE lines");
DEFINE_bool(migration_probe, true,
            "time every insert into the index's filter alone through its migration to the "
            "ABF: fast kernel in steps, fast kernel in one go, general kernel (MIGRATION lines)");
DEFINE_bool(readrandom, true, "time the readrandom pass (false: readmissing only, e.g. for perf)");
DEFINE_string(db, "", "DB directory prefix (default: a mkdtemp under /tmp)");
DEFINE_string(key_format, "decimal",
              "decimal: zero-padded numbers (db_bench-like, low entropy); hex: 16 hex digits of "
              "a 64-bit mix of the number");
DEFINE_uint64(write_buffer_size, uint64_t{2} << 30, "write buffer bytes (must hold everything)");

namespace {

using rocksdb::DB;
using rocksdb::Options;
using rocksdb::Slice;
using rocksdb::Status;

uint64_t Mix(uint64_t x) {  // SplitMix64 finalizer: a bijection
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Present keys are the even, missing keys the odd numbers; both 16 bytes.
std::string MakeKey(uint64_t n) {
  char b[32];
  if (FLAGS_key_format == "hex") {
    std::snprintf(b, sizeof(b), "%016" PRIx64, Mix(n));
  } else {
    std::snprintf(b, sizeof(b), "%016" PRIu64, n);
  }
  return b;
}
std::string PresentKey(uint64_t i) { return MakeKey(2 * i); }
std::string MissingKey(uint64_t i) { return MakeKey(2 * i + 1); }

struct Result {
  std::string config;
  double readrandom = 0, readmissing = 0;  // ops/sec (median)
  double fpr = -1;                         // over absent keys; -1 = no filter
  uint64_t filter_bytes = 0;               // index/bloom bytes as configured
  uint64_t index_bytes_end = 0;            // dlcbf: footprint at the end (retained incl.)
  std::string mode;
  uint64_t found = 0;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double TimeOps(uint64_t n, F&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  body();
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(n) / s;
}

std::string TempDirPath() {
  static const std::string path = [] {
    if (!FLAGS_db.empty()) return FLAGS_db;
    char tmpl[] = "/tmp/memtable_index_bench_XXXXXX";
    const char* p = mkdtemp(tmpl);
    if (p == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    return std::string(p);
  }();
  return path;
}

// One configuration's DB, filled and kept open so the timed passes of all
// configurations can be interleaved (the machine may be shared).
struct Run {
  Result r;
  std::string path;
  Options opts;
  std::shared_ptr<rocksdb::MemTableRepFactory> factory;
  std::unique_ptr<DB> db;
  std::vector<double> rr, rm;
};

bool IsIndex(const std::string& config) {
  return config == "dlcbf_index" || config == "dlcbf_index_general" || config == "dlcbf_index_dense" ||
         config == "dlcbf_index_dense8";
}

void Setup(Run* run, const std::string& config, uint64_t sized_for, uint64_t equal_bytes,
           const std::vector<uint64_t>& order) {
  Result& r = run->r;
  r.config = config;
  run->path = TempDirPath() + "/" + config;
  Options& opts = run->opts;
  opts.create_if_missing = true;
  opts.write_buffer_size = FLAGS_write_buffer_size;
  opts.max_write_buffer_number = 4;
  opts.disable_auto_compactions = true;
  if (config == "skip_list+bloom") {
    opts.memtable_whole_key_filtering = true;
    opts.memtable_prefix_bloom_size_ratio =
        static_cast<double>(equal_bytes) / static_cast<double>(FLAGS_write_buffer_size);
    r.filter_bytes = equal_bytes;
  } else if (IsIndex(config)) {
    dlcbf::MemTableIndexOptions mi;
    mi.expected_entries = sized_for;
    mi.fast_kernel = config == "dlcbf_index" || config == "dlcbf_index_dense" || config == "dlcbf_index_dense8";
    mi.dense_kernel = config == "dlcbf_index_dense" || config == "dlcbf_index_dense8";
    if (config == "dlcbf_index_dense8") mi.dense_remainder_bits = 8;
    Status s = dlcbf::NewDLeftIndexedMemTableRepFactory(nullptr, mi, &run->factory);
    if (!s.ok()) {
      std::fprintf(stderr, "factory: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    opts.memtable_factory = run->factory;
  } else if (config != "skip_list") {
    std::fprintf(stderr, "unknown config %s\n", config.c_str());
    std::exit(1);
  }
  rocksdb::DestroyDB(run->path, opts).PermitUncheckedError();
  DB* raw = nullptr;
  Status s = dlcbf::compat::OpenDB(opts, run->path, &raw);
  if (!s.ok()) {
    std::fprintf(stderr, "open %s: %s\n", run->path.c_str(), s.ToString().c_str());
    std::exit(1);
  }
  run->db.reset(raw);
  if (run->factory) {
    dlcbf::MemTableIndexFactoryStats st;
    dlcbf::GetMemTableIndexStats(run->factory.get(), &st).PermitUncheckedError();
    r.filter_bytes = st.live.empty() ? 0 : st.live[0].index_bytes;
  }
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  const std::string value(FLAGS_value_size, 'v');
  for (uint64_t i : order) {
    s = run->db->Put(wo, PresentKey(i), value);
    if (!s.ok()) {
      std::fprintf(stderr, "put: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  uint64_t imm = 0, files = 0;
  run->db->GetIntProperty("rocksdb.num-immutable-mem-table", &imm);
  run->db->GetIntProperty("rocksdb.num-files-at-level0", &files);
  if (imm != 0 || files != 0) {
    std::fprintf(stderr, "dataset is not memtable-resident (imm=%" PRIu64 " L0=%" PRIu64 ")\n",
                 imm, files);
    std::exit(1);
  }
}

void TimedPass(Run* run, const std::vector<std::string>& keys, bool present) {
  rocksdb::ReadOptions ro;
  std::string v;
  uint64_t found = 0;
  const double ops = TimeOps(keys.size(), [&] {
    for (const std::string& k : keys) found += run->db->Get(ro, k, &v).ok() ? 1 : 0;
  });
  if (found != (present ? keys.size() : 0)) {
    std::fprintf(stderr, "%s: %s found %" PRIu64 " of %zu\n", run->r.config.c_str(),
                 present ? "readrandom" : "readmissing", found, keys.size());
    std::exit(1);
  }
  (present ? run->rr : run->rm).push_back(ops);
}

void MeasureFpr(Run* run) {
  Result& r = run->r;
  rocksdb::ReadOptions ro;
  std::string v;
  const uint64_t n = std::min<uint64_t>(FLAGS_fpr_reads, FLAGS_num);
  if (r.config == "skip_list+bloom") {
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
    rocksdb::get_perf_context()->Reset();
    for (uint64_t i = 0; i < n; ++i) {
      run->db->Get(ro, MissingKey(FLAGS_num - 1 - i), &v).PermitUncheckedError();
    }
    const double hit = static_cast<double>(rocksdb::get_perf_context()->bloom_memtable_hit_count);
    const double miss = static_cast<double>(rocksdb::get_perf_context()->bloom_memtable_miss_count);
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
    r.fpr = hit + miss > 0 ? hit / (hit + miss) : -1;
  } else if (IsIndex(r.config)) {
    dlcbf::MemTableIndexFactoryStats a, b;
    dlcbf::GetMemTableIndexStats(run->factory.get(), &a).PermitUncheckedError();
    for (uint64_t i = 0; i < n; ++i) {
      run->db->Get(ro, MissingKey(FLAGS_num - 1 - i), &v).PermitUncheckedError();
    }
    dlcbf::GetMemTableIndexStats(run->factory.get(), &b).PermitUncheckedError();
    const double fp = static_cast<double>(b.live[0].false_positives - a.live[0].false_positives);
    const double skipped =
        static_cast<double>(b.live[0].skipped_searches - a.live[0].skipped_searches);
    r.fpr = fp + skipped > 0 ? fp / (fp + skipped) : -1;
    r.index_bytes_end = b.live[0].index_bytes;
    r.mode = dlcbf::ToString(b.live[0].mode);
    std::printf("    %s stats: %s\n", r.config.c_str(), b.live[0].ToString().c_str());
  }
}

void Teardown(Run* run) {
  run->r.readrandom = Median(run->rr);
  run->r.readmissing = Median(run->rm);
  run->db.reset();
  rocksdb::DestroyDB(run->path, run->opts).PermitUncheckedError();
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos
                                                                        : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Bytes of a dlcbf_index (default kernel) sized for `entries`, to give the
// built-in Bloom the same memory.
uint64_t IndexBytesFor(uint64_t entries) {
  dlcbf::MemTableIndexOptions mi;
  mi.expected_entries = entries;
  std::shared_ptr<rocksdb::MemTableRepFactory> f;
  dlcbf::NewDLeftIndexedMemTableRepFactory(nullptr, mi, &f).PermitUncheckedError();
  const std::string path = TempDirPath() + "/probe";
  Options opts;
  opts.create_if_missing = true;
  opts.write_buffer_size = FLAGS_write_buffer_size;
  opts.memtable_factory = f;
  DB* raw = nullptr;
  if (!dlcbf::compat::OpenDB(opts, path, &raw).ok()) return 0;
  dlcbf::MemTableIndexFactoryStats st;
  dlcbf::GetMemTableIndexStats(f.get(), &st).PermitUncheckedError();
  delete raw;
  rocksdb::DestroyDB(path, opts).PermitUncheckedError();
  return st.live.empty() ? 0 : st.live[0].index_bytes;
}

// The index filter's options, exactly as a dlcbf_index rep (default
// options, one kernel or the other) sizes it for n entries.
dlcbf::ElasticOptions IndexOptions(bool fast_kernel, uint64_t n) {
  dlcbf::MemTableIndexOptions mi;
  mi.fast_kernel = fast_kernel;
  return dlcbf::memtable_index::IndexFilterOptions(mi, n);
}

// The two kernels of the index on their own: ElasticFilter with the rep's
// settings (IndexFilterOptions: thread_safe, sizing load 0.75, 1-bit ABF
// counters; the general kernel d = 2, L = 3, r = 14, c = 1), `n` keys,
// then interleaved rounds of
// ContainsHash over absent and present hashes. One line per kernel:
//   KERNELPROBE kernel=<fast|general> n=<keys> bits/key=<x>
//     neg_ns=<median> (min-max) pos_ns=<median> fpr=<measured>% pred=<model>%
void KernelProbe(uint64_t n) {
  struct K {
    const char* name;
    std::unique_ptr<dlcbf::ElasticFilter> f;
    std::vector<double> neg, pos;
    uint64_t fp = 0, probes = 0;
  };
  K ks[2] = {{"fast", nullptr, {}, {}}, {"general", nullptr, {}, {}}};
  for (int i = 0; i < 2; ++i) {
    dlcbf::Status s = dlcbf::ElasticFilter::Create(IndexOptions(i == 0, n), &ks[i].f);
    if (!s.ok()) {
      std::fprintf(stderr, "kernel probe: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    for (uint64_t j = 0; j < n; ++j) (void)ks[i].f->InsertHash(Mix(2 * j));  // result not needed here
  }
  const uint64_t q = std::max<uint64_t>(FLAGS_reads, 1);
  uint64_t sink = 0;
  for (int rep = 0; rep < std::max(FLAGS_repeats, 3); ++rep) {
    for (K& k : ks) {
      uint64_t hits = 0;
      const double neg = TimeOps(q, [&] {
        for (uint64_t j = 0; j < q; ++j) hits += k.f->ContainsHash(Mix(2 * (j + rep * q) + 1));
      });
      k.fp += hits;
      k.probes += q;
      uint64_t found = 0;
      const double pos = TimeOps(q, [&] {
        for (uint64_t j = 0; j < q; ++j) found += k.f->ContainsHash(Mix(2 * ((j * 7919) % n)));
      });
      if (found != q) {
        std::fprintf(stderr, "kernel probe %s: a false negative\n", k.name);
        std::exit(1);
      }
      sink += found;
      k.neg.push_back(1e9 / neg);
      k.pos.push_back(1e9 / pos);
    }
  }
  for (K& k : ks) {
    const dlcbf::ElasticStats st = k.f->Stats();
    std::sort(k.neg.begin(), k.neg.end());
    std::printf("KERNELPROBE kernel=%-7s n=%" PRIu64 " bits/key=%.2f neg_ns=%.1f (%.1f-%.1f)"
                " pos_ns=%.1f fpr=%.4f%% pred=%.4f%%\n",
                k.name, n, 8.0 * static_cast<double>(st.bytes) / static_cast<double>(n),
                Median(k.neg), k.neg.front(), k.neg.back(), Median(k.pos),
                100.0 * static_cast<double>(k.fp) / static_cast<double>(k.probes),
                100.0 * st.predicted_fpr);
  }
  if (sink == 0) std::printf("\n");
}

// The write-side cost of drift: ElasticFilter with the rep's settings
// (IndexOptions),
// sized for n, fed keys until it has migrated, every insert timed. One
// line per variant:
//   MIGRATION kernel=<fast|general> steps=<1|0> n=<sized for>
//     migrated_at=<items at the switch / n> cause=<why>
//     migrating_inserts=<the steps, or the one insert that migrated>
//     worst_us=<their max> mean_us=<their mean>
//     other_inserts: p50_us=<median> worst_us=<max> (first-touch page
//     faults of the dlCBF itself included)
void MigrationProbe(uint64_t n) {
  for (int variant = 0; variant < 3; ++variant) {
    dlcbf::ElasticOptions eo = IndexOptions(variant < 2, n);
    eo.incremental_migration = variant == 0;  // (the general kernel ignores it)
    std::unique_ptr<dlcbf::ElasticFilter> f;
    dlcbf::Status s = dlcbf::ElasticFilter::Create(eo, &f);
    if (!s.ok()) {
      std::fprintf(stderr, "migration probe: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    double worst = 0, worst_other = 0, step_sum = 0;
    uint64_t steps = 0, i = 0;
    std::vector<double> others;
    others.reserve(n + n / 2);
    for (; f->mode() == dlcbf::ElasticMode::kDLeft && i < 4 * n; ++i) {
      const bool stepping = f->migrating();
      const auto t0 = std::chrono::steady_clock::now();
      (void)f->InsertHash(Mix(2 * i));  // result not needed here
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (stepping || f->migrating() || f->mode() != dlcbf::ElasticMode::kDLeft) {
        // a step, or the insert that migrated in one go
        worst = std::max(worst, us);
        step_sum += us;
        ++steps;
      } else {
        worst_other = std::max(worst_other, us);
        others.push_back(us);
      }
    }
    const dlcbf::ElasticStats st = f->Stats();
    std::printf("MIGRATION kernel=%-7s steps=%d n=%" PRIu64 " migrated_at=%.2fx cause=%-11s"
                " migrating_inserts=%-5" PRIu64 " worst_us=%-6.0f mean_us=%-7.1f"
                " other_inserts: p50_us=%.2f worst_us=%.0f\n",
                variant < 2 ? "fast" : "general", variant == 0 ? 1 : 0, n,
                static_cast<double>(st.migrated_items) / static_cast<double>(n),
                dlcbf::ToString(st.migration_cause), steps, worst,
                steps ? step_sum / static_cast<double>(steps) : 0.0, Median(others), worst_other);
  }
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("memtable index benchmark: skip_list vs memtable Bloom vs dlcbf_index");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  dlcbf::bench::PrintBuildBanner();
  std::mt19937_64 rng(42);
  std::vector<uint64_t> order(FLAGS_num);
  for (uint64_t i = 0; i < FLAGS_num; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<uint64_t> probes(std::min<uint64_t>(FLAGS_num, 1 << 20));
  for (auto& p : probes) p = rng() % FLAGS_num;

  if (FLAGS_key_format != "decimal" && FLAGS_key_format != "hex") {
    std::fprintf(stderr, "--key_format must be decimal or hex\n");
    return 1;
  }
  std::printf("memtable_index_bench: num=%" PRIu64 " reads=%" PRIu64 " value_size=%" PRIu64
              " key_format=%s repeats=%d write_buffer_size=%" PRIu64 "\n",
              FLAGS_num, FLAGS_reads, FLAGS_value_size, FLAGS_key_format.c_str(), FLAGS_repeats,
              FLAGS_write_buffer_size);
  if (FLAGS_kernel_probe) KernelProbe(FLAGS_num);
  if (FLAGS_migration_probe) MigrationProbe(FLAGS_num);
  for (const std::string& c : Split(FLAGS_cases)) {
    uint64_t sized_for = FLAGS_num;
    if (c == "drift") {
      if (FLAGS_drift == 0) continue;
      sized_for = std::max<uint64_t>(1, FLAGS_num / FLAGS_drift);
    } else if (c != "sized") {
      std::fprintf(stderr, "unknown case %s\n", c.c_str());
      return 1;
    }
    const uint64_t equal_bytes = IndexBytesFor(sized_for);
    std::printf("case=%s sized_for=%" PRIu64 " keys=%" PRIu64 " index_bytes=%" PRIu64
                " (%.2f bits/key sized, %.2f bits/key actual)\n",
                c.c_str(), sized_for, FLAGS_num, equal_bytes, 8.0 * equal_bytes / sized_for,
                8.0 * equal_bytes / FLAGS_num);
    std::vector<std::string> present, missing;
    present.reserve(FLAGS_reads);
    missing.reserve(FLAGS_reads);
    for (uint64_t i = 0; i < FLAGS_reads; ++i) {
      present.push_back(PresentKey(probes[i % probes.size()]));
      missing.push_back(MissingKey(probes[(i * 7 + 3) % probes.size()]));
    }
    std::vector<std::unique_ptr<Run>> runs;
    for (const std::string& config : Split(FLAGS_configs)) {
      runs.emplace_back(new Run);
      Setup(runs.back().get(), config, sized_for, equal_bytes, order);
    }
    // Interleaved timed passes: every configuration once per round.
    for (int rep = 0; rep < FLAGS_repeats; ++rep) {
      if (FLAGS_readrandom) {
        for (auto& run : runs) TimedPass(run.get(), present, true);
      }
      for (auto& run : runs) TimedPass(run.get(), missing, false);
    }
    std::vector<Result> results;
    for (auto& run : runs) {
      MeasureFpr(run.get());
      Teardown(run.get());
      results.push_back(run->r);
    }
    std::printf("  %-20s %14s %14s %10s %12s %s\n", "config", "readrandom/s", "readmissing/s",
                "fpr", "filter_bytes", "notes");
    for (const Result& r : results) {
      char fpr[32];
      if (r.fpr < 0) {
        std::snprintf(fpr, sizeof(fpr), "%10s", "-");
      } else {
        std::snprintf(fpr, sizeof(fpr), "%10.5f", r.fpr);
      }
      std::string notes;
      if (!r.mode.empty()) {
        notes = "mode=" + r.mode + " bytes_at_end=" + std::to_string(r.index_bytes_end);
      }
      std::printf("  %-20s %14.0f %14.0f %s %12" PRIu64 " %s\n", r.config.c_str(), r.readrandom,
                  r.readmissing, fpr, r.filter_bytes, notes.c_str());
    }
  }
  if (FLAGS_db.empty()) rmdir(TempDirPath().c_str());
  return 0;
}
