// The packed static table: the payload of version-3 SST filter blocks
// (kind 4). Geometry, the hash-to-(block, bucket, remainder) mapping the
// reader and the builder share, the one-block probe (portable and
// POPCNT+BMI2 instances) and the builder. Internal to
// filter_policy/rocksdb/sst_filter/; the byte layout is drawn in
// filter_policy/FORMATS.md ("Version 3") and in BuildPackedTable below.
//
// Design note
// -----------
// Version 2 gives every key d = 4 fixed one-cell candidates in its block,
// so a query compares 4 cells and the table keeps ~9% of them empty:
// FPR = d alpha / (2^r - 1) with alpha ~ 0.91, 2.1 bits/key above
// log2(1/FPR) before its overflow probes (0.87% at 10 bits/key). Version 3
// is the static, counter-free sibling of the dense kernel
// (core/dense_dleft_block.h): buckets of VARIABLE occupancy inside one
// 64-byte block. The builder knows every key, so a block stores exactly
// the remainders it holds, sorted by (bucket, remainder), behind a unary
// directory, and a query compares only the remainders of its own bucket.
//
// Block (512 bits, bit i = bit i mod 64 of little-endian word i / 64):
//   [0, C + B)            directory: per bucket, one 1 per stored remainder
//                         then a 0 terminator; bits above the last
//                         terminator are 0.  C + B <= 128 (two words).
//   [C + B, C + B + C r)  slots: remainder t at bits [C + B + t r, + r);
//                         ascending inside each bucket; free slots 0.
//   bit 511               overflow flag (the block carried keys onward).
// All other bits are 0. C = slot capacity, B = buckets per block.
//
// Hashing (one XXH3-64 per key, as version 2): home block j = floor(h H /
// 2^64); t = (h mod 2^32) B, bucket b = floor(t / 2^32), remainder q = the
// top r bits of t mod 2^32. (j, b, q) is the key's true fingerprint; with
// no d choices inside a block there is no permutation to store: the
// variable-size buckets absorb the load that d-left balancing spread over
// fixed cells, and the carry below is the d-left "next table" step.
//
// Overflow (prefix carry). Blocks are filled in order; block j takes the
// keys carried from j - 1 and its own, sorted by v = b 2^r + q, one copy
// per v. If more than C remain, it keeps the C smallest, carries the rest
// (all LARGER than anything it keeps) to j + 1 and sets its flag. So a key
// stored after its home block has, in every block it passed, a value above
// that block's largest value, and a query continues to j + 1 only if the
// flag is set AND its bucket is at or above the bucket of the block's
// largest stored value (read from the block itself: the bucket of the
// highest directory 1). One flag bit, no groups; only queries in the top
// ~carry/lambda of the value range go on. The
// last block has no flag (the parser checks), so chains end in the payload.
//
// FPR. A negative query compares q with the remainders of bucket b: for
// lambda keys per home block, FPR = lambda / (B 2^r) per probed block. The
// carry makes the next block's top buckets denser, so each extra probe
// costs about two home probes: FPR ~= lambda / (B 2^r) (1 + 2 e), e = the
// carried share of keys, from a queue model (planner.cc, with its
// measurements). At 10 bits/key: lambda = 51.2, r = 7, C = 55, B = 71:
// 0.563% x (1 + 2 x 0.069) = 0.64%, 1.07 blocks per negative query
// (measured: README, sst_filter_bench). Space: 512 / lambda bits per key
// plus the 64-byte header and rarely a tail block.
//
// Why not the 0.35%: a unary directory costs 1 + x - log2(x) bits
// per key for x = B / lambda buckets per key, at least 1.91 (x = 1/ln 2),
// and the block's Poisson key count needs slack (C > lambda) and carries.
// At 10 bits/key that leaves ~7.3 bits of fingerprint: FPR >= ~0.5% for any
// one-line design of this kind; sorted-set coding (1.44 bits) needs
// sequential decoding.
//
// Query cost: one line (the home block; the next is prefetched for the
// ~7% that continue), two independent selects on the 128-bit directory
// (bucket start and end), one 8-byte window holding the bucket's first two
// remainders (~lambda / B ~ 0.7 of them on average), and a highest-bit scan
// for the continuation test. That decode is a chain of ~30 cycles after
// the block arrives: ~1.2x Bloom's probe in cache, ~2x out of cache when
// probes run back to back (README, sst_filter_bench).
//
// Out of cache, back to back, measured on AMD Zen 5 (sst_filter_bench,
// 64 filters of 4 MiB, one random filter per query): v3 186-245 ns per
// query against Bloom's 60-70 and version 2's 74-85, though each reads
// ~1.07 lines. Ruled out, each side by side in one process: the TLB (with
// transparent huge pages: 185 against 60), the prefetches (without the
// next block's: 204-220; without any: 204), PDEP (the portable instance:
// 254). The decode itself is the cause, measured the same way: the same
// reader, hash and block load with a trivial decode (one word of the block
// compared) took 51.9 ns (Bloom 59.9: the memory side is no slower), and
// the real decode with every data-dependent branch removed (the k > 2 loop
// and the continuation answered "may match") still 184.5 ns, so it is not
// mispredictions either. The decode is a chain of ~30 cycles of
// instructions that all wait for the block; they fill the out-of-order
// window, so the next query's miss is not issued before this one's block
// arrives. Bloom's check is a few instructions, and about three of its
// misses overlap.
// Where RocksDB has several keys (MultiGet) the batch probe requests every
// block first: 26 ns against Bloom's 18 (1.43x). A shorter decode (e.g.
// bucket boundaries stored, not selected) would need a new format version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dlcbf/internal/hash.h"
#include "filter_policy/core/dense_dleft_block.h"

namespace dlcbf {
namespace sst_filter {

constexpr size_t kPackedBlockBytes = 64;
constexpr uint32_t kPackedMinRemainderBits = 4;
constexpr uint32_t kPackedMaxRemainderBits = 16;
constexpr uint32_t kPackedMaxDirBits = 128;
constexpr uint32_t kPackedFlagBit = 511;

struct PackedGeometry {
  uint32_t r = 0;             // remainder bits
  uint32_t C = 0;             // slots (remainders) per block
  uint32_t B = 0;             // buckets per block
  uint64_t home_blocks = 0;   // H: blocks keys hash to
  uint64_t total_blocks = 0;  // H + tail blocks

  uint32_t dir_bits() const { return C + B; }
  uint64_t payload_bytes() const { return total_blocks * kPackedBlockBytes; }
  // nullptr if (r, C, B, H, T) is a usable geometry, else what is wrong.
  const char* Invalid() const;
};
// True if (r, C, B) fits a block: r in [4, 16], C, B >= 1, C + B <= 128
// and C + B + C r <= 511 (below the flag bit).
bool PackedFits(uint32_t r, uint32_t C, uint32_t B);

// A key's home block, bucket and remainder, and v = b 2^r + q (the order
// blocks are sorted by).
struct PackedProbe {
  uint64_t block;
  uint32_t b;
  uint32_t q;
};
inline void PackedLocate(const PackedGeometry& g, uint64_t h, PackedProbe* p) {
  p->block = internal::Mul64Hi(h, g.home_blocks);
  const uint64_t t = uint64_t{static_cast<uint32_t>(h)} * g.B;
  p->b = static_cast<uint32_t>(t >> 32);
  p->q = static_cast<uint32_t>(t) >> (32 - g.r);
}

namespace packed_detail {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the packed table assumes little-endian");
using dense_detail::u128;

// Remainder t of a block: the 8-byte window at min(bit / 8, 56) holds it
// whole (slots end below bit 511), so the load never leaves the block.
inline uint32_t Slot(const char* blk, uint32_t dir_bits, uint32_t r, uint32_t t) {
  const uint32_t bit = dir_bits + t * r;
  const uint32_t byte = (bit >> 3) < 56 ? (bit >> 3) : 56;
  uint64_t w;
  std::memcpy(&w, blk + byte, 8);
  return static_cast<uint32_t>(w >> (bit - 8 * byte)) & ((uint32_t{1} << r) - 1);
}

inline bool Flag(const char* blk) { return (static_cast<unsigned char>(blk[63]) >> 7) != 0; }

// The directory, masked to its C + B bits (so a corrupt block cannot make
// bits above it count).
inline u128 Dir(const char* blk, uint32_t dir_bits) {
  uint64_t lo, hi;
  std::memcpy(&lo, blk, 8);
  std::memcpy(&hi, blk + 8, 8);
  if (dir_bits <= 64) {
    lo &= dir_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << dir_bits) - 1;
    hi = 0;
  } else if (dir_bits < 128) {
    hi &= (uint64_t{1} << (dir_bits - 64)) - 1;
  }
  return static_cast<u128>(lo) | (static_cast<u128>(hi) << 64);
}

// Highest set bit of a non-zero u128.
inline int HighBit(u128 x) {
  const uint64_t hi = static_cast<uint64_t>(x >> 64);
  return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll(static_cast<uint64_t>(x));
}

// Select on one word: the instruction pair PDEP + TZCNT where the
// instance is compiled for BMI2 (kFast), else the portable broadword
// select of the dense kernel.
template <bool kFast>
inline int Select(uint64_t x, int j);
template <>
inline int Select<false>(uint64_t x, int j) {
  return dense_detail::Select64Portable(x, j);
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DLCBF_PACKED_HAVE_FAST 1
template <>
__attribute__((target("bmi2"))) inline int Select<true>(uint64_t x, int j) {
  return dense_detail::Select64Pdep(x, j);
}
#else
template <>
inline int Select<true>(uint64_t x, int j) {
  return dense_detail::Select64Portable(x, j);
}
#endif

// Position of the j-th zero of the 128-bit word (lo, hi), zl = zeros in
// lo; precondition: it exists. The word is chosen with masks, not a branch:
// it is a coin flip per query.
template <bool kFast>
inline int SelectZero128(uint64_t lo, uint64_t hi, int zl, int j) {
  const uint64_t in_hi = 0 - static_cast<uint64_t>(j >= zl);  // all ones or 0
  const uint64_t w = (~lo & ~in_hi) | (~hi & in_hi);
  return static_cast<int>(64 & in_hi) + Select<kFast>(w, j - (zl & static_cast<int>(in_hi)));
}

}  // namespace packed_detail

// One step of a probe: 1 = q is in bucket b of `blk`, 0 = no, 2 = the
// query must go on to the next block. Reads only the 64 bytes at `blk`,
// whatever they hold (a corrupt directory gives a wrong answer at worst,
// never an access outside the block: the fuzz target checks).
//
// Written without data-dependent branches on the common path (which word
// holds the terminator, how many remainders the bucket has, whether the
// block is flagged): a mispredicted branch after the block's cache miss
// would stop the next query's miss from overlapping this one.
template <bool kFast>
inline int PackedProbeBlock(const PackedGeometry& g, const char* blk, uint32_t b, uint32_t q) {
  using packed_detail::u128;
  const uint32_t r = g.r, C = g.C, D = g.dir_bits();
  const u128 dir = packed_detail::Dir(blk, D);
  const uint64_t lo = static_cast<uint64_t>(dir), hi = static_cast<uint64_t>(dir >> 64);
  const int ones_lo = dense_detail::Pop64<kFast>(lo), ones_hi = dense_detail::Pop64<kFast>(hi);
  const int zl = 64 - ones_lo;
  // Bucket b's remainders are slots [start, end): end = (position of the
  // b-th zero) - b, start = (position of zero b - 1) + 1 - b (the ones
  // before it), or 0 for bucket 0. The two selects are independent, so their latencies
  // overlap.
  if (__builtin_expect(static_cast<int>(b) >= zl + 64 - ones_hi, 0)) return 1;  // corrupt
  const int p_end = packed_detail::SelectZero128<kFast>(lo, hi, zl, static_cast<int>(b));
  const int bp = static_cast<int>(b) - (b != 0);
  const int p_start = packed_detail::SelectZero128<kFast>(lo, hi, zl, bp);
  const uint32_t end = static_cast<uint32_t>(p_end) - b;
  const uint32_t start = b == 0 ? 0 : static_cast<uint32_t>(p_start) + 1 - b;
  const uint32_t k = end - start;  // remainders in the bucket
  // The first two remainders without branches (a bucket holds ~0.7 on
  // average; 3 or more in ~4% of queries), from ONE 8-byte window: slots
  // t0 and t0 + 1 both fit it whenever t0 + 1 is a real slot (the window
  // starts at most 7 bits before t0, or at byte 56, and slots end below
  // bit 511). t0 is clamped to a real slot.
  const uint32_t t0 = start < C ? start : C - 1;
  const uint32_t bit0 = D + t0 * r;
  const uint32_t byte0 = (bit0 >> 3) < 56 ? (bit0 >> 3) : 56;
  uint64_t win;
  std::memcpy(&win, blk + byte0, 8);
  const uint32_t sh = bit0 - 8 * byte0, mask = (uint32_t{1} << r) - 1;
  bool hit = (k - 1 < C) & ((static_cast<uint32_t>(win >> sh) & mask) == q);  // k >= 1
  hit |= (k - 2 < C) & ((static_cast<uint32_t>(win >> ((sh + r) & 63)) & mask) == q);  // k >= 2
  if (__builtin_expect(k > 2, 0)) {
    const uint32_t e = end < C ? end : C;
    for (uint32_t t = start + 2; t < e; ++t) hit |= packed_detail::Slot(blk, D, r, t) == q;
  }
  // Go on only if flagged and b is at or above the bucket of the block's
  // largest stored value (the bucket of the highest directory one): every
  // key carried past this block has a larger value, so its bucket is there
  // or above. (Comparing q too would save ~1 probe in 1000; not worth the
  // extra load.)
  const int n = ones_lo + ones_hi;
  const int top_hi = 127 - __builtin_clzll(hi | 1), top_lo = 63 - __builtin_clzll(lo | 1);
  const uint64_t hi_set = 0 - static_cast<uint64_t>(hi != 0);
  const int top = (top_hi & static_cast<int>(hi_set)) | (top_lo & ~static_cast<int>(hi_set));
  const int last_b = top - (n - 1);
  const int above = (n == 0) | (static_cast<int>(b) >= last_b);
  const int cont = static_cast<int>(packed_detail::Flag(blk)) & above;
  // hit ? 1 : cont ? 2 : 0, as arithmetic (a quarter of blocks are flagged).
  const int h = static_cast<int>(hit);
  return h | ((cont & (h ^ 1)) << 1);
}

// The whole probe from the home block. `payload` holds g.total_blocks
// blocks and the last one's flag is 0 (ParseBlock checks), so the chain
// ends inside it.
template <bool kFast>
inline bool PackedMayMatch(const PackedGeometry& g, const char* payload, const PackedProbe& p) {
  const char* blk = payload + p.block * kPackedBlockBytes;
  const char* const last = payload + (g.total_blocks - 1) * kPackedBlockBytes;
  for (;;) {
    const int r = PackedProbeBlock<kFast>(g, blk, p.b, p.q);
    if (r != 2) return r == 1;
    if (blk == last) return true;  // unreachable for a parsed block; "may match"
    blk += kPackedBlockBytes;
  }
}

// True if this CPU runs the kFast instances well: it has POPCNT and BMI2,
// and PDEP measured at start-up is not slower than the portable select
// (AMD Zen 1/2 microcode it: hundreds of cycles). Once per process.
bool PackedCpuIsFast();

// Statistics of one build.
struct PackedBuildStats {
  uint64_t stored = 0;          // distinct fingerprints written
  uint64_t duplicates = 0;      // keys whose (block, b, q) was already there
  uint64_t carried = 0;         // carry passes (a key carried k blocks on counts k)
  uint64_t flagged_blocks = 0;  // blocks with the overflow flag set
  uint64_t tail_blocks = 0;     // blocks after the H home blocks
};

// Builds the table for `hashes` into `payload` (zero-filled, room for
// g->home_blocks + max_tail blocks) and sets g->total_blocks. False if the
// carry did not drain within max_tail tail blocks (the caller rebuilds with
// more blocks; nothing is lost). Throws only std::bad_alloc.
bool BuildPackedTable(const std::vector<uint64_t>& hashes, uint64_t max_tail, PackedGeometry* g,
                      char* payload, PackedBuildStats* stats);

}  // namespace sst_filter
}  // namespace dlcbf
