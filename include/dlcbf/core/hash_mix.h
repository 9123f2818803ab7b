// The 64-bit arithmetic every filter of this project derives its positions
// with, and the two-phase hashing of the d-left kernels, as inline
// functions: the one definition that both the kernels
// (include/dlcbf/internal/hash.h and dleft_layout.h, not installed) and the
// installed inline probes (dense_dleft_probe.h) use.
//
// Installed because the inline probes need it; not an API of its own: the
// names live in dlcbf::internal and may change with the kernels.
#pragma once

#include <cstdint>

namespace dlcbf {
namespace internal {

// The high 64 bits of a 64x64 product ("fastrange"): maps a uniform 64-bit
// value onto [0, n) without a division.
inline uint64_t Mul64Hi(uint64_t a, uint64_t b) {
  __extension__ typedef unsigned __int128 u128;  // GCC/Clang; -Wpedantic-clean
  return static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64);
}

// A bijective 64-bit finalizer (xor-shift-multiply), used as the round
// function of the permutations and for probe derivation.
inline uint64_t Mix64(uint64_t x) {
  // Constants from the "moremur" finalizer; full avalanche in two rounds.
  x ^= x >> 27;
  x *= 0x3C79AC492BA7B653ULL;
  x ^= x >> 33;
  x *= 0x1C69B3F74AC4AE35ULL;
  x ^= x >> 27;
  return x;
}

// Two-phase hashing of the d-left kernels (specified in
// include/dlcbf/internal/dleft_layout.h, class Hashing): the true
// fingerprint (b, q) in [B] x [Rn] read off h as a mixed-radix fraction,
// and subtable i's bucket offset F_i(q) (i >= 1) from its key k_i0.
inline uint64_t FingerprintBucket(uint64_t h, uint64_t buckets) { return Mul64Hi(h, buckets); }
inline uint64_t FingerprintRemainder(uint64_t h, uint64_t buckets, uint64_t remainders) {
  return Mul64Hi(h * buckets, remainders);  // h * B mod 2^64: the fraction below b
}
inline uint64_t PermutationOffset(uint64_t q, uint64_t key, uint64_t buckets) {
  return Mul64Hi(Mix64(q ^ key), buckets);
}

}  // namespace internal
}  // namespace dlcbf
