// Declarations of rocksdb::FilterBitsBuilder and rocksdb::FilterBitsReader
// that match the virtual tables of RocksDB 7.x and 9.10 (the installed
// libraries of Debian bookworm and trixie); in an in-tree build
// (DLCBF_ROCKSDB_IN_TREE) the real RocksDB header instead.
//
// INTERNAL: for filter_policy/, tests/ and bench/ only.
//
// Why this header exists
//   Since RocksDB 7.0 these two interfaces live in the internal header
//   table/block_based/filter_policy_internal.h, which distro packages
//   (Debian's librocksdb-dev 7.8.3 included) do not install. The public
//   rocksdb/filter_policy.h only forward-declares them, yet a custom
//   FilterPolicy must return objects derived from them. RocksDB calls these
//   objects only through their vtables, so a declaration with the same
//   namespace, class names and the same virtual functions in the same
//   order is all the ABI that is needed. This header is written from the
//   documented 7.x interface; it copies no RocksDB code.
//
//   The match is checked at run time by tests/filter_policy_test.cc
//   ("VtableMatchesAtRuntime"): a filter built through these classes is
//   written to an SST by the real library, read back, and must answer "no"
//   (rocksdb.bloom.filter.useful > 0) without ever giving a false negative.
//   Verified against Debian's librocksdb 7.8.3 and against a 9.10.0
//   librocksdb.so built from source (docs/VERIFIED_RELEASES.md).
//
// Virtual functions, in vtable order (7.8.3; 9.10 adds AddKeyAndAlt after
// AddKey):
//   FilterBitsBuilder: ~dtor, AddKey(const Slice&), EstimateEntriesAdded(),
//     Finish(std::unique_ptr<const char[]>*),
//     Finish(std::unique_ptr<const char[]>*, Status*)   [default: Finish(buf)]
//     MaybePostVerify(const Slice&)                     [default: OK]
//     ApproximateNumEntries(size_t bytes)
//   FilterBitsReader: ~dtor, MayMatch(const Slice&),
//     MayMatch(int num_keys, Slice** keys, bool* may_match) [default: loop]
//
// How to port to another RocksDB version
//   1. Read table/block_based/filter_policy_internal.h at the target tag and
//      compare the list of virtual functions, their order and signatures
//      with the list above. A new virtual anywhere but at the very end
//      shifts every slot after it, so it must be mirrored here exactly.
//   2. Known history (upstream sources):
//        7.0 .. 9.5   same layout as above (the layout this file declares).
//        9.6          adds pure virtual AddKeyAndAlt(const Slice& key,
//                     const Slice& alt) right after AddKey.
//        10.9         moves CalculateSpace(size_t) and
//                     EstimatedFpRate(size_t, size_t) (previously in
//                     BuiltinFilterBitsBuilder) into FilterBitsBuilder, as
//                     the last two pure virtuals.
//   3. Also re-check the public rocksdb::FilterPolicy pure virtuals
//      (7.8.3: CompatibilityName, GetBuilderWithContext,
//      GetFilterBitsReader; plus Customizable::Name) and the
//      FilterBuildingContext fields the policy reads.
//   4. Extend the version guard below only after the runtime test passes
//      against that version's library.
#pragma once

#include <cstddef>
#include <memory>

#include "rocksdb/filter_policy.h"
#include "rocksdb/slice.h"
#include "rocksdb/status.h"
#include "rocksdb/version.h"

// Feature macros of the FilterBitsBuilder interface, for the code that
// implements it (sst_filter/builder.cc, tests, benchmarks):
//   DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT      pure virtual AddKeyAndAlt
//                                                 (RocksDB >= 9.6)
//   DLCBF_FILTER_BUILDER_HAS_SPACE_AND_FP_RATE    pure virtuals CalculateSpace
//                                                 and EstimatedFpRate (>= 10.9)
// Both are 0 for the 7.x mirror below.
#if defined(DLCBF_ROCKSDB_IN_TREE)

// In-tree build (tools/rocksdb_plugin/: the plugin compiled inside RocksDB's
// own tree, or our CMake with -DDLCBF_ROCKSDB_SOURCE_DIR): RocksDB's real
// internal header is available, so it is used instead of the mirror.
#include "table/block_based/filter_policy_internal.h"

#if ROCKSDB_MAJOR < 7
#error "dlcbf supports RocksDB 7.x and later"
#endif
#define DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT \
  (ROCKSDB_MAJOR > 9 || (ROCKSDB_MAJOR == 9 && ROCKSDB_MINOR >= 6))
#define DLCBF_FILTER_BUILDER_HAS_SPACE_AND_FP_RATE \
  (ROCKSDB_MAJOR > 10 || (ROCKSDB_MAJOR == 10 && ROCKSDB_MINOR >= 9))

#else  // !DLCBF_ROCKSDB_IN_TREE: an installed library (Debian 7.8.3 or 9.10)

#if defined(ROCKSDB_MAJOR) && ROCKSDB_MAJOR == 7
#define DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT 0
#elif defined(ROCKSDB_MAJOR) && ROCKSDB_MAJOR == 9 && ROCKSDB_MINOR == 10
// 9.6 .. 9.11 share this layout upstream; only 9.10 (Debian trixie, Ubuntu
// 25.10) has been run against, so only 9.10 is accepted.
#define DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT 1
#else
#error "filter_policy/rocksdb/abi/filter_abi.h declares the FilterBitsBuilder/FilterBitsReader vtables of RocksDB 7.x and 9.10 only; this RocksDB is neither. Port the declarations (see the comment at the top of this header) or build RocksDB with this project as its in-tree plugin (tools/run.sh rocksdb-source)."
#endif
#define DLCBF_FILTER_BUILDER_HAS_SPACE_AND_FP_RATE 0

namespace ROCKSDB_NAMESPACE {

class FilterBitsBuilder {
 public:
  virtual ~FilterBitsBuilder() {}

  // A key or prefix, in sorted order; duplicates are possible.
  virtual void AddKey(const Slice& key) = 0;

#if DLCBF_FILTER_BUILDER_HAS_ADD_KEY_AND_ALT
  // 9.10: a whole key and an alternative (its prefix) in one call.
  virtual void AddKeyAndAlt(const Slice& key, const Slice& alt) = 0;
#endif

  // Distinct entries added so far (becomes num_filter_entries).
  virtual size_t EstimateEntriesAdded() = 0;

  // The filter of everything added; ownership of the bytes goes to *buf.
  virtual Slice Finish(std::unique_ptr<const char[]>* buf) = 0;

  // As above; *status is set to Corruption if construction detected a
  // corrupted state (the returned filter must then not be used).
  virtual Slice Finish(std::unique_ptr<const char[]>* buf, Status* /*status*/) {
    return Finish(buf);
  }

  // Called after every Finish that did not report corruption.
  virtual Status MaybePostVerify(const Slice& /*filter_content*/) {
    return Status::OK();
  }

  // About how many entries fit in a filter of at most `bytes` bytes.
  virtual size_t ApproximateNumEntries(size_t bytes) = 0;
};

class FilterBitsReader {
 public:
  virtual ~FilterBitsReader() {}

  virtual bool MayMatch(const Slice& entry) = 0;

  virtual void MayMatch(int num_keys, Slice** keys, bool* may_match) {
    for (int i = 0; i < num_keys; ++i) may_match[i] = MayMatch(*keys[i]);
  }
};

}  // namespace ROCKSDB_NAMESPACE

#endif  // DLCBF_ROCKSDB_IN_TREE
