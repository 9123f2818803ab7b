// The live-prefix counts of one index: how many of the index's copies
// belong to keys of each prefix (hashed into slots), so that an iterator
// confined to one prefix (ReadOptions::prefix_same_as_start) can tell a
// prefix that holds no live key without touching the LSM. Internal to
// filter_policy/rocksdb/live_key_db/.
//
// Invariant (the key index's, carried over): count(slot) >= the live keys
// of every prefix hashed to that slot. The counts move with the index's
// copies, each on behalf of one key: an insert of a copy of k adds one to
// slot(prefix(k)) after the kernel took the copy and before k's base write
// (Rep::IndexInsert), an erase lowers it only after the delete that made
// the copy redundant succeeded. So live(k) => count(k) >= 1 in the key
// index gives count(slot(prefix(k))) >= 1 here, with no new argument for
// deferred checks, unchecked copies, rebuilds or the fail-safe.
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
// made before the swap (Rep::PrefixDead compares CfState::serial), reads
// RocksDB.
//
// Keys outside the prefix extractor's domain are not counted (no
// prefix-confined Seek can return them). A caller that cannot name a key's
// prefix (kUnknownPrefix) poisons the counts: every slot then "may hold".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "dlcbf/core/hash_mix.h"

namespace dlcbf {
namespace live_key {

class LivePrefixCounts {
 public:
  // The prefix hash of a key the extractor does not cover: not counted.
  static constexpr uint64_t kNoPrefix = 0;
  // A copy whose key's prefix is unknown to the caller: poisons the counts.
  static constexpr uint64_t kUnknownPrefix = 1;
  // Prefix hashes are never 0 or 1 (PrefixHash maps those away).
  static uint64_t PrefixHash(uint64_t raw) { return raw < 2 ? raw + 2 : raw; }

  // One slot per 8 sized keys (at least 1024): about 1.5 bytes per key.
  explicit LivePrefixCounts(uint64_t sized_for) {
    uint64_t slots = 1024;
    while (slots < sized_for / 8) slots <<= 1;
    mask_ = slots - 1;
    counts_.reset(new std::atomic<uint32_t>[slots]);
    erased_at_.reset(new std::atomic<uint64_t>[slots]);
    for (uint64_t i = 0; i < slots; ++i) {
      counts_[i].store(0, std::memory_order_relaxed);
      erased_at_[i].store(0, std::memory_order_relaxed);
    }
  }

  // A copy counted on behalf of a key of prefix hash ph.
  void Add(uint64_t ph) {
    if (ph == kNoPrefix) return;
    if (ph == kUnknownPrefix) {
      poisoned_.store(true, std::memory_order_seq_cst);
      return;
    }
    counts_[Slot(ph)].fetch_add(1, std::memory_order_seq_cst);
  }
  // A copy erased on behalf of a key of prefix hash ph, the DB's latest
  // sequence number being `latest` (read after the delete returned).
  void Remove(uint64_t ph, uint64_t latest) {
    if (ph == kNoPrefix) return;
    if (ph == kUnknownPrefix) {
      poisoned_.store(true, std::memory_order_seq_cst);
      return;
    }
    const uint64_t s = Slot(ph);
    uint64_t seen = erased_at_[s].load(std::memory_order_seq_cst);
    while (seen < latest && !erased_at_[s].compare_exchange_weak(seen, latest, std::memory_order_seq_cst)) {
    }
    // (Never below 0: an erase is of a copy added on the key's behalf.)
    counts_[s].fetch_sub(1, std::memory_order_seq_cst);
  }
  // False only when no key of prefix hash ph can be live to a reader at
  // sequence number `seq` (see the file comment).
  bool MayHoldLive(uint64_t ph, uint64_t seq) const {
    if (ph == kNoPrefix || ph == kUnknownPrefix || poisoned_.load(std::memory_order_seq_cst)) return true;
    const uint64_t s = Slot(ph);
    if (counts_[s].load(std::memory_order_seq_cst) != 0) return true;
    return erased_at_[s].load(std::memory_order_seq_cst) > seq;
  }
  // An upper bound of the sequence number the counts were built at (a
  // rebuild's scan; 0 for a new family's): a reader at a snapshot below it
  // may see keys deleted before the scan, which these counts never saw.
  uint64_t built_at() const { return built_at_; }
  void set_built_at(uint64_t seq) { built_at_ = seq; }  // before the index is published
  uint64_t slots() const { return mask_ + 1; }
  uint64_t bytes() const { return slots() * (sizeof(uint32_t) + sizeof(uint64_t)); }

 private:
  uint64_t Slot(uint64_t ph) const { return internal::Mix64(ph) & mask_; }

  uint64_t mask_ = 0;
  uint64_t built_at_ = 0;
  std::unique_ptr<std::atomic<uint32_t>[]> counts_;
  std::unique_ptr<std::atomic<uint64_t>[]> erased_at_;
  std::atomic<bool> poisoned_{false};
};

}  // namespace live_key
}  // namespace dlcbf
