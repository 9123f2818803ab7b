// LiveKeyDB's sequence-number ledger: how many of the DB's sequence
// numbers its own writes consumed, so that a write LiveKeyDB never saw (a
// TransactionDB wrapped on top, GetBaseDB(), GetRootDB(), another
// StackableDB) is detected instead of answered NotFound. Internal to
// filter_policy/rocksdb/live_key_db/.
//
// Design note
//   Every LiveKeyDB write -- a WriteBatch through DB::Write (single-key
//   calls build the batch DB::Put would build), a transaction's commit
//   (transactions.cc), an ingestion -- knows how many sequence numbers it
//   consumes: one per entry of what it writes (WriteBatch::Count(); the
//   write-committed policy, which a StackableDB over DBImpl and LiveKeyDB's
//   transaction routes have), one per global sequence number an ingestion
//   assigned (read back from its files, ingest.cc). Begin() counts a write
//   as started before it goes to RocksDB; End(n) adds its n only after
//   RocksDB returned success (its numbers are then published: the DB's
//   latest sequence number is at or past each of them), then counts it
//   finished. A failed write adds nothing: numbers it consumed after all
//   show as unseen, the safe side. `verified_` = base + the numbers added
//   since the base, where base is a sequence number up to which the DB held
//   nothing unseen (Start, Rebase).
//
//   Invariant: reading V = verified() and THEN the DB's latest sequence
//   number L, L <= V => every write the DB holds up to L was made through
//   LiveKeyDB. Proof: the writes added into V consumed V - base distinct
//   numbers, all > base (they began after the base was fixed) and all <= L
//   (published before their End, which came before V was read). So
//   (base, L] holds at least V - base of LiveKeyDB's numbers; with
//   L - base <= V - base it holds nothing else. The order matters: a V read
//   after L may count a write published after L and hide an unseen one
//   below it. Never overcount: an End(n) with more numbers than the write
//   consumed would hide another writer's.
//   L > V is either an own write RocksDB has published whose End has not
//   run yet, or a write LiveKeyDB never saw: the read goes to RocksDB
//   (counted in stats: unverified_reads). Which of the two is decided at a
//   quiescent moment (Quiescent: every started write finished, none began
//   while V and L were read): then a gap is foreign, and every indexed
//   family's reads bypass its index until Rebase and a rebuild of every
//   family after it make the indexes exact again (Rep::RecoverTrust,
//   background.cc). An import's numbers (RocksDB does not report them) are
//   treated like a foreign write.
//
//   Cost: a write adds three atomic read-modify-writes; a read whose index
//   answer is "no" adds one load and one GetLatestSequenceNumber.
#pragma once

#include <atomic>
#include <cstdint>

namespace dlcbf {
namespace live_key {

class SeqLedger {
 public:
  // At Open, before any LiveKeyDB write: the DB holds nothing unseen up to
  // `latest` (the index is built or loaded for it).
  void Start(uint64_t latest) { verified_.store(latest, std::memory_order_release); }

  void Begin() { started_.fetch_add(1, std::memory_order_acq_rel); }
  // After the write returned: `consumed` sequence numbers if it succeeded
  // (never more than it consumed), 0 if it failed or its count is unknown.
  void End(uint64_t consumed) {
    if (consumed != 0) verified_.fetch_add(consumed, std::memory_order_acq_rel);
    finished_.fetch_add(1, std::memory_order_acq_rel);
  }

  // Read BEFORE the DB's latest sequence number (the invariant above).
  uint64_t verified() const { return verified_.load(std::memory_order_acquire); }

  // True when, at one quiescent moment, verified() was *verified and the
  // DB's latest sequence number *latest (every write begun before had
  // ended, none began while they were read). `read_latest` reads it.
  template <class ReadLatest>
  bool Quiescent(ReadLatest&& read_latest, uint64_t* latest, uint64_t* verified) const {
    const uint64_t s1 = started_.load(std::memory_order_acquire);
    if (finished_.load(std::memory_order_acquire) != s1) return false;
    *verified = verified_.load(std::memory_order_acquire);
    *latest = read_latest();
    return started_.load(std::memory_order_acquire) == s1;
  }

  // At a quiescent moment that read `latest`: everything up to it counts
  // as seen (the caller rebuilds every index from scans started after). A
  // write that ends between that moment and this call is forgotten: a gap
  // later, the safe side.
  void Rebase(uint64_t latest) { Start(latest); }

 private:
  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<uint64_t> verified_{0};
};

}  // namespace live_key
}  // namespace dlcbf
