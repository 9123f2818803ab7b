// LiveKeyDB's deferred liveness checks: what a write queues instead of
// reading the key (PendingCheck), and the snapshot many checks share
// (SharedSnapshot). The Rep's members that queue, run and apply them are
// defined in checker.cc. Internal to filter_policy/rocksdb/live_key_db/.
//
// Contract (the proof is the design note in live_key_db.cc, "Writes
// without a read").
//   - A blind write (Put/Merge of a key the index may hold, Delete of one it
//     holds, its state unknown: stripes.h, Known) takes a reference to a
//     snapshot at or after its stripe's ReleasedAt under the stripe
//     (Rep::CheckSnapshot), writes, and queues one check (Rep::QueueCheck).
//     CheckSnapshot returns nullptr when checks are off, the queue holds
//     max_pending_checks (counted in queue_full_fallbacks) or the DB gives
//     no snapshot: the writer then reads the key itself.
//   - One checker thread (Rep::CheckLoop) takes every queued check at once,
//     reads them in MultiGets of up to kCheckMultiGet keys that share a
//     family and a snapshot (Rep::RunChecks), and applies each under its
//     key's stripe (Rep::ApplyCheck): if the key was live at the snapshot,
//     one copy is erased from the index it was queued against, unless a
//     rebuild swapped in meanwhile. A failed read erases nothing (a stale
//     entry, the safe side). FIFO, so one key's checks run in write order.
//   - The checker polls every kCheckPollMs while checks come, is woken when
//     kCheckWakeBatch have piled up, sleeps on an idle DB (dropping the
//     shared snapshot) and is woken by the first check after it.
//   - Close drains the queue (Rep::StopChecks) before the index is saved.
//   - A write defers only while at most max_deferring_writers LiveKeyDB
//     writes are in progress (Rep::WriterScope; default: the cores minus
//     one); with more, CheckSnapshot returns nullptr and the writer takes
//     an unchecked copy (rep.h, TakeUncheckedCopy) while its index's budget
//     lasts, else reads (busy_sync_reads), as every core is already writing.
// Why one thread: the checks' cost is the reads, and MultiGet batches
// them; a checker thread pays off only while a core is free for it, and
// then one is enough (live_key_bench: no queue-full fallback with 1, 2 or
// 4 writers; the LiveKeyDB README).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "filter_policy/rocksdb/live_key_db/small_key.h"
#include "rocksdb/snapshot.h"

namespace dlcbf {
namespace live_key {

struct CfState;

// A RocksDB snapshot shared by the checks of many writes (see
// Rep::CheckSnapshot): one reference for Rep::current_snap while it is the
// current one, one per queued check; the last release releases it.
struct SharedSnapshot {
  const rocksdb::Snapshot* snap = nullptr;
  uint64_t seq = 0;
  std::atomic<uint32_t> refs{1};
};

// A liveness check moved off the write path: the write of `key` counted a
// copy of `hash` up (blind Put/Merge) or kept its copy (blind Delete)
// without knowing whether the key was live before. The checker reads the
// key at `snapshot`, which shows the key as it was just before the write
// (every earlier write to the key's stripe is in it), and erases one copy
// if it was live there.
struct PendingCheck {
  CfState* cf = nullptr;
  uint64_t hash = 0;
  uint64_t generation = 0;  // CfState::generation when queued
  uint64_t serial = 0;      // CfState::serial when queued
  bool has_record = false;  // counted in its key's KnownKey (stripes.h)
  SharedSnapshot* snapshot = nullptr;
  SmallKey key;
};

}  // namespace live_key
}  // namespace dlcbf
