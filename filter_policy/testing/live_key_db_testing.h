// Test-only fault injection for LiveKeyDB's write ordering. Not installed.
//
// LiveKeyDB's lossless guarantee rests on two orderings (see
// include/dlcbf/rocksdb/live_key_db.h, "Exactness"): a key that becomes
// live is added to the index BEFORE the base write, and a key that stops
// being live is erased AFTER the base write succeeded. The concurrency
// oracle (tests/live_key_db_oracle_test.cc) must be able to catch a
// violation of either; these faults reverse one ordering on purpose so its
// negative control can prove that. Never set outside tests.
#pragma once

#include <functional>

#include <cstdint>

// DLCBF_TESTING: the test build of the library, which defines the hooks.
// DLCBF_HOOK_STUBS: a test program linked against a library without them
// (in-tree mode, tools/run.sh rocksdb-source: librocksdb.so as shipped);
// every hook below is then an inline no-op, and kLiveKeyHooks says so:
// a test that needs one skips, a tool refuses the flag that sets one.
#if !defined(DLCBF_TESTING) && !defined(DLCBF_HOOK_STUBS)
#error "live_key_db_testing.h is for test builds (DLCBF_TESTING) only: shipped libraries carry no hooks"
#endif

namespace dlcbf {
namespace internal {

enum class LiveKeyFault : int {
  kNone = 0,
  // Put/Merge of a new key: base write first, then a short pause, then the
  // index insert (a window in which the key is live but not indexed).
  kIndexInsertAfterWrite = 1,
  // The deferred liveness check (rep.h, CheckLoop) erases its copy without
  // reading whether the key was live before the write: a blind overwrite
  // or delete of a key that only collided with another key's fingerprint
  // then takes that key's evidence away. Writes also ignore what pending
  // checks know of their keys (as kIgnoreKnownState), so every overwrite
  // takes the blind path whose check this fault breaks.
  kCheckEraseWithoutRead = 2,
  // The check's shared snapshot is reused whatever its age (Rep::
  // CheckSnapshot skips its "every earlier write to the stripe is in it"
  // test): a check then judges the key by a state from before earlier
  // writes to it, and may erase a copy the key still needs. Writes also
  // ignore what pending checks know of their keys (as kIgnoreKnownState):
  // with it, only a key's first write while no check of it is pending
  // takes a snapshot, so the stale one would rarely be met.
  kStaleCheckSnapshot = 3,
  // A deferred check queued before a rebuild's scan began erases nothing,
  // even when that rebuild then fails or is aborted and the index it was
  // queued against stays active (the behaviour before CfState::serial):
  // its copy stays counted for good, so the saved index is not exact.
  kDropOldGenerationChecks = 4,
  // Writes ignore what a pending check knows of their key (KnownKey): every
  // overwrite of an indexed key adds a blind copy and a check, so a hot key
  // takes a slot per overwrite until its checks run.
  kIgnoreKnownState = 5,
  // Readers consult an index that Open is still building in the
  // background (CfState::serving ignored): keys not yet scanned answer
  // NotFound.
  kServeIndexWhileBuilding = 6,
  // A checkpoint is brought forward without reading the keys written since
  // (Rep::ReplaySince reads nothing): those keys answer NotFound.
  kSkipCheckpointReplay = 7,
  // A rebuild keeps what pending checks know of the family's keys
  // (KnownKey) past its scan point (the behaviour before the fix): a key
  // recorded kLive whose copy the scan did not count is then never
  // inserted again. (Also turns off Upsert's check that a kLive record's
  // copy is in the index, the second line of that defence.)
  kKeepKnownStateAcrossRebuild = 8,
  // A checkpoint (and Close) claims the DB's latest sequence number
  // without first making the writes up to it durable (the behaviour before
  // the fix): a crash that loses a disableWAL tail then leaves a file
  // whose index counted writes the DB no longer holds.
  kCheckpointWithoutDurability = 9,
  // Readers trust the index whatever the sequence-number ledger says
  // (seq_ledger.h): a write LiveKeyDB never saw (through GetBaseDB(), a
  // TransactionDB wrapped on top) is answered NotFound.
  kTrustUnseenWrites = 10,
  // A transaction's Commit (transactions.cc) goes straight to RocksDB
  // without indexing its keys, its sequence numbers still accounted: the
  // committed keys are answered NotFound.
  kCommitUnindexed = 11,
  // A transaction's GetForUpdate answers from the index alone, ignoring
  // the transaction's own batch: a key it wrote itself reads NotFound.
  kTxnReadIgnoresOwnBatch = 12,
  // A transaction's read records its liveness hint with a stamp that
  // always matches (rep.h, LiveHint): a key deleted by another writer
  // between the read and the commit is then written as if still held by
  // the index.
  kStaleLiveHint = 13,
  // A checkpoint copied in chunks takes its sequence number after the copy
  // instead of before it (checkpoint.cc): a key written during the copy
  // into a block already copied is then in neither the image nor the
  // replay.
  kCheckpointSeqAfterCopy = 14,
  // Open takes a torn delta segment's sequence number (its records lost):
  // the keys written between the segment before it and that number are
  // then neither in the index nor read back (persistence.cc).
  kTornDeltaKeepsItsSeq = 15,
  // MakeDurable counts a disableWAL write as flushed once it began (the
  // old rule), not once it finished: one in flight during a checkpoint's
  // flush is then never flushed before a later file claims it.
  kNoWalDurableAtBegin = 16,
  // MakeDurable fails (an I/O error), as a full disk would make it.
  kMakeDurableFails = 17,
  // As 17, and a checkpoint that fails after its copy cleared changed
  // bits leaves the file open to deltas (checkpoint.cc): the next delta
  // misses those blocks.
  kDeltaChainSurvivesFailure = 18,
  // MakeDurable flushes only the families saved now, though it counts
  // every disableWAL write durable.
  kDurableFlushesSavedFamiliesOnly = 19,
  // A family's initial index build (nothing loaded from the file) fails:
  // the family stays unindexed (reads bypass it) until a rebuild succeeds.
  kInitialBuildFails = 20,
  // The world watch (world_watch.h) ignores table files that appear or
  // disappear unexplained (an ingestion past LiveKeyDB at sequence number
  // 0, DeleteFilesInRange over older versions): their keys answer NotFound.
  kIgnoreTableFileChanges = 21,
  // Close and checkpoints save the index file whether or not it is trusted
  // (the behaviour before the fix), and a detected unseen change leaves
  // the file in place: the next Open loads an index that misses keys.
  kSaveUntrustedIndex = 22,
  // A checkpoint is brought forward reading the memtables without
  // total_order_seek: a hash memtable with a prefix extractor then yields
  // nothing, and the keys it holds answer NotFound.
  kReplayWithoutTotalOrder = 23,
  // RecoverTrust ends a recovery whose scans began before an unseen change
  // that moves no sequence number (the behaviour before the fix): the
  // indexes serve again without the keys that change made visible.
  kRecoveryIgnoresLaterChanges = 24,
  // An iterator's Seek trusts a prefix's zero count whatever the slot's
  // last erase (LiveRegionCounts::erased_at ignored): a key the iterator's
  // snapshot still sees, deleted since, is skipped.
  kPrefixIgnoresErasedAt = 25,
  // An iterator's Seek uses the counts of whatever index is active, even
  // one swapped in after the iterator was made (CfState::serial ignored).
  kPrefixIgnoresSerial = 26,
  // An iterator's Seek uses the counts whatever prefix extractor its
  // SuperVersion runs (Rep::ExtractorIsOurs skipped).
  kPrefixIgnoresExtractor = 27,
  // A Seek moved past dead range regions (live_range_lengths) goes one
  // region of the finest length further, a region that may hold live keys:
  // the iterator oracles' negative control.
  kSeekSkipsALiveRegion = 28,
};

// Called by a disableWAL write after it is counted and before it writes
// (LiveKeyDB's NoteWrite); empty: nothing. Process-wide.
void SetLiveKeyNoWalWriteHookForTesting(std::function<void()> hook);
void RunLiveKeyNoWalWriteHookForTesting();

// Called by the world watch (world_watch.cc) at each of these points, no
// lock held; empty: nothing. Process-wide. A test orders RocksDB's threads
// with it (LiveKeyClosedWorld.StaleFileListIsNoUnseenChange).
enum class LiveKeyWorldPoint : int {
  kEditCounted = 0,       // a MANIFEST sync counted (OnFileSyncFinish, on RocksDB's thread)
  kReconcilerListed = 1,  // the reconciler read the DB's file list, before it takes its lock
  kFlushNoted = 2,        // OnFlushCompleted noted the flush's file
};
void SetLiveKeyWorldHookForTesting(std::function<void(LiveKeyWorldPoint)> hook);
void RunLiveKeyWorldHookForTesting(LiveKeyWorldPoint point);

// Called by a checkpoint between two chunks of a chunked copy (no lock
// held) with the blocks copied so far; empty: nothing. Process-wide.
void SetLiveKeyCheckpointChunkHookForTesting(std::function<void(uint64_t)> hook);
void RunLiveKeyCheckpointChunkHookForTesting(uint64_t blocks);
// The blocks per chunk of a chunked checkpoint copy; 0 (the default):
// LiveKeyDB's own (4096). livekey_stress draws small ones, so writers run
// between many chunks of its small indexes. Process-wide.
void SetLiveKeyCheckpointChunkBlocksForTesting(uint64_t blocks);
uint64_t GetLiveKeyCheckpointChunkBlocksForTesting();

// While true, a rebuild's scan waits before each key (until the DB is
// closing, which aborts the scan). Process-wide.
void SetLiveKeyRebuildPauseForTesting(bool paused);
bool GetLiveKeyRebuildPauseForTesting();
// True while a rebuild's scan is waiting on that pause (its generation is
// bumped: checks queued before it are "older" from then on).
void SetLiveKeyRebuildWaitingForTesting(bool waiting);
bool GetLiveKeyRebuildWaitingForTesting();

// While true, the background checker takes no deferred check from its
// queue (the checks stay pending, with their snapshots), except when the
// DB is closing: Close drains the queue regardless. Process-wide.
void SetLiveKeyCheckPauseForTesting(bool paused);
bool GetLiveKeyCheckPauseForTesting();

// While true, every LiveKeyDB write finds every core writing (as with more
// writes in progress than max_deferring_writers): it takes an unchecked
// copy or reads, never defers. Process-wide.
void SetLiveKeyBusyWritersForTesting(bool busy);
bool GetLiveKeyBusyWritersForTesting();

// Process-wide; thread-safe (an atomic). Affects every LiveKeyDB instance.
void SetLiveKeyFaultForTesting(LiveKeyFault fault);
LiveKeyFault GetLiveKeyFaultForTesting();

#ifdef DLCBF_TESTING
inline constexpr bool kLiveKeyHooks = true;
#else
inline constexpr bool kLiveKeyHooks = false;
inline void SetLiveKeyNoWalWriteHookForTesting(std::function<void()>) {}
inline void RunLiveKeyNoWalWriteHookForTesting() {}
inline void SetLiveKeyWorldHookForTesting(std::function<void(LiveKeyWorldPoint)>) {}
inline void RunLiveKeyWorldHookForTesting(LiveKeyWorldPoint) {}
inline void SetLiveKeyCheckpointChunkHookForTesting(std::function<void(uint64_t)>) {}
inline void RunLiveKeyCheckpointChunkHookForTesting(uint64_t) {}
inline void SetLiveKeyCheckpointChunkBlocksForTesting(uint64_t) {}
inline uint64_t GetLiveKeyCheckpointChunkBlocksForTesting() { return 0; }
inline void SetLiveKeyRebuildPauseForTesting(bool) {}
inline bool GetLiveKeyRebuildPauseForTesting() { return false; }
inline void SetLiveKeyRebuildWaitingForTesting(bool) {}
inline bool GetLiveKeyRebuildWaitingForTesting() { return false; }
inline void SetLiveKeyCheckPauseForTesting(bool) {}
inline bool GetLiveKeyCheckPauseForTesting() { return false; }
inline void SetLiveKeyBusyWritersForTesting(bool) {}
inline bool GetLiveKeyBusyWritersForTesting() { return false; }
inline void SetLiveKeyFaultForTesting(LiveKeyFault) {}
inline LiveKeyFault GetLiveKeyFaultForTesting() { return LiveKeyFault::kNone; }
#endif

}  // namespace internal
}  // namespace dlcbf
