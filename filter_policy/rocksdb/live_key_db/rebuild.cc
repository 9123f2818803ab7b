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

// Split points for a scan of cf in `ways` parts of about equal bytes, as
// RocksDB estimates them (GetApproximateSizes from the family's smallest
// key). With the bytewise comparator, each split is found by bisection on
// the 8 bytes after the smallest and largest keys' common prefix, read as
// a big-endian number (keys spread over the key space, as hashed keys do,
// give parts of equal keys too); with other comparators, only file
// boundaries (each SST file's first and last key) are candidates. Fewer
// points (fewer parts) when the estimate cannot tell. Measured on a
// 5.1M-key DB of hashed keys whose few files each spanned the key space,
// file boundaries alone gave parts of 0.54M and 4.56M keys (or 21 and
// 2.1M keys at 2M), so the bisection is the common path.
std::vector<std::string> LiveKeyDB::Rep::ScanSplits(CfState* cf, uint32_t ways) {
  std::vector<std::string> splits;
  const rocksdb::Comparator* cmp = cf->cmp;
  if (cmp == nullptr || ways < 2) return splits;
  std::vector<rocksdb::LiveFileMetaData> files;
  base->GetLiveFilesMetaData(&files);
  std::vector<std::string> bounds;
  for (const auto& f : files) {
    if (f.column_family_name != cf->name) continue;
    if (!f.smallestkey.empty()) bounds.push_back(f.smallestkey);
    if (!f.largestkey.empty()) bounds.push_back(f.largestkey);
  }
  auto less = [cmp](const std::string& x, const std::string& y) { return cmp->Compare(x, y) < 0; };
  std::sort(bounds.begin(), bounds.end(), less);
  bounds.erase(std::unique(bounds.begin(), bounds.end(),
                           [cmp](const std::string& x, const std::string& y) { return cmp->Compare(x, y) == 0; }),
               bounds.end());
  if (bounds.size() < 2) return splits;
  const std::string& lo = bounds.front();
  const std::string& hi = bounds.back();
  rocksdb::SizeApproximationOptions so;
  so.include_memtables = false;
  so.include_files = true;
  auto bytes_below = [&](const std::string& k) -> uint64_t {
    const rocksdb::Range r(lo, k);
    uint64_t size = 0;
    if (!base->GetApproximateSizes(so, cf->handle, &r, 1, &size).ok()) return 0;
    return size;
  };
  const uint64_t total = bytes_below(hi);
  if (total == 0) return splits;
  if (cmp == rocksdb::BytewiseComparator()) {
    size_t prefix = 0;
    while (prefix < lo.size() && prefix < hi.size() && lo[prefix] == hi[prefix]) ++prefix;
    auto word = [prefix](const std::string& k) {
      uint64_t w = 0;
      for (size_t i = 0; i < 8; ++i) {
        w = (w << 8) | (prefix + i < k.size() ? static_cast<uint8_t>(k[prefix + i]) : 0);
      }
      return w;
    };
    auto key_of = [&](uint64_t w) {
      std::string k = lo.substr(0, prefix);
      for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>((w >> (8 * i)) & 0xFF));
      return k;
    };
    const uint64_t wlo = word(lo), whi = word(hi);
    uint64_t from = wlo;
    for (uint32_t p = 1; p < ways && from < whi; ++p) {
      uint64_t a = from, b = whi;  // the first w whose key has p/ways of the bytes below it
      for (int step = 0; step < 40 && a + 1 < b; ++step) {
        const uint64_t mid = a + (b - a) / 2;
        if (bytes_below(key_of(mid)) * ways >= total * p) {
          b = mid;
        } else {
          a = mid;
        }
      }
      const std::string k = key_of(b);
      if (cmp->Compare(k, lo) <= 0 || cmp->Compare(k, hi) >= 0) break;
      if (!splits.empty() && cmp->Compare(splits.back(), k) >= 0) continue;
      splits.push_back(k);
      from = b;
    }
    return splits;
  }
  for (size_t i = 1; i + 1 < bounds.size() && splits.size() + 1 < ways; ++i) {
    // The first boundary with the next part's share of bytes below it.
    if (bytes_below(bounds[i]) * ways >= total * (splits.size() + 1)) splits.push_back(bounds[i]);
  }
  return splits;
}

// A new index for a rebuild, sized for at least `sized_for` keys and never
// past its own automatic trigger at `basis` entries. Invariant: with
// automatic rebuilds on, basis x kRebuildRoom <= rebuild_at_capacity x
// capacity(), so the index a rebuild swaps in holds what it was built for
// with room to grow before the next one. Without it, rebuild_headroom = 1
// and a tiny expected_keys sized the index for exactly its entries, which
// is already past rebuild_at_capacity of the kernel's capacity: every
// rebuild queued the next at once (64,832 rebuilds in 40,000 writes; test
// LiveKeyExactness.NoRebuildStorm). The sizing grows by at least
// kRebuildRoom per step (the kernels' capacity is not linear in sized_for:
// blocks round up), at most 64 steps; the drift trigger needs no care
// (sized_for >= basis and auto_rebuild_drift > 1).
rocksdb::Status LiveKeyDB::Rep::CreateBelowTrigger(uint64_t basis, uint64_t sized_for,
                                                   std::unique_ptr<LiveKeyIndex>* out) {
  constexpr double kRebuildRoom = 1.25;
  rocksdb::Status s = LiveKeyIndex::Create(opt, sized_for, &epochs, out);
  for (int step = 0; s.ok() && opt.auto_rebuild_drift > 0 && step < 64 && sized_for < kMaxExpectedKeys; ++step) {
    const double room = opt.rebuild_at_capacity * static_cast<double>((*out)->capacity());
    const double want = static_cast<double>(basis) * kRebuildRoom;
    if (want <= room) break;
    const double grow = std::max(kRebuildRoom, want / std::max(1.0, room));
    sized_for = std::min<uint64_t>(kMaxExpectedKeys, static_cast<uint64_t>(std::ceil(static_cast<double>(sized_for) * grow)));
    out->reset();
    s = LiveKeyIndex::Create(opt, sized_for, &epochs, out);
  }
  return s;
}

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
  if (!from_checkpoint) s = CreateBelowTrigger(basis, sized_for, &fresh);
#ifdef DLCBF_TESTING
  if (initial && internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kInitialBuildFails) {
    s = rocksdb::Status::IOError("LiveKeyDB test: the initial build fails");
  }
#endif
  if (!s.ok()) {
    cf->rebuild_running.store(false);
    failed_rebuilds.fetch_add(1);
    return s;
  }
  if (opt.charge_cache) {  // the index being built is memory too
    LiveKeyCfStats fs;
    fresh->Describe(&fs);
    UpdateCacheCharge(fs.bytes);
  }
  rocksdb::Info(log, "LiveKeyDB: rebuilding the index of column family '%s' (%s), %s", cf->name.c_str(),
                reason.c_str(),
                from_checkpoint ? ("from the checkpoint at sequence " + std::to_string(cf->checkpoint_seq)).c_str()
                                : ("sized for " + std::to_string(sized_for) + " keys").c_str());

  ReadOptions ro;
  ro.fill_cache = false;
  ro.total_order_seek = true;
  ro.readahead_size = 2 << 20;
  // The full scan's parts (rebuild_scan_threads), one iterator and thread
  // each, part p covering [split p-1, split p): ScanSplits. The iterators
  // are created with every stripe held, so they read one sequence number.
  const std::vector<std::string> splits =
      opt.rebuild_scan_threads > 1 ? ScanSplits(cf, opt.rebuild_scan_threads) : std::vector<std::string>();
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
    // Invariant: a known-key record (stripes.h) never outlives the index
    // its claim is about. "kLive: one copy once the pending checks ran"
    // was said of the index those checks erase from; the new index counts
    // the key from the scan instead, and those checks erase nothing from
    // it, so the claim is void there (kept, a Put on kLive would add
    // nothing to an index whose scan saw the key dead: lost; test
    // LiveKeyExactness.KnownStateDoesNotOutliveARebuild). Writes from here
    // on record states about the index the scan and the delta log build.
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() != internal::LiveKeyFault::kKeepKnownStateAcrossRebuild)
#endif
      stripes.ForgetFamily(cf->id);
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
    s = CreateBelowTrigger(basis, sized_for, &fresh);
    if (!s.ok()) break;
  }

  cf->scanned.store(0, std::memory_order_relaxed);
  if (!its.empty() && s.ok()) {
    std::atomic<uint64_t> total{0};
    std::vector<rocksdb::Status> part_status(parts);
    auto last_log = std::chrono::steady_clock::now();
    auto scan = [&](size_t p) {
      const auto part_t0 = std::chrono::steady_clock::now();
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
      uint64_t mine = 0;
      auto insert_batch = [&]() -> bool {
        rocksdb::Status is = fresh->InsertBatch(batch.data(), batch.size(), results.data());
        if (!is.ok()) {
          part_status[p] = is;
          return false;
        }
        const uint64_t step = batch.size();
        batch.clear();
        mine += step;
        const uint64_t now_total = total.fetch_add(step) + step;
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
      if (part_status[p].ok()) part_status[p] = it->status();
      if (parts > 1) {
        rocksdb::Info(log, "LiveKeyDB: rebuilding '%s': scan part %zu of %zu: %" PRIu64 " keys in %.3f s",
                      cf->name.c_str(), p + 1, parts, mine, SecondsSince(part_t0));
      }
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
  UpdateCacheCharge();
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
    cf->last_scan_parts = from_checkpoint ? 0 : static_cast<uint32_t>(parts);
    cf->last_deltas = deltas;
    cf->last_pause_micros = pause_us;
  }
  rocksdb::Info(log, "LiveKeyDB: rebuilt '%s': %" PRIu64 " keys in %.2f s, %" PRIu64
                " concurrent updates replayed (%" PRIu64 " of them with writers paused), writers paused %" PRIu64 " us",
                cf->name.c_str(), keys, secs, deltas, pause_deltas, pause_us);
  return rocksdb::Status::OK();
}


}  // namespace dlcbf
