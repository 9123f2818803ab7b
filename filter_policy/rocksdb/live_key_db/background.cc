// LiveKeyDB's background thread: automatic and Open-time index rebuilds
// (queued by ScheduleRebuild, run one at a time, rebuild.cc) and, when no
// rebuild waits, the checkpoints FlushSignal requests (checkpoint.cc), at
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
  if (!cf->dropped && cf->owned && cf->owned->NeedsRebuild(opt.auto_rebuild_drift, opt.rebuild_at_capacity)) {
    ScheduleRebuild(cf);
  }
}
void LiveKeyDB::Rep::RequestCheckpoint() {
  if (opt.checkpoint_interval_seconds <= 0 || !opt.persist_index) return;
  std::lock_guard<std::mutex> l(bg_mu);
  checkpoint_due = true;
  bg_cv.notify_one();
}
void LiveKeyDB::Rep::BackgroundLoop() {
  std::unique_lock<std::mutex> l(bg_mu);
  for (;;) {
    bg_cv.wait(l, [&] { return bg_stop || !queue.empty() || checkpoint_due; });
    if (bg_stop) break;
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
  if (flush_signal) flush_signal->Set(nullptr);  // no checkpoint requests from here on
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
