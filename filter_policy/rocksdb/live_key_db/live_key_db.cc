// LiveKeyDB: a StackableDB with one counting filter per column family over
// the live user keys; this file holds Open/Close and the public writes
// (reads: reads.cc; iterators: live_iterator.cc).
// Contract: include/dlcbf/rocksdb/live_key_db.h. The other parts: rep.h (the
// Rep: state and per-key write paths, composed of the parts below),
// stripes.h (per-key locks, known key states), checker.h/.cc (deferred
// liveness checks), live_key_index.h, epochs.h, rebuild.cc (scans and the
// swap), background.cc (the rebuild and checkpoint thread), checkpoint.cc
// (checkpoints and their replay after a crash), persistence.cc (file
// format, Close), index_load.cc (load checks), write_batch.cc, ingest.cc,
// column_families.cc, stats.cc (statistics, properties, the cache
// charge), testing_hooks.cc (test builds' fault hooks).
//
// Design note
//   Index. Per column family a thread-safe kernel (LiveKeyIndexOptions::
//   kernel). kDense (default): a DenseDLeftFilter, d = 2, 8-bit class,
//   sized by bits_per_key (12: load 512 / (48 * 12) = 0.89, predicted FPR
//   2 a 48 / (80 * 255) = 0.42 %, Bonomi et al., Claim 3); a negative
//   lookup reads two lines. kFast: a FastDLeftFilter (D = 2) at
//   min(sizing_load, 0.80): 16-bit cells (13-bit remainder, 2-bit
//   counter), a 1/8 spare area, 24 bits per key at 0.75, predicted FPR
//   32 a / (4 * 8191); one line per lookup (two when its bucket spilled).
//   The dense kernel halves the memory for a higher FPR and a second line
//   on misses (tools/bench/live_key_bench prints both kernels' figures).
//   Readers are lock-free: both kernels validate a negative answer against
//   per-stripe sequence numbers (their tests race this, with negative
//   controls).
//
//   Past capacity, without a table copy on a writer. An automatic rebuild
//   starts at rebuild_at_capacity (0.85) of what the kernel holds at its
//   MaxLoad (dense 8-bit class at 12 bits/key: 0.93 x 48 slots x blocks,
//   about 1.125 x sized_for; fast: 0.80 of its cells), or past
//   auto_rebuild_drift x sized_for, whichever comes first, so a bigger
//   index is normally swapped in before the kernel fills (the first moves
//   come after MaxLoad, the first overflow later still). If keys outrun the
//   rebuild anyway:
//   - kDense: the kernel is wrapped in an ElasticFilter with
//     migrate_on_overflow = false, so a key that finds both candidate
//     blocks full gets kOverflow and goes to the index's stash
//     (live_key_index.h): a fast-kernel ElasticFilter sized for 1/16 of the
//     kernel's capacity, created on the first overflow, which itself
//     migrates to an ABF in steps if it fills. Readers probe it only when
//     the kernel says no and it exists. (Before: the dense kernel migrated
//     its whole table to the ABF on the overflowing writer, holding its
//     mutex: ~50 ns per stored fingerprint, 50 ms at 1M keys.)
//   - kFast: an ElasticFilter that migrates to its ABF in steps from
//     MaxLoad on: each insert maps 16 KiB of the ABF or copies one group
//     of 16 blocks and mirrors itself and each erase into the ABF when its
//     block is copied; readers keep the complete dlCBF until one pointer
//     publish. An insert that overflows during the steps copies the rest
//     at once (rare: the steps take blocks / 16 inserts from 0.80; overflow
//     comes above ~0.85).
//   Either way the index counts are still exact (a multiset over both
//   parts under one fingerprint identity: the stash takes a function of
//   the kernel's true fingerprint, never the raw key hash; the argument is
//   at LiveKeyIndex::Erase), the index is not persisted in that state, and
//   a rebuild is queued at once. A rebuild sizes its index below its own
//   trigger (Rep::CreateBelowTrigger), so it never queues the next at once.
//
//   Exactness. Invariant: live(k) => count(k) >= 1 in the index, where
//   count(k) = inserts - erases done on behalf of k. Put/Merge of a key
//   the index does not hold inserts BEFORE the base write (k cannot be
//   live). For a key the index holds there are two ways, both under k's
//   stripe, so nothing else changes k meanwhile:
//   - Synchronous (queue full, more writes in progress than
//     max_deferring_writers, or defer_liveness_checks off): a liveness
//     read decides; Put/Merge insert only when k is not live, Delete
//     erases only when k was live, AFTER the base write succeeded.
//   - Deferred (the default; checker.h/.cc, CheckSnapshot/QueueCheck/RunChecks/ApplyCheck).
//     Put/Merge insert blindly BEFORE the write; Delete keeps the copy. A
//     snapshot S that shows k as just before the write goes with (k, hash,
//     the family's generation) into a FIFO queue; the checker thread reads
//     k at S, in one MultiGet with up to 63 other queued checks of the
//     family that share S (a writer whose check finds the queue full
//     reads synchronously: stats' queue_full_fallbacks). S is shared: every stripe records the DB's latest sequence
//     number when it is released, and the current shared snapshot serves a
//     write iff its sequence number is at least its stripe's (every earlier
//     write to k is in it); else a new one replaces it. Changes that bypass
//     LiveKeyDB (compaction filters, TTL) only make k not live, leaving its
//     copy stale, so an erase they justify is harmless. If k was live at
//     S, the write's copy is a second one (Put) or k's copy belongs to a
//     now-deleted key (Delete): erase one. Each erase removes a copy k
//     itself added, so it never takes another key's evidence, whatever
//     ran in between (erases are count decrements: they commute). A
//     rebuild bumps the generation with every stripe held when it fixes
//     its scan point; a check of an older generation erases nothing, since
//     the scan already counted k exactly (the copy it would take back is
//     not in the new index) -- unless that rebuild then fails or is
//     aborted: a check still erases from the index it was queued against
//     while that index is active (CfState::serial, bumped at each swap),
//     without a delta entry, so the old index stays exact (and so does the
//     file Close saves). A failed write queues the check only if k is
//     live afterwards (a failed Put cannot make k not live; not live =>
//     undo at once), and a failed Delete queues none (its copy stays).
//     A batch (write_batch.cc) does the same per key of its overlay: a key
//     live after the batch gets a blind copy, a key it deletes keeps its
//     copy, and each gets a check, queued after the batch's write.
//   - Unchecked (rep.h, TakeUncheckedCopy; LiveKeyIndexOptions::
//     unchecked_copy_budget). With more writes in progress than
//     max_deferring_writers, every core is writing and a read is the
//     write's cost (a data block per overwrite once the LSM outgrows the
//     block cache: about 7 us at 5.2M keys over a 32 MiB cache), on the
//     write path; a rebuild's in-order scan (7M keys/s with 2 threads on
//     a quiet DB, 1.6M keys/s beside busy writers) pays for a budget of
//     them at once, off the write path. With a core free, the checker's
//     reads cost the writer less than that scan would (docs/LIVE_KEY_DB.md,
//     "Tried and not kept"), so only busy writes take them. A Put/Merge of
//     a k the index holds, state unknown, then inserts BEFORE the write
//     without reading or queueing a check: live(k) => count(k) >= 1 holds
//     whatever k was (a second copy of a live k is an over-count, a stale
//     entry once k is deleted). Nothing takes the copy back but a rebuild,
//     whose scan counts k exactly; so an index takes at most budget x
//     sized_for of them (the write that takes the last schedules the
//     rebuild, and writes read until it swaps in), none while a rebuild
//     runs (its delta log would carry the copy into the new index, whose
//     budget starts at 0) or while the index is built at Open, none
//     without automatic rebuilds or under 64 copies of budget. The rebuild
//     sizes for entries - unchecked, not for the inflated count (an
//     undercount by the copies that were a dead k's only one, about the
//     FPR of them; the triggers keep room). A fingerprint takes unchecked
//     copies only while it has 1-3 copies (writers of colliding keys in
//     other stripes may pass that by one each: the stash takes any
//     overflow, exactly). The copy
//     leaves a kLive record with no pending check (Stripes::NoteUnchecked,
//     a few per stripe): a hot key adds one copy, not one per write; a
//     rebuild's scan point drops such records with the others. A crash or
//     Close keeps the over-counts in the saved index (exact again at its
//     next rebuild) but not the count of them: a reopened index starts
//     with a fresh budget, and the capacity and drift triggers bound what
//     accumulates across sessions.
//   - Known (stripes.h, KnownKey): while a check of k is pending, the stripe
//     remembers what k's own writes made of it, kLive (one copy counts it
//     once the pending checks ran) or kDead (none). Each check erases one
//     copy iff k was live just before its own write, whatever came after,
//     so the counts add up: a Put on kLive does nothing (the copy is
//     there), a Put on kDead inserts, a Delete on kLive erases after the
//     write, a Delete on kDead does nothing; none reads or queues a check.
//     Only a key's first write while no check of it is pending is blind,
//     so a key holds at most two copies however hot it is (unchecked
//     copies aside, bounded by their budget; see Unchecked) (before: one
//     copy per overwrite until the checker caught up; the dense kernel's
//     two candidate blocks hold 96). kLive is set only when the copy is
//     certain; a failed write leaves kUnknown or a state that over-counts;
//     range deletions, ingestions, clips and untrusted SingleDeletes reset
//     the states they may void, and a rebuild forgets its family's states
//     when it fixes its scan point (rebuild.cc: a record never outlives the
//     index its claim was about); a kLive record whose copy the index does
//     not hold is void (Upsert).
//   Why this option over the others weighed in issue #23: batched MultiGet
//   liveness reads still put a read on the write path; proving "not live"
//   from the memtable and SST filters helps only absent keys, which the
//   index already answers; a snapshot read is exact and costs the writer a
//   queue push and, now and then, a GetSnapshot (a DB-mutex acquisition). The cost
//   moves to the checker thread (one Get per check), which competes for
//   cores: live_key_bench reports both.
//   Hence each live key is counted once when the queue is empty, erase
//   never takes away another key's evidence, and stale entries (count
//   without liveness) can only add false positives. A failed liveness read
//   is treated as "not live" for Put (insert) and "keep" for Delete and
//   for checks: the safe side. tests/live_key_db_oracle_test.cc checks
//   both paths under concurrency, each with a negative control.
//
//   Readers and memory reclamation. Readers never lock: they enter a read
//   section (common/reader_sections.h), load the column-family table and
//   the index pointer, probe, and leave. Writers probe inside a section
//   too. Whoever retires memory (rebuild swap, migrated dlCBF, dropped family,
//   table change) publishes the replacement and waits for a grace period.
//
//   Rebuild without losing updates (rebuild.cc). With every stripe held:
//   create the scan iterator (its sequence number is fixed at creation) and
//   turn on the family's delta log. Without locks: scan keys into a new
//   index sized for max(expected_keys, headroom x entries); writers keep
//   updating the old index and append every index insert/erase (a hash and
//   a sign) to the log. With every stripe held again: replay the log into
//   the new index and publish it. Every logged change is relative to a
//   state after the iterator's sequence number and per key in stripe
//   order, so the new index ends exactly as one built at the swap. Before
//   pausing, the log is replayed in up to 16 rounds without locks (the new
//   index is the rebuild's own; writers keep appending) until at most 4096
//   entries are left. Writers pause twice: for the stripe acquisitions,
//   and for that last replay and the swap. Close aborts a running scan.
//
//   Persistence: see persistence.cc; checkpoints: checkpoint.cc. Costs:
//   tools/bench/live_key_bench, tools/bench/recovery_bench and
//   docs/LIVE_KEY_DB.md.
#include "dlcbf/rocksdb/live_key_db.h"

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
#include <utility>
#include <vector>

#include "dlcbf/internal/rocksdb_compat.h"
#include "filter_policy/rocksdb/live_key_db/compaction_filter_guard.h"
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "rocksdb/listener.h"

namespace dlcbf {



rocksdb::Status LiveKeyDB::Rep::Init(const std::vector<ColumnFamilyHandle*>& handles) {
  // Everything RocksDB recovered is what the index is built or loaded
  // for; from here on every sequence number must be a LiveKeyDB write's.
  open_seq = base->GetLatestSequenceNumber();
  ledger.Start(open_seq);
  {
    std::lock_guard<std::mutex> l(cf_mu);
    for (ColumnFamilyHandle* h : handles) AddFamily(h);
    PublishTableLocked();
  }
  // A new DB (nothing ever written) has nothing to scan: built at once.
  const bool background = opt.background_open_build && base->GetLatestSequenceNumber() > 0;
  // With the builds in the background, so is the load of a large index
  // file or index (a 300 MB index took 4-5 s of Open: docs/LIVE_KEY_DB.md,
  // "A 300 MB index"): the first build reads it (Rebuild,
  // LoadFromFile(deferred)). A smaller one is loaded here and serves at
  // once when it is exact.
  std::vector<CfState*> loaded;
  uint64_t file_bytes = 0;
  const bool large = env->GetFileSize(IndexPath(), &file_bytes).ok() &&
                     (file_bytes >= kDeferredLoadBytes ||
                      static_cast<double>(opt.expected_keys) * opt.bits_per_key / 8 >= kDeferredLoadBytes);
  // (An index file carries no live-region counts: with them, every index
  // is built by a scan.)
  const bool load = opt.persist_index && !CountsRegions();
  if (opt.persist_index && CountsRegions()) {
    rocksdb::Info(log, "LiveKeyDB: live-region counts: the index file is not loaded; every index is built by a scan");
  }
  if (load && background && large) {
    std::lock_guard<std::mutex> rl(rebuild_mu);
    file_load_pending = true;
  } else if (load) {
    LoadFromFile(&loaded);
  }
  if (!file_load_pending) world->StopRemembering();  // (no load needs the compactions since Open)
  std::vector<CfState*> todo;
  {
    std::lock_guard<std::mutex> l(cf_mu);
    for (auto& kv : cfs) {
      CfState* cf = kv.second.get();
      if (!cf->indexed) {
        rocksdb::Info(log, "LiveKeyDB: column family '%s' not indexed: %s", cf->name.c_str(),
                      cf->bypass_reason.c_str());
      } else if (!cf->owned) {
        todo.push_back(cf);  // (a checkpoint, if loaded, is the build's start)
      }
    }
  }
  const char* why = file_load_pending ? "open: the index file is read in the background"
                    : loaded.empty()    ? "open: no usable index file"
                                        : "open: not in the index file";
  for (CfState* cf : todo) {
    if (background) {
      // An empty stand-in takes the writers' updates until the build swaps
      // the real index in; readers bypass it (CfState::serving).
      rocksdb::Status s = CreateEmptyIndex(cf, /*empty_family=*/false);
      if (!s.ok()) return s;
      cf->serving.store(false, std::memory_order_release);
      continue;
    }
    // (Not serving until built: Rebuild then starts from a loaded
    // checkpoint, if any, and sizes by RocksDB's estimate.)
    cf->serving.store(false, std::memory_order_release);
    rocksdb::Status s = Rebuild(cf, why, /*automatic=*/false);
    if (!s.ok()) return s;
  }
  // (The file stays: from here on it is a checkpoint. A later crash loads
  // it and reads the keys written since; Close and checkpoints replace it.)
  UpdateCacheCharge();
  // (No exception leaves LiveKeyDB: a thread that cannot start fails the
  // Open, whose error path stops whichever one did.)
  try {
    bg = std::thread([this] { BackgroundLoop(); });
    checker = std::thread([this] { CheckLoop(); });
  } catch (const std::system_error& e) {
    return rocksdb::Status::Aborted("LiveKeyDB: cannot start its background threads", e.what());
  }
  {
    // Armed with the table files the index was built or loaded for (the
    // closed world: world_watch.h).
    live_key::WorldWatch::Hooks hooks;
    if (opt.persist_index && opt.checkpoint_interval_seconds > 0) hooks.on_flush = [this] { RequestCheckpoint(); };
    hooks.on_unseen = [this](const std::string& change) { MarkUntrusted(change); };
    hooks.on_suspect = [this] { ForgetIndexFile(); };
    hooks.indexed = [this](const std::string& name) {
      std::lock_guard<std::mutex> l(cf_mu);
      for (auto& kv : cfs) {
        if (kv.second->name == name && !kv.second->dropped) return kv.second->indexed;
      }
      return false;
    };
    if (!world->Attach(std::move(hooks), base)) {
      return rocksdb::Status::Aborted("LiveKeyDB: cannot start the world watch's thread");
    }
  }
  if (background) {
    for (CfState* cf : todo) {
      rocksdb::Info(log, "LiveKeyDB: the index of '%s' is built in the background (%s); reads bypass it until then",
                    cf->name.c_str(), why);
      ScheduleRebuild(cf);
    }
  }
  return rocksdb::Status::OK();
}


// ---------------------------------------------------------------------------
// LiveKeyDB
// ---------------------------------------------------------------------------
LiveKeyDB::LiveKeyDB(DB* base, const LiveKeyIndexOptions& index_options)
    : StackableDB(base), rep_(new Rep(base, index_options)) {}

LiveKeyDB::~LiveKeyDB() {
  if (!rep_->closed) Close().PermitUncheckedError();
}

rocksdb::Status LiveKeyDB::Open(const rocksdb::Options& options, const LiveKeyIndexOptions& index_options,
                       const std::string& path, LiveKeyDB** dbptr) {
  if (dbptr == nullptr) return rocksdb::Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  std::vector<ColumnFamilyDescriptor> cfds{
      ColumnFamilyDescriptor(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options))};
  std::vector<ColumnFamilyHandle*> handles;
  LiveKeyDB* db = nullptr;
  rocksdb::Status s = Open(rocksdb::DBOptions(options), index_options, path, cfds, &handles, &db);
  if (!s.ok()) return s;
  for (ColumnFamilyHandle* h : handles) db->GetBaseDB()->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  *dbptr = db;
  return s;
}

rocksdb::Status LiveKeyDB::Open(const rocksdb::DBOptions& db_options, const LiveKeyIndexOptions& index_options,
                       const std::string& path,
                       const std::vector<ColumnFamilyDescriptor>& column_families,
                       std::vector<ColumnFamilyHandle*>* handles, LiveKeyDB** dbptr) {
  if (dbptr == nullptr) return rocksdb::Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  if (handles == nullptr) return rocksdb::Status::InvalidArgument("handles must not be null");
  return OpenWith(
      db_options, index_options, column_families, handles,
      [&](const rocksdb::DBOptions& opts, const std::vector<ColumnFamilyDescriptor>& cfds, DB** base) {
        return compat::OpenDB(opts, path, cfds, handles, base);
      },
      dbptr);
}

rocksdb::Status LiveKeyDB::OpenWith(const rocksdb::DBOptions& db_options, const LiveKeyIndexOptions& index_options,
                                    const std::vector<ColumnFamilyDescriptor>& column_families,
                                    std::vector<ColumnFamilyHandle*>* handles, const OpenBase& open_base,
                                    LiveKeyDB** dbptr) {
  rocksdb::Status s = index_options.Validate();
  if (!s.ok()) return s;
  // The listener that accounts for every table file (world_watch.h).
  rocksdb::DBOptions opts = db_options;
  std::shared_ptr<live_key::WorldWatch> world = std::make_shared<live_key::WorldWatch>();
  opts.listeners.push_back(world);
  std::vector<ColumnFamilyDescriptor> cfds = column_families;
  for (ColumnFamilyDescriptor& d : cfds) live_key::GuardCompactionFilters(&d.options, world);
  DB* base = nullptr;
  s = open_base(opts, cfds, &base);
  if (!s.ok()) return s;
  std::unique_ptr<LiveKeyDB> db(new LiveKeyDB(base, index_options));
  db->rep_->world = world;
  s = db->rep_->Init(*handles);
  if (!s.ok()) {
    db->rep_->StopBackground();
    if (db->rep_->world) db->rep_->world->Detach();
    db->rep_->closed = true;
    for (ColumnFamilyHandle* h : *handles) base->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    handles->clear();
    base->Close().PermitUncheckedError();
    return s;
  }
  *dbptr = db.release();
  return s;
}

const LiveKeyIndexOptions& LiveKeyDB::index_options() const { return rep_->opt; }

rocksdb::Status LiveKeyDB::Close() {
  Rep& r = *rep_;
  if (r.closed) return rocksdb::Status::OK();
  r.StopBackground();
  if (r.opt.persist_index) {
    rocksdb::Status ps = r.Persist();
    if (!ps.ok()) {
      rocksdb::Warn(r.log, "LiveKeyDB: could not persist the index (the next Open rebuilds): %s",
                    ps.ToString().c_str());
    }
  }
  // Watched until the file is written: a change during Persist (a
  // compaction it waits for, a filter's decision) removes the file.
  if (r.world) r.world->Detach();
  {
    std::lock_guard<std::mutex> l(r.cf_mu);
    for (auto& kv : r.cfs) {
      CfState* cf = kv.second.get();
      if (cf->handle_released && cf->handle != nullptr) {
        db_->DestroyColumnFamilyHandle(cf->handle).PermitUncheckedError();
        cf->handle = nullptr;
      }
    }
  }
  {
    std::lock_guard<std::mutex> l(r.charge_mu);
    r.charge.reset();  // the indexes' memory is released with the DB
    r.charged_bytes.store(0);
  }
  r.closed = true;
  return db_->Close();
}

rocksdb::Status LiveKeyDB::Resume() { return db_->Resume(); }

rocksdb::Status LiveKeyDB::CompactFiles(const rocksdb::CompactionOptions& compact_options,
                                        ColumnFamilyHandle* column_family,
                                        const std::vector<std::string>& input_file_names, const int output_level,
                                        const int output_path_id, std::vector<std::string>* const output_file_names,
                                        rocksdb::CompactionJobInfo* compaction_job_info) {
  std::vector<uint64_t> inputs;
  for (const std::string& name : input_file_names) inputs.push_back(live_key::WorldWatch::FileNumber(name));
  rep_->world->ExpectCompaction(inputs);
  std::vector<std::string> outputs;
  rocksdb::Status s = db_->CompactFiles(compact_options, column_family, input_file_names, output_level,
                                        output_path_id, output_file_names != nullptr ? output_file_names : &outputs,
                                        compaction_job_info);
  // (A trivial move's file is its own output: it stays, unexplained if it
  // goes later.)
  for (const std::string& name : output_file_names != nullptr ? *output_file_names : outputs) {
    const uint64_t n = live_key::WorldWatch::FileNumber(name);
    inputs.erase(std::remove(inputs.begin(), inputs.end(), n), inputs.end());
  }
  rep_->world->CompactionDone(inputs, s.ok());
  return s;
}

rocksdb::Status LiveKeyDB::RebuildIndex(ColumnFamilyHandle* column_family) {
  std::vector<CfState*> todo;
  {
    std::lock_guard<std::mutex> l(rep_->cf_mu);
    for (auto& kv : rep_->cfs) {
      CfState* cf = kv.second.get();
      if (cf->dropped) continue;
      if (column_family != nullptr && cf->id != column_family->GetID()) continue;
      if (!cf->indexed) {
        if (column_family != nullptr) {
          return rocksdb::Status::NotSupported("LiveKeyDB: column family is not indexed", cf->bypass_reason);
        }
        continue;
      }
      todo.push_back(cf);
    }
  }
  if (column_family != nullptr && todo.empty()) {
    return rocksdb::Status::InvalidArgument("LiveKeyDB: unknown column family");
  }
  for (CfState* cf : todo) {
    rocksdb::Status s = rep_->Rebuild(cf, "requested", /*automatic=*/false);
    if (!s.ok()) return s;
    rep_->MaybeReschedule(cf);
  }
  return rocksdb::Status::OK();
}

bool LiveKeyDB::WaitForBackgroundRebuilds(uint64_t timeout_ms) {
  std::unique_lock<std::mutex> l(rep_->bg_mu);
  return rep_->bg_idle_cv.wait_for(l, std::chrono::milliseconds(timeout_ms),
                                   [&] { return rep_->queue.empty() && !rep_->bg_busy; });
}

bool LiveKeyDB::WaitForDeferredChecks(uint64_t timeout_ms) {
  std::unique_lock<std::mutex> l(rep_->check_mu);
  return rep_->check_idle_cv.wait_for(l, std::chrono::milliseconds(timeout_ms),
                                      [&] { return rep_->checks.empty() && !rep_->check_busy; });
}


// ---- writes ------------------------------------------------------------------------
// Every write reaches RocksDB as one WriteBatch through Rep::LedgerWrite
// (the batch DB::Put and its siblings would build), so the ledger learns the
// sequence numbers it consumed (seq_ledger.h). A null handle is the default
// family, as in RocksDB.

namespace {
rocksdb::Status TimestampOnIndexed(const ColumnFamilyHandle* h) {
  return rocksdb::Status::InvalidArgument("LiveKeyDB: column family '" + h->GetName() +
                                 "' is indexed and has no user-defined timestamps");
}
// One batch, filled by `fill`, written through the ledger, as DB::Put and
// its siblings build it. A call without a timestamp on a family with
// timestamps is refused as DBImpl refuses it (WriteBatch alone would take
// the key's last bytes for one); `with_ts` calls size the batch for the
// default family's timestamps, as DB::Put(..., ts, ...) does.
template <class Fill>
rocksdb::Status WriteOne(LiveKeyDB::Rep* r, const WriteOptions& o, const ColumnFamilyHandle* cf, bool with_ts,
                         Fill&& fill) {
  if (!with_ts && cf->GetComparator()->timestamp_size() != 0) {
    return rocksdb::Status::InvalidArgument("Cannot call this method on column family " + cf->GetName() +
                                            " that enables timestamp");
  }
  WriteBatch b(0, 0, o.protection_bytes_per_key,
               with_ts ? r->base->DefaultColumnFamily()->GetComparator()->timestamp_size() : 0);
  rocksdb::Status s = fill(&b);
  if (!s.ok()) return s;
  return r->LedgerWrite(o, &b);
}
}  // namespace

rocksdb::Status LiveKeyDB::Put(const WriteOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, const Slice& value) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  return rep_->Upsert(column_family, key, [&] {
    return WriteOne(rep_.get(), options, column_family, false, [&](WriteBatch* b) { return b->Put(column_family, key, value); });
  });
}

rocksdb::Status LiveKeyDB::Put(const WriteOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, const Slice& ts, const Slice& value) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return WriteOne(rep_.get(), options, column_family, true,
                  [&](WriteBatch* b) { return b->Put(column_family, key, ts, value); });
}

rocksdb::Status LiveKeyDB::PutEntity(const WriteOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, const rocksdb::WideColumns& columns) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  return rep_->Upsert(column_family, key, [&] {
    return WriteOne(rep_.get(), options, column_family, false,
                    [&](WriteBatch* b) { return b->PutEntity(column_family, key, columns); });
  });
}

rocksdb::Status LiveKeyDB::Merge(const WriteOptions& options, ColumnFamilyHandle* column_family,
                        const Slice& key, const Slice& value) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  return rep_->Upsert(column_family, key, [&] {
    return WriteOne(rep_.get(), options, column_family, false, [&](WriteBatch* b) { return b->Merge(column_family, key, value); });
  });
}

rocksdb::Status LiveKeyDB::Merge(const WriteOptions& options, ColumnFamilyHandle* column_family,
                        const Slice& key, const Slice& ts, const Slice& value) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  // (WriteBatch has no Merge with a timestamp before RocksDB 8.x: RocksDB's
  // own call, its consumption unknown to the ledger: if it consumed
  // numbers they show as a gap, and the indexes are rebuilt.)
  rep_->ledger.Begin();
  rocksdb::Status s = db_->Merge(options, column_family, key, ts, value);
  rep_->ledger.End(0);  // (consumption unknown: a gap, the safe side)
  return s;
}

rocksdb::Status LiveKeyDB::Delete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                         const Slice& key) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  return rep_->Remove(column_family, key, /*may_erase=*/true, [&] {
    return WriteOne(rep_.get(), options, column_family, false, [&](WriteBatch* b) { return b->Delete(column_family, key); });
  });
}

rocksdb::Status LiveKeyDB::Delete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                         const Slice& key, const Slice& ts) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return WriteOne(rep_.get(), options, column_family, true,
                  [&](WriteBatch* b) { return b->Delete(column_family, key, ts); });
}

rocksdb::Status LiveKeyDB::SingleDelete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                               const Slice& key) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  return rep_->Remove(column_family, key, rep_->opt.trust_single_delete, [&] {
    return WriteOne(rep_.get(), options, column_family, false, [&](WriteBatch* b) { return b->SingleDelete(column_family, key); });
  });
}

rocksdb::Status LiveKeyDB::SingleDelete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                               const Slice& key, const Slice& ts) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return WriteOne(rep_.get(), options, column_family, true,
                  [&](WriteBatch* b) { return b->SingleDelete(column_family, key, ts); });
}

rocksdb::Status LiveKeyDB::DeleteRange(const WriteOptions& options, ColumnFamilyHandle* column_family,
                              const Slice& begin_key, const Slice& end_key) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  WriteBatch batch(0, 0, options.protection_bytes_per_key, 0);
  rocksdb::Status s = batch.DeleteRange(column_family, begin_key, end_key);
  if (!s.ok()) return s;
  return rep_->WriteBatchImpl(options, &batch);
}

rocksdb::Status LiveKeyDB::DeleteRange(const WriteOptions& options, ColumnFamilyHandle* column_family,
                              const Slice& begin_key, const Slice& end_key, const Slice& ts) {
  const auto noted = rep_->NoteWrite(options);
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return WriteOne(rep_.get(), options, column_family, true,
                  [&](WriteBatch* b) { return b->DeleteRange(column_family, begin_key, end_key, ts); });
}

rocksdb::Status LiveKeyDB::Write(const WriteOptions& options, WriteBatch* updates) {
  const auto noted = rep_->NoteWrite(options);
  if (updates == nullptr) return db_->Write(options, updates);
  return rep_->WriteBatchImpl(options, updates);
}

#if DLCBF_ROCKSDB_AT_LEAST(8, 9)
rocksdb::Status LiveKeyDB::PutEntity(const WriteOptions& options, const Slice& key,
                                     const rocksdb::AttributeGroups& attribute_groups) {
  const auto noted = rep_->NoteWrite(options);
  bool any_indexed = false;
  for (const rocksdb::AttributeGroup& ag : attribute_groups) {
    if (rep_->Lookup(ag.column_family()) != nullptr) any_indexed = true;
  }
  // Nothing indexed (or nothing at all): RocksDB's own call, its checks
  // and errors unchanged.
  // Nothing indexed: still one batch through the ledger (WriteBatchImpl
  // writes it as it is), so its sequence numbers are accounted for.
  (void)any_indexed;
  // The batch rocksdb::DB::PutEntity builds (db/db_impl/db_impl_write.cc),
  // applied through the index.
  const rocksdb::Comparator* ucmp = db_->DefaultColumnFamily()->GetComparator();
  WriteBatch batch(/*reserved_bytes=*/0, /*max_bytes=*/0, options.protection_bytes_per_key,
                   ucmp->timestamp_size());
  rocksdb::Status s = batch.PutEntity(key, attribute_groups);
  if (!s.ok()) return s;
  return rep_->WriteBatchImpl(options, &batch);
}
#endif

rocksdb::Status LiveKeyDB::IngestExternalFile(ColumnFamilyHandle* column_family,
                                     const std::vector<std::string>& external_files,
                                     const rocksdb::IngestExternalFileOptions& options) {
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = column_family;
  arg.external_files = external_files;
  arg.options = options;
  return rep_->Ingest({arg});
}

rocksdb::Status LiveKeyDB::IngestExternalFiles(const std::vector<rocksdb::IngestExternalFileArg>& args) {
  return rep_->Ingest(args);
}

#if DLCBF_ROCKSDB_AT_LEAST(11, 5)
rocksdb::Status LiveKeyDB::PrepareFileIngestion(const std::vector<rocksdb::IngestExternalFileArg>& args,
                                                std::unique_ptr<rocksdb::FileIngestionHandle>* handle) {
  return rep_->PrepareIngestion(args, handle);
}

rocksdb::Status LiveKeyDB::CommitFileIngestionHandles(
    std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> handles) {
  return rep_->CommitIngestion(std::move(handles));
}
#endif

#if DLCBF_ROCKSDB_AT_LEAST(8, 3)
rocksdb::Status LiveKeyDB::ClipColumnFamily(ColumnFamilyHandle* column_family, const Slice& begin_key,
                                            const Slice& end_key) {
  rocksdb::Status s = db_->ClipColumnFamily(column_family, begin_key, end_key);
  // Even a failed clip may have deleted keys: their entries are stale
  // (false positives only); a rebuild drops them.
  // What pending checks knew of the family's keys no longer holds for the
  // keys it removed: forgotten (every stripe held), as after a range delete.
  CfState* cf = rep_->Lookup(column_family);
  if (cf != nullptr) {
    {
      Rep::AllStripesGuard all(rep_.get());
      rep_->stripes.ForgetFamily(cf->id);
    }
    rep_->ScheduleRebuild(cf);
  }
  return s;
}
#endif

}  // namespace dlcbf
