// The dense dlCBF kernel's block layout, its read side (matching, the
// bucket rank test, the d = 2 probe) and its write side (select, the
// in-block insert and remove), and the inline hot path of
// DenseDLeftFilter: ContainsHash, and the common InsertHash and EraseHash.
//
// The inline part of include/dlcbf/core/dense_dleft_filter.h (installed
// with it; include that header, not this one), so that a call on a filter
// with d = 2 and no thread safety inlines into the caller's loop
// (consecutive calls then overlap their cache misses, and no call or
// table lookup stands before the first load). The layout and the formulas
// are in the design note of filter_policy/core/dense_dleft_filter.cc. The
// kernel (filter_policy/core/dense_dleft_impl.h and dense_dleft_block.h)
// is written with the functions below, so the inline path and the kernel
// cannot disagree; the tests also compare both paths on every call and
// the tables they write, byte for byte.
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
// Bit t is set iff slot t holds value v (one bit per slot on every path,
// both classes). Compares every slot at once; the caller keeps those of
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
    if (s == v) m |= uint64_t{1} << t;
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
// (r = 16, packed to one byte per slot), and from one 512-bit compare of
// bytes (r = 8) or 16-bit words (r = 16, a mask bit per word). lo / hi:
// bytes 0..31 and 32..63 (r = 8 uses the low half of hi). One bit per
// slot at r = 16 (before: a bit per byte, two per slot, and a shift and
// mask to join them) made r = 16 misses 0.75-0.83x the time on every
// path (peer_bench, Zen 5, 100k keys; 10M keys: 0.78x): fewer
// instructions per query, so more queries overlap.
template <class C>
__attribute__((target("avx2"))) inline uint64_t MatchMaskAvx2V(__m256i lo, __m256i hi, uint32_t v) {
  if constexpr (C::kR == 8) {
    const __m256i q = _mm256_set1_epi8(static_cast<char>(v));
    const uint64_t l = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, q)));
    const uint64_t h = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm256_castsi256_si128(hi), _mm256_castsi256_si128(q))));
    return l | (h << 32);
  } else {
    // The two compares packed to one byte per slot (PACKSSWB keeps -1 and
    // 0), within 128-bit lanes: qwords slots 0-7, 16-23, 8-15, 24-31, put
    // in order by one qword permute, so the byte mask has one bit per slot.
    const __m256i q = _mm256_set1_epi16(static_cast<short>(v));
    const __m256i p = _mm256_packs_epi16(_mm256_cmpeq_epi16(lo, q), _mm256_cmpeq_epi16(hi, q));
    const uint64_t m = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_permute4x64_epi64(p, 0xD8)));
    return m & ((uint64_t{1} << C::kSlots) - 1);  // not the directory
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
    return _mm512_cmpeq_epi16_mask(x, _mm512_set1_epi16(static_cast<short>(v))) & ((uint64_t{1} << C::kSlots) - 1);
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
    // Pairs of compares packed to one byte per slot (PACKSSWB keeps -1
    // and 0), so each byte mask has one bit per slot.
    const __m128i q = _mm_set1_epi16(static_cast<short>(v));
    const __m128i a = _mm_packs_epi16(_mm_cmpeq_epi16(x[0], q), _mm_cmpeq_epi16(x[1], q));
    const __m128i b = _mm_packs_epi16(_mm_cmpeq_epi16(x[2], q), _mm_cmpeq_epi16(x[3], q));
    const uint64_t m = static_cast<uint32_t>(_mm_movemask_epi8(a)) |
                       (static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(b))) << 16);
    return m & ((uint64_t{1} << C::kSlots) - 1);  // not the directory
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
    const int t = __builtin_ctzll(m);
    if (SlotInBucket<C>(d, t, static_cast<int>(j))) return t;
    m &= ~(uint64_t{1} << t);
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
  // A block without a match tests slot 0 (a valid position) and discards
  // the answer; & instead of && keeps the test branch-free.
  const int t = m != 0 ? __builtin_ctzll(m) : 0;
  // Clearing bit t, not m & (m - 1): with the latter here and in
  // FirstInBucketDir, the thread-safe readers' r = 8 hits took 1.13x as
  // long (peer_bench /ts rows, Zen 5; a code-generation effect).
  *rest = m & ~(uint64_t{1} << t);
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

// ==== the write side: select, the in-block insert and remove ==============
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

// The first slot of bucket j holding v, or -1.
template <class C>
inline int FindInBucket(const uint8_t* blk, uint32_t j, uint32_t v) {
  return FirstInBucket<C>(blk, j, MatchMask<C>(blk, v));
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
  // The slots first, then the directory: at r = 16 the shift's last 16-byte
  // chunk spans the directory word, and loading it right after storing
  // that word would stall on store forwarding. In this order (Zen 5, 100k
  // keys, insert-all-then-erase-all loops, medians of 21 rounds, three
  // alternating runs of the builds before and after) r = 16 inserts took
  // 0.87x the time and erases 0.93x natively, 0.91x and 0.88x portably;
  // r = 8 0.97-1.00x.
  ShiftSlotsUp<C>(blk, p - static_cast<int>(j), v);  // new slot: p - j ones below
  StoreDir<C>(blk, static_cast<Dir>(((d & ~low) << 1) | (d & low) | (Dir{1} << p)));
}
// Removes slot t, which is in bucket j.
template <class C>
inline void RemoveFromBlock(uint8_t* blk, int t, uint32_t j) {
  using Dir = typename C::Dir;
  const Dir d = LoadDir<C>(blk);
  const int p = t + static_cast<int>(j);
  const Dir low = LowMask<Dir>(p);
  ShiftSlotsDown<C>(blk, t);  // before the directory, as in InsertInBlock
  StoreDir<C>(blk, static_cast<Dir>(((d >> 1) & ~low) | (d & low)));
}

}  // namespace dense_layout

// What the inline path needs: the 64-byte-aligned blocks, the blocks per
// subtable nb, the buckets per subtable B = nb K, the remainder count
// Rn = 2^r - 1, subtable 1's permutation key and, for the 8-bit class, its
// offset table. Valid for the filter's lifetime.
struct DenseDLeftView {
  uint8_t* blocks = nullptr;
  uint64_t blocks_per_subtable = 0;  // nb
  uint64_t buckets = 0;      // B
  uint64_t remainders = 0;   // Rn = 2^r - 1
  uint64_t key1 = 0;         // k_10
  // r = 8: SplitOffset(F_1(q)) for every q in [0, Rn) (255 entries, 2 KB,
  // computed at creation); nullptr for r = 16 (65,535 entries would not
  // stay in L1), which computes F_1 per query.
  const uint64_t* offsets = nullptr;
  // The inline writes: the filter's item count, and the first candidate's
  // insert threshold (slots; 0: always the least loaded, a test switch).
  uint64_t* items = nullptr;
  int first_choice_slots = 0;
  // The insert requests the second candidate's line before reading the
  // first only once the filter holds this many items (below it the first
  // candidate almost surely has room: SecondLineItems in
  // filter_policy/core/dense_dleft_impl.h; 0: always).
  uint64_t second_line_items = 0;
  bool pdep_fast = false;  // internal::PdepIsFast(): the inline insert's select may use PDEP
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

// The inline insert needs select and popcounts: it is compiled where the
// caller's translation unit has POPCNT and BMI2 (PDEP) and runs where the
// CPU's PDEP is fast (DenseDLeftView::pdep_fast); elsewhere InsertHash
// calls the kernel, whose run-time instances have them (with the portable
// select and popcounts inline, portable builds' inserts took 1.25-1.35x
// as long as the kernel's).
#if defined(__x86_64__) && defined(__POPCNT__) && defined(__BMI2__)
#define DLCBF_DENSE_INLINE_INSERT 1
#else
#define DLCBF_DENSE_INLINE_INSERT 0
#endif

// The candidates of h and their blocks (the inline insert and erase); with
// second_line, the second block's line is requested for writing.
struct DenseD2Targets {
  DenseD2Candidates c;
  uint8_t* b0;
  uint8_t* b1;
};
template <class C>
inline DenseD2Targets DenseD2TargetsOf(const DenseDLeftView& v, uint64_t h, bool second_line) {
  DenseD2Targets t;
  t.c = DenseD2CandidatesOf<C>(v, h);
  t.b0 = v.blocks + 64 * t.c.blk0;
  t.b1 = v.blocks + 64 * t.c.blk1;
  if (second_line) __builtin_prefetch(t.b1, 1, 3);
  return t;
}

// InsertHash of a d = 2 filter without thread safety, where neither
// candidate block is full: the first candidate takes the remainder while
// it holds fewer than first_choice_slots, else the less loaded one, ties
// to the first (the kernel's rule: the design note's "Insert"). False,
// with nothing changed, when the chosen block is full: the kernel then
// moves a resident (InsertHash's out-of-line path).
template <class C>
inline bool DenseDLeftInsertD2(const DenseDLeftView& v, uint64_t h) {
  using namespace dense_layout;  // NOLINT(build/namespaces)
  const auto [c, b0, b1] = DenseD2TargetsOf<C>(v, h, *v.items >= v.second_line_items);
  const int u0 = Used<C>(b0);
  uint8_t* best = b0;
  uint32_t j = c.j0;
  int used = u0;
  if (u0 >= v.first_choice_slots) {
    const int u1 = Used<C>(b1);
    const bool less = u1 < u0;  // chosen without a branch: it depends on loaded data
    best = less ? b1 : b0;
    j = less ? c.j1 : c.j0;
    used = less ? u1 : u0;
  }
  if (used >= C::kSlots) return false;
  InsertInBlock<C>(best, j, c.v);
  ++*v.items;
  return true;
}
inline bool DenseDLeftInsertD2(const DenseDLeftView& v, uint64_t h) {
  return v.r8 ? DenseDLeftInsertD2<dense_layout::Class8>(v, h) : DenseDLeftInsertD2<dense_layout::Class16>(v, h);
}
// EraseHash of a d = 2 filter without thread safety: true if a copy was
// removed, false if there was none (nothing changed).
template <class C>
inline bool DenseDLeftEraseD2(const DenseDLeftView& v, uint64_t h) {
  using namespace dense_layout;  // NOLINT(build/namespaces)
  const auto [c, b0, b1] = DenseD2TargetsOf<C>(v, h, /*second_line=*/true);
  // Subtable 0 first (the kernel's Erase says why).
  const int t0 = FindInBucket<C>(b0, c.j0, c.v);
  if (t0 >= 0) {
    RemoveFromBlock<C>(b0, t0, c.j0);
  } else {
    const int t1 = FindInBucket<C>(b1, c.j1, c.v);
    if (t1 < 0) return false;
    RemoveFromBlock<C>(b1, t1, c.j1);
  }
  --*v.items;
  return true;
}
inline bool DenseDLeftEraseD2(const DenseDLeftView& v, uint64_t h) {
  return v.r8 ? DenseDLeftEraseD2<dense_layout::Class8>(v, h) : DenseDLeftEraseD2<dense_layout::Class16>(v, h);
}

}  // namespace internal
}  // namespace dlcbf
