// livekey_stress: a seeded, randomized differential stress test of
// LiveKeyDB, in the spirit of RocksDB's db_stress.
//
// What it does
//   Several threads (--threads) run a random mix of writes over a small key
//   universe (--keys per family, plus a pool of SingleDelete keys) in two
//   column families, "default" and "cf1": Put, Merge (a string-append
//   operator), Delete, SingleDelete, DeleteRange over small ranges,
//   WriteBatches with repeated keys (Put/Delete/Merge/PutEntity of one key
//   in one batch, across both families), PutEntity, IngestExternalFile (a
//   small SST of sorted keys written with rocksdb::SstFileWriter), the
//   foreign mix (writes, ingestions at global sequence number 0 and with
//   one through GetBaseDB(), DeleteFilesInRange, compaction filter
//   kRemoveAndSkipUntil, hash memtables with a prefix extractor, the
//   dlcbf_index memtable, avoid_flush_during_recovery), writes
//   with WriteOptions::disableWAL and with sync, Flush, CompactRange (a
//   compaction filter drops values that start with 'X'; such values are
//   written now and then), manual RebuildIndex, and, with --crash, SIGKILL.
//   Merges go to every fourth key, PutEntity to the others, and only those
//   are read with GetEntity (RocksDB 7.8.3's GetEntity crashes on a merge
//   whose operands reach an SST file).
//   Each session draws LiveKeyDB's options (dlcbf::LiveKeyIndexOptions)
//   from their whole valid range with the seeded RNG (kernel, tiny
//   expected_keys so the index overflows, automatic rebuilds, headroom,
//   stripes, deferred checks, checkpoints every 0.05-0.5 s, persistence,
//   background open builds, ...; the hash seed and kernel mostly stay, so
//   index files and checkpoints get loaded) and prints them. --chaos (on by
//   default) pauses the deferred-check thread and rebuild scans for
//   milliseconds at random (test hooks that only delay background work),
//   and inside some check pauses overwrites keys with 'X' values, flushes,
//   compacts, rebuilds and writes them again, so pending checks, scans,
//   compaction-filter removals and writers overlap.
//
// The oracle is the base DB itself
//   For every checked key: base DB finds it (GetBaseDB()->Get, default
//   ReadOptions) => LiveKeyDB finds it through each of Get, MultiGet,
//   GetEntity and KeyMayExist (which must return true). A key the base
//   finds both before and after LiveKeyDB's reads but LiveKeyDB answers
//   NotFound for (any of the four) is a LOST key (compaction filters make
//   keys vanish, kRemove, and come back, kRemoveAndSkipUntil, without a
//   write). Whatever a crash kept or lost, the base DB is the truth, so lost
//   WAL tails need no expected-state model. Checks run
//     - during each phase, on a sample (--check_weight; and on the key just
//       written, --check_after_write_prob) under the tool's own per-key
//       locks: a striped mutex array over the key universe (single-key
//       writers take their key's stripe, batches their stripes in
//       ascending order) and a shared mutex that DeleteRange and ingestion
//       take exclusively (everything else holds it shared), so no write to
//       the key runs between the LiveKeyDB reads and the base read (which
//       comes last); reads use default ReadOptions (no snapshot: the index
//       is consulted);
//     - over every key of both families (batched MultiGets in both forms)
//       with every tool writer stopped (the exclusive lock): now and then
//       during a phase (--verify_all_weight, and at the end of a chaos
//       pause), and after every phase, before and after waiting for the
//       deferred checks and background rebuilds;
//     - after every reopen: at once (reads may bypass an index still being
//       built) and again once every family's index serves.
//   SingleDelete keys ("s" keys) are only ever Put when absent and
//   SingleDeleted when present, never with disableWAL, so every
//   SingleDelete meets exactly one Put (RocksDB's contract) also across
//   crashes; trust_single_delete on and off must both be lossless.
//
// Rounds
//   A round is an in-process phase (--ops_per_round ops; it and --duration
//   are scaled by DLCBF_TEST_SCALE as in tests/test_scale.h), the checks
//   above, then Close (with a watchdog: no return within --hang_seconds is
//   "hang in Close") and, with --crash, a crash cycle: a child (this
//   binary, --role=child) opens the DB with its own drawn options and runs
//   the same workload until the parent SIGKILLs it at a random moment
//   (--min_kill_ms..--max_kill_ms, so some kills land inside Open) or just
//   after one of its checkpoints (--kill_after_checkpoint_prob: a
//   checkpoint then covers writes the crash may take back, a disableWAL
//   tail); the child's checks and counters reach the parent through a side
//   file (one write(2) per line). The next round reopens (mostly with the
//   child's seed and kernel, persisting: it loads the child's checkpoint
//   and brings it forward) and verifies.
//   --duration > 0 runs rounds until that many seconds have passed.
//
// Transactions (--txn)
//   Each Open (in-process and in the crash child) opens the session as
//   --txn says: none (LiveKeyDB::Open), pessimistic
//   (LiveKeyDB::OpenTransactionDB), optimistic
//   (LiveKeyDB::OpenOptimisticTransactionDB), or mixed (the default: each
//   Open draws one of the three from the run's RNG; printed with the index
//   options). A transaction session keeps RocksDB's TransactionDB /
//   OptimisticTransactionDB and uses LiveKeyDB::FromTransactionDB's
//   LiveKeyDB for everything that needs it (stats, RebuildIndex,
//   ingestion, Flush, CompactRange, every check); the single-key writes,
//   the SingleDelete-key writes, WriteBatches and the chaos rewrites go
//   through the transaction DB's own Put/Merge/Delete/SingleDelete/
//   PutEntity/Write (--txn_db_writes=false, a diagnostic: in pessimistic
//   sessions as explicit transactions instead). DeleteRange goes through
//   the OptimisticTransactionDB, and in a pessimistic session through the
//   LiveKeyDB (the TransactionDB's own is NotSupported). What RocksDB
//   refuses there is learned at the first refusal (NotSupported or
//   InvalidArgument) and skipped from then on in that kind of session
//   (counted, never an error): with RocksDB 7.8.3 a DeleteRange in both
//   kinds (the LiveKeyDB writes its batch through RocksDB's transaction
//   DB, which refuses range deletions: "DeleteRangeCF not implemented",
//   "Not implemented"), and PutEntity in pessimistic sessions
//   (TransactionDB writes are rebuilt as transactions: "PutEntityCF not
//   implemented"; batches then write such entries as Puts).
//   Found by this mode (both fixed, each with a regression test): the
//   TransactionDB's own writes (transaction_db.cc) once built their
//   one-batch transaction with RocksDB's RebuildFromWriteBatch, which takes
//   each entry's family from DBImpl::GetColumnFamilyHandle (one handle the
//   write thread re-points): concurrent writers put entries into the other
//   family (ConcurrentDbWritesLandInTheirFamily); and a disableWAL commit
//   (transactions.cc) was not counted for the next checkpoint, which then
//   claimed it before it was durable (ctest
//   livekey_stress_txn_disablewal_checkpoint).
//   --txn_db_writes=false runs those writes as explicit transactions
//   instead (a diagnostic).
//   The op kTxn (--txn_weight) runs a transaction over 1..4 keys of both
//   families with all their tool stripes held: Get / GetForUpdate /
//   MultiGet (a key the transaction wrote must read back as written, a key
//   it deleted NotFound: an ERROR otherwise; a key it did not write is
//   compared with the base DB like a check: the base finds it, the
//   transaction does not => LOST), Put / Merge (merge keys) / Delete /
//   PutEntity (RocksDB >= 9.3; before that, Put), savepoints rolled back
//   to or kept, 1 in 8 rolled back instead of committed; in pessimistic
//   sessions 1 in 4 are named, Prepared, get a commit-time batch entry
//   (Put, or PutEntity on a non-merge key) and commit (half of them
//   pause up to --txn_prepare_pause_ms after Prepare, so crash kills find
//   prepared transactions). Busy, TimedOut, TryAgain and Expired are
//   conflicts (rolled back, counted in txn_conflicts). SingleDelete keys
//   are never written by transactions. A reopened pessimistic session
//   commits half of the recovered prepared transactions
//   (GetAllPreparedTransactions) and rolls back the rest before its
//   checks. RocksDB recovers two-phase WAL sections (Prepare markers,
//   committed or not) only through TransactionDB::Open: a plain or
//   optimistic Open returns NotSupported ("WAL contains prepared
//   transactions"), and with assertions on, as in the system RocksDB
//   7.8.3 here, aborts the process instead (an assert in
//   WriteBatchInternal::Iterate). So once a run has had a pessimistic
//   session, a non-transaction Open (the parent's, or the crash child's,
//   decided by the parent) is first tried read-only in a process of its
//   own (--role=probe); if that is refused or aborts, the session opens
//   pessimistic instead, and an Open that returns the refusal is redone
//   pessimistic (both printed, counted in txn_open_fallbacks).
//
// Output
//   The seed and the drawn options first, a progress line every ~10 s,
//   one line per round (rebuild counts, index modes), the first few losses
//   (key, family, the read paths that missed), and at the end:
//     livekey_stress: seed=S rounds=R ops=N puts=.. merges=.. deletes=.. single_deletes=.. delete_ranges=.. batches=.. entities=.. ingests=.. flushes=.. compactions=.. manual_rebuilds=.. auto_rebuilds=.. checkpoints=.. checkpoint_deltas=.. reopens=.. kills=.. txns=.. txn_commits=.. txn_rollbacks=.. txn_prepared=.. txn_conflicts=.. txn_reads=.. recovered_prepared=.. (committed/rolled back) skipped_delete_ranges=.. skipped_entities=.. batch_entities_as_puts=.. sessions=none:a,pessimistic:b,optimistic:c txn_open_fallbacks=.. checks=C lost=L
//   (auto_rebuilds and checkpoints summed from GetLiveKeyStats() over
//   every session, the crash children's included). Exit 1 on any loss, on
//   a rebuild storm (more than --max_auto_rebuilds_per_kop automatic
//   rebuilds per 1000 written keys in a round), on a hang (Close, Open,
//   RebuildIndex, WaitForDeferredChecks/WaitForBackgroundRebuilds or the
//   open build past --hang_seconds) and on unexpected errors; 0 otherwise.
//   --expect_loss (negative control) inverts it: exit 0 iff a loss was
//   found. With --fault=N (filter_policy/testing/live_key_db_testing.h)
//   it catches faults 2, 3, 6, 7, 9, 10 and (with --txn=pessimistic) 11
//   within a few rounds (8 now and then); fault 1 (a window between the
//   base write and the index insert) is invisible to it by construction,
//   since no check of a key runs during a write to it
//   (tests/live_key_db_oracle_test.cc catches it).
//
// Examples
//   build/tools/livekey_stress                           (4 rounds, time seed)
//   build/tools/livekey_stress --seed=7 --crash --rounds=8
//   build/tools/livekey_stress --duration=600 --crash    (soak, 10 min)
//   build/tools/livekey_stress --seed=7 --rounds=8 --fault=2 --expect_loss --force_defer
//       --index_options=kernel=dense,bits_per_key=11.5,expected_keys=2000,auto_rebuild_drift=0
//       (one line: the negative control of ctest)
//   build/tools/livekey_stress --crash --fault=9 --expect_loss --kill_after_checkpoint_prob=1
//       --disable_wal_prob=0.4 --index_options=checkpoint_interval_seconds=0.05,persist_index=1
//   build/tools/livekey_stress --foreign_write_prob=0.01 (writes LiveKeyDB cannot see)
//   build/tools/livekey_stress --txn=pessimistic --crash --duration=45  (transactions only)
//   build/tools/livekey_stress --seed=3 --rounds=3 --txn=pessimistic --txn_db_writes=false --txn_weight=200
//       --fault=11 --expect_loss      (commits not indexed: the negative control of ctest)
// ctest: livekey_stress_short, livekey_stress_negative_* (tests/CMakeLists.txt).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>

#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/live_key_db.h"
#include "tests/rocksdb_test_util.h"  // (Diag: a LiveKeyStats diagnostic by name)
#include "dlcbf/rocksdb/memtable_index.h"
#include "rocksdb/compaction_filter.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/transaction_db.h"
#include "rocksdb/utilities/write_batch_with_index.h"
#include "rocksdb/wide_columns.h"
#include "rocksdb/write_batch.h"
#include "tests/test_scale.h"

// The test hooks: in a build against a library without them (in-tree
// mode, DLCBF_HOOK_STUBS) the differential oracle and the foreign mix run
// as in a test build; --fault and --expect_loss are refused (main), and
// the chaos thread's checker/rebuild pauses, the busy-writer mode and the
// checkpoint chunk sizes keep the library's own behaviour ("hooks=0" in
// the options line says so).
#include "filter_policy/testing/live_key_db_testing.h"
namespace hooks = dlcbf::internal;
constexpr bool kHaveHooks = hooks::kLiveKeyHooks;

// LiveKeyDB's rebuild holds every stripe mutex at once, more locks than
// TSan's deadlock detector tracks per thread (tools/run.sh tsan runs the
// LiveKeyDB suites with detect_deadlocks=0 for that reason): the same here,
// whichever ctest invocation runs this tool. Data races are still reported.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "detect_deadlocks=0"; }
#endif

DEFINE_string(role, "parent",
              "parent (runs the rounds), child (a crash cycle's writer, killed by the parent) or probe (opens the DB "
              "read-only as a non-transaction Open would: see RunProbe)");
DEFINE_uint64(seed, 0, "random seed (0 = from the clock; printed)");
DEFINE_int32(rounds, 4, "rounds (each: an in-process phase, checks, Close; with --crash a SIGKILL cycle)");
DEFINE_double(duration, 0,
              "seconds: run rounds until this much time has passed (0 = --rounds; times DLCBF_TEST_SCALE)");
DEFINE_double(large_index_prob, 0, "probability that an Open sizes the index at 68-90 MB (a large index file, "
              "loaded by the background build)");
DEFINE_uint64(ops_per_round, 20000, "operations per in-process phase (all threads; times DLCBF_TEST_SCALE)");
DEFINE_int32(threads, 4, "workload threads");
DEFINE_int32(keys, 2000, "keys per column family (plus keys/16, at least 8, SingleDelete keys)");
DEFINE_string(db, "", "DB directory (default: a fresh one under $TEST_TMPDIR or /tmp, removed at the end)");
DEFINE_bool(keep, false, "keep the DB directory at the end");
DEFINE_bool(crash, false, "a SIGKILL crash cycle after every round");
DEFINE_int32(min_kill_ms, 50, "--crash: earliest kill after the child starts (ms)");
DEFINE_int32(max_kill_ms, 1500, "--crash: latest kill after the child starts (ms)");
DEFINE_double(foreign_write_prob, 0.002,
              "probability that a Put goes through GetBaseDB() (a writer LiveKeyDB does not see)");
// The foreign mix: what makes keys visible behind LiveKeyDB without a
// write it sees (the threat model, filter_policy/rocksdb/live_key_db/README.md).
DEFINE_double(foreign_ingest_weight, 0.05,
              "weight of an IngestExternalFile through GetBaseDB(): half of them of fresh keys that overlap "
              "nothing (global sequence number 0), half of keys of the universe (a new sequence number)");
DEFINE_double(delete_files_weight, 0.05,
              "weight of rocksdb::DeleteFilesInRange over 1/8..1/2 of a family's keys (drops whole L1+ files; "
              "older versions below them become visible again)");
DEFINE_double(hash_memtable_prob, 0.3,
              "probability that an Open uses a hash memtable (hash skip list or hash link list) with a "
              "prefix extractor, else a skip list (a fifth of those wrapped in dlcbf_index)");
DEFINE_double(avoid_flush_during_recovery_prob, 0.3,
              "probability that an Open sets avoid_flush_during_recovery (the recovered WAL stays in the "
              "memtable, where a checkpoint's replay reads it)");
DEFINE_int32(fault, 0, "dlcbf::internal::LiveKeyFault to set (filter_policy/testing/live_key_db_testing.h)");
DEFINE_double(live_prefix_prob, 0.5,
              "share of Opens with LiveKeyIndexOptions::live_prefix_counts (their Seeks are checked against the "
              "base DB's at one snapshot)");
DEFINE_double(live_range_prob, 0.5,
              "share of Opens with LiveKeyIndexOptions::live_range_lengths {5, 6} (runs of 100 and 10 keys; "
              "their total-order Seeks are checked against the base DB's at one snapshot)");
DEFINE_int32(seek_wait_every, 16, "one Seek check in this many waits --seek_wait_us between its iterators and its Seeks");
DEFINE_int32(seek_wait_us, 1000, "see --seek_wait_every");
DEFINE_bool(expect_loss, false, "negative control: exit 0 iff a loss was found (stops at the first)");
DEFINE_double(busy_writers_prob, 1.0 / 3,
              "probability that an Open runs with every write busy (the test hook: unchecked copies and busy "
              "reads, as with more writes in progress than max_deferring_writers)");
DEFINE_bool(expect_unchecked_copies, false,
            "fail unless the in-process sessions took unchecked copies (unchecked_copy_budget) at all");
DEFINE_bool(force_defer, false,
            "force deferred liveness checks on (defer_liveness_checks, max_deferring_writers=64, "
            "max_pending_checks=65536, no busy writers)");
DEFINE_string(index_options, "",
              "overrides applied after the draw, name=value[,name=value...]: kernel (dense|fast), "
              "expected_keys, bits_per_key, sizing_load, abf_counter_bits, auto_rebuild_drift, "
              "rebuild_at_capacity, rebuild_headroom, lock_stripes, delete_range_scan_limit, "
              "trust_single_delete, persist_index, defer_liveness_checks, max_pending_checks, "
              "max_deferring_writers, rebuild_scan_threads, background_open_build, "
              "checkpoint_interval_seconds, seed, rebuild_progress_interval, unchecked_copy_budget");
DEFINE_bool(redraw_options, true, "draw new index options at every Open (false: one draw per run)");
DEFINE_double(max_auto_rebuilds_per_kop, 50,
              "a round with more automatic rebuilds per 1000 written keys is a rebuild storm");
DEFINE_double(hang_seconds, 60,
              "Close, Open, RebuildIndex, the waits and the open build longer than this are a hang "
              "(a phase: 5x this)");
DEFINE_bool(continue_after_loss, false, "keep running rounds after a loss (default: stop after that round)");
DEFINE_int32(print_losses, 10, "losses printed in full");
DEFINE_double(chaos_rewrite_prob, 0.15,
              "--chaos: probability that a pause is one of the checker pauses that rewrite keys with "
              "'X' values, flush, compact, rebuild and write them again (the known-state window)");
DEFINE_bool(chaos, true,
            "pause LiveKeyDB's deferred-check thread (0-100 ms; sometimes with a flush, full "
            "compaction and RebuildIndex inside the pause) and rebuild scans (0-20 ms) at random "
            "moments during the workload (test hooks; they only delay background work), so writes, "
            "checks, rebuilds and compactions overlap more");
DEFINE_double(kill_after_checkpoint_prob, 0.5,
              "--crash: probability that a kill lands 0-20 ms after one of the child's checkpoints "
              "(else at a random moment)");
// The mix (relative weights).
DEFINE_double(put_weight, 30, "weight of Put");
DEFINE_double(merge_weight, 10, "weight of Merge");
DEFINE_double(delete_weight, 14, "weight of Delete");
DEFINE_double(single_delete_weight, 6, "weight of SingleDelete (Put when absent) on the SingleDelete keys");
DEFINE_double(delete_range_weight, 0.5, "weight of DeleteRange over 1..16 keys");
DEFINE_double(batch_weight, 10, "weight of a WriteBatch of 2..8 entries over 1..4 keys of both families");
DEFINE_double(entity_weight, 5, "weight of PutEntity");
DEFINE_double(ingest_weight, 0.1, "weight of IngestExternalFile (1..32 sorted keys)");
DEFINE_double(flush_weight, 0.3, "weight of Flush");
DEFINE_double(compact_weight, 0.1, "weight of CompactRange");
DEFINE_double(rebuild_weight, 0.03, "weight of a manual RebuildIndex()");
DEFINE_double(check_weight, 10, "weight of a sampled check of a random key");
DEFINE_double(verify_all_weight, 0.02,
              "weight of a check of every key with all tool writers stopped (the exclusive lock)");
DEFINE_double(check_after_write_prob, 0.2, "probability of checking a single key right after writing it");
DEFINE_double(disable_wal_prob, 0.1, "probability of WriteOptions::disableWAL on a write");
DEFINE_double(sync_prob, 0.02, "probability of WriteOptions::sync on a write");
DEFINE_double(x_value_prob, 0.05, "probability that a Put value starts with 'X' (dropped by the compaction filter)");
DEFINE_double(skip_until_prob, 0.1,
              "probability that an 'X' value is \"XS\": the compaction filter answers kRemoveAndSkipUntil for it "
              "(over the next 1..8 keys)");
DEFINE_int32(value_size, 24, "bytes of padding in Put values");
// Transactions.
DEFINE_string(txn, "mixed",
              "sessions: none (LiveKeyDB::Open), pessimistic (LiveKeyDB::OpenTransactionDB), optimistic "
              "(LiveKeyDB::OpenOptimisticTransactionDB) or mixed (each Open, the crash child's included, "
              "draws one of the three)");
DEFINE_double(txn_weight, 10,
              "weight of a transaction over 1..4 keys of both families (ignored in sessions without "
              "transactions)");
DEFINE_bool(txn_db_writes, true,
            "transaction sessions: the single-key writes, batches and chaos rewrites go through the "
            "transaction DB's own Put/Merge/Delete/SingleDelete/PutEntity/Write; false (a diagnostic): in "
            "pessimistic sessions they run as explicit transactions instead (BeginTransaction, the batch's "
            "entries through the transaction's Put/Merge/Delete/SingleDelete, Commit)");
DEFINE_int32(txn_prepare_pause_ms, 2,
             "named transactions: half of them pause 0..this many ms between Prepare and Commit (crash "
             "kills then find prepared transactions)");
// Child only.
DEFINE_string(side_file, "", "child: the side file (counters, losses) the parent reads");
DEFINE_uint64(child_seed, 1, "child: random seed");
DEFINE_int32(round, 0, "child: round number (for unique values)");

namespace {

using dlcbf::testing_util::Diag;

using Clock = std::chrono::steady_clock;
using rocksdb::ColumnFamilyHandle;
using rocksdb::PinnableSlice;
using rocksdb::ReadOptions;
using rocksdb::Slice;
using rocksdb::Status;
using rocksdb::WriteOptions;
using dlcbf::LiveKeyDB;
using dlcbf::LiveKeyIndexOptions;
using dlcbf::LiveKeyStats;

const char* const kFamilies[2] = {"default", "cf1"};
constexpr int kNumFamilies = 2;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void RemoveTempDb();

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "livekey_stress: FATAL: %s\n", msg.c_str());
  std::fflush(nullptr);
  RemoveTempDb();  // the parent's own temporary DB only (a child never has one)
  std::_Exit(2);
}

// ---- counters ----------------------------------------------------------------

struct Counters {
  std::atomic<uint64_t> ops{0}, puts{0}, merges{0}, deletes{0}, single_deletes{0}, delete_ranges{0},
      batches{0}, entities{0}, ingests{0}, flushes{0}, compactions{0}, manual_rebuilds{0}, foreign_puts{0},
      checks{0}, lost{0}, errors{0}, write_keys{0};
  // The foreign mix: base-DB ingestions (those at global sequence number
  // 0), DeleteFilesInRange calls and the files they dropped, Opens with a
  // hash memtable, with dlcbf_index, with avoid_flush_during_recovery.
  std::atomic<uint64_t> foreign_ingests{0}, foreign_ingests_at_zero{0}, delete_files{0}, dropped_files{0},
      hash_memtable_opens{0}, dlcbf_index_opens{0}, avoid_flush_opens{0};
  // From GetLiveKeyStats(), per session, and the parent's own.
  std::atomic<uint64_t> auto_rebuilds{0}, checkpoints{0}, reopens{0}, kills{0}, storms{0}, hangs{0};
  std::atomic<uint64_t> checkpoint_deltas{0};  // (the parent's sessions only)
  std::atomic<uint64_t> unchecked_copies{0};   // (the parent's sessions only)
  // Seeks compared (SeekCheck), and those LiveKeyDB answered from its
  // live-prefix counts (the parent's sessions only).
  std::atomic<uint64_t> seek_checks{0}, dead_prefix_seeks{0}, moved_seeks{0};
  std::atomic<uint64_t> seek_checks_inconclusive{0};  // the base's two iterators differed (SeekCheck)
  // Transactions (kTxn), recovered prepared transactions, DeleteRange ops
  // skipped in pessimistic sessions, sessions by kind (none, pessimistic,
  // optimistic) and Opens redone pessimistic.
  std::atomic<uint64_t> txns{0}, txn_commits{0}, txn_rollbacks{0}, txn_prepared{0}, txn_conflicts{0}, txn_reads{0},
      recovered_prepared{0}, recovered_commits{0}, recovered_rollbacks{0}, skipped_delete_ranges{0},
      sessions[3] = {{0}, {0}, {0}}, open_fallbacks{0}, skipped_entities{0}, batch_entities_as_puts{0};
};
Counters g;                          // this process
std::atomic<bool> g_stop{false};     // workers stop (end of phase, or a negative control caught)
std::atomic<int> g_round{0};
uint64_t g_seed = 0;
int g_side_fd = -1;                  // child: the side file
std::string g_db_dir;
bool g_temp_db = false;
Clock::time_point g_start;

// One line, one write(2) (child side file: atomic with O_APPEND, survives
// SIGKILL once written).
void WriteLine(int fd, const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Die(std::string("write to side file: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
}

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string SummaryLine() {
  return Fmt("livekey_stress: seed=%" PRIu64 " rounds=%d ops=%" PRIu64 " puts=%" PRIu64 " merges=%" PRIu64
             " deletes=%" PRIu64 " single_deletes=%" PRIu64 " delete_ranges=%" PRIu64 " batches=%" PRIu64
             " entities=%" PRIu64 " ingests=%" PRIu64 " flushes=%" PRIu64 " compactions=%" PRIu64
             " manual_rebuilds=%" PRIu64 " auto_rebuilds=%" PRIu64 " checkpoints=%" PRIu64 " checkpoint_deltas=%" PRIu64
             " reopens=%" PRIu64 " kills=%" PRIu64 " txns=%" PRIu64 " txn_commits=%" PRIu64 " txn_rollbacks=%" PRIu64
             " txn_prepared=%" PRIu64 " txn_conflicts=%" PRIu64 " txn_reads=%" PRIu64 " recovered_prepared=%" PRIu64
             " (%" PRIu64 "/%" PRIu64 ") skipped_delete_ranges=%" PRIu64 " skipped_entities=%" PRIu64
             " batch_entities_as_puts=%" PRIu64 " sessions=none:%" PRIu64
             ",pessimistic:%" PRIu64 ",optimistic:%" PRIu64 " txn_open_fallbacks=%" PRIu64 " checks=%" PRIu64
             " unchecked_copies=%" PRIu64 " foreign_puts=%" PRIu64 " foreign_ingests=%" PRIu64
             " (at_seqno_0=%" PRIu64 ") delete_files=%" PRIu64 " (dropped_files=%" PRIu64 ") opens_hash_memtable=%" PRIu64
             " opens_dlcbf_index=%" PRIu64 " opens_avoid_flush_during_recovery=%" PRIu64 " seek_checks=%" PRIu64
             " (inconclusive=%" PRIu64 ") dead_prefix_seeks=%" PRIu64 " moved_seeks=%" PRIu64 " lost=%" PRIu64,
             g_seed, g_round.load(), g.ops.load(), g.puts.load(), g.merges.load(), g.deletes.load(),
             g.single_deletes.load(), g.delete_ranges.load(), g.batches.load(), g.entities.load(),
             g.ingests.load(), g.flushes.load(), g.compactions.load(), g.manual_rebuilds.load(),
             g.auto_rebuilds.load(), g.checkpoints.load(), g.checkpoint_deltas.load(), g.reopens.load(),
             g.kills.load(), g.txns.load(),
             g.txn_commits.load(), g.txn_rollbacks.load(), g.txn_prepared.load(), g.txn_conflicts.load(),
             g.txn_reads.load(), g.recovered_prepared.load(), g.recovered_commits.load(),
             g.recovered_rollbacks.load(), g.skipped_delete_ranges.load(), g.skipped_entities.load(),
             g.batch_entities_as_puts.load(), g.sessions[0].load(),
             g.sessions[1].load(), g.sessions[2].load(), g.open_fallbacks.load(), g.checks.load(),
             g.unchecked_copies.load(), g.foreign_puts.load(), g.foreign_ingests.load(),
             g.foreign_ingests_at_zero.load(), g.delete_files.load(), g.dropped_files.load(),
             g.hash_memtable_opens.load(), g.dlcbf_index_opens.load(), g.avoid_flush_opens.load(),
             g.seek_checks.load(), g.seek_checks_inconclusive.load(), g.dead_prefix_seeks.load(), g.moved_seeks.load(),
             g.lost.load());
}

void RemoveTempDb() {
  if (g_temp_db && !FLAGS_keep && !g_db_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(g_db_dir, ec);
    std::filesystem::remove_all(g_db_dir + ".side", ec);
    std::filesystem::remove_all(g_db_dir + ".sst", ec);
  }
}

// Losses and errors: printed (parent) or sent to the parent (child). The
// parent also keeps the first of each, repeated beside the verdict, so a
// FAILED run's last lines say why.
std::mutex g_print_mu;
std::string g_first_loss, g_first_error;  // guarded by g_print_mu
void ReportLoss(const std::string& what) {
  const uint64_t n = g.lost.fetch_add(1) + 1;
  if (FLAGS_expect_loss) g_stop = true;
  if (g_side_fd >= 0) {
    WriteLine(g_side_fd, "L " + what + "\n");
    return;
  }
  std::lock_guard<std::mutex> l(g_print_mu);
  if (g_first_loss.empty()) g_first_loss = what;
  if (n <= static_cast<uint64_t>(FLAGS_print_losses)) {
    std::printf("livekey_stress: LOST %s\n", what.c_str());
    std::fflush(stdout);
  }
}
void ReportError(const std::string& what) {
  const uint64_t n = g.errors.fetch_add(1) + 1;
  if (g_side_fd >= 0) {
    WriteLine(g_side_fd, "E " + what + "\n");
    return;
  }
  std::lock_guard<std::mutex> l(g_print_mu);
  if (g_first_error.empty()) g_first_error = what;
  if (n <= 20) {
    std::printf("livekey_stress: ERROR %s\n", what.c_str());
    std::fflush(stdout);
  }
}

// ---- watchdog ------------------------------------------------------------------

// Calls that may hang (Close, Open, the waits) run under a HangGuard: past
// --hang_seconds the watchdog prints "hang in <what>", the summary line,
// and _exits(1).
class Watchdog {
 public:
  uint64_t Arm(const std::string& what, double slack_seconds) {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t id = ++next_;
    armed_[id] = {what, Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(slack_seconds * 1000))};
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    return id;
  }
  void Disarm(uint64_t id) {
    std::lock_guard<std::mutex> l(mu_);
    armed_.erase(id);
  }

 private:
  void Loop() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& a : armed_) {
        const double s = Seconds(a.second.second);
        if (s > FLAGS_hang_seconds) {
          std::printf("livekey_stress: hang in %s (no return after %.0f s; seed=%" PRIu64 ")\n",
                      a.second.first.c_str(), s, g_seed);
          std::printf("%s\n", SummaryLine().c_str());
          std::printf("livekey_stress: FAILED (hang)\n");
          std::fflush(nullptr);
          RemoveTempDb();
          std::_Exit(1);
        }
      }
    }
  }
  std::mutex mu_;
  uint64_t next_ = 0;
  std::map<uint64_t, std::pair<std::string, Clock::time_point>> armed_;
  std::thread thread_;  // never joined: the process ends with _exit or exit
};
Watchdog* g_watchdog = new Watchdog;  // leaked on purpose (its thread outlives main)

// slack_seconds: for calls with a timeout of their own (which report the
// hang themselves), so the watchdog fires only if that timeout fails.
struct HangGuard {
  explicit HangGuard(const std::string& what, double slack_seconds = 0)
      : id(g_watchdog->Arm(what, slack_seconds)) {}
  ~HangGuard() { g_watchdog->Disarm(id); }
  uint64_t id;
};

// ---- RocksDB pieces ---------------------------------------------------------------

// value = existing + "," + operand.
class StressAppendOperator : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const Slice&, const Slice* existing, const Slice& value, std::string* out,
             rocksdb::Logger*) const override {
    out->clear();
    if (existing != nullptr) {
      out->assign(existing->data(), existing->size());
      out->push_back(',');
    }
    out->append(value.data(), value.size());
    return true;
  }
  const char* Name() const override { return "StressAppendOperator"; }
};

// Drops every value that starts with 'X': keys removed behind LiveKeyDB's
// back (stale entries, never losses).
int NumKKeys();
std::string KeyOf(int i);

// Drops values that start with 'X' (kRemove: the value becomes a
// tombstone). Those that start with "XS" on a k key answer
// kRemoveAndSkipUntil instead, over the next 1..8 k keys: the entries
// skipped (tombstones included) are dropped unread, and older versions
// below them may be visible again (the compaction-filter guard,
// filter_policy/rocksdb/live_key_db/compaction_filter_guard.h, must see it).
// SingleDelete keys ("s") are never skipped (their one-Put contract).
class DropXFilter : public rocksdb::CompactionFilter {
 public:
  Decision FilterV2(int, const Slice& key, ValueType type, const Slice& existing_value, std::string*,
                    std::string* skip_until) const override {
    if (type != ValueType::kValue || existing_value.empty() || existing_value[0] != 'X') return Decision::kKeep;
    dropped.fetch_add(1, std::memory_order_relaxed);
    if (existing_value.size() > 1 && existing_value[1] == 'S' && key.size() == 7 && key[0] == 'k') {
      const int i = std::atoi(std::string(key.data() + 1, 6).c_str());
      const int next = i + 1 + i % 8;
      *skip_until = next >= NumKKeys() ? std::string("k~") : KeyOf(next);
      skips.fetch_add(1, std::memory_order_relaxed);
      return Decision::kRemoveAndSkipUntil;
    }
    return Decision::kRemove;
  }
  const char* Name() const override { return "DropXFilter"; }
  mutable std::atomic<uint64_t> dropped{0}, skips{0};
};
DropXFilter* g_filter = new DropXFilter;  // outlives every DB

// The memtable kind and recovery option of the next Open (DrawMemtable).
enum class MemtableKind { kSkipList, kHashSkipList, kHashLinkList };
struct MemtableDraw {
  MemtableKind kind = MemtableKind::kSkipList;
  bool dlcbf_index = false;  // the kind wrapped in the dlcbf_index decorator
  bool avoid_flush_during_recovery = false;
};
MemtableDraw g_memtable;

MemtableDraw DrawMemtable(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  MemtableDraw d;
  if (u(rng) < FLAGS_hash_memtable_prob) d.kind = u(rng) < 0.5 ? MemtableKind::kHashSkipList : MemtableKind::kHashLinkList;
  d.dlcbf_index = u(rng) < 0.2;
  d.avoid_flush_during_recovery = u(rng) < FLAGS_avoid_flush_during_recovery_prob;
  return d;
}

const char* MemtableName(const MemtableDraw& d) {
  const char* k = d.kind == MemtableKind::kHashSkipList   ? "hash_skiplist"
                  : d.kind == MemtableKind::kHashLinkList ? "hash_linklist"
                                                          : "skiplist";
  static thread_local std::string s;
  s = std::string(k) + (d.dlcbf_index ? "+dlcbf_index" : "") +
      (d.avoid_flush_during_recovery ? " avoid_flush_during_recovery" : "");
  return s.c_str();
}

// Applies g_memtable: a hash memtable needs a prefix extractor (the keys'
// first two bytes: "k0", "s0", ...) and takes one writer at a time.
void ApplyMemtable(rocksdb::Options* o) {
  std::shared_ptr<rocksdb::MemTableRepFactory> f;
  switch (g_memtable.kind) {
    case MemtableKind::kSkipList: f = std::make_shared<rocksdb::SkipListFactory>(); break;
    // (256 buckets: the default bucket arrays alone, 8 MB and 400 KB,
    // would fill the 64 KB write buffer at once.)
    case MemtableKind::kHashSkipList: f.reset(rocksdb::NewHashSkipListRepFactory(256)); break;
    case MemtableKind::kHashLinkList: f.reset(rocksdb::NewHashLinkListRepFactory(256)); break;
  }
  if (g_memtable.kind != MemtableKind::kSkipList) {
    o->prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(2));
    o->allow_concurrent_memtable_write = false;
  }
  if (g_memtable.dlcbf_index) {
    std::shared_ptr<rocksdb::MemTableRepFactory> wrapped;
    if (dlcbf::NewDLeftIndexedMemTableRepFactory(f, dlcbf::MemTableIndexOptions(), &wrapped).ok()) f = wrapped;
  }
  o->memtable_factory = f;
  o->avoid_flush_during_recovery = g_memtable.avoid_flush_during_recovery;
}

rocksdb::Options BaseOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  o.merge_operator = std::make_shared<StressAppendOperator>();
  o.compaction_filter = g_filter;
  // Small buffers and files: flushes (and so checkpoints), L0 compactions
  // and several SSTs within a short phase.
  o.write_buffer_size = 64 << 10;
  o.max_write_buffer_number = 3;
  o.target_file_size_base = 128 << 10;
  o.max_bytes_for_level_base = 512 << 10;
  o.level0_file_num_compaction_trigger = 3;
  o.max_background_jobs = 2;
  o.stats_dump_period_sec = 0;
  o.keep_log_file_num = 4;
  return o;
}

// ---- index options --------------------------------------------------------------------

const char* KernelName(dlcbf::ElasticKernel k) { return k == dlcbf::ElasticKernel::kFast ? "fast" : "dense"; }

bool ParseBool(const std::string& v) { return v == "1" || v == "true" || v == "on" || v == "yes"; }

void ApplyOverrides(LiveKeyIndexOptions* io) {
  if (FLAGS_force_defer) {
    hooks::SetLiveKeyBusyWritersForTesting(false);
    io->defer_liveness_checks = true;
    io->max_deferring_writers = 64;
    io->max_pending_checks = 65536;
  }
  std::stringstream ss(FLAGS_index_options);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) Die("--index_options: no '=' in \"" + item + "\"");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    const double d = std::strtod(v.c_str(), nullptr);
    const uint64_t u = std::strtoull(v.c_str(), nullptr, 10);
    if (k == "kernel") {
      if (v != "dense" && v != "fast") Die("--index_options: kernel must be dense or fast");
      io->kernel = v == "fast" ? dlcbf::ElasticKernel::kFast : dlcbf::ElasticKernel::kDense;
    } else if (k == "expected_keys") {
      io->expected_keys = u;
    } else if (k == "bits_per_key") {
      io->bits_per_key = d;
    } else if (k == "sizing_load") {
      io->sizing_load = d;
    } else if (k == "abf_counter_bits") {
      io->abf_counter_bits = static_cast<uint32_t>(u);
    } else if (k == "auto_rebuild_drift") {
      io->auto_rebuild_drift = d;
    } else if (k == "rebuild_at_capacity") {
      io->rebuild_at_capacity = d;
    } else if (k == "rebuild_headroom") {
      io->rebuild_headroom = d;
    } else if (k == "lock_stripes") {
      io->lock_stripes = static_cast<uint32_t>(u);
    } else if (k == "delete_range_scan_limit") {
      io->delete_range_scan_limit = u;
    } else if (k == "trust_single_delete") {
      io->trust_single_delete = ParseBool(v);
    } else if (k == "persist_index") {
      io->persist_index = ParseBool(v);
    } else if (k == "defer_liveness_checks") {
      io->defer_liveness_checks = ParseBool(v);
    } else if (k == "max_pending_checks") {
      io->max_pending_checks = static_cast<uint32_t>(u);
    } else if (k == "max_deferring_writers") {
      io->max_deferring_writers = static_cast<uint32_t>(u);
    } else if (k == "unchecked_copy_budget") {
      io->unchecked_copy_budget = d;
    } else if (k == "rebuild_scan_threads") {
      io->rebuild_scan_threads = static_cast<uint32_t>(u);
    } else if (k == "background_open_build") {
      io->background_open_build = ParseBool(v);
    } else if (k == "live_prefix_counts") {
      io->live_prefix_counts = ParseBool(v);
    } else if (k == "live_range_lengths") {  // lengths joined by ':' ("" for none)
      io->live_range_lengths.clear();
      std::stringstream ls(v);
      std::string l;
      while (std::getline(ls, l, ':')) {
        if (!l.empty()) io->live_range_lengths.push_back(static_cast<uint32_t>(std::stoul(l)));
      }
    } else if (k == "checkpoint_interval_seconds") {
      io->checkpoint_interval_seconds = d;
    } else if (k == "seed") {
      io->seed = std::strtoull(v.c_str(), nullptr, 0);
    } else if (k == "rebuild_progress_interval") {
      io->rebuild_progress_interval = u;
    } else {
      Die("--index_options: unknown option \"" + k + "\"");
    }
  }
}

// Every field from its whole valid range (Validate() decides; a draw it
// rejects is drawn again), then the overrides.
LiveKeyIndexOptions DrawIndexOptions(std::mt19937_64& rng) {
  auto U = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto I = [&rng](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  for (int attempt = 0; attempt < 1000; ++attempt) {
    LiveKeyIndexOptions io;
    io.kernel = I(0, 1) ? dlcbf::ElasticKernel::kFast : dlcbf::ElasticKernel::kDense;
    const uint64_t keys = static_cast<uint64_t>(std::max(1, FLAGS_keys));
    switch (I(0, 3)) {
      case 0: io.expected_keys = I(1, 64); break;                 // tiny: overflow, stash, ABF
      case 1: io.expected_keys = I(64, keys); break;
      case 2: io.expected_keys = I(100 * keys, 400 * keys); break;  // roomy: sparse checkpoint bases
      default: io.expected_keys = I(keys, 4 * keys); break;       // a few thousand
    }
    // 68-90 MB: the index file loads in the background (--large_index_prob;
    // 0 in the ctest runs: under a sanitizer a round took a minute).
    if (FLAGS_large_index_prob > 0 && U(0, 1) < FLAGS_large_index_prob) io.expected_keys = I(45000000, 60000000);
    io.bits_per_key = U(8, 48);
    io.sizing_load = U(0.02, 1.0);
    io.seed = rng();
    io.abf_counter_bits = static_cast<uint32_t>(I(1, 8));
    io.auto_rebuild_drift = I(0, 3) == 0 ? 0.0 : 1.0 + U(0.001, 3.0);
    io.rebuild_at_capacity = U(0.3001, 1.0);
    io.rebuild_headroom = I(0, 4) == 0 ? 1.0 : U(1.0, 4.0);
    io.lock_stripes = 1u << I(0, 12);
    io.delete_range_scan_limit = I(0, 4) == 0 ? 0 : I(0, 1000);
    io.trust_single_delete = I(0, 1) == 1;
    io.persist_index = I(0, 3) != 0;
    io.defer_liveness_checks = I(0, 3) != 0;
    io.max_pending_checks = static_cast<uint32_t>(I(0, 1) ? I(1, 64) : I(1, 65536));
    io.max_deferring_writers = static_cast<uint32_t>(I(0, 8));
    io.rebuild_progress_interval = I(1, 100000);
    io.rebuild_scan_threads = static_cast<uint32_t>(I(1, 4));
    io.background_open_build = I(0, 3) != 0;
    io.checkpoint_interval_seconds = I(0, 3) == 0 ? 0.0 : U(0.05, 0.5);
    // Dense checkpoints copy their table in chunks while writers run
    // (checkpoint.cc): small chunks put many writes between chunks of
    // these small tables (0: LiveKeyDB's 4096 blocks, one chunk here).
    hooks::SetLiveKeyCheckpointChunkBlocksForTesting(I(0, 3) == 0 ? 0 : I(1, 64));
    // Unchecked copies: off, a budget that runs out within a round (so its
    // rebuilds run mixed with everything else), or a roomy one. Busy
    // writers (every write finds every core writing, as with more writes
    // in progress than max_deferring_writers): unchecked copies and busy
    // reads in most writes of this Open. (Drawn last: the fields above
    // keep the draws they had for a given seed before these existed.)
    io.unchecked_copy_budget = I(0, 3) == 0 ? 0.0 : I(0, 1) ? U(0.02, 0.1) : U(0.1, 1.0);
    hooks::SetLiveKeyBusyWritersForTesting(U(0, 1) < FLAGS_busy_writers_prob);
    // Live-prefix counts (their Seeks checked in CheckKeys): decided by
    // the seed already drawn, so no draw after this one moves.
    io.live_prefix_counts = static_cast<double>((io.seed >> 11) % 1000) < FLAGS_live_prefix_prob * 1000;
    if (static_cast<double>((io.seed >> 23) % 1000) < FLAGS_live_range_prob * 1000) io.live_range_lengths = {5, 6};
    ApplyOverrides(&io);
    if (io.Validate().ok()) return io;
  }
  LiveKeyIndexOptions io;
  ApplyOverrides(&io);
  const Status s = io.Validate();
  if (!s.ok()) Die("--index_options give invalid options: " + s.ToString());
  return io;
}

// live_range_lengths as --index_options takes them ("5:6"; "" for none).
std::string RangeLengths(const LiveKeyIndexOptions& io) {
  std::string out;
  for (uint32_t L : io.live_range_lengths) out += (out.empty() ? "" : ":") + std::to_string(L);
  return out;
}

std::string Describe(const LiveKeyIndexOptions& io) {
  return Fmt("kernel=%s expected_keys=%" PRIu64 " bits_per_key=%.2f sizing_load=%.3f abf_counter_bits=%u "
             "auto_rebuild_drift=%.3f rebuild_at_capacity=%.3f rebuild_headroom=%.3f lock_stripes=%u "
             "max_pending_checks=%u defer_liveness_checks=%d max_deferring_writers=%u unchecked_copy_budget=%.4f "
             "trust_single_delete=%d delete_range_scan_limit=%" PRIu64 " rebuild_scan_threads=%u background_open_build=%d "
             "checkpoint_interval_seconds=%.3f persist_index=%d seed=0x%" PRIx64 " (checkpoint chunk blocks %" PRIu64
             ", busy writers %d, hooks=%d) live_prefix_counts=%d live_range_lengths=%s",
             KernelName(io.kernel), io.expected_keys, io.bits_per_key, io.sizing_load, io.abf_counter_bits,
             io.auto_rebuild_drift, io.rebuild_at_capacity, io.rebuild_headroom, io.lock_stripes,
             io.max_pending_checks, io.defer_liveness_checks ? 1 : 0, io.max_deferring_writers,
             io.unchecked_copy_budget, io.trust_single_delete ? 1 : 0, io.delete_range_scan_limit,
             io.rebuild_scan_threads, io.background_open_build ? 1 : 0, io.checkpoint_interval_seconds,
             io.persist_index ? 1 : 0, io.seed, hooks::GetLiveKeyCheckpointChunkBlocksForTesting(),
             hooks::GetLiveKeyBusyWritersForTesting() ? 1 : 0, kHaveHooks ? 1 : 0,
             io.live_prefix_counts ? 1 : 0, RangeLengths(io).c_str());
}

// ---- keys and locks -----------------------------------------------------------------------

int NumKKeys() { return std::max(1, FLAGS_keys); }
int NumSKeys() { return std::max(8, FLAGS_keys / 16); }
int NumKeys() { return NumKKeys() + NumSKeys(); }
// Every fourth "k" key takes Merges and never PutEntity; the others take
// PutEntity and never Merge, and only they are read with GetEntity:
// RocksDB 7.8.3's GetEntity crashes on a merge whose operands reach an SST
// file (Version::Get merges into a null string), and merges onto entities
// are not supported there either.
bool IsMergeKey(int i) { return i < NumKKeys() && i % 4 == 3; }
// "k%06u" keys take every op but SingleDelete; "s%06u" keys only Put when
// absent / SingleDelete when present. Both sort like their numbers, and
// every "k" key before every "s" key (DeleteRange stays among "k" keys).
std::string KeyOf(int i) {
  char buf[32];
  if (i < NumKKeys()) {
    std::snprintf(buf, sizeof(buf), "k%06d", i);
  } else {
    std::snprintf(buf, sizeof(buf), "s%06d", i - NumKKeys());
  }
  return buf;
}

// The tool's own locks (see the header comment): stripes over (family,
// key), ascending order for batches; a shared mutex that range-wide ops
// take exclusively, with a turnstile so they are not starved.
class KeyLocks {
 public:
  static constexpr uint32_t kStripes = 256;
  static uint32_t StripeOf(int cf, int key) {
    uint64_t h = (static_cast<uint64_t>(cf) << 32 | static_cast<uint32_t>(key)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<uint32_t>(h >> 56);
  }
  std::mutex& stripe(uint32_t i) { return stripes_[i]; }
  void LockShared() {
    { std::lock_guard<std::mutex> t(turnstile_); }
    range_.lock_shared();
  }
  void UnlockShared() { range_.unlock_shared(); }
  void LockExclusive() {
    std::lock_guard<std::mutex> t(turnstile_);
    range_.lock();
  }
  void UnlockExclusive() { range_.unlock(); }

 private:
  std::mutex turnstile_;
  std::shared_mutex range_;
  std::mutex stripes_[kStripes];
};

struct SharedHold {
  explicit SharedHold(KeyLocks* l) : locks(l) { locks->LockShared(); }
  ~SharedHold() { locks->UnlockShared(); }
  KeyLocks* locks;
};
struct ExclusiveHold {
  explicit ExclusiveHold(KeyLocks* l) : locks(l) { locks->LockExclusive(); }
  ~ExclusiveHold() { locks->UnlockExclusive(); }
  KeyLocks* locks;
};
struct StripesHold {
  StripesHold(KeyLocks* l, std::vector<uint32_t> s) : locks(l), stripes(std::move(s)) {
    std::sort(stripes.begin(), stripes.end());
    stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
    for (uint32_t i : stripes) locks->stripe(i).lock();
  }
  ~StripesHold() {
    for (auto it = stripes.rbegin(); it != stripes.rend(); ++it) locks->stripe(*it).unlock();
  }
  KeyLocks* locks;
  std::vector<uint32_t> stripes;
};

// ---- a session ------------------------------------------------------------------------------

// SingleDelete key state, under the key's stripe: unknown (read the base
// DB to learn it), absent, or exactly one Put since the last SingleDelete.
enum class SdState : uint8_t { kUnknown, kAbsent, kOnePut };

// How a session opens the DB (--txn).
enum class TxnKind : int { kNone = 0, kPessimistic = 1, kOptimistic = 2 };
const char* TxnKindName(TxnKind k) {
  return k == TxnKind::kPessimistic ? "pessimistic" : k == TxnKind::kOptimistic ? "optimistic" : "none";
}
bool ParseTxnKind(const std::string& v, TxnKind* k) {
  if (v == "none") {
    *k = TxnKind::kNone;
  } else if (v == "pessimistic") {
    *k = TxnKind::kPessimistic;
  } else if (v == "optimistic") {
    *k = TxnKind::kOptimistic;
  } else {
    return false;
  }
  return true;
}
// --txn, or with --txn=mixed one of the three from `rng`.
TxnKind DrawTxnKind(std::mt19937_64& rng) {
  TxnKind k = TxnKind::kNone;
  if (FLAGS_txn == "mixed") return static_cast<TxnKind>(rng() % 3);
  if (!ParseTxnKind(FLAGS_txn, &k)) Die("--txn must be none, pessimistic, optimistic or mixed");
  return k;
}

struct Session {
  // The LiveKeyDB: opened by LiveKeyDB::Open (kind kNone, owned here), or
  // LiveKeyDB::FromTransactionDB of txn_db / occ_db (owned by it).
  LiveKeyDB* db = nullptr;
  TxnKind kind = TxnKind::kNone;
  bool live_prefix = false;  // opened with live_prefix_counts: its Seeks are checked
  bool live_range = false;   // opened with live_range_lengths: its total-order Seeks are checked
  rocksdb::TransactionDB* txn_db = nullptr;            // kPessimistic
  rocksdb::OptimisticTransactionDB* occ_db = nullptr;  // kOptimistic
  // What the ordinary writes go through: the transaction DB, else the
  // LiveKeyDB.
  rocksdb::DB* writer() const {
    if (txn_db != nullptr) return txn_db;
    if (occ_db != nullptr) return occ_db;
    return db;
  }
  // What owns everything (handles are destroyed, Close called, deleted).
  rocksdb::DB* top() const { return writer(); }
  std::vector<ColumnFamilyHandle*> h;
  LiveKeyIndexOptions io;
  KeyLocks locks;
  std::vector<SdState> sd[kNumFamilies];
  std::string sst_dir;
  std::atomic<uint64_t> sst_serial{0};
};

// One Open of `kind` (same options and families whatever the kind).
Status OpenAs(Session* s, const LiveKeyIndexOptions& io, TxnKind kind) {
  rocksdb::Options o = BaseOptions();
  ApplyMemtable(&o);
  if (io.live_prefix_counts && o.prefix_extractor == nullptr) {
    // Groups of 10 keys ("k00012"): prefixes whose keys all go, for the
    // live-prefix counts' Seeks (SeekCheck).
    o.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(6));
  }
  s->live_prefix = io.live_prefix_counts;
  s->live_range = !io.live_range_lengths.empty();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfds;
  for (const char* name : kFamilies) cfds.emplace_back(name, rocksdb::ColumnFamilyOptions(o));
  s->h.clear();
  s->db = nullptr;
  s->txn_db = nullptr;
  s->occ_db = nullptr;
  Status st;
  switch (kind) {
    case TxnKind::kNone: {
      HangGuard hg("LiveKeyDB::Open");
      st = LiveKeyDB::Open(rocksdb::DBOptions(o), io, g_db_dir, cfds, &s->h, &s->db);
      break;
    }
    case TxnKind::kPessimistic: {
      HangGuard hg("LiveKeyDB::OpenTransactionDB");
      rocksdb::TransactionDB* t = nullptr;
      st = LiveKeyDB::OpenTransactionDB(rocksdb::DBOptions(o), rocksdb::TransactionDBOptions(), io, g_db_dir, cfds,
                                        &s->h, &t);
      if (st.ok()) {
        s->txn_db = t;
        s->db = LiveKeyDB::FromTransactionDB(t);
        if (s->db == nullptr) Die("LiveKeyDB::FromTransactionDB returned null for OpenTransactionDB's DB");
      }
      break;
    }
    case TxnKind::kOptimistic: {
      HangGuard hg("LiveKeyDB::OpenOptimisticTransactionDB");
      rocksdb::OptimisticTransactionDB* t = nullptr;
      st = LiveKeyDB::OpenOptimisticTransactionDB(rocksdb::DBOptions(o), rocksdb::OptimisticTransactionDBOptions(),
                                                  io, g_db_dir, cfds, &s->h, &t);
      if (st.ok()) {
        s->occ_db = t;
        s->db = LiveKeyDB::FromTransactionDB(t);
        if (s->db == nullptr) Die("LiveKeyDB::FromTransactionDB returned null for OpenOptimisticTransactionDB's DB");
      }
      break;
    }
  }
  if (st.ok()) s->kind = kind;
  return st;
}

// RocksDB refuses DB::Open (so LiveKeyDB::Open and the optimistic route,
// allow_2pc off) while the WAL holds two-phase sections, committed or not
// (MemTableInserter::MarkBeginPrepare: NotSupported "WAL contains prepared
// transactions. Open with TransactionDB::Open()").
bool RefusedFor2pc(const Status& st) {
  return st.IsNotSupported() && st.ToString().find("prepared transactions") != std::string::npos;
}

// The probe (--role=probe, a process of its own): the DB opened read-only
// as a non-transaction Open recovers it (allow_2pc off: LiveKeyDB::Open,
// the optimistic route). Exit 0: it opened; 3: RocksDB refused it for
// two-phase WAL sections; 4: another error (the DB may not exist yet).
// With assertions on (the system RocksDB 7.8.3 here), RocksDB does not
// refuse: it aborts (db/write_batch.cc, WriteBatchInternal::Iterate:
// assert(s.ok()) after MarkBeginPrepare returned that NotSupported), which
// is why this runs in a process of its own.
int RunProbe() {
  g_db_dir = FLAGS_db;
  rocksdb::Options o = BaseOptions();
  o.create_if_missing = false;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfds;
  for (const char* name : kFamilies) cfds.emplace_back(name, rocksdb::ColumnFamilyOptions(o));
  std::vector<ColumnFamilyHandle*> hs;
  rocksdb::DB* db = nullptr;
  const Status st = dlcbf::compat::OpenDBForReadOnly(rocksdb::DBOptions(o), g_db_dir, cfds, &hs, &db);
  if (!st.ok()) return RefusedFor2pc(st) ? 3 : 4;
  for (auto* h : hs) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  delete db;
  return 0;
}

std::string g_self;  // this binary (re-executed for crash children and probes)
// Set once this run opened (or launched a crash child with) a pessimistic
// session: from then on the WAL may hold two-phase sections, and a
// non-transaction Open is probed first.
bool g_maybe_2pc = false;

// True if a non-transaction Open of the (closed) DB would be refused for
// two-phase WAL sections (RunProbe); *why says how.
bool NeedsTwoPhaseOpen(std::string* why) {
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) Die("fork (probe)");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) std::_Exit(127);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    std::string a0 = g_self, a1 = "--role=probe", a2 = "--db=" + g_db_dir;
    char* argv[] = {&a0[0], &a1[0], &a2[0], nullptr};
    ::execv(argv[0], argv);
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) {
    *why = "aborted in RocksDB's recovery (the WAL holds two-phase sections; this RocksDB asserts instead of "
           "returning NotSupported)";
    return true;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    *why = "refused by RocksDB (\"WAL contains prepared transactions\")";
    return true;
  }
  return false;
}

// Opens the session as `kind`. A non-transaction Open that RocksDB would
// refuse (or abort in) because the WAL holds two-phase sections is made
// pessimistic instead (*note says so): probed first once this run has had
// pessimistic sessions, and redone if RocksDB returns the refusal.
Status OpenSession(Session* s, const LiveKeyIndexOptions& io, TxnKind kind, std::string* note) {
  s->io = io;
  for (auto& v : s->sd) v.assign(static_cast<size_t>(NumKeys()), SdState::kUnknown);
  s->sst_dir = g_db_dir + ".sst";
  std::error_code ec;
  std::filesystem::create_directories(s->sst_dir, ec);
  note->clear();
  std::string why;
  if (kind != TxnKind::kPessimistic && g_maybe_2pc && NeedsTwoPhaseOpen(&why)) {
    *note = Fmt("txn=%s: a non-transaction open of this DB %s: opened txn=pessimistic", TxnKindName(kind),
                why.c_str());
    g.open_fallbacks++;
    kind = TxnKind::kPessimistic;
  }
  if (kind == TxnKind::kPessimistic) g_maybe_2pc = true;
  Status st = OpenAs(s, io, kind);
  if (!st.ok() && kind != TxnKind::kPessimistic && RefusedFor2pc(st)) {
    *note = Fmt("txn=%s refused (%s): reopened txn=pessimistic", TxnKindName(kind), st.ToString().c_str());
    g.open_fallbacks++;
    g_maybe_2pc = true;
    st = OpenAs(s, io, TxnKind::kPessimistic);
  }
  if (st.ok()) {
    g.sessions[static_cast<int>(s->kind)]++;
    if (g_memtable.kind != MemtableKind::kSkipList) g.hash_memtable_opens++;
    if (g_memtable.dlcbf_index) g.dlcbf_index_opens++;
    if (g_memtable.avoid_flush_during_recovery) g.avoid_flush_opens++;
  }
  return st;
}

// A pessimistic session's recovered prepared transactions (a crash child
// killed between Prepare and Commit): half committed, half rolled back, at
// random, each deleted after. Before any check or write.
void ResolvePrepared(Session* s, std::mt19937_64& rng, const std::string& label) {
  if (s->txn_db == nullptr) return;
  std::vector<rocksdb::Transaction*> prepared;
  s->txn_db->GetAllPreparedTransactions(&prepared);
  if (prepared.empty()) return;
  std::shuffle(prepared.begin(), prepared.end(), rng);
  const size_t commit = (prepared.size() + (rng() & 1)) / 2;
  uint64_t committed = 0, rolled_back = 0;
  std::string names;
  for (size_t i = 0; i < prepared.size(); ++i) {
    rocksdb::Transaction* p = prepared[i];
    const std::string name = p->GetName();
    if (names.size() < 200) names += " " + name + (i < commit ? ":commit" : ":rollback");
    Status st;
    if (p->GetState() != rocksdb::Transaction::PREPARED) {
      ReportError(Fmt("%s: recovered transaction %s is not PREPARED (state %d)", label.c_str(), name.c_str(),
                      static_cast<int>(p->GetState())));
    }
    if (i < commit) {
      st = p->Commit();
      if (st.ok()) committed++;
    } else {
      st = p->Rollback();
      if (st.ok()) rolled_back++;
    }
    if (!st.ok()) {
      ReportError(Fmt("%s: %s of recovered prepared transaction %s: %s", label.c_str(),
                      i < commit ? "Commit" : "Rollback", name.c_str(), st.ToString().c_str()));
    }
    delete p;
  }
  g.recovered_prepared += prepared.size();
  g.recovered_commits += committed;
  g.recovered_rollbacks += rolled_back;
  if (g_side_fd < 0) {
    std::printf("%s: %zu recovered prepared transactions: committed %" PRIu64 ", rolled back %" PRIu64 ":%s%s\n",
                label.c_str(), prepared.size(), committed, rolled_back, names.c_str(),
                names.size() >= 200 ? " ..." : "");
    std::fflush(stdout);
  }
}

// Folds the session's stats into the totals (auto rebuilds, checkpoints).
LiveKeyStats SessionStats(Session* s) { return s->db->GetLiveKeyStats(); }

std::string IndexStates(const LiveKeyStats& st) {
  std::string out;
  for (const auto& c : st.column_families) {
    out += Fmt(" [%s %s entries=%" PRIu64 " sized_for=%" PRIu64 " rebuilds=%" PRIu64 "%s%s]", c.name.c_str(),
               c.indexed ? c.mode.c_str() : "unindexed", c.entries, c.sized_for, c.rebuilds,
               c.serving ? "" : " not-serving", c.build_error.empty() ? "" : (" error: " + c.build_error).c_str());
  }
  return out;
}

void CloseSession(Session* s) {
  if (s->db == nullptr) return;
  const LiveKeyStats st = SessionStats(s);
  g.auto_rebuilds += st.auto_rebuilds;
  g.checkpoints += st.checkpoints;
  g.checkpoint_deltas += Diag(st, "checkpoint_deltas");
  g.unchecked_copies += Diag(st, "unchecked_copies");
  g.dead_prefix_seeks += st.dead_prefix_seeks;
  g.moved_seeks += st.moved_seeks;
  HangGuard hg("Close");
  // A transaction session: through the transaction DB, which owns the
  // LiveKeyDB (its Close closes it, deleting it deletes it).
  rocksdb::DB* top = s->top();
  for (auto* h : s->h) {
    const Status ds = top->DestroyColumnFamilyHandle(h);
    if (!ds.ok()) ReportError("DestroyColumnFamilyHandle: " + ds.ToString());
  }
  s->h.clear();
  const Status cs = top->Close();
  if (!cs.ok()) ReportError("Close: " + cs.ToString());
  delete top;
  s->db = nullptr;
  s->txn_db = nullptr;
  s->occ_db = nullptr;
  s->kind = TxnKind::kNone;
}

// ---- the oracle ------------------------------------------------------------------------------

// A Seek to `target` through LiveKeyDB's iterator and the base DB's, both
// at one snapshot (prefix_same_as_start, or total_order_seek): the first
// three keys and values must be the same. A first key the base shows and
// LiveKeyDB stepped over (none, or a later one) is lost.
// `snap` is taken before the caller's reads, and one Seek in
// --seek_wait_every waits --seek_wait_us after the iterators are made: writers delete (and checks
// erase) meanwhile, so the counts move past the snapshot the Seeks read.
void SeekCheck(Session* s, ColumnFamilyHandle* h, const std::string& target, const char* fam, const char* phase,
               const rocksdb::Snapshot* snap, bool total_order) {
  rocksdb::DB* base = s->db->GetBaseDB();
  ReadOptions ro;
  ro.prefix_same_as_start = !total_order;
  ro.total_order_seek = total_order;
  ro.snapshot = snap;
  std::string ours, theirs, theirs_after;
  Status os, ts, ts_after;
  {
    // The base DB's iterators made just before and just after LiveKeyDB's:
    // a compaction in between may drop 'X' values or bring older versions
    // back (DropXFilter ignores snapshots), and then the two differ and the
    // check says nothing (seek_checks_inconclusive).
    std::unique_ptr<rocksdb::Iterator> b(base->NewIterator(ro, h)), a(s->db->NewIterator(ro, h)),
        b_after(base->NewIterator(ro, h));
    if (g.seek_checks.load(std::memory_order_relaxed) % static_cast<uint64_t>(FLAGS_seek_wait_every) == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(FLAGS_seek_wait_us));
    }
    auto walk = [&](rocksdb::Iterator* it, std::string* out) {
      it->Seek(target);
      for (int j = 0; j < 3 && it->Valid(); ++j, it->Next()) *out += it->key().ToString() + "=" + it->value().ToString() + ";";
      return it->status();
    };
    os = walk(a.get(), &ours);
    ts = walk(b.get(), &theirs);
    ts_after = walk(b_after.get(), &theirs_after);
  }
  g.seek_checks.fetch_add(1, std::memory_order_relaxed);
  if (ts.ok() && ts_after.ok() && theirs != theirs_after) {
    g.seek_checks_inconclusive.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!os.ok() || !ts.ok()) {
    ReportError(Fmt("Seek(%s) in %s (%s): LiveKeyDB %s, base %s", target.c_str(), fam, phase, os.ToString().c_str(),
                    ts.ToString().c_str()));
  } else if (ours != theirs) {
    const std::string what = Fmt("seek=%s%s cf=%s phase=%s round=%d livekey=\"%.60s\" base=\"%.60s\"",
                                 target.c_str(), total_order ? " (total order)" : "", fam, phase, g_round.load(),
                                 ours.c_str(), theirs.c_str());
    const std::string first_ours = ours.substr(0, ours.find('=')), first_theirs = theirs.substr(0, theirs.find('='));
    if (!theirs.empty() && (ours.empty() || first_ours > first_theirs)) {
      ReportLoss(what);
    } else {
      ReportError("wrong iterator answer: " + what);
    }
  }
}

// Checks keys[i] of family cfs[i] (the caller holds whatever keeps writers
// of them away): LiveKeyDB's four read paths first, the base DB last.
void CheckKeys(Session* s, const std::vector<int>& cfs, const std::vector<int>& keys, const char* phase,
               bool use_vector_multiget) {
  const size_t n = keys.size();
  if (n == 0) return;
  const ReadOptions ro;
  const rocksdb::Snapshot* seek_snap =
      s->live_prefix || s->live_range ? s->db->GetBaseDB()->GetSnapshot() : nullptr;  // (SeekCheck)
  std::vector<std::string> ks(n);
  std::vector<Slice> slices(n);
  std::vector<ColumnFamilyHandle*> hs(n);
  for (size_t i = 0; i < n; ++i) {
    ks[i] = KeyOf(keys[i]);
    slices[i] = ks[i];
    hs[i] = s->h[static_cast<size_t>(cfs[i])];
  }
  // The base DB first too: a key can become visible without a write (a
  // compaction filter's kRemoveAndSkipUntil, DeleteFilesInRange) and
  // invisible without one (a compaction filter's kRemove), so a loss is a
  // key the base finds before and after LiveKeyDB's reads (the write
  // locks keep every write to it out of the window).
  std::vector<bool> before(n);
  for (size_t i = 0; i < n; ++i) {
    PinnableSlice bv;
    before[i] = s->db->GetBaseDB()->Get(ro, hs[i], slices[i], &bv).ok();
  }
  // MultiGet (one call for the batch, both families mixed).
  std::vector<Status> mg(n);
  if (use_vector_multiget) {
    std::vector<std::string> vals;
    mg = s->db->MultiGet(ro, hs, slices, &vals);
  } else {
    std::vector<PinnableSlice> vals(n);
    s->db->MultiGet(ro, n, hs.data(), slices.data(), vals.data(), mg.data(), false);
  }
  std::vector<Status> get(n), ent(n);
  std::vector<bool> may(n);
  for (size_t i = 0; i < n; ++i) {
    PinnableSlice v;
    get[i] = s->db->Get(ro, hs[i], slices[i], &v);
    if (IsMergeKey(keys[i])) {
      ent[i] = Status::Incomplete("not read");  // see IsMergeKey
    } else {
      rocksdb::PinnableWideColumns cols;
      ent[i] = s->db->GetEntity(ro, hs[i], slices[i], &cols);
    }
    std::string kv;
    may[i] = s->db->KeyMayExist(ro, hs[i], slices[i], &kv);
  }
  for (size_t i = 0; i < n; ++i) {
    PinnableSlice bv;
    const Status b = s->db->GetBaseDB()->Get(ro, hs[i], slices[i], &bv);
    g.checks.fetch_add(1, std::memory_order_relaxed);
    const char* fam = kFamilies[cfs[i]];
    auto bad = [](const Status& x) { return !x.ok() && !x.IsNotFound() && !x.IsIncomplete(); };
    if (bad(b) || bad(get[i]) || bad(mg[i]) || bad(ent[i])) {
      ReportError(Fmt("read of %s in %s (%s): base %s, Get %s, MultiGet %s, GetEntity %s", ks[i].c_str(), fam,
                      phase, b.ToString().c_str(), get[i].ToString().c_str(), mg[i].ToString().c_str(),
                      ent[i].ToString().c_str()));
      continue;
    }
    if (!b.ok() || !before[i]) continue;
    std::string missed;
    if (get[i].IsNotFound()) missed += ",Get";
    if (mg[i].IsNotFound()) missed += ",MultiGet";
    if (ent[i].IsNotFound()) missed += ",GetEntity";
    if (!may[i]) missed += ",KeyMayExist";
    if (missed.empty()) continue;
    std::string val = bv.ToString();
    if (val.size() > 40) val = val.substr(0, 40) + "...";
    std::string extra;
    if (g.lost.load() < static_cast<uint64_t>(FLAGS_print_losses) && g_side_fd < 0) {
      extra = " index:" + IndexStates(s->db->GetLiveKeyStats());
    }
    {
      // The base DB's own MultiGet, for the record (a loss only LiveKeyDB's
      // MultiGet shows is told apart from one of RocksDB's).
      std::vector<std::string> bvals;
      const std::vector<Status> bm = s->db->GetBaseDB()->MultiGet(ro, {hs[i]}, {slices[i]}, &bvals);
      extra += " base_multiget=" + bm[0].ToString() + " trusted=" +
               std::to_string(s->db->GetLiveKeyStats().indexes_trusted ? 1 : 0);
    }
    ReportLoss(Fmt("key=%s cf=%s missed_by=%s phase=%s round=%d base_value=\"%s\"%s", ks[i].c_str(), fam,
                   missed.c_str() + 1, phase, g_round.load(), val.c_str(), extra.c_str()));
  }
  // Sessions with live-region counts, one key in 8: LiveKeyDB's iterator
  // and the base DB's at one snapshot, while writers run: the same first
  // keys and values. With live_prefix_counts, Seeks within the key's prefix
  // (prefix_same_as_start: a dead prefix is answered from the counts); with
  // live_range_lengths, total-order Seeks to the first key of its run of
  // 10 or 100 keys (moved past the dead runs of 100 and 10).
  for (size_t i = 0; i < n; ++i) {
    if (seek_snap == nullptr || (keys[i] + g_round.load()) % 8 != 0) continue;
    if (s->live_prefix) SeekCheck(s, hs[i], ks[i].substr(0, 6), kFamilies[cfs[i]], phase, seek_snap, false);
    if (s->live_range) {
      const int run = (keys[i] / 8) % 2 ? 10 : 100;
      SeekCheck(s, hs[i], KeyOf(keys[i] - keys[i] % run), kFamilies[cfs[i]], phase, seek_snap, true);
    }
  }
  if (seek_snap != nullptr) s->db->GetBaseDB()->ReleaseSnapshot(seek_snap);
}

// Every key of both families (no tool writer running: quiescent, or the
// caller holds the exclusive lock), in batches of 32.
void VerifyAll(Session* s, const char* phase) {
  std::vector<int> cfs, keys;
  int batch = 0;
  for (int cf = 0; cf < kNumFamilies; ++cf) {
    for (int k = 0; k < NumKeys(); ++k) {
      cfs.push_back(k % 5 == 0 ? 1 - cf : cf);  // mix the families inside a MultiGet
      keys.push_back(k);
      if (keys.size() == 32) {
        CheckKeys(s, cfs, keys, phase, (batch++ & 1) != 0);
        cfs.clear();
        keys.clear();
      }
    }
  }
  CheckKeys(s, cfs, keys, phase, false);
}

// Polls until every indexed family serves (the background open build or
// checkpoint replay is done). False on timeout (a hang) or a build error.
bool WaitServing(Session* s, const char* phase) {
  const auto start = Clock::now();
  for (;;) {
    const LiveKeyStats st = s->db->GetLiveKeyStats();
    bool all = true;
    for (const auto& c : st.column_families) {
      if (!c.build_error.empty()) {
        ReportError(Fmt("%s: background build of %s failed: %s", phase, c.name.c_str(), c.build_error.c_str()));
        return false;
      }
      if (c.indexed && !c.serving) all = false;
    }
    if (all) return true;
    if (Seconds(start) > FLAGS_hang_seconds) {
      std::printf("livekey_stress: hang in the background open build (%s: not serving after %.0f s)%s\n", phase,
                  FLAGS_hang_seconds, IndexStates(st).c_str());
      g.hangs++;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// ---- the workload --------------------------------------------------------------------------------

struct Mix {
  std::vector<double> cum;  // cumulative weights, in Op order
  double total = 0;
};
enum Op {
  kPut, kMerge, kDelete, kSingleDelete, kDeleteRange, kBatch, kEntity, kIngest, kFlush, kCompact, kRebuild,
  kCheck, kVerifyAll, kTxn, kForeignIngest, kDeleteFiles, kNumOps
};
// with_txn: the mix of a transaction session (kTxn weighs --txn_weight;
// else 0).
Mix MakeMix(bool with_txn) {
  const double w[kNumOps] = {FLAGS_put_weight,    FLAGS_merge_weight,  FLAGS_delete_weight,
                             FLAGS_single_delete_weight, FLAGS_delete_range_weight, FLAGS_batch_weight,
                             FLAGS_entity_weight, FLAGS_ingest_weight, FLAGS_flush_weight,
                             FLAGS_compact_weight, FLAGS_rebuild_weight, FLAGS_check_weight,
                             FLAGS_verify_all_weight, with_txn ? FLAGS_txn_weight : 0.0,
                             FLAGS_foreign_ingest_weight, FLAGS_delete_files_weight};
  Mix m;
  for (double x : w) {
    m.total += std::max(0.0, x);
    m.cum.push_back(m.total);
  }
  return m;
}

// What a transaction session may not be able to write (see the header
// comment): a DeleteRange (pessimistic: through the LiveKeyDB, which
// writes through RocksDB's TransactionDB; optimistic: through the
// OptimisticTransactionDB) and a PutEntity (through the transaction DB).
// Per session kind and write: 0 = not tried yet in this process, 1 =
// works, 2 = refused (from then on skipped, or in batches written as
// Puts).
enum TxnWrite { kTwDeleteRange = 0, kTwEntity = 1 };
std::atomic<int> g_txn_support[3][2] = {{{0}, {0}}, {{0}, {0}}, {{0}, {0}}};
bool TxnRefuses(TxnKind k, TxnWrite w) {
  return k != TxnKind::kNone && g_txn_support[static_cast<int>(k)][w].load() == 2;
}
// After a transaction session's write of kind `w`: true if `st` is the
// refusal (learned; printed once per process and kind), false otherwise
// (an OK marks the write as working).
bool NoteRefusal(TxnKind k, TxnWrite w, const Status& st, const char* what) {
  if (k == TxnKind::kNone) return false;
  std::atomic<int>& support = g_txn_support[static_cast<int>(k)][w];
  if (st.ok()) {
    int expected = 0;
    support.compare_exchange_strong(expected, 1);
    return false;
  }
  if (!st.IsNotSupported() && !st.IsInvalidArgument()) return false;
  if (support.exchange(2) != 2 && g_side_fd < 0) {
    std::lock_guard<std::mutex> l(g_print_mu);
    std::printf("livekey_stress: %s (txn=%s session) returned \"%s\": %s ops are skipped in txn=%s sessions%s\n", what,
                TxnKindName(k), st.ToString().c_str(), w == kTwDeleteRange ? "DeleteRange" : "PutEntity",
                TxnKindName(k),
                w == kTwDeleteRange
                    ? " (skipped_delete_ranges)"
                    : ", their batch entries written as Puts (skipped_entities, batch_entities_as_puts)");
    std::fflush(stdout);
  }
  return true;
}

// Statuses of a transaction conflict (tolerated: rolled back, counted).
bool IsTxnConflict(const Status& st) { return st.IsBusy() || st.IsTimedOut() || st.IsTryAgain() || st.IsExpired(); }

// --txn_db_writes=false in a pessimistic session: the ordinary writes run
// as explicit transactions (the TransactionDB's own writes do not run).
bool ExplicitTxnWrites(const Session* s) { return !FLAGS_txn_db_writes && s->txn_db != nullptr; }

// Replays a batch into a transaction through its own calls, with the
// session's handles (as LiveKeyDB's TransactionDB::Write does).
class TxnApplier : public rocksdb::WriteBatch::Handler {
 public:
  TxnApplier(const Session* s, rocksdb::Transaction* t) : s_(s), t_(t) {}
  Status PutCF(uint32_t cf, const Slice& k, const Slice& v) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h == nullptr ? Unknown(cf) : t_->Put(h, k, v);
  }
  Status MergeCF(uint32_t cf, const Slice& k, const Slice& v) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h == nullptr ? Unknown(cf) : t_->Merge(h, k, v);
  }
  Status DeleteCF(uint32_t cf, const Slice& k) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h == nullptr ? Unknown(cf) : t_->Delete(h, k);
  }
  Status SingleDeleteCF(uint32_t cf, const Slice& k) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h == nullptr ? Unknown(cf) : t_->SingleDelete(h, k);
  }
  Status PutEntityCF(uint32_t, const Slice&, const Slice&) override {
    return Status::NotSupported("livekey_stress: PutEntity in an explicit transaction");
  }
  Status DeleteRangeCF(uint32_t, const Slice&, const Slice&) override {
    return Status::NotSupported("livekey_stress: DeleteRange in an explicit transaction");
  }

 private:
  ColumnFamilyHandle* Handle(uint32_t id) const {
    for (ColumnFamilyHandle* h : s_->h) {
      if (h->GetID() == id) return h;
    }
    return nullptr;
  }
  static Status Unknown(uint32_t id) { return Status::InvalidArgument(Fmt("livekey_stress: no family %u", id)); }
  const Session* s_;
  rocksdb::Transaction* t_;
};

// One batch as an explicit pessimistic transaction (--txn_db_writes=false,
// a diagnostic): the same writes as the TransactionDB's own Write, made by
// the tool.
Status ExplicitTxnWrite(Session* s, const WriteOptions& wo, rocksdb::WriteBatch* wb) {
  std::unique_ptr<rocksdb::Transaction> t(s->txn_db->BeginTransaction(wo, rocksdb::TransactionOptions()));
  if (t == nullptr) return Status::Aborted("livekey_stress: BeginTransaction returned null");
  TxnApplier apply(s, t.get());
  Status st = wb->Iterate(&apply);
  if (st.ok()) {
    st = t->Commit();
  } else {
    t->Rollback().PermitUncheckedError();
  }
  return st;
}

// A Put of the session's ordinary writes (the chaos rewrites).
Status SessionPut(Session* s, const WriteOptions& wo, ColumnFamilyHandle* h, const Slice& k, const Slice& v) {
  if (!ExplicitTxnWrites(s)) return s->writer()->Put(wo, h, k, v);
  rocksdb::WriteBatch b;
  Status st = b.Put(h, k, v);
  return st.ok() ? ExplicitTxnWrite(s, wo, &b) : st;
}

class Worker {
 public:
  Worker(Session* s, const Mix* mix, uint64_t seed, int tid) : s_(s), mix_(mix), rng_(seed), tid_(tid) {}

  void Run(std::atomic<int64_t>* budget) {
    while (!g_stop.load(std::memory_order_relaxed)) {
      if (budget->fetch_sub(1) <= 0) break;
      OneOp();
      g.ops.fetch_add(1, std::memory_order_relaxed);
    }
  }

 private:
  double U() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  int I(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  int Cf() { return I(0, kNumFamilies - 1); }
  int KKey() { return I(0, NumKKeys() - 1); }
  int MergeKey() {
    const int k = I(0, NumKKeys() - 1) | 3;
    return k < NumKKeys() ? k : (NumKKeys() >= 4 ? 3 : -1);
  }
  int PlainKey() {
    int k = KKey();
    return IsMergeKey(k) ? k - 1 : k;
  }
  ColumnFamilyHandle* H(int cf) { return s_->h[static_cast<size_t>(cf)]; }
  // The ordinary writes' DB: the transaction DB of a transaction session.
  rocksdb::DB* W() { return s_->writer(); }
  // One single-key write: `direct` on W(), or with --txn_db_writes=false
  // in a pessimistic session the batch `fill` builds as an explicit
  // transaction.
  template <class Direct, class Fill>
  Status WOne(const WriteOptions& wo, Direct&& direct, Fill&& fill) {
    if (!ExplicitTxnWrites(s_)) return direct(W());
    rocksdb::WriteBatch b;
    const Status st = fill(&b);
    return st.ok() ? ExplicitTxnWrite(s_, wo, &b) : st;
  }
  Status WPut(const WriteOptions& wo, int cf, const std::string& k, const std::string& v) {
    return WOne(wo, [&](rocksdb::DB* d) { return d->Put(wo, H(cf), k, v); },
                [&](rocksdb::WriteBatch* b) { return b->Put(H(cf), k, v); });
  }
  std::string MergeOperand(const char* prefix) {
    return prefix + std::to_string(tid_) + "." + std::to_string(++serial_);
  }
  WriteOptions Wo(bool allow_no_wal = true) {
    WriteOptions wo;
    const double r = U();
    if (allow_no_wal && r < FLAGS_disable_wal_prob) {
      wo.disableWAL = true;
    } else if (r < FLAGS_disable_wal_prob + FLAGS_sync_prob) {
      wo.sync = true;
    }
    return wo;
  }
  std::string Value(bool allow_x = true) {
    std::string v = allow_x && U() < FLAGS_x_value_prob ? (U() < FLAGS_skip_until_prob ? "XS" : "X") : "v";
    v += std::to_string(g_round.load()) + "." + std::to_string(tid_) + "." + std::to_string(++serial_);
    v.append(static_cast<size_t>(std::max(0, FLAGS_value_size)), '.');
    return v;
  }
  void Check(const Status& st, const char* what) {
    if (!st.ok()) ReportError(Fmt("%s: %s", what, st.ToString().c_str()));
  }
  void CheckOne(int cf, int key, const char* phase) { CheckKeys(s_, {cf}, {key}, phase, U() < 0.5); }

  void OneOp() {
    const double r = U() * mix_->total;
    const int op = static_cast<int>(std::upper_bound(mix_->cum.begin(), mix_->cum.end(), r) - mix_->cum.begin());
    switch (std::min(op, kNumOps - 1)) {
      case kPut: case kMerge: case kDelete: case kEntity: SingleKey(op); break;
      case kSingleDelete: SingleDeleteOp(); break;
      case kTxn: TxnOp(); break;
      case kDeleteRange: DeleteRangeOp(); break;
      case kBatch: BatchOp(); break;
      case kIngest: IngestOp(); break;
      case kForeignIngest: ForeignIngestOp(); break;
      case kDeleteFiles: DeleteFilesOp(); break;
      case kFlush: {
        rocksdb::FlushOptions fo;
        fo.allow_write_stall = true;
        if (U() < 0.3) {
          Check(s_->db->Flush(fo, s_->h), "Flush");
        } else {
          Check(s_->db->Flush(fo, H(Cf())), "Flush");
        }
        g.flushes++;
        break;
      }
      case kCompact: {
        rocksdb::CompactRangeOptions co;
        if (U() < 0.5) {
          Check(s_->db->CompactRange(co, H(Cf()), nullptr, nullptr), "CompactRange");
        } else {
          const int a = KKey(), b = std::min(NumKKeys() - 1, a + I(1, 200));
          const std::string ka = KeyOf(a), kb = KeyOf(b);
          const Slice sa(ka), sb(kb);
          Check(s_->db->CompactRange(co, H(Cf()), &sa, &sb), "CompactRange");
        }
        g.compactions++;
        break;
      }
      case kRebuild: {
        HangGuard hg("RebuildIndex");
        const Status st = s_->db->RebuildIndex(U() < 0.5 ? nullptr : H(Cf()));
        Check(st, "RebuildIndex");
        if (st.ok()) g.manual_rebuilds++;
        break;
      }
      case kVerifyAll: {
        ExclusiveHold x(&s_->locks);
        VerifyAll(s_, "during-all");
        break;
      }
      case kCheck: {
        const int cf = Cf(), key = I(0, NumKeys() - 1);
        SharedHold sh(&s_->locks);
        StripesHold st(&s_->locks, {KeyLocks::StripeOf(cf, key)});
        CheckOne(cf, key, "during");
        break;
      }
      default: break;
    }
  }

  void SingleKey(int op) {
    const int cf = Cf(), key = op == kMerge ? MergeKey() : op == kEntity ? PlainKey() : KKey();
    if (key < 0) return;  // fewer than 4 keys: no merge key
    const std::string k = KeyOf(key);
    SharedHold sh(&s_->locks);
    StripesHold st(&s_->locks, {KeyLocks::StripeOf(cf, key)});
    const WriteOptions wo = Wo();
    switch (op) {
      case kPut:
        if (FLAGS_foreign_write_prob > 0 && U() < FLAGS_foreign_write_prob) {
          Check(s_->db->GetBaseDB()->Put(wo, H(cf), k, Value()), "foreign Put");
          g.foreign_puts++;
        } else {
          Check(WPut(wo, cf, k, Value()), "Put");
        }
        g.puts++;
        break;
      case kMerge:
        Check(WOne(wo, [&](rocksdb::DB* d) { return d->Merge(wo, H(cf), k, MergeOperand("m")); },
                   [&](rocksdb::WriteBatch* b) { return b->Merge(H(cf), k, MergeOperand("m")); }),
              "Merge");
        g.merges++;
        break;
      case kDelete:
        Check(WOne(wo, [&](rocksdb::DB* d) { return d->Delete(wo, H(cf), k); },
                   [&](rocksdb::WriteBatch* b) { return b->Delete(H(cf), k); }),
              "Delete");
        g.deletes++;
        break;
      case kEntity: {
        if (TxnRefuses(s_->kind, kTwEntity)) {
          g.skipped_entities++;
          return;
        }
        const std::string v = Value(false), c1 = "x" + std::to_string(serial_);
        const rocksdb::WideColumns cols{{rocksdb::kDefaultWideColumnName, v}, {"c1", c1}};
        const Status es = WOne(wo, [&](rocksdb::DB* d) { return d->PutEntity(wo, H(cf), k, cols); },
                               [&](rocksdb::WriteBatch* b) { return b->PutEntity(H(cf), k, cols); });
        if (NoteRefusal(s_->kind, kTwEntity, es, "the transaction DB's PutEntity")) {
          g.skipped_entities++;
          return;
        }
        Check(es, "PutEntity");
        g.entities++;
        break;
      }
      default: break;
    }
    g.write_keys++;
    if (U() < FLAGS_check_after_write_prob) CheckOne(cf, key, "after-write");
  }

  // Only on "s" keys: Put when absent, SingleDelete when exactly one Put is
  // there; WAL always on (a lost WAL-less write could leave two Puts).
  void SingleDeleteOp() {
    const int cf = Cf(), key = NumKKeys() + I(0, NumSKeys() - 1);
    const std::string k = KeyOf(key);
    SharedHold sh(&s_->locks);
    StripesHold st(&s_->locks, {KeyLocks::StripeOf(cf, key)});
    SdState& state = s_->sd[cf][static_cast<size_t>(key)];
    if (state == SdState::kUnknown) {
      PinnableSlice v;
      const Status b = s_->db->GetBaseDB()->Get(ReadOptions(), H(cf), k, &v);
      if (!b.ok() && !b.IsNotFound()) {
        ReportError("SingleDelete key read: " + b.ToString());
        return;
      }
      state = b.ok() ? SdState::kOnePut : SdState::kAbsent;
    }
    const WriteOptions wo = Wo(false);
    Status w;
    if (state == SdState::kAbsent) {
      w = WPut(wo, cf, k, Value(false));
      g.puts++;
      if (w.ok()) state = SdState::kOnePut;
    } else {
      w = WOne(wo, [&](rocksdb::DB* d) { return d->SingleDelete(wo, H(cf), k); },
               [&](rocksdb::WriteBatch* b) { return b->SingleDelete(H(cf), k); });
      g.single_deletes++;
      if (w.ok()) state = SdState::kAbsent;
    }
    g.write_keys++;
    if (!w.ok()) {
      state = SdState::kUnknown;
      ReportError("SingleDelete/Put of an s key: " + w.ToString());
    }
    if (U() < FLAGS_check_after_write_prob) CheckOne(cf, key, "after-write");
  }

  void DeleteRangeOp() {
    const int cf = Cf(), a = KKey(), len = I(1, 16);
    const std::string b = KeyOf(a), e = a + len >= NumKKeys() ? std::string("k~") : KeyOf(a + len);
    const bool pessimistic = s_->kind == TxnKind::kPessimistic;
    if (TxnRefuses(s_->kind, kTwDeleteRange)) {
      g.skipped_delete_ranges++;
      return;
    }
    ExclusiveHold x(&s_->locks);
    // Optimistic: the transaction DB's own DeleteRange (the DB's: it goes
    // to the LiveKeyDB, which writes through RocksDB's
    // OptimisticTransactionDB). Pessimistic: the TransactionDB's is
    // NotSupported (RocksDB's), so through the LiveKeyDB while that works.
    const Status st = (pessimistic ? static_cast<rocksdb::DB*>(s_->db) : W())->DeleteRange(Wo(), H(cf), b, e);
    if (NoteRefusal(s_->kind, kTwDeleteRange, st,
                    pessimistic ? "LiveKeyDB::DeleteRange" : "OptimisticTransactionDB::DeleteRange")) {
      g.skipped_delete_ranges++;
      return;
    }
    Check(st, "DeleteRange");
    g.delete_ranges++;
    // Every key of the range, at once (still exclusive).
    std::vector<int> cfs, keys;
    for (int i = a; i < std::min(NumKKeys(), a + len); ++i) {
      cfs.push_back(cf);
      keys.push_back(i);
    }
    if (U() < FLAGS_check_after_write_prob) CheckKeys(s_, cfs, keys, "after-delete-range", false);
  }

  // 2..8 entries over 1..4 keys of both families: the same key several
  // times in one batch.
  void BatchOp() {
    // Entities the transaction DB refuses are written as Puts.
    const bool entities_as_puts = TxnRefuses(s_->kind, kTwEntity);
    bool has_entity = false;
    const int distinct = I(1, 4);
    std::vector<std::pair<int, int>> pool;
    for (int i = 0; i < distinct; ++i) pool.emplace_back(Cf(), KKey());
    const int n = I(2, 8);
    rocksdb::WriteBatch wb;
    std::vector<uint32_t> stripes;
    std::vector<int> cfs, keys;
    for (const auto& p : pool) {
      stripes.push_back(KeyLocks::StripeOf(p.first, p.second));
      cfs.push_back(p.first);
      keys.push_back(p.second);
    }
    for (int i = 0; i < n; ++i) {
      const auto& p = pool[static_cast<size_t>(I(0, distinct - 1))];
      const std::string k = KeyOf(p.second);
      const double r = U();
      if (r < 0.4) {
        wb.Put(H(p.first), k, Value());
      } else if (r < 0.65) {
        wb.Delete(H(p.first), k);
      } else if (IsMergeKey(p.second)) {
        wb.Merge(H(p.first), k, "b" + std::to_string(tid_) + "." + std::to_string(++serial_));
      } else if (entities_as_puts) {
        wb.Put(H(p.first), k, Value(false));
        g.batch_entities_as_puts++;
      } else {
        const std::string v = Value(false);
        const rocksdb::WideColumns cols{{rocksdb::kDefaultWideColumnName, v}, {"c1", "b"}};
        wb.PutEntity(H(p.first), k, cols);
        has_entity = true;
      }
    }
    SharedHold sh(&s_->locks);
    StripesHold st(&s_->locks, stripes);
    const Status ws = ExplicitTxnWrites(s_) ? ExplicitTxnWrite(s_, Wo(), &wb) : W()->Write(Wo(), &wb);
    if (has_entity && NoteRefusal(s_->kind, kTwEntity, ws, "the transaction DB's Write of a batch with PutEntity")) {
      g.skipped_entities++;  // the whole batch (nothing was written)
      return;
    }
    Check(ws, "Write(batch)");
    g.batches++;
    g.write_keys += static_cast<uint64_t>(n);
    if (U() < FLAGS_check_after_write_prob) CheckKeys(s_, cfs, keys, "after-batch", U() < 0.5);
  }

  // What a transaction wrote to a key so far: nothing (its reads see the
  // committed state, compared with the base DB), a value, a delete, or a
  // merge onto the committed state (not checked).
  struct TxnKey {
    enum Kind { kUntouched, kValue, kDeleted, kOpaque } kind = kUntouched;
    std::string value;
  };
  using TxnState = std::map<std::pair<int, int>, TxnKey>;

  // A read inside the transaction, checked against what it wrote (an ERROR
  // if it differs) or, for a key it did not write, against the base DB (the
  // base finds it and the transaction does not: LOST). The tool's stripes
  // of the key are held: nobody else writes it meanwhile.
  void CheckTxnRead(const std::pair<int, int>& p, const TxnKey& ks, const Status& rs, const std::string& v,
                    const char* how) {
    g.txn_reads++;
    const std::string k = KeyOf(p.second);
    const char* fam = kFamilies[p.first];
    switch (ks.kind) {
      case TxnKey::kValue:
        if (!rs.ok() || v != ks.value) {
          ReportError(Fmt("%s of %s in %s inside the transaction that wrote \"%s\": %s \"%s\"", how, k.c_str(), fam,
                          ks.value.c_str(), rs.ToString().c_str(), rs.ok() ? v.c_str() : ""));
        }
        break;
      case TxnKey::kDeleted:
        if (!rs.IsNotFound()) {
          ReportError(Fmt("%s of %s in %s inside the transaction that deleted it: %s \"%s\"", how, k.c_str(), fam,
                          rs.ToString().c_str(), rs.ok() ? v.c_str() : ""));
        }
        break;
      case TxnKey::kUntouched: {
        if (!rs.IsNotFound()) break;
        PinnableSlice bv;
        const Status b = s_->db->GetBaseDB()->Get(ReadOptions(), H(p.first), k, &bv);
        g.checks.fetch_add(1, std::memory_order_relaxed);
        if (!b.ok() && !b.IsNotFound()) {
          ReportError(Fmt("base read of %s in %s (txn-read): %s", k.c_str(), fam, b.ToString().c_str()));
        } else if (b.ok()) {
          std::string val = bv.ToString();
          if (val.size() > 40) val = val.substr(0, 40) + "...";
          ReportLoss(Fmt("key=%s cf=%s missed_by=%s phase=txn-read(%s) round=%d base_value=\"%s\"", k.c_str(), fam,
                         how, TxnKindName(s_->kind), g_round.load(), val.c_str()));
        }
        break;
      }
      case TxnKey::kOpaque:
        break;
    }
  }

  // A transaction over 1..4 keys of both families ("k" keys only: the
  // SingleDelete keys are never written by transactions), every tool
  // stripe of them held for the whole transaction (as a batch does).
  void TxnOp() {
    if (s_->kind == TxnKind::kNone) return;
    std::vector<std::pair<int, int>> pool;
    const int distinct = I(1, 4);
    for (int i = 0; i < distinct; ++i) pool.emplace_back(Cf(), KKey());
    std::sort(pool.begin(), pool.end());
    pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
    std::vector<uint32_t> stripes;
    std::vector<int> cfs, keys;
    for (const auto& p : pool) {
      stripes.push_back(KeyLocks::StripeOf(p.first, p.second));
      cfs.push_back(p.first);
      keys.push_back(p.second);
    }
    auto pick = [&]() -> const std::pair<int, int>& {
      return pool[static_cast<size_t>(I(0, static_cast<int>(pool.size()) - 1))];
    };
    SharedHold sh(&s_->locks);
    StripesHold hold(&s_->locks, stripes);
    const WriteOptions wo = Wo();
    const bool pessimistic = s_->kind == TxnKind::kPessimistic;
    const bool named = pessimistic && I(0, 3) == 0;
    const bool set_snapshot = U() < 0.25;
    std::unique_ptr<rocksdb::Transaction> txn;
    if (pessimistic) {
      rocksdb::TransactionOptions to;
      to.set_snapshot = set_snapshot;
      txn.reset(s_->txn_db->BeginTransaction(wo, to));
    } else {
      rocksdb::OptimisticTransactionOptions to;
      to.set_snapshot = set_snapshot;
      txn.reset(s_->occ_db->BeginTransaction(wo, to));
    }
    if (txn == nullptr) {
      ReportError(Fmt("BeginTransaction (%s) returned null", TxnKindName(s_->kind)));
      return;
    }
    g.txns++;
    Status failed;  // the first failure (a conflict, or an error already reported)
    auto fail = [&](const Status& st, const char* what) {
      if (st.ok() || !failed.ok()) return;
      failed = st;
      if (!IsTxnConflict(st)) {
        ReportError(Fmt("transaction (%s) %s: %s", TxnKindName(s_->kind), what, st.ToString().c_str()));
      }
    };
    if (named) {
      const std::string name =
          Fmt("t%d.%d.%d.%" PRIu64, static_cast<int>(::getpid()), g_round.load(), tid_, ++serial_);
      fail(txn->SetName(name), "SetName");
    }
    TxnState state;
    auto read = [&](const std::pair<int, int>& p) {
      ReadOptions ro;
      if (set_snapshot && U() < 0.3) ro.snapshot = txn->GetSnapshot();
      const std::string k = KeyOf(p.second);
      std::string v;
      const bool for_update = U() < 0.5;
      const Status rs = for_update ? txn->GetForUpdate(ro, H(p.first), k, &v) : txn->Get(ro, H(p.first), k, &v);
      if (!rs.ok() && !rs.IsNotFound()) {
        fail(rs, for_update ? "GetForUpdate" : "Get");
        return;
      }
      CheckTxnRead(p, state[p], rs, v, for_update ? "TxnGetForUpdate" : "TxnGet");
    };
    auto multi_get = [&]() {
      std::vector<ColumnFamilyHandle*> hs;
      std::vector<std::string> ks;
      for (const auto& p : pool) {
        hs.push_back(H(p.first));
        ks.push_back(KeyOf(p.second));
      }
      std::vector<Slice> slices(ks.begin(), ks.end());
      std::vector<std::string> vals;
      const std::vector<Status> rs = txn->MultiGet(ReadOptions(), hs, slices, &vals);
      for (size_t i = 0; i < pool.size(); ++i) {
        if (!rs[i].ok() && !rs[i].IsNotFound()) {
          fail(rs[i], "MultiGet");
          return;
        }
        CheckTxnRead(pool[i], state[pool[i]], rs[i], vals[i], "TxnMultiGet");
      }
    };
    auto write = [&](const std::pair<int, int>& p) {
      const std::string k = KeyOf(p.second);
      TxnKey& ks = state[p];
      const double r = U();
      if (r < 0.4) {
        const std::string v = Value();
        const Status w = txn->Put(H(p.first), k, v);
        fail(w, "Put");
        if (w.ok()) ks = {TxnKey::kValue, v};
      } else if (r < 0.6) {
        const Status w = txn->Delete(H(p.first), k);
        fail(w, "Delete");
        if (w.ok()) ks = {TxnKey::kDeleted, ""};
      } else if (IsMergeKey(p.second)) {
        const std::string op = "t" + std::to_string(tid_) + "." + std::to_string(++serial_);
        const Status w = txn->Merge(H(p.first), k, op);
        fail(w, "Merge");
        if (w.ok()) {
          if (ks.kind == TxnKey::kValue) {
            ks.value += "," + op;
          } else if (ks.kind == TxnKey::kDeleted) {
            ks = {TxnKey::kValue, op};
          } else {
            ks = {TxnKey::kOpaque, ""};
          }
        }
      } else {
        const std::string v = Value(false);
#if DLCBF_ROCKSDB_AT_LEAST(9, 3)
        const rocksdb::WideColumns cols{{rocksdb::kDefaultWideColumnName, v}, {"c1", "t"}};
        const Status w = txn->PutEntity(H(p.first), k, cols);
        fail(w, "PutEntity");
#else
        // Transaction::PutEntity came with RocksDB 9.3: a Put instead.
        const Status w = txn->Put(H(p.first), k, v);
        fail(w, "Put");
#endif
        if (w.ok()) ks = {TxnKey::kValue, v};  // Get reads the default column
      }
    };
    const int steps = I(1, 5);
    for (int i = 0; i < steps && failed.ok(); ++i) {
      if (U() < 0.35) {
        read(pick());
      } else {
        write(pick());
      }
    }
    if (failed.ok() && U() < 0.3) {
      txn->SetSavePoint();
      const TxnState saved = state;
      const int more = I(1, 3);
      for (int i = 0; i < more && failed.ok(); ++i) write(pick());
      if (failed.ok() && U() < 0.5) read(pick());
      if (failed.ok() && U() < 0.7) {
        const Status rs = txn->RollbackToSavePoint();
        fail(rs, "RollbackToSavePoint");
        if (rs.ok()) state = saved;
      }
    }
    // Read back what it wrote (and sometimes every key at once).
    for (const auto& p : pool) {
      if (!failed.ok()) break;
      const TxnKey::Kind kind = state[p].kind;
      if ((kind == TxnKey::kValue || kind == TxnKey::kDeleted) && U() < 0.5) read(p);
    }
    if (failed.ok() && U() < 0.2) multi_get();
    const bool rollback = I(0, 7) == 0;
    uint64_t entries = txn->GetWriteBatch()->GetWriteBatch()->Count();
    if (failed.ok() && named) {
      const Status ps = txn->Prepare();
      fail(ps, "Prepare");
      if (ps.ok()) {
        g.txn_prepared++;
        // A commit-time batch entry on one of its keys (a PutEntity on a
        // key that takes no merges, now and then).
        const auto& p = pick();
        const std::string k = KeyOf(p.second);
        rocksdb::WriteBatch* ctwb = txn->GetCommitTimeWriteBatch();
        Status cs;
        if (!IsMergeKey(p.second) && U() < 0.3) {
          const std::string v = Value(false);
          const rocksdb::WideColumns cols{{rocksdb::kDefaultWideColumnName, v}, {"c1", "ct"}};
          cs = ctwb->PutEntity(H(p.first), k, cols);
        } else {
          cs = ctwb->Put(H(p.first), k, Value());
        }
        fail(cs, "commit-time batch");
        entries += ctwb->Count();
        // A crash child killed now leaves a prepared transaction.
        if (FLAGS_txn_prepare_pause_ms > 0 && U() < 0.5) {
          std::this_thread::sleep_for(std::chrono::microseconds(I(0, FLAGS_txn_prepare_pause_ms * 1000)));
        }
      }
    }
    if (!failed.ok()) {
      // A conflict (counted) or an error (reported): roll back.
      if (IsTxnConflict(failed)) g.txn_conflicts++;
      const Status rs = txn->Rollback();
      if (!rs.ok()) {
        ReportError(Fmt("transaction (%s) Rollback after %s: %s", TxnKindName(s_->kind), failed.ToString().c_str(),
                        rs.ToString().c_str()));
      }
      return;
    }
    if (rollback) {
      const Status rs = txn->Rollback();
      if (rs.ok()) {
        g.txn_rollbacks++;
      } else {
        ReportError(Fmt("transaction (%s) Rollback: %s", TxnKindName(s_->kind), rs.ToString().c_str()));
      }
      return;
    }
    const Status cs = txn->Commit();
    if (!cs.ok()) {
      if (IsTxnConflict(cs)) {
        g.txn_conflicts++;
      } else {
        ReportError(Fmt("transaction (%s%s) Commit: %s", TxnKindName(s_->kind), named ? ", prepared" : "",
                        cs.ToString().c_str()));
      }
      const Status rs = txn->Rollback();
      if (!rs.ok() && !IsTxnConflict(cs)) {
        ReportError(Fmt("transaction (%s) Rollback after a failed Commit: %s", TxnKindName(s_->kind),
                        rs.ToString().c_str()));
      }
      return;
    }
    g.txn_commits++;
    g.write_keys += entries;
    if (U() < FLAGS_check_after_write_prob) CheckKeys(s_, cfs, keys, "after-txn", U() < 0.5);
  }

  void IngestOp() {
    const int cf = Cf();
    std::set<int> chosen;
    const int n = I(1, 32);
    for (int i = 0; i < n; ++i) chosen.insert(KKey());
    const std::string file =
        s_->sst_dir + "/ingest_" + std::to_string(::getpid()) + "_" + std::to_string(++s_->sst_serial) + ".sst";
    // A file of that name can only be a killed process's leftover (its pid
    // reused), maybe hard-linked into the DB by a move_files ingestion:
    // unlink the name, so that the writer below never truncates that SST.
    std::error_code rm_ec;
    std::filesystem::remove(file, rm_ec);
    rocksdb::Options o = BaseOptions();
    rocksdb::SstFileWriter w(rocksdb::EnvOptions(), o, H(cf));
    Status st = w.Open(file);
    for (int key : chosen) {
      if (!st.ok()) break;
      const std::string k = KeyOf(key);
      st = U() < 0.15 ? w.Delete(k) : w.Put(k, Value());
    }
    if (st.ok() && U() < 0.1) {
      const int a = KKey(), e = a + I(1, 8);
      st = w.DeleteRange(KeyOf(a), e >= NumKKeys() ? std::string("k~") : KeyOf(e));
    }
    if (st.ok()) st = w.Finish();
    if (!st.ok()) {
      ReportError("SstFileWriter: " + st.ToString());
      return;
    }
    {
      ExclusiveHold x(&s_->locks);
      rocksdb::IngestExternalFileOptions iopts;
      iopts.move_files = U() < 0.5;
      // (TryAgain: RocksDB's assertion build found the memtable still
      // overlapping the file after its flush; the call may be repeated.)
      Status is = Status::TryAgain();
      for (int attempt = 0; attempt < 8 && is.IsTryAgain(); ++attempt) {
        is = s_->db->IngestExternalFile(H(cf), {file}, iopts);
      }
      Check(is, "IngestExternalFile");
      g.ingests++;
      std::vector<int> cfs(chosen.size(), cf), keys(chosen.begin(), chosen.end());
      if (U() < FLAGS_check_after_write_prob) CheckKeys(s_, cfs, keys, "after-ingest", false);
    }
    std::error_code ec;
    std::filesystem::remove(file, ec);
  }

  // An ingestion through GetBaseDB() (the threat model's "ingestion
  // LiveKeyDB did not make"). Fresh keys (after every key of the universe,
  // each file a range of its own) overlap nothing: RocksDB puts the file at
  // the bottom level with global sequence number 0, which moves no
  // sequence number (the world watch must see it); keys of the universe
  // take a new sequence number (the ledger sees it). Every ingested key is
  // checked at once.
  void ForeignIngestOp() {
    const int cf = Cf();
    const bool fresh = U() < 0.5;
    const uint64_t serial = ++s_->sst_serial;
    const std::string file =
        s_->sst_dir + "/foreign_" + std::to_string(::getpid()) + "_" + std::to_string(serial) + ".sst";
    std::error_code rm_ec;
    std::filesystem::remove(file, rm_ec);
    std::set<int> chosen;
    std::vector<std::string> fresh_keys;
    const int n = I(1, 32);
    if (fresh) {
      for (int i = 0; i < n; ++i) {
        fresh_keys.push_back(Fmt("zf%010d_%010" PRIu64 "_%03d", static_cast<int>(::getpid()), serial, i));
      }
    } else {
      for (int i = 0; i < n; ++i) chosen.insert(KKey());
    }
    rocksdb::SstFileWriter w(rocksdb::EnvOptions(), BaseOptions(), H(cf));
    Status st = w.Open(file);
    for (const std::string& k : fresh_keys) {
      if (st.ok()) st = w.Put(k, Value(false));
    }
    for (int key : chosen) {
      if (st.ok()) st = w.Put(KeyOf(key), Value());
    }
    if (st.ok()) st = w.Finish();
    if (!st.ok()) {
      ReportError("SstFileWriter (foreign): " + st.ToString());
      return;
    }
    {
      ExclusiveHold x(&s_->locks);
      const uint64_t before = s_->db->GetBaseDB()->GetLatestSequenceNumber();
      Status is = Status::TryAgain();  // (as IngestOp)
      for (int attempt = 0; attempt < 8 && is.IsTryAgain(); ++attempt) {
        is = s_->db->GetBaseDB()->IngestExternalFile(H(cf), {file}, rocksdb::IngestExternalFileOptions());
      }
      Check(is, "foreign IngestExternalFile");
      g.foreign_ingests++;
      if (s_->db->GetBaseDB()->GetLatestSequenceNumber() == before) g.foreign_ingests_at_zero++;
      if (fresh) {
        CheckRawKeys(cf, fresh_keys, "after-foreign-ingest");
      } else {
        std::vector<int> cfs(chosen.size(), cf), keys(chosen.begin(), chosen.end());
        CheckKeys(s_, cfs, keys, "after-foreign-ingest", false);
      }
    }
    std::error_code ec;
    std::filesystem::remove(file, ec);
  }

  // Keys outside the universe (fresh foreign ingestions): base finds it =>
  // LiveKeyDB's Get and MultiGet find it.
  void CheckRawKeys(int cf, const std::vector<std::string>& ks, const char* phase) {
    for (const std::string& k : ks) {
      PinnableSlice v, bv, bv0;
      const bool before = s_->db->GetBaseDB()->Get(ReadOptions(), H(cf), k, &bv0).ok();  // (as CheckKeys)
      const Status a = s_->db->Get(ReadOptions(), H(cf), k, &v);
      std::vector<std::string> vals;
      const std::vector<Status> m = s_->db->MultiGet(ReadOptions(), {H(cf)}, {Slice(k)}, &vals);
      const Status b = s_->db->GetBaseDB()->Get(ReadOptions(), H(cf), k, &bv);
      g.checks.fetch_add(1, std::memory_order_relaxed);
      if (!b.ok() || !before) continue;
      std::string missed;
      if (a.IsNotFound()) missed += ",Get";
      if (m[0].IsNotFound()) missed += ",MultiGet";
      if (!missed.empty()) {
        ReportLoss(Fmt("key=%s cf=%s missed_by=%s phase=%s round=%d", k.c_str(), kFamilies[cf], missed.c_str() + 1,
                       phase, g_round.load()));
      }
    }
  }

  // rocksdb::DeleteFilesInRange (it goes to the root DBImpl: no wrapper
  // sees it) over a wide range: every L1+ file inside it goes, and older
  // versions of its keys in lower levels are visible again. The range's
  // keys are checked at once (the world watch must have made the indexes
  // step aside).
  void DeleteFilesOp() {
    const int cf = Cf();
    const int len = I(std::max(1, NumKKeys() / 8), std::max(1, NumKKeys() / 2));
    const int a = I(0, std::max(0, NumKKeys() - len));
    const int e = std::min(NumKKeys() - 1, a + len);
    const std::string ka = KeyOf(a), ke = KeyOf(e);
    const Slice sa(ka), se(ke);
    ExclusiveHold x(&s_->locks);
    std::vector<rocksdb::LiveFileMetaData> before, after;
    s_->db->GetLiveFilesMetaData(&before);
    Check(rocksdb::DeleteFilesInRange(s_->db, H(cf), &sa, &se), "DeleteFilesInRange");
    s_->db->GetLiveFilesMetaData(&after);
    g.delete_files++;
    if (after.size() < before.size()) g.dropped_files += before.size() - after.size();
    std::vector<int> cfs, keys;
    for (int i = a; i <= e; ++i) {
      cfs.push_back(cf);
      keys.push_back(i);
    }
    CheckKeys(s_, cfs, keys, "after-delete-files", false);
  }

  Session* s_;
  const Mix* mix_;
  std::mt19937_64 rng_;
  int tid_;
  uint64_t serial_ = 0;
};

// --chaos: pauses the deferred-check thread and rebuild scans (process-wide
// test hooks) at random moments, only while a phase runs: they delay
// background work, never change what it does, so every result must stay
// lossless; the pauses widen the windows in which a pending check, a
// rebuild's scan, a compaction and the writers overlap (with probability
// --chaos_rewrite_prob a check pause overwrites 16 keys with 'X' values,
// flushes, compacts everything, rebuilds and writes the keys again, the
// writers held off meanwhile).
// Off (both pauses released) before the phase's checks wait for the
// background work.
class Chaos {
 public:
  Chaos(Session* s, bool on, uint64_t seed) {
    if (!on) return;
    thread_ = std::thread([this, s, seed] {
      std::mt19937_64 rng(seed);
      auto ms = [&rng](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
      };
      std::unique_lock<std::mutex> l(mu_);
      while (!stop_) {
        if (cv_.wait_for(l, ms(20, 300), [this] { return stop_; })) break;
        const bool rewrite = std::uniform_real_distribution<double>(0, 1)(rng) < FLAGS_chaos_rewrite_prob;
        const bool checks = rewrite || rng() % 3 != 0, rebuilds = !rewrite && rng() % 3 == 0;
        if (checks) hooks::SetLiveKeyCheckPauseForTesting(true);
        if (rebuilds) hooks::SetLiveKeyRebuildPauseForTesting(true);
        cv_.wait_for(l, checks ? ms(0, 100) : ms(0, 20), [this] { return stop_; });
        if (rewrite && !stop_) {
          // While checks wait: overwrite a few keys with 'X' values (blind
          // overwrites: their checks now wait), flush, compact (the
          // compaction filter drops them behind LiveKeyDB's back), rebuild,
          // write the keys again and check them; and let the writers go on
          // a little before the checks run.
          std::vector<std::pair<int, int>> picked;
          for (int i = 0; i < 16; ++i) {
            picked.emplace_back(static_cast<int>(rng() % kNumFamilies), static_cast<int>(rng() % NumKKeys()));
          }
          // The writers wait for the whole step (an exclusive hold): their
          // blind writes would take check snapshots that still show the
          // 'X' values, and the compaction filter spares what a snapshot
          // sees.
          ExclusiveHold step(&s->locks);
          auto put_all = [&](const char* prefix) {
            for (const auto& p : picked) {
              const std::string v = std::string(prefix) + std::to_string(rng() % 1000000);
              Note(SessionPut(s, WriteOptions(), s->h[static_cast<size_t>(p.first)], KeyOf(p.second), v), "Put");
              g.puts++;
              g.write_keys++;
              if (prefix[0] != 'X') CheckKeys(s, {p.first}, {p.second}, "chaos-rewrite", false);
            }
          };
          put_all("Xchaos");
          rocksdb::FlushOptions fo;
          fo.allow_write_stall = true;
          Note(s->db->Flush(fo, s->h), "Flush");
          g.flushes++;
          for (auto* h : s->h) {
            Note(s->db->CompactRange(rocksdb::CompactRangeOptions(), h, nullptr, nullptr), "CompactRange");
          }
          g.compactions += s->h.size();
          Status rs;
          {
            HangGuard hg("RebuildIndex");
            rs = s->db->RebuildIndex();
          }
          Note(rs, "RebuildIndex");
          if (rs.ok()) g.manual_rebuilds++;
          put_all("vchaos");
          // Every key, the writers stopped, the checks still paused (a
          // loss found here may be repaired by the next rebuild).
          VerifyAll(s, "chaos-pause");
        }
        hooks::SetLiveKeyCheckPauseForTesting(false);
        hooks::SetLiveKeyRebuildPauseForTesting(false);
      }
    });
  }
  static void Note(const Status& st, const char* what) {
    if (!st.ok()) ReportError(Fmt("chaos %s: %s", what, st.ToString().c_str()));
  }
  ~Chaos() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    hooks::SetLiveKeyCheckPauseForTesting(false);
    hooks::SetLiveKeyRebuildPauseForTesting(false);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Runs the workload with --threads threads for `ops` operations (or until
// g_stop), with --chaos.
void RunPhase(Session* s, int64_t ops, uint64_t seed) {
  static const Mix plain = MakeMix(false), with_txn = MakeMix(true);
  const Mix* mix = s->kind == TxnKind::kNone ? &plain : &with_txn;
  if (!(mix->total > 0)) Die(Fmt("every op weight is 0 (txn=%s)", TxnKindName(s->kind)));
  std::atomic<int64_t> budget{ops};
  std::vector<std::thread> ts;
  std::mt19937_64 rng(seed);
  Chaos chaos(s, FLAGS_chaos, rng());
  for (int t = 0; t < std::max(1, FLAGS_threads); ++t) {
    ts.emplace_back([s, mix, seed = rng(), t, &budget] {
      Worker w(s, mix, seed, t);
      w.Run(&budget);
    });
  }
  for (auto& t : ts) t.join();
}

// ---- child (crash cycles) ---------------------------------------------------------------------------

// The counters a crash child reports (its side file's "C" line), in this
// order: the parent adds them to its own. Indexes 0 (ops), 13 (written
// keys), 14 (automatic rebuilds) and 15 (checkpoints) are read by name
// below.
constexpr size_t kChildCounters = 40;
std::atomic<uint64_t>* const kChildCounterFields[kChildCounters] = {
    &g.ops,           &g.puts,          &g.merges,           &g.deletes,
    &g.single_deletes, &g.delete_ranges, &g.batches,          &g.entities,
    &g.ingests,       &g.flushes,       &g.compactions,      &g.manual_rebuilds,
    &g.checks,        &g.write_keys,    &g.auto_rebuilds,    &g.checkpoints,
    &g.foreign_puts,  &g.txns,          &g.txn_commits,      &g.txn_rollbacks,
    &g.txn_prepared,  &g.txn_conflicts, &g.txn_reads,        &g.recovered_prepared,
    &g.recovered_commits, &g.recovered_rollbacks, &g.skipped_delete_ranges, &g.sessions[0],
    &g.sessions[1],   &g.sessions[2],   &g.open_fallbacks,   &g.skipped_entities,
    &g.batch_entities_as_puts, &g.foreign_ingests, &g.foreign_ingests_at_zero, &g.delete_files,
    &g.dropped_files, &g.hash_memtable_opens, &g.dlcbf_index_opens, &g.avoid_flush_opens};

std::string CounterLine() {
  std::string line = "C";
  for (std::atomic<uint64_t>* c : kChildCounterFields) line += " " + std::to_string(c->load());
  return line + "\n";
}

int RunChild() {
  if (FLAGS_side_file.empty()) Die("--side_file is required for --role=child");
  g_side_fd = ::open(FLAGS_side_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (g_side_fd < 0) Die("open side file: " + std::string(std::strerror(errno)));
  g_seed = FLAGS_child_seed;
  g_round = FLAGS_round;
  g_db_dir = FLAGS_db;
  if (g_db_dir.empty()) Die("--db is required for --role=child");
  std::mt19937_64 rng(FLAGS_child_seed);
  // The parent drew them all (--index_options names every field; --txn
  // is the session kind it drew).
  const LiveKeyIndexOptions io = DrawIndexOptions(rng);
  const TxnKind kind = DrawTxnKind(rng);
  g_memtable = DrawMemtable(rng);
  WriteLine(g_side_fd, "O txn=" + std::string(TxnKindName(kind)) + " memtable=" + MemtableName(g_memtable) + " " +
                           Describe(io) + "\n");
  Session s;
  std::string note;
  const Status os = OpenSession(&s, io, kind, &note);
  if (!os.ok()) Die("child open: " + os.ToString());
  // The session's kind (pessimistic if RocksDB refused the drawn one).
  WriteLine(g_side_fd, "K " + std::string(TxnKindName(s.kind)) + (note.empty() ? "" : " " + note) + "\n");
  ResolvePrepared(&s, rng, "crash child");
  WriteLine(g_side_fd, "R\n");
  // Counters every 10 ms (and the index's rebuild and checkpoint counts:
  // the parent may kill right after a checkpoint).
  std::thread reporter([&s] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const LiveKeyStats st = s.db->GetLiveKeyStats();
      g.auto_rebuilds = st.auto_rebuilds;
      g.checkpoints = st.checkpoints;
      WriteLine(g_side_fd, CounterLine());
    }
  });
  reporter.detach();
  RunPhase(&s, INT64_MAX, rng());
  // Only a negative control's first loss stops the workers: wait for the kill.
  WriteLine(g_side_fd, CounterLine());
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

struct ChildReport {
  bool ready = false;
  std::string options;
  std::vector<uint64_t> c;  // the last counter line
  std::vector<std::string> losses, errors;
  std::string session;  // the kind it opened ("K" line), and why if not the drawn one
};

ChildReport ReadSideFile(const std::string& path) {
  ChildReport r;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // torn last line
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    switch (line[0]) {
      case 'R': r.ready = true; break;
      case 'O': r.options = line.substr(2); break;
      case 'K': r.session = line.substr(2); break;
      case 'L': r.losses.push_back(line.substr(2)); break;
      case 'E': r.errors.push_back(line.substr(2)); break;
      case 'C': {
        std::istringstream ls(line.substr(2));
        std::vector<uint64_t> v;
        uint64_t x;
        while (ls >> x) v.push_back(x);
        if (v.size() == kChildCounters) r.c = v;
        break;
      }
      default: break;
    }
  }
  return r;
}

// ---- parent -------------------------------------------------------------------------------------------

// Every field, as --index_options overrides (the crash child's options).
std::string ToOverrides(const LiveKeyIndexOptions& io) {
  return Fmt("kernel=%s,expected_keys=%" PRIu64 ",bits_per_key=%.17g,sizing_load=%.17g,abf_counter_bits=%u,"
             "auto_rebuild_drift=%.17g,rebuild_at_capacity=%.17g,rebuild_headroom=%.17g,lock_stripes=%u,"
             "delete_range_scan_limit=%" PRIu64 ",trust_single_delete=%d,persist_index=%d,"
             "defer_liveness_checks=%d,max_pending_checks=%u,max_deferring_writers=%u,rebuild_scan_threads=%u,"
             "background_open_build=%d,checkpoint_interval_seconds=%.17g,seed=%" PRIu64
             ",rebuild_progress_interval=%" PRIu64 ",unchecked_copy_budget=%.17g,live_prefix_counts=%d,"
             "live_range_lengths=%s",
             KernelName(io.kernel), io.expected_keys, io.bits_per_key, io.sizing_load, io.abf_counter_bits,
             io.auto_rebuild_drift, io.rebuild_at_capacity, io.rebuild_headroom, io.lock_stripes,
             io.delete_range_scan_limit, io.trust_single_delete ? 1 : 0, io.persist_index ? 1 : 0,
             io.defer_liveness_checks ? 1 : 0, io.max_pending_checks, io.max_deferring_writers,
             io.rebuild_scan_threads, io.background_open_build ? 1 : 0, io.checkpoint_interval_seconds, io.seed,
             io.rebuild_progress_interval, io.unchecked_copy_budget, io.live_prefix_counts ? 1 : 0,
             RangeLengths(io).c_str());
}

// The index options of a session: a fresh draw, with the hash seed and
// the kernel mostly those of `base` (an index file or checkpoint of
// another seed or kernel is rebuilt, never loaded: sometimes that).
LiveKeyIndexOptions DrawSessionOptions(std::mt19937_64& rng, const LiveKeyIndexOptions& base) {
  LiveKeyIndexOptions io = DrawIndexOptions(rng);
  if (rng() % 10 != 0) io.seed = base.seed;
  if (rng() % 5 != 0 && FLAGS_index_options.find("kernel=") == std::string::npos) {
    LiveKeyIndexOptions same = io;
    same.kernel = base.kernel;
    if (same.Validate().ok()) io = same;
  }
  return io;
}

// Returns the child's index options.
LiveKeyIndexOptions CrashCycle(std::mt19937_64& rng, int round, const LiveKeyIndexOptions& fixed) {
  const LiveKeyIndexOptions cio = FLAGS_redraw_options ? DrawSessionOptions(rng, fixed) : fixed;
  const TxnKind drawn_kind = DrawTxnKind(rng);
  // The child opens as drawn, unless a non-transaction open would meet
  // two-phase WAL sections (probed here: the DB is closed).
  TxnKind child_kind = drawn_kind;
  std::string launch_note, why;
  if (child_kind != TxnKind::kPessimistic && g_maybe_2pc && NeedsTwoPhaseOpen(&why)) {
    launch_note = Fmt(" (drawn txn=%s: a non-transaction open of this DB %s)", TxnKindName(drawn_kind), why.c_str());
    g.open_fallbacks++;
    child_kind = TxnKind::kPessimistic;
  }
  if (child_kind == TxnKind::kPessimistic) g_maybe_2pc = true;
  const std::string side = g_db_dir + ".side/round" + std::to_string(round);
  std::error_code ec;
  std::filesystem::create_directories(g_db_dir + ".side", ec);
  std::filesystem::remove(side, ec);
  std::vector<std::string> args = {g_self, "--role=child", "--side_file=" + side,
                                   "--child_seed=" + std::to_string(rng()), "--round=" + std::to_string(round),
                                   "--index_options=" + ToOverrides(cio),
                                   "--txn=" + std::string(TxnKindName(child_kind))};
  // Every flag of this file as the parent has it (the child's own flags aside).
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  for (const auto& f : all) {
    if (f.filename != __FILE__) continue;
    if (f.name == "role" || f.name == "side_file" || f.name == "child_seed" || f.name == "round" ||
        f.name == "index_options" || f.name == "txn") {
      continue;
    }
    args.push_back("--" + f.name + "=" + f.current_value);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the parent
    if (::getppid() != parent) std::_Exit(127);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  const int span = std::max(0, FLAGS_max_kill_ms - FLAGS_min_kill_ms);
  int delay = FLAGS_min_kill_ms + static_cast<int>(rng() % static_cast<uint64_t>(span + 1));
  // Or right after a checkpoint (the child reports its count every 10 ms):
  // a checkpoint then covers writes that the crash may take back (a
  // disableWAL tail), the case Open's checkpoint replay must get right.
  const bool after_checkpoint = std::uniform_real_distribution<double>(0, 1)(rng) < FLAGS_kill_after_checkpoint_prob &&
                                cio.checkpoint_interval_seconds > 0;
  const int settle_ms = static_cast<int>(rng() % 21);
  uint64_t checkpoints_seen = 0;  // the count to pass (after delay / 2)
  bool checkpoint_kill = false;
  int status = 0;
  bool exited = false;
  const auto start = Clock::now();
  for (;;) {
    const double elapsed_ms = Seconds(start) * 1000;
    if (after_checkpoint) {
      if (elapsed_ms >= FLAGS_max_kill_ms + 500) break;  // no checkpoint came (checkpoints follow flushes)
      const ChildReport now = elapsed_ms >= delay / 2 ? ReadSideFile(side) : ChildReport();
      if (!now.c.empty() && now.ready) {
        if (checkpoints_seen == 0) checkpoints_seen = now.c[15] + 1;
        if (now.c[15] >= checkpoints_seen) {
          std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
          checkpoint_kill = true;
          break;
        }
      }
    } else if (elapsed_ms >= delay) {
      break;
    }
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      exited = true;
      break;
    }
    if (g_stop.load()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(after_checkpoint ? 2 : 5));
  }
  delay = static_cast<int>(Seconds(start) * 1000);
  if (!exited) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  const ChildReport r = ReadSideFile(side);
  if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
    ReportError(WIFSIGNALED(status)
                    ? Fmt("round %d: the crash child died of signal %d (%s)", round, WTERMSIG(status),
                          strsignal(WTERMSIG(status)))
                    : Fmt("round %d: the crash child exited by itself (exit code %d)", round,
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  } else {
    g.kills++;
  }
  if (!r.c.empty()) {
    for (size_t i = 0; i < kChildCounters; ++i) *kChildCounterFields[i] += r.c[i];
  }
  for (const auto& l : r.losses) {
    const uint64_t n = g.lost.fetch_add(1) + 1;
    if (n <= static_cast<uint64_t>(FLAGS_print_losses)) {
      std::printf("livekey_stress: LOST (crash child) %s\n", l.c_str());
    }
  }
  if (!r.losses.empty() && FLAGS_expect_loss) g_stop = true;
  for (const auto& e : r.errors) ReportError("(crash child) " + e);
  const uint64_t writes = r.c.empty() ? 0 : r.c[13];
  const uint64_t autos = r.c.empty() ? 0 : r.c[14];
  const double per_kop = static_cast<double>(autos) * 1000.0 / static_cast<double>(std::max<uint64_t>(writes, 1000));
  std::printf("round %d crash: %s after %d ms (%s%s), child ops=%" PRIu64 " writes=%" PRIu64
              " auto_rebuilds=%" PRIu64 " (%.1f per 1000 writes) checkpoints=%" PRIu64 " txns=%" PRIu64
              " txn_commits=%" PRIu64 " txn_prepared=%" PRIu64 " lost=%zu\n"
              "  child options: %s\n  child session: txn=%s%s\n",
              round, exited ? "exited" : "killed", delay, r.ready ? "in the workload" : "inside Open",
              checkpoint_kill ? ", just after a checkpoint" : "", r.c.empty() ? 0 : r.c[0], writes, autos,
              per_kop, r.c.empty() ? 0 : r.c[15], r.c.empty() ? 0 : r.c[17], r.c.empty() ? 0 : r.c[18],
              r.c.empty() ? 0 : r.c[20], r.losses.size(), r.options.c_str(),
              r.session.empty() ? "(not opened)" : r.session.c_str(), launch_note.c_str());
  if (per_kop > FLAGS_max_auto_rebuilds_per_kop) {
    std::printf("livekey_stress: rebuild storm in round %d's crash child: %" PRIu64 " automatic rebuilds for %" PRIu64
                " written keys (%.1f per 1000 > %.1f)\n",
                round, autos, writes, per_kop, FLAGS_max_auto_rebuilds_per_kop);
    g.storms++;
  }
  std::fflush(stdout);
  return cio;
}

// Open (a reopen after a Close or a crash), check at once, wait until the
// indexes serve, check again.
// after_crash: the crash child's options; the reopen then mostly takes
// their seed and kernel and persists, so it loads the child's last
// checkpoint and brings it forward.
bool OpenAndVerify(Session* s, std::mt19937_64& rng, const LiveKeyIndexOptions& fixed,
                   const LiveKeyIndexOptions* after_crash, bool first, const std::string& label) {
  LiveKeyIndexOptions io = fixed;
  if (FLAGS_redraw_options) {
    io = DrawSessionOptions(rng, after_crash != nullptr ? *after_crash : fixed);
    if (after_crash != nullptr && rng() % 5 != 0) {
      LiveKeyIndexOptions load = io;
      load.persist_index = true;
      if (load.Validate().ok()) io = load;
    }
  }
  const TxnKind kind = DrawTxnKind(rng);
  g_memtable = DrawMemtable(rng);
  std::printf("%s open: txn=%s memtable=%s %s\n", label.c_str(), TxnKindName(kind), MemtableName(g_memtable),
              Describe(io).c_str());
  std::fflush(stdout);
  std::string note;
  const Status os = OpenSession(s, io, kind, &note);
  if (!note.empty()) std::printf("%s open: %s\n", label.c_str(), note.c_str());
  if (!os.ok()) {
    ReportError(Fmt("LiveKeyDB::Open (txn=%s): %s", TxnKindName(note.empty() ? kind : TxnKind::kPessimistic),
                    os.ToString().c_str()));
    return false;
  }
  if (!first) g.reopens++;
  // Prepared transactions a crash child left: resolved before the checks.
  ResolvePrepared(s, rng, label);
  VerifyAll(s, "reopen-immediate");
  if (!WaitServing(s, "reopen")) return false;
  VerifyAll(s, "reopen-serving");
  const LiveKeyStats st = s->db->GetLiveKeyStats();
  std::printf("%s opened: index_file_loads=%" PRIu64 " rejections=%" PRIu64 "%s%s checkpoint_replays=%" PRIu64
              "%s\n",
              label.c_str(), st.index_file_loads, st.index_file_rejections,
              st.last_rejection.empty() ? "" : " last_rejection=",
              st.last_rejection.c_str(), Diag(st, "checkpoint_replays"), IndexStates(st).c_str());
  return true;
}

bool Quiesce(Session* s, const char* phase) {
  bool ok = true;
  {
    HangGuard hg("WaitForDeferredChecks", 30);
    if (!s->db->WaitForDeferredChecks(static_cast<uint64_t>(FLAGS_hang_seconds * 1000))) {
      std::printf("livekey_stress: hang in WaitForDeferredChecks (%s: > %.0f s)\n", phase, FLAGS_hang_seconds);
      g.hangs++;
      ok = false;
    }
  }
  {
    HangGuard hg("WaitForBackgroundRebuilds", 30);
    if (!s->db->WaitForBackgroundRebuilds(static_cast<uint64_t>(FLAGS_hang_seconds * 1000))) {
      std::printf("livekey_stress: hang in WaitForBackgroundRebuilds (%s: > %.0f s)\n", phase, FLAGS_hang_seconds);
      g.hangs++;
      ok = false;
    }
  }
  return ok;
}

int RunParent() {
  g_seed = FLAGS_seed ? FLAGS_seed : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::mt19937_64 rng(g_seed);
  if (FLAGS_db.empty()) {
    const char* base = std::getenv("TEST_TMPDIR");
    FLAGS_db = std::string(base && *base ? base : "/tmp") + "/livekey_stress_" + std::to_string(::getpid());
    g_temp_db = true;
  }
  g_db_dir = FLAGS_db;
  std::error_code ec;
  std::filesystem::remove_all(g_db_dir, ec);
  std::filesystem::remove_all(g_db_dir + ".side", ec);
  std::filesystem::remove_all(g_db_dir + ".sst", ec);
  const uint64_t ops_per_round = dlcbf::testing_util::Scaled(FLAGS_ops_per_round, 100);
  const double duration = FLAGS_duration * dlcbf::testing_util::TestScale();
  const std::string scale_note =
      dlcbf::testing_util::TestScale() != 1.0 ? Fmt(" (DLCBF_TEST_SCALE=%g)", dlcbf::testing_util::TestScale()) : "";
  std::printf("livekey_stress: seed=%" PRIu64 " db=%s threads=%d keys=%d sd_keys=%d ops_per_round=%" PRIu64
              "%s rounds=%d duration=%.0f crash=%d fault=%d foreign_write_prob=%g expect_loss=%d txn=%s "
              "txn_weight=%g\n",
              g_seed, g_db_dir.c_str(), FLAGS_threads, NumKKeys(), NumSKeys(), ops_per_round,
              scale_note.c_str(),
              FLAGS_rounds, duration, FLAGS_crash ? 1 : 0, FLAGS_fault, FLAGS_foreign_write_prob,
              FLAGS_expect_loss ? 1 : 0, FLAGS_txn.c_str(), FLAGS_txn_weight);
  std::fflush(stdout);
  g_start = Clock::now();
  // Progress every ~10 s.
  std::atomic<bool> done{false};
  std::thread progress([&done] {
    auto last = Clock::now();
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (Seconds(last) >= 10) {
        last = Clock::now();
        std::printf("livekey_stress: progress t=%.0fs round=%d ops=%" PRIu64 " checks=%" PRIu64 " lost=%" PRIu64 "\n",
                    Seconds(g_start), g_round.load(), g.ops.load(), g.checks.load(), g.lost.load());
        std::fflush(stdout);
      }
    }
  });

  const LiveKeyIndexOptions fixed = DrawIndexOptions(rng);
  Session* s = new Session;
  bool healthy = true;
  bool first = true;
  bool crashed = false;
  LiveKeyIndexOptions child_io;
  for (int round = 1;; ++round) {
    if (duration > 0 ? Seconds(g_start) >= duration : round > FLAGS_rounds) break;
    g_round = round;
    if (!OpenAndVerify(s, rng, fixed, crashed ? &child_io : nullptr, first, "round " + std::to_string(round))) {
      healthy = false;
      break;
    }
    first = false;
    // The phase.
    const uint64_t ops0 = g.ops.load(), writes0 = g.write_keys.load(), lost0 = g.lost.load();
    const auto t0 = Clock::now();
    {
      // A phase takes seconds (Release) to a minute (sanitizers).
      HangGuard hg("the workload phase", 4 * FLAGS_hang_seconds);
      RunPhase(s, static_cast<int64_t>(ops_per_round), rng());
    }
    const double secs = Seconds(t0);
    VerifyAll(s, "after-phase");
    if (!Quiesce(s, "after-phase")) {
      healthy = false;
    }
    VerifyAll(s, "after-quiesce");
    const LiveKeyStats st = s->db->GetLiveKeyStats();
    const uint64_t writes = g.write_keys.load() - writes0;
    const double per_kop =
        static_cast<double>(st.auto_rebuilds) * 1000.0 / static_cast<double>(std::max<uint64_t>(writes, 1000));
    std::printf("round %d: ops=%" PRIu64 " writes=%" PRIu64 " in %.1f s rebuilds=%" PRIu64 " auto_rebuilds=%" PRIu64
                " (%.1f per 1000 writes) failed_rebuilds=%" PRIu64 " index_migrations=%" PRIu64 " checkpoints=%" PRIu64
                " deferred_checks=%" PRIu64 " known_writes=%" PRIu64 " busy_sync_reads=%" PRIu64
                " unchecked_copies=%" PRIu64 " unseen_write_detections=%" PRIu64
                " trust_recoveries=%" PRIu64 " lost=%" PRIu64 "%s\n",
                round, g.ops.load() - ops0, writes, secs, st.rebuilds, st.auto_rebuilds, per_kop, st.failed_rebuilds,
                st.index_migrations, st.checkpoints, Diag(st, "deferred_checks"), Diag(st, "known_writes"), st.busy_sync_reads,
                Diag(st, "unchecked_copies"), st.unseen_write_detections,
                st.trust_recoveries, g.lost.load() - lost0,
                IndexStates(st).c_str());
    std::fflush(stdout);
    if (per_kop > FLAGS_max_auto_rebuilds_per_kop) {
      std::printf("livekey_stress: rebuild storm in round %d: %" PRIu64 " automatic rebuilds for %" PRIu64
                  " written keys (%.1f per 1000 > %.1f)\n",
                  round, st.auto_rebuilds, writes, per_kop, FLAGS_max_auto_rebuilds_per_kop);
      g.storms++;
    }
    CloseSession(s);
    if (!healthy) break;
    if (FLAGS_crash && !g_stop.load()) {
      child_io = CrashCycle(rng, round, fixed);
      crashed = true;
    } else {
      crashed = false;
    }
    if (g_stop.load()) break;
    if (g.lost.load() > 0 && !FLAGS_continue_after_loss) break;
  }
  // The final reopen: everything the last round (or crash) left must be found.
  if (healthy && s->db == nullptr) {
    if (OpenAndVerify(s, rng, fixed, crashed ? &child_io : nullptr, first, "final")) {
      CloseSession(s);
    } else {
      healthy = false;
      if (s->db != nullptr) CloseSession(s);
    }
  } else if (s->db != nullptr) {
    CloseSession(s);
  }
  delete s;
  done = true;
  progress.join();

  const uint64_t lost = g.lost.load();
  std::printf("livekey_stress: compaction_filter_dropped=%" PRIu64 " compaction_filter_skips=%" PRIu64
              " foreign_puts=%" PRIu64 " errors=%" PRIu64 " storms=%" PRIu64 " hangs=%" PRIu64 " seconds=%.1f\n",
              g_filter->dropped.load(), g_filter->skips.load(), g.foreign_puts.load(), g.errors.load(),
              g.storms.load(), g.hangs.load(), Seconds(g_start));
  std::printf("%s\n", SummaryLine().c_str());
  RemoveTempDb();
  if (FLAGS_expect_loss) {
    if (lost > 0) {
      std::printf("negative control caught: lost=%" PRIu64 "\n", lost);
      std::fflush(stdout);
      return 0;
    }
    std::printf("negative control NOT caught\n");
    std::fflush(stdout);
    return 1;
  }
  const bool no_unchecked = FLAGS_expect_unchecked_copies && g.unchecked_copies.load() == 0;
  if (no_unchecked) std::printf("livekey_stress: no unchecked copy was taken (--expect_unchecked_copies)\n");
  const bool failed = lost > 0 || g.storms.load() > 0 || g.hangs.load() > 0 || g.errors.load() > 0 || !healthy ||
                      no_unchecked;
  {
    std::lock_guard<std::mutex> l(g_print_mu);
    if (!g_first_loss.empty()) std::printf("livekey_stress: first loss: %s\n", g_first_loss.c_str());
    if (!g_first_error.empty()) std::printf("livekey_stress: first error: %s\n", g_first_error.c_str());
  }
  std::printf("livekey_stress: %s (seed %" PRIu64 ")\n", failed ? "FAILED" : "PASSED", g_seed);
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("seeded randomized differential stress test of LiveKeyDB (oracle: the base DB)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_fault < 0 || FLAGS_fault > 63) Die("--fault must be a LiveKeyFault value (0 = none)");
  if (!kHaveHooks && (FLAGS_fault != 0 || FLAGS_expect_loss)) {
    Die("--fault and --expect_loss need the test build of the library (DLCBF_TESTING): this binary links one without hooks");
  }
  hooks::SetLiveKeyFaultForTesting(static_cast<hooks::LiveKeyFault>(FLAGS_fault));
  if (FLAGS_keys < 1 || FLAGS_threads < 1) Die("--keys and --threads must be >= 1");
  if (FLAGS_min_kill_ms < 0 || FLAGS_max_kill_ms < FLAGS_min_kill_ms) Die("need 0 <= --min_kill_ms <= --max_kill_ms");
  if (FLAGS_txn != "mixed") {
    TxnKind k;
    if (!ParseTxnKind(FLAGS_txn, &k)) Die("--txn must be none, pessimistic, optimistic or mixed");
  }
  if (FLAGS_role == "probe") return RunProbe();
  if (FLAGS_role == "child") return RunChild();
  if (FLAGS_role != "parent") Die("--role must be parent, child or probe");
  // Re-exec this very binary for the crash child (RocksDB's threads do not
  // survive fork alone).
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) Die("readlink /proc/self/exe");
  self[n] = '\0';
  g_self = self;
  return RunParent();
}
