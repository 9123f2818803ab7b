// LiveKeyDB's single-key write path, top-down: Put, Merge and PutEntity
// (Upsert) and Delete and SingleDelete (Remove), then each step they take,
// in the order they take it. Member definitions of LiveKeyDB::Rep (rep.h
// declares them and includes this file at its end). Batches take the same
// steps per key (write_batch.cc). Internal to filter_policy/rocksdb/live_key_db/.
//
// A Put of key k in family cf, as it runs:
//   LiveKeyDB::Put (live_key_db.cc)           counts a disableWAL write (NoteWrite)
//   Upsert                          (here)    hashes k, prefetches, takes k's stripe
//     ProbeLocked                   (here)    cf's index; "may k be live?" (the kernel:
//                                             live_key_index.h, filter_policy/core/)
//     stripes.State                 (stripes.h) a pending check's known state of k
//     CheckSnapshot                 (checker.cc) a shared snapshot for a deferred check
//     TakeUncheckedCopy             (here)    only when every core is writing
//     ReadLiveness                  (here)    only when neither is possible
//     IndexInsert                   (here)    +1 copy and k's region counts, BEFORE the write
//     write(): WriteOne (live_key_db.cc) builds the batch, LedgerWrite (here) writes it,
//                                             counted by the ledger (seq_ledger.h)
//     QueueCheck                    (checker.cc) the deferred check: erase the extra copy
//   ~StripeGuard                    (here)    releases the stripe
//
// The invariant every step keeps is the design note's (README.md, "The
// invariant and the mechanisms"): live(k) => count(k) >= 1 at every moment a reader can
// observe. Hence the insert before the base write, the erase only after
// the delete returned, and a failed write undone only when a read proves
// the key not live.
#pragma once

#include "filter_policy/rocksdb/live_key_db/rep.h"

namespace dlcbf {

// ---- every write: its scopes -------------------------------------------------
// Counts a disableWAL write from before it writes until it returned
// (Rep::nowal_writes, nowal_done: what MakeDurable must flush).
class [[nodiscard]] LiveKeyDB::Rep::NoWalScope {
 public:
  NoWalScope(Rep* r, bool counted) : r_(counted ? r : nullptr) {
    if (r_ == nullptr) return;
    r_->nowal_writes.fetch_add(1, std::memory_order_acq_rel);
#ifdef DLCBF_TESTING
    internal::RunLiveKeyNoWalWriteHookForTesting();
#endif
  }
  ~NoWalScope() {
    if (r_ != nullptr) r_->nowal_done.fetch_add(1, std::memory_order_acq_rel);
  }
  NoWalScope(NoWalScope&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  NoWalScope(const NoWalScope&) = delete;
  NoWalScope& operator=(const NoWalScope&) = delete;
  NoWalScope& operator=(NoWalScope&&) = delete;

 private:
  Rep* r_;
};
inline LiveKeyDB::Rep::NoWalScope LiveKeyDB::Rep::NoteWrite(const WriteOptions& wo) {
  return NoWalScope(this, wo.disableWAL);
}
// A LiveKeyDB write in progress (Rep::writers_in_flight: how busy the
// writers are, CheckSnapshot).
class LiveKeyDB::Rep::WriterScope {
 public:
  explicit WriterScope(Rep* r) : r_(r) { r_->writers_in_flight.fetch_add(1, std::memory_order_relaxed); }
  ~WriterScope() { r_->writers_in_flight.fetch_sub(1, std::memory_order_relaxed); }
  WriterScope(const WriterScope&) = delete;
  WriterScope& operator=(const WriterScope&) = delete;

 private:
  Rep* r_;
};
// The key's stripe (stripes.h), held for a scope; its release records the
// DB's sequence number (stripes.h, released_at).
class LiveKeyDB::Rep::StripeGuard {
 public:
  StripeGuard(Rep* r, uint32_t i) : r_(r), i_(i) { r_->stripes.Lock(i_); }
  ~StripeGuard() { r_->stripes.Unlock(i_, r_->base->GetLatestSequenceNumber()); }
  StripeGuard(const StripeGuard&) = delete;
  StripeGuard& operator=(const StripeGuard&) = delete;

 private:
  Rep* r_;
  uint32_t i_;
};

// ---- Put / Merge / PutEntity -------------------------------------------------
// (Probed: what the probe under the stripe found.)
// With the key's stripe held: the family (nullptr when it is unindexed or
// dropped: pass through), its index and the probe, in one read section.
// The CfState outlives the section (freed at Close); the index stays in
// place while the stripe is held (swaps take every stripe).
struct LiveKeyDB::Rep::Probed {
  CfState* cf = nullptr;
  LiveKeyIndex* idx = nullptr;
  bool contains = false;
};

// Put / Merge / PutEntity of one key.
template <class WriteCall>
rocksdb::Status LiveKeyDB::Rep::Upsert(ColumnFamilyHandle* h, const Slice& key, WriteCall&& write) {
  WriterScope in_flight(this);
  const uint32_t id = h->GetID();
  const uint64_t hash = Hash(key);
  const uint32_t si = stripes.Of(id, hash);
  stripes.Prefetch(si);
  PrefetchIndex(id, hash);
  StripeGuard l(this, si);
  const Probed p = ProbeLocked(id, hash, /*probe=*/true);
  if (p.cf == nullptr) return write();
  epochs.Bump(kWriteKeys);
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kIndexInsertAfterWrite) {
    return UpsertWithFault(p, hash, RegionsOf(p.cf, key), !p.contains || ReadLiveness(h, key) != Liveness::kLive, write);
  }
#endif
  // A key whose check is pending: its state is known (KnownKey). Live:
  // its copy is counted, nothing to do (a hot key adds no copies).
  // (A record claiming a copy the index does not hold is void: the
  // write then takes the ordinary path below, which inserts.)
  Known known_state = stripes.State(si, id, hash, key);
  bool void_claim = known_state == Known::kLive && !p.contains;
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kKeepKnownStateAcrossRebuild) void_claim = false;
#endif
  if (void_claim) {
    stripes.Set(si, id, hash, key, Known::kUnknown);
    known_state = Known::kUnknown;
  }
  if (known_state == Known::kLive) {
    epochs.Bump(kKnownWrites);
    return write();
  }
  // Not in the index, or known dead: certainly not live, so insert. In
  // it: either count up blindly now and check later (the common case),
  // or, when checks cannot be queued, read liveness first and insert
  // only if not live.
  // Every core writing: an unchecked copy while the budget lasts
  // (TakeUncheckedCopy), else a read.
  const bool certain = !p.contains || known_state == Known::kDead;
  if (known_state == Known::kDead) epochs.Bump(kKnownWrites);
  bool busy = false;
  SharedSnapshot* snap = certain ? nullptr : CheckSnapshot(si, &busy);
  const bool unchecked = busy && TakeUncheckedCopy(p.cf, p.idx, hash);
  if (busy && !unchecked) epochs.Bump(kBusySyncReads);
  const bool insert = certain || snap != nullptr || unchecked || ReadLiveness(h, key) != Liveness::kLive;
  if (insert) {
    rocksdb::Status s = IndexInsert(p.cf, p.idx, hash, RegionsOf(p.cf, key));
    if (!s.ok()) {  // nothing written
      if (snap != nullptr) ReleaseSnapshotRef(snap);
      return s;
    }
  }
  rocksdb::Status s = write();
  if (s.ok()) {
    if (snap != nullptr) QueueCheck(p.cf, hash, snap, key, si, Known::kLive);
    if (known_state == Known::kDead) stripes.Set(si, id, hash, key, Known::kLive);
    if (unchecked) stripes.NoteUnchecked(si, id, hash, key);
    return s;
  }
  // A failed write may still have taken effect. Not live now: a failed
  // Put cannot have made the key not live, so it was not live before
  // either and the copy is its own: undo it. Live (or unknown) now with a
  // blind copy: the check decides as for a successful write (one copy
  // too many iff the key was live before).
  const Liveness now = insert ? ReadLiveness(h, key) : Liveness::kUnknown;
  if (insert && now == Liveness::kNotLive) {
    IndexErase(p.cf, p.idx, hash, RegionsOf(p.cf, key));
    epochs.Bump(kUndone);
    if (snap != nullptr) ReleaseSnapshotRef(snap);
  } else if (snap != nullptr) {
    QueueCheck(p.cf, hash, snap, key, si, Known::kUnknown);
  }
  return s;
}

// ---- the deliberately wrong order (negative control) -------------------------
#ifdef DLCBF_TESTING
// The deliberately wrong order (testing/live_key_db_testing.h): base
// write, pause, index insert. Only the oracle's negative control runs
// it; test builds only.
template <class WriteCall>
rocksdb::Status LiveKeyDB::Rep::UpsertWithFault(const Probed& p, uint64_t hash, const KeyRegions& kr, bool insert, WriteCall&& write) {
  rocksdb::Status s = write();
  if (s.ok() && insert) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    s = IndexInsert(p.cf, p.idx, hash, kr);
  }
  return s;
}
#endif  // DLCBF_TESTING

// ---- Delete / SingleDelete ---------------------------------------------------
// Delete / SingleDelete of one key.
template <class WriteCall>
rocksdb::Status LiveKeyDB::Rep::Remove(ColumnFamilyHandle* h, const Slice& key, bool may_erase, WriteCall&& write) {
  WriterScope in_flight(this);
  const uint32_t id = h->GetID();
  const uint64_t hash = Hash(key);
  const uint32_t si = stripes.Of(id, hash);
  stripes.Prefetch(si);
  if (may_erase) PrefetchIndex(id, hash);
  StripeGuard l(this, si);
  const Probed p = ProbeLocked(id, hash, /*probe=*/may_erase);
  if (p.cf == nullptr) return write();
  epochs.Bump(kWriteKeys);
  // An untrusted SingleDelete (may_erase false) keeps the key's copy but
  // changes what it is: what a pending check's record knows of the key
  // is no longer what the DB holds. When in doubt, forget.
  if (!may_erase) stripes.Set(si, id, hash, key, Known::kUnknown);
  if (!p.contains) return write();  // certainly not live: nothing to erase
  // Known (a check of the key is pending): dead, nothing to erase; live,
  // erase its copy once the delete succeeded. A failed delete keeps it
  // (a stale entry if the delete took effect after all).
  const Known known_state = stripes.State(si, id, hash, key);
  if (known_state != Known::kUnknown) {
    epochs.Bump(kKnownWrites);
    rocksdb::Status s = write();
    if (s.ok() && known_state == Known::kLive) {
      IndexErase(p.cf, p.idx, hash, RegionsOf(p.cf, key));
      stripes.Set(si, id, hash, key, Known::kDead);
    }
    return s;
  }
  // Check later (the common case), or read liveness first when checks
  // cannot be queued; either way erase only after the write succeeded.
  SharedSnapshot* snap = CheckSnapshot(si);  // busy: counted there, and read
  const bool was_live = snap == nullptr && ReadLiveness(h, key) == Liveness::kLive;
  rocksdb::Status s = write();
  if (snap != nullptr) {
    if (s.ok()) {
      QueueCheck(p.cf, hash, snap, key, si, Known::kDead);
    } else {
      ReleaseSnapshotRef(snap);
    }
  }
  if (s.ok() && was_live) IndexErase(p.cf, p.idx, hash, RegionsOf(p.cf, key));
  return s;
}

// ---- before the stripe: prefetch ---------------------------------------------
// Before taking the stripe: starts loading the lines the probe and the
// insert under it will read. A write to the base DB evicts them from the
// core's caches, so each would otherwise be a miss paid in series (every
// lock acquisition waits for the loads before it). A hint only: what
// the writer uses is looked up again under the stripe.
inline void LiveKeyDB::Rep::PrefetchIndex(uint32_t id, uint64_t hash) {
  epochs.Prefetch(kIndexInserts);
  ReadSection rs(&epochs);
  const CfTable* t = table.load();
  const CfState* cf = t ? t->Find(id) : nullptr;
  const LiveKeyIndex* idx = cf != nullptr ? cf->active.load() : nullptr;
  if (idx != nullptr) idx->Prefetch(hash);
}

// ---- under the stripe: the probe ---------------------------------------------
// The family, its index and the probe, under the key's stripe (Probed).
inline LiveKeyDB::Rep::Probed LiveKeyDB::Rep::ProbeLocked(uint32_t id, uint64_t hash, bool probe) {
  Probed p;
  ReadSection rs(&epochs);
  const CfTable* t = table.load();
  CfState* cf = t ? t->Find(id) : nullptr;
  if (cf == nullptr || !cf->indexed || cf->dropped) return p;
  p.cf = cf;
  p.idx = cf->active.load();
  p.contains = probe && (!cf->serving.load(std::memory_order_relaxed) || p.idx->Contains(hash));
  return p;
}

// A writer's probe. The stripe keeps the index object in place, but a
// migration inside it (another stripe's insert) may free its dlCBF after
// an epoch grace period: probe inside a read section like every reader.
// While the family's index is being built at Open (not serving), every
// key counts as possibly held: a write then takes the check (or read)
// path, never a blind certain insert, so the built index is exact.
inline bool LiveKeyDB::Rep::WriterContains(const CfState* cf, const LiveKeyIndex* idx, uint64_t h) {
  if (!cf->serving.load(std::memory_order_relaxed)) return true;
  ReadSection rs(&epochs);
  return idx->Contains(h);
}

// ---- busy overwrites: unchecked copies ---------------------------------------
// A busy overwrite's unchecked copy (LiveKeyIndexOptions::
// unchecked_copy_budget), under the key's stripe: true if the index
// `idx` of `cf` takes one. Exactness: the copy only over-counts
// (live(k) => count(k) >= 1 holds whatever k was), and the rebuild that
// replaces `idx` counts k exactly. Not while a rebuild runs (its delta
// log would carry the copy into the new index, whose budget starts at 0)
// nor while the index is being built at Open (it is not serving). The
// write that takes the last one schedules that rebuild. A budget under
// kMinUncheckedCopies copies takes none: a rebuild per few writes would
// cost more than the reads it saves. Only while k's fingerprint has
// fewer than kMaxFingerprintCopies copies in the dense kernel
// (LiveKeyIndex::KernelCopies): however hot its key, a fingerprint takes
// at most kMaxFingerprintCopies - 1 unchecked copies, so its two
// candidate blocks (96 slots) never overflow from them; further writes
// read (or find k's record).
inline uint64_t LiveKeyDB::Rep::UncheckedLimit(const LiveKeyIndex* idx) const {
  return static_cast<uint64_t>(opt.unchecked_copy_budget * static_cast<double>(idx->sized_for()));
}
// The index took every unchecked copy it may: a rebuild is due (a failed
// one is not retried for it; busy writes then read).
inline bool LiveKeyDB::Rep::UncheckedBudgetSpent(const LiveKeyIndex* idx) const {
  const uint64_t limit = UncheckedLimit(idx);
  return opt.unchecked_copy_budget > 0 && opt.auto_rebuild_drift > 0 && limit >= kMinUncheckedCopies &&
         idx->unchecked() >= limit;
}
inline bool LiveKeyDB::Rep::TakeUncheckedCopy(CfState* cf, LiveKeyIndex* idx, uint64_t hash) {
  if (opt.unchecked_copy_budget <= 0 || opt.auto_rebuild_drift <= 0) return false;
  {
    ReadSection rs(&epochs);  // as every probe (WriterContains)
    const uint32_t copies = idx->KernelCopies(hash);
    if (copies == 0 || copies >= kMaxFingerprintCopies) return false;
  }
  if (!cf->serving.load(std::memory_order_relaxed) || cf->rebuild_running.load(std::memory_order_relaxed)) {
    return false;
  }
  const uint64_t limit = UncheckedLimit(idx);
  if (limit < kMinUncheckedCopies) return false;
  const uint64_t taken = idx->TakeUnchecked(limit);
  if (taken == 0) return false;
  epochs.Bump(kUncheckedCopies);
  if (taken == limit) {
    epochs.Bump(kUncheckedBudgetRebuilds);
    ScheduleRebuild(cf);
  }
  return true;
}

// ---- no check possible: read the key -----------------------------------------
inline Liveness LiveKeyDB::Rep::ReadLiveness(ColumnFamilyHandle* h, const Slice& key) {
  epochs.Bump(kLivenessReads);
  PinnableSlice v;
  const rocksdb::Status s = base->Get(ReadOptions(), h, key, &v);
  if (s.ok()) return Liveness::kLive;
  if (s.IsNotFound()) return Liveness::kNotLive;
  return Liveness::kUnknown;
}

// ---- the index update (with the live-region counts) --------------------------
// Callers hold the key's stripe (or all stripes).
// kr: the key's regions (RegionsOf).
inline rocksdb::Status LiveKeyDB::Rep::IndexInsert(CfState* cf, LiveKeyIndex* idx, uint64_t h, const KeyRegions& kr) {
  rocksdb::Status s = idx->Insert(h, kr);
  if (!s.ok()) return s;
  epochs.Bump(kIndexInserts);
  if (cf->rebuilding.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> l(cf->delta_mu);
    cf->delta.push_back(CfState::Delta{h, kr, true});
  }
  if (idx->FirstSeenPastCapacity()) epochs.Bump(kIndexMigrations);
  if (opt.auto_rebuild_drift > 0 && idx->NeedsRebuild(opt.auto_rebuild_drift, opt.rebuild_at_capacity)) {
    ScheduleRebuild(cf);
  }
  return s;
}
// After the delete that made the copy redundant returned.
inline void LiveKeyDB::Rep::IndexErase(CfState* cf, LiveKeyIndex* idx, uint64_t h, const KeyRegions& kr) {
  idx->Erase(h, kr, LatestForErase(idx));
  epochs.Bump(kIndexErases);
  if (cf->rebuilding.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> l(cf->delta_mu);
    cf->delta.push_back(CfState::Delta{h, kr, false});
  }
}
// The sequence number an erase records in the live-region counts (read
// only when the index has them).
inline uint64_t LiveKeyDB::Rep::LatestForErase(const LiveKeyIndex* idx) const {
  return idx->region_counts() != nullptr ? base->GetLatestSequenceNumber() : 0;
}

// ---- a key's regions ---------------------------------------------------------
// The regions of key in family cf the live-region counts count
// (live_region_counts.h): its prefix (a family with counted prefixes,
// a key in the extractor's domain), then its first L bytes, zero-padded,
// for each L of live_range_lengths. Empty when cf counts none.
inline KeyRegions LiveKeyDB::Rep::RegionsOf(const CfState* cf, const Slice& key) const {
  KeyRegions kr;
  if (cf == nullptr || !cf->counts_regions()) return kr;
  if (cf->prefix != nullptr) {
    kr.h[kr.n++] = PrefixRegion(cf, key);
  }
  if (cf->counts_ranges) {
    for (uint32_t L : opt.live_range_lengths) kr.h[kr.n++] = RangeRegion(key, L);
  }
  return kr;
}
// The region hash of key's prefix (LiveRegionCounts::kNoRegion outside
// the extractor's domain).
inline uint64_t LiveKeyDB::Rep::PrefixRegion(const CfState* cf, const Slice& key) const {
  if (cf->prefix == nullptr || !cf->prefix->InDomain(key)) return LiveRegionCounts::kNoRegion;
  const Slice p = cf->prefix->Transform(key);
  return LiveRegionCounts::RegionHash(internal::HashKey(p.data(), p.size(), opt.seed ^ kPrefixHashSalt));
}
// The region hash of key's range region of length L (q_L(key)).
inline uint64_t LiveKeyDB::Rep::RangeRegion(const Slice& key, uint32_t L) const {
  char buf[kMaxRangeLength];
  RangeRegionBytes(key, L, buf);
  return LiveRegionCounts::RegionHash(internal::HashKey(buf, L, opt.seed ^ (kRangeHashSalt + L)));
}

// ---- the base write ----------------------------------------------------------
// Every LiveKeyDB write reaches RocksDB here, as one batch.
inline rocksdb::Status LiveKeyDB::Rep::LedgerWrite(const WriteOptions& wo, WriteBatch* b) {
  ledger.Begin();
  const uint64_t n = b->Count();
  rocksdb::Status s = base->Write(wo, b);
  ledger.End(s.ok() ? n : 0);
  return s;
}

}  // namespace dlcbf
