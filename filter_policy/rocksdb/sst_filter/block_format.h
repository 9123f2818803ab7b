// The SST filter block format (versions 1, 2 and 3): the byte layout, its
// constants, the encoder of the fixed header and the one parser every
// reader uses. Internal to filter_policy/rocksdb/sst_filter/. The byte
// layout is drawn once, in filter_policy/FORMATS.md ("SST filter block").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/rocksdb/filter_policy.h"
#include "filter_policy/rocksdb/sst_filter/blocked_table.h"
#include "filter_policy/rocksdb/sst_filter/packed_table.h"
#include "rocksdb/slice.h"

namespace dlcbf {
namespace sst_filter {

// ---------------------------------------------------------------------------
// Filter block format, versions 1 to 3: the byte layouts are drawn once,
// in filter_policy/FORMATS.md ("SST filter block"). All integers
// little-endian (internal/coding.h), written field by field. Version 1:
// kinds 0 (empty: never matches), 1 (d-left table, the packed cells of
// DLeftCountingBloomFilter) and 2 (Bloom fallback); version 2 (written by
// default before version 3): kinds 0 and 2 as in version 1, kind 3 the
// blocked d-left table of blocked_table.h, kind 1 not allowed. Version 3
// (written by default): kinds 0 and 2 as in version 1, kind 4 the packed
// table of packed_table.h (variable-occupancy buckets), kinds 1 and 3 not
// allowed.
//
// Version 1 also pins everything the reader recomputes: XXH3-64 key
// hashing, internal::Hashing (FingerprintOf, Permute with the current F/G
// round functions) and the cell layout/codec of internal/dleft_layout.h as
// of this commit. A change to any of them changes the meaning of existing
// blocks (false negatives on old SSTs): bump kBlockVersion and keep a
// reader for version 1. tests/filter_policy_test.cc
// (GoldenVersion1BlockStillReadable) fails if that happens unnoticed.
//
// Version 2 pins XXH3-64 key hashing with kKeyHashSeed, the mapping of
// BlockedLocate (home block, b and q from the hash, F_i) and this cell
// packing. tests/filter_policy_test.cc (GoldenVersion2BlockStillReadable)
// fails if any of them changes unnoticed.
//
// Version 3 pins the same key hashing, PackedLocate (home block, b and q
// from the hash), the block layout of packed_table.h and the prefix-carry
// rule; GoldenVersion3BlockStillReadable guards them.
//
// A reader accepts a block only if every field is in range, the sizes agree
// exactly and the checksum matches; anything else yields a reader that
// answers "may match" for every key (never a false negative), logged to
// DLeftFilterPolicyOptions::info_log.
// ---------------------------------------------------------------------------
constexpr uint32_t kBlockMagic = 0x46534C64;  // "dLSF" read little-endian
constexpr uint8_t kBlockVersion1 = 1;
constexpr uint8_t kBlockVersion2 = 2;
constexpr uint8_t kBlockVersion3 = 3;
constexpr size_t kFixedHeader = 48;
constexpr size_t kChecksumBytes = 8;
enum BlockKind : uint8_t {
  kKindEmpty = 0,
  kKindDLeft = 1,
  kKindBloom = 2,
  kKindBlocked = 3,
  kKindPacked = 4
};
// Header of a blocked block: 48 fixed bytes, 4 d multiplier bytes, padded
// to a multiple of 64.
constexpr size_t BlockedHeaderBytes(uint32_t d) { return d <= 4 ? 64 : 128; }
// Header of a packed block: 48 fixed bytes, C and B (one byte each), zero
// padding to 64.
constexpr size_t kPackedHeaderBytes = 64;

constexpr uint64_t kKeyHashSeed = 0xD1CBF55710000001ULL;
constexpr uint64_t kPermSeedBase = 0x5EEDD1CBF0005577ULL;
constexpr int kMaxAttempts = 5;
constexpr uint32_t kMaxBloomProbes = 30;

// Resource limits. RocksDB 7.8.3 stores a filter block's size in
// a 64-bit BlockHandle, but its own filters never exceed ~4 GiB: FastLocal-
// Bloom caps its bit array at 0xffffffc0 bytes (filter_policy.cc,
// CalculateSpace / RoundDownUsableSpace) and Ribbon falls back to Bloom above
// 950M entries, and a whole filter block is read, cached and charged to the
// block cache as one allocation. dlcbf therefore never writes a block larger
// than DLeftFilterPolicyOptions::max_filter_block_bytes (default
// kDefaultMaxFilterBlockBytes = 0xffffffc0, RocksDB's own maximum): when the
// d-left table for an SST's keys would be larger, the builder writes a
// Bloom-format block capped at that size instead -- lossless (every key
// hash is set), only its false-positive rate is higher -- counts it in
// bloom_fallbacks and logs a warning that advises partitioned filters
// (partition_filters = true, index_type = kTwoLevelIndexSearch), which keep
// every block small whatever the SST size.
// The builder also never lets std::bad_alloc cross into RocksDB: if it
// cannot hold the key hashes or the block, it writes a tiny block that
// matches every key (lossless, no filtering) and logs why.

constexpr uint64_t kMinFilterBlockLimit = 4096;
constexpr uint64_t kMaxFilterBlockLimit = kDefaultMaxFilterBlockBytes;

inline size_t HeaderBytes(uint8_t kind, uint32_t d) {
  return kFixedHeader + (kind == kKindDLeft ? 16u * d : 0u) +
         (kind == kKindBlocked ? BlockedHeaderBytes(d) - kFixedHeader : 0u) +
         (kind == kKindPacked ? kPackedHeaderBytes - kFixedHeader : 0u);
}

// A block's fields after ParseBlock checked them.
struct ParsedBlock {
  uint8_t version = 0;
  uint8_t kind = kKindEmpty;
  BlockedGeometry blocked;  // kind 3
  PackedGeometry packed;    // kind 4
  internal::Geometry geo;
  internal::PermutationKeys keys;
  uint32_t bloom_probes = 0;
  uint64_t bloom_bits = 0;
  uint64_t hash_seed = 0;
  uint64_t entries = 0;
  const char* payload = nullptr;
  size_t payload_bytes = 0;
};

// Never reads outside `s`. On failure *why says what is wrong.
bool ParseBlock(const rocksdb::Slice& s, ParsedBlock* out, std::string* why);

// Appends the fixed 48-byte header (offsets 0..47 above).
void PutHeader(std::string* out, uint8_t version, uint8_t kind, uint8_t d, uint8_t L, uint8_t r, uint8_t k,
               uint8_t retries, uint64_t size_field, uint64_t entries, uint64_t payload);

}  // namespace sst_filter
}  // namespace dlcbf
