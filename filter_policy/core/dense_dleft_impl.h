// The DenseDLeftFilter table (class DenseDLeftFilter::Impl): candidate
// blocks through the two-phase hashing, least-loaded insert with one move,
// exact erase, and the thread-safe read protocol. Internal to
// filter_policy/core/; the block codec is dense_dleft_block.h, the design
// note is at the top of dense_dleft_filter.cc.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/internal/cpu.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include "dlcbf/internal/memory.h"
#include "filter_policy/core/dense_dleft_block.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/dense_dleft_testing.h"
#endif

namespace dlcbf {

// The kernel instances of one mode (class x thread safety x POPCNT), as a
// table of entry points: Impl::Init picks one, so a call costs one
// predictable indirect call and no mode branches.
struct DenseOps {
  bool (*contains)(const DenseDLeftFilter::Impl&, uint64_t);
  uint32_t (*count)(const DenseDLeftFilter::Impl&, uint64_t);
  void (*contains_batch)(const DenseDLeftFilter::Impl&, const uint64_t*, size_t, bool*);  // n <= Impl::kBatch
  OpResult (*insert)(DenseDLeftFilter::Impl&, uint64_t);
  OpResult (*erase)(DenseDLeftFilter::Impl&, uint64_t);
};
// Defined in dense_dleft_filter.cc; *path: the instance set chosen.
const DenseOps* SelectDenseOps(bool r8, bool thread_safe, DenseSimdPath* path);

namespace dense_detail {
// The insert's second-line gate (design note: "Insert"). An insert reads
// the second candidate's block only when the first holds at least
// first_choice_slots; below the gate that is rare enough that requesting
// the second line up front (a second DRAM round trip's bandwidth on every
// insert) costs more than waiting for it when needed.
//
// While nearly every insert lands in subtable 0, a first-candidate block's
// load is Poisson with mean lambda = items / Nb (balls into Nb bins). The
// gate is floor(lambda* Nb) items, lambda* the largest multiple of 1/16 with
// P(Poisson(lambda) >= first_choice_slots) <= kSecondLineTail: 24.75 of 36
// slots at r = 8, 12.69 of 21 at r = 16 (the share of a fill this covers:
// the design note). 0 when first_choice_slots is 0 (every insert compares
// both blocks).
inline constexpr double kSecondLineTail = 0.02;
// P(X >= k) for X ~ Poisson(lambda), k >= 0.
inline double PoissonTailAtLeast(double lambda, int k) {
  double term = std::exp(-lambda), below = 0;
  for (int i = 0; i < k; ++i) {
    below += term;
    term *= lambda / (i + 1);
  }
  return below >= 1 ? 0 : 1 - below;
}
inline uint64_t SecondLineItems(int first_choice_slots, uint64_t nb) {
  if (first_choice_slots <= 0) return 0;
  double lambda = 0;
  while (PoissonTailAtLeast(lambda + 1.0 / 16, first_choice_slots) <= kSecondLineTail) lambda += 1.0 / 16;
  return static_cast<uint64_t>(lambda * static_cast<double>(nb));
}
}  // namespace dense_detail

class DenseDLeftFilter::Impl {
 public:
  static constexpr int kMaxD = 4;
  static constexpr uint64_t kStripes = 1024;
  static_assert((kStripes & (kStripes - 1)) == 0, "stripe index is a mask");

  struct FreeDeleter {
    FreeDeleter() noexcept : bytes(0) {}
    explicit FreeDeleter(size_t b) noexcept : bytes(b) {}
    void operator()(uint8_t* p) const { internal::FreeTable(p, bytes); }
    size_t bytes;
  };
  struct Cand {
    uint64_t block;
    uint32_t bucket;
  };

  DenseDLeftOptions opt;
  uint32_t d = 2;
  uint64_t nb = 0;        // blocks per subtable
  uint64_t nblocks = 0;   // d * nb
  bool r8 = true;
  const DenseOps* ops = nullptr;
  DenseSimdPath simd = DenseSimdPath::kPortable;
  internal::Hashing hashing;
  // The d = 2 candidate derivation's inputs (DenseD2CandidatesOf, shared
  // with the inline path, which gets a copy) and the insert's first-choice
  // threshold (view.first_choice_slots: C::kFirstChoiceSlots, or 0, always
  // the least loaded, where a test compares the two rules): set by Init
  // and Allocate.
  internal::DenseDLeftView view;
  uint64_t offsets8[255] = {};  // r = 8: view.offsets
  std::unique_ptr<uint8_t[], FreeDeleter> mem;
  uint64_t items = 0, relocations = 0, overflows = 0;
  std::mutex mu;  // thread-safe mode: the writers' lock
  // Writers (and Stats, Clear, ForEachFingerprint, Serialize) take mu:
  // thread_safe, unless SetWritersSerializedByCaller turned it off.
  bool lock_writers = false;
  std::unique_ptr<std::atomic<uint32_t>[]> seq;
  // TrackChangedBlocks: a bit per block, set by every block write
  // (Mutate), cleared by the chunked copies as they copy the block; all
  // under the writers' lock. Null: not tracked.
  std::unique_ptr<uint64_t[]> changed;

  uint8_t* Blk(uint64_t b) const { return mem.get() + 64 * b; }
  std::atomic<uint32_t>& Stripe(uint64_t b) const { return seq[b & (kStripes - 1)]; }

  // Sets the geometry and hashing from opt (validated) and the given keys.
  void Init(const internal::PermutationKeys& keys) {
    d = opt.subtables;
    nb = opt.blocks_per_subtable;
    nblocks = nb * d;
    r8 = opt.remainder_bits == 8;
    internal::Geometry g;
    g.subtables = d;
    g.buckets = nb * opt.BucketsPerBlock();
    g.cells = 1;
    g.remainder_bits = opt.remainder_bits;
    hashing = internal::Hashing(g, opt.seed, keys);
    view.blocks_per_subtable = nb;
    view.buckets = g.buckets;
    view.remainders = g.remainder_values();
    view.key1 = keys.k[1][0];
    view.r8 = r8;
    view.offsets = nullptr;
    if (r8 && d >= 2) {
      static_assert(sizeof(offsets8) / sizeof(offsets8[0]) == (1u << dense_detail::Class8::kR) - 1, "one per q");
      for (uint64_t q = 0; q < 255; ++q) {
        // F_1(q): subtable 1's position of the fingerprint (0, q).
        offsets8[q] = internal::SplitOffset<dense_detail::Class8>(hashing.Permute(1, internal::Fingerprint{0, q}).bucket);
      }
      view.offsets = offsets8;
    }
    ops = SelectDenseOps(r8, opt.thread_safe, &simd);
    lock_writers = opt.thread_safe;
    view.first_choice_slots = r8 ? dense_detail::Class8::kFirstChoiceSlots : dense_detail::Class16::kFirstChoiceSlots;
#ifdef DLCBF_TESTING
    if (dense_testing::LeastLoadedOnly()) view.first_choice_slots = 0;
#endif
    view.second_line_items = dense_detail::SecondLineItems(view.first_choice_slots, nb);
#ifdef DLCBF_TESTING
    if (dense_testing::SecondLineAlways()) view.second_line_items = 0;
#endif
    view.items = &items;
    view.pdep_fast = internal::PdepIsFast();
  }

  // Zero-filled (huge pages when large); the stripes in the thread-safe mode.
  bool Allocate() {
    void* p = internal::AllocateZeroedTable(64 * nblocks);
    if (p == nullptr) return false;
    mem = std::unique_ptr<uint8_t[], FreeDeleter>(static_cast<uint8_t*>(p), FreeDeleter{64 * nblocks});
    view.blocks = mem.get();
    if (opt.thread_safe) {
      seq.reset(new (std::nothrow) std::atomic<uint32_t>[kStripes]);
      if (!seq) return false;
      for (uint64_t i = 0; i < kStripes; ++i) seq[i].store(0, std::memory_order_relaxed);
    }
    return true;
  }

  // ---- hashing ------------------------------------------------------------
  template <class C>
  uint32_t Candidates(uint64_t h, Cand* c) const {
    // Subtable 0's block first (P_0 is the identity: one multiply from h),
    // so its load can issue before the permutation rounds.
    if (d == 2) {  // the common geometry: the inline probe's derivation
      const internal::DenseD2Candidates k = internal::DenseD2CandidatesOf<C>(view, h);
      c[0] = Cand{k.blk0, k.j0};
      c[1] = Cand{k.blk1, k.j1};
      return k.v;
    }
    const internal::Fingerprint f = hashing.FingerprintOf(h);
    c[0] = Cand{f.bucket / C::kBuckets, static_cast<uint32_t>(f.bucket % C::kBuckets)};
    for (uint32_t i = 1; i < d; ++i) {
      const internal::Location l = hashing.Permute(i, f);
      c[i] = Cand{i * nb + l.bucket / C::kBuckets, static_cast<uint32_t>(l.bucket % C::kBuckets)};
    }
    return static_cast<uint32_t>(f.remainder) + 1;
  }
  // The fingerprint of the value v in bucket j of block b (P_i^-1).
  template <class C>
  internal::Fingerprint FingerprintAt(uint64_t b, uint32_t j, uint32_t v) const {
    const uint32_t i = static_cast<uint32_t>(b / nb);
    return hashing.Invert(i, internal::Location{(b - i * nb) * C::kBuckets + j, v - 1});
  }

  // ---- thread-safe protocol ------------------------------------------------
  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }
  // The d = 2 query of the thread-safe mode: ForCandidates' protocol
  // (stripes even, blocks, stripes unchanged for a negative), with
  // ProbeTwoBlocks' tests on each block as read by
  // dense_detail::ReadBlockLockFree (the block codec says how, and why two
  // forms). A torn block can only add a false positive; a negative is
  // answered only after the stripes of both blocks read unchanged. The
  // compiler barriers keep the block reads between the stripe reads.
  template <class C>
  bool ProbeTwoBlocksLockFree(const Cand* c, uint32_t v) const {
    const uint8_t* b0 = Blk(c[0].block);
    const uint8_t* b1 = Blk(c[1].block);
    for (;;) {
      const uint32_t s0 = Stripe(c[0].block).load(std::memory_order_acquire);
      const uint32_t s1 = Stripe(c[1].block).load(std::memory_order_acquire);
      if (((s0 | s1) & 1) != 0) {
        CpuRelax();
        continue;
      }
      std::atomic_signal_fence(std::memory_order_seq_cst);
      typename C::Dir d0, d1;
      uint64_t m0, m1, r0, r1;
      dense_detail::ReadBlockLockFree<C>(b0, v, &d0, &m0);
      if (dense_detail::LowestMatchInBucketDir<C>(d0, c[0].bucket, m0, &r0)) return true;
#ifdef DLCBF_TESTING
      dense_testing::ReaderPause();
#endif
      dense_detail::ReadBlockLockFree<C>(b1, v, &d1, &m1);
      if (dense_detail::LowestMatchInBucketDir<C>(d1, c[1].bucket, m1, &r1)) return true;
      if ((r0 | r1) != 0 && (dense_detail::FirstInBucketDir<C>(d0, c[0].bucket, r0) >= 0 ||
                             dense_detail::FirstInBucketDir<C>(d1, c[1].bucket, r1) >= 0)) {
        return true;
      }
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (Stripe(c[0].block).load(std::memory_order_acquire) == s0 &&
          Stripe(c[1].block).load(std::memory_order_acquire) == s1) {
        return false;
      }
#ifdef DLCBF_TESTING
      if (dense_testing::SkipNegativeRecheck()) return false;
#endif
    }
  }
  // Runs probe(dir, mask, i) over the d candidates until it returns true:
  // candidate i's directory and its MatchMask for v (in the thread-safe
  // mode as read by dense_detail::ReadBlockLockFree, like the d = 2
  // query). In the thread-safe mode a negative counts only if the
  // candidate stripes did not change meanwhile.
  template <class C, bool TS, class Probe>
  bool ForCandidates(const Cand* c, uint32_t v, Probe&& probe) const {
    if constexpr (!TS) {
      for (uint32_t i = 0; i < d; ++i) {
        const uint8_t* blk = Blk(c[i].block);
        if (probe(dense_detail::LoadDir<C>(blk), dense_detail::MatchMask<C>(blk, v), i)) return true;
      }
      return false;
    } else {
      for (;;) {
        uint32_t s[kMaxD];
        bool busy = false;
        for (uint32_t i = 0; i < d; ++i) {
          s[i] = Stripe(c[i].block).load(std::memory_order_acquire);
          busy |= (s[i] & 1) != 0;
        }
        if (busy) {
          CpuRelax();
          continue;
        }
        std::atomic_signal_fence(std::memory_order_seq_cst);
        for (uint32_t i = 0; i < d; ++i) {
#ifdef DLCBF_TESTING
          if (i > 0) dense_testing::ReaderPause();
#endif
          typename C::Dir dir;
          uint64_t mask;
          dense_detail::ReadBlockLockFree<C>(Blk(c[i].block), v, &dir, &mask);
          if (probe(dir, mask, i)) return true;
        }
        std::atomic_signal_fence(std::memory_order_seq_cst);
        bool same = true;
        for (uint32_t i = 0; i < d; ++i) same &= Stripe(c[i].block).load(std::memory_order_acquire) == s[i];
        if (same) return false;
#ifdef DLCBF_TESTING
        if (dense_testing::SkipNegativeRecheck()) return false;
#endif
      }
    }
  }

  // Writers (under mu in the thread-safe mode) change blocks between
  // BeginWrite and EndWrite of their stripes (a stripe shared by both
  // blocks is bumped once).
  // Writers are serialized (mu, or the owner's lock), so a stripe is bumped
  // by a load and a store, not an atomic read-modify-write: on x86 a
  // locked RMW drains the store buffer, and two of them per write cost more
  // than the write itself.
  template <bool TS>
  void BeginWrite(uint64_t a, uint64_t b) {
    if constexpr (TS) {
      // No fence: every table store that follows is a release store, so a
      // reader whose acquire load sees any of them also sees these odd
      // values when it re-reads the stripes (and TSan models it).
      Bump(Stripe(a), std::memory_order_relaxed);
      if ((a & (kStripes - 1)) != (b & (kStripes - 1))) Bump(Stripe(b), std::memory_order_relaxed);
    }
  }
  template <bool TS>
  void EndWrite(uint64_t a, uint64_t b) {
    if constexpr (TS) {
      Bump(Stripe(a), std::memory_order_release);
      if ((a & (kStripes - 1)) != (b & (kStripes - 1))) Bump(Stripe(b), std::memory_order_release);
    }
  }
  static void Bump(std::atomic<uint32_t>& s, std::memory_order order) {
    s.store(s.load(std::memory_order_relaxed) + 1, order);
  }
  // Applies fn(block bytes) to block b: in place, or (thread-safe) on a
  // copy stored back word by word with release stores.
  template <bool TS, class Fn>
  void Mutate(uint64_t b, Fn&& fn) {
    if (changed) changed[b >> 6] |= uint64_t{1} << (b & 63);
    if constexpr (!TS) {
      fn(Blk(b));
    } else {
      alignas(64) uint8_t local[64];
      std::memcpy(local, Blk(b), 64);  // only writers store, and they hold mu
      fn(local);
      uint64_t w[dense_detail::kBlockWords];
      std::memcpy(w, local, 64);
      uint64_t* dst = reinterpret_cast<uint64_t*>(Blk(b));
      // Every word, unchanged ones too (the same value again): which words
      // an insert or erase changes depends on the data, and a branch per
      // word mispredicted often enough to cost more than the stores.
      for (int i = 0; i < dense_detail::kBlockWords; ++i) __atomic_store_n(&dst[i], w[i], __ATOMIC_RELEASE);
    }
  }

  // ---- operations ------------------------------------------------------------
  template <class C, bool TS>
  bool Contains(uint64_t h) const {
    Cand c[kMaxD];
    const uint32_t v = Candidates<C>(h, c);
    return Probe<C, TS>(c, v);
  }
  template <class C, bool TS>
  bool Probe(const Cand* c, uint32_t v) const {
    if (d == 2) {
      __builtin_prefetch(Blk(c[1].block), 0, 3);
      if constexpr (TS) return ProbeTwoBlocksLockFree<C>(c, v);
      return dense_detail::ProbeTwoBlocks<C>(Blk(c[0].block), c[0].bucket, Blk(c[1].block), c[1].bucket, v);
    }
    return ForCandidates<C, TS>(c, v, [&](typename C::Dir dir, uint64_t mask, uint32_t i) {
      return dense_detail::FirstInBucketDir<C>(dir, c[i].bucket, mask) >= 0;
    });
  }
  // out[i] = Contains(h[i]) for n <= kBatch keys: every candidate line is
  // prefetched before the first probe.
  static constexpr size_t kBatch = 16;
  template <class C, bool TS>
  void ContainsBatch(const uint64_t* h, size_t n, bool* out) const {
    uint32_t v[kBatch];
    if (d == 2) {  // the common geometry, unrolled
      Cand c2[kBatch][2];  // Candidates writes two for d = 2
      for (size_t k = 0; k < n; ++k) {
        v[k] = Candidates<C>(h[k], c2[k]);
        __builtin_prefetch(Blk(c2[k][0].block), 0, 3);
        __builtin_prefetch(Blk(c2[k][1].block), 0, 3);
      }
      for (size_t k = 0; k < n; ++k) {
        if constexpr (TS) {
          out[k] = ProbeTwoBlocksLockFree<C>(c2[k], v[k]);
        } else {
          out[k] = dense_detail::ProbeTwoBlocks<C>(Blk(c2[k][0].block), c2[k][0].bucket, Blk(c2[k][1].block),
                                                   c2[k][1].bucket, v[k]);
        }
      }
      return;
    }
    Cand c[kBatch][kMaxD];
    for (size_t k = 0; k < n; ++k) {
      v[k] = Candidates<C>(h[k], c[k]);
      for (uint32_t i = 0; i < d; ++i) __builtin_prefetch(Blk(c[k][i].block), 0, 3);
    }
    for (size_t k = 0; k < n; ++k) out[k] = Probe<C, TS>(c[k], v[k]);
  }
  template <class C, bool TS>
  uint32_t Count(uint64_t h) const {
    Cand c[kMaxD];
    const uint32_t v = Candidates<C>(h, c);
    uint32_t n = 0;
    ForCandidates<C, TS>(c, v, [&](typename C::Dir dir, uint64_t mask, uint32_t i) {
      if (i == 0) n = 0;  // a retry starts over
      n += dense_detail::CountInBucketDir<C>(dir, c[i].bucket, mask);
      return false;
    });
    return n;
  }
  template <class C>
  uint32_t Lines(uint64_t h) const {
    Cand c[kMaxD];
    const uint32_t v = Candidates<C>(h, c);
    for (uint32_t i = 0; i < d; ++i) {
      if (dense_detail::InBucket<C>(Blk(c[i].block), c[i].bucket, v)) return i + 1;
    }
    return d;
  }

  template <class C, bool TS>
  OpResult Insert(uint64_t h) {
    Cand c[kMaxD];
    const uint32_t v = Candidates<C>(h, c);
    return InsertAt<C, TS>(c, v);
  }
  template <class C, bool TS>
  OpResult InsertAt(const Cand* c, uint32_t v) {
    // d = 2 (the common geometry) with the candidate count known at
    // compile time: no loops over candidates, no candidate array on the way.
    if (d == 2) return InsertAtN<C, TS, 2>(c, v);
    return InsertAtN<C, TS, 0>(c, v);
  }
  // kN: the number of candidates, or 0 for d.
  template <class C, bool TS, uint32_t kN>
  OpResult InsertAtN(const Cand* c, uint32_t v) {
    const uint32_t nd = kN != 0 ? kN : d;
    // The first candidate takes the remainder while it holds fewer than
    // kFirstChoiceSlots (design note: "Insert"); only above that are the
    // other candidates' loads read, and the least loaded wins, ties to the
    // left. The choice is branch-free: it depends on loaded data, and a
    // mispredicted branch there would hold back the next operation's loads.
    // Their lines are requested up front only past the second-line gate
    // (SecondLineItems).
    if (items >= view.second_line_items) {
      for (uint32_t i = 1; i < nd; ++i) __builtin_prefetch(Blk(c[i].block), 1, 3);
    }
    uint32_t best = 0;
    int best_used = dense_detail::Used<C>(Blk(c[0].block));
    if (best_used >= view.first_choice_slots) {
      for (uint32_t i = 1; i < nd; ++i) {
        const int u = dense_detail::Used<C>(Blk(c[i].block));
        const bool less = u < best_used;
        best = less ? i : best;
        best_used = less ? u : best_used;
      }
    }
    if (best_used < C::kSlots) {
      BeginWrite<TS>(c[best].block, c[best].block);
      Mutate<TS>(c[best].block, [&](uint8_t* b) { dense_detail::InsertInBlock<C>(b, c[best].bucket, v); });
      EndWrite<TS>(c[best].block, c[best].block);
      ++items;
      return OpResult::kOk;
    }
    // Every candidate is full: move one resident to another of its own
    // candidates, then take its slot.
    for (uint32_t i = 0; i < nd; ++i) {
      const uint64_t b = c[i].block;
      const typename C::Dir dir = dense_detail::LoadDir<C>(Blk(b));
      for (int t = 0; t < C::kSlots; ++t) {
        const uint32_t j = static_cast<uint32_t>(dense_detail::BucketOfSlot<C>(dir, t));
        const uint32_t rv = dense_detail::GetSlot<C>(Blk(b), t);
        const internal::Fingerprint f = FingerprintAt<C>(b, j, rv);
        for (uint32_t i2 = 0; i2 < nd; ++i2) {
          if (i2 == i) continue;
          const internal::Location l = hashing.Permute(i2, f);
          const uint64_t b2 = i2 * nb + l.bucket / C::kBuckets;
          if (dense_detail::Used<C>(Blk(b2)) >= C::kSlots) continue;
          BeginWrite<TS>(b, b2);
          Mutate<TS>(b2, [&](uint8_t* x) {
            dense_detail::InsertInBlock<C>(x, static_cast<uint32_t>(l.bucket % C::kBuckets), rv);
          });
          Mutate<TS>(b, [&](uint8_t* x) {
            dense_detail::RemoveFromBlock<C>(x, t, j);
            dense_detail::InsertInBlock<C>(x, c[i].bucket, v);
          });
          EndWrite<TS>(b, b2);
          ++relocations;
          ++items;
          return OpResult::kOk;
        }
      }
    }
    ++overflows;
    return OpResult::kOverflow;
  }

  template <class C, bool TS>
  OpResult Erase(uint64_t h) {
    Cand c[kMaxD];
    const uint32_t v = Candidates<C>(h, c);
    // Every candidate line is requested before the first is searched, so
    // an erase from a later subtable does not wait for two misses in turn.
    for (uint32_t i = 1; i < d; ++i) __builtin_prefetch(Blk(c[i].block), 1, 3);
    // Removes slot t of candidate i.
    auto remove = [&](uint32_t i, int t) {
      BeginWrite<TS>(c[i].block, c[i].block);
      Mutate<TS>(c[i].block, [&](uint8_t* b) { dense_detail::RemoveFromBlock<C>(b, t, c[i].bucket); });
      EndWrite<TS>(c[i].block, c[i].block);
      --items;
      return OpResult::kOk;
    };
    // Candidates in order, stopping at the first that holds a copy: an
    // erase that finds it in subtable 0 (about half of them at full load:
    // the design note's "Lines per query") neither waits for the second
    // line nor searches it. Against searching both blocks of d = 2 and
    // choosing one without a branch, in interleaved rounds on Zen 5: 0.86x
    // the time in cache, 0.69x (r = 8) and 0.86x (r = 16) at 10M keys; the
    // branch on which block holds the key mispredicts about half the time
    // and still costs less. The later lines stay requested up front (a
    // single erase's latency: not two misses in a row); without that
    // request the loops ran as fast.
    for (uint32_t i = 0; i < d; ++i) {
      const int t = dense_detail::FindInBucket<C>(Blk(c[i].block), c[i].bucket, v);
      if (t >= 0) return remove(i, t);
    }
    return OpResult::kNotFound;
  }

  // fn(f, copies) per (subtable, fingerprint) group, block by block.
  template <class C>
  void ForEach(const std::function<void(const internal::Fingerprint&, uint32_t)>& fn) const {
    for (uint64_t b = 0; b < nblocks; ++b) {
      const uint8_t* blk = Blk(b);
      const typename C::Dir dir = dense_detail::LoadDir<C>(blk);
      int t = 0;
      for (int j = 0; j < C::kBuckets; ++j) {
        // Bucket j's slots: [t, end).
        int end = t;
        while (end < C::kSlots && dense_detail::SlotInBucket<C>(dir, end, j)) ++end;
        for (int a = t; a < end; ++a) {
          const uint32_t v = dense_detail::GetSlot<C>(blk, a);
          bool seen = false;
          uint32_t copies = 0;
          for (int x = t; x < end; ++x) {
            if (dense_detail::GetSlot<C>(blk, x) != v) continue;
            if (x < a) seen = true;
            ++copies;
          }
          if (!seen) fn(FingerprintAt<C>(b, static_cast<uint32_t>(j), v), copies);
        }
        t = end;
      }
    }
  }

  // Why the table is not a valid encoding, or nullptr (Deserialize).
  template <class C>
  const char* Check(uint64_t* used_total) const {
    uint64_t n = 0;
    for (uint64_t b = 0; b < nblocks; ++b) {
      const char* why = dense_detail::CheckBlock<C>(Blk(b));
      if (why != nullptr) return why;
      n += static_cast<uint64_t>(dense_detail::Used<C>(Blk(b)));
    }
    *used_total = n;
    return nullptr;
  }
};

}  // namespace dlcbf
