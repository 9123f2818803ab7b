// The live-region counts of one index: how many of the index's copies
// belong to keys of each region (hashed into slots), so that an iterator
// can tell a region that holds no live key without touching the LSM.
// Internal to filter_policy/rocksdb/live_key_db/.
//
// Regions. A key k belongs to one region per kind the family counts:
//   - its prefix (LiveKeyIndexOptions::live_prefix_counts, the family's
//     prefix_extractor): a Seek with prefix_same_as_start into a dead
//     prefix leaves the iterator invalid at once;
//   - for each length L of LiveKeyIndexOptions::live_range_lengths, its
//     first L bytes, zero-padded to L: q_L(k) = (k + "\0"^L)[0, L). The
//     keys of region q are exactly the range [strip0(q), succ(q)), where
//     strip0 drops q's trailing zero bytes and succ(q) is the least string
//     greater than every string that starts with q (drop trailing 0xff
//     bytes, add one to the last): a key that starts with q maps to q; a
//     key shorter than L maps to q iff it is q without some of its
//     trailing zeros, i.e. lies in [strip0(q), q); and no other key lies in
//     between. So the regions of one length partition the key space into
//     contiguous ranges, and a Seek(t) whose region q_L(t) is dead may move
//     to succ(q_L(t)) (live_iterator.cc), every key in [t, succ) being dead.
//
// Invariant (the key index's, carried over): count(slot) >= the live keys of
// every region hashed to that slot. The counts move with the index's
// copies, each on behalf of one key: an insert of a copy of k adds one to
// the slot of each of k's regions after the kernel took the copy and before
// k's base write (Rep::IndexInsert), an erase lowers them only after the
// delete that made the copy redundant succeeded. So live(k) => count(k) >= 1
// in the key index gives count(slot(region)) >= 1 here, with no new
// argument for deferred checks, unchecked copies, rebuilds or the
// fail-safe. Slots shared by several regions only make counts larger.
//
// Snapshots. The counts say what is live now; an iterator reads at its
// sequence number S. A key it sees may have been deleted since (its copy
// erased, the count 0). So each slot also keeps erased_at: the DB's latest
// sequence number at the last erase (set BEFORE the count is lowered).
// Dead for a reader at S iff count == 0 and erased_at <= S: a key visible
// at S that lost its last copy was deleted by a write W > S, which had
// returned before the erase, so erased_at >= W > S.
//
// Index swaps. A rebuild's counts know nothing of deletes before its scan:
// a reader whose snapshot is older than built_at(), or whose iterator was
// made before the swap (Rep::PlanSeek compares CfState::serial), reads
// RocksDB.
//
// Keys outside the prefix extractor's domain have no prefix region (no
// prefix-confined Seek can return them). A caller that cannot name a key's
// regions (kUnknownRegion) poisons the counts: every slot then "may hold".
//
// Cost: one slot per 8 sized keys (at least 1024, a power of two), 16
// bytes each (2 to 4 bytes per sized key), and per copy inserted or erased
// one atomic add per region (1 + the number of range lengths). Counts are
// 64-bit: a slot never wraps to 0.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "dlcbf/core/hash_mix.h"
#include "rocksdb/slice.h"

namespace dlcbf {
namespace live_key {

// At most this many live_range_lengths (LiveKeyIndexOptions::Validate).
constexpr int kMaxRangeLengths = 4;
// The longest range length (a region's bytes are hashed from a stack buffer).
constexpr uint32_t kMaxRangeLength = 64;

// The regions of one key (Rep::RegionsOf): their hashes, as the counts take
// them. n == 0: the family counts none.
struct KeyRegions {
  uint64_t h[1 + kMaxRangeLengths];
  uint8_t n = 0;
};

class LiveRegionCounts {
 public:
  // The hash of a region the family does not count (a key outside the
  // prefix extractor's domain): not counted.
  static constexpr uint64_t kNoRegion = 0;
  // A copy whose key's regions are unknown to the caller: poisons the counts.
  static constexpr uint64_t kUnknownRegion = 1;
  // Region hashes are never 0 or 1 (RegionHash maps those away).
  static uint64_t RegionHash(uint64_t raw) { return raw < 2 ? raw + 2 : raw; }

  explicit LiveRegionCounts(uint64_t sized_for) {
    uint64_t slots = 1024;
    while (slots < sized_for / 8) slots <<= 1;
    mask_ = slots - 1;
    counts_.reset(new std::atomic<uint64_t>[slots]);
    erased_at_.reset(new std::atomic<uint64_t>[slots]);
    for (uint64_t i = 0; i < slots; ++i) {
      counts_[i].store(0, std::memory_order_relaxed);
      erased_at_[i].store(0, std::memory_order_relaxed);
    }
  }

  // A copy counted on behalf of a key of regions r.
  void Add(const KeyRegions& r) {
    for (int i = 0; i < r.n; ++i) Add(r.h[i]);
  }
  // A copy erased on behalf of a key of regions r, the DB's latest sequence
  // number being `latest` (read after the delete returned).
  void Remove(const KeyRegions& r, uint64_t latest) {
    for (int i = 0; i < r.n; ++i) Remove(r.h[i], latest);
  }
  // False only when no key of region hash rh can be live to a reader at
  // sequence number `seq` (see the file comment).
  bool MayHoldLive(uint64_t rh, uint64_t seq) const {
    bool erased = false;
    return !Dead(rh, seq, &erased);
  }
  // MayHoldLive's negation, and whether the region was ever erased from
  // (*erased: it may hold tombstones; a region never erased from while
  // these counts existed holds none of theirs).
  bool Dead(uint64_t rh, uint64_t seq, bool* erased) const {
    if (rh == kNoRegion || rh == kUnknownRegion || poisoned_.load(std::memory_order_seq_cst)) return false;
    const uint64_t s = Slot(rh);
    if (counts_[s].load(std::memory_order_seq_cst) != 0) return false;
    const uint64_t at = erased_at_[s].load(std::memory_order_seq_cst);
    *erased = at != 0;
    return at <= seq;
  }
  // An upper bound of the sequence number the counts were built at (a
  // rebuild's scan; 0 for a new family's): a reader at a snapshot below it
  // may see keys deleted before the scan, which these counts never saw.
  uint64_t built_at() const { return built_at_; }
  void set_built_at(uint64_t seq) { built_at_ = seq; }  // before the index is published
  uint64_t slots() const { return mask_ + 1; }
  uint64_t bytes() const { return slots() * (sizeof(uint64_t) + sizeof(uint64_t)); }

 private:
  void Add(uint64_t rh) {
    if (rh == kNoRegion) return;
    if (rh == kUnknownRegion) {
      poisoned_.store(true, std::memory_order_seq_cst);
      return;
    }
    counts_[Slot(rh)].fetch_add(1, std::memory_order_seq_cst);
  }
  void Remove(uint64_t rh, uint64_t latest) {
    if (rh == kNoRegion) return;
    if (rh == kUnknownRegion) {
      poisoned_.store(true, std::memory_order_seq_cst);
      return;
    }
    const uint64_t s = Slot(rh);
    uint64_t seen = erased_at_[s].load(std::memory_order_seq_cst);
    while (seen < latest && !erased_at_[s].compare_exchange_weak(seen, latest, std::memory_order_seq_cst)) {
    }
    // (Never below 0: an erase is of a copy added on the key's behalf.)
    counts_[s].fetch_sub(1, std::memory_order_seq_cst);
  }
  uint64_t Slot(uint64_t rh) const { return internal::Mix64(rh) & mask_; }

  uint64_t mask_ = 0;
  uint64_t built_at_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::unique_ptr<std::atomic<uint64_t>[]> erased_at_;
  std::atomic<bool> poisoned_{false};
};

// The range region's bytes of key at length L: q_L(key) (see the file
// comment), written to buf[0, L).
inline void RangeRegionBytes(const rocksdb::Slice& key, uint32_t L, char* buf) {
  const size_t n = key.size() < L ? key.size() : L;
  for (size_t i = 0; i < n; ++i) buf[i] = key.data()[i];
  for (size_t i = n; i < L; ++i) buf[i] = 0;
}

// succ(q): the least string greater than every string that starts with q.
// False when there is none (q is all 0xff bytes: no string is past them).
inline bool RegionSuccessor(std::string* q) {
  while (!q->empty() && static_cast<unsigned char>(q->back()) == 0xff) q->pop_back();
  if (q->empty()) return false;
  q->back() = static_cast<char>(static_cast<unsigned char>(q->back()) + 1);
  return true;
}

}  // namespace live_key
}  // namespace dlcbf
