// The DenseDLeftFilter block codec's kernel-only part: the layout's
// static checks, a slot's bucket (moves), counting, the thread-safe
// readers' block read and the validity check, on one block. The layout
// (the two remainder classes, the unary bucket directory), the read side
// (matching, the rank test) and the write side (select, the in-block
// insert and remove) are in include/dlcbf/core/dense_dleft_probe.h, shared
// with the inline probe and the inline insert and erase. Internal to
// filter_policy/core/; the table (dense_dleft_impl.h), the design note
// with the layout and formulas (dense_dleft_filter.cc) and the format
// (dense_dleft_serialize.cc) build on it.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dlcbf/core/dense_dleft_probe.h"

namespace dlcbf {
namespace dense_detail {

// The layout, the read side and the write side: include/dlcbf/core/dense_dleft_probe.h.
using namespace internal::dense_layout;  // NOLINT(build/namespaces): one codec, two headers

template <class C>
struct Layout {
  static constexpr int kDirBits = 64 * C::kDirWords;
  static constexpr int kSlotBytes = C::kR / 8;
  static constexpr int kDirOffset = kBlockBytes - 8 * C::kDirWords;
  static_assert(C::kSlots + C::kBuckets == kDirBits, "the directory has one bit per slot and per bucket");
  static_assert(C::kSlots * kSlotBytes == kDirOffset, "slots fill the block up to the directory");
  static_assert(sizeof(typename C::Slot) == kSlotBytes, "slot type");
  static_assert(C::kSlots <= 64, "the match mask (a bit per slot) fits one word");
  static_assert(4 * C::kFirstChoiceSlots == 3 * C::kSlots, "the first candidate is preferred up to 3/4 full");
};
template struct Layout<Class8>;
template struct Layout<Class16>;

// The bucket of slot t (t < used): the zeros below its bit.
template <class C>
inline int BucketOfSlot(typename C::Dir d, int t) {
  // The t-th one sits at select1(t); the zeros below it number select1 - t.
  if constexpr (C::kDirWords == 2) {
    const uint64_t lo = static_cast<uint64_t>(d);
    const int ol = Pop64<C::kHwPopcnt>(lo);
    const int pos = t < ol ? SelectFor<C>(lo, t) : 64 + SelectFor<C>(static_cast<uint64_t>(d >> 64), t - ol);
    return pos - t;
  } else {
    return SelectFor<C>(d, t) - t;
  }
}

// Copies of a value in bucket j of a block: d its directory, m its
// MatchMask for the value (0 if none).
template <class C>
inline uint32_t CountInBucketDir(typename C::Dir d, uint32_t j, uint64_t m) {
  uint32_t n = 0;
  while (m != 0) {
    const int t = __builtin_ctzll(m);
    n += SlotInBucket<C>(d, t, static_cast<int>(j));
    m &= ~(uint64_t{1} << t);  // as FirstInBucketDir (dense_dleft_probe.h)
  }
  return n;
}
// ---- the thread-safe readers' block read ---------------------------------
// A lock-free reader reads a block that a writer may be storing to, and
// trusts a negative only if the block's stripe read the same before and
// after (dense_dleft_impl.h). C++ has no racy read that a seqlock can use
// at vector width (P1478's byte-wise atomic memcpy would be it), so there
// are two forms, with the same answers on a block no writer touches:
//   - ReadBlockWords: eight acquire loads, the compare vectors built from
//     the words in registers (MatchMaskWords). Atomics only: the form
//     ThreadSanitizer checks, and the one on non-x86 targets.
//   - x86 builds without TSan: the compare path's own vector loads, as
//     asm volatile statements (not elided, not merged across retries),
//     between compiler barriers that keep them after the first stripe
//     loads and before the second; the CPU keeps loads in order (x86-TSO),
//     and a torn vector is caught by the stripe check like torn words.
//     It costs one to four vector loads a block where the words cost
//     eight loads and six inserts; README.md ("The thread-safe mode") has the two
//     forms' costs.
// Both give the block's directory and its match mask for v.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DLCBF_DENSE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DLCBF_DENSE_TSAN 1
#endif
#if defined(DLCBF_DENSE_AVX_PATHS) && defined(__SSE2__) && !defined(DLCBF_DENSE_TSAN)
#define DLCBF_DENSE_VECTOR_SEQLOCK_READ 1
#endif

template <class C>
inline void ReadBlockWords(const uint8_t* blk, uint32_t v, typename C::Dir* dir, uint64_t* mask) {
  const uint64_t* p = reinterpret_cast<const uint64_t*>(blk);
  uint64_t w[kBlockWords];
  static_assert(kBlockWords == 8, "one load per word below");
  // Written out, not a loop: GCC keeps a looped copy in a stack array and
  // builds the vectors from it, stalled behind the stores that filled it.
  w[0] = __atomic_load_n(&p[0], __ATOMIC_ACQUIRE);
  w[1] = __atomic_load_n(&p[1], __ATOMIC_ACQUIRE);
  w[2] = __atomic_load_n(&p[2], __ATOMIC_ACQUIRE);
  w[3] = __atomic_load_n(&p[3], __ATOMIC_ACQUIRE);
  w[4] = __atomic_load_n(&p[4], __ATOMIC_ACQUIRE);
  w[5] = __atomic_load_n(&p[5], __ATOMIC_ACQUIRE);
  w[6] = __atomic_load_n(&p[6], __ATOMIC_ACQUIRE);
  w[7] = __atomic_load_n(&p[7], __ATOMIC_ACQUIRE);
  *dir = DirOfWords<C>(w);
  *mask = MatchMaskWords<C>(w, v);
}
#ifdef DLCBF_DENSE_VECTOR_SEQLOCK_READ
template <class C>
__attribute__((target("avx512f,avx512bw"))) inline uint64_t RacyMatchAvx512(const uint8_t* blk, uint32_t v) {
  __m512i x;
  __asm__ volatile("vmovdqa64 %1, %0" : "=v"(x) : "m"(*reinterpret_cast<const __m512i*>(blk)));
  return MatchMaskAvx512V<C>(x, v);
}
template <class C>
__attribute__((target("avx2"))) inline uint64_t RacyMatchAvx2(const uint8_t* blk, uint32_t v) {
  __m256i lo, hi;
  __asm__ volatile("vmovdqa %1, %0" : "=x"(lo) : "m"(*reinterpret_cast<const __m256i*>(blk)));
  __asm__ volatile("vmovdqa %1, %0" : "=x"(hi) : "m"(*reinterpret_cast<const __m256i*>(blk + 32)));
  return MatchMaskAvx2V<C>(lo, hi, v);
}
template <class C>
inline uint64_t RacyMatchSse2(const uint8_t* blk, uint32_t v) {
  __m128i x[4];
  for (int i = 0; i < (C::kR == 8 ? 3 : 4); ++i) {
    __asm__ volatile("movdqa %1, %0" : "=x"(x[i]) : "m"(*reinterpret_cast<const __m128i*>(blk + 16 * i)));
  }
  return MatchMaskSse2V<C>(x, v);
}
#endif
template <class C>
inline void ReadBlockLockFree(const uint8_t* blk, uint32_t v, typename C::Dir* dir, uint64_t* mask) {
#ifdef DLCBF_DENSE_VECTOR_SEQLOCK_READ
  if constexpr (C::kSimd == 2) {
    *mask = RacyMatchAvx512<C>(blk, v);
  } else if constexpr (C::kSimd == 1) {
    *mask = RacyMatchAvx2<C>(blk, v);
  } else {
    *mask = RacyMatchSse2<C>(blk, v);
  }
  const uint64_t* p = reinterpret_cast<const uint64_t*>(blk);
  if constexpr (C::kDirWords == 2) {
    *dir = static_cast<u128>(__atomic_load_n(&p[6], __ATOMIC_RELAXED)) |
           (static_cast<u128>(__atomic_load_n(&p[7], __ATOMIC_RELAXED)) << 64);
  } else {
    *dir = __atomic_load_n(&p[7], __ATOMIC_RELAXED);
  }
#else
  ReadBlockWords<C>(blk, v, dir, mask);
#endif
}

template <class C>
inline bool InBucket(const uint8_t* blk, uint32_t j, uint32_t v) {
  return FindInBucket<C>(blk, j, v) >= 0;
}


// Why the block is not a valid encoding, or nullptr: at most kSlots ones,
// the bits above the last terminator are 0, the last bit below them is a
// terminator (so all kBuckets terminators come after the last one), used
// slots hold non-zero values, free slots 0.
template <class C>
inline const char* CheckBlock(const uint8_t* blk) {
  using Dir = typename C::Dir;
  const Dir d = LoadDir<C>(blk);
  const int used = PopDir<C>(d);
  if (used > C::kSlots) return "block directory: more remainders than slots";
  const int top = used + C::kBuckets;  // first bit above the last terminator
  if (top < Layout<C>::kDirBits && (d >> top) != 0) return "block directory: bits set above the last bucket";
  // With nothing above, [0, top) holds `used` ones and K zeros; every one
  // belongs to a bucket iff the last of those bits is a terminator.
  if (((d >> (top - 1)) & 1) != 0) return "block directory: remainders after the last bucket";
  for (int t = 0; t < C::kSlots; ++t) {
    const bool zero = GetSlot<C>(blk, t) == 0;
    if (t < used && zero) return "block: a used slot holds 0";
    if (t >= used && !zero) return "block: a free slot is not 0";
  }
  return nullptr;
}

}  // namespace dense_detail
}  // namespace dlcbf
