// Hashing primitives shared by every filter in this project.
//
// INTERNAL: not part of the public API; may change without notice.
//
// - HashKey:   XXH3-64 with a seed. This is "H(x)" of the dlCBF paper
//              (Bonomi et al. 2006, §3.2): the one strong hash per key. Every
//              other value (buckets, remainders, Bloom probe positions) is
//              derived from its 64 bits, so a key is hashed exactly once.
// - Mul64Hi:   the high 64 bits of a 64x64 product ("fastrange"): maps a
//              uniform 64-bit value onto [0, n) without a division.
// - Mix64:     a bijective 64-bit finalizer (xor-shift-multiply), used as the
//              round function of the permutations and for probe derivation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dlcbf/core/hash_mix.h"

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
// xxhash.h is third-party code compiled inline into our translation units.
// Its build directory is a SYSTEM include (CMakeLists.txt), and the include
// is fenced off here as well: with -march=native on an AVX-512 machine,
// GCC 12 reports -W(maybe-)uninitialized inside its AVX-512 accumulate loop
// (from _mm512_undefined_epi32 in GCC's own intrinsics; GCC bug 105593),
// which -Werror would turn into a build failure in code that is not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <xxhash.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace dlcbf {
namespace internal {

inline uint64_t HashKey(const void* data, size_t n, uint64_t seed) {
  return XXH3_64bits_withSeed(data, n, seed);
}

// HashKey of data fed in pieces: Digest() equals HashKey of their
// concatenation (XXH3's streaming state), so a file can be checksummed as
// it is written, without a copy of it in memory.
class StreamHash {
 public:
  explicit StreamHash(uint64_t seed) { XXH3_64bits_reset_withSeed(&state_, seed); }
  void Update(const void* data, size_t n) { XXH3_64bits_update(&state_, data, n); }
  uint64_t Digest() const { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

// Mul64Hi and Mix64: include/dlcbf/core/hash_mix.h.

// Deterministic stream of 64-bit values (SplitMix64). Used to derive
// permutation keys from a seed; the derived keys are also stored in every
// serialized filter, so readers never depend on this derivation.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace internal
}  // namespace dlcbf
