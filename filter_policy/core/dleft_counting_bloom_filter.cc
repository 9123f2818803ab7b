// d-left counting Bloom filter: implementation.
//
// Design note (Bonomi, Mitzenmacher et al., ESA 2006)
// ---------------------------------------------------
// Numbers for the paper's §5.1 geometry (d = 4, B = 2048, L = 8, r = 14,
// c = 2; 2^20 bits) holding 49152 keys (load 6 of 8 per bucket):
//   - FPR: exactly 1 - (1 - 1/(B*Rn))^F for F stored fingerprints (Claim 3),
//     Rn = 2^r - 1 remainder values (0 marks an empty cell); F <= 49152
//     gives <= 0.001464, under the paper's 24 * 2^-r = 0.001465 bound (which
//     uses B*2^r). Measured by tools/paper/dlcbf_sim.
//   - Space: (r + c) * L * d * B = 2^20 bits = 21.3 bits/key, against
//     2,654,208 bits for a 4-bit CBF at similar FPR (paper §5.1: ratio 2.53).
//   - Probes: one hash, d bucket reads (d independent cache lines, issued
//     together so the misses overlap); ContainsBatch prefetches every bucket
//     of the batch before probing.
// Trade-offs chosen here:
//   - Permutations: P_i(b, q) = ((b + F_i(q)) mod B, q) with a keyed
//     full-avalanche F_i and P_0 = identity (internal/dleft_layout.h),
//     instead of a*f mod 2^q: B may be any positive count (SST filters are
//     sized exactly), P_i^-1 exists, and a query costs d - 1 mixing rounds.
//   - Full buckets: bounded breadth-first relocation (§3.3; §5.2 used a
//     one-level move from subtable 0, available as Relocation::kFirstSubtable).
//     The search plans the whole chain of moves before changing anything, so
//     a failed insert leaves the table bit-for-bit unchanged.
//   - Cells follow the paper's §4 encoding: remainder field 0 is the empty
//     sentinel (Rn = 2^r - 1) and the counter stores multiplicity - 1, so
//     c = 2 counts 1..4 (the paper's largest counter over 10000 trials was
//     4). The top value saturates and sticks (never decremented): never a
//     false negative, at the cost of a permanent false positive for that
//     fingerprint. The paper bounds the chance that 5 keys share a
//     fingerprint by 5.6e-17 at its §5.1 size.
//
// Concurrency (Options::thread_safe)
// ----------------------------------
// Writers serialize on mu_. Table words are read and written with relaxed
// atomics, and a writer only rewrites words through single-word stores that
// preserve every bit it does not own, so a reader always sees every other
// cell intact. A cell being changed (or a fingerprint being moved between
// two of its candidate buckets) is covered by per-bucket-stripe sequence
// counters: the writer makes the stripes of every bucket it touches odd,
// writes, then makes them even again. Readers take no lock; a positive
// answer is returned at once (a transient false positive is harmless), and
// a negative answer is only returned after checking that the stripes of all
// d candidate buckets were even and unchanged across the probe (a seqlock
// per stripe). So a reader can never report a transient false negative.
//
// Memory ordering of the seqlock, without standalone fences (so that
// ThreadSanitizer, which does not model std::atomic_thread_fence, checks it
// too). Writer: stripe -> odd (relaxed); every table word store is a
// RELEASE store; stripe -> even (release). Reader (thread-safe mode):
// stripe load (acquire); every table word load of the probe is an ACQUIRE
// load; stripe re-load (relaxed), compared. If any probe load read a value
// stored after some writer's "odd" store, that load synchronizes with the
// release store that wrote it, so the odd store happens-before the
// reader's re-load, which (read-read coherence) sees it or a later value:
// the compare fails and the reader retries. If no probe load did, the
// reader saw the words as of the stripe value it first read (whose release
// store published every earlier write). This is the classic
// "release fence after the odd store / acquire fence before the re-load"
// seqlock with each fence folded into the data accesses; on x86-64 both
// compile to the same plain MOVs as before. Single-threaded mode keeps
// relaxed loads.

#include "dlcbf/core/dleft_counting_bloom_filter.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>

#include <sys/mman.h>

#include "dlcbf/internal/batched_lookup.h"
#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/memory.h"

namespace dlcbf {

using internal::CellCodec;
using internal::Fingerprint;
using internal::Geometry;
using internal::Hashing;
using internal::Location;
using internal::WordBits;

const char* ToString(OpResult r) {
  switch (r) {
    case OpResult::kOk: return "OK";
    case OpResult::kNotFound: return "NotFound";
    case OpResult::kOverflow: return "Overflow";
    case OpResult::kNotSupported: return "NotSupported";
  }
  return "Unknown";
}

namespace {

Geometry GeometryOf(const DLeftOptions& o) {
  Geometry g;
  g.subtables = o.subtables;
  g.buckets = o.buckets_per_subtable;
  g.cells = o.cells_per_bucket;
  g.remainder_bits = o.remainder_bits;
  g.counter_bits = o.counter_bits;
  return g;
}

// Serialized format, version 1. All integers little-endian.
//
//  offset  size  field
//  ------  ----  -----------------------------------------------------------
//       0     4  magic "dLCB" (0x42434C64)
//       4     2  format version (1)
//       6     1  d, subtables                 [2, 8]
//       7     1  L, cells per bucket           [1, 64]
//       8     1  r, remainder bits             [1, 32]
//       9     1  c, counter bits               [0, 4]
//      10     1  relocation policy (0 none, 1 first subtable, 2 breadth-first)
//      11     1  reserved, 0
//      12     4  max relocation nodes
//      16     8  B, buckets per subtable
//      24     8  hash seed
//      32  16*d  permutation keys k[i][0], k[i][1] for i = 0 .. d-1
//  32+16d     8  items (inserts minus erases)
//  40+16d     8  fingerprints (occupied cells; checked against the payload)
//  48+16d     8  payload bytes P = ceil(d*B*L*(r+c) / 8)
//  56+16d     P  packed bit array (layout: internal/dleft_layout.h)
//  56+16d+P   8  XXH3-64 (seed 0) of every preceding byte
constexpr uint32_t kMagic = 0x42434C64;  // "dLCB" read as little-endian
constexpr uint16_t kFormatVersion = 1;
constexpr uint32_t kStripes = 1024;  // seqlock stripes (power of two)
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

DLeftOptions& DLeftOptions::SizeFor(uint64_t expected_items, double load) {
  if (!(load > 0.0) || load > 1.0) load = 0.75;
  double cells_needed = static_cast<double>(expected_items) / load;
  double per_subtable = cells_needed / (static_cast<double>(subtables) *
                                        std::max<uint32_t>(1, cells_per_bucket));
  // A huge expected_items or tiny load gives a B far beyond what Validate()
  // accepts (B < 2^40); saturate instead of casting an out-of-range double
  // (undefined behaviour), so Validate() reports it.
  const double b = std::ceil(per_subtable);
  buckets_per_subtable = !(b < 1.8e19) ? UINT64_MAX : std::max<uint64_t>(1, static_cast<uint64_t>(b));
  return *this;
}

rocksdb::Status DLeftOptions::Validate() const {
  if (const char* why = GeometryOf(*this).Invalid()) {
    return rocksdb::Status::InvalidArgument("DLeftOptions", why);
  }
  if (relocation != Relocation::kNone && relocation != Relocation::kFirstSubtable &&
      relocation != Relocation::kBreadthFirst) {
    return rocksdb::Status::InvalidArgument("DLeftOptions", "relocation: unknown policy");
  }
  if (max_relocation_nodes > (1u << 20)) {
    return rocksdb::Status::InvalidArgument("DLeftOptions",
                                            "max_relocation_nodes must be <= 2^20");
  }
  uint64_t bytes = GeometryOf(*this).total_bytes();
  if (bytes > max_bytes) {
    return rocksdb::Status::MemoryLimit(
        "DLeftOptions", "geometry needs " + std::to_string(bytes) +
                            " bytes, over max_bytes = " + std::to_string(max_bytes));
  }
  return rocksdb::Status::OK();
}

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

// ---------------------------------------------------------------------------

DLeftCountingBloomFilter::DLeftCountingBloomFilter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
DLeftCountingBloomFilter::~DLeftCountingBloomFilter() = default;

rocksdb::Status DLeftCountingBloomFilter::Create(const DLeftOptions& options,
                                                 std::unique_ptr<DLeftCountingBloomFilter>* out) {
  if (out == nullptr) return rocksdb::Status::InvalidArgument("DLeftCountingBloomFilter::Create", "out is null");
  rocksdb::Status s = options.Validate();
  if (!s.ok()) return s;
  s = internal::CheckFitsInMemory(GeometryOf(options).total_bytes(), "DLeftOptions: geometry");
  if (!s.ok()) return s;
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl(options, internal::PermutationKeys::FromSeed(options.seed)));
  if (!impl || !impl->Allocate()) {
    return rocksdb::Status::MemoryLimit("DLeftCountingBloomFilter::Create",
                                        "allocation of the bit array failed");
  }
  out->reset(new DLeftCountingBloomFilter(std::move(impl)));
  return rocksdb::Status::OK();
}

uint64_t DLeftCountingBloomFilter::Hash(const rocksdb::Slice& key) const {
  return impl_->hashing_.Hash(key.data(), key.size());
}

OpResult DLeftCountingBloomFilter::InsertHash(uint64_t hash) { return impl_->Insert(hash); }
OpResult DLeftCountingBloomFilter::EraseHash(uint64_t hash) { return impl_->Erase(hash); }

bool DLeftCountingBloomFilter::ContainsHash(uint64_t hash) const {
  Impl::Probe p;
  impl_->MakeProbe(hash, &p);
  return impl_->Lookup(p, false) != 0;
}

uint32_t DLeftCountingBloomFilter::CountHash(uint64_t hash) const {
  Impl::Probe p;
  impl_->MakeProbe(hash, &p);
  return impl_->Lookup(p, true);
}

void DLeftCountingBloomFilter::ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const {
  constexpr size_t kBatch = 16;
  Impl::Probe probes[kBatch];
  for (size_t base = 0; base < n; base += kBatch) {
    size_t m = std::min(kBatch, n - base);
    for (size_t i = 0; i < m; ++i) {
      impl_->MakeProbe(hashes[base + i], &probes[i]);
      impl_->Prefetch(probes[i]);
    }
    for (size_t i = 0; i < m; ++i) out[base + i] = impl_->Lookup(probes[i], false) != 0;
  }
}

void DLeftCountingBloomFilter::ContainsBatch(const rocksdb::Slice* keys, size_t n, bool* out) const {
  internal::HashedBatches<16>(
      keys, n, out, [this](const rocksdb::Slice& k) { return Hash(k); },
      [this](const uint64_t* h, size_t m, bool* o) { ContainsHashBatch(h, m, o); });
}

void DLeftCountingBloomFilter::Clear() { impl_->Clear(); }

DLeftStats DLeftCountingBloomFilter::Stats() const {
  auto lock = impl_->MaybeLock();
  const Impl& m = *impl_;
  const Geometry& g = m.geo_;
  DLeftStats s;
  s.items = m.items_;
  s.fingerprints = m.fingerprints_;
  s.bytes = g.total_bytes();
  s.bits_per_item = s.items ? 8.0 * static_cast<double>(s.bytes) / static_cast<double>(s.items) : 0.0;
  s.max_counter = m.max_counter_;
  s.relocations = m.relocations_;
  s.long_relocation_chains = m.long_chains_;
  s.longest_relocation_chain = m.longest_chain_;
  s.overflows = m.overflows_;
  s.saturations = m.saturations_;
  s.sticky_erases = m.sticky_erases_;
  s.predicted_fpr = m.PredictedFpr(m.fingerprints_);
  // hist[i][load] then a suffix sum gives "load >= k".
  std::vector<std::vector<uint64_t>> hist(g.subtables, std::vector<uint64_t>(g.cells + 2, 0));
  for (uint32_t i = 0; i < g.subtables; ++i) {
    for (uint64_t b = 0; b < g.buckets; ++b) {
      uint64_t base = m.BucketBit(i, b);
      uint32_t load = 0;
      for (uint32_t j = 0; j < g.cells; ++j) {
        load += m.codec_.Occupied(m.ReadCell(base + uint64_t{j} * m.cell_bits_)) ? 1 : 0;
      }
      ++hist[i][load];
    }
  }
  s.load_ge.assign(g.subtables, std::vector<double>(g.cells + 2, 0.0));
  s.load_ge_all.assign(g.cells + 2, 0.0);
  for (uint32_t i = 0; i < g.subtables; ++i) {
    uint64_t acc = 0;
    for (int k = static_cast<int>(g.cells) + 1; k >= 0; --k) {
      acc += hist[i][static_cast<size_t>(k)];
      s.load_ge[i][static_cast<size_t>(k)] = static_cast<double>(acc) / static_cast<double>(g.buckets);
      s.load_ge_all[static_cast<size_t>(k)] += s.load_ge[i][static_cast<size_t>(k)] / g.subtables;
    }
  }
  return s;
}

uint64_t DLeftCountingBloomFilter::HashOfFingerprint(uint64_t packed) const {
  return impl_->hashing_.HashOfPacked(packed);
}

DLeftCountingBloomFilter::TrueFingerprint DLeftCountingBloomFilter::FingerprintOfHash(uint64_t hash) const {
  Fingerprint f = impl_->hashing_.FingerprintOf(hash);
  return TrueFingerprint{f.bucket, f.remainder, impl_->hashing_.Pack(f)};
}

void DLeftCountingBloomFilter::ForEachFingerprint(
    const std::function<void(const TrueFingerprint&, uint32_t)>& fn) const {
  auto lock = impl_->MaybeLock();
  const Impl& m = *impl_;
  m.ForEachCell([&](uint32_t sub, uint64_t bucket, uint64_t cell) {
    if (!m.codec_.Occupied(cell)) return;
    Fingerprint f = m.hashing_.Invert(sub, Location{bucket, m.codec_.Remainder(cell)});
    fn(TrueFingerprint{f.bucket, f.remainder, m.hashing_.Pack(f)}, m.codec_.Counter(cell));
  });
}

void DLeftCountingBloomFilter::AppendPackedBits(std::string* out) const {
  auto lock = impl_->MaybeLock();
  impl_->AppendBitsLocked(out);
}

void DLeftCountingBloomFilter::Serialize(std::string* out) const {
  using namespace internal;
  const size_t start = out->size();
  {
    auto lock = impl_->MaybeLock();
    const Impl& m = *impl_;
    const Geometry& g = m.geo_;
    PutFixed32(out, kMagic);
    PutFixed16(out, kFormatVersion);
    PutFixed8(out, static_cast<uint8_t>(g.subtables));
    PutFixed8(out, static_cast<uint8_t>(g.cells));
    PutFixed8(out, static_cast<uint8_t>(g.remainder_bits));
    PutFixed8(out, static_cast<uint8_t>(g.counter_bits));
    PutFixed8(out, static_cast<uint8_t>(m.opt_.relocation));
    PutFixed8(out, 0);
    PutFixed32(out, m.opt_.max_relocation_nodes);
    PutFixed64(out, g.buckets);
    PutFixed64(out, m.hashing_.seed());
    for (uint32_t i = 0; i < g.subtables; ++i) {
      PutFixed64(out, m.hashing_.keys().k[i][0]);
      PutFixed64(out, m.hashing_.keys().k[i][1]);
    }
    PutFixed64(out, m.items_);
    PutFixed64(out, m.fingerprints_);
    PutFixed64(out, g.total_bytes());
    m.AppendBitsLocked(out);
  }
  PutFixed64(out, internal::HashKey(out->data() + start, out->size() - start, 0));
}

rocksdb::Status DLeftCountingBloomFilter::Deserialize(const rocksdb::Slice& data,
                                                      std::unique_ptr<DLeftCountingBloomFilter>* out,
                                                      bool thread_safe) {
  using rocksdb::Status;
  const char* kWhat = "dlCBF deserialize";
  if (out == nullptr) return Status::InvalidArgument(kWhat, "out is null");
  internal::Decoder dec(data.data(), data.size());
  uint32_t magic = 0;
  uint16_t version = 0;
  uint8_t d = 0, L = 0, r = 0, c = 0, reloc = 0, reserved = 0;
  uint32_t max_nodes = 0;
  uint64_t B = 0, seed = 0;
  if (!dec.Get32(&magic)) return Status::Corruption(kWhat, "truncated header");
  if (magic != kMagic) return Status::Corruption(kWhat, "bad magic (not a dlCBF)");
  if (!dec.Get16(&version)) return Status::Corruption(kWhat, "truncated header");
  if (version != kFormatVersion) {
    return Status::NotSupported(kWhat, "unknown format version " + std::to_string(version));
  }
  if (!dec.Get8(&d) || !dec.Get8(&L) || !dec.Get8(&r) || !dec.Get8(&c) || !dec.Get8(&reloc) ||
      !dec.Get8(&reserved) || !dec.Get32(&max_nodes) || !dec.Get64(&B) || !dec.Get64(&seed)) {
    return Status::Corruption(kWhat, "truncated header");
  }
  DLeftOptions o;
  o.subtables = d;
  o.cells_per_bucket = L;
  o.remainder_bits = r;
  o.counter_bits = c;
  o.buckets_per_subtable = B;
  o.seed = seed;
  o.relocation = static_cast<Relocation>(reloc);
  o.max_relocation_nodes = max_nodes;
  o.thread_safe = thread_safe;
  if (reserved != 0) return Status::Corruption(kWhat, "reserved byte is not zero");
  if (const char* why = GeometryOf(o).Invalid()) return Status::Corruption(kWhat, why);
  if (reloc > static_cast<uint8_t>(Relocation::kBreadthFirst)) {
    return Status::Corruption(kWhat, "unknown relocation policy");
  }
  // Every bound Create() enforces (e.g. max_relocation_nodes <= 2^20, which
  // sizes the relocation search) holds for deserialized filters too. The
  // payload size is checked against the input below, so max_bytes is not
  // what limits a well-formed filter here.
  {
    DLeftOptions check = o;
    check.max_bytes = std::max<uint64_t>(check.max_bytes, GeometryOf(o).total_bytes());
    rocksdb::Status v = check.Validate();
    if (!v.ok()) return Status::Corruption(kWhat, v.ToString());
  }
  internal::PermutationKeys keys;
  for (uint32_t i = 0; i < d; ++i) {
    if (!dec.Get64(&keys.k[i][0]) || !dec.Get64(&keys.k[i][1])) {
      return Status::Corruption(kWhat, "truncated permutation keys");
    }
  }
  uint64_t items = 0, fps = 0, payload = 0;
  if (!dec.Get64(&items) || !dec.Get64(&fps) || !dec.Get64(&payload)) {
    return Status::Corruption(kWhat, "truncated header");
  }
  const Geometry g = GeometryOf(o);
  if (payload != g.total_bytes()) return Status::Corruption(kWhat, "payload size does not match geometry");
  if (dec.remaining() != payload + 8) return Status::Corruption(kWhat, "size does not match header (truncated or trailing bytes)");
  const size_t body = data.size() - 8;
  if (internal::HashKey(data.data(), body, 0) != internal::DecodeFixed64(data.data() + body)) {
    return Status::Corruption(kWhat, "checksum mismatch");
  }
  o.max_bytes = std::max<uint64_t>(o.max_bytes, payload);
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl(o, keys));
  if (!impl || !impl->Allocate()) return Status::MemoryLimit(kWhat, "allocation failed");
  const char* p = dec.data();
  for (uint64_t i = 0; i < payload; ++i) {
    impl->words_[i / 8] |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * (i % 8));
  }
  // Semantic checks: the trailing pad bits are zero, every empty cell is
  // all-zero, every remainder is in range, and the fingerprint count matches.
  uint64_t used_bits = g.total_bits();
  if (used_bits % 64 != 0 && (impl->words_[used_bits / 64] >> (used_bits % 64)) != 0) {
    return Status::Corruption(kWhat, "nonzero padding bits");
  }
  uint64_t occupied = 0;
  uint32_t max_count = 0;
  bool bad_cell = false;
  impl->ForEachCell([&](uint32_t, uint64_t, uint64_t cell) {
    if (!impl->codec_.Occupied(cell)) {
      if (cell != 0) bad_cell = true;  // counter bits set in an empty cell
      return;
    }
    ++occupied;
    max_count = std::max(max_count, impl->codec_.Counter(cell));
  });
  if (bad_cell) return Status::Corruption(kWhat, "malformed cell (empty cell with counter bits set)");
  if (occupied != fps) return Status::Corruption(kWhat, "fingerprint count does not match payload");
  impl->items_ = items;
  impl->fingerprints_ = fps;
  impl->max_counter_ = max_count;
  out->reset(new DLeftCountingBloomFilter(std::move(impl)));
  return Status::OK();
}

const DLeftOptions& DLeftCountingBloomFilter::options() const { return impl_->opt_; }
uint64_t DLeftCountingBloomFilter::bytes() const { return impl_->geo_.total_bytes(); }
uint64_t DLeftCountingBloomFilter::capacity_cells() const { return impl_->geo_.total_cells(); }
uint32_t DLeftCountingBloomFilter::max_counter() const { return impl_->geo_.max_counter(); }
double DLeftCountingBloomFilter::PredictedFpr() const {
  auto lock = impl_->MaybeLock();
  return impl_->PredictedFpr(impl_->fingerprints_);
}
std::vector<uint64_t> DLeftCountingBloomFilter::permutation_keys() const {
  std::vector<uint64_t> k;
  for (uint32_t i = 0; i < impl_->geo_.subtables; ++i) {
    k.push_back(impl_->hashing_.keys().k[i][0]);
    k.push_back(impl_->hashing_.keys().k[i][1]);
  }
  return k;
}

}  // namespace dlcbf
