// Entry points of libdlcbf_plugin.so.
//
// Loading the plugin (LD_PRELOAD or dlopen) registers every dlcbf factory
// with rocksdb::ObjectLibrary::Default() through the static initializer in
// registration.cc, which the plugin links in whole. The C symbol below lets
// a host that loads the plugin with dlopen() register the factories with
// any other ObjectLibrary too:
//   auto fn = (int (*)(rocksdb::ObjectLibrary&, const std::string&))
//       dlsym(handle, "dlcbf_register_all");
#include <string>

#include "dlcbf/rocksdb/registration.h"

extern "C" __attribute__((visibility("default"))) int dlcbf_register_all(
    rocksdb::ObjectLibrary& library, const std::string& arg) {
  return dlcbf::RegisterAll(library, arg);
}
