// LiveKeyDB index rebuilds: a keys-only scan beside live writers, then a
// replay of the updates made meanwhile (see the design note in live_key_db.cc).
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "rocksdb/metadata.h"
#include "rocksdb/sst_file_reader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlcbf {

// ---------------------------------------------------------------------------
// Rebuild
// ---------------------------------------------------------------------------
namespace {
// The catch-up before the swap: at most this many rounds without a pause,
// stopping once at most kPausedDeltas updates are left for the paused one.
constexpr int kCatchUpRounds = 16;
constexpr size_t kPausedDeltas = 4096;

rocksdb::Status ReplayDeltas(LiveKeyIndex* idx, const std::vector<std::pair<uint64_t, bool>>& log) {
  for (const auto& d : log) {
    if (d.second) {
      rocksdb::Status s = idx->Insert(d.first);
      if (!s.ok()) return s;
    } else {
      idx->Erase(d.first);
    }
  }
  return rocksdb::Status::OK();
}
}  // namespace

rocksdb::Status LiveKeyDB::Rep::Rebuild(CfState* cf, const std::string& reason, bool automatic) {
  std::lock_guard<std::mutex> rl(rebuild_mu);
  if (cf->dropped) return rocksdb::Status::OK();
  if (!cf->indexed) return rocksdb::Status::NotSupported("LiveKeyDB: column family is not indexed");
  if (closing.load()) return rocksdb::Status::Aborted("LiveKeyDB: closing");
  cf->rebuild_running.store(true);
  const auto t0 = std::chrono::steady_clock::now();

  LiveKeyIndex* old = cf->active.load();
  // The build Open left to the background: its stand-in index counts only
  // the writes since Open, so size by the DB's estimate as Open would.
  const bool initial = !cf->serving.load(std::memory_order_acquire);
  uint64_t basis = 0;
  if (old != nullptr && !initial) {
    basis = old->entries();
  } else {
    uint64_t est = 0;
    if (base->GetIntProperty(cf->handle, "rocksdb.estimate-num-keys", &est)) basis = est;
  }
  const double want = std::ceil(static_cast<double>(basis) * opt.rebuild_headroom);
  const uint64_t sized_for = std::min<uint64_t>(
      kMaxExpectedKeys,
      std::max<uint64_t>(opt.expected_keys, want >= 1e15 ? uint64_t{1} << 50 : static_cast<uint64_t>(want)));

  // A checkpoint Open loaded is the start: only the keys written since it
  // are read (ReplaySince) instead of every key.
  std::unique_ptr<LiveKeyIndex> fresh = initial ? std::move(cf->checkpoint_base) : nullptr;
  bool from_checkpoint = fresh != nullptr;
  rocksdb::Status s;
  if (!from_checkpoint) s = LiveKeyIndex::Create(opt, sized_for, &epochs, &fresh);
  if (!s.ok()) {
    cf->rebuild_running.store(false);
    failed_rebuilds.fetch_add(1);
    return s;
  }
  rocksdb::Info(log, "LiveKeyDB: rebuilding the index of column family '%s' (%s), %s", cf->name.c_str(),
                reason.c_str(),
                from_checkpoint ? ("from the checkpoint at sequence " + std::to_string(cf->checkpoint_seq)).c_str()
                                : ("sized for " + std::to_string(sized_for) + " keys").c_str());

  ReadOptions ro;
  ro.fill_cache = false;
  ro.total_order_seek = true;
  ro.readahead_size = 2 << 20;
  // The full scan's parts (rebuild_scan_threads): split points taken from
  // the family's SST files' smallest keys, evenly spaced; part p covers
  // [split p-1, split p) with its own iterator and thread. The iterators
  // are created with every stripe held, so they read one sequence number.
  std::vector<std::string> splits;
  if (opt.rebuild_scan_threads > 1 && cf->cmp != nullptr) {
    std::vector<rocksdb::LiveFileMetaData> files;
    base->GetLiveFilesMetaData(&files);
    std::vector<std::string> firsts;
    for (const auto& f : files) {
      if (f.column_family_name == cf->name && !f.smallestkey.empty()) firsts.push_back(f.smallestkey);
    }
    const rocksdb::Comparator* cmp = cf->cmp;
    std::sort(firsts.begin(), firsts.end(),
              [cmp](const std::string& a, const std::string& b) { return cmp->Compare(a, b) < 0; });
    const size_t parts = std::min<size_t>(opt.rebuild_scan_threads, firsts.size());
    for (size_t k = 1; k < parts; ++k) {
      const std::string& c = firsts[k * firsts.size() / parts];
      if (splits.empty() || cmp->Compare(splits.back(), c) < 0) splits.push_back(c);
    }
  }
  const size_t parts = splits.size() + 1;
  std::vector<Slice> lower(parts), upper(parts);
  std::vector<ReadOptions> part_ro(parts, ro);
  for (size_t p = 0; p < parts; ++p) {
    if (p > 0) {
      lower[p] = splits[p - 1];
      part_ro[p].iterate_lower_bound = &lower[p];
    }
    if (p + 1 < parts) {
      upper[p] = splits[p];
      part_ro[p].iterate_upper_bound = &upper[p];
    }
  }
  std::vector<std::unique_ptr<Iterator>> its;
  uint64_t keys = 0;
  for (;;) {  // at most twice: a checkpoint that cannot be brought forward falls back to a full scan
    const rocksdb::Snapshot* snap = nullptr;
    LockAll();
    if (from_checkpoint) {
      snap = base->GetSnapshot();
    } else {
      for (size_t p = 0; p < parts; ++p) its.emplace_back(base->NewIterator(part_ro[p], cf->handle));
    }
    {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      cf->delta.clear();
    }
    cf->rebuilding.store(true);
    // Deferred checks queued before this point belong to copies the scan
    // counts exactly: they must not erase from the new index (they still
    // erase from the old one while it is active: a rebuild that fails or is
    // aborted keeps the old index exact; see ApplyCheck).
    cf->generation.fetch_add(1, std::memory_order_relaxed);
    UnlockAll();
    if (!from_checkpoint) break;
    s = snap != nullptr ? ReplaySince(cf, cf->checkpoint_seq, snap, fresh.get(), &keys)
                        : rocksdb::Status::Incomplete("no snapshot");
    if (snap != nullptr) base->ReleaseSnapshot(snap);
    if (s.ok()) {
      checkpoint_replays.fetch_add(1);
      checkpoint_replayed_keys.fetch_add(keys);
      break;
    }
    rocksdb::Warn(log, "LiveKeyDB: the checkpoint of '%s' could not be brought forward (%s): full scan",
                  cf->name.c_str(), s.ToString().c_str());
    from_checkpoint = false;
    keys = 0;
    fresh.reset();
    s = LiveKeyIndex::Create(opt, sized_for, &epochs, &fresh);
    if (!s.ok()) break;
  }

  cf->scanned.store(0, std::memory_order_relaxed);
  if (!its.empty() && s.ok()) {
    std::atomic<uint64_t> total{0};
    std::vector<rocksdb::Status> part_status(parts);
    auto last_log = std::chrono::steady_clock::now();
    auto scan = [&](size_t p) {
      Iterator* it = its[p].get();
      if (p > 0) {
        it->Seek(lower[p]);
      } else {
        it->SeekToFirst();
      }
      // Hashes go to the new index 1024 at a time (LiveKeyIndex::InsertBatch:
      // its writer lock once per batch, lines prefetched ahead), so parts
      // in parallel meet on that lock 1024 times less often.
      constexpr size_t kScanBatch = 1024;
      std::vector<uint64_t> batch;
      batch.reserve(kScanBatch);
      std::vector<OpResult> results(kScanBatch);
      uint64_t mine = 0, reported = 0;
      auto insert_batch = [&]() -> bool {
        rocksdb::Status is = fresh->InsertBatch(batch.data(), batch.size(), results.data());
        if (!is.ok()) {
          part_status[p] = is;
          return false;
        }
        mine += batch.size();
        batch.clear();
        const uint64_t step = mine - reported;
        const uint64_t now_total = total.fetch_add(step) + step;
        reported = mine;
        cf->scanned.store(now_total, std::memory_order_relaxed);
        // Progress: each rebuild_progress_interval keys (whichever part
        // crosses it), and every 10 s (part 0 keeps that clock).
        const bool crossed = now_total / opt.rebuild_progress_interval !=
                             (now_total - step) / opt.rebuild_progress_interval;
        const bool timed = p == 0 && SecondsSince(last_log) >= 10.0;
        if (timed) last_log = std::chrono::steady_clock::now();
        if (crossed || timed) {
          rocksdb::Info(log, "LiveKeyDB: rebuilding '%s': %" PRIu64 " keys scanned, %.1f s",
                        cf->name.c_str(), now_total, SecondsSince(t0));
        }
        if (closing.load(std::memory_order_relaxed)) {  // Close aborts the scan at once
          part_status[p] = rocksdb::Status::Aborted("LiveKeyDB: closing");
          return false;
        }
        return true;
      };
      bool going = true;
      for (; going && it->Valid(); it->Next()) {
#ifdef DLCBF_TESTING
        while (internal::GetLiveKeyRebuildPauseForTesting() && !closing.load()) {
          internal::SetLiveKeyRebuildWaitingForTesting(true);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        internal::SetLiveKeyRebuildWaitingForTesting(false);
#endif
        batch.push_back(Hash(it->key()));
        if (batch.size() == kScanBatch) going = insert_batch();
      }
      if (going && !batch.empty()) insert_batch();
      total.fetch_add(mine - reported);
      if (part_status[p].ok()) part_status[p] = it->status();
    };
    std::vector<std::thread> helpers;
    for (size_t p = 1; p < parts; ++p) helpers.emplace_back(scan, p);
    scan(0);
    for (std::thread& h : helpers) h.join();
    for (const rocksdb::Status& ps : part_status) {
      if (s.ok() && !ps.ok()) s = ps;
    }
    keys = total.load();
    cf->scanned.store(keys, std::memory_order_relaxed);
  }
  its.clear();

  // Catch up without pausing the writers: replay the delta log in rounds
  // while they keep appending to it, until what is left is short; only
  // that rest is replayed with the writers paused. The new index is this
  // thread's alone until the swap, and the log is replayed in its order
  // (an erase always follows the insert or the scanned key it takes).
  uint64_t deltas = 0;
  for (int round = 0; s.ok() && round < kCatchUpRounds; ++round) {
    std::vector<std::pair<uint64_t, bool>> chunk;
    {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      if (cf->delta.size() <= kPausedDeltas) break;
      chunk.swap(cf->delta);
    }
    deltas += chunk.size();
    s = ReplayDeltas(fresh.get(), chunk);
  }

  std::unique_ptr<LiveKeyIndex> retired;
  uint64_t pause_deltas = 0;
  LockAll();
  const auto p0 = std::chrono::steady_clock::now();
  if (s.ok()) {
    std::vector<std::pair<uint64_t, bool>> log_copy;
    {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      log_copy.swap(cf->delta);
    }
    deltas += log_copy.size();
    pause_deltas = log_copy.size();
    s = ReplayDeltas(fresh.get(), log_copy);
  }
  if (s.ok()) {
    std::lock_guard<std::mutex> sl(swap_mu);
    retired = std::move(cf->owned);
    cf->owned = std::move(fresh);
    cf->active.store(cf->owned.get());
    cf->serial.fetch_add(1, std::memory_order_relaxed);
    cf->scanned.store(keys, std::memory_order_relaxed);
    // Complete now: readers may use it (the stand-in never served them).
    cf->serving.store(true, std::memory_order_release);
  }
  cf->rebuilding.store(false);
  {
    std::lock_guard<std::mutex> l(cf->delta_mu);
    std::vector<std::pair<uint64_t, bool>>().swap(cf->delta);
  }
  UnlockAll();
  const uint64_t pause_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - p0)
          .count());
  if (retired) {
    epochs.Synchronize();  // no reader is inside the old index any more
    retired.reset();
  }
  cf->rebuild_running.store(false);
  if (!s.ok()) {
    failed_rebuilds.fetch_add(1);
    rocksdb::Warn(log, "LiveKeyDB: rebuild of '%s' abandoned after %" PRIu64 " keys: %s%s",
                  cf->name.c_str(), keys, s.ToString().c_str(),
                  initial ? " (reads keep bypassing the index until a rebuild succeeds)" : "");
    if (initial) {
      std::lock_guard<std::mutex> l(cf->info_mu);
      cf->build_error = s.ToString();
    }
    return s;
  }
  if (initial) {
    std::lock_guard<std::mutex> l(cf->info_mu);
    cf->build_error.clear();
  }
  const double secs = SecondsSince(t0);
  rebuilds.fetch_add(1);
  if (automatic) auto_rebuilds.fetch_add(1);
  {
    std::lock_guard<std::mutex> l(cf->info_mu);
    ++cf->rebuilds;
    cf->last_reason = reason;
    cf->last_seconds = secs;
    cf->last_keys = keys;
    cf->last_deltas = deltas;
    cf->last_pause_micros = pause_us;
  }
  rocksdb::Info(log, "LiveKeyDB: rebuilt '%s': %" PRIu64 " keys in %.2f s, %" PRIu64
                " concurrent updates replayed (%" PRIu64 " of them with writers paused), writers paused %" PRIu64 " us",
                cf->name.c_str(), keys, secs, deltas, pause_deltas, pause_us);
  return rocksdb::Status::OK();
}


}  // namespace dlcbf
