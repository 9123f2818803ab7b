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
#include <system_error>
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

// `latest`: the DB's latest sequence number, read after every delete of
// the log returned (the erases' LiveRegionCounts::Remove).
rocksdb::Status ReplayDeltas(LiveKeyIndex* idx, const std::vector<CfState::Delta>& log, uint64_t latest) {
  for (const CfState::Delta& d : log) {
    if (d.insert) {
      rocksdb::Status s = idx->Insert(d.hash, d.regions);
      if (!s.ok()) return s;
    } else {
      idx->Erase(d.hash, d.regions, latest);
    }
  }
  return rocksdb::Status::OK();
}
// The parallel scan's keys go to the new index in key order: part 0's,
// then part 1's, and so on, whatever thread scanned them. So the index is
// the one a single scan builds, bit for bit, for any thread count (the
// kernel's d-left placement depends on insertion order; test
// LiveKeyDBWorkload.ParallelScanEqualsOneThreadBitForBit), and no two threads
// ever insert at once (the index's writer lock is never contended). A
// thread scanning the cursor part (the lowest one not yet inserted)
// inserts its batches as it goes, as a single scan does; the others queue
// theirs, at most kMaxQueuedHashes hashes in all (then they wait for the
// cursor), and whoever finds the cursor's
// queue non-empty with no insert in progress inserts it. Every queued
// batch is inserted: a push and the end of a drain both hold mu_, so a
// batch pushed after the drain checked the queue is drained by its
// pusher.
class OrderedScanSink {
 public:
  static constexpr uint64_t kMaxQueuedHashes = uint64_t{1} << 22;  // 32 MiB

  // `inserted(n)` after each batch inserted: false aborts the scan.
  OrderedScanSink(size_t parts, LiveKeyIndex* idx, std::function<bool(uint64_t)> inserted)
      : queues_(parts), done_(parts, false), idx_(idx), inserted_(std::move(inserted)) {}

  // Part p's next batch (taken; `*batch` is left empty). False once the
  // scan failed or was aborted.
  bool Push(size_t p, std::vector<uint64_t>* batch) {
    std::unique_lock<std::mutex> l(mu_);
    // The cursor's thread waits only while another thread inserts (which
    // drains the cursor's queue and then wakes it), so the queues hold at
    // most kMaxQueuedHashes plus a batch per thread.
    cv_.wait(l, [&] { return failed_ || queued_ < kMaxQueuedHashes || (p == cursor_ && !inserting_); });
    if (failed_) return false;
    queued_ += batch->size();
    queues_[p].push_back(std::move(*batch));
    batch->clear();
    Drain(&l);
    return !failed_;
  }
  void Done(size_t p) {
    std::unique_lock<std::mutex> l(mu_);
    done_[p] = true;
    Drain(&l);
  }
  // After every part is Done: OK when every key was inserted.
  rocksdb::Status Finish() {
    std::unique_lock<std::mutex> l(mu_);
    Drain(&l);
    if (status_.ok() && cursor_ != queues_.size()) status_ = rocksdb::Status::Corruption("LiveKeyDB: a scan part was not inserted");
    return status_;
  }
  void Fail(const rocksdb::Status& s) {
    std::lock_guard<std::mutex> l(mu_);
    if (!failed_) status_ = s;
    failed_ = true;
    cv_.notify_all();
  }

 private:
  void Drain(std::unique_lock<std::mutex>* l) {
    if (inserting_) return;
    inserting_ = true;
    while (!failed_ && cursor_ < queues_.size()) {
      if (queues_[cursor_].empty()) {
        if (!done_[cursor_]) break;
        ++cursor_;
        cv_.notify_all();
        continue;
      }
      std::vector<uint64_t> b = std::move(queues_[cursor_].front());
      queues_[cursor_].pop_front();
      queued_ -= b.size();
      cv_.notify_all();
      l->unlock();
      results_.resize(b.size());
      rocksdb::Status s = idx_->InsertBatch(b.data(), b.size(), results_.data());
      if (s.ok() && !inserted_(b.size())) s = rocksdb::Status::Aborted("LiveKeyDB: closing");
      l->lock();
      if (!s.ok() && !failed_) {
        status_ = s;
        failed_ = true;
      }
    }
    inserting_ = false;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<std::vector<uint64_t>>> queues_;
  std::vector<bool> done_;
  size_t cursor_ = 0;
  uint64_t queued_ = 0;
  bool inserting_ = false, failed_ = false;
  rocksdb::Status status_;
  std::vector<OpResult> results_;  // the inserting thread's
  LiveKeyIndex* idx_;
  std::function<bool(uint64_t)> inserted_;
};
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
// RebuildStorm.RebuildsAreBoundedByTheWrites). The sizing grows by at least
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
  if (file_load_pending) {  // (the first build after a background Open reads the file for all)
#ifdef DLCBF_TESTING
    while (internal::GetLiveKeyRebuildPauseForTesting() && !closing.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
#endif
    file_load_pending = false;
    std::vector<CfState*> loaded;
    LoadFromFile(&loaded, /*deferred=*/true);
  }
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
    // Its unchecked copies are not keys (at most that many over-counts).
    basis = old->entries() - std::min(old->entries(), old->unchecked());
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
  if (s.ok() && !from_checkpoint && cf->counts_regions()) fresh->AttachRegionCounts();
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
  // The full scan's parts, kPartsPerThread per rebuild_scan_threads (so a
  // thread that ends first takes another: even work), part p covering
  // [split p-1, split p): ScanSplits; one iterator each, created with every
  // stripe held, so they read one sequence number.
  constexpr uint32_t kPartsPerThread = 4;
  const std::vector<std::string> splits =
      opt.rebuild_scan_threads > 1 ? ScanSplits(cf, std::min<uint32_t>(64, kPartsPerThread * opt.rebuild_scan_threads))
                                   : std::vector<std::string>();
  const size_t parts = splits.size() + 1;
  const size_t threads = std::min<size_t>(parts, opt.rebuild_scan_threads);
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
      // (At or past the iterators' sequence number: LiveRegionCounts::built_at.)
      if (fresh->mutable_region_counts() != nullptr) {
        fresh->mutable_region_counts()->set_built_at(base->GetLatestSequenceNumber());
      }
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
    if (cf->counts_regions()) fresh->AttachRegionCounts();
  }

  cf->scanned.store(0, std::memory_order_relaxed);
  if (!its.empty() && s.ok()) {
    std::atomic<uint64_t> total{0};
    auto last_log = std::chrono::steady_clock::now();
    std::mutex log_mu;
    OrderedScanSink sink(parts, fresh.get(), [&](uint64_t step) {
      const uint64_t now_total = total.fetch_add(step) + step;
      cf->scanned.store(now_total, std::memory_order_relaxed);
      // Progress: each rebuild_progress_interval keys, and every 10 s.
      bool crossed = now_total / opt.rebuild_progress_interval != (now_total - step) / opt.rebuild_progress_interval;
      if (!crossed && SecondsSince(last_log) >= 10.0) crossed = true;
      if (crossed) {
        std::lock_guard<std::mutex> l(log_mu);
        last_log = std::chrono::steady_clock::now();
        rocksdb::Info(log, "LiveKeyDB: rebuilding '%s': %" PRIu64 " keys scanned, %.1f s", cf->name.c_str(),
                      now_total, SecondsSince(t0));
      }
      return !closing.load(std::memory_order_relaxed);  // Close aborts the scan at once
    });
    std::atomic<size_t> next_part{0};
    const bool counts_regions = fresh->region_counts() != nullptr;
    auto scan = [&](size_t p) {
      const auto part_t0 = std::chrono::steady_clock::now();
      Iterator* it = its[p].get();
      if (p > 0) {
        it->Seek(lower[p]);
      } else {
        it->SeekToFirst();
      }
      constexpr size_t kScanBatch = 1024;
      std::vector<uint64_t> batch;
      batch.reserve(kScanBatch);
      uint64_t mine = 0;
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
        if (counts_regions) fresh->CountRegions(RegionsOf(cf, it->key()));
        if (batch.size() == kScanBatch) {
          mine += batch.size();
          going = sink.Push(p, &batch);
          batch.reserve(kScanBatch);
        }
      }
      if (!going) return;
      mine += batch.size();
      if (!batch.empty() && !sink.Push(p, &batch)) return;
      if (!it->status().ok()) {
        sink.Fail(it->status());
        return;
      }
      sink.Done(p);
      if (parts > 1) {
        rocksdb::Info(log, "LiveKeyDB: rebuilding '%s': scan part %zu of %zu: %" PRIu64 " keys in %.3f s",
                      cf->name.c_str(), p + 1, parts, mine, SecondsSince(part_t0));
      }
    };
    auto worker = [&]() {
      for (size_t p = next_part.fetch_add(1); p < parts; p = next_part.fetch_add(1)) scan(p);
    };
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < threads; ++t) {
      // A thread that cannot start (the process is at its thread limit)
      // leaves its parts to the others: the scan is slower, never wrong,
      // and no exception leaves LiveKeyDB.
      try {
        helpers.emplace_back(worker);
      } catch (const std::system_error& e) {
        rocksdb::Warn(log, "LiveKeyDB: rebuilding '%s': %zu scan threads of %zu started (%s)", cf->name.c_str(),
                      helpers.size() + 1, threads, e.what());
        break;
      }
    }
    worker();
    for (std::thread& h : helpers) h.join();
    s = sink.Finish();
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
    std::vector<CfState::Delta> chunk;
    {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      if (cf->delta.size() <= kPausedDeltas) break;
      chunk.swap(cf->delta);
    }
    deltas += chunk.size();
    s = ReplayDeltas(fresh.get(), chunk, LatestForErase(fresh.get()));
  }

  std::unique_ptr<LiveKeyIndex> retired;
  uint64_t pause_deltas = 0;
  LockAll();
  const auto p0 = std::chrono::steady_clock::now();
  if (s.ok()) {
    std::vector<CfState::Delta> log_copy;
    {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      log_copy.swap(cf->delta);
    }
    deltas += log_copy.size();
    pause_deltas = log_copy.size();
    s = ReplayDeltas(fresh.get(), log_copy, LatestForErase(fresh.get()));
  }
  if (s.ok()) {
    std::lock_guard<std::mutex> sl(swap_mu);
    retired = std::move(cf->owned);
    cf->owned = std::move(fresh);
    // The serial first: a reader that finds the new index finds the new
    // serial too (Rep::PlanSeek: an iterator made before the swap must
    // not use the new index's prefix counts).
    cf->serial.fetch_add(1, std::memory_order_seq_cst);
    cf->active.store(cf->owned.get(), std::memory_order_seq_cst);
    cf->scanned.store(keys, std::memory_order_relaxed);
    // Complete now: readers may use it (the stand-in never served them).
    cf->serving.store(true, std::memory_order_release);
  }
  cf->rebuilding.store(false);
  {
    std::lock_guard<std::mutex> l(cf->delta_mu);
    std::vector<CfState::Delta>().swap(cf->delta);
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
