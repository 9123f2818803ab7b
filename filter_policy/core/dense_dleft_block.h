// The DenseDLeftFilter block codec's write side: select, the in-block
// insert/remove (SSE2 slot shifts, or a portable word loop), counting and
// the validity check, on one block. The layout (the two remainder classes,
// the unary bucket directory) and the read side (matching, the rank test)
// are in include/dlcbf/core/dense_dleft_probe.h, shared with the inline
// probe. Internal to filter_policy/core/; the table
// (dense_dleft_impl.h), the design note with the layout and formulas
// (dense_dleft_filter.cc) and the format (dense_dleft_serialize.cc) build
// on it.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dlcbf/core/dense_dleft_probe.h"

namespace dlcbf {
namespace dense_detail {

// The layout and the read side: include/dlcbf/core/dense_dleft_probe.h.
using namespace internal::dense_layout;  // NOLINT(build/namespaces): one codec, two headers

// ---- bit helpers ----------------------------------------------------------
// Position of the j-th (0-based) set bit of x; precondition j < Pop64(x).
// Portable: byte population counts and their inclusive prefix sums (one
// multiply), the byte that holds the j-th one (branch-free), then a table
// of the k-th set bit of every byte value (2 KiB, built at compile time).
// No loop and no data-dependent branch, so it costs the same on every CPU
// (PDEP, below, is one instruction where the compiler may assume BMI2, but
// microcoded and slow on AMD before Zen 3, so it is never chosen at run time).
struct SelectInByteTable {
  uint8_t pos[256][8];
};
constexpr SelectInByteTable MakeSelectInByteTable() {
  SelectInByteTable t{};
  for (int b = 0; b < 256; ++b) {
    int k = 0;
    for (int i = 0; i < 8; ++i) {
      if ((b >> i) & 1) t.pos[b][k++] = static_cast<uint8_t>(i);
    }
  }
  return t;
}
inline constexpr SelectInByteTable kSelectInByte = MakeSelectInByteTable();
static_assert(kSelectInByte.pos[0xFF][7] == 7 && kSelectInByte.pos[0x90][1] == 7 && kSelectInByte.pos[0x01][0] == 0,
              "select-in-byte table");
inline int Select64Portable(uint64_t x, int j) {
  uint64_t s = x - ((x >> 1) & 0x5555555555555555ULL);
  s = (s & 0x3333333333333333ULL) + ((s >> 2) & 0x3333333333333333ULL);
  s = (s + (s >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  const uint64_t prefix = s * 0x0101010101010101ULL;  // byte i: ones in bytes 0..i (<= 64)
  const uint64_t ge = ((prefix | 0x8080808080808080ULL) - static_cast<uint64_t>(j + 1) * 0x0101010101010101ULL) &
                      0x8080808080808080ULL;  // bit 7 of byte i: prefix_i > j
  const int byte = static_cast<int>((((~ge & 0x8080808080808080ULL) >> 7) * 0x0101010101010101ULL) >> 56);
  const int before = static_cast<int>(((prefix << 8) >> (8 * byte)) & 0xFF);  // ones in bytes below `byte`
  return 8 * byte + kSelectInByte.pos[(x >> (8 * byte)) & 0xFF][j - before];
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// PDEP + TZCNT, for the kernel instances compiled for BMI2 (chosen at run
// time where internal::PdepIsFast says so).
__attribute__((target("bmi2"))) inline int Select64Pdep(uint64_t x, int j) {
  return __builtin_ctzll(__builtin_ia32_pdep_di(uint64_t{1} << j, x));
}
#endif
inline int Select64(uint64_t x, int j) {
#if defined(__BMI2__)
  return __builtin_ctzll(__builtin_ia32_pdep_di(uint64_t{1} << j, x));
#else
  return Select64Portable(x, j);
#endif
}
// Select for class C: PDEP in the instances chosen for it (C::kPdep), else
// as compiled (PDEP where the whole build assumes BMI2, else portable).
template <class C>
inline int SelectFor(uint64_t x, int j) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if constexpr (C::kPdep) return Select64Pdep(x, j);
#endif
  return Select64(x, j);
}

template <class C>
struct Layout {
  static constexpr int kDirBits = 64 * C::kDirWords;
  static constexpr int kSlotBytes = C::kR / 8;
  static constexpr int kDirOffset = kBlockBytes - 8 * C::kDirWords;
  static_assert(C::kSlots + C::kBuckets == kDirBits, "the directory has one bit per slot and per bucket");
  static_assert(C::kSlots * kSlotBytes == kDirOffset, "slots fill the block up to the directory");
  static_assert(sizeof(typename C::Slot) == kSlotBytes, "slot type");
  static_assert(C::kSlots * C::kMaskBitsPerSlot <= 64, "the match mask fits one word");
  static_assert(4 * C::kFirstChoiceSlots == 3 * C::kSlots, "the first candidate is preferred up to 3/4 full");
};
template struct Layout<Class8>;
template struct Layout<Class16>;

template <class C>
inline void StoreDir(uint8_t* blk, typename C::Dir d) {
  if constexpr (C::kDirWords == 2) {
    const uint64_t lo = static_cast<uint64_t>(d), hi = static_cast<uint64_t>(d >> 64);
    std::memcpy(blk + 48, &lo, 8);
    std::memcpy(blk + 56, &hi, 8);
  } else {
    std::memcpy(blk + 56, &d, 8);
  }
}
// Position of the j-th zero (bucket j's terminator).
template <class C>
inline int SelectZero(typename C::Dir d, int j) {
  if constexpr (C::kDirWords == 2) {
    const uint64_t lo = ~static_cast<uint64_t>(d);
    const int zl = Pop64<C::kHwPopcnt>(lo);
    if (j < zl) return SelectFor<C>(lo, j);
    return 64 + SelectFor<C>(~static_cast<uint64_t>(d >> 64), j - zl);
  } else {
    return SelectFor<C>(~d, j);
  }
}
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
    const int t = __builtin_ctzll(m) / C::kMaskBitsPerSlot;
    n += SlotInBucket<C>(d, t, static_cast<int>(j));
    m &= ~(((uint64_t{1} << C::kMaskBitsPerSlot) - 1) << (t * C::kMaskBitsPerSlot));
  }
  return n;
}
// The first slot of bucket j holding v, or -1.
template <class C>
inline int FindInBucket(const uint8_t* blk, uint32_t j, uint32_t v) {
  return FirstInBucket<C>(blk, j, MatchMask<C>(blk, v));
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

template <class C>
inline int Used(const uint8_t* blk) {
  return PopDir<C>(LoadDir<C>(blk));
}

// ---- mutation (on a block the caller owns) -------------------------------
template <class C>
inline typename C::Slot GetSlot(const uint8_t* blk, int t) {
  typename C::Slot s;
  std::memcpy(&s, blk + t * sizeof(s), sizeof(s));
  return s;
}
// The slot area as words: slot t is bits [t kR, (t + 1) kR) of it.
template <class C>
constexpr int kSlotWords = C::kSlots * C::kR / 64;
template <class C>
inline void ShiftSlotsUpPortable(uint8_t* blk, int t, uint32_t v) {  // opens slot t, writes v
  constexpr int kW = kSlotWords<C>;
  static_assert(C::kSlots * C::kR == 64 * kW, "the slot area is whole words");
  uint64_t w[kW];
  std::memcpy(w, blk, sizeof(w));
  const int wi = (t * C::kR) >> 6, off = (t * C::kR) & 63;
  for (int i = kW - 1; i > wi; --i) w[i] = (w[i] << C::kR) | (w[i - 1] >> (64 - C::kR));
  const uint64_t low = (uint64_t{1} << off) - 1;
  w[wi] = (w[wi] & low) | ((w[wi] & ~low) << C::kR) | (static_cast<uint64_t>(v) << off);
  std::memcpy(blk, w, sizeof(w));
}
template <class C>
inline void ShiftSlotsDownPortable(uint8_t* blk, int t) {  // closes slot t; the last slot becomes 0
  constexpr int kW = kSlotWords<C>;
  uint64_t w[kW];
  std::memcpy(w, blk, sizeof(w));
  const int wi = (t * C::kR) >> 6, off = (t * C::kR) & 63;
  const uint64_t low = (uint64_t{1} << off) - 1;
  w[wi] = (w[wi] & low) | ((w[wi] >> C::kR) & ~low) | (wi + 1 < kW ? w[wi + 1] << (64 - C::kR) : 0);
  for (int i = wi + 1; i < kW; ++i) w[i] = (w[i] >> C::kR) | (i + 1 < kW ? w[i + 1] << (64 - C::kR) : 0);
  std::memcpy(blk, w, sizeof(w));
}

#if defined(__SSE2__)
// The SSE2 shifts: each 16-byte chunk of the slot area is rebuilt from
// itself, itself shifted by one slot (bytes carried across chunks with
// byte shifts) and a per-lane choice made by comparing the lane's slot
// index with t. Branch-free and without the stack round trip of the word
// loop (whose wide store and narrow reload defeat store forwarding).
template <class C>
struct SseLanes {
  static constexpr int kPerChunk = 16 / sizeof(typename C::Slot);
  static constexpr int kChunks = (C::kSlots + kPerChunk - 1) / kPerChunk;  // 3 (r = 8), 4 (r = 16)
  static __m128i Set1(int x) {
    if constexpr (C::kR == 8) return _mm_set1_epi8(static_cast<char>(x));
    else return _mm_set1_epi16(static_cast<short>(x));
  }
  // Slot index of each lane of chunk k.
  static __m128i Index(int k) {
    if constexpr (C::kR == 8) {
      return _mm_add_epi8(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), Set1(16 * k));
    } else {
      return _mm_add_epi16(_mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7), Set1(8 * k));
    }
  }
  static __m128i Gt(__m128i a, __m128i b) {
    if constexpr (C::kR == 8) return _mm_cmpgt_epi8(a, b);
    else return _mm_cmpgt_epi16(a, b);
  }
  static __m128i Eq(__m128i a, __m128i b) {
    if constexpr (C::kR == 8) return _mm_cmpeq_epi8(a, b);
    else return _mm_cmpeq_epi16(a, b);
  }
};
static_assert(SseLanes<Class8>::kChunks == 3 && SseLanes<Class16>::kChunks == 4, "chunks of the slot area");

template <class C>
inline void ShiftSlotsUp(uint8_t* blk, int t, uint32_t v) {  // opens slot t, writes v
  using L = SseLanes<C>;
  constexpr int kB = static_cast<int>(sizeof(typename C::Slot));
  const __m128i tv = L::Set1(t), vv = L::Set1(static_cast<int>(v)), last = L::Set1(C::kSlots);
  __m128i prev = _mm_setzero_si128();
  for (int k = 0; k < L::kChunks; ++k) {
    const __m128i o = _mm_load_si128(reinterpret_cast<const __m128i*>(blk + 16 * k));
    const __m128i sh = _mm_or_si128(_mm_slli_si128(o, kB), _mm_srli_si128(prev, 16 - kB));
    const __m128i idx = L::Index(k);
    const __m128i gt = _mm_and_si128(L::Gt(idx, tv), L::Gt(last, idx));  // t < slot < kSlots
    const __m128i eq = L::Eq(idx, tv);
    const __m128i keep = _mm_andnot_si128(_mm_or_si128(gt, eq), o);
    _mm_store_si128(reinterpret_cast<__m128i*>(blk + 16 * k),
                    _mm_or_si128(keep, _mm_or_si128(_mm_and_si128(gt, sh), _mm_and_si128(eq, vv))));
    prev = o;
  }
}
template <class C>
inline void ShiftSlotsDown(uint8_t* blk, int t) {  // closes slot t; the last slot becomes 0
  using L = SseLanes<C>;
  constexpr int kB = static_cast<int>(sizeof(typename C::Slot));
  const __m128i tm1 = L::Set1(t - 1), top = L::Set1(C::kSlots - 1), none = L::Set1(C::kSlots);
  __m128i o = _mm_load_si128(reinterpret_cast<const __m128i*>(blk));
  for (int k = 0; k < L::kChunks; ++k) {
    const __m128i next = k + 1 < L::kChunks ? _mm_load_si128(reinterpret_cast<const __m128i*>(blk + 16 * (k + 1)))
                                            : _mm_setzero_si128();
    const __m128i idx = L::Index(k);
    // Slot i < kSlots - 1 takes slot i + 1; the last slot takes 0.
    const __m128i sh = _mm_and_si128(_mm_or_si128(_mm_srli_si128(o, kB), _mm_slli_si128(next, 16 - kB)),
                                     L::Gt(top, idx));
    const __m128i ge = _mm_and_si128(L::Gt(idx, tm1), L::Gt(none, idx));  // t <= slot < kSlots
    _mm_store_si128(reinterpret_cast<__m128i*>(blk + 16 * k),
                    _mm_or_si128(_mm_andnot_si128(ge, o), _mm_and_si128(ge, sh)));
    o = next;
  }
}
#else
template <class C>
inline void ShiftSlotsUp(uint8_t* blk, int t, uint32_t v) {
  ShiftSlotsUpPortable<C>(blk, t, v);
}
template <class C>
inline void ShiftSlotsDown(uint8_t* blk, int t) {
  ShiftSlotsDownPortable<C>(blk, t);
}
#endif

// Adds value v to bucket j. Precondition: Used < kSlots.
template <class C>
inline void InsertInBlock(uint8_t* blk, uint32_t j, uint32_t v) {
  using Dir = typename C::Dir;
  const Dir d = LoadDir<C>(blk);
  const int p = SelectZero<C>(d, static_cast<int>(j));  // bucket j's terminator
  const Dir low = LowMask<Dir>(p);
  StoreDir<C>(blk, static_cast<Dir>(((d & ~low) << 1) | (d & low) | (Dir{1} << p)));
  ShiftSlotsUp<C>(blk, p - static_cast<int>(j), v);  // new slot: p - j ones below
}
// Removes slot t, which is in bucket j.
template <class C>
inline void RemoveFromBlock(uint8_t* blk, int t, uint32_t j) {
  using Dir = typename C::Dir;
  const Dir d = LoadDir<C>(blk);
  const int p = t + static_cast<int>(j);
  const Dir low = LowMask<Dir>(p);
  StoreDir<C>(blk, static_cast<Dir>(((d >> 1) & ~low) | (d & low)));
  ShiftSlotsDown<C>(blk, t);
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
