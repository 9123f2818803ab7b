// LiveKeyDB's deferred liveness checks: the Rep's members that take a
// check off the write path (CheckSnapshot, QueueCheck), run it on the
// checker thread (CheckLoop, RunChecks: one MultiGet per family and
// snapshot) and apply it (ApplyCheck). Contract: checker.h.
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace dlcbf {

// Under the key's stripe `si`: a reference to the snapshot a deferred
// check reads at, or nullptr when checks are off, the queue is full or
// the DB has no snapshots (the caller then reads synchronously). The
// check must see the key as it was just before this write: every earlier
// LiveKeyDB write to it was made under this stripe, so any snapshot at or
// after stripes.ReleasedAt(si) will do. The current shared snapshot is reused
// while it is that recent (GetSnapshot takes the DB mutex and allocates:
// most writes save both); else a new one replaces it. Changes to the key
// that bypass LiveKeyDB (a compaction filter, TTL) can only make it not
// live; then its old copy is stale and an erase it justifies is harmless.
// `*busy` (if given) is set when the reason is that every core is writing
// (more LiveKeyDB writes in progress than deferring_writers); the caller
// then takes an unchecked copy or reads, and counts which.
SharedSnapshot* LiveKeyDB::Rep::CheckSnapshot(uint32_t si, bool* busy) {
  if (!opt.defer_liveness_checks) return nullptr;
  bool all_busy = writers_in_flight.load(std::memory_order_relaxed) > deferring_writers;
#ifdef DLCBF_TESTING
  all_busy = all_busy || internal::GetLiveKeyBusyWritersForTesting();
#endif
  if (all_busy) {  // every core writing: no core for the checker
    if (busy != nullptr) {
      *busy = true;
    } else {
      epochs.Bump(kBusySyncReads);
    }
    return nullptr;
  }
  if (pending_checks.load(std::memory_order_relaxed) >= opt.max_pending_checks) {
    epochs.Bump(kQueueFullFallbacks);
    return nullptr;
  }
  uint64_t need = stripes.ReleasedAt(si);
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kStaleCheckSnapshot) need = 0;
#endif
  std::lock_guard<std::mutex> l(snap_mu);
  if (current_snap == nullptr || current_snap->seq < need) {
    const rocksdb::Snapshot* fresh = base->GetSnapshot();
    if (fresh == nullptr) return nullptr;
    epochs.Bump(kCheckSnapshots);
    if (current_snap != nullptr) ReleaseSnapshotRef(current_snap);
    current_snap = new SharedSnapshot;
    current_snap->snap = fresh;
    current_snap->seq = fresh->GetSequenceNumber();
  }
  current_snap->refs.fetch_add(1, std::memory_order_relaxed);
  return current_snap;
}
void LiveKeyDB::Rep::ReleaseSnapshotRef(SharedSnapshot* s, uint32_t n) {
  if (s->refs.fetch_sub(n, std::memory_order_acq_rel) == n) {
    base->ReleaseSnapshot(s->snap);
    delete s;
  }
}
// Drops the current shared snapshot (so an idle DB holds none, and old
// versions can be compacted away); queued checks keep theirs.
void LiveKeyDB::Rep::DropCurrentSnapshot() {
  std::lock_guard<std::mutex> l(snap_mu);
  if (current_snap != nullptr) ReleaseSnapshotRef(current_snap);
  current_snap = nullptr;
}
// Under the key's stripe `si` (the generation must be read there).
// `after`: what the write made of the key (KnownKey), kUnknown if unsure.
void LiveKeyDB::Rep::QueueCheck(CfState* cf, uint64_t hash, SharedSnapshot* snap, const Slice& key, uint32_t si,
                Known after) {
  PendingCheck c;
  c.cf = cf;
  c.hash = hash;
  c.generation = cf->generation.load(std::memory_order_relaxed);
  c.serial = cf->serial.load(std::memory_order_relaxed);
  c.has_record = stripes.RegisterCheck(si, cf->id, hash, key, after);
  c.snapshot = snap;
  c.key.assign(key);
  pending_checks.fetch_add(1, std::memory_order_relaxed);
  epochs.Bump(kDeferredChecks);
  bool wake;
  {
    std::lock_guard<std::mutex> l(check_mu);
    checks.Push(std::move(c));
    wake = checks.size() == kCheckWakeBatch || check_sleeping;
  }
  // No wake-up per check: a futex wake and a context switch would cost
  // the writer more than the check saves it. The checker polls every
  // kCheckPollMs while checks come, and is woken only when a batch has
  // piled up, or by the first check after it went to sleep (idle).
  if (wake) check_cv.notify_one();
}
// One check, once read: was the key live at the snapshot (just before
// its write)?
// Then the write counted a second copy up, or deleted a live key: erase
// one copy from the index it was queued against (CfState::serial) while
// that one is active, logging a delta only if the running rebuild's scan
// began before the check was queued (CfState::generation); nothing once
// a rebuild swapped in (its scan counted the key exactly) or the family
// was dropped. A failed read erases nothing (a stale entry: the safe
// side). The checker writes nothing to the DB, so it takes the stripe
// without moving its ReleasedAt.
// The reads are batched (RunChecks): the checks of one family that share
// a snapshot (most do: rep.h, CheckSnapshot) are read in one MultiGet.
void LiveKeyDB::Rep::RunChecks(CheckQueue::Blocks* batch) {
  std::vector<ColumnFamilyHandle*> hs;
  std::vector<Slice> ks;
  std::vector<PinnableSlice> vals;
  std::vector<rocksdb::Status> sts;
  for (auto& block : *batch) {  // (a group never spans two blocks)
    PendingCheck* const c = block->c;
    const size_t size = block->n;
    for (size_t i = 0; i < size;) {
      PendingCheck& first = c[i];
      size_t j = i + 1;
      while (j < size && j - i < kCheckMultiGet && c[j].cf == first.cf && c[j].snapshot == first.snapshot) ++j;
      const size_t n = j - i;
      hs.assign(n, first.cf->handle);
      ks.clear();
      for (size_t k = i; k < j; ++k) ks.emplace_back(c[k].key.slice());
      vals.clear();
      vals.resize(n);
      sts.assign(n, rocksdb::Status());
      ReadOptions ro;
      ro.snapshot = first.snapshot->snap;
      // The checks' blocks are random and read once: caching them would
      // evict the application's blocks (and cost the checker an insert and
      // an eviction per block).
      ro.fill_cache = false;
      base->MultiGet(ro, n, hs.data(), ks.data(), vals.data(), sts.data());
      epochs.Bump(kCheckReads);
      for (size_t k = i; k < j; ++k) {
        ApplyCheck(&c[k], sts[k - i].ok());
        c[k].key.assign(Slice());  // a long key's bytes go now, not when the block is reused
      }
      // One release of the group's snapshot references and one count down
      // per MultiGet, not one per check: writers take both lines.
      ReleaseSnapshotRef(first.snapshot, static_cast<uint32_t>(n));  // the group's checks no longer use it
      pending_checks.fetch_sub(n, std::memory_order_relaxed);
      i = j;
    }
  }
}
void LiveKeyDB::Rep::ApplyCheck(PendingCheck* c, bool live) {
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kCheckEraseWithoutRead) live = true;
#endif
  const uint32_t si = stripes.Of(c->cf->id, c->hash);
  std::lock_guard<std::mutex> l(stripes.mutex(si));
  if (c->has_record) stripes.FinishCheck(si, c->cf->id, c->hash);
  if (!live) return;
  LiveKeyIndex* idx = c->cf->active.load();
  const bool same_generation = c->cf->generation.load(std::memory_order_relaxed) == c->generation;
  bool same_index = c->cf->serial.load(std::memory_order_relaxed) == c->serial;
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kDropOldGenerationChecks) same_index = false;
#endif
  if (c->cf->dropped || idx == nullptr || (!same_generation && !same_index)) {
    epochs.Bump(kChecksDropped);
    return;
  }
  const KeyRegions kr = RegionsOf(c->cf, c->key.slice());
  if (same_generation) {
    IndexErase(c->cf, idx, c->hash, kr);
  } else {  // its scan began after this check was queued: not its delta
    idx->Erase(c->hash, kr, LatestForErase(idx));
    epochs.Bump(kIndexErases);
  }
  epochs.Bump(kCheckErases);
}
// The checker thread: FIFO, so the checks of one key run in write order
// (their erases commute anyway: each takes one copy the key added).
// Close drains the queue before it stops.
void LiveKeyDB::Rep::CheckLoop() {
  std::unique_lock<std::mutex> l(check_mu);
  CheckQueue::Blocks batch;
  bool idle = false;
  for (;;) {
    if (idle && checks.empty() && !check_stop) {
      // Idle (the shared snapshot is dropped): sleep until a check or
      // Close arrives, instead of polling an idle DB every kCheckPollMs.
      check_sleeping = true;
      check_cv.wait(l, [&] { return check_stop || !checks.empty(); });
      check_sleeping = false;
    }
    check_cv.wait_for(l, std::chrono::milliseconds(kCheckPollMs),
                      [&] { return check_stop || checks.size() >= kCheckWakeBatch; });
    if (checks.empty()) {
      if (check_stop) break;
      l.unlock();
      DropCurrentSnapshot();  // idle (no check waited this poll)
      l.lock();
      idle = true;
      continue;
    }
    idle = false;
#ifdef DLCBF_TESTING
    if (!check_stop && internal::GetLiveKeyCheckPauseForTesting()) {
      l.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      l.lock();
      continue;
    }
#endif
    // Take everything queued at once (one lock round trip per batch), and
    // give the emptied blocks back for the writers to fill again
    // (CheckQueue: a burst's blocks beyond its pool are freed).
    checks.TakeAll(&batch);
    check_busy = true;
    l.unlock();
    RunChecks(&batch);
    // A burst's blocks past what the pool keeps are freed here, outside
    // check_mu, so writers never wait for those frees.
    if (batch.size() > CheckQueue::kPooledBlocks) batch.resize(CheckQueue::kPooledBlocks);
    l.lock();
    checks.Recycle(&batch);
    check_busy = false;
    if (checks.empty()) check_idle_cv.notify_all();
  }
  check_idle_cv.notify_all();
}
void LiveKeyDB::Rep::StopChecks() {
  {
    std::lock_guard<std::mutex> l(check_mu);
    check_stop = true;
  }
  check_cv.notify_all();
  if (checker.joinable()) checker.join();
  DropCurrentSnapshot();
}

}  // namespace dlcbf
