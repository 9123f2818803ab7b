// Entry points of libdlcbf_plugin.so.
//
// Loading the plugin (LD_PRELOAD or dlopen) registers every dlcbf factory
// with rocksdb::ObjectLibrary::Default() through the static initializer in
// registration.cc, which the plugin links in whole. The C symbol below lets
// a host that loads the plugin with dlopen() register the factories with
// any other ObjectLibrary too:
//   auto fn = (int (*)(rocksdb::ObjectLibrary&, const std::string&))
//       dlsym(handle, "dlcbf_register_all");
// and dlcbf_check_filter_id lets a tool that is not C++ (db_bench_ext's
// Python wrapper, through ctypes) ask RocksDB's own parser about an id.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "dlcbf/rocksdb/registration.h"
#include "rocksdb/convenience.h"
#include "rocksdb/filter_policy.h"

extern "C" __attribute__((visibility("default"))) int dlcbf_register_all(
    rocksdb::ObjectLibrary& library, const std::string& arg) {
  return dlcbf::RegisterAll(library, arg);
}

// Parses `id` with rocksdb::FilterPolicy::CreateFromString, exactly as an
// OPTIONS file's filter_policy= is parsed with this plugin loaded. Returns
// 1 and writes "" when RocksDB creates a policy from it, 0 and writes the
// parser's message (Status::ToString, truncated to len - 1 bytes) when it
// does not. buf must hold len >= 1 bytes. Thread-safe.
extern "C" __attribute__((visibility("default"))) int dlcbf_check_filter_id(const char* id, char* buf,
                                                                            size_t len) {
  std::shared_ptr<const rocksdb::FilterPolicy> policy;
  rocksdb::ConfigOptions config;
  const rocksdb::Status s = rocksdb::FilterPolicy::CreateFromString(config, id == nullptr ? "" : id, &policy);
  const bool ok = s.ok() && policy != nullptr;
  const std::string msg = ok ? std::string() : (s.ok() ? std::string("no policy created") : s.ToString());
  if (buf != nullptr && len > 0) {
    const size_t n = msg.size() < len - 1 ? msg.size() : len - 1;
    std::memcpy(buf, msg.data(), n);
    buf[n] = '\0';
  }
  return ok ? 1 : 0;
}
