// The few RocksDB-internal memtable facts that a MemTableRep decorator
// needs and that the public headers of RocksDB 7.8 do not provide (mirrored
// for 7.x; taken from RocksDB's own headers in an in-tree build,
// DLCBF_ROCKSDB_IN_TREE).
//
// INTERNAL: for filter_policy/memtable_index.cc and tests/ only.
//
// Why this header exists
//   rocksdb/memtablerep.h hands a MemTableRep three objects whose classes
//   are only forward-declared there: the Allocator (memory/allocator.h),
//   the LookupKey given to Get() (db/lookup_key.h) and the Arena given to
//   GetIterator() (memory/arena.h). Debian's librocksdb-dev installs none of
//   those headers. This file declares just enough of them, written from the
//   7.8.3 sources (no RocksDB code is copied):
//     - rocksdb::Allocator: the abstract class, same virtual functions in
//       the same order (dtor, Allocate, AllocateAligned, BlockSize). Used to
//       allocate our iterator wrapper in the caller's arena (Arena derives
//       from Allocator as its only base, so an Arena* is an Allocator* with
//       the same address) and to read the arena block size.
//     - LookupKey: only the first data member, `const char* start_`, which
//       points at the memtable key (varint32 internal-key length, user key,
//       8-byte tag). Everything else is decoded from those bytes.
//     - The user comparator of the memtable (for its timestamp size): see
//       UserComparatorOfMemTable below.
//
// Stability
//   The guard below refuses anything but 7.x and 9.10 at compile time for
//   the layout-dependent parts (9.10.0's memory/allocator.h, db/lookup_key.h,
//   db/memtable.h, db/dbformat.h and util/user_comparator_wrapper.h were
//   read for this: the same shapes as 7.8.3); UserComparatorOfMemTable additionally verifies
//   the dynamic types at run time and answers "unknown" (nullptr) on any
//   mismatch, in which case the decorator bypasses its index (slower, never
//   wrong). Allocator and LookupKey have had this shape since RocksDB 5.x.
//   Runtime checks live in tests/memtable_index_test.cc (timestamped keys
//   found through the index; an unknown comparator is bypassed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rocksdb/comparator.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/slice.h"
#include "rocksdb/version.h"

#if defined(DLCBF_ROCKSDB_IN_TREE)

// In-tree build (tools/rocksdb_plugin/, or our CMake with
// -DDLCBF_ROCKSDB_SOURCE_DIR): RocksDB's own declarations of Allocator,
// Arena, LookupKey and MemTable::KeyComparator are used; nothing is mirrored.
#include "db/lookup_key.h"
#include "db/memtable.h"
#include "memory/allocator.h"
#include "memory/arena.h"

#if ROCKSDB_MAJOR < 7
#error "dlcbf supports RocksDB 7.x and later"
#endif

#else  // !DLCBF_ROCKSDB_IN_TREE: the installed (Debian 7.8.3) library

#if !defined(ROCKSDB_MAJOR) || !(ROCKSDB_MAJOR == 7 || (ROCKSDB_MAJOR == 9 && ROCKSDB_MINOR == 10))
#error "filter_policy/rocksdb/abi/memtable_abi.h is written for RocksDB 7.x and 9.10; re-check memory/allocator.h, db/lookup_key.h and db/memtable.h of the target version."
#endif

namespace ROCKSDB_NAMESPACE {

class Logger;

// memory/allocator.h (7.8.3 and 9.10.0): same virtual functions, same order.
class Allocator {
 public:
  virtual ~Allocator() {}
  virtual char* Allocate(size_t bytes) = 0;
  virtual char* AllocateAligned(size_t bytes, size_t huge_page_size = 0,
                                Logger* logger = nullptr) = 0;
  virtual size_t BlockSize() const = 0;
};

}  // namespace ROCKSDB_NAMESPACE

#endif  // DLCBF_ROCKSDB_IN_TREE

namespace dlcbf {
namespace internal {

// Decodes a varint32 from [p, limit). nullptr when malformed/truncated.
inline const char* DecodeVarint32(const char* p, const char* limit, uint32_t* v) {
  uint32_t result = 0;
  for (uint32_t shift = 0; shift <= 28 && p < limit; shift += 7) {
    const uint32_t byte = static_cast<unsigned char>(*p++);
    result |= (byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return p;
    }
  }
  return nullptr;
}

// The user key (with its timestamp, if any) of a memtable entry or memtable
// key: varint32 internal-key length, internal key = user key + 8-byte tag.
// Returns false if the bytes are not a well-formed entry head.
inline bool UserKeyOfMemTableKey(const char* entry, rocksdb::Slice* user_key) {
  uint32_t ikey_len = 0;
  const char* p = DecodeVarint32(entry, entry + 5, &ikey_len);
  if (p == nullptr || ikey_len < 8) return false;
  *user_key = rocksdb::Slice(p, ikey_len - 8);
  return true;
}

// LookupKey (db/lookup_key.h, 7.8.3 and 9.10.0): `const char* start_` is its first
// data member and the class is not polymorphic, so it sits at offset 0.
inline const char* MemTableKeyOfLookupKey(const rocksdb::LookupKey& k) {
#if defined(DLCBF_ROCKSDB_IN_TREE)
  return k.memtable_key().data();  // the real class
#else
  const char* start = nullptr;
  std::memcpy(&start, reinterpret_cast<const void*>(&k), sizeof(start));
  return start;
#endif
}

// The user comparator behind the KeyComparator that MemTable passes to
// MemTableRepFactory::CreateMemTableRep, or nullptr if that cannot be
// established with certainty.
//
// 7.8.3 and 9.10.0 facts (db/memtable.h, db/dbformat.h,
// util/user_comparator_wrapper.h):
//   struct MemTable::KeyComparator : MemTableRep::KeyComparator {
//     const InternalKeyComparator comparator; };
//   class InternalKeyComparator : CompareInterface {   // polymorphic
//     UserComparatorWrapper user_comparator_; };       // its only member
//   class UserComparatorWrapper { const Comparator* user_comparator_; };
// So the object is [vptr][InternalKeyComparator vptr][const Comparator*].
// Both vtable pointers are compared with the addresses of the exported
// vtables (weak references: absent symbols give "unknown", never a link
// error), so a KeyComparator of any other dynamic type is never misread.
const rocksdb::Comparator* UserComparatorOfMemTable(
    const rocksdb::MemTableRep::KeyComparator& key_cmp);

}  // namespace internal
}  // namespace dlcbf
