// LiveKeyDB: a rocksdb::StackableDB keeping, per column family, a d-left counting Bloom filter over
// the LIVE user keys (the index), so point reads of absent or deleted keys return NotFound without
// touching the LSM tree. Mechanisms, invariants, threat model and their tests: the design note,
// filter_policy/rocksdb/live_key_db/README.md. Figures: docs/LIVE_KEY_DB.md.
//
//   dlcbf::LiveKeyIndexOptions io;
//   io.expected_keys = 10000000;                 // live keys per column family
//   dlcbf::LiveKeyDB* db = nullptr;
//   rocksdb::Status s = dlcbf::LiveKeyDB::Open(options, io, "/path/db", &db);
//   db->Get(ro, "absent", &v);                   // NotFound from the index alone
//   s = db->Close();                             // persists the index
//   delete db;
//
// Promise: a key the base DB holds is never NotFound through LiveKeyDB, whatever runs concurrently,
// fails, crashes or writes behind its back (detected: see the writes below). Not promised: exact
// counts at every moment. A key counted but no longer live (a "stale entry": pending checks,
// unchecked copies, DeleteRange past its scan limit, compaction-filter or TTL removals, untrusted
// SingleDeletes, deletes inside ingested files) costs a false positive until a check or a rebuild.
//
// The index serves Get, GetEntity, MultiGet (every overload), KeyMayExist and a transaction's Get,
// GetForUpdate and MultiGet: "no" is NotFound (KeyMayExist: false) without touching RocksDB;
// "maybe" asks RocksDB. Bypassed (to RocksDB, counted in bypassed_reads): ReadOptions with a
// snapshot, a read_tier other than kReadAllTier, a timestamp or iter_start_ts, or
// ignore_range_deletions; reads asking for timestamps; unindexed families; an index not serving
// yet; any read while the DB may hold a write LiveKeyDB cannot account for. Iterators are
// RocksDB's, their Seeks planned from the live-region counts when those are on (NewIterator);
// GetMergeOperands and MultiGetForUpdate always go to RocksDB.
//
// Indexed: every family opened or created through LiveKeyDB, unless its comparator has user-defined
// timestamps or may call different bytes equal (and trust_comparator is false): such families pass
// through (LiveKeyCfStats::bypass_reason). Each index is rebuilt by a background scan as its keys
// grow, saved by Close and by checkpoints, and loaded by Open.
//
// Thread safety: as rocksdb::DB, any call from any thread, except Close() and the destructor;
// readers never lock or wait. Ownership: a LiveKeyDB owns its base DB; delete it to close (Close()
// first to see the status). Handles are the caller's: DestroyColumnFamilyHandle them (not delete).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <utility>

#include "dlcbf/core/elastic_filter.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/status.h"
#include "rocksdb/utilities/stackable_db.h"
#include "rocksdb/version.h"

// RocksDB >= 9.0: every Get/MultiGet overload is final but the two taking timestamps, through which
// LiveKeyDB then serves its reads (a null timestamp pointer is an ordinary read).
#define DLCBF_ROCKSDB_DB_READS_FINAL (ROCKSDB_MAJOR >= 9)
// RocksDB is release major.minor or newer. Overrides from a release on: ClipColumnFamily 8.3,
// several-export CreateColumnFamilyWithImport 8.4, AttributeGroups PutEntity 8.9, two-phase
// ingestion 11.5. tests/live_key_db_surface_test.py fails when StackableDB forwards a call
// LiveKeyDB neither overrides nor lists as safe to pass through.
#define DLCBF_ROCKSDB_AT_LEAST(major, minor) \
  (ROCKSDB_MAJOR > (major) || (ROCKSDB_MAJOR == (major) && ROCKSDB_MINOR >= (minor)))

namespace rocksdb {
class TransactionDB;
class OptimisticTransactionDB;
struct TransactionDBOptions;
struct OptimisticTransactionDBOptions;
}  // namespace rocksdb

namespace dlcbf {

class LiveKeyTransactions;  // internal (filter_policy/rocksdb/live_key_db/transactions.cc)

// Checked by Open first (Validate): a bad value is InvalidArgument naming the field, nothing
// opened. Side by side: the design note, "Options and what they trade".
struct LiveKeyIndexOptions {
  // Live keys expected per column family; each index is sized for at least this many. [1, 2^40];
  // default 1M. More: fewer rebuilds while the DB grows, for memory from the start.
  uint64_t expected_keys = 1000000;

  // kDense (default): DenseDLeftFilter, bits_per_key bits per sized key, two 64-byte lines per
  // negative lookup, a small stash past capacity. kFast: FastDLeftFilter, 18 / sizing_load bits
  // (24 at 0.75), one line per lookup (two if its bucket spilled), migrating to an ABF in steps
  // past capacity. Else InvalidArgument. kDense: half the memory; kFast: a lower FPR (models: the
  // kernels' headers). Recorded in the index file: a file of the other kernel is rebuilt.
  ElasticKernel kernel = ElasticKernel::kDense;
  // kDense: bits per sized key; what DenseDLeftOptions::ForBitsPerKey accepts (finite, >= 11.47,
  // the 8-bit class at its MaxLoad; 16-bit where it fits). Default 12. More: lower FPR, memory.
  double bits_per_key = 12.0;
  // kFast: the fraction of cells in use at the sized key count. (0, 1], capped at the kernel's
  // MaxLoad (0.80); default 0.75. Higher: less memory, a higher FPR.
  double sizing_load = 0.75;

  // The key hash seed, recorded in the index file (a file of another seed is rebuilt). Any value.
  uint64_t seed = 0x5EEDD1CBF0000001ULL;

  // Counter bits of the autoscaling Bloom filter (ABF) an index migrates to past its dlCBF's
  // capacity. [1, 8]; default 4. Wider: counts saturate later, for memory in that mode.
  uint32_t abf_counter_bits = 4;

  // Background rebuild of an index past this many times the keys it was sized for (or past
  // rebuild_at_capacity, or its dlCBF's capacity). 0 (off) or finite > 1; default 1.5. Lower: a
  // right-sized index sooner, for more scans beside the writers. 0 also disables unchecked copies.
  double auto_rebuild_drift = 1.5;
  // The fraction of the kernel's capacity (about 1.125 x sized_for dense at 12 bits, 1.07 x fast
  // at 0.75) past which that rebuild starts, the rest absorbing the writes during its scan so the
  // kernel never overflows. (0, 1]; default 0.85; only with rebuilds on. Lower: earlier, more.
  double rebuild_at_capacity = 0.85;
  // A rebuild sizes for max(expected_keys, this x the entries then; at Open, x the
  // "rocksdb.estimate-num-keys" property). [1, 1000]; default 1.5. More: fewer rebuilds, memory.
  double rebuild_headroom = 1.5;

  // Striped locks serializing each key's check -> write -> index update. A power of two in
  // [1, 2^20]; default 1024. More: less contention, fewer known-key records per stripe; for
  // memory, more check snapshots and longer every-stripe pauses.
  uint32_t lock_stripes = 1024;

  // DeleteRange erases at most this many live keys of its range from the index (a scan, every
  // writer paused); the rest stay stale. Any value, 0 = never scan; default 100,000. More: exact
  // DeleteRange of larger ranges, for a longer pause.
  uint64_t delete_range_scan_limit = 100000;

  // false (default): a SingleDeleted key stays as a stale entry, so a misused SingleDelete (over
  // an overwritten key: RocksDB may resurface an older version) costs no key. true: erased like
  // Delete; a misuse can then lose the resurfaced key, and a later Delete of a fingerprint-
  // colliding key another key's count. Only if every SingleDelete is used as RocksDB documents.
  bool trust_single_delete = false;
  // Index families whose comparator may call different bytes equal
  // (Comparator::CanKeysWithDifferentByteContentsBeEqual(); the bytewise ones do not). Default
  // false (passed through). true: only if such keys are never written.
  bool trust_comparator = false;

  // Save the indexes (Close, checkpoints), load them at Open; default true (false: every Open
  // scans). A loaded file stays: a later crash restarts from it. index_file_name: in the DB
  // directory, a plain file name (not empty, no '/', not "." or ".."); default "LIVEKEY_INDEX".
  bool persist_index = true;
  std::string index_file_name = "LIVEKEY_INDEX";

  // Writes without a read: an overwrite, merge or delete of a key the index may hold counts up or
  // keeps its copy at once and queues a check, which a background thread runs at a snapshot taken
  // just before the write (erasing a copy if the key was live). Default true; false: such writes
  // read first (a Get; a batch, one MultiGet). The trade: a read off the write path, for a thread,
  // held snapshots and over-counts until the checks ran (WaitForDeferredChecks).
  bool defer_liveness_checks = true;
  // At most this many checks wait (each holds a snapshot and its key); past that, writes read
  // (queue_full_fallbacks). [1, 2^24]; default 65,536. More: longer bursts, for memory.
  uint32_t max_pending_checks = 65536;
  // Defer only while at most this many LiveKeyDB writes (calls and batches, this one included) are
  // in progress; with more, read (busy_sync_reads): the checker needs a free core. [0, 2^20];
  // 0 (default): hardware threads - 1, at least 1. To always defer: at least your writer count.
  uint32_t max_deferring_writers = 0;

  // Busy overwrites (more writes than max_deferring_writers): a Put/Merge of a held key of unknown
  // state counts an unchecked copy (no read, no check: an over-count at most, 3 per fingerprint)
  // until this fraction of sized_for is spent; that write schedules a rebuild (exact counts again),
  // busy writes reading until it swaps in. Only with deferred checks, automatic rebuilds, the dense
  // kernel without a stash, a budget of at least 64, the index serving and no rebuild running;
  // busy Deletes and batches read. [0, 1]; default 0.125; 0: busy writes read. More: fewer reads
  // on busy writers' path, for more over-counts and rebuild scans.
  double unchecked_copy_budget = 0.125;

  // Rebuild scans log progress to the info LOG every this many keys. >= 1; default 1M.
  uint64_t rebuild_progress_interval = 1000000;

  // Threads of a full rebuild scan: 4 parts of about equal bytes per thread (fewer when RocksDB's
  // size estimates cannot tell), inserted in key order (the one-thread index, bit for bit; parts
  // ahead queue at most 32 MiB of hashes). [1, 64]; default 2. More: faster scans of a quiet DB,
  // for cores taken from writers and compaction.
  uint32_t rebuild_scan_threads = 2;

  // true (default): Open returns when RocksDB's does; the background thread builds an index Open
  // could not load (first open, a crash, a stale or corrupt file) or loads a file of 64 MiB or
  // more (or an index that size at expected_keys), the family's reads going to RocksDB until it
  // serves (LiveKeyCfStats::serving, property "dlcbf.livekey.state"); writes keep it exact
  // meanwhile. false: Open blocks until every index is loaded or built.
  bool background_open_build = true;

  // true: each indexed family with a prefix_extractor also counts its index's copies per key
  // prefix (hashed into slots, 2 to 4 bytes per sized key), so an iterator with
  // ReadOptions::prefix_same_as_start answers a Seek or SeekForPrev into a prefix that holds no
  // live key at its snapshot as an invalid iterator without touching the LSM (a prefix full of
  // tombstones costs a probe, not a scan of them). Open then builds every index by a scan (an
  // index file carries no counts). false (default): iterators are RocksDB's own.
  bool live_prefix_counts = false;

  // Each length L here (at most 4, strictly increasing, each in [1, 64]): every indexed family
  // with the bytewise comparator also counts its index's copies by the keys' first L bytes
  // (zero-padded; in the slots live_prefix_counts uses, one more atomic add per write per
  // length). A Seek whose target starts a run of regions with no live key at the iterator's
  // snapshot is moved past them (to the first region that may hold one) and RocksDB seeks from
  // there, stepping over tombstones only within that region: a queue consumer Seeking to its head
  // after deleting what it consumed. Pick lengths that cut the key space where deletes cluster: for
  // 16-byte keys ending in a big-endian counter, {14, 15} gives regions of 65,536 and 256
  // consecutive counters. Applies to iterators with total_order_seek (without
  // prefix_same_as_start), on families without a prefix extractor, and (with live_prefix_counts)
  // within the prefix of prefix_same_as_start; SeekForPrev is not moved. A move stops early (exact,
  // slower) at a slot shared with a live region, or after 8 regions in a row never erased from since
  // the index was built (they hold no tombstones to skip). As live_prefix_counts, every index is then built by
  // a scan. Empty (default): no range counts.
  std::vector<uint32_t> live_range_lengths;

  // With persist_index, after flushes and compactions, at most once per this many seconds, save
  // every serving index with the sequence number it covers (WAL synced; the indexed families
  // flushed if disableWAL writes came since). Writers pause while that number, the live SST files
  // and fast-kernel tables are taken; a dense table is copied 256 KiB at a time under its writer
  // lock (a writer waits for one chunk at most). After a crash, Open replays only the keys written
  // since the last one (in the background, as above). Finite, >= 0; default 1.0; 0: only Close
  // saves (a crash costs a full scan). Shorter: shorter crash replays, for more file writes.
  double checkpoint_interval_seconds = 1.0;

  // Charge the indexes' bytes (LiveKeyStats::index_bytes) to this cache (usually the block cache)
  // as one pinned entry (CacheEntryRole::kMisc on RocksDB >= 8): at Open, around rebuilds (the new
  // index too), after checkpoints and drops; released at Close. A refused charge (strict capacity
  // limit) keeps the last one and is counted and logged. Default nullptr: none. The trade: the
  // cache evicts blocks to make room.
  std::shared_ptr<rocksdb::Cache> charge_cache;

  // OK, or InvalidArgument naming the first bad field.
  rocksdb::Status Validate() const;
};

// One family's index. What a user acts on: indexed, bypass_reason, mode, entries, sized_for, drift,
// bytes, predicted_fpr, serving, build_keys_scanned, build_error. Diagnostics (for dumps and tests;
// not a contract: they may change): unchecked_copies, loaded_from_file, the rebuild fields.
struct LiveKeyCfStats {
  // The family; whether it is indexed (else bypass_reason says why).
  uint32_t id = 0;
  std::string name;
  bool indexed = false;
  std::string bypass_reason;  // when !indexed
  // "dlcbf"; past capacity (rebuild due): "dlcbf-migrating", "dlcbf-overflow" or "elastic-abf".
  std::string mode;
  uint64_t entries = 0;     // keys counted: live keys + stale entries
  uint64_t unchecked_copies = 0;  // of those, unchecked copies (unchecked_copy_budget)
  uint64_t sized_for = 0;   // keys the index was sized for
  double drift = 0;         // entries / sized_for
  uint64_t bytes = 0;       // filter memory, retained bytes included
  uint64_t region_count_bytes = 0;  // of those, the live-region counts' (live_prefix_counts, live_range_lengths)
  double predicted_fpr = 0; // model (dlcbf: paper Claim 3; ABF: model)
  // The index answers reads (false during Open's background build); that build's keys so far.
  bool serving = false;
  uint64_t build_keys_scanned = 0;
  std::string build_error;        // the background build failed (reads bypass
                                  // until RebuildIndex() succeeds)
  bool loaded_from_file = false;  // the index of this Open came from the file
  uint64_t rebuilds = 0;          // open, manual and automatic
  // A rebuild runs now; the last one's reason and seconds.
  bool rebuild_in_progress = false;
  std::string last_rebuild_reason;
  double last_rebuild_seconds = 0;
  uint64_t last_rebuild_keys = 0;          // keys scanned
  uint32_t last_rebuild_scan_parts = 0;    // parts of its scan (4 per rebuild_scan_threads); 0: a checkpoint replay
  uint64_t last_rebuild_deltas = 0;        // index updates replayed
  uint64_t last_rebuild_pause_micros = 0;  // writers paused for the swap
};

// Counters since Open, each one a user acts on; the internal counters are `diagnostics`.
struct LiveKeyStats {
  // Reads: keys checked against the index; of those, "no" (RocksDB not touched); Seeks answered
  // "no live key in this prefix" (live_prefix_counts) and moved past dead regions
  // (live_range_lengths); reads the index cannot serve (snapshot, tier, timestamp, unindexed).
  uint64_t lookups = 0;
  uint64_t short_circuited = 0;
  uint64_t dead_prefix_seeks = 0;
  uint64_t moved_seeks = 0;
  uint64_t bypassed_reads = 0;
  // Writes that read on the write path: the checker fell behind (its queue was full); more than
  // max_deferring_writers writes were in progress (by design).
  uint64_t queue_full_fallbacks = 0;
  uint64_t busy_sync_reads = 0;
  // Writes behind LiveKeyDB's back: index "no"s sent to RocksDB as the DB's sequence number was
  // past LiveKeyDB's writes (also in bypassed_reads); unseen changes found certain; every index
  // rebuilt after one; false meanwhile (every index bypassed).
  uint64_t unverified_reads = 0;
  uint64_t unseen_write_detections = 0;
  uint64_t trust_recoveries = 0;
  bool indexes_trusted = true;
  uint64_t delete_range_limit_hits = 0;  // DeleteRange scans cut by delete_range_scan_limit (stale)
  // Rebuilds (all, automatic, failed); indexes past their dlCBF's capacity before a rebuild
  // (raise expected_keys, lower rebuild_at_capacity).
  uint64_t rebuilds = 0;
  uint64_t auto_rebuilds = 0;
  uint64_t failed_rebuilds = 0;
  uint64_t index_migrations = 0;
  // Index files written by checkpoints; failed ones (the info LOG says why); families loaded
  // from the file at Open; files (or entries) not trusted, and why the last one was not.
  uint64_t checkpoints = 0;
  uint64_t checkpoint_failures = 0;
  uint64_t index_file_loads = 0;
  uint64_t index_file_rejections = 0;
  std::string last_rejection;
  // Every index's bytes (property "dlcbf.livekey.index-bytes"); charged to charge_cache; refused.
  uint64_t index_bytes = 0;
  uint64_t cache_charged_bytes = 0;
  uint64_t cache_charge_failures = 0;

  std::vector<LiveKeyCfStats> column_families;

  // Diagnostics: LiveKeyDB's internal counters (the write path's index updates and reads, the
  // checker's work, checkpoint sizes and pauses), as (name, value) in ToString's order. For dumps
  // and tests; not a contract: names may come and go between releases.
  std::vector<std::pair<std::string, uint64_t>> diagnostics;
  // Sets *value to the diagnostic `name`; false if there is none of that name.
  bool GetDiagnostic(const std::string& name, uint64_t* value) const;

  double ShortCircuitRate() const {
    return lookups == 0 ? 0.0 : static_cast<double>(short_circuited) / lookups;
  }
  // Multi-line human-readable summary, diagnostics included (property "dlcbf.livekey.stats");
  // not a stable format.
  std::string ToString() const;
};

class LiveKeyDB : public rocksdb::StackableDB {
 public:
  // Opens (or creates) the DB at `path`, default column family only. InvalidArgument for bad
  // index_options or a null dbptr; Aborted if a background thread cannot start; else what
  // rocksdb::DB::Open returns (with background_open_build = false, also an index build's error).
  // On failure *dbptr is nullptr, nothing open. Adds a listener (file I/O reports on) to the DB's
  // options and guards each family's compaction filter (the fail-safe). Loads the index file if it
  // matches the DB, brings it forward if older, else rebuilds (the design note, "Persistence").
  static rocksdb::Status Open(const rocksdb::Options& options,
                              const LiveKeyIndexOptions& index_options,
                              const std::string& path, LiveKeyDB** dbptr);

  // As rocksdb::DB::Open; `handles` (InvalidArgument if null) gets one handle per descriptor.
  static rocksdb::Status Open(const rocksdb::DBOptions& db_options,
                              const LiveKeyIndexOptions& index_options,
                              const std::string& path,
                              const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
                              std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                              LiveKeyDB** dbptr);

  // The DB as rocksdb::TransactionDB::Open / OptimisticTransactionDB::Open open it, as RocksDB's
  // own type (delete or Close it as such), with a LiveKeyDB between the transaction layer and the
  // DB. InvalidArgument, nothing opened, for bad index_options, a null pointer or a write_policy
  // other than WRITE_COMMITTED; else as Open.
  // - Indexed as Write(WriteBatch): every commit (with or without Prepare,
  //   CommitAndTryCreateSnapshot, recovered prepared transactions) and the TransactionDB's own
  //   writes (one-batch transactions locking first, as RocksDB's); rollbacks, savepoints and
  //   failed commits index nothing. commit_bypass_memtable and the large-transaction thresholds
  //   (RocksDB >= 9.10) are turned off.
  // - A transaction's Get, GetForUpdate and MultiGet of a key neither its batch nor the index
  //   holds are NotFound (GetForUpdate locks, or records for validation, first).
  // - BeginTransaction's old_txn must come from the same DB; delete transactions before the DB
  //   (prepared ones left are deleted with it). The OptimisticTransactionDB's plain writes go
  //   through the index. DeleteRange: NotSupported; in a Write batch, what RocksDB's returns.
  // - Never write through GetBaseDB() of these DBs (it may deadlock against a transaction's
  //   lock). A DB whose WAL holds prepared transactions opens only through OpenTransactionDB
  //   (RocksDB refuses any other Open; with assertions on, it aborts).
  static rocksdb::Status OpenTransactionDB(const rocksdb::Options& options,
                                           const rocksdb::TransactionDBOptions& txn_db_options,
                                           const LiveKeyIndexOptions& index_options,
                                           const std::string& path, rocksdb::TransactionDB** dbptr);
  static rocksdb::Status OpenTransactionDB(const rocksdb::DBOptions& db_options,
                                           const rocksdb::TransactionDBOptions& txn_db_options,
                                           const LiveKeyIndexOptions& index_options,
                                           const std::string& path,
                                           const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
                                           std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                                           rocksdb::TransactionDB** dbptr);
  static rocksdb::Status OpenOptimisticTransactionDB(const rocksdb::Options& options,
                                                     const LiveKeyIndexOptions& index_options,
                                                     const std::string& path,
                                                     rocksdb::OptimisticTransactionDB** dbptr);
  static rocksdb::Status OpenOptimisticTransactionDB(
      const rocksdb::DBOptions& db_options, const rocksdb::OptimisticTransactionDBOptions& occ_options,
      const LiveKeyIndexOptions& index_options, const std::string& path,
      const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
      std::vector<rocksdb::ColumnFamilyHandle*>* handles, rocksdb::OptimisticTransactionDB** dbptr);
  // The LiveKeyDB owned by a DB those calls returned, or nullptr. Thread-safe.
  static LiveKeyDB* FromTransactionDB(const rocksdb::DB* db);

  // Close()s if not closed, dropping the status.
  ~LiveKeyDB() override;
  LiveKeyDB(const LiveKeyDB&) = delete;
  LiveKeyDB& operator=(const LiveKeyDB&) = delete;

  // Rebuilds the index of `column_family` (nullptr: every indexed one) by a keys-only scan, sized
  // for max(expected_keys, rebuild_headroom x entries), beside readers (never blocked) and writers
  // (paused twice, every stripe held, for microseconds and for the last few thousand changes).
  // Blocks until done, after a running rebuild (one at a time). NotSupported for an unindexed
  // family, InvalidArgument for an unknown one, Aborted once Close began, else the scan's error
  // (the old index stays, exact).
  rocksdb::Status RebuildIndex(rocksdb::ColumnFamilyHandle* column_family = nullptr);

  // Blocks until no automatic rebuild is queued or running, at most timeout_ms. False on timeout.
  bool WaitForBackgroundRebuilds(uint64_t timeout_ms);

  // Blocks until every deferred check queued so far has run (counts exact again), at most
  // timeout_ms. False on timeout. Never needed for correctness.
  bool WaitForDeferredChecks(uint64_t timeout_ms);

  // Counters since Open and every index's state. Cheap while every index is in dlCBF mode;
  // O(index size) for an index in ABF mode.
  LiveKeyStats GetLiveKeyStats() const;

  // rocksdb::DB::GetProperty, plus "dlcbf.livekey.state" ("ready", "building <keys scanned>" or
  // "failed: <status>") and "dlcbf.livekey.stats" (GetLiveKeyStats().ToString()) for an indexed
  // family, and "dlcbf.livekey.index-bytes" (LiveKeyStats::index_bytes; also GetIntProperty).
  using rocksdb::StackableDB::GetProperty;
  bool GetProperty(rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& property,
                   std::string* value) override;
  using rocksdb::StackableDB::GetIntProperty;
  bool GetIntProperty(rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& property,
                      uint64_t* value) override;

  const LiveKeyIndexOptions& index_options() const;

  // ---- rocksdb::DB -------------------------------------------------------
  // Waits up to 1 s for the DB's last file edits to settle, drains the deferred checks, stops
  // background work (aborting a running rebuild); then, with persist_index, makes every write
  // durable (WAL sync; indexed families flushed if disableWAL writes came) and saves, atomically or
  // as a delta, every index in "dlcbf" or "dlcbf-migrating" mode. An index still being built
  // (after Open, or brought forward from a checkpoint) is aborted and not saved; when no index is
  // built, Close keeps the index file as it is and waits for nothing more. A failure to save is
  // logged, not returned (the next Open rebuilds). Returns the base DB's Close status; idempotent.
  rocksdb::Status Close() override;
  rocksdb::Status Resume() override;
  // Its input files are made known to the fail-safe (RocksDB reports no events for CompactFiles);
  // the same call through GetBaseDB() is an unseen change (every index rebuilt).
  using rocksdb::StackableDB::CompactFiles;
  rocksdb::Status CompactFiles(const rocksdb::CompactionOptions& compact_options,
                               rocksdb::ColumnFamilyHandle* column_family,
                               const std::vector<std::string>& input_file_names, const int output_level,
                               const int output_path_id = -1,
                               std::vector<std::string>* const output_file_names = nullptr,
                               rocksdb::CompactionJobInfo* compaction_job_info = nullptr) override;

  // Reads (see the top): RocksDB's statuses; an index "no" is NotFound with the output reset.
  using rocksdb::StackableDB::Get;
#if !DLCBF_ROCKSDB_DB_READS_FINAL
  rocksdb::Status Get(const rocksdb::ReadOptions& options,
                      rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                      rocksdb::PinnableSlice* value) override;
#endif
  rocksdb::Status Get(const rocksdb::ReadOptions& options,
                      rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                      rocksdb::PinnableSlice* value, std::string* timestamp) override;
  using rocksdb::StackableDB::GetEntity;
  rocksdb::Status GetEntity(const rocksdb::ReadOptions& options,
                            rocksdb::ColumnFamilyHandle* column_family,
                            const rocksdb::Slice& key,
                            rocksdb::PinnableWideColumns* columns) override;

  // With live_prefix_counts or live_range_lengths, for ReadOptions without auto_prefix_mode,
  // tailing, timestamps, ignore_range_deletions or read_tier: an iterator that plans each Seek from
  // the live-region counts. With prefix_same_as_start (live_prefix_counts, a prefix_extractor), a
  // Seek or SeekForPrev into a prefix that holds no live key at its snapshot leaves it invalid
  // (status OK) without touching the LSM. With live_range_lengths (total_order_seek, or no
  // extractor, or within the prefix of prefix_same_as_start), a Seek whose target starts a run of
  // regions with no live key is moved past them before RocksDB seeks. Every other call is
  // RocksDB's own iterator. The same keys, values and statuses as RocksDB's, at every snapshot,
  // bound and Refresh; delete it before Close, as RocksDB's. NewIterators: each iterator as
  // NewIterator's, over one consistent view as RocksDB's. The iterators of transactions are
  // RocksDB's own.
  using rocksdb::StackableDB::NewIterator;
  rocksdb::Iterator* NewIterator(const rocksdb::ReadOptions& options,
                                 rocksdb::ColumnFamilyHandle* column_family) override;
  rocksdb::Status NewIterators(const rocksdb::ReadOptions& options,
                               const std::vector<rocksdb::ColumnFamilyHandle*>& column_families,
                               std::vector<rocksdb::Iterator*>* iterators) override;

  using rocksdb::StackableDB::MultiGet;
#if DLCBF_ROCKSDB_DB_READS_FINAL
  // Every other MultiGet overload of RocksDB >= 9.0 ends here.
  void MultiGet(const rocksdb::ReadOptions& options, const size_t num_keys,
                rocksdb::ColumnFamilyHandle** column_families, const rocksdb::Slice* keys,
                rocksdb::PinnableSlice* values, std::string* timestamps,
                rocksdb::Status* statuses, const bool sorted_input = false) override;
#else
  std::vector<rocksdb::Status> MultiGet(
      const rocksdb::ReadOptions& options,
      const std::vector<rocksdb::ColumnFamilyHandle*>& column_family,
      const std::vector<rocksdb::Slice>& keys, std::vector<std::string>* values) override;
  std::vector<rocksdb::Status> MultiGet(
      const rocksdb::ReadOptions& options,
      const std::vector<rocksdb::ColumnFamilyHandle*>& column_family,
      const std::vector<rocksdb::Slice>& keys, std::vector<std::string>* values,
      std::vector<std::string>* timestamps) override;
  void MultiGet(const rocksdb::ReadOptions& options,
                rocksdb::ColumnFamilyHandle* column_family, const size_t num_keys,
                const rocksdb::Slice* keys, rocksdb::PinnableSlice* values,
                rocksdb::Status* statuses, const bool sorted_input = false) override;
  void MultiGet(const rocksdb::ReadOptions& options, const size_t num_keys,
                rocksdb::ColumnFamilyHandle** column_families, const rocksdb::Slice* keys,
                rocksdb::PinnableSlice* values, rocksdb::Status* statuses,
                const bool sorted_input = false) override;
#endif

  using rocksdb::StackableDB::KeyMayExist;
  bool KeyMayExist(const rocksdb::ReadOptions& options,
                   rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                   std::string* value, bool* value_found = nullptr) override;
  bool KeyMayExist(const rocksdb::ReadOptions& options,
                   rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                   std::string* value, std::string* timestamp,
                   bool* value_found = nullptr) override;

  // Writes return RocksDB's status. A key that becomes live is indexed BEFORE its write (removed
  // if the write fails and a read finds it not live), one that stops being live erased only AFTER
  // it succeeded; a failed liveness read keeps or adds the entry. Unindexed families pass through;
  // a timestamped write to an indexed one is InvalidArgument. Put, PutEntity or Merge of a new key
  // costs a hash, a probe and an insert; a write of a key the index holds, a queued check (a queue
  // push, now and then a snapshot; see defer_liveness_checks) or a read of the key; a Delete of a
  // key it does not hold, nothing. A key holds at most two copies however often written. A
  // SingleDelete leaves a stale entry unless trust_single_delete.
  // Behind LiveKeyDB's back (GetBaseDB(), GetRootDB(), a TransactionDB wrapped on top, another
  // StackableDB, file drops, compaction filters that skip or purge, base-DB ingestion or import):
  // reads bypass the index while the DB's sequence number is past LiveKeyDB's writes; a change
  // found certain is logged once, and every index is bypassed until the background thread has
  // rebuilt them all (LiveKeyStats::indexes_trusted). Safe, but costly: do not make it a habit.
  using rocksdb::StackableDB::Put;
  rocksdb::Status Put(const rocksdb::WriteOptions& options,
                      rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                      const rocksdb::Slice& value) override;
  rocksdb::Status Put(const rocksdb::WriteOptions& options,
                      rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                      const rocksdb::Slice& ts, const rocksdb::Slice& value) override;
  using rocksdb::StackableDB::PutEntity;
  rocksdb::Status PutEntity(const rocksdb::WriteOptions& options,
                            rocksdb::ColumnFamilyHandle* column_family,
                            const rocksdb::Slice& key,
                            const rocksdb::WideColumns& columns) override;
  using rocksdb::StackableDB::Merge;
  rocksdb::Status Merge(const rocksdb::WriteOptions& options,
                        rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override;
  rocksdb::Status Merge(const rocksdb::WriteOptions& options,
                        rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                        const rocksdb::Slice& ts, const rocksdb::Slice& value) override;
  using rocksdb::StackableDB::Delete;
  rocksdb::Status Delete(const rocksdb::WriteOptions& options,
                         rocksdb::ColumnFamilyHandle* column_family,
                         const rocksdb::Slice& key) override;
  rocksdb::Status Delete(const rocksdb::WriteOptions& options,
                         rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& key,
                         const rocksdb::Slice& ts) override;
  using rocksdb::StackableDB::SingleDelete;
  rocksdb::Status SingleDelete(const rocksdb::WriteOptions& options,
                               rocksdb::ColumnFamilyHandle* column_family,
                               const rocksdb::Slice& key) override;
  rocksdb::Status SingleDelete(const rocksdb::WriteOptions& options,
                               rocksdb::ColumnFamilyHandle* column_family,
                               const rocksdb::Slice& key, const rocksdb::Slice& ts) override;
  // Every LiveKeyDB writer pauses for the whole call: a scan of the live keys of [begin, end) (at
  // most delete_range_scan_limit), the range deletion, the erase of the scanned keys.
  using rocksdb::StackableDB::DeleteRange;
  rocksdb::Status DeleteRange(const rocksdb::WriteOptions& options,
                              rocksdb::ColumnFamilyHandle* column_family,
                              const rocksdb::Slice& begin_key,
                              const rocksdb::Slice& end_key) override;
  rocksdb::Status DeleteRange(const rocksdb::WriteOptions& options,
                              rocksdb::ColumnFamilyHandle* column_family,
                              const rocksdb::Slice& begin_key, const rocksdb::Slice& end_key,
                              const rocksdb::Slice& ts) override;
  // Only each key's state before and after the batch counts (it becomes visible at once); keys the
  // index holds get deferred checks or, where a single write would read, one MultiGet for the
  // batch. NotSupported for a batch with transaction markers.
  rocksdb::Status Write(const rocksdb::WriteOptions& options,
                        rocksdb::WriteBatch* updates) override;
#if DLCBF_ROCKSDB_AT_LEAST(8, 9)
  // Built into one WriteBatch as rocksdb::DB::PutEntity builds it, then applied by Write.
  rocksdb::Status PutEntity(const rocksdb::WriteOptions& options, const rocksdb::Slice& key,
                            const rocksdb::AttributeGroups& attribute_groups) override;
#endif

  // Writers pause while the files' keys are read (rocksdb::SstFileReader: the latest visible point
  // keys), those not live indexed and the files ingested; a failure removes the added keys not
  // live. Deletions and range deletions inside the files leave stale entries.
  using rocksdb::StackableDB::IngestExternalFile;
  rocksdb::Status IngestExternalFile(rocksdb::ColumnFamilyHandle* column_family,
                                     const std::vector<std::string>& external_files,
                                     const rocksdb::IngestExternalFileOptions& options) override;
  using rocksdb::StackableDB::IngestExternalFiles;
  rocksdb::Status IngestExternalFiles(
      const std::vector<rocksdb::IngestExternalFileArg>& args) override;
#if DLCBF_ROCKSDB_AT_LEAST(11, 5)
  // Prepare reads the files' keys into the handle it returns (the key bytes + ~40 bytes each until
  // the commit); Commit indexes them as IngestExternalFiles does. InvalidArgument, nothing
  // committed, for a null handle or one from GetBaseDB()->PrepareFileIngestion.
  using rocksdb::StackableDB::PrepareFileIngestion;
  rocksdb::Status PrepareFileIngestion(
      const std::vector<rocksdb::IngestExternalFileArg>& args,
      std::unique_ptr<rocksdb::FileIngestionHandle>* handle) override;
  using rocksdb::StackableDB::CommitFileIngestionHandles;
  rocksdb::Status CommitFileIngestionHandles(
      std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> handles) override;
#endif
  // The new family is scanned before the handle is returned (a failed build leaves it unindexed,
  // bypass_reason says why); an import that moves the DB's sequence number rebuilds every index.
  using rocksdb::StackableDB::CreateColumnFamilyWithImport;
  rocksdb::Status CreateColumnFamilyWithImport(
      const rocksdb::ColumnFamilyOptions& options, const std::string& column_family_name,
      const rocksdb::ImportColumnFamilyOptions& import_options,
      const rocksdb::ExportImportFilesMetaData& metadata,
      rocksdb::ColumnFamilyHandle** handle) override;
#if DLCBF_ROCKSDB_AT_LEAST(8, 4)
  rocksdb::Status CreateColumnFamilyWithImport(
      const rocksdb::ColumnFamilyOptions& options, const std::string& column_family_name,
      const rocksdb::ImportColumnFamilyOptions& import_options,
      const std::vector<const rocksdb::ExportImportFilesMetaData*>& metadatas,
      rocksdb::ColumnFamilyHandle** handle) override;
#endif
#if DLCBF_ROCKSDB_AT_LEAST(8, 3)
  // The keys clipped away become stale entries: a successful clip schedules the family's rebuild.
  rocksdb::Status ClipColumnFamily(rocksdb::ColumnFamilyHandle* column_family,
                                   const rocksdb::Slice& begin_key,
                                   const rocksdb::Slice& end_key) override;
#endif

  // A new family gets an empty index (unless excluded: see the top) and a guarded compaction
  // filter; RocksDB's status, or the error of registering it.
  rocksdb::Status CreateColumnFamily(const rocksdb::ColumnFamilyOptions& options,
                                     const std::string& column_family_name,
                                     rocksdb::ColumnFamilyHandle** handle) override;
  rocksdb::Status CreateColumnFamilies(const rocksdb::ColumnFamilyOptions& options,
                                       const std::vector<std::string>& column_family_names,
                                       std::vector<rocksdb::ColumnFamilyHandle*>* handles) override;
  rocksdb::Status CreateColumnFamilies(
      const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
      std::vector<rocksdb::ColumnFamilyHandle*>* handles) override;
  // Waits for a running rebuild; every writer pauses for RocksDB's drop.
  rocksdb::Status DropColumnFamily(rocksdb::ColumnFamilyHandle* column_family) override;
  rocksdb::Status DropColumnFamilies(
      const std::vector<rocksdb::ColumnFamilyHandle*>& column_families) override;
  // OK for a handle LiveKeyDB tracks (kept for background rebuilds, destroyed at Close); any
  // other goes to RocksDB.
  rocksdb::Status DestroyColumnFamilyHandle(rocksdb::ColumnFamilyHandle* column_family) override;

  struct Rep;  // internal (filter_policy/live_key_db.cc)

 private:
  // The array MultiGet with the index in front (no timestamps).
  void MultiGetIndexed(const rocksdb::ReadOptions& options, size_t num_keys,
                       rocksdb::ColumnFamilyHandle** column_families, const rocksdb::Slice* keys,
                       rocksdb::PinnableSlice* values, rocksdb::Status* statuses,
                       bool sorted_input);
  LiveKeyDB(rocksdb::DB* base, const LiveKeyIndexOptions& index_options);
  // Open's body: `open_base` opens the DB below with the options given
  // (LiveKeyDB's listener added, each family's compaction filter guarded).
  using OpenBase = std::function<rocksdb::Status(
      const rocksdb::DBOptions&, const std::vector<rocksdb::ColumnFamilyDescriptor>&, rocksdb::DB**)>;
  static rocksdb::Status OpenWith(const rocksdb::DBOptions& db_options, const LiveKeyIndexOptions& index_options,
                                  const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
                                  std::vector<rocksdb::ColumnFamilyHandle*>* handles, const OpenBase& open_base,
                                  LiveKeyDB** dbptr);
  friend class LiveKeyTransactions;
  std::unique_ptr<Rep> rep_;
};

}  // namespace dlcbf
