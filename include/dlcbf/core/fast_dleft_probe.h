// The inline negative/positive probe of FastDLeftFilter's D = 2 layout,
// and the one definition of the block-cell layout and the hash split it
// shares with the kernel.
//
// The inline part of include/dlcbf/core/fast_dleft_filter.h (installed with
// it; include that header, not this one), so that
// FastDLeftFilter::ContainsHash inlines into the caller's loop (consecutive
// queries then overlap their cache misses). The layout, hashing and
// permutation are specified in the design note of
// filter_policy/core/fast_dleft_filter.cc. The kernel
// (filter_policy/core/fast_dleft_impl.h: Impl::Split, Impl::F, Impl::Cand,
// Impl::Flagged, MatchLanes) is written with the functions below, so the
// probe and the kernel cannot disagree (the oracle tests also compare both
// paths on every query).
#pragma once

#include <cstdint>

namespace dlcbf {
namespace internal {

// What the inline probe needs: the 64-byte-aligned blocks, their number
// and the permutation key of subtable 1. Valid for the filter's lifetime.
struct FastDLeftView {
  const uint64_t* blocks = nullptr;
  uint64_t nblocks = 0;
  uint32_t key1 = 0;
};

// ---------------------------------------------------------------------------
// The layout pieces (D = 2 or 4 candidate buckets per key, 8 / D bucket
// words per subtable in a 64-byte block of 8 words, 4 16-bit cells per word).
// ---------------------------------------------------------------------------
namespace fast_layout {

constexpr uint32_t kRn = 8191;                          // remainders 1..8191
constexpr uint64_t kLane = 0x0001000100010001ULL;       // 1 in every 16-bit cell
constexpr uint64_t kQMask = 0x1FFF1FFF1FFF1FFFULL;      // remainder bits 0..12
constexpr uint64_t kBit13 = 0x2000200020002000ULL;      // bit 13 of every cell
constexpr uint64_t kMeta = 0x8000800080008000ULL;       // spill bit 15 of every cell
static_assert(kRn == (1u << 13) - 1, "remainders 1..8191 fill the 13-bit field");
static_assert(kQMask == kRn * kLane && kBit13 == (kRn + 1) * kLane && kMeta == (1ULL << 15) * kLane,
              "the cell masks repeat one 16-bit cell four times");

// The block of hash h: fastrange, the high 64 bits of h * nblocks.
inline uint64_t Block(uint64_t h, uint64_t nblocks) {
  __extension__ typedef unsigned __int128 u128;
  return static_cast<uint64_t>((static_cast<u128>(h) * nblocks) >> 64);
}
// The bucket (word) of subtable 0, in [0, 8 / D).
template <int D>
inline uint32_t Bucket(uint64_t h) {
  static_assert(D == 2 || D == 4, "D is 2 or 4");
  return static_cast<uint32_t>(h >> 32) & (8 / D - 1);
}
// The remainder, in [1, kRn] (0 marks an empty cell).
inline uint32_t Remainder(uint64_t h) {
  return static_cast<uint32_t>(((h & 0xFFFFFFFFULL) * kRn) >> 32) + 1;
}
// F_i(q) in [0, 8 / D): the bucket offset of subtable i, from its key.
template <int D>
inline uint32_t Perm(uint32_t q, uint32_t key) {
  static_assert(D == 2 || D == 4, "D is 2 or 4");
  return static_cast<uint32_t>((q ^ key) * 0x9E3779B1u) >> (D == 2 ? 30 : 31);
}
// The word of subtable i's candidate bucket in the block: P_i(b, q), with
// f = F_i(q) (unused for i = 0).
template <int D>
inline int CandWord(int i, uint32_t b, uint32_t f) {
  constexpr uint32_t kBb = 8 / D;
  return static_cast<int>(i * kBb + (i == 0 ? b : ((b + f) & (kBb - 1))));
}
// The word of subtable i that holds (bucket b)'s spill bits.
template <int D>
inline int SpillWord(int i, uint32_t b) {
  return static_cast<int>(i * (8 / D) + b);
}
// Bit 13 of a cell is clear after this iff the cell's remainder is q.
inline uint64_t LaneDiff(uint64_t w, uint64_t q) { return ((w & kQMask) ^ (q * kLane)) + kQMask; }
// Cells whose remainder equals q (bit 13 of each; q != 0, so empty cells
// never match).
inline uint64_t MatchLanes(uint64_t w, uint64_t q) { return ~(LaneDiff(w, q) & kBit13) & kBit13; }

}  // namespace fast_layout

enum class FastProbe : int { kAbsent = 0, kPresent = 1, kAskSpare = 2 };

inline FastProbe FastDLeftProbeD2(const FastDLeftView& v, uint64_t h) {
  using namespace fast_layout;  // NOLINT(build/namespaces): this block only
  const uint64_t k = Block(h, v.nblocks);
  const uint32_t b = Bucket<2>(h);
  const uint32_t q = Remainder(h);
  const uint64_t* blk = v.blocks + k * 8;
  const uint64_t w0 = blk[CandWord<2>(0, b, 0)];
  const uint64_t w1 = blk[CandWord<2>(1, b, Perm<2>(q, v.key1))];
  // A lane matches when its 13-bit difference is zero (in either word).
  const uint64_t match = ~(LaneDiff(w0, q) & LaneDiff(w1, q) & kBit13) & kBit13;
  if (match != 0) return FastProbe::kPresent;
  return ((blk[SpillWord<2>(0, b)] | blk[SpillWord<2>(1, b)]) & kMeta) != 0 ? FastProbe::kAskSpare
                                                                            : FastProbe::kAbsent;
}

}  // namespace internal
}  // namespace dlcbf
