// The dense dlCBF kernel's block layout and its read side (matching, the
// bucket rank test, the d = 2 probe), and the inline probe of
// DenseDLeftFilter::ContainsHash.
//
// The inline part of include/dlcbf/core/dense_dleft_filter.h (installed
// with it; include that header, not this one), so that a query of a filter
// with d = 2 and no thread safety inlines into the caller's loop
// (consecutive queries then overlap their cache misses, and no call or
// table lookup stands before the first load). The layout and the formulas
// are in the design note of filter_policy/core/dense_dleft_filter.cc. The
// kernel's block codec (filter_policy/core/dense_dleft_block.h: the
// mutations) is written with the functions below, so the probe and the
// kernel cannot disagree; the tests also compare both paths on every query.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// AVX2 / AVX-512BW compare paths, compiled with target attributes (so
// without -mavx2 and friends) for the kernel instances chosen at run time.
#include <immintrin.h>
#define DLCBF_DENSE_AVX_PATHS 1
#endif

#include "dlcbf/core/hash_mix.h"

namespace dlcbf {
namespace internal {
namespace dense_layout {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "slot bytes are addressed in memory order; the format is little-endian");

__extension__ typedef unsigned __int128 u128;

constexpr int kBlockBytes = 64;
constexpr int kBlockWords = 8;

// Population count: the POPCNT instruction in the kernel instances compiled
// for it (kHw; dense_dleft_filter.cc picks them at run time when the CPU
// has it) and in code compiled for it (__POPCNT__, e.g. -march=native),
// else a branch-free SWAR count (x86-64's baseline has no POPCNT, and
// __builtin_popcountll there is a library call).
template <bool kHw>
inline int Pop64(uint64_t x) {
#if defined(__POPCNT__)
  constexpr bool kUse = true;  // the whole translation unit may use it
#else
  constexpr bool kUse = kHw;
#endif
  if constexpr (kUse) {
    return __builtin_popcountll(x);
  } else {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
  }
}

// ---- the two remainder classes ------------------------------------------
// A block is 64 bytes: kSlots remainders of kR bits packed from byte 0, then
// the directory (kSlots + kBuckets bits) in the last kDirWords words. The
// directory lists the buckets in order, each as one 1 bit per stored
// remainder followed by a 0 terminator; the bits above the last terminator
// are 0 (free slots). A stored value is q + 1 in [1, 2^kR - 1], so a free
// slot (0) never matches.
struct Class8 {
  static constexpr int kR = 8;
  static constexpr int kSlots = 48;
  static constexpr int kBuckets = 80;
  static constexpr int kDirWords = 2;
  static constexpr int kMaskBitsPerSlot = 1;  // SSE2 movemask bits per slot
  static constexpr int kFirstChoiceSlots = 36;  // 3/4 of the slots (design note: "Insert")
  using Dir = u128;
  using Slot = uint8_t;
  static constexpr bool kHwPopcnt = false;
  static constexpr int kSimd = 0;  // compare path: 0 by compile flags, 1 AVX2, 2 AVX-512BW
  static constexpr bool kPdep = false;  // select by PDEP (instances compiled for BMI2)
};
struct Class16 {
  static constexpr int kR = 16;
  static constexpr int kSlots = 28;
  static constexpr int kBuckets = 36;
  static constexpr int kDirWords = 1;
  static constexpr int kMaskBitsPerSlot = 2;
  static constexpr int kFirstChoiceSlots = 21;  // 3/4 of the slots
  using Dir = uint64_t;
  using Slot = uint16_t;
  static constexpr bool kHwPopcnt = false;
  static constexpr int kSimd = 0;
  static constexpr bool kPdep = false;
};
// With POPCNT, the compare path kLevel (1 AVX2, 2 AVX-512BW) and, with
// kUsePdep, select by PDEP: kernel instances for CPUs that have them.
template <class Base, int kLevel, bool kUsePdep = false>
struct WithSimd : Base {
  static constexpr bool kHwPopcnt = true;
  static constexpr int kSimd = kLevel;
  static constexpr bool kPdep = kUsePdep;
};

// ---- directory ----------------------------------------------------------
template <class C>
inline typename C::Dir LoadDir(const uint8_t* blk) {
  if constexpr (C::kDirWords == 2) {
    uint64_t lo, hi;
    std::memcpy(&lo, blk + 48, 8);
    std::memcpy(&hi, blk + 56, 8);
    return static_cast<u128>(lo) | (static_cast<u128>(hi) << 64);
  } else {
    uint64_t d;
    std::memcpy(&d, blk + 56, 8);
    return d;
  }
}
template <class C>
inline int PopDir(typename C::Dir d) {
  if constexpr (C::kDirWords == 2) {
    return Pop64<C::kHwPopcnt>(static_cast<uint64_t>(d)) + Pop64<C::kHwPopcnt>(static_cast<uint64_t>(d >> 64));
  } else {
    return Pop64<C::kHwPopcnt>(d);
  }
}
template <class Dir>
inline Dir LowMask(int n) {  // n < bits of Dir
  return (Dir{1} << n) - 1;
}
// Is slot t (the t-th stored remainder) in bucket j? It is iff the bit at
// t + j is a 1 with exactly t ones (and so j zeros) below it.
template <class C>
inline bool SlotInBucket(typename C::Dir d, int t, int j) {
  // & instead of &&: both tests without a branch (the probe's lowest-match
  // test relies on it; the bit and the rank are cheap either way).
  const int p = t + j;
  using Dir = typename C::Dir;
  return (static_cast<int>((d >> p) & 1) & static_cast<int>(PopDir<C>(static_cast<Dir>(d & LowMask<Dir>(p))) == t)) != 0;
}
// ---- matching -----------------------------------------------------------
// Bit t * kMaskBitsPerSlot (and the next, for 16-bit slots) is set iff slot
// t holds value v. Compares every slot at once; the caller keeps those of
// its bucket. Each compare path has one definition, on values in registers
// (the block's words, or its vectors); MatchMask reads them from memory,
// MatchMaskWords (the thread-safe readers) takes the words they loaded.
//
// The block as words: w[i] holds bytes 8i..8i+7 (little-endian).
template <class C>
inline typename C::Dir DirOfWords(const uint64_t* w) {
  if constexpr (C::kDirWords == 2) {
    return static_cast<u128>(w[6]) | (static_cast<u128>(w[7]) << 64);
  } else {
    return w[7];
  }
}
template <class C>
inline uint64_t MatchMaskPortableWords(const uint64_t* w, uint32_t v) {
  constexpr int kPerWord = 64 / C::kR;
  uint64_t m = 0;
  for (int t = 0; t < C::kSlots; ++t) {
    const uint32_t s = static_cast<uint32_t>(w[t / kPerWord] >> (C::kR * (t % kPerWord))) & ((1u << C::kR) - 1);
    if (s == v) m |= ((uint64_t{1} << C::kMaskBitsPerSlot) - 1) << (t * C::kMaskBitsPerSlot);
  }
  return m;
}
template <class C>
inline uint64_t MatchMaskPortable(const uint8_t* blk, uint32_t v) {
  uint64_t w[kBlockWords];
  std::memcpy(w, blk, sizeof(w));
  return MatchMaskPortableWords<C>(w, v);
}
#if defined(__SSE2__)
// Two words as one 128-bit vector, built in registers (MOVQ, PUNPCKLQDQ).
// _mm_set_epi64x of words in a local array lets the compiler load the
// vector from that array, stalled behind the narrow stores that filled it.
inline __m128i WordPair(uint64_t lo, uint64_t hi) {
#if defined(__x86_64__)
  return _mm_unpacklo_epi64(_mm_cvtsi64_si128(static_cast<long long>(lo)), _mm_cvtsi64_si128(static_cast<long long>(hi)));
#else
  return _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
#endif
}
#endif
#ifdef DLCBF_DENSE_AVX_PATHS
// The same masks from one 256-bit compare (r = 8: plus one 128-bit) or two
// (r = 16), and from one 512-bit compare: r = 8 compares bytes; r = 16
// compares bytes too, and a slot matches where both of its bytes do, which
// gives the 2 mask bits per slot of the other paths. lo / hi: bytes 0..31
// and 32..63 (r = 8 uses the low half of hi).
template <class C>
__attribute__((target("avx2"))) inline uint64_t MatchMaskAvx2V(__m256i lo, __m256i hi, uint32_t v) {
  if constexpr (C::kR == 8) {
    const __m256i q = _mm256_set1_epi8(static_cast<char>(v));
    const uint64_t l = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, q)));
    const uint64_t h = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm256_castsi256_si128(hi), _mm256_castsi256_si128(q))));
    return l | (h << 32);
  } else {
    const __m256i q = _mm256_set1_epi16(static_cast<short>(v));
    const uint64_t l = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi16(lo, q)));
    const uint64_t h = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi16(hi, q)));
    return (l | (h << 32)) & ((uint64_t{1} << (2 * C::kSlots)) - 1);  // not the directory
  }
}
template <class C>
__attribute__((target("avx2"))) inline uint64_t MatchMaskAvx2(const uint8_t* blk, uint32_t v) {
  const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk));
  if constexpr (C::kR == 8) {  // bytes 32..47 only: the directory is not read
    return MatchMaskAvx2V<C>(lo, _mm256_castsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(blk + 32))), v);
  } else {
    return MatchMaskAvx2V<C>(lo, _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + 32)), v);
  }
}
template <class C>
__attribute__((target("avx2"))) inline uint64_t MatchMaskAvx2Words(const uint64_t* w, uint32_t v) {
  const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(WordPair(w[0], w[1])), WordPair(w[2], w[3]), 1);
  if constexpr (C::kR == 8) {
    return MatchMaskAvx2V<C>(lo, _mm256_castsi128_si256(WordPair(w[4], w[5])), v);
  } else {
    return MatchMaskAvx2V<C>(
        lo, _mm256_inserti128_si256(_mm256_castsi128_si256(WordPair(w[4], w[5])), WordPair(w[6], w[7]), 1), v);
  }
}
template <class C>
__attribute__((target("avx512f,avx512bw"))) inline uint64_t MatchMaskAvx512V(__m512i x, uint32_t v) {
  if constexpr (C::kR == 8) {
    return _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8(static_cast<char>(v))) & ((uint64_t{1} << C::kSlots) - 1);
  } else {
    const uint64_t m = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi16(static_cast<short>(v)));
    const uint64_t both = m & (m >> 1) & 0x5555555555555555ULL;  // bit 2t: both bytes of slot t equal
    return (both | (both << 1)) & ((uint64_t{1} << (2 * C::kSlots)) - 1);
  }
}
template <class C>
__attribute__((target("avx512f,avx512bw"))) inline uint64_t MatchMaskAvx512(const uint8_t* blk, uint32_t v) {
  return MatchMaskAvx512V<C>(_mm512_load_si512(reinterpret_cast<const void*>(blk)), v);
}
#endif

#if defined(__SSE2__)
// x[i]: bytes 16i..16i+15 (r = 8 uses x[0..2]).
template <class C>
inline uint64_t MatchMaskSse2V(const __m128i* x, uint32_t v) {
  if constexpr (C::kR == 8) {
    const __m128i q = _mm_set1_epi8(static_cast<char>(v));
    uint64_t m = 0;
    for (int i = 0; i < 3; ++i) {
      m |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x[i], q)))) << (16 * i);
    }
    return m;
  } else {
    const __m128i q = _mm_set1_epi16(static_cast<short>(v));
    uint64_t m = 0;
    for (int i = 0; i < 4; ++i) {
      m |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(x[i], q)))) << (16 * i);
    }
    return m & ((uint64_t{1} << (2 * C::kSlots)) - 1);  // not the directory
  }
}
#endif
template <class C>
inline uint64_t MatchMaskSse2(const uint8_t* blk, uint32_t v) {
#if defined(__SSE2__)
  __m128i x[4];
  for (int i = 0; i < (C::kR == 8 ? 3 : 4); ++i) x[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(blk + 16 * i));
  return MatchMaskSse2V<C>(x, v);
#else
  return MatchMaskPortable<C>(blk, v);
#endif
}
template <class C>
inline uint64_t MatchMaskSse2Words(const uint64_t* w, uint32_t v) {
#if defined(__SSE2__)
  __m128i x[4];
  for (int i = 0; i < (C::kR == 8 ? 3 : 4); ++i) {
    x[i] = WordPair(w[2 * i], w[2 * i + 1]);
  }
  return MatchMaskSse2V<C>(x, v);
#else
  return MatchMaskPortableWords<C>(w, v);
#endif
}

// The compare path of class C: the run-time instance's (kSimd), else the
// widest the translation unit is compiled for (-march=native builds get
// AVX-512BW or AVX2 in the inline probe too), else SSE2 (x86-64's
// baseline), else the portable loop.
template <class C>
inline uint64_t MatchMask(const uint8_t* blk, uint32_t v) {
#ifdef DLCBF_DENSE_AVX_PATHS
  if constexpr (C::kSimd == 2) return MatchMaskAvx512<C>(blk, v);
  if constexpr (C::kSimd == 1) return MatchMaskAvx2<C>(blk, v);
#if defined(__AVX512BW__) && defined(__AVX512F__)
  return MatchMaskAvx512<C>(blk, v);
#elif defined(__AVX2__)
  return MatchMaskAvx2<C>(blk, v);
#endif
#endif
  return MatchMaskSse2<C>(blk, v);
}
// The same from the block's words (w as in DirOfWords), in registers: a
// reader that copied the block word by word and then loaded it as one
// vector would wait for the eight narrow stores (no store forwarding).
// The AVX-512BW instances use the AVX2 compares here: a 512-bit vector
// from registers takes one more insert than the two 256-bit halves, whose
// compares cost the same.
template <class C>
inline uint64_t MatchMaskWords(const uint64_t* w, uint32_t v) {
#ifdef DLCBF_DENSE_AVX_PATHS
  if constexpr (C::kSimd >= 1) return MatchMaskAvx2Words<C>(w, v);
#if defined(__AVX2__)
  return MatchMaskAvx2Words<C>(w, v);
#endif
#endif
  return MatchMaskSse2Words<C>(w, v);
}

// The first slot of bucket j among the matches m (a MatchMask), or -1;
// d is the block's directory.
template <class C>
inline int FirstInBucketDir(typename C::Dir d, uint32_t j, uint64_t m) {
  while (m != 0) {
    const int t = __builtin_ctzll(m) / C::kMaskBitsPerSlot;
    if (SlotInBucket<C>(d, t, static_cast<int>(j))) return t;
    m &= ~(((uint64_t{1} << C::kMaskBitsPerSlot) - 1) << (t * C::kMaskBitsPerSlot));
  }
  return -1;
}
template <class C>
inline int FirstInBucket(const uint8_t* blk, uint32_t j, uint64_t m) {
  if (m == 0) return -1;
  return FirstInBucketDir<C>(LoadDir<C>(blk), j, m);
}
template <class C>
inline bool AnyInBucket(const uint8_t* blk, uint32_t j, uint64_t m) {
  return FirstInBucket<C>(blk, j, m) >= 0;
}
// Is v in bucket j0 of block b0 or in bucket j1 of block b1 (a d = 2
// query)? The caller has requested b1's line, so a negative's two misses
// overlap, and a hit in b0 answers without waiting for b1 (with both
// blocks tested before the first answer, peer_bench's in-cache hits took
// 1.3x as long). In each block the lowest match is tested without
// a branch; only a block with a second match (for a negative,
// 1 - (1 - 1/Rn)^used: about 16 % of blocks at r = 8 and full load,
// 0.04 % at r = 16) takes the loop over the rest.
template <class C>
inline int LowestMatchInBucketDir(typename C::Dir d, uint32_t j, uint64_t m, uint64_t* rest) {
  constexpr uint64_t kLane = (uint64_t{1} << C::kMaskBitsPerSlot) - 1;
  // A block without a match tests slot 0 (a valid position) and discards
  // the answer; & instead of && keeps the test branch-free.
  const int t = m != 0 ? __builtin_ctzll(m) / C::kMaskBitsPerSlot : 0;
  *rest = m & ~(kLane << (t * C::kMaskBitsPerSlot));
  return (m != 0) & SlotInBucket<C>(d, t, static_cast<int>(j));
}
template <class C>
inline int LowestMatchInBucket(const uint8_t* blk, uint32_t j, uint64_t m, uint64_t* rest) {
  return LowestMatchInBucketDir<C>(LoadDir<C>(blk), j, m, rest);
}
template <class C>
inline bool ProbeTwoBlocks(const uint8_t* b0, uint32_t j0, const uint8_t* b1, uint32_t j1, uint32_t v) {
  uint64_t r0, r1;
  if (LowestMatchInBucket<C>(b0, j0, MatchMask<C>(b0, v), &r0)) return true;
  if (LowestMatchInBucket<C>(b1, j1, MatchMask<C>(b1, v), &r1)) return true;
  if ((r0 | r1) == 0) return false;
  return AnyInBucket<C>(b0, j0, r0) || AnyInBucket<C>(b1, j1, r1);
}

}  // namespace dense_layout

// What the inline probe needs: the 64-byte-aligned blocks, the blocks per
// subtable nb, the buckets per subtable B = nb K, the remainder count
// Rn = 2^r - 1, subtable 1's permutation key and, for the 8-bit class, its
// offset table. Valid for the filter's lifetime.
struct DenseDLeftView {
  const uint8_t* blocks = nullptr;
  uint64_t blocks_per_subtable = 0;  // nb
  uint64_t buckets = 0;      // B
  uint64_t remainders = 0;   // Rn = 2^r - 1
  uint64_t key1 = 0;         // k_10
  // r = 8: SplitOffset(F_1(q)) for every q in [0, Rn) (255 entries, 2 KB,
  // computed at creation); nullptr for r = 16 (65,535 entries would not
  // stay in L1), which computes F_1 per query.
  const uint64_t* offsets = nullptr;
  bool r8 = true;
};

// Subtable 1's bucket offset F_1(q) < B split at the block size, as
// (F_1 / K) << 8 | F_1 % K (K = kBuckets < 256).
template <class C>
inline uint64_t SplitOffset(uint64_t off) {
  static_assert(C::kBuckets < 256, "the bucket part of a split offset is one byte");
  return (off / C::kBuckets) << 8 | (off % C::kBuckets);
}

// The two candidates of a d = 2 filter: subtable 0's block blk0 and bucket
// j0, subtable 1's block blk1 (counted from the table's start, so in
// [nb, 2 nb)) and bucket j1, and the stored value v = q + 1. The same
// positions as the two-phase hashing of include/dlcbf/internal/
// dleft_layout.h (b, q) = H(h), b_1 = b + F_1(q) mod B, without a division:
//   blk0 = floor(h nb / 2^64) = floor(b / K)   (B = nb K: floor(floor(x) / K) = floor(x / K)),
//   j0   = b - K blk0,
//   r = 8: b + F_1 = (blk0 + F_1 / K) K + j0 + F_1 % K with F_1 split in
//   the table and j0 + F_1 % K < 2K: one carry into the block, and mod B
//   is one subtraction of nb from it;
//   r = 16: b_1 = b + F_1 mod B, then b_1 / K and b_1 mod K (a split F_1
//   would put a second division by K on the path: 8 % slower inserts).
// So subtable 0's block is one multiply from h (its load issues first) and,
// at r = 8, subtable 1's is one L1 load and three adds from q.
struct DenseD2Candidates {
  uint64_t blk0, blk1;
  uint32_t j0, j1, v;
};
template <class C>
inline DenseD2Candidates DenseD2CandidatesOf(const DenseDLeftView& v, uint64_t h) {
  DenseD2Candidates c;
  const uint64_t nb = v.blocks_per_subtable;
  c.blk0 = Mul64Hi(h, nb);
  c.j0 = static_cast<uint32_t>(FingerprintBucket(h, v.buckets) - c.blk0 * C::kBuckets);
  const uint64_t q = FingerprintRemainder(h, v.buckets, v.remainders);
  if constexpr (C::kR == 8) {
    const uint64_t s = v.offsets[q];
    uint32_t j1 = c.j0 + static_cast<uint32_t>(s & 0xFF);
    const uint32_t carry = j1 >= static_cast<uint32_t>(C::kBuckets) ? 1u : 0u;
    j1 -= carry * C::kBuckets;
    uint64_t blk1 = c.blk0 + (s >> 8) + carry;
    if (blk1 >= nb) blk1 -= nb;
    c.blk1 = nb + blk1;
    c.j1 = j1;
  } else {
    uint64_t b1 = FingerprintBucket(h, v.buckets) + PermutationOffset(q, v.key1, v.buckets);
    if (b1 >= v.buckets) b1 -= v.buckets;
    c.blk1 = nb + b1 / C::kBuckets;
    c.j1 = static_cast<uint32_t>(b1 % C::kBuckets);
  }
  c.v = static_cast<uint32_t>(q) + 1;
  return c;
}

// ContainsHash of a d = 2 filter without thread safety: subtable 0's block
// first (one multiply from h, so its load issues first), then subtable 1's.
template <class C>
inline bool DenseDLeftProbeD2(const DenseDLeftView& v, uint64_t h) {
  const DenseD2Candidates c = DenseD2CandidatesOf<C>(v, h);
  const uint8_t* b1p = v.blocks + 64 * c.blk1;
  __builtin_prefetch(b1p, 0, 3);
  return dense_layout::ProbeTwoBlocks<C>(v.blocks + 64 * c.blk0, c.j0, b1p, c.j1, c.v);
}
inline bool DenseDLeftProbeD2(const DenseDLeftView& v, uint64_t h) {
  return v.r8 ? DenseDLeftProbeD2<dense_layout::Class8>(v, h) : DenseDLeftProbeD2<dense_layout::Class16>(v, h);
}

}  // namespace internal
}  // namespace dlcbf
