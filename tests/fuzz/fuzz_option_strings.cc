// Fuzz target 4: option strings.
//
// The input is a string handed to FilterPolicy::CreateFromString,
// MemTableRepFactory::CreateFromString and to our own parsers
// (ParseDLeftFilterPolicyId, ParseMemTableIndexId), as an OPTIONS file or a
// user would. None may crash, abort or throw. An id that our factories
// claim (it starts with "dlcbf") must give OK or InvalidArgument, and an
// accepted one must round-trip: GetId() parses back to the same id.
// The first byte chooses a prefix ("dlcbf:", "dlcbf_index:", or none) so
// the fuzzer spends its time inside our grammars.
//
// RocksDB's own parsers are not under test: its pattern factories parse
// numbers with std::stoull and throw std::out_of_range for
// "skip_list:<20 digits>" (7.8.3 through 11.8.1,
// table/plain/plain_table_factory.cc). An exception from a string that is
// not ours is therefore ignored; from one of ours it is a failure (our
// memtable factory catches the base factory's exceptions itself).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "dlcbf/rocksdb/filter_policy.h"
#include "dlcbf/rocksdb/memtable_index.h"
#include "dlcbf/rocksdb/registration.h"
#include "fuzz_util.h"
#include "rocksdb/convenience.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/utilities/object_registry.h"

namespace {

using dlcbf::fuzz::Fail;

bool IsMemTableId(const std::string& s) {
  return s == "dlcbf_index" || s.compare(0, 12, "dlcbf_index:") == 0;
}
bool IsPolicyId(const std::string& s) {
  for (const char* p : {"dlcbf", "dlcbf.DLeftFilterPolicy"}) {
    const size_t n = std::strlen(p);
    if (s.compare(0, n, p) == 0 && (s.size() == n || s[n] == ':')) return true;
  }
  return false;
}

void CheckStatus(const rocksdb::Status& s, const std::string& input, bool ours, const char* api) {
  if (s.ok() || s.IsInvalidArgument()) return;
  // Names that are not ours may be unknown to RocksDB (NotSupported /
  // NotFound); ours must be answered with InvalidArgument. (A memtable id
  // with "base:<id>" reports the base factory's own status.)
  if (ours && input.find("base:") == std::string::npos) {
    Fail(api, "returned " + s.ToString() + " (not InvalidArgument) for \"" + input + "\"");
  }
}

const rocksdb::ConfigOptions& Config() {
  static rocksdb::ConfigOptions* c = [] {
    dlcbf::RegisterAll(*rocksdb::ObjectLibrary::Default());
    auto* cfg = new rocksdb::ConfigOptions();
    cfg->ignore_unsupported_options = false;
    return cfg;
  }();
  return *c;
}

// Runs `call` (a RocksDB CreateFromString). Returns false when RocksDB
// threw for a string that is not ours (the caller skips its checks).
template <typename Call>
bool CallRocksDB(const char* api, const std::string& input, bool ours, rocksdb::Status* st, Call call) {
  try {
    *st = call();
    return true;
  } catch (const std::exception& e) {
    if (ours) Fail(api, std::string("threw ") + e.what() + " for \"" + input + "\"");
  } catch (...) {
    if (ours) Fail(api, "threw for \"" + input + "\"");
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 512) return 0;
  static const char* const kPrefix[] = {"", "dlcbf:", "dlcbf_index:", "dlcbf:10:"};
  std::string s = kPrefix[data[0] % 4];
  s.append(reinterpret_cast<const char*>(data + 1), size - 1);
  const rocksdb::ConfigOptions& cfg = Config();

  // Filter policy.
  std::shared_ptr<const rocksdb::FilterPolicy> policy;
  rocksdb::Status st;
  const bool policy_called =
      CallRocksDB("FilterPolicy::CreateFromString", s, IsPolicyId(s), &st,
                  [&] { return rocksdb::FilterPolicy::CreateFromString(cfg, s, &policy); });
  if (policy_called) CheckStatus(st, s, IsPolicyId(s), "FilterPolicy::CreateFromString");
  if (policy_called && st.ok() && policy && dlcbf::IsDLeftFilterPolicy(policy.get())) {
    const std::string id = policy->GetId();
    std::shared_ptr<const rocksdb::FilterPolicy> again;
    if (!rocksdb::FilterPolicy::CreateFromString(cfg, id, &again).ok() || !again ||
        again->GetId() != id) {
      Fail("filter policy id does not round-trip", s + " -> " + id);
    }
  }
  dlcbf::DLeftFilterPolicyOptions fo;
  st = dlcbf::ParseDLeftFilterPolicyId(s, &fo);
  if (!st.ok() && !st.IsInvalidArgument()) Fail("ParseDLeftFilterPolicyId", st.ToString());
  if (st.ok()) {
    dlcbf::DLeftFilterPolicyOptions fo2;
    const std::string id = dlcbf::DLeftFilterPolicyId(fo);
    if (!dlcbf::ParseDLeftFilterPolicyId(id, &fo2).ok()) Fail("DLeftFilterPolicyId not parseable", id);
  }

  // Memtable rep factory.
  std::shared_ptr<rocksdb::MemTableRepFactory> factory;
  const bool factory_called =
      CallRocksDB("MemTableRepFactory::CreateFromString", s, IsMemTableId(s), &st,
                  [&] { return rocksdb::MemTableRepFactory::CreateFromString(cfg, s, &factory); });
  if (factory_called) CheckStatus(st, s, IsMemTableId(s), "MemTableRepFactory::CreateFromString");
  if (factory_called && st.ok() && factory && s.compare(0, 11, "dlcbf_index") == 0) {
    const std::string id = factory->GetId();
    std::shared_ptr<rocksdb::MemTableRepFactory> again;
    if (!rocksdb::MemTableRepFactory::CreateFromString(cfg, id, &again).ok() || !again ||
        again->GetId() != id) {
      Fail("memtable factory id does not round-trip", s + " -> " + id);
    }
  }
  dlcbf::MemTableIndexOptions mo;
  std::string base;
  st = dlcbf::ParseMemTableIndexId(s, &mo, &base);
  if (!st.ok() && !st.IsInvalidArgument()) Fail("ParseMemTableIndexId", st.ToString());
  return 0;
}
