// Registration of every dlcbf RocksDB extension with an ObjectLibrary, so
// they can be created by name (FilterPolicy::CreateFromString, OPTIONS
// files, db_bench --options_file).
//
// libdlcbf_plugin.so registers everything with ObjectLibrary::Default()
// from a static initializer as soon as it is loaded (LD_PRELOAD or
// dlopen). Programs that link the static library `dlcbf` should call
// RegisterAll(*rocksdb::ObjectLibrary::Default()) once before parsing
// options (the linker drops unreferenced static initializers from static
// archives, so automatic registration cannot be relied on there).
#pragma once

#include <string>

#include "rocksdb/utilities/object_registry.h"

namespace dlcbf {

// Adds the factories of every extension in this project. Idempotent per
// library: calling it again (or after the automatic registration) adds
// nothing. Returns the number of factories added now. The signature is a
// rocksdb::RegistrarFunc, so it can also be passed to
// ObjectRegistry::AddLibrary("dlcbf", dlcbf::RegisterAll, "").
int RegisterAll(rocksdb::ObjectLibrary& library, const std::string& arg = "");

// Only the filter policy: ids "dlcbf", "dlcbf:<...>" (see
// dlcbf/rocksdb/filter_policy.h) and the alias "dlcbf.DLeftFilterPolicy".
// Idempotent; returns the number of factories added now.
int RegisterDLeftFilterPolicy(rocksdb::ObjectLibrary& library);

}  // namespace dlcbf
