// Registration of the project's RocksDB extensions with an ObjectLibrary.
//
// RegisterAll is the single entry point: every extension that can be
// created by name (the dlcbf filter policy now; the memtable rep factory
// later) is added here. A static initializer registers everything with
// ObjectLibrary::Default() when the code is loaded. In libdlcbf_plugin.so
// that happens at LD_PRELOAD/dlopen time (the plugin links this object with
// --whole-archive semantics so the initializer is kept). In the static
// library the initializer only runs if this object file is linked in, so
// static users call RegisterAll explicitly; registration is idempotent.
#include "dlcbf/rocksdb/registration.h"

#include <memory>
#include <mutex>
#include <atomic>
#include <cstdio>
#include <string>

#include "dlcbf/rocksdb/filter_policy.h"
#include "dlcbf/rocksdb/memtable_index.h"
#include "rocksdb/filter_policy.h"

namespace dlcbf {

int RegisterDLeftFilterPolicy(rocksdb::ObjectLibrary& library) {
  static std::mutex mu;  // makes check-then-add atomic among our callers
  std::lock_guard<std::mutex> lock(mu);
  // Already registered (by the static initializer or an earlier call)?
  if (library.FindFactory<const rocksdb::FilterPolicy>(DLeftFilterPolicyName()) != nullptr) {
    return 0;
  }
  // Matches "dlcbf", "dlcbf:<anything>", and the same with the nickname
  // "dlcbf.DLeftFilterPolicy". The text after the first ':' is parsed by
  // ParseDLeftFilterPolicyId, so malformed values get a precise
  // InvalidArgument ("dlcbf:abc", "dlcbf:-3", "dlcbf:nan", "dlcbf:10:d99")
  // rather than "Could not load FilterPolicy". PatternEntry::AddNumber would
  // not do: AddNumber(":") matches integers only and rejects "dlcbf:9.5".
  library.AddFactory<const rocksdb::FilterPolicy>(
      rocksdb::ObjectLibrary::PatternEntry(DLeftFilterPolicyName(), /*optional=*/true)
          .AnotherName("dlcbf.DLeftFilterPolicy")
          .AddSeparator(":", /*at_least_one=*/false),
      [](const std::string& uri, std::unique_ptr<const rocksdb::FilterPolicy>* guard,
         std::string* errmsg) -> const rocksdb::FilterPolicy* {
        DLeftFilterPolicyOptions options;
        rocksdb::Status s = ParseDLeftFilterPolicyId(uri, &options);
        if (s.ok()) s = NewDLeftFilterPolicy(options, guard);
        if (!s.ok()) {
          *errmsg = s.getState() ? s.getState() : s.ToString();
          guard->reset();
          // RocksDB 7.8.3 parses BlockBasedTableOptions::filter_policy with
          // kByNameAllowFromNull: in an options string or OPTIONS file a
          // policy whose factory fails is DROPPED without an error and the
          // table is built with no filter. Say so on stderr (there is no
          // Logger here), at most 16 times per process (no
          // silent fallback without a log line).
          static std::atomic<int> reported{0};
          if (reported.fetch_add(1, std::memory_order_relaxed) < 16) {
            std::fprintf(stderr,
                         "[dlcbf] invalid filter policy \"%s\": %s (if this came from an "
                         "options string or OPTIONS file, RocksDB continues WITHOUT a filter)\n",
                         uri.c_str(), errmsg->c_str());
          }
          return nullptr;
        }
        return guard->get();
      });
  return 1;
}

int RegisterAll(rocksdb::ObjectLibrary& library, const std::string& /*arg*/) {
  int added = 0;
  added += RegisterDLeftFilterPolicy(library);
  added += RegisterDLeftIndexedMemTableRepFactory(library);
  return added;
}

namespace {
// Runs when the code is loaded (shared plugin, or this object linked in).
[[maybe_unused]] const int kRegisteredAtLoad = RegisterAll(*rocksdb::ObjectLibrary::Default());
}  // namespace

}  // namespace dlcbf
