// The DLeftCountingBloomFilter kernel (class DLeftCountingBloomFilter::Impl):
// the table, probes, insert/erase with relocation, counters and the
// seqlock of the thread-safe mode. Internal to filter_policy/core/;
// included by dleft_counting_bloom_filter.cc (the public API and options)
// and dleft_serialize.cc (the on-disk format). The design note is at the
// top of dleft_counting_bloom_filter.cc.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include <sys/mman.h>

#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/memory.h"

namespace dlcbf {
namespace dleft_detail {

inline internal::Geometry GeometryOf(const DLeftOptions& o) {
  using internal::Geometry;
  Geometry g;
  g.subtables = o.subtables;
  g.buckets = o.buckets_per_subtable;
  g.cells = o.cells_per_bucket;
  g.remainder_bits = o.remainder_bits;
  g.counter_bits = o.counter_bits;
  return g;
}

constexpr uint32_t kStripes = 1024;  // seqlock stripes (power of two)
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace dleft_detail

// The kernel below and the two files that include this header use these
// names unqualified.
using namespace dleft_detail;  // NOLINT(build/namespaces): internal header

using internal::CellCodec;
using internal::Fingerprint;
using internal::Geometry;
using internal::Hashing;
using internal::Location;
using internal::WordBits;

class DLeftCountingBloomFilter::Impl {
 public:
  Impl(const DLeftOptions& o, const internal::PermutationKeys& keys)
      : opt_(o),
        geo_(GeometryOf(o)),
        hashing_(geo_, o.seed, keys),
        codec_(geo_),
        cell_bits_(geo_.cell_bits()),
        bucket_bits_(geo_.bucket_bits()),
        words_n_((geo_.total_bits() + 63) / 64 + 1) {}

  // Allocation is separate so failure is a Status, not an exception.
  // Tables of 2 MiB or more are 2 MiB-aligned and advised to use transparent
  // huge pages: a probe then costs one cache miss without a page walk.
  bool Allocate() {
    const size_t bytes = words_n_ * sizeof(uint64_t);
    void* mem = nullptr;
    if (bytes >= kHugePage) {
      if (posix_memalign(&mem, kHugePage, bytes) != 0) mem = nullptr;
      if (mem) madvise(mem, bytes, MADV_HUGEPAGE);  // advisory; failure is harmless
    } else {
      mem = std::malloc(bytes);
    }
    if (!mem) return false;
    words_.reset(static_cast<uint64_t*>(mem));
    std::fill(words_.get(), words_.get() + words_n_, 0);
    if (opt_.thread_safe) {
      stripes_.reset(new (std::nothrow) std::atomic<uint32_t>[kStripes]);
      if (!stripes_) return false;
      for (uint32_t i = 0; i < kStripes; ++i) stripes_[i].store(0, std::memory_order_relaxed);
    }
    return true;
  }

  // ---- addressing ---------------------------------------------------------
  uint64_t BucketBit(uint32_t sub, uint64_t bucket) const {
    return (uint64_t{sub} * geo_.buckets + bucket) * bucket_bits_;
  }
  uint64_t CellBit(uint32_t sub, uint64_t bucket, uint32_t cell) const {
    return BucketBit(sub, bucket) + uint64_t{cell} * cell_bits_;
  }
  uint32_t StripeOf(uint32_t sub, uint64_t bucket) const {
    return static_cast<uint32_t>((uint64_t{sub} * geo_.buckets + bucket) & (kStripes - 1));
  }
  WordBits bits() const { return WordBits{words_.get()}; }
  uint64_t ReadCell(uint64_t bit) const { return bits().Load(bit) & codec_.cell_mask(); }
  // Thread-safe readers: acquire loads (see "Memory ordering" above).
  internal::AcquireWordBits acquire_bits() const {
    return internal::AcquireWordBits{words_.get()};
  }

  // Writes `width` = cell_bits_ bits at `bit` with single-word release
  // stores (release: see "Memory ordering" above); bits outside the cell are
  // preserved. Only the writer (holding mu_ in thread-safe mode) calls
  // this, so read-modify-write is race-free among writers.
  void WriteCell(uint64_t bit, uint64_t value) {
    uint64_t* w = words_.get();
    uint64_t i = bit >> 6, o = bit & 63;
    uint64_t mask = codec_.cell_mask();
    uint64_t lo_mask = mask << o;
    uint64_t cur = __atomic_load_n(&w[i], __ATOMIC_RELAXED);
    __atomic_store_n(&w[i], (cur & ~lo_mask) | ((value << o) & lo_mask), __ATOMIC_RELEASE);
    if (o + cell_bits_ > 64) {
      uint32_t spill = static_cast<uint32_t>(64 - o);
      uint64_t hi_mask = mask >> spill;
      uint64_t cur2 = __atomic_load_n(&w[i + 1], __ATOMIC_RELAXED);
      __atomic_store_n(&w[i + 1], (cur2 & ~hi_mask) | ((value >> spill) & hi_mask),
                       __ATOMIC_RELEASE);
    }
  }

  // ---- seqlock stripes ----------------------------------------------------
  // Marks the stripes of the given buckets as "being written". Duplicates are
  // removed so a stripe is bumped exactly once (odd), then once again (even).
  struct WriteGuard {
    Impl* impl;
    uint32_t stripes[2 * internal::kMaxSubtables + 2];
    uint32_t n = 0;
    explicit WriteGuard(Impl* i) : impl(i) {}
    void Add(uint32_t sub, uint64_t bucket) {
      if (!impl->stripes_) return;
      uint32_t s = impl->StripeOf(sub, bucket);
      for (uint32_t j = 0; j < n; ++j) if (stripes[j] == s) return;
      assert(n < sizeof(stripes) / sizeof(stripes[0]) && "guard covers at most 2d+2 buckets");
      stripes[n++] = s;
    }
    void Begin() {
      for (uint32_t j = 0; j < n; ++j) {
        auto& st = impl->stripes_[stripes[j]];
        st.store(st.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      }
      // No fence: the table stores that follow are release stores.
    }
    void End() {
      for (uint32_t j = 0; j < n; ++j) {
        auto& st = impl->stripes_[stripes[j]];
        st.store(st.load(std::memory_order_relaxed) + 1, std::memory_order_release);
      }
    }
  };

  // ---- probing --------------------------------------------------------------
  struct Probe {
    Location loc[internal::kMaxSubtables];
  };
  void MakeProbe(uint64_t hash, Probe* p) const {
    Fingerprint f = hashing_.FingerprintOf(hash);
    for (uint32_t i = 0; i < geo_.subtables; ++i) p->loc[i] = hashing_.Permute(i, f);
  }
  // Returns the counter of the fingerprint (0 if absent). Lock-free; in
  // thread-safe mode a 0 is validated against the stripes (see header note),
  // and so is a positive count when `exact` (Count must not report a value
  // torn by a concurrent increment; Contains only needs "nonzero").
  uint32_t Lookup(const Probe& p, bool exact) const {
    const uint32_t d = geo_.subtables;
    for (;;) {
      uint32_t seen[internal::kMaxSubtables];
      bool busy = false;
      if (stripes_) {
        for (uint32_t i = 0; i < d; ++i) {
          seen[i] = stripes_[StripeOf(i, p.loc[i].bucket)].load(std::memory_order_acquire);
          busy |= (seen[i] & 1) != 0;
        }
        if (busy) {
          std::this_thread::yield();
          continue;
        }
      }
      uint32_t found = 0;
      if (stripes_) {
        found = ProbeCounter(acquire_bits(), p);
      } else {
        found = ProbeCounter(bits(), p);
      }
      if (!stripes_ || (found != 0 && !exact)) return found;
      // No fence: every load of the probe was an acquire load.
      bool stable = true;
      for (uint32_t i = 0; i < d; ++i) {
        stable &= stripes_[StripeOf(i, p.loc[i].bucket)].load(std::memory_order_relaxed) == seen[i];
      }
      if (stable) return found;
    }
  }

  // The counter of the probe's fingerprint, 0 if absent; loads through `b`.
  template <class Bits>
  uint32_t ProbeCounter(const Bits& b, const Probe& p) const {
    for (uint32_t i = 0; i < geo_.subtables; ++i) {
      uint64_t at = BucketBit(i, p.loc[i].bucket);
      int j = internal::FindInBucket(b, codec_, at, geo_.cells, cell_bits_, p.loc[i].remainder);
      if (j >= 0) {
        return codec_.Counter(b.Load(at + uint64_t(j) * cell_bits_) & codec_.cell_mask());
      }
    }
    return 0;
  }

  void Prefetch(const Probe& p) const {
    for (uint32_t i = 0; i < geo_.subtables; ++i) {
      uint64_t b = BucketBit(i, p.loc[i].bucket);
      const char* first = static_cast<const char*>(bits().Address(b));
      const char* last = static_cast<const char*>(bits().Address(b + bucket_bits_ + 63));
      __builtin_prefetch(first);
      if ((reinterpret_cast<uintptr_t>(first) >> 6) != (reinterpret_cast<uintptr_t>(last) >> 6)) {
        __builtin_prefetch(last);  // the bucket (plus the word a load may touch) spans two lines
      }
    }
  }

  // ---- mutation ---------------------------------------------------------------
  using BucketScan = CellCodec::Scan;
  BucketScan Scan(uint32_t sub, const Location& loc) const {
    return codec_.ScanBucket(bits(), BucketBit(sub, loc.bucket), loc.remainder);
  }

  OpResult Insert(uint64_t hash) {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (opt_.thread_safe) lock.lock();
    Probe p;
    MakeProbe(hash, &p);
    const uint32_t d = geo_.subtables;
    BucketScan scan[internal::kMaxSubtables];
    for (uint32_t i = 0; i < d; ++i) {
      scan[i] = Scan(i, p.loc[i]);
      if (scan[i].match >= 0) {
        // Claim 1: the fingerprint is stored at most once; count it there.
        uint64_t bit = CellBit(i, p.loc[i].bucket, static_cast<uint32_t>(scan[i].match));
        uint32_t count = codec_.Counter(ReadCell(bit));
        if (geo_.counter_bits == 0) {
          // Static filter: a repeated fingerprint is simply already present.
        } else if (count >= geo_.max_counter()) {
          ++saturations_;  // sticky: the counter stays at its maximum
        } else {
          WriteGuard g(this);
          g.Add(i, p.loc[i].bucket);
          g.Begin();
          WriteCell(bit, codec_.Make(p.loc[i].remainder, count + 1));
          g.End();
          max_counter_ = std::max(max_counter_, count + 1);
        }
        ++items_;
        return OpResult::kOk;
      }
    }
    // d-left placement: least loaded candidate, ties to the left.
    uint32_t best = 0;
    for (uint32_t i = 1; i < d; ++i) {
      if (scan[i].load < scan[best].load) best = i;
    }
    if (scan[best].free_cell >= 0) {
      WriteGuard g(this);
      g.Add(best, p.loc[best].bucket);
      g.Begin();
      WriteCell(CellBit(best, p.loc[best].bucket, static_cast<uint32_t>(scan[best].free_cell)),
                codec_.Make(p.loc[best].remainder, 1));
      g.End();
      max_counter_ = std::max(max_counter_, 1u);
      ++fingerprints_;
      ++items_;
      return OpResult::kOk;
    }
    if (Relocate(p)) {
      max_counter_ = std::max(max_counter_, 1u);
      ++fingerprints_;
      ++items_;
      return OpResult::kOk;
    }
    ++overflows_;
    return OpResult::kOverflow;
  }

  OpResult Erase(uint64_t hash) {
    if (geo_.counter_bits == 0) return OpResult::kNotSupported;
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (opt_.thread_safe) lock.lock();
    Probe p;
    MakeProbe(hash, &p);
    for (uint32_t i = 0; i < geo_.subtables; ++i) {
      uint64_t b = BucketBit(i, p.loc[i].bucket);
      int j = internal::FindInBucket(bits(), codec_, b, geo_.cells, cell_bits_,
                                     p.loc[i].remainder);
      if (j < 0) continue;
      uint64_t bit = b + uint64_t(j) * cell_bits_;
      uint32_t count = codec_.Counter(ReadCell(bit));
      if (items_ > 0) --items_;  // a colliding foreign key may be erased too
      if (count >= geo_.max_counter()) {
        ++sticky_erases_;  // saturated: never decremented (no false negative)
        return OpResult::kOk;
      }
      WriteGuard g(this);
      g.Add(i, p.loc[i].bucket);
      g.Begin();
      WriteCell(bit, count == 1 ? 0 : codec_.Make(p.loc[i].remainder, count - 1));
      g.End();
      if (count == 1) --fingerprints_;
      return OpResult::kOk;
    }
    return OpResult::kNotFound;
  }

  struct Node {
    uint32_t sub;
    uint64_t bucket;
    int32_t parent;        // index into nodes, -1 for a start bucket
    uint32_t parent_cell;  // cell of the parent whose fingerprint moves here
  };
  struct Move {
    uint32_t from_sub; uint64_t from_bucket; uint32_t from_cell;
    uint32_t to_sub; uint64_t to_bucket; uint32_t to_cell;
  };
  struct VisitSlot {
    uint64_t id;
    uint32_t gen;
  };

  // Resolves "all d candidate buckets full" by moving stored fingerprints to
  // another of their candidate buckets (paper §3.3, §5.2). The chain of moves
  // is planned first (breadth-first, bounded); nothing is written unless a
  // complete chain ending in a free cell was found. Returns false if none.
  bool Relocate(const Probe& p) {
    if (opt_.relocation == Relocation::kNone || opt_.max_relocation_nodes == 0) return false;
    // Scratch buffers are members (the writer is serialized), so a
    // relocation allocates nothing once they have grown.
    std::vector<Node>& nodes = scratch_nodes_;
    nodes.clear();
    const uint32_t d = geo_.subtables;
    const bool first_only = opt_.relocation == Relocation::kFirstSubtable;
    const size_t limit = first_only ? 1 : std::max<size_t>(d, opt_.max_relocation_nodes);
    // Visited buckets: open addressing over global bucket ids, stamped with
    // a generation so the table is never cleared.
    size_t cap = 16;
    while (cap < 2 * limit) cap <<= 1;
    if (visited_.size() != cap) {
      visited_.assign(cap, VisitSlot{0, 0});
      generation_ = 0;
    }
    if (++generation_ == 0) {  // wrapped: reset stamps
      std::fill(visited_.begin(), visited_.end(), VisitSlot{0, 0});
      generation_ = 1;
    }
    auto visit = [&](uint32_t sub, uint64_t bucket) {  // true if newly visited
      uint64_t id = uint64_t{sub} * geo_.buckets + bucket;
      size_t i = static_cast<size_t>(internal::Mix64(id)) & (cap - 1);
      while (visited_[i].gen == generation_) {
        if (visited_[i].id == id) return false;
        i = (i + 1) & (cap - 1);
      }
      visited_[i] = VisitSlot{id, generation_};
      return true;
    };
    if (first_only) {
      nodes.push_back(Node{0, p.loc[0].bucket, -1, 0});
      visit(0, p.loc[0].bucket);
    } else {
      for (uint32_t i = 0; i < d; ++i) {
        if (visit(i, p.loc[i].bucket)) nodes.push_back(Node{i, p.loc[i].bucket, -1, 0});
      }
    }
    for (size_t q = 0; q < nodes.size(); ++q) {
      const Node node = nodes[q];
      uint64_t b = BucketBit(node.sub, node.bucket);
      for (uint32_t j = 0; j < geo_.cells; ++j) {
        uint64_t cell = ReadCell(b + uint64_t{j} * cell_bits_);
        assert(codec_.Occupied(cell) && "relocation only visits full buckets");
        Fingerprint f = hashing_.Invert(node.sub, Location{node.bucket, codec_.Remainder(cell)});
        for (uint32_t k = 0; k < d; ++k) {
          if (k == node.sub) continue;
          Location dest = hashing_.Permute(k, f);
          BucketScan s = Scan(k, dest);
          assert(s.match < 0 && "Claim 1: a fingerprint is stored at most once");
          if (s.free_cell >= 0) {
            ApplyChain(p, nodes, static_cast<int32_t>(q), j, k, dest,
                       static_cast<uint32_t>(s.free_cell));
            return true;
          }
          if (!first_only && nodes.size() < limit && visit(k, dest.bucket)) {
            nodes.push_back(Node{k, dest.bucket, static_cast<int32_t>(q), j});
          }
        }
      }
    }
    return false;
  }

  // Executes a planned chain: the fingerprint in (nodes[q], cell) moves to
  // the free cell of (k, dest); then each ancestor's moved fingerprint fills
  // the cell just vacated below it; finally the new key's remainder takes the
  // vacated cell of its own candidate bucket (a start node).
  void ApplyChain(const Probe& p, const std::vector<Node>& nodes, int32_t q, uint32_t cell,
                  uint32_t k, Location dest, uint32_t free_cell) {
    std::vector<Move>& moves = scratch_moves_;
    moves.clear();
    moves.push_back(Move{nodes[q].sub, nodes[q].bucket, cell, k, dest.bucket, free_cell});
    int32_t at = q;
    while (nodes[at].parent >= 0) {
      const auto& child = nodes[at];
      const auto& parent = nodes[child.parent];
      moves.push_back(Move{parent.sub, parent.bucket, child.parent_cell,
                           child.sub, child.bucket, moves.back().from_cell});
      at = child.parent;
    }
    const uint32_t start_sub = nodes[at].sub;
    const uint32_t start_cell = moves.back().from_cell;

    WriteGuard g(this);
    // Guards cover every touched bucket; a chain is short (it is bounded by
    // the BFS depth), but we only have room for 2d + 2 stripes, so long
    // chains fall back to bumping all stripes of the moves one by one.
    bool fits = moves.size() + 1 <= 2 * internal::kMaxSubtables + 1;
    longest_chain_ = std::max(longest_chain_, static_cast<uint32_t>(moves.size()));
    if (!fits) ++long_chains_;
    if (fits) {
      for (const Move& m : moves) { g.Add(m.from_sub, m.from_bucket); g.Add(m.to_sub, m.to_bucket); }
      g.Begin();
    }
    for (const Move& m : moves) {
      WriteGuard step(this);
      if (!fits) {
        step.Add(m.from_sub, m.from_bucket);
        step.Add(m.to_sub, m.to_bucket);
        step.Begin();
      }
      uint64_t from_bit = CellBit(m.from_sub, m.from_bucket, m.from_cell);
      uint64_t cellv = ReadCell(from_bit);
      Fingerprint f = hashing_.Invert(m.from_sub, Location{m.from_bucket, codec_.Remainder(cellv)});
      Location to = hashing_.Permute(m.to_sub, f);
      assert(to.bucket == m.to_bucket);
      // Copy first, then clear: the fingerprint is never absent from both.
      WriteCell(CellBit(m.to_sub, m.to_bucket, m.to_cell), codec_.Make(to.remainder, codec_.Counter(cellv)));
      WriteCell(from_bit, 0);
      if (!fits) step.End();
      ++relocations_;
    }
    WriteCell(CellBit(start_sub, p.loc[start_sub].bucket, start_cell),
              codec_.Make(p.loc[start_sub].remainder, 1));
    if (fits) g.End();
  }

  void Clear() {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (opt_.thread_safe) lock.lock();
    // Bump every stripe so concurrent readers re-validate.
    if (stripes_) {
      for (uint32_t s = 0; s < kStripes; ++s) stripes_[s].fetch_add(1, std::memory_order_relaxed);
    }
    // Release stores (no fence): see "Memory ordering" above.
    for (uint64_t i = 0; i < words_n_; ++i) __atomic_store_n(&words_[i], 0, __ATOMIC_RELEASE);
    if (stripes_) {
      for (uint32_t s = 0; s < kStripes; ++s) stripes_[s].fetch_add(1, std::memory_order_release);
    }
    items_ = fingerprints_ = relocations_ = overflows_ = saturations_ = sticky_erases_ = 0;
    long_chains_ = 0;
    longest_chain_ = 0;
    max_counter_ = 0;
  }

  template <class Fn>
  void ForEachCell(Fn&& fn) const {
    for (uint32_t i = 0; i < geo_.subtables; ++i) {
      for (uint64_t b = 0; b < geo_.buckets; ++b) {
        uint64_t base = BucketBit(i, b);
        for (uint32_t j = 0; j < geo_.cells; ++j) {
          fn(i, b, ReadCell(base + uint64_t{j} * cell_bits_));
        }
      }
    }
  }

  double PredictedFpr(uint64_t fingerprints) const {
    double space = static_cast<double>(geo_.buckets) * static_cast<double>(geo_.remainder_values());
    return -std::expm1(static_cast<double>(fingerprints) * std::log1p(-1.0 / space));
  }

  // Little-endian bytes of the bit array (caller holds the lock if needed).
  void AppendBitsLocked(std::string* out) const {
    uint64_t bytes = geo_.total_bytes();
    out->reserve(out->size() + bytes);
    for (uint64_t i = 0; i < bytes; ++i) {
      uint64_t w = __atomic_load_n(&words_[i / 8], __ATOMIC_RELAXED);
      out->push_back(static_cast<char>(w >> (8 * (i % 8))));
    }
  }

  std::unique_lock<std::mutex> MaybeLock() const {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (opt_.thread_safe) lock.lock();
    return lock;
  }

  const DLeftOptions opt_;
  const Geometry geo_;
  const Hashing hashing_;
  const CellCodec codec_;
  const uint32_t cell_bits_;
  const uint64_t bucket_bits_;
  const uint64_t words_n_;
  struct FreeDeleter {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint64_t[], FreeDeleter> words_;
  std::unique_ptr<std::atomic<uint32_t>[]> stripes_;
  mutable std::mutex mu_;

  // Relocation scratch space; used only by the (serialized) writer.
  std::vector<Node> scratch_nodes_;
  std::vector<Move> scratch_moves_;
  std::vector<VisitSlot> visited_;
  uint32_t generation_ = 0;

  // Statistics; written only by the (serialized) writer.
  uint64_t items_ = 0, fingerprints_ = 0, relocations_ = 0, overflows_ = 0;
  uint64_t saturations_ = 0, sticky_erases_ = 0;
  uint64_t long_chains_ = 0;     // chains applied move by move (!fits)
  uint32_t longest_chain_ = 0;   // most moves in one ApplyChain
  uint32_t max_counter_ = 0;
};

}  // namespace dlcbf
