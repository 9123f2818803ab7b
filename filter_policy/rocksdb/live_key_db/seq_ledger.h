// LiveKeyDB's sequence-number ledger: which of the DB's sequence numbers
// its own writes consumed, so that a write LiveKeyDB never saw (a
// TransactionDB wrapped on top, GetBaseDB(), GetRootDB(), another
// StackableDB) is detected instead of answered NotFound. Internal to
// filter_policy/rocksdb/live_key_db/.
//
// Design note
//   Every LiveKeyDB write goes to RocksDB as one WriteBatch through
//   DB::Write (single-key calls build the batch DB::Put would build), and
//   RocksDB stamps the batch with the first sequence number it consumed:
//   the batch consumes [first, first + Count()) (one per entry; the default
//   write policy, which a StackableDB over DBImpl has). Begin() counts a
//   write as started before it goes to RocksDB; End() records its range
//   (none when RocksDB did not stamp it) and only then counts it finished.
//   verified is the largest S such that every sequence number in
//   (base, S] belongs to a recorded range; ranges that end above a gap
//   wait in `ranges_` until it closes.
//
//   Invariant: latest <= verified => every write the DB holds was made
//   through LiveKeyDB (each is in a recorded range), so the index may
//   answer. Readers (Trusted) check it with two loads. latest > verified
//   is either an own write RocksDB has published but whose End() has not
//   run yet, or a write LiveKeyDB never saw: the read goes to RocksDB
//   (counted in stats: unverified_reads). Which of the two is decided at a
//   quiescent moment (Quiescent: every started write finished, and none
//   started while the sequence number was read): then a gap is foreign,
//   the ledger turns untrusted (sticky), and every indexed family's reads
//   bypass its index until Rebase and a rebuild of every family after it
//   make the indexes exact again (Rep::RecoverTrust, background.cc).
//   An ingestion's numbers (one global sequence number per ingested family
//   at most) are read back from the files it added (ingest.cc,
//   IngestedSeqnos); an import's, and any an ingestion's files no longer
//   show, are treated like a foreign write.
//
//   Cost: a write adds two atomic increments and one compare-and-swap (a
//   mutex and a map insert only when ranges finish out of order); a read
//   whose index answer is "no" adds one GetLatestSequenceNumber and one
//   load.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "dlcbf/internal/coding.h"
#include "rocksdb/write_batch.h"

namespace dlcbf {
namespace live_key {

class SeqLedger {
 public:
  // At Open, before any LiveKeyDB write: the DB holds nothing unseen up to
  // `latest` (the index is built or loaded for it).
  void Start(uint64_t latest) {
    std::lock_guard<std::mutex> l(mu_);
    ranges_.clear();
    waiting_.store(0);
    verified_.store(latest);
  }

  // The sequence number RocksDB stamped into a batch (0 before a write).
  static uint64_t StampOf(const rocksdb::WriteBatch& b) {
    return b.Data().size() >= 8 ? internal::DecodeFixed64(b.Data().data()) : 0;
  }

  void Begin() { started_.fetch_add(1, std::memory_order_acq_rel); }
  // `before`: StampOf(batch) before the write. After a successful write
  // the stamp is the batch's first sequence number. A failed write records
  // nothing: if it consumed numbers after all, they show as a gap, the
  // safe side (a range recorded for numbers RocksDB then reused would hide
  // another writer's).
  void End(const rocksdb::WriteBatch& b, uint64_t before, bool ok) {
    const uint64_t first = StampOf(b);
    const uint64_t n = b.Count();
    if (ok && first != before && first != 0 && n > 0) Record(first, first + n - 1);
    finished_.fetch_add(1, std::memory_order_acq_rel);
  }
  // A write whose consumption is unknown (End without a batch).
  void EndUnknown() { finished_.fetch_add(1, std::memory_order_acq_rel); }
  // A sequence number an operation begun with Begin() is known to have
  // consumed (an ingestion's global sequence number), before its End.
  void RecordOne(uint64_t seq) {
    if (seq != 0) Record(seq, seq);
  }

  uint64_t verified() const { return verified_.load(std::memory_order_acquire); }

  // True when, at one quiescent moment, the DB's latest sequence number was
  // read as *latest (every write begun before had ended, none began while
  // it was read). `read_latest` reads it.
  template <class ReadLatest>
  bool Quiescent(ReadLatest&& read_latest, uint64_t* latest) const {
    const uint64_t s1 = started_.load(std::memory_order_acquire);
    if (finished_.load(std::memory_order_acquire) != s1) return false;
    *latest = read_latest();
    return started_.load(std::memory_order_acquire) == s1;
  }

  // At a quiescent moment that read `latest`: everything up to it counts
  // as seen (the caller rebuilds every index from scans started after).
  void Rebase(uint64_t latest) { Start(latest); }

 private:
  // In order and nothing parked (the common case): one compare-and-swap.
  // Else the range is parked in ranges_ and merged under mu_. The fast
  // path's CAS then load of waiting_, and the slow path's increment of
  // waiting_ then load of verified_, are sequentially consistent, so one
  // of the two sees the other: a parked range is never left behind a
  // verified_ that has reached it.
  void Record(uint64_t first, uint64_t last) {
    if (waiting_.load() == 0) {
      uint64_t expect = first - 1;
      if (verified_.compare_exchange_strong(expect, last)) {
        if (waiting_.load() != 0) {
          std::lock_guard<std::mutex> l(mu_);
          MergeLocked();
        }
        return;
      }
    }
    std::lock_guard<std::mutex> l(mu_);
    if (last <= verified_.load()) return;  // (a rebase already counted it)
    ranges_.emplace(first, last);
    waiting_.fetch_add(1);
    MergeLocked();
  }
  void MergeLocked() {
    while (!ranges_.empty()) {
      auto it = ranges_.begin();
      uint64_t v = verified_.load();
      if (it->first > v + 1) return;
      const uint64_t to = it->second > v ? it->second : v;
      if (!verified_.compare_exchange_strong(v, to)) continue;  // a fast path moved it: look again
      ranges_.erase(it);
      waiting_.fetch_sub(1);
    }
  }

  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<uint64_t> verified_{0};
  std::atomic<uint64_t> waiting_{0};  // ranges parked in ranges_
  std::mutex mu_;
  std::map<uint64_t, uint64_t> ranges_;  // first -> last, parked above a gap
};

}  // namespace live_key
}  // namespace dlcbf
