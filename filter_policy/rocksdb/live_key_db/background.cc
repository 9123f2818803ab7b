// LiveKeyDB's background thread: automatic and Open-time index rebuilds
// (queued by ScheduleRebuild, run one at a time, rebuild.cc) and, when no
// rebuild waits, the checkpoints the world watch requests (checkpoint.cc), at
// most one per checkpoint_interval_seconds. StopBackground ends it at
// Close, after the deferred checks drained.
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>

namespace dlcbf {

void LiveKeyDB::Rep::ScheduleRebuild(CfState* cf) {
  if (closing.load(std::memory_order_relaxed)) return;
  bool expected = false;
  if (!cf->rebuild_queued.compare_exchange_strong(expected, true)) return;
  std::lock_guard<std::mutex> l(bg_mu);
  queue.push_back(cf->id);
  bg_cv.notify_one();
}
void LiveKeyDB::Rep::MaybeReschedule(CfState* cf) {
  if (opt.auto_rebuild_drift <= 0) return;
  std::lock_guard<std::mutex> sl(swap_mu);  // keeps `owned` alive
  // (Also when its unchecked copies are spent: the write that spent them
  // may have found a rebuild still queued, whose index took them since.)
  if (!cf->dropped && cf->owned &&
      (cf->owned->NeedsRebuild(opt.auto_rebuild_drift, opt.rebuild_at_capacity) ||
       UncheckedBudgetSpent(cf->owned.get()))) {
    ScheduleRebuild(cf);
  }
}
void LiveKeyDB::Rep::RequestCheckpoint() {
  if (opt.checkpoint_interval_seconds <= 0 || !opt.persist_index) return;
  std::lock_guard<std::mutex> l(bg_mu);
  checkpoint_due = true;
  bg_cv.notify_one();
}
// A change LiveKeyDB never saw is certain (Rep::IndexTrusted, the world
// watch): every index is bypassed from here until RecoverTrust rebuilt them
// all. The index file goes at once: a checkpoint taken before the change
// would be brought forward past it at the next Open, and a replay reads
// what was written, never what a removed file uncovered (test
// LiveKeyClosedWorld.CheckpointThenDeleteFilesThenCrash). One LOG line.
// A change may come that no checkpoint can replay (a compaction filter's
// decision, before its job installs): the index file goes now, and a file
// being written goes too (KeepFileIfStillTrusted sees untrust_events move).
void LiveKeyDB::Rep::ForgetIndexFile() {
  {
    std::lock_guard<std::mutex> tl(trust_mu);
    untrust_events.fetch_add(1, std::memory_order_acq_rel);
  }
  // (Also without persist_index: a file left by an earlier Open would be
  // loaded by a later one that persists.)
  env->DeleteFile(IndexPath()).PermitUncheckedError();
}

void LiveKeyDB::Rep::MarkUntrusted(const std::string& why) {
  bool first = false;
  {
    // (With RecoverTrust's last check: a change is either counted before
    // that check or finds the indexes trusted and makes them untrusted.)
    std::lock_guard<std::mutex> tl(trust_mu);
    untrust_events.fetch_add(1, std::memory_order_acq_rel);  // (before the file goes: KeepFileIfStillTrusted)
    bool expected = false;
    first = untrusted.compare_exchange_strong(expected, true);
  }
  // (Also without persist_index: a file left by an earlier Open would be
  // loaded by a later one that persists, and brought forward past this
  // change.)
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() != internal::LiveKeyFault::kSaveUntrustedIndex)
#endif
    env->DeleteFile(IndexPath()).PermitUncheckedError();
  if (first) {
    unseen_write_detections.fetch_add(1);
    rocksdb::Warn(log, "LiveKeyDB: %s. Reads bypass every index until each is rebuilt.", why.c_str());
  }
  // (Also when already untrusted: a recovery whose scans began before this
  // change must not end it; RecoverTrust sees untrust_events move and
  // scans again, and one that gave up is started again.)
#ifdef DLCBF_TESTING
  if (!first && internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kRecoveryIgnoresLaterChanges) {
    return;
  }
#endif
  std::lock_guard<std::mutex> l(bg_mu);
  trust_recovery_due = true;
  bg_cv.notify_one();
}

// Rebuilds every index after a write LiveKeyDB never saw. At a quiescent
// moment (every stripe held, no LiveKeyDB write in flight) the ledger is
// rebased to the DB's sequence number L; each family is then rebuilt from
// a scan that starts after that moment, so it counts every write up to L,
// seen or not. Trusted again only if, at a later quiescent moment, the
// ledger accounts for every sequence number past L (none unseen came
// during the rebuilds); else another round. Reads bypass the indexes
// throughout.
void LiveKeyDB::Rep::RecoverTrust() {
  for (int round = 0; round < 16 && !closing.load(); ++round) {
    bool rebased = false;
    uint64_t events = 0;  // the unseen changes the scans below start after
    for (int attempt = 0; attempt < 2000 && !rebased && !closing.load(); ++attempt) {
      {
        AllStripesGuard all(this);
        uint64_t latest = 0, verified = 0;
        events = untrust_events.load(std::memory_order_acquire);
        if (ledger.Quiescent([&] { return base->GetLatestSequenceNumber(); }, &latest, &verified)) {
          ledger.Rebase(latest);
          rebased = true;
        }
      }
      if (!rebased) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!rebased) break;
    {
      // A checkpoint loaded at Open is no start after an unseen change:
      // every family is scanned whole.
      std::lock_guard<std::mutex> rl(rebuild_mu);
      file_load_pending = false;
      world->StopRemembering();
      std::lock_guard<std::mutex> l(cf_mu);
      for (auto& kv : cfs) kv.second->checkpoint_base.reset();
    }
    std::vector<CfState*> fams;
    {
      std::lock_guard<std::mutex> l(cf_mu);
      for (auto& kv : cfs) {
        if (kv.second->indexed && !kv.second->dropped) fams.push_back(kv.second.get());
      }
    }
    bool ok = true;
    for (CfState* cf : fams) {
      rocksdb::Status s = Rebuild(cf, "writes LiveKeyDB did not make", /*automatic=*/true);
      if (!s.ok()) {
        ok = false;
        if (!closing.load()) {
          rocksdb::Warn(log, "LiveKeyDB: rebuild of '%s' after unseen writes failed: %s (reads keep "
                        "bypassing every index)", cf->name.c_str(), s.ToString().c_str());
        }
        break;
      }
    }
    if (!ok) return;
    for (int attempt = 0; attempt < 2000 && !closing.load(); ++attempt) {
      uint64_t latest = 0, verified = 0;
      if (ledger.Quiescent([&] { return base->GetLatestSequenceNumber(); }, &latest, &verified)) {
        // No sequence number it did not write, and no unseen change that
        // moves none (world_watch.h) since the scans began (test
        // LiveKeyClosedWorld.UnseenChangeDuringRecoveryLosesNoKey).
        std::unique_lock<std::mutex> tl(trust_mu);
#ifdef DLCBF_TESTING
        if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kRecoveryIgnoresLaterChanges) {
          events = untrust_events.load(std::memory_order_acquire);
        }
#endif
        if (latest <= verified && untrust_events.load(std::memory_order_acquire) == events) {
          {
            // (Every change so far is in these scans: no recovery is due.)
            std::lock_guard<std::mutex> bl(bg_mu);
            trust_recovery_due = false;
          }
          trust_epoch.fetch_add(1, std::memory_order_acq_rel);  // (before: Rep::IndexTrusted)
          untrusted.store(false, std::memory_order_release);
          tl.unlock();
          trust_recoveries.fetch_add(1);
          rocksdb::Warn(log, "LiveKeyDB: every index rebuilt after unseen writes; they serve again");
          return;
        }
        break;  // more unseen writes came: another round
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (!closing.load()) {
    rocksdb::Warn(log, "LiveKeyDB: the indexes could not be made trusted again (writes keep arriving that "
                  "LiveKeyDB does not see); reads bypass them");
  }
}

void LiveKeyDB::Rep::BackgroundLoop() {
  std::unique_lock<std::mutex> l(bg_mu);
  for (;;) {
    bg_cv.wait(l, [&] { return bg_stop || !queue.empty() || checkpoint_due || trust_recovery_due; });
    if (bg_stop) break;
    if (trust_recovery_due) {
      trust_recovery_due = false;
      bg_busy = true;
      l.unlock();
      RecoverTrust();
      l.lock();
      bg_busy = false;
      bg_idle_cv.notify_all();
      continue;
    }
    if (queue.empty()) {  // a checkpoint is due (rebuilds go first)
      const auto next = last_checkpoint + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                              std::chrono::duration<double>(opt.checkpoint_interval_seconds));
      if (checkpointed && std::chrono::steady_clock::now() < next) {
        bg_cv.wait_until(l, next, [&] { return bg_stop || !queue.empty(); });
        continue;
      }
      checkpoint_due = false;
      bg_busy = true;
      l.unlock();
      rocksdb::Status cs = Checkpoint();
      UpdateCacheCharge();  // (an index may have grown: a stash, a migration)
      if (!cs.ok()) checkpoint_failures.fetch_add(1);
      if (!cs.ok() && !closing.load()) {
        rocksdb::Warn(log, "LiveKeyDB: checkpoint failed (the last good one stays): %s", cs.ToString().c_str());
      }
      l.lock();
      last_checkpoint = std::chrono::steady_clock::now();
      checkpointed = true;
      bg_busy = false;
      bg_idle_cv.notify_all();
      continue;
    }
    const uint32_t id = queue.front();
    queue.pop_front();
    bg_busy = true;
    l.unlock();
    CfState* cf = FindState(id);
    if (cf != nullptr) {
      std::string why = "automatic";
      {
        std::lock_guard<std::mutex> sl(swap_mu);  // keeps `owned` alive
        const LiveKeyIndex* idx = cf->owned.get();
        if (!cf->serving.load(std::memory_order_acquire)) {
          why = "open: built in the background (no usable index file)";
        } else if (idx != nullptr) {
          char buf[160];
          std::snprintf(buf, sizeof(buf),
                        "automatic: %" PRIu64 " entries, sized for %" PRIu64 "%s",
                        idx->entries(), idx->sized_for(),
                        idx->past_capacity() ? ", dlCBF past capacity (migrating or ABF)" : "");
          why = buf;
        }
      }
      rocksdb::Status s = Rebuild(cf, why, /*automatic=*/true);
      if (!s.ok() && !closing.load()) {
        rocksdb::Warn(log, "LiveKeyDB: automatic rebuild of '%s' failed: %s", cf->name.c_str(),
                      s.ToString().c_str());
      }
      cf->rebuild_queued.store(false);
      if (s.ok()) MaybeReschedule(cf);  // writes during the scan may have outgrown it
    }
    l.lock();
    bg_busy = false;
    bg_idle_cv.notify_all();
  }
}
void LiveKeyDB::Rep::StopBackground() {
  // The last edits explained first (a flush or compaction just before
  // Close): the index file Close writes must account for them. (The watch
  // stays attached until Close has written the file.)
  if (world) world->WaitSettled(live_key::WorldWatch::kSettleAfter);
  StopChecks();  // drains the queue first: the index is exact when saved
  closing.store(true);
  {
    std::lock_guard<std::mutex> l(bg_mu);
    bg_stop = true;
    bg_cv.notify_all();
  }
  if (bg.joinable()) bg.join();
}

}  // namespace dlcbf
