// The SST filter block format (versions 1 and 2): the byte layout, its
// constants, the encoder of the fixed header and the one parser every
// reader uses. Internal to filter_policy/rocksdb/sst_filter/; docs mirror:
// filter_policy/FORMATS.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/rocksdb/filter_policy.h"
#include "filter_policy/rocksdb/sst_filter/blocked_table.h"
#include "rocksdb/slice.h"

namespace dlcbf {
namespace sst_filter {

// ---------------------------------------------------------------------------
// Filter block format, version 1. All integers little-endian
// (internal/coding.h), written field by field.
//
//  offset  size  field
//  ------  ----  ------------------------------------------------------------
//       0     4  magic "dLSF" (bytes 64 4C 53 46)
//       4     1  format version (1)
//       5     1  kind: 0 = empty (no keys; never matches)
//                      1 = d-left fingerprint table
//                      2 = Bloom bit array (fallback; see below)
//       6     1  d, subtables          (kind 1; else 0)
//       7     1  L, cells per bucket   (kind 1; else 0)
//       8     1  r, remainder bits     (kind 1; else 0)
//       9     1  c, counter bits: always 0 (static; 0 = empty cell)
//      10     1  k, Bloom probes       (kind 2; else 0)
//      11     1  build retries (informational; readers ignore it)
//      12     4  reserved, 0
//      16     8  B buckets per subtable (kind 1) | m Bloom bits (kind 2) | 0
//      24     8  key hash seed: every key/prefix is hashed XXH3-64(key, seed)
//      32     8  entries: distinct key hashes inserted
//      40     8  P, payload bytes
//      48  16*d  permutation keys k[i][0], k[i][1], i = 0 .. d-1 (kind 1 only)
//       H     P  payload, H = 48 + 16 d (kind 1) or 48:
//                kind 1: the packed cell array of DLeftCountingBloomFilter
//                        (AppendPackedBits; layout in internal/dleft_layout.h),
//                        P = ceil(d * B * L * r / 8)
//                kind 2: m bits, bit j = bit (j % 8) of byte (j / 8),
//                        P = ceil(m / 8)
//     H+P     8  XXH3-64 (seed 0) of bytes [0, H + P)
//
// Bloom fallback probes (kind 2): x = h, delta = Mix64(h) | 1; for j < k:
// bit Mul64Hi(x, m) is set, then x += delta.
//
// Version 1 also pins everything the reader recomputes: XXH3-64 key
// hashing, internal::Hashing (FingerprintOf, Permute with the current F/G
// round functions) and the cell layout/codec of internal/dleft_layout.h as
// of this commit. A change to any of them changes the meaning of existing
// blocks (false negatives on old SSTs): bump kBlockVersion and keep a
// reader for version 1. tests/filter_policy_test.cc
// (GoldenVersion1BlockStillReadable) fails if that happens unnoticed.
//
// ---------------------------------------------------------------------------
// Filter block format, version 2 (written by default). The same 48-byte
// fixed header with version = 2; kinds 0 (empty) and 2 (Bloom) mean
// exactly what they mean in version 1, kind 1 is not allowed, and kind 3 is
// the blocked d-left table of blocked_table.h:
//
//  offset  size  field (kind 3)
//  ------  ----  ------------------------------------------------------------
//       6     1  d, subtables per block, [2, 8]
//       7     1  L = 1 (one cell per bucket)
//       8     1  r, remainder bits, [4, 16]; K = floor(floor(511 / r) / d)
//       9     1  c = 0        10  1  k = 0       11  1  build retries
//      16     8  H, home blocks (keys hash to block floor(h * H / 2^64))
//      32     8  entries: distinct fingerprints stored
//      40     8  P = 64 * T payload bytes, T >= H blocks (H + tail)
//      48   4 d  multipliers m_0 .. m_{d-1}, fixed32 each: m_0 = 0, m_i odd
//  48+4d       zero padding up to H' = 64 (d <= 4) or 128 (d > 4), so the
//                blocks start 64-byte aligned when the block buffer is
//       H'    P  T blocks of 64 bytes. Block = 8 little-endian 64-bit words,
//                block bit j = bit (j % 64) of word j / 64. Cell c (c < d K,
//                subtable c / K, bucket c % K) is bits [c r, c r + r);
//                0 = empty. The top G = min(64, 512 - d K r) bits are the
//                overflow flags (group g = bit 511 - g); the last block has
//                none set.
//   H'+P     8  XXH3-64 (seed 0) of bytes [0, H' + P)
//
// Version 2 pins XXH3-64 key hashing with kKeyHashSeed, the mapping of
// BlockedLocate (home block, b and q from the hash, F_i) and this cell
// packing. tests/filter_policy_test.cc (GoldenVersion2BlockStillReadable)
// fails if any of them changes unnoticed.
//
// A reader accepts a block only if every field is in range, the sizes agree
// exactly and the checksum matches; anything else yields a reader that
// answers "may match" for every key (never a false negative), logged to
// DLeftFilterPolicyOptions::info_log.
// ---------------------------------------------------------------------------
constexpr uint32_t kBlockMagic = 0x46534C64;  // "dLSF" read little-endian
constexpr uint8_t kBlockVersion1 = 1;
constexpr uint8_t kBlockVersion2 = 2;
constexpr size_t kFixedHeader = 48;
constexpr size_t kChecksumBytes = 8;
enum BlockKind : uint8_t { kKindEmpty = 0, kKindDLeft = 1, kKindBloom = 2, kKindBlocked = 3 };
// Header of a blocked block: 48 fixed bytes, 4 d multiplier bytes, padded
// to a multiple of 64.
constexpr size_t BlockedHeaderBytes(uint32_t d) { return d <= 4 ? 64 : 128; }

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
         (kind == kKindBlocked ? BlockedHeaderBytes(d) - kFixedHeader : 0u);
}

// A block's fields after ParseBlock checked them.
struct ParsedBlock {
  uint8_t version = 0;
  uint8_t kind = kKindEmpty;
  BlockedGeometry blocked;  // kind 3
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
