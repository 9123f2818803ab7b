// The FastDLeftFilter kernel: the cell and spare-line encodings, the
// probes, insert/erase/relocation/spill and the thread-safe read protocol
// (class FastDLeftFilter::Impl). Internal to filter_policy/core/; included
// by fast_dleft_filter.cc (the public API, sizing and test hooks) and
// fast_dleft_serialize.cc (the on-disk format). The design note with the
// formulas is at the top of fast_dleft_filter.cc.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>

#include "dlcbf/core/fast_dleft_filter.h"
#include "dlcbf/internal/coding.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/fast_dleft_testing.h"
#endif
#include "dlcbf/internal/hash.h"
#include "dlcbf/internal/memory.h"

namespace dlcbf {
namespace fast_dleft_detail {


using internal::Mul64Hi;

// The block-cell layout and hash split are the inline probe's
// (include/dlcbf/core/fast_dleft_probe.h): one definition for both paths.
using internal::fast_layout::kBit13;
using internal::fast_layout::kLane;
using internal::fast_layout::kMeta;
using internal::fast_layout::kQMask;
using internal::fast_layout::kRn;
using internal::fast_layout::MatchLanes;
constexpr int kWordsPerBlock = 8;
constexpr int kCellsPerWord = 4;
#ifndef DLCBF_FAST_BLOCKS_PER_SPARE
#define DLCBF_FAST_BLOCKS_PER_SPARE 8
#endif
constexpr uint64_t kBlocksPerSpare = DLCBF_FAST_BLOCKS_PER_SPARE;
// K, blocks per spare line. A spare cell's tag t = k % K + K * buddy sits
// in a 4-bit field (bits 15..18 of the cell), so 2 K <= 16: K <= 8.
constexpr int kSpareWords = 8;            // 64-byte spare line
constexpr int kSpareCellsPerWord = 3;     // 21-bit cells
static_assert(kRn == (1u << 13) - 1, "remainders 1..8191 fill the 13-bit field");

// The bounds the layout relies on (the design note of fast_dleft_filter.cc
// and FORMATS.md, "Fast kernel").
static_assert(kBlocksPerSpare >= 1 && 2 * kBlocksPerSpare <= 16,
              "the spare tag k % K + K * buddy must fit its 4 bits: K <= 8");
static_assert(kWordsPerBlock * 8 == 64 && kSpareWords * 8 == 64,
              "a block and a spare line are one 64-byte cache line each");
static_assert(kCellsPerWord * 16 == 64, "four 16-bit cells per block word");
static_assert(kSpareCellsPerWord * 21 <= 64, "three 21-bit spare cells per word");
static_assert(FastDLeftFilter::kGroupBlocks % (2 * kBlocksPerSpare) == 0,
              "a copy group holds whole spare line pairs (own + buddy lines)");
static_assert((FastDLeftFilter::kGroupBlocks & (FastDLeftFilter::kGroupBlocks - 1)) == 0,
              "copy groups are a power of two of blocks");

// 16-bit block cells: remainder (bits 0..12), count - 1 (13..14), spill
// bit (15); the masks above come from the probe header.
constexpr uint64_t kQCMask = 0x7FFF7FFF7FFF7FFFULL;    // remainder + counter

// 21-bit spare cells: key = q | b << 13 | t << 15 (19 bits), t = k mod K
// + K * buddy, count - 1 in bits 19..20.
constexpr uint64_t kSLane = 1ULL | (1ULL << 21) | (1ULL << 42);
constexpr uint64_t kSKeyMask = 0x7FFFFULL * kSLane;
constexpr uint64_t kSBit19 = (1ULL << 19) * kSLane;
constexpr uint64_t kSCellMask = 0x1FFFFFULL;
static_assert(kSCellMask == (1ULL << 21) - 1 && kSLane == (1ULL | (1ULL << 21) | (1ULL << 42)),
              "three 21-bit spare cells at bits 0, 21 and 42");
static_assert(kRn < (1u << 13) && 8 / 2 - 1 < (1u << 2) && 2 * kBlocksPerSpare - 1 < (1u << 4) &&
                  kSKeyMask == ((1ULL << (13 + 2 + 4)) - 1) * kSLane,
              "spare key: 13-bit q | 2-bit b (Bb <= 4) | 4-bit t, count - 1 in bits 19..20");

// Occupied lanes of a block word: bit 13 of each lane.
inline uint64_t OccupiedLanes(uint64_t w) { return ((w & kQMask) + kQMask) & kBit13; }
inline int LaneOf(uint64_t lane_bits) { return __builtin_ctzll(lane_bits) >> 4; }
// Number of set lane flags (bit 13 of each 16-bit lane), without popcount
// (a library call in portable x86-64 builds).
inline int LaneCount(uint64_t lane_bits) { return static_cast<int>(((lane_bits >> 13) * kLane) >> 48); }
inline uint64_t SpareMatchLanes(uint64_t w, uint64_t key) {
  const uint64_t x = (w & kSKeyMask) ^ (key * kSLane);
  return ~((x + kSKeyMask) & kSBit19) & kSBit19;
}
inline uint64_t SpareOccupiedLanes(uint64_t w) {
  return ((w & kSKeyMask) + kSKeyMask) & kSBit19;
}

inline void Prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

#ifdef DLCBF_TESTING
// Test-only hooks (filter_policy/testing/fast_dleft_testing.h), compiled
// into the test builds only: the shipped library checks nothing.
inline std::atomic<int> g_fault{0};
inline std::atomic<uint32_t> g_reader_pause{0};

// Thread-safe readers call this between candidate loads: a no-op unless a
// test asked for a pause.
inline void TestReaderPause() {
  const uint32_t n = g_reader_pause.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) CpuRelax();
}
#define DLCBF_FAST_TEST_READER_PAUSE() TestReaderPause()
#else
#define DLCBF_FAST_TEST_READER_PAUSE() ((void)0)
#endif

struct FreeDeleter {
  void operator()(uint64_t* p) const { std::free(p); }
};

// Permutation keys derived from the seed (also serialized).
inline void DeriveKeys(uint64_t seed, uint32_t* keys) {
  uint64_t st = seed ^ 0xA5A5F00DCAFE1234ULL;
  keys[0] = 0;
  for (int i = 1; i < 4; ++i) keys[i] = static_cast<uint32_t>(internal::SplitMix64(&st));
}

inline uint64_t SpareLinesFor(uint64_t blocks) {
  return (blocks + kBlocksPerSpare - 1) / kBlocksPerSpare;
}

}  // namespace fast_dleft_detail

// The kernel below and the two files that include this header use the
// detail names unqualified.
using namespace fast_dleft_detail;  // NOLINT(build/namespaces): internal header

// ---------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------
class FastDLeftFilter::Impl {
 public:
  FastDLeftOptions opt;
  uint64_t nblocks = 0;
  uint64_t nspare = 0;
  uint32_t pkeys[4] = {0, 0, 0, 0};
  std::unique_ptr<uint64_t[], FreeDeleter> mem;  // blocks, then spare lines
  uint64_t* blocks = nullptr;
  uint64_t* spare = nullptr;
  uint64_t items = 0, fingerprints = 0, spilled = 0;
  uint64_t relocations = 0, overflows = 0, saturations = 0, sticky_erases = 0;
  // Thread-safe mode only: one writer lock and per-stripe sequence numbers
  // (stripe = block mod kStripes) that readers use to validate a negative.
  static constexpr uint64_t kStripes = 1024;
  static_assert((kStripes & (kStripes - 1)) == 0, "Stripe() masks with kStripes - 1");
  std::mutex mu;
  std::unique_ptr<std::atomic<uint32_t>[]> seq;

  std::atomic<uint32_t>& Stripe(uint64_t k) const { return seq[k & (kStripes - 1)]; }

  // Loads and stores of table words: plain in the default mode; in the
  // thread-safe mode acquire loads and release stores (what the seqlock
  // needs, and what TSan models; on x86 they are plain moves).
  template <bool TS>
  static uint64_t Ld(const uint64_t* p) {
    if constexpr (TS) {
      return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    } else {
      return *p;
    }
  }
  template <bool TS>
  static void St(uint64_t* p, uint64_t v) {
    if constexpr (TS) {
      __atomic_store_n(p, v, __ATOMIC_RELEASE);
    } else {
      *p = v;
    }
  }

  Status Allocate() {
    nblocks = opt.blocks;
    nspare = SpareLinesFor(nblocks);
    const uint64_t bytes = 64 * (nblocks + nspare);
    Status s = internal::CheckFitsInMemory(bytes, "FastDLeftFilter");
    if (!s.ok()) return s;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) return Status::MemoryLimit("FastDLeftFilter", "allocation failed");
    std::memset(p, 0, bytes);
    mem.reset(static_cast<uint64_t*>(p));
    blocks = mem.get();
    spare = blocks + nblocks * kWordsPerBlock;
    if (opt.thread_safe) {
      seq.reset(new (std::nothrow) std::atomic<uint32_t>[kStripes]);
      if (!seq) return Status::MemoryLimit("FastDLeftFilter", "allocation failed");
      for (uint64_t i = 0; i < kStripes; ++i) seq[i].store(0, std::memory_order_relaxed);
    }
    return Status::OK();
  }

  struct Fp {
    uint64_t k;
    uint32_t b;
    uint32_t q;
  };

  template <int D>
  Fp Split(uint64_t h) const {
    return Fp{internal::fast_layout::Block(h, nblocks), internal::fast_layout::Bucket<D>(h),
              internal::fast_layout::Remainder(h)};
  }

  // F_i(q) in [0, Bb).
  template <int D>
  uint32_t F(int i, uint32_t q) const {
    return internal::fast_layout::Perm<D>(q, pkeys[i]);
  }
  // Word index in the block of P_i(b, q).
  template <int D>
  int Cand(int i, uint32_t b, uint32_t q) const {
    return internal::fast_layout::CandWord<D>(i, b, i == 0 ? 0 : F<D>(i, q));
  }

  // --- spill counters: 4*D metadata bits in words {i * Bb + b} -------------
  template <int D, bool TS = false>
  static bool Flagged(const uint64_t* blk, uint32_t b) {
    uint64_t m = 0;
    for (int i = 0; i < D; ++i) m |= Ld<TS>(&blk[internal::fast_layout::SpillWord<D>(i, b)]);
    return (m & kMeta) != 0;
  }
  template <int D, bool TS = false>
  static uint32_t SpillCount(const uint64_t* blk, uint32_t b) {
    uint32_t v = 0;
    for (int i = 0; i < D; ++i) {
      const uint64_t w = Ld<TS>(&blk[internal::fast_layout::SpillWord<D>(i, b)]);
      for (int l = 0; l < 4; ++l) v |= static_cast<uint32_t>((w >> (16 * l + 15)) & 1) << (4 * i + l);
    }
    return v;
  }
  template <int D, bool TS>
  static void SetSpillCount(uint64_t* blk, uint32_t b, uint32_t v) {
    for (int i = 0; i < D; ++i) {
      const int sw = internal::fast_layout::SpillWord<D>(i, b);
      uint64_t w = blk[sw] & ~kMeta;
      for (int l = 0; l < 4; ++l) w |= static_cast<uint64_t>((v >> (4 * i + l)) & 1) << (16 * l + 15);
      St<TS>(&blk[sw], w);
    }
  }
  // The spill value of (block, b): bit 4D-1 chooses the spare line (0 =
  // the block's own line, 1 = its buddy line), the low 4D-1 bits count.
  template <int D>
  static constexpr uint32_t kChoiceBit = 1u << (4 * D - 1);
  template <int D>
  static constexpr uint32_t MaxSpill() { return kChoiceBit<D> - 1; }
  static_assert(kChoiceBit<2> == 0x80 && kChoiceBit<4> == 0x8000,
                "a spill value is 4 D metadata bits: 4 lanes of each of the D spill words");

  // --- spare lines ---------------------------------------------------------
  // Block k's own spare line is g = k / K; its buddy is g ^ 1 (or g itself
  // when g ^ 1 does not exist). A spare cell stores k mod K, plus K when it
  // sits in the buddy line of its block's group.
  uint64_t OwnLine(uint64_t k) const { return k / kBlocksPerSpare; }
  uint64_t BuddyLine(uint64_t k) const {
    const uint64_t g = k / kBlocksPerSpare;
    return (g ^ 1) < nspare ? (g ^ 1) : g;
  }
  uint64_t* Line(uint64_t s) const { return spare + s * kSpareWords; }
  static uint64_t SpareKey(const Fp& f, bool buddy) {
    return f.q | (static_cast<uint64_t>(f.b) << 13) |
           ((f.k % kBlocksPerSpare + (buddy ? kBlocksPerSpare : 0)) << 15);
  }
  // The spare line and cell key that (block, b) uses, given its spill value.
  template <int D>
  uint64_t* SpareFor(const Fp& f, uint32_t spill, uint64_t* key) const {
    const bool buddy = (spill & kChoiceBit<D>) != 0;
    *key = SpareKey(f, buddy);
    return Line(buddy ? BuddyLine(f.k) : OwnLine(f.k));
  }
  static int FreeCells(const uint64_t* line) {
    int n = 0;
    for (int w = 0; w < kSpareWords; ++w) {
      const uint64_t f = (~SpareOccupiedLanes(line[w]) & kSBit19) >> 19;
      n += static_cast<int>((f & 1) + ((f >> 21) & 1) + ((f >> 42) & 1));
    }
    return n;
  }
  template <bool TS = false>
  static bool SpareFind(const uint64_t* line, uint64_t key, int* word, int* lane) {
    for (int w = 0; w < kSpareWords; ++w) {
      const uint64_t m = SpareMatchLanes(Ld<TS>(&line[w]), key);
      if (m != 0) {
        *word = w;
        *lane = __builtin_ctzll(m) / 21;
        return true;
      }
    }
    return false;
  }
  static bool SpareEmpty(const uint64_t* line, int* word, int* lane) {
    for (int w = 0; w < kSpareWords; ++w) {
      const uint64_t free_lanes = ~SpareOccupiedLanes(line[w]) & kSBit19;
      if (free_lanes != 0) {
        *word = w;
        *lane = __builtin_ctzll(free_lanes) / 21;
        return true;
      }
    }
    return false;
  }

  // --- operations ----------------------------------------------------------
  template <int D, bool TS = false>
  bool Contains(uint64_t h) const {
    const Fp f = Split<D>(h);
    const uint64_t* blk = blocks + f.k * kWordsPerBlock;
    uint64_t any = 0;
    for (int i = 0; i < D; ++i) {
      if constexpr (TS) {
        if (i > 0) DLCBF_FAST_TEST_READER_PAUSE();
      }
      any |= MatchLanes(Ld<TS>(&blk[Cand<D>(i, f.b, f.q)]), f.q);
    }
    if (any != 0) return true;
    if (__builtin_expect(!Flagged<D, TS>(blk, f.b), 1)) return false;
    int w, l;
    uint64_t key;
    const uint64_t* line = SpareFor<D>(f, SpillCount<D, TS>(blk, f.b), &key);
    if constexpr (TS) DLCBF_FAST_TEST_READER_PAUSE();
    return SpareFind<TS>(line, key, &w, &l);
  }

  // Thread-safe reads: a negative answer counts only if no writer touched
  // the key's stripe meanwhile (a relocation may move a fingerprint between
  // the loads of its two candidate buckets); otherwise retry.
  template <class Fn>
  auto Validated(uint64_t h, Fn&& probe) const -> decltype(probe()) {
    const std::atomic<uint32_t>& s = Stripe(Mul64Hi(h, nblocks));
    for (;;) {
      const uint32_t v1 = s.load(std::memory_order_acquire);
      if (v1 & 1) {
        CpuRelax();
        continue;
      }
      const auto r = probe();
      if (r) return r;
      if (s.load(std::memory_order_acquire) == v1) return r;
#ifdef DLCBF_TESTING
      // Test-only negative control: trust the negative without the re-check.
      if (__builtin_expect(g_fault.load(std::memory_order_relaxed) != 0, 0)) return r;
#endif
    }
  }

  template <int D, bool TS = false>
  uint32_t Count(uint64_t h) const {
    const Fp f = Split<D>(h);
    const uint64_t* blk = blocks + f.k * kWordsPerBlock;
    for (int i = 0; i < D; ++i) {
      const uint64_t w = Ld<TS>(&blk[Cand<D>(i, f.b, f.q)]);
      const uint64_t m = MatchLanes(w, f.q);
      if (m != 0) return static_cast<uint32_t>((w >> (16 * LaneOf(m) + 13)) & 3) + 1;
    }
    if (!Flagged<D, TS>(blk, f.b)) return 0;
    int w, l;
    uint64_t key;
    const uint64_t* line = SpareFor<D>(f, SpillCount<D, TS>(blk, f.b), &key);
    if (!SpareFind<TS>(line, key, &w, &l)) return 0;
    return static_cast<uint32_t>((Ld<TS>(&line[w]) >> (21 * l + 19)) & 3) + 1;
  }

  template <int D, bool TS = false>
  uint32_t Lines(uint64_t h) const {
    const Fp f = Split<D>(h);
    const uint64_t* blk = blocks + f.k * kWordsPerBlock;
    for (int i = 0; i < D; ++i) {
      if (MatchLanes(Ld<TS>(&blk[Cand<D>(i, f.b, f.q)]), f.q) != 0) return 1;
    }
    return Flagged<D, TS>(blk, f.b) ? 2 : 1;
  }

  // Adds `add` to the count of a spill value, sticking at MaxSpill.
  template <int D>
  static uint32_t Bump(uint32_t spill, uint32_t add) {
    const uint32_t count = std::min<uint32_t>(MaxSpill<D>(), (spill & MaxSpill<D>()) + add);
    return (spill & kChoiceBit<D>) | count;
  }

  // Places (q, count bits) into an empty lane of word *w.
  template <bool TS>
  static void PutCell(uint64_t* w, int lane, uint64_t cell15) {
    St<TS>(w, (*w & ~(0x7FFFULL << (16 * lane))) | (cell15 << (16 * lane)));
  }

  // Writers read with plain loads (they hold the lock in the thread-safe
  // mode) and store through St<TS>.
  //
  // Insert's common case (no stored copy, (block, b) not spilled, a
  // candidate with room) is kept short so that consecutive inserts overlap
  // their cache misses; everything else goes to InsertSlow, which handles
  // every case (it repeats the cheap checks).
  template <int D, bool TS>
  OpResult Insert(const Fp& f, uint32_t add) {
    uint64_t* blk = blocks + f.k * kWordsPerBlock;
    int cand[D];
    uint64_t w[D];
    uint64_t any = 0;
    for (int i = 0; i < D; ++i) {
      cand[i] = Cand<D>(i, f.b, f.q);
      w[i] = blk[cand[i]];
      any |= MatchLanes(w[i], f.q);
    }
    uint64_t meta = 0;
    for (int i = 0; i < D; ++i) meta |= blk[internal::fast_layout::SpillWord<D>(i, f.b)];
    int best = 0, best_load = LaneCount(OccupiedLanes(w[0]));
    for (int i = 1; i < D; ++i) {
      const int load = LaneCount(OccupiedLanes(w[i]));
      const bool better = load < best_load;
      best = better ? i : best;
      best_load = better ? load : best_load;
    }
    if (__builtin_expect(any != 0 || (meta & kMeta) != 0 || best_load >= kCellsPerWord || add != 1, 0)) {
      return InsertSlow<D, TS>(f, add);
    }
    int sel = cand[0];
    uint64_t sw = w[0];
    for (int i = 1; i < D; ++i) {
      sel = best == i ? cand[i] : sel;
      sw = best == i ? w[i] : sw;
    }
    PutCell<TS>(&blk[sel], LaneOf(~OccupiedLanes(sw) & kBit13), f.q);
    ++fingerprints;
    ++items;
    return OpResult::kOk;
  }

  template <int D, bool TS>
  __attribute__((noinline)) OpResult InsertSlow(const Fp& f, uint32_t add) {
    uint64_t* blk = blocks + f.k * kWordsPerBlock;
    int cand[D];
    for (int i = 0; i < D; ++i) cand[i] = Cand<D>(i, f.b, f.q);
    // 1. Existing copy in the block.
    for (int i = 0; i < D; ++i) {
      const uint64_t m = MatchLanes(blk[cand[i]], f.q);
      if (m != 0) {
        const int sh = 16 * LaneOf(m) + 13;
        const uint32_t c = static_cast<uint32_t>((blk[cand[i]] >> sh) & 3);
        const uint32_t nc = std::min<uint32_t>(3, c + add);
        saturations += c + add - nc;
        St<TS>(&blk[cand[i]], (blk[cand[i]] & ~(3ULL << sh)) | (static_cast<uint64_t>(nc) << sh));
        items += add;
        return OpResult::kOk;
      }
    }
    // 2. Existing copy in the spare (only visible when flagged).
    const uint32_t spill = SpillCount<D>(blk, f.b);
    if (spill != 0) {
      uint64_t skey;
      uint64_t* line = const_cast<uint64_t*>(SpareFor<D>(f, spill, &skey));
      int w, l;
      if (SpareFind(line, skey, &w, &l)) {
        const int sh = 21 * l + 19;
        const uint32_t c = static_cast<uint32_t>((line[w] >> sh) & 3);
        const uint32_t nc = std::min<uint32_t>(3, c + add);
        saturations += c + add - nc;
        St<TS>(&line[w], (line[w] & ~(3ULL << sh)) | (static_cast<uint64_t>(nc) << sh));
        SetSpillCount<D, TS>(blk, f.b, Bump<D>(spill, add));
        items += add;
        return OpResult::kOk;
      }
    }
    const uint32_t c0 = std::min<uint32_t>(3, add - 1);
    const uint64_t cell = f.q | (static_cast<uint64_t>(c0) << 13);
    // 3. Least-loaded candidate with room, ties to the left (branch-free
    // selection: the loads depend on a cache miss).
    int best = 0, best_load = LaneCount(OccupiedLanes(blk[cand[0]]));
    for (int i = 1; i < D; ++i) {
      const int load = LaneCount(OccupiedLanes(blk[cand[i]]));
      const bool better = load < best_load;
      best = better ? i : best;
      best_load = better ? load : best_load;
    }
    if (best_load < kCellsPerWord) {
      const int lane = LaneOf(~OccupiedLanes(blk[cand[best]]) & kBit13);
      PutCell<TS>(&blk[cand[best]], lane, cell);
      ++fingerprints;
      saturations += add - 1 - c0;
      items += add;
      return OpResult::kOk;
    }
    // 4. One-step relocation: move a resident of a candidate bucket to
    // another of its own candidates (P_i^-1 gives its true bucket).
    constexpr uint32_t kBb = 8 / D;
    for (int i = 0; i < D; ++i) {
      const uint64_t src = blk[cand[i]];
      for (int l = 0; l < kCellsPerWord; ++l) {
        const uint64_t c15 = (src >> (16 * l)) & 0x7FFF;
        const uint32_t q2 = static_cast<uint32_t>(c15 & 0x1FFF);
        const uint32_t j = static_cast<uint32_t>(cand[i]) - i * kBb;
        const uint32_t b2 = i == 0 ? j : ((j - F<D>(i, q2)) & (kBb - 1));
        for (int t = 0; t < D; ++t) {
          if (t == i) continue;
          const int dst = Cand<D>(t, b2, q2);
          const uint64_t free_lanes = ~OccupiedLanes(blk[dst]) & kBit13;
          if (free_lanes == 0) continue;
          // Copy before overwrite; readers validate negatives anyway.
          PutCell<TS>(&blk[dst], LaneOf(free_lanes), c15);
          PutCell<TS>(&blk[cand[i]], l, cell);
          ++relocations;
          ++fingerprints;
          saturations += add - 1 - c0;
          items += add;
          return OpResult::kOk;
        }
      }
    }
    // 5. Spill to the spare line; kOverflow (unchanged) when it is full.
    // The first spill of (block, b) picks the emptier of the block's own
    // and buddy spare lines (ties to its own); later ones follow it.
    uint32_t choice = spill & kChoiceBit<D>;
    if (spill == 0 && BuddyLine(f.k) != OwnLine(f.k) &&
        FreeCells(Line(BuddyLine(f.k))) > FreeCells(Line(OwnLine(f.k)))) {
      choice = kChoiceBit<D>;
    }
    uint64_t skey;
    uint64_t* line = const_cast<uint64_t*>(SpareFor<D>(f, choice, &skey));
    int w, l;
    if (!SpareEmpty(line, &w, &l)) {
      // The line this (block, b) uses is full: move all its spare cells to
      // the other line of the pair if they fit there with the new one, and
      // flip the choice bit. Otherwise kOverflow, nothing changed.
      if (spill == 0 || !MoveGroup<D, TS>(f, spill, blk)) {
        ++overflows;
        return OpResult::kOverflow;
      }
      choice ^= kChoiceBit<D>;
      line = const_cast<uint64_t*>(SpareFor<D>(f, choice, &skey));
      if (!SpareEmpty(line, &w, &l)) return OpResult::kOverflow;  // unreachable: room was checked
    }
    const int sh = 21 * l;
    St<TS>(&line[w], (line[w] & ~(kSCellMask << sh)) | ((skey | (static_cast<uint64_t>(c0) << 19)) << sh));
    SetSpillCount<D, TS>(blk, f.b, Bump<D>((spill & MaxSpill<D>()) | choice, add));
    ++fingerprints;
    ++spilled;
    saturations += add - 1 - c0;
    items += add;
    return OpResult::kOk;
  }

  // Moves every spare cell of (f.k, f.b) from its current line to the other
  // line of the pair (copies first, then flips the choice bit, then clears
  // the old cells) if the other line has room for them plus one more.
  template <int D, bool TS>
  bool MoveGroup(const Fp& f, uint32_t spill, uint64_t* blk) {
    const uint64_t own = OwnLine(f.k), buddy = BuddyLine(f.k);
    if (own == buddy) return false;
    const bool from_buddy = (spill & kChoiceBit<D>) != 0;
    uint64_t* src = Line(from_buddy ? buddy : own);
    uint64_t* dst = Line(from_buddy ? own : buddy);
    const uint64_t tag_from = (f.k % kBlocksPerSpare + (from_buddy ? kBlocksPerSpare : 0));
    const uint64_t tag_to = (f.k % kBlocksPerSpare + (from_buddy ? 0 : kBlocksPerSpare));
    // Cells of the group: bits 13..18 = b | t << 2.
    const uint64_t group = (static_cast<uint64_t>(f.b) | (tag_from << 2));
    int cells = 0;
    for (int w = 0; w < kSpareWords; ++w) {
      for (int l = 0; l < kSpareCellsPerWord; ++l) {
        const uint64_t c = (src[w] >> (21 * l)) & kSCellMask;
        cells += (c & 0x1FFF) != 0 && ((c >> 13) & 0x3F) == group;
      }
    }
    if (FreeCells(dst) < cells + 1) return false;
    for (int w = 0; w < kSpareWords; ++w) {
      for (int l = 0; l < kSpareCellsPerWord; ++l) {
        const uint64_t c = (src[w] >> (21 * l)) & kSCellMask;
        if ((c & 0x1FFF) == 0 || ((c >> 13) & 0x3F) != group) continue;
        const uint64_t moved = (c & ~(0xFULL << 15)) | (tag_to << 15);
        int dw = 0, dl = 0;
        SpareEmpty(dst, &dw, &dl);  // room was counted above
        St<TS>(&dst[dw], (dst[dw] & ~(kSCellMask << (21 * dl))) | (moved << (21 * dl)));
      }
    }
    SetSpillCount<D, TS>(blk, f.b, spill ^ kChoiceBit<D>);
    for (int w = 0; w < kSpareWords; ++w) {
      for (int l = 0; l < kSpareCellsPerWord; ++l) {
        const uint64_t c = (src[w] >> (21 * l)) & kSCellMask;
        if ((c & 0x1FFF) == 0 || ((c >> 13) & 0x3F) != group) continue;
        St<TS>(&src[w], src[w] & ~(kSCellMask << (21 * l)));
      }
    }
    ++relocations;
    return true;
  }

  // Erase's common case (the copy is in the block, counter not saturated),
  // without data-dependent branches; the rest goes to EraseSlow.
  template <int D, bool TS>
  OpResult Erase(const Fp& f) {
    uint64_t* blk = blocks + f.k * kWordsPerBlock;
    int sel = 0;
    uint64_t sw = 0, sm = 0;
    for (int i = D - 1; i >= 0; --i) {
      const int c = Cand<D>(i, f.b, f.q);
      const uint64_t w = blk[c];
      const uint64_t m = MatchLanes(w, f.q);
      sel = m != 0 ? c : sel;
      sw = m != 0 ? w : sw;
      sm = m != 0 ? m : sm;
    }
    if (__builtin_expect(sm == 0, 0)) return EraseSlow<D, TS>(f);
    const int lane = LaneOf(sm);
    const uint32_t c = static_cast<uint32_t>((sw >> (16 * lane + 13)) & 3);
    if (__builtin_expect(c == 3, 0)) return EraseSlow<D, TS>(f);
    const uint64_t dec = sw - (1ULL << (16 * lane + 13));
    const uint64_t clr = sw & ~(0x7FFFULL << (16 * lane));
    St<TS>(&blk[sel], c > 0 ? dec : clr);
    fingerprints -= c == 0;
    --items;
    return OpResult::kOk;
  }

  template <int D, bool TS>
  __attribute__((noinline)) OpResult EraseSlow(const Fp& f) {
    uint64_t* blk = blocks + f.k * kWordsPerBlock;
    for (int i = 0; i < D; ++i) {
      uint64_t& w = blk[Cand<D>(i, f.b, f.q)];
      const uint64_t m = MatchLanes(w, f.q);
      if (m == 0) continue;
      const int lane = LaneOf(m);
      const uint32_t c = static_cast<uint32_t>((w >> (16 * lane + 13)) & 3);
      if (c == 3) {
        ++sticky_erases;
      } else if (c > 0) {
        St<TS>(&w, w - (1ULL << (16 * lane + 13)));
      } else {
        St<TS>(&w, w & ~(0x7FFFULL << (16 * lane)));
        --fingerprints;
      }
      --items;
      return OpResult::kOk;
    }
    const uint32_t spill = SpillCount<D>(blk, f.b);
    if (spill == 0) return OpResult::kNotFound;
    uint64_t skey;
    uint64_t* line = const_cast<uint64_t*>(SpareFor<D>(f, spill, &skey));
    int wi, l;
    if (!SpareFind(line, skey, &wi, &l)) return OpResult::kNotFound;
    const int sh = 21 * l;
    const uint32_t c = static_cast<uint32_t>((line[wi] >> (sh + 19)) & 3);
    --items;
    if (c == 3) {
      // Sticky: the cell stays, and so does the spill count that makes it
      // visible.
      ++sticky_erases;
      return OpResult::kOk;
    }
    if (c > 0) {
      St<TS>(&line[wi], line[wi] - (1ULL << (sh + 19)));
    } else {
      St<TS>(&line[wi], line[wi] & ~(kSCellMask << sh));
      --fingerprints;
      --spilled;
    }
    const uint32_t count = spill & MaxSpill<D>();
    if (count != MaxSpill<D>()) SetSpillCount<D, TS>(blk, f.b, count == 1 ? 0 : spill - 1);
    return OpResult::kOk;
  }

  static constexpr size_t kGroup = 16;

  // Rolling prefetch: the block of key i + kGroup is requested while key i
  // is probed, so about kGroup misses are in flight at any time.
  template <int D, bool TS>
  void ContainsBatch(const uint64_t* h, size_t n, bool* out) const {
    const size_t ahead = std::min(kGroup, n);
    for (size_t i = 0; i < ahead; ++i) Prefetch(blocks + Mul64Hi(h[i], nblocks) * kWordsPerBlock);
    for (size_t i = 0; i < n; ++i) {
      if (i + kGroup < n) Prefetch(blocks + Mul64Hi(h[i + kGroup], nblocks) * kWordsPerBlock);
      const uint64_t x = h[i];
      if constexpr (TS) {
        out[i] = Validated(x, [&] { return Contains<D, true>(x); });
      } else {
        out[i] = Contains<D, false>(x);
      }
    }
  }

  // Runs a writer: in the thread-safe mode under the lock, with block k's
  // stripe odd while the table changes.
  template <class Fn>
  OpResult Write(uint64_t k, Fn&& fn) {
    if (!opt.thread_safe) return fn(std::false_type());
    std::lock_guard<std::mutex> g(mu);
    std::atomic<uint32_t>& s = Stripe(k);
    const uint32_t v = s.load(std::memory_order_relaxed);
    s.store(v + 1, std::memory_order_relaxed);
    const OpResult r = fn(std::true_type());
    s.store(v + 2, std::memory_order_release);
    return r;
  }

  // Blocks [first, end) and the spare lines [first / K, line_end): with
  // first a multiple of 2K and end a multiple of 2K or nblocks, those lines
  // hold exactly the spills of those blocks (a line pair serves 2K blocks).
  template <int D>
  void ForEach(const std::function<void(const TrueFingerprint&, uint32_t)>& fn,
               uint64_t first = 0, uint64_t end = ~uint64_t{0}) const {
    constexpr uint32_t kBb = 8 / D;
    if (end > nblocks) end = nblocks;
    const uint64_t line_end = end == nblocks ? nspare : end / kBlocksPerSpare;
    for (uint64_t k = first; k < end; ++k) {
      const uint64_t* blk = blocks + k * kWordsPerBlock;
      for (int w = 0; w < kWordsPerBlock; ++w) {
        const int i = w / static_cast<int>(kBb);
        const uint32_t j = static_cast<uint32_t>(w) % kBb;
        for (int l = 0; l < kCellsPerWord; ++l) {
          const uint32_t q = static_cast<uint32_t>((blk[w] >> (16 * l)) & 0x1FFF);
          if (q == 0) continue;
          const uint32_t b = i == 0 ? j : ((j - F<D>(i, q)) & (kBb - 1));
          fn(TrueFingerprint{k, b, q}, static_cast<uint32_t>((blk[w] >> (16 * l + 13)) & 3) + 1);
        }
      }
    }
    for (uint64_t s = first / kBlocksPerSpare; s < line_end; ++s) {
      const uint64_t* line = spare + s * kSpareWords;
      for (int w = 0; w < kSpareWords; ++w) {
        for (int l = 0; l < kSpareCellsPerWord; ++l) {
          const uint64_t c = (line[w] >> (21 * l)) & kSCellMask;
          if ((c & 0x1FFF) == 0) continue;
          const uint64_t lo = (c >> 15) & 15;
          const uint64_t g = lo >= kBlocksPerSpare ? (s ^ 1) : s;
          fn(TrueFingerprint{g * kBlocksPerSpare + lo % kBlocksPerSpare, static_cast<uint32_t>((c >> 13) & 3),
                             static_cast<uint32_t>(c & 0x1FFF)},
             static_cast<uint32_t>((c >> 19) & 3) + 1);
        }
      }
    }
  }

  double FlaggedFraction() const {
    const uint32_t bb = opt.subtables == 4 ? 2 : 4;
    uint64_t flagged = 0;
    for (uint64_t k = 0; k < nblocks; ++k) {
      for (uint32_t b = 0; b < bb; ++b) {
        flagged += opt.subtables == 4 ? Flagged<4>(blocks + k * 8, b) : Flagged<2>(blocks + k * 8, b);
      }
    }
    return static_cast<double>(flagged) / static_cast<double>(nblocks * bb);
  }

  // Structural checks for Deserialize: every cell well formed, one copy per
  // fingerprint, every live spare entry visible through its spill counter.
  template <int D>
  const char* Check() const {
    constexpr uint32_t kBb = 8 / D;
    uint64_t fps = 0, spl = 0;
    std::unordered_map<uint64_t, uint32_t> spare_mult;  // (k * kBb + b) -> multiplicity
    for (uint64_t k = 0; k < nblocks; ++k) {
      const uint64_t* blk = blocks + k * kWordsPerBlock;
      for (int w = 0; w < kWordsPerBlock; ++w) {
        const int i = w / static_cast<int>(kBb);
        const uint32_t j = static_cast<uint32_t>(w) % kBb;
        for (int l = 0; l < kCellsPerWord; ++l) {
          const uint64_t cell = (blk[w] >> (16 * l)) & 0x7FFF;
          const uint32_t q = static_cast<uint32_t>(cell & 0x1FFF);
          if (q == 0) {
            if (cell != 0) return "counter bits set in an empty block cell";
            continue;
          }
          ++fps;
          const uint32_t b = i == 0 ? j : ((j - F<D>(i, q)) & (kBb - 1));
          // No other candidate of (b, q), and no other lane of this word,
          // may hold q.
          for (int t = 0; t < D; ++t) {
            const int c = Cand<D>(t, b, q);
            uint64_t m = MatchLanes(blk[c], q);
            if (c == w) m &= ~(kBit13 << (16 * l));
            if (m != 0) return "duplicate fingerprint in a block";
          }
        }
      }
    }
    for (uint64_t s = 0; s < nspare; ++s) {
      const uint64_t* line = spare + s * kSpareWords;
      for (int w = 0; w < kSpareWords; ++w) {
        if (line[w] >> 63) return "spare word padding bit set";
        for (int l = 0; l < kSpareCellsPerWord; ++l) {
          const uint64_t c = (line[w] >> (21 * l)) & kSCellMask;
          const uint32_t q = static_cast<uint32_t>(c & 0x1FFF);
          if (q == 0) {
            if (c != 0) return "bits set in an empty spare cell";
            continue;
          }
          ++fps;
          ++spl;
          const uint64_t lo = (c >> 15) & 15;
          const bool buddy = lo >= kBlocksPerSpare;
          const uint64_t k = (buddy ? (s ^ 1) : s) * kBlocksPerSpare + lo % kBlocksPerSpare;
          const uint32_t b = static_cast<uint32_t>((c >> 13) & 3);
          if (lo >= 2 * kBlocksPerSpare || k >= nblocks || b >= kBb || (buddy && BuddyLine(k) != s)) return "spare cell names a block or bucket out of range";
          const uint64_t* blk = blocks + k * kWordsPerBlock;
          for (int t = 0; t < D; ++t) {
            if (MatchLanes(blk[Cand<D>(t, b, q)], q) != 0) return "fingerprint both in block and spare";
          }
          const uint32_t spill = SpillCount<D>(blk, b);
          if ((spill & MaxSpill<D>()) == 0 || ((spill & kChoiceBit<D>) != 0) != buddy) {
            return "spare entry not covered by its spill counter";
          }
          spare_mult[k * kBb + b] += static_cast<uint32_t>((c >> 19) & 3) + 1;
          // Duplicates within the spare line.
          uint64_t dup = 0;
          for (int w2 = 0; w2 < kSpareWords; ++w2) {
            dup += static_cast<uint64_t>(__builtin_popcountll(SpareMatchLanes(line[w2], c & 0x7FFFF)));
          }
          if (dup != 1) return "duplicate fingerprint in the spare";
        }
      }
    }
    if (fps != fingerprints) return "fingerprint count does not match the table";
    if (spl != spilled) return "spilled count does not match the spare";
    // Every spill counter as Insert/Erase keep it: zero, or at least the
    // multiplicity held by its spare entries (it counts occurrences, also
    // those a saturated cell no longer records; sticky once saturated, then
    // with at least one entry), and a buddy choice only where a distinct
    // buddy line exists. A smaller count would let Erase clear the counter
    // while an entry is still in the spare (a false negative); a buddy
    // choice without a buddy would make Insert tag an entry that no reader
    // or ForEachFingerprint decodes to its block.
    for (uint64_t k = 0; k < nblocks; ++k) {
      const uint64_t* blk = blocks + k * kWordsPerBlock;
      for (uint32_t b = 0; b < kBb; ++b) {
        const uint32_t spill = SpillCount<D>(blk, b);
        if (spill == 0) continue;
        const uint32_t count = spill & MaxSpill<D>();
        if (count == 0) return "spill choice bit set without a count";
        if ((spill & kChoiceBit<D>) != 0 && BuddyLine(k) == OwnLine(k)) {
          return "spill choice names a buddy line that does not exist";
        }
        const auto it = spare_mult.find(k * kBb + b);
        const uint64_t mult = it == spare_mult.end() ? 0 : it->second;
        if (mult == 0 || (count != MaxSpill<D>() && count < mult)) {
          return "spill count does not cover its spare entries";
        }
      }
    }
    return nullptr;
  }
};

}  // namespace dlcbf
