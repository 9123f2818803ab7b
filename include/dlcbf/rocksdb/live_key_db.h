// LiveKeyDB: a rocksdb::StackableDB that keeps, per column family, a
// counting filter over the set of LIVE user keys, so point lookups of keys
// that are absent or deleted return NotFound without touching the LSM tree.
//
// Why
//   In an LSM tree a lookup of an absent or deleted key pays for every
//   level: one SST-filter probe per L0 file and per level, and for deleted
//   keys the search for the tombstone. SST filters keep answering "maybe"
//   for deleted keys until compaction rewrites their files. A counting
//   filter over the live keys answers such a lookup with one probe and
//   forgets a deleted key (at once, or once the key's deferred check ran:
//   see "Writes without a read"): the d-left counting Bloom filter's
//   purpose (exact erase of deletable keys).
//
// Quick start
//   rocksdb::Options o;
//   o.create_if_missing = true;
//   dlcbf::LiveKeyIndexOptions io;
//   io.expected_keys = 10000000;            // live keys per column family
//   dlcbf::LiveKeyDB* db = nullptr;
//   rocksdb::Status s = dlcbf::LiveKeyDB::Open(o, io, "/path/db", &db);
//   db->Put(wo, "k", "v");
//   db->Get(ro, "absent", &v);             // NotFound from the index alone
//   dlcbf::LiveKeyStats st = db->GetLiveKeyStats();
//   s = db->Close();                        // persists the index (see below)
//   delete db;
//
// The index (one per column family)
//   A d-left counting Bloom filter sized for
//   LiveKeyIndexOptions::expected_keys: by default the dense kernel
//   (dlcbf/core/dense_dleft_filter.h, 12 bits per sized key, a negative
//   lookup reads two 64-byte lines), or the cache-line-local fast kernel
//   (fast_dleft_filter.h, 24 bits, one line). A background rebuild from a
//   DB scan swaps a bigger one in as keys grow (see "Drift and rebuilds"),
//   or on demand (RebuildIndex()). If keys outrun it, the index stays
//   lossless without a table copy on any write: the dense kernel overflows
//   into a small stash, the fast one migrates in steps to an autoscaling
//   counting Bloom filter; only the false-positive rate rises until the
//   rebuild is done.
//   Every live key is counted exactly once; "stale" entries (keys counted
//   but no longer live, see below) only cost false positives.
//
// Contract, per call
//   Reads at the latest state -- Get, GetEntity, MultiGet (every overload
//   without timestamps) and KeyMayExist -- consult the index first. "No"
//   returns NotFound (KeyMayExist: false) without touching RocksDB; "maybe"
//   delegates to RocksDB. These reads BYPASS the index (go straight to
//   RocksDB) when ReadOptions has a snapshot, a read_tier other than
//   kReadAllTier, a timestamp or iter_start_ts, or ignore_range_deletions;
//   also when timestamps are requested, and for column families that are
//   not indexed (see "Column families"). Iterators and GetMergeOperands
//   always bypass: the index knows only the latest state.
//
//   No false negatives, ever, also for concurrent readers. Writers keep
//   the invariant "every key visible in the DB is in the index":
//   - Put / Merge / PutEntity of k: if the index does not contain k, k is
//     new: it is added to the index BEFORE the DB write (and removed again
//     if the write fails and a read confirms k is not live). Merge on an
//     absent key creates it, so it is handled like Put.
//   - Delete / SingleDelete of k: if the index does not contain k, nothing
//     is done to the index (k cannot be live).
//   - Writes without a read (defer_liveness_checks, the default). When the
//     index does contain k, the write does not ask RocksDB whether k is
//     live. A Put/Merge adds one more copy of k BEFORE its write (so the
//     count is an upper bound at once); a Delete keeps k's copy. Either
//     way it queues a check with a snapshot that shows k as it was just
//     before the write (shared by many writes: a new one is taken only when
//     k's lock stripe was written after the current one); a background
//     thread reads k at that snapshot and, if k was live there, erases one
//     copy: the second copy of an overwrite,
//     or the copy of a deleted key. So counts become exact again within
//     moments, and in between an over-count costs only a false positive
//     (RocksDB answers). A check queued before a rebuild's scan erases
//     nothing (the scan counted k exactly). Close drains the queue (the
//     saved index is exact); a crash loses the queue, and the reopen
//     brings the last checkpoint forward or rebuilds (see "Persistence"). While a key's check is
//     pending, its later writes know its state and need neither a read
//     nor a check nor a copy, so a key holds at most two copies however
//     often it is written (the design note in live_key_db.cc, "Known").
//     With the queue full (max_pending_checks), more LiveKeyDB writes in
//     progress than max_deferring_writers, or the option off, the write
//     reads first instead: Put inserts only if k is not live, Delete
//     erases only if k was live, AFTER the delete succeeded.
//   - Unchecked copies (unchecked_copy_budget). With more LiveKeyDB writes
//     in progress than max_deferring_writers, a Put/Merge of a k the index
//     holds adds a copy with neither a read nor a check, while the index's
//     budget lasts; the next rebuild (scheduled when the budget is spent)
//     counts k exactly. An extra copy is only an over-count.
//   - Write(WriteBatch): the entries are processed in order with an overlay
//     of the keys the batch already touched; only each key's state before
//     and after the batch matters (the batch becomes visible atomically).
//     Keys that become live are inserted before the write, keys that stop
//     being live are erased after it succeeded. A key the index holds gets
//     a deferred check as below (or, with the queue full, one MultiGet for
//     the batch's keys decides).
//   - Per key, check -> write -> index update is serialized by striped
//     mutexes keyed by the key's hash (LiveKeyIndexOptions::lock_stripes).
//     A batch takes its stripes in ascending order (no deadlock).
//   - When a liveness read fails (an I/O error, a failing merge operator),
//     the write path assumes the worst for false negatives: Put/Merge
//     insert, Delete keeps the entry (a stale entry).
//   Cost: a write of a NEW key costs one hash, one filter probe and one
//   filter insert on top of the DB write; overwrites, merges into existing
//   keys and deletes of existing keys add a queue push and now and then a
//   snapshot (a background thread pays their liveness read), or one
//   liveness read (a Get; in a batch, one MultiGet) each when checks are
//   not deferred.
//   Measured numbers: docs/LIVE_KEY_DB.md.
//
//   DeleteRange(begin, end): takes EVERY stripe (all LiveKeyDB writers of
//   the DB pause for the whole call: the scan of up to
//   delete_range_scan_limit keys, 100,000 by default, and the write), scans
//   the live keys of [begin, end) (keys only are used), applies the range
//   deletion, and erases the scanned keys from the index. Keys beyond the
//   limit stay in the index as stale entries. delete_range_scan_limit = 0
//   never scans: every key of the range becomes stale. Stale entries are
//   harmless (false positives only); a rebuild removes them.
//
//   SingleDelete: RocksDB leaves SingleDelete of an overwritten key
//   undefined (an older version may resurface later). With
//   trust_single_delete = false (the default) a SingleDeleted key stays in
//   the index as a stale entry: a resurrected value is still found, and
//   misuse can never cost another key. The price is one stale entry per
//   SingleDelete until the next rebuild (a slightly higher false-positive
//   rate, never a false negative). trust_single_delete = true erases the
//   key like Delete; then a misused SingleDelete can make the index forget
//   a key that RocksDB later resurrects (a false negative for that key),
//   and a later Delete of a fingerprint-colliding key can take another
//   key's count. Set it only if every SingleDelete is used as documented.
//
//   IngestExternalFile(s): takes every stripe, reads the files' keys with
//   rocksdb::SstFileReader (latest visible keys, point entries), adds the
//   ones that are not live to the index, then ingests; if ingestion fails,
//   the added keys that did not become live are removed again. Deletions
//   and range deletions inside ingested files leave stale entries.
//
//   Writes behind LiveKeyDB's back. Keys removed behind its back
//   (compaction filters answering kRemove, TTL) only leave stale entries
//   (false positives). Changes that make keys visible without moving the
//   sequence number -- an ingestion through the base DB at global sequence
//   number 0, DeleteFilesInRange(s) or DeleteFile dropping a file over
//   older versions, a compaction filter answering kRemoveAndSkipUntil or
//   kPurge -- are seen by a listener LiveKeyDB adds to the DB's options
//   (with file I/O reports on, to see each MANIFEST sync before RocksDB
//   installs its edit) and by a guard around every family's compaction
//   filter, and are handled like the unseen writes below; the threat model
//   in filter_policy/rocksdb/live_key_db/README.md lists every way and its
//   test. Writes it never sees -- through GetBaseDB() or GetRootDB(), a
//   TransactionDB wrapped on top (TransactionDB::WrapStackableDB), another
//   StackableDB -- are detected, never answered NotFound: every LiveKeyDB
//   write reaches RocksDB as one WriteBatch whose sequence numbers it
//   records, and the index's "no" is returned only while the DB's latest
//   sequence number is covered by them; else the read goes to RocksDB.
//   Once such a write is certain (no LiveKeyDB write in flight), one LOG
//   line says so, every index is bypassed, and the background thread
//   rebuilds them all; then they serve again (stats: unverified_reads,
//   unseen_write_detections, trust_recoveries, indexes_trusted). An
//   ingestion's global sequence numbers are read back from the files it
//   added; an import that moves the DB's sequence number (RocksDB does not
//   report it) is handled like an unseen write: a rebuild after it.
//   Writing through the base DB is therefore safe but costs the index
//   until the rebuild; do not make it a habit.
//
// Transactions
//   OpenTransactionDB and OpenOptimisticTransactionDB open the DB as
//   RocksDB's TransactionDB::Open / OptimisticTransactionDB::Open do and
//   return RocksDB's own types, with a LiveKeyDB between the transaction
//   layer and the DB: an app changes its Open call and nothing else.
//   - Every commit is indexed under the rules of Write(WriteBatch) above:
//     Commit with and without Prepare (two-phase commit; the prepared
//     batch and the commit-time batch together), CommitAndTryCreateSnapshot,
//     prepared transactions recovered after a crash (GetTransactionByName,
//     GetAllPreparedTransactions), and the TransactionDB's own Put, Delete,
//     SingleDelete, Merge and Write (each a transaction of one batch that
//     takes its locks first, as RocksDB's own does). Rollback, savepoints
//     and a failed commit index nothing. A commit's sequence numbers are
//     accounted to the writes LiveKeyDB saw ("Writes behind LiveKeyDB's
//     back").
//   - Reads inside a transaction: Get, GetForUpdate and MultiGet of a key
//     that neither the transaction's own batch nor the index holds return
//     NotFound without reading the DB. GetForUpdate still takes its lock
//     (pessimistic) or records the key for validation (optimistic) first,
//     with the same validation, so isolation does not change. A key the
//     transaction wrote itself is read from its batch as RocksDB does.
//     Reads with ReadOptions::snapshot (e.g. the transaction's own
//     snapshot) and the other bypass cases above go to RocksDB, as do
//     MultiGetForUpdate and iterators.
//   - Only the WRITE_COMMITTED policy: WRITE_PREPARED and WRITE_UNPREPARED
//     write uncommitted data into the DB and are refused at Open with
//     InvalidArgument naming the policy, before anything is opened.
//     TransactionOptions::commit_bypass_memtable and the large-transaction
//     thresholds (RocksDB >= 9.10, experimental) are turned off: such a
//     commit ingests the transaction with sequence numbers LiveKeyDB
//     cannot account, so it commits through the memtable instead.
//   - Transaction objects: from BeginTransaction (old_txn must come from
//     the same DB), GetTransactionByName or GetAllPreparedTransactions;
//     delete them before the DB, as with RocksDB. Prepared transactions
//     still open when the DB is deleted are deleted with it.
//   - Non-transactional writes of the OptimisticTransactionDB go to the DB
//     directly, as with RocksDB, through the index. The TransactionDB's
//     DeleteRange is NotSupported, as RocksDB's; DeleteRange inside a
//     Write batch returns what RocksDB's transaction returns.
//   - Do not write through GetBaseDB() of these DBs: such a write holds a
//     LiveKeyDB lock while RocksDB may wait for a transaction's lock.
//   - A DB whose WAL holds prepared transactions opens only through
//     OpenTransactionDB (RocksDB refuses any other Open; a build of
//     RocksDB with assertions aborts).
//   LiveKeyDB::FromTransactionDB gives the LiveKeyDB of such a DB (stats,
//   RebuildIndex, properties).
//
// Column families
//   Every column family opened or created through LiveKeyDB gets its own
//   index, except those whose comparator has user-defined timestamps or
//   may consider keys with different bytes equal
//   (Comparator::CanKeysWithDifferentByteContentsBeEqual(); the bytewise
//   comparators say no; set trust_comparator to index such a family
//   anyway): those are passed through unindexed (stats: bypass_reason).
//   Writes with timestamps to an indexed family return InvalidArgument.
//   Release handles with DestroyColumnFamilyHandle (not delete): LiveKeyDB
//   keeps the handles it tracks alive until Close for background rebuilds.
//
// Persistence and recovery
//   An index file claims a sequence number S only once every write up to
//   S is durable: before writing it, LiveKeyDB syncs the WAL
//   (FlushWAL(true)) and, if any disableWAL write was made since its last
//   flush, flushes the indexed column families. So whatever a crash loses
//   (disableWAL data, an unsynced WAL tail at power loss, a
//   manual_wal_flush buffer) lies above S, and the file never counts a
//   write the DB no longer holds.
//   Close() (and the destructor) drains the deferred checks, makes the
//   writes durable as above, pauses background work while it records the
//   live SST files (resumed before it returns: RocksDB's own Close may
//   still flush), and saves each index that is in dlCBF mode with that
//   sequence number, the DB identity, hash seed, the numbers of all live
//   SST files and a checksum into <db dir>/<index_file_name>, atomically
//   (temp file, fsync, rename, directory fsync). Checkpoints
//   (checkpoint_interval_seconds) write the same file while the DB runs.
//   Once a checkpoint has written the file whole, later checkpoints and
//   Close append only the index blocks changed since (a delta segment)
//   while the indexes stay the same (no rebuild, no family added or
//   dropped) and the deltas stay under half the file; then a new whole
//   file merges them. A crash while a delta is appended leaves the file
//   as the checkpoint before it.
//   A file is written only while the index accounts for the DB's whole
//   state (no unseen write or change known, none pending); an unseen
//   change removes it.
//   Open() loads it as exact only if the checksum, format, identity, seed
//   and sequence number (after WAL recovery) all match, every SST file it
//   lists is still live or was removed by a compaction since Open, AND
//   every live SST file is either one the index saw or one whose keys all
//   carry nonzero sequence numbers (e.g. the flush of the recovered WAL). A new file
//   with sequence number 0 may hold keys the index never saw (an
//   ingestion at global seqno 0, compacted). A file older than the DB, or
//   followed by such a file, is loaded as a checkpoint and brought forward
//   by reading the keys of the memtables and of the SST files past it. A
//   file that cannot be trusted at all (corrupt, another DB, another seed,
//   ahead of the DB) is logged, counted in stats and removed; its index is
//   rebuilt by a keys-only scan with progress in the info LOG, as is every
//   column family not in the file. A loaded file stays after Open: it is
//   the checkpoint a later crash starts from (Close and checkpoints
//   replace it).
//
// Drift and rebuilds
//   An index is sized for max(expected_keys, rebuild_headroom x the keys it
//   had when it was (re)built). Past auto_rebuild_drift x that size, past
//   rebuild_at_capacity of its kernel's capacity, or once its dlCBF is past
//   capacity (dense: overflowing into its stash; fast: migrating to its
//   ABF in steps; neither copies the table on one write), a background
//   thread rebuilds it: it creates an iterator (an implicit snapshot) and
//   starts a delta log while holding every stripe (a pause of
//   microseconds), scans without locks while writers keep updating the old
//   index and logging their index changes, replays the log into the new
//   index in rounds without locks, then holds every stripe again to replay
//   the last few thousand changes and swap it in. A rebuild that fails or
//   is aborted (Close aborts a running scan) keeps the old index exact. No update is lost; readers use the old
//   index until the swap and never block. The old index is freed once no
//   reader can still be inside it (an epoch scheme; readers never wait).
//   One rebuild runs at a time; DropColumnFamily waits for a running one.
//   Stats report each family's last rebuild (keys, replayed updates, pause).
//
// Thread safety
//   Like rocksdb::DB: every call may be made from any thread concurrently,
//   except Close() and the destructor. Readers never take a lock.
//
// Ownership
//   Open() hands out a LiveKeyDB that owns the base DB; delete it to close
//   (or call Close() first to see the status). Handles returned by Open()
//   belong to the caller as with rocksdb::DB.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dlcbf/core/elastic_filter.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/status.h"
#include "rocksdb/utilities/stackable_db.h"
#include "rocksdb/version.h"

// RocksDB 9.0 made every DB::Get/MultiGet overload final except the two
// that take timestamps, which became pure virtual: LiveKeyDB then serves its
// reads through those two (a null timestamp pointer is an ordinary read).
#define DLCBF_ROCKSDB_DB_READS_FINAL (ROCKSDB_MAJOR >= 9)
// True when the RocksDB compiled against is release major.minor or newer.
// The write calls LiveKeyDB overrides under it appeared in StackableDB at
// these releases (checked in facebook/rocksdb's history):
// ClipColumnFamily 8.3, the multi-metadata CreateColumnFamilyWithImport
// 8.4, PutEntity with AttributeGroups 8.9, PrepareFileIngestion and
// CommitFileIngestionHandles 11.5. tests/live_key_db_surface_test.py fails
// the build's tests when StackableDB forwards a call LiveKeyDB neither
// overrides nor lists as safe to pass through.
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

struct LiveKeyIndexOptions {
  // Live keys expected per column family; each index is sized for it
  // (bits_per_key or sizing_load, by kernel). [1, 2^40].
  uint64_t expected_keys = 1000000;

  // The index kernel, thread-safe with lock-free readers, wrapped in an
  // ElasticFilter that migrates to its ABF past the kernel's capacity:
  //   kDense (default): DenseDLeftFilter (dense_dleft_filter.h), d = 2
  //     blocks of variable-occupancy buckets, sized by bits_per_key: at 12
  //     bits per sized key the 8-bit class at load a = 512 / (48 * 12),
  //     predicted FPR 2 a 48 / (80 * 255) (the kernel's design note); a
  //     lookup reads one line per block probed (two for a negative).
  //   kFast: FastDLeftFilter (fast_dleft_filter.h), D = 2, sized at
  //     sizing_load: 18 / a bits per key (24 at a = 0.75), predicted FPR
  //     32 a / (4 * 8191), one line per lookup (two when its bucket
  //     spilled).
  // The kernel of an index file is recorded in it; a file of the other
  // kernel is rebuilt, not loaded.
  ElasticKernel kernel = ElasticKernel::kDense;
  // kDense: bits of index per sized key, in
  // DenseDLeftOptions::ForBitsPerKey's range (from the 8-bit class at its
  // MaxLoad up; the 16-bit class where it fits).
  double bits_per_key = 12.0;
  // kFast: fraction of the cells in use at the sized key count, in (0, 1]
  // (capped at the kernel's MaxLoad, 0.80).
  double sizing_load = 0.75;
  //
  // The key hash seed of every index (also recorded in the index file; an
  // index file written with another seed is rebuilt, not loaded).
  uint64_t seed = 0x5EEDD1CBF0000001ULL;

  // Counter width of the autoscaling Bloom filter the index migrates to
  // past the dlCBF's capacity. [1, 8].
  uint32_t abf_counter_bits = 4;

  // Rebuild automatically (background thread) when an index holds more
  // than this many times the keys it was sized for, when it holds more
  // than rebuild_at_capacity of what its kernel holds at its MaxLoad, or
  // when its dlCBF is past capacity (migrating to the ABF). 0 disables
  // automatic rebuilds; else > 1.
  double auto_rebuild_drift = 1.5;
  // The fraction of the kernel's capacity (the entries at which it reaches
  // the MaxLoad its sizing helpers use: about 1.125 x sized_for for the
  // dense kernel at 12 bits per key, 1.07 x for the fast kernel at load
  // 0.75) past which the background rebuild starts, so that it can swap a
  // bigger index in before the kernel fills and has to migrate to its ABF.
  // The rest of the capacity absorbs the writes made during the rebuild's
  // scan. Only with automatic rebuilds on. (0, 1].
  double rebuild_at_capacity = 0.85;
  // A rebuild sizes the new index for max(expected_keys, rebuild_headroom x
  // the entries at the time; at Open: the estimate-num-keys property).
  // [1, 1000].
  double rebuild_headroom = 1.5;

  // Striped locks serializing check -> write -> index update per key.
  // A power of two in [1, 2^20].
  uint32_t lock_stripes = 1024;

  // DeleteRange erases at most this many live keys of its range from the
  // index (found by a scan); the rest stay as stale entries. 0 = never scan.
  uint64_t delete_range_scan_limit = 100000;

  // See "SingleDelete" above.
  bool trust_single_delete = false;
  // Index column families whose comparator may consider keys with
  // different bytes equal. Only if such keys are never written.
  bool trust_comparator = false;

  // Persist on Close and load on Open. File name inside the DB directory
  // (no '/').
  bool persist_index = true;
  std::string index_file_name = "LIVEKEY_INDEX";

  // Writes without a read (see the header comment): Put/Merge/Delete of a
  // key the index may hold count up or keep its copy at once and leave the
  // liveness check to a background thread, which reads the key at a
  // snapshot taken just before the write and erases one copy if it was
  // live. false: the write path reads (the previous behaviour). At most
  // max_pending_checks checks wait at a time (each holds a snapshot and the
  // key); past that, writes read synchronously until the queue drains.
  // [1, 2^24].
  bool defer_liveness_checks = true;
  uint32_t max_pending_checks = 65536;
  // A write defers its check only while at most this many LiveKeyDB writes
  // (single-key calls and batches, itself included) are in progress; with
  // more, it reads the key itself (counted in busy_sync_reads). The
  // checker needs a core of its own: with every core writing, deferring
  // adds its costs (snapshots, the queue, the checker's reads and thread)
  // and saves the writers nothing (docs/LIVE_KEY_DB.md, "Several writers": 4 writers on 2 cores, synchronous reads 2.1x the deferred
  // throughput). 0 (default): the hardware threads minus one, at least 1.
  // To defer always, set it to at least your writer thread count.
  uint32_t max_deferring_writers = 0;

  // Overwrites while every core is writing (more LiveKeyDB writes in
  // progress than max_deferring_writers): a Put/Merge of a key the index
  // may hold, its state unknown, counts a copy without a read and without
  // a check (an unchecked copy: a second copy if the key was live). Such a
  // copy can only over-count (a stale entry once the key is deleted: a
  // false positive, never a lost key); the next rebuild's scan counts every
  // key exactly. At most this fraction of the index's sized_for keys are
  // taken per index; the write that reaches the limit schedules a rebuild,
  // and writes read as before until the rebuilt index swaps in. While a key
  // holds an unchecked copy, LiveKeyDB may remember it (per lock stripe, a
  // few keys), and a key's fingerprint takes at most 3 of them, so a hot
  // key never fills its blocks. Taken only with defer_liveness_checks on
  // (the busy rule is part of it), the dense kernel (the default; not once
  // its overflow stash exists), automatic rebuilds on
  // (auto_rebuild_drift > 0) and a budget of at least 64 copies, while the
  // index serves and no rebuild runs; Delete and WriteBatch still read
  // when busy. GetLiveKeyStats: unchecked_copies, unchecked_budget_rebuilds
  // and, per family, the active index's unchecked_copies.
  // Why: with every core writing, the read is the write's cost (a block
  // read per overwrite once the LSM outgrows the block cache, about 7 us
  // at 5.2M keys over a 32 MiB cache), on the write path itself; the
  // rebuild reads keys in order, once per budget of copies.
  // 0: busy writes always read. [0, 1].
  double unchecked_copy_budget = 0.125;

  // Rebuild scans log progress every this many keys. >= 1.
  uint64_t rebuild_progress_interval = 1000000;

  // Threads of a full rebuild scan (at Open and later): the key space is
  // split into 4 parts per thread of about equal bytes (RocksDB's size
  // estimates; fewer parts when they cannot tell), each scanned by its own
  // iterator, a thread taking the next part when it finishes one. The keys
  // go to the new index in key order, 1024 at a time (parts ahead of the
  // one being inserted queue at most 32 MiB of hashes), so the index is
  // the one-thread build's, bit for bit.
  // [1, 64]. 2 by default: on a 2-core VM two threads rebuilt a quiet
  // 5M-key DB's index 1.7-2.0x as fast as one (7-9M keys/s), but only
  // 1.04-1.16x after a crash, when RocksDB's own compaction held the other
  // core; figures in docs/LIVE_KEY_DB.md (recovery_bench). 1 leaves the
  // cores to the writers.
  uint32_t rebuild_scan_threads = 2;

  // Open returns as soon as RocksDB's own Open does. An index that could
  // not be loaded from the index file (first open of an existing DB, a
  // crash, a stale or corrupt file) is then built by the background
  // thread while the DB serves reads and writes: reads of that family go
  // to RocksDB (as a bypassed read) until the index is complete, and
  // writes keep it exact meanwhile (as during any rebuild). Stats
  // (LiveKeyCfStats::serving, build_keys_scanned) and the property
  // "dlcbf.livekey.state" tell when it is ready. A large index file (64 MiB
  // or more, or an index of that size at expected_keys) is read by that
  // thread too, as a checkpoint brought forward over the writes since
  // Open, so Open costs what RocksDB's does whatever the index's size
  // (a 300 MB index: 4-5 s of Open before). false: Open blocks until
  // every index is loaded or built (the behaviour before).
  bool background_open_build = true;

  // Checkpoints: after a memtable flush, at most once per this many
  // seconds, the background thread saves every serving index to the index
  // file with the sequence number it covers. Writers pause only while that
  // number is taken; a dense index (kernel kDense, the default) is then
  // copied 256 KiB at a time under its writer lock, so a writer waits for
  // one such chunk at most; a fast-kernel index is copied with the writers
  // paused (a memcpy of its table). The file is written after.
  // After a crash, Open loads the newest checkpoint and brings it forward
  // with only the keys written since it (the SST files whose largest
  // sequence number is past it, and the memtables), in the background
  // like a build (background_open_build). 0 disables checkpoints: only
  // Close saves the index, and a crash costs a full build. >= 0.
  double checkpoint_interval_seconds = 1.0;

  // Charge the memory of every index to this cache (usually the block
  // cache), as RocksDB charges filter construction and memtables: the
  // indexes' bytes (LiveKeyStats::index_bytes) are held there as one
  // pinned entry of that size (CacheEntryRole::kMisc on RocksDB >= 8), so
  // the cache evicts blocks to make room and its usage shows them. Updated
  // at Open, around every rebuild (the index being built is charged too
  // while it exists), after each checkpoint and after a column family is
  // dropped; released at Close. With strict_capacity_limit, a charge the
  // cache cannot hold fails: the previous one stays, and the failure is
  // counted (LiveKeyStats::cache_charge_failures) and logged; the index is
  // not changed. nullptr (default): no charge.
  std::shared_ptr<rocksdb::Cache> charge_cache;

  // OK, or InvalidArgument naming the field.
  rocksdb::Status Validate() const;
};

struct LiveKeyCfStats {
  uint32_t id = 0;
  std::string name;
  bool indexed = false;
  std::string bypass_reason;  // when !indexed

  // "dlcbf" (persistable), "dlcbf-migrating" (fast kernel past capacity,
  // copying into its ABF in steps; still persistable), "dlcbf-overflow"
  // (dense kernel full: new keys that find no room go to a small overflow
  // filter; not persisted), "elastic-abf" (fast kernel migrated to its
  // autoscaling Bloom filter; not persisted). The last three schedule a
  // rebuild (with automatic rebuilds on). "" when !indexed.
  std::string mode;
  uint64_t entries = 0;     // keys counted: live keys + stale entries
  uint64_t unchecked_copies = 0;  // of those, unchecked copies (unchecked_copy_budget)
  uint64_t sized_for = 0;   // keys the index was sized for
  double drift = 0;         // entries / sized_for
  uint64_t bytes = 0;       // filter memory, retained bytes included
  double predicted_fpr = 0; // model (dlcbf: paper Claim 3; ABF: model)

  // The index answers reads. False while the index Open could not load is
  // being built in the background (background_open_build): reads then go
  // to RocksDB. build_keys_scanned: that build's progress (keys so far).
  bool serving = false;
  uint64_t build_keys_scanned = 0;
  std::string build_error;        // the background build failed (reads bypass
                                  // until RebuildIndex() succeeds)
  bool loaded_from_file = false;  // the index of this Open came from the file
  uint64_t rebuilds = 0;          // open, manual and automatic
  bool rebuild_in_progress = false;
  std::string last_rebuild_reason;
  double last_rebuild_seconds = 0;
  uint64_t last_rebuild_keys = 0;          // keys scanned
  uint32_t last_rebuild_scan_parts = 0;    // parts of its scan (4 per rebuild_scan_threads); 0: a checkpoint replay
  uint64_t last_rebuild_deltas = 0;        // index updates replayed
  uint64_t last_rebuild_pause_micros = 0;  // writers paused for the swap
};

struct LiveKeyStats {
  // Reads.
  uint64_t lookups = 0;          // keys checked against the index
  uint64_t short_circuited = 0;  // of those, "no": RocksDB not touched
  uint64_t bypassed_reads = 0;   // snapshot/tier/timestamp/unindexed reads
  // Writes.
  uint64_t write_keys = 0;       // point keys handled for indexed families
  uint64_t liveness_reads = 0;   // base-DB reads issued by writes
  uint64_t index_inserts = 0;
  uint64_t index_erases = 0;
  uint64_t undone_inserts = 0;   // removed again after a failed write
  // Blind overwrites and deletes (see "Writes without a read").
  uint64_t deferred_checks = 0;  // liveness checks moved off the write path
  uint64_t check_erases = 0;     // of those, copies erased (key was live)
  uint64_t checks_dropped = 0;   // erases skipped: a rebuild or drop came first
  uint64_t check_snapshots = 0;  // snapshots taken for them (shared by many)
  uint64_t pending_checks = 0;   // queued now
  // Writes that read liveness on the write path because the check queue
  // was full (max_pending_checks): the checker did not keep up.
  uint64_t queue_full_fallbacks = 0;
  // Writes that read liveness on the write path because more than
  // max_deferring_writers writes were in progress (by design, not a
  // checker falling behind).
  uint64_t busy_sync_reads = 0;
  // Busy overwrites that counted an unchecked copy instead of reading
  // (unchecked_copy_budget), and the rebuilds their budget scheduled.
  uint64_t unchecked_copies = 0;
  uint64_t unchecked_budget_rebuilds = 0;
  uint64_t check_multigets = 0;  // the checker's reads (one MultiGet per
                                 // family and snapshot, up to 64 keys)
  // Writes LiveKeyDB did not make (see "Writes behind LiveKeyDB's back").
  // unverified_reads: keys the index said no to that went to RocksDB
  // because the DB's sequence number was past what LiveKeyDB's own writes
  // account for (a write in flight, or one it never saw; counted in
  // bypassed_reads too). unseen_write_detections: times such a write was
  // certain (every index then bypassed until rebuilt); trust_recoveries:
  // times every index was rebuilt after one; indexes_trusted: false from a
  // detection until its recovery.
  uint64_t unverified_reads = 0;
  uint64_t unseen_write_detections = 0;
  uint64_t trust_recoveries = 0;
  bool indexes_trusted = true;
  // Writes decided by what a pending check knows of their key (rep.h,
  // KnownKey): no read, no check, no extra copy (hot keys).
  uint64_t known_writes = 0;
  uint64_t delete_range_erased = 0;      // keys erased by DeleteRange scans
  uint64_t delete_range_limit_hits = 0;  // scans cut by the limit (stale)
  uint64_t ingested_keys = 0;    // keys read from ingested files
  // Rebuilds and persistence.
  uint64_t rebuilds = 0;
  uint64_t auto_rebuilds = 0;
  uint64_t failed_rebuilds = 0;
  // Indexes whose dlCBF went past capacity (migrating to, or migrated to,
  // the ABF) before a rebuild replaced them: the cliff that
  // rebuild_at_capacity is there to avoid.
  uint64_t index_migrations = 0;
  uint64_t checkpoints = 0;            // index files written by checkpoints
  // Of them, those that appended the changed blocks to the file (a delta)
  // instead of writing the whole index; bytes written by all of them, and
  // by the last one.
  uint64_t checkpoint_deltas = 0;
  uint64_t checkpoint_bytes = 0;
  uint64_t last_checkpoint_bytes = 0;
  // Checkpoints that failed (an I/O error; the info LOG says which): the
  // file keeps the last good one, and the next checkpoint writes it whole.
  uint64_t checkpoint_failures = 0;
  // The most memory one checkpoint held for its copies since Open. A dense
  // base or delta is streamed to its file as it is copied, a chunk of 4096
  // blocks at a time: the chunk (a base's 256 KiB, or a sparse base's or
  // a delta's records at 72 bytes per block, with their compact form),
  // a delta's list of the chunk's changed blocks (8 bytes per block) and
  // a 1 MiB read-back buffer. A table copied whole (fast kernel) adds its
  // image.
  uint64_t max_checkpoint_buffer_bytes = 0;
  // Writers paused by checkpoints (every stripe held while the sequence
  // number, the SST set and the fast-kernel tables are taken; dense tables
  // are copied after, a chunk at a time): the last one's pause and the
  // longest since Open.
  uint64_t last_checkpoint_pause_micros = 0;
  uint64_t max_checkpoint_pause_micros = 0;
  uint64_t last_checkpoint_seq = 0;    // the sequence number the last one covers
  uint64_t checkpoint_replays = 0;     // families brought forward from a checkpoint
  uint64_t checkpoint_replayed_keys = 0;  // keys counted to bring them forward
  uint64_t index_file_loads = 0;       // column families loaded from file
  uint64_t index_file_rejections = 0;  // files (or entries) not trusted
  std::string last_rejection;          // why
  // Memory: every index's bytes (the sum of LiveKeyCfStats::bytes; also
  // the DB property "dlcbf.livekey.index-bytes"), and what is charged to
  // LiveKeyIndexOptions::charge_cache now, with the charges it refused.
  uint64_t index_bytes = 0;
  uint64_t cache_charged_bytes = 0;
  uint64_t cache_charge_failures = 0;

  std::vector<LiveKeyCfStats> column_families;

  double ShortCircuitRate() const {
    return lookups == 0 ? 0.0 : static_cast<double>(short_circuited) / lookups;
  }
  // Multi-line human-readable summary.
  std::string ToString() const;
};

class LiveKeyDB : public rocksdb::StackableDB {
 public:
  // Opens (or creates) the DB at `path` with the default column family
  // only. InvalidArgument (naming the field) for bad index_options or a
  // null dbptr; otherwise what rocksdb::DB::Open returns (with
  // background_open_build = false: or the error of an index build). Loads
  // the index file; an index it cannot load is built in the background
  // (background_open_build, the default: reads bypass it until it is
  // complete) or before Open returns.
  static rocksdb::Status Open(const rocksdb::Options& options,
                              const LiveKeyIndexOptions& index_options,
                              const std::string& path, LiveKeyDB** dbptr);

  // Column-family-aware Open, as rocksdb::DB::Open. `handles` receives one
  // handle per descriptor (the caller's, as with RocksDB).
  static rocksdb::Status Open(const rocksdb::DBOptions& db_options,
                              const LiveKeyIndexOptions& index_options,
                              const std::string& path,
                              const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
                              std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                              LiveKeyDB** dbptr);

  // The DB as rocksdb::TransactionDB::Open opens it (write-committed
  // policy only: see "Transactions"), every commit indexed. *dbptr is
  // RocksDB's type; delete it (or Close it) as any TransactionDB.
  // InvalidArgument, before anything is opened, for a write_policy other
  // than WRITE_COMMITTED, bad index_options or a null pointer.
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
  // The DB as rocksdb::OptimisticTransactionDB::Open opens it, every
  // commit indexed.
  static rocksdb::Status OpenOptimisticTransactionDB(const rocksdb::Options& options,
                                                     const LiveKeyIndexOptions& index_options,
                                                     const std::string& path,
                                                     rocksdb::OptimisticTransactionDB** dbptr);
  static rocksdb::Status OpenOptimisticTransactionDB(
      const rocksdb::DBOptions& db_options, const rocksdb::OptimisticTransactionDBOptions& occ_options,
      const LiveKeyIndexOptions& index_options, const std::string& path,
      const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
      std::vector<rocksdb::ColumnFamilyHandle*>* handles, rocksdb::OptimisticTransactionDB** dbptr);
  // The LiveKeyDB under a DB those calls returned (owned by it), or
  // nullptr for any other DB. Thread-safe.
  static LiveKeyDB* FromTransactionDB(const rocksdb::DB* db);

  ~LiveKeyDB() override;
  LiveKeyDB(const LiveKeyDB&) = delete;
  LiveKeyDB& operator=(const LiveKeyDB&) = delete;

  // Rebuilds the index of `column_family` (nullptr: every indexed family)
  // from a DB scan, sized for the current number of entries, alongside
  // concurrent readers and writers (see "Drift and rebuilds"). Blocks until
  // done. NotSupported for an unindexed family.
  rocksdb::Status RebuildIndex(rocksdb::ColumnFamilyHandle* column_family = nullptr);

  // Blocks until no automatic rebuild is queued or running, at most
  // timeout_ms. False on timeout.
  bool WaitForBackgroundRebuilds(uint64_t timeout_ms);

  // Blocks until every deferred liveness check queued so far (see "Writes
  // without a read") has run, at most timeout_ms: then the index counts
  // are exact again (stats' entries = live keys + stale entries of the
  // documented kinds). False on timeout. Never needed for correctness.
  bool WaitForDeferredChecks(uint64_t timeout_ms);

  // Counters since Open and the state of every index. Cheap in dlCBF mode;
  // O(index size) for indexes in elastic mode.
  LiveKeyStats GetLiveKeyStats() const;

  // rocksdb::DB::GetProperty, plus, for an indexed family:
  //   "dlcbf.livekey.state": "ready", "building <keys scanned>" or
  //     "failed: <status>" (background_open_build);
  //   "dlcbf.livekey.stats": GetLiveKeyStats().ToString().
  // And, for any family: "dlcbf.livekey.index-bytes": the bytes of every
  // index (LiveKeyStats::index_bytes; also through GetIntProperty).
  // Other properties go to RocksDB.
  using rocksdb::StackableDB::GetProperty;
  bool GetProperty(rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& property,
                   std::string* value) override;
  using rocksdb::StackableDB::GetIntProperty;
  bool GetIntProperty(rocksdb::ColumnFamilyHandle* column_family, const rocksdb::Slice& property,
                      uint64_t* value) override;

  const LiveKeyIndexOptions& index_options() const;

  // ---- rocksdb::DB -------------------------------------------------------
  // Stops background rebuilds, persists the indexes (persist_index), closes
  // the base DB. A failure to persist is logged, not returned (the next
  // Open rebuilds). Idempotent.
  rocksdb::Status Close() override;
  rocksdb::Status Resume() override;
  // RocksDB's CompactFiles, with its input files made known to the closed
  // world (RocksDB reports no compaction events for it): the files it
  // removes are a compaction's, not a change LiveKeyDB cannot account for.
  // Through GetBaseDB() the same call is taken as an unseen change (reads
  // bypass the indexes until they are rebuilt).
  using rocksdb::StackableDB::CompactFiles;
  rocksdb::Status CompactFiles(const rocksdb::CompactionOptions& compact_options,
                               rocksdb::ColumnFamilyHandle* column_family,
                               const std::vector<std::string>& input_file_names, const int output_level,
                               const int output_path_id = -1,
                               std::vector<std::string>* const output_file_names = nullptr,
                               rocksdb::CompactionJobInfo* compaction_job_info = nullptr) override;

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
  using rocksdb::StackableDB::DeleteRange;
  rocksdb::Status DeleteRange(const rocksdb::WriteOptions& options,
                              rocksdb::ColumnFamilyHandle* column_family,
                              const rocksdb::Slice& begin_key,
                              const rocksdb::Slice& end_key) override;
  rocksdb::Status DeleteRange(const rocksdb::WriteOptions& options,
                              rocksdb::ColumnFamilyHandle* column_family,
                              const rocksdb::Slice& begin_key, const rocksdb::Slice& end_key,
                              const rocksdb::Slice& ts) override;
  rocksdb::Status Write(const rocksdb::WriteOptions& options,
                        rocksdb::WriteBatch* updates) override;
#if DLCBF_ROCKSDB_AT_LEAST(8, 9)
  // Wide columns in several column families at once (RocksDB >= 8.9): built
  // into one WriteBatch exactly as rocksdb::DB::PutEntity builds it, then
  // applied by Write (so every family's key gets its index update).
  rocksdb::Status PutEntity(const rocksdb::WriteOptions& options, const rocksdb::Slice& key,
                            const rocksdb::AttributeGroups& attribute_groups) override;
#endif

  using rocksdb::StackableDB::IngestExternalFile;
  rocksdb::Status IngestExternalFile(rocksdb::ColumnFamilyHandle* column_family,
                                     const std::vector<std::string>& external_files,
                                     const rocksdb::IngestExternalFileOptions& options) override;
  using rocksdb::StackableDB::IngestExternalFiles;
  rocksdb::Status IngestExternalFiles(
      const std::vector<rocksdb::IngestExternalFileArg>& args) override;
#if DLCBF_ROCKSDB_AT_LEAST(11, 5)
  // Two-phase ingestion (RocksDB >= 11.5). PrepareFileIngestion reads the
  // files' keys (rocksdb::SstFileReader, as IngestExternalFiles does) and
  // keeps them in the handle it returns, which wraps RocksDB's; the keys
  // are held until the commit (memory: the key bytes plus ~40 bytes each).
  // CommitFileIngestionHandles adds them to the index as IngestExternalFiles
  // does, with every stripe held, then commits; if the commit fails, the
  // added keys that did not become live are removed again. A handle from
  // the base DB (GetBaseDB()->PrepareFileIngestion) is refused with
  // InvalidArgument: its keys are unknown to the index.
  using rocksdb::StackableDB::PrepareFileIngestion;
  rocksdb::Status PrepareFileIngestion(
      const std::vector<rocksdb::IngestExternalFileArg>& args,
      std::unique_ptr<rocksdb::FileIngestionHandle>* handle) override;
  using rocksdb::StackableDB::CommitFileIngestionHandles;
  rocksdb::Status CommitFileIngestionHandles(
      std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> handles) override;
#endif
  // A family created from exported or external files: its index is built
  // by a scan before the handle is returned (a failed build leaves the
  // family unindexed, never half indexed: stats' bypass_reason says why).
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
  // Deletes every key outside [begin_key, end_key): those keys become stale
  // entries (false positives only), so a successful clip schedules a
  // background rebuild of the family that drops them.
  rocksdb::Status ClipColumnFamily(rocksdb::ColumnFamilyHandle* column_family,
                                   const rocksdb::Slice& begin_key,
                                   const rocksdb::Slice& end_key) override;
#endif

  rocksdb::Status CreateColumnFamily(const rocksdb::ColumnFamilyOptions& options,
                                     const std::string& column_family_name,
                                     rocksdb::ColumnFamilyHandle** handle) override;
  rocksdb::Status CreateColumnFamilies(const rocksdb::ColumnFamilyOptions& options,
                                       const std::vector<std::string>& column_family_names,
                                       std::vector<rocksdb::ColumnFamilyHandle*>* handles) override;
  rocksdb::Status CreateColumnFamilies(
      const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
      std::vector<rocksdb::ColumnFamilyHandle*>* handles) override;
  rocksdb::Status DropColumnFamily(rocksdb::ColumnFamilyHandle* column_family) override;
  rocksdb::Status DropColumnFamilies(
      const std::vector<rocksdb::ColumnFamilyHandle*>& column_families) override;
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
