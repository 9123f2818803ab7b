// The inline negative/positive probe of FastDLeftFilter's D = 2 layout.
//
// The inline part of include/dlcbf/core/fast_dleft_filter.h (installed with
// it; include that header, not this one), so that
// FastDLeftFilter::ContainsHash inlines into the caller's loop (consecutive
// queries then overlap their cache misses). The layout, hashing and
// permutation are specified in the design note of
// filter_policy/core/fast_dleft_filter.cc; this file must stay identical
// to Impl::Split<2>, Impl::Cand<2> and Impl::Flagged<2> in
// filter_policy/core/fast_dleft_impl.h (the oracle
// tests compare both paths on every query).
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

enum class FastProbe : int { kAbsent = 0, kPresent = 1, kAskSpare = 2 };

inline FastProbe FastDLeftProbeD2(const FastDLeftView& v, uint64_t h) {
  constexpr uint64_t kLane = 0x0001000100010001ULL;
  constexpr uint64_t kQMask = 0x1FFF1FFF1FFF1FFFULL;
  constexpr uint64_t kBit13 = 0x2000200020002000ULL;
  constexpr uint64_t kMeta = 0x8000800080008000ULL;
  __extension__ typedef unsigned __int128 u128;
  const uint64_t k = static_cast<uint64_t>((static_cast<u128>(h) * v.nblocks) >> 64);
  const uint32_t b = static_cast<uint32_t>(h >> 32) & 3;
  const uint64_t q = (((h & 0xFFFFFFFFULL) * 8191) >> 32) + 1;
  const uint32_t f1 = (static_cast<uint32_t>(q) ^ v.key1) * 0x9E3779B1u >> 30;
  const uint64_t* blk = v.blocks + k * 8;
  const uint64_t w0 = blk[b];
  const uint64_t w1 = blk[4 + ((b + f1) & 3)];
  const uint64_t x0 = (w0 & kQMask) ^ (q * kLane);
  const uint64_t x1 = (w1 & kQMask) ^ (q * kLane);
  // A lane matches when its 13-bit difference is zero.
  const uint64_t match = (~((x0 + kQMask) & (x1 + kQMask) & kBit13)) & kBit13;
  if (match != 0) return FastProbe::kPresent;
  return ((w0 | blk[4 + b]) & kMeta) != 0 ? FastProbe::kAskSpare : FastProbe::kAbsent;
}

}  // namespace internal
}  // namespace dlcbf
