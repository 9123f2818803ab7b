// Recovers the user comparator behind a MemTableRep::KeyComparator by
// checking the exported vtables of RocksDB 7.8's and 9.10's MemTable::KeyComparator and
// InternalKeyComparator (the layouts are in ../abi/memtable_abi.h; an
// in-tree build reads the member through RocksDB's real declaration).
#include "filter_policy/rocksdb/abi/memtable_abi.h"
#include "rocksdb/comparator.h"
#include "rocksdb/memtablerep.h"


// Exported vtables of the two classes that make up MemTable::KeyComparator
// (see filter_policy/rocksdb/abi/memtable_abi.h). Weak: if a RocksDB build lacks them, their
// address is null and the comparator is reported as unknown.
extern const void* const dlcbf_rocksdb_memtable_keycmp_vtable[] __asm__(
    "_ZTVN7rocksdb8MemTable13KeyComparatorE") __attribute__((weak));
extern const void* const dlcbf_rocksdb_internal_keycmp_vtable[] __asm__(
    "_ZTVN7rocksdb21InternalKeyComparatorE") __attribute__((weak));


namespace dlcbf {

using rocksdb::MemTableRep;

// ---------------------------------------------------------------------------
// Internal ABI helper
// ---------------------------------------------------------------------------
namespace internal {

#define DLCBF_MI_XSTR2(x) #x
#define DLCBF_MI_XSTR(x) DLCBF_MI_XSTR2(x)

const rocksdb::Comparator* UserComparatorOfMemTable(const MemTableRep::KeyComparator& key_cmp) {
#if defined(DLCBF_ROCKSDB_IN_TREE)
  // The real MemTable::KeyComparator is declared (db/memtable.h). RocksDB's
  // Release builds have no RTTI, so the dynamic type is checked by its
  // vtable, as below, before the static_cast.
  if (std::strcmp(DLCBF_MI_XSTR(ROCKSDB_NAMESPACE), "rocksdb") != 0) return nullptr;
  const void* const* mt_vtable = dlcbf_rocksdb_memtable_keycmp_vtable;
  if (mt_vtable == nullptr) return nullptr;
  const void* vptr = nullptr;
  std::memcpy(&vptr, reinterpret_cast<const unsigned char*>(&key_cmp), sizeof(vptr));
  if (vptr != static_cast<const void*>(mt_vtable + 2)) return nullptr;
  return static_cast<const rocksdb::MemTable::KeyComparator&>(key_cmp)
      .comparator.user_comparator();
#elif (ROCKSDB_MAJOR == 7 && ROCKSDB_MINOR == 8) || (ROCKSDB_MAJOR == 9 && ROCKSDB_MINOR == 10)
  // The symbol names above are mangled for namespace "rocksdb".
  if (std::strcmp(DLCBF_MI_XSTR(ROCKSDB_NAMESPACE), "rocksdb") != 0) return nullptr;
  const void* const* mt_vtable = dlcbf_rocksdb_memtable_keycmp_vtable;
  const void* const* ik_vtable = dlcbf_rocksdb_internal_keycmp_vtable;
  if (mt_vtable == nullptr || ik_vtable == nullptr) return nullptr;
  // Itanium C++ ABI: an object's vptr points two slots into the vtable
  // (after offset-to-top and the type_info pointer).
  const unsigned char* obj = reinterpret_cast<const unsigned char*>(&key_cmp);
  const void* vptr = nullptr;
  std::memcpy(&vptr, obj, sizeof(vptr));
  if (vptr != static_cast<const void*>(mt_vtable + 2)) return nullptr;
  std::memcpy(&vptr, obj + sizeof(void*), sizeof(vptr));
  if (vptr != static_cast<const void*>(ik_vtable + 2)) return nullptr;
  const rocksdb::Comparator* user_cmp = nullptr;
  std::memcpy(&user_cmp, obj + 2 * sizeof(void*), sizeof(user_cmp));
  return user_cmp;
#else
  (void)key_cmp;
  return nullptr;
#endif
}

}  // namespace internal

}  // namespace dlcbf
