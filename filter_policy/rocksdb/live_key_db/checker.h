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
// 4 writers; docs/LIVE_KEY_DB.md, "Several writers").
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

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

// The queue of checks waiting for the checker (Rep::checks; every call
// with Rep::check_mu held). Writers append to fixed blocks of kBlockChecks
// checks; the checker takes every block at once (TakeAll) and gives the
// emptied ones back (Recycle), which keeps up to kPooledBlocks of them for
// the writers. So a queued check never moves the queue, and while a batch
// fits the pool (up to kPooledBlocks x kBlockChecks checks) no write
// allocates or touches a fresh page either; past it, the writer that
// opens a block allocates it. The growing vector this replaced did both
// on every burst (live_key_bench uniform_1t with the checker behind, perf:
// about 1.9 % of the writer's samples were page faults in the queue's
// growth and its moves; 0.6 % with the blocks).
class CheckQueue {
 public:
  static constexpr size_t kBlockChecks = 256;  // about 26 KB a block (x86-64)
  static constexpr size_t kPooledBlocks = 32;  // 8192 checks' worth kept between batches
  struct Block {
    size_t n = 0;  // checks in c, from c[0]
    PendingCheck c[kBlockChecks];
  };
  using Blocks = std::vector<std::unique_ptr<Block>>;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  void Push(PendingCheck&& check) {
    if (blocks_.empty() || blocks_.back()->n == kBlockChecks) blocks_.push_back(NewBlock());
    Block* b = blocks_.back().get();
    b->c[b->n++] = std::move(check);
    ++size_;
  }
  // Moves every queued block to `out` (empty on entry: its blocks would
  // otherwise be queued again).
  void TakeAll(Blocks* out) {
    assert(out->empty());
    out->swap(blocks_);
    size_ = 0;
  }
  // Takes back blocks whose checks ran (their keys released): pooled up to
  // kPooledBlocks, the rest freed (the checker drops those before it takes
  // check_mu). `done` is left empty.
  void Recycle(Blocks* done) {
    for (auto& b : *done) {
      if (pool_.size() >= kPooledBlocks) break;
      b->n = 0;
      pool_.push_back(std::move(b));
    }
    done->clear();
  }
  // Observers: blocks waiting in the pool, and blocks ever allocated.
  size_t pooled() const { return pool_.size(); }
  uint64_t allocated() const { return allocated_; }

 private:
  std::unique_ptr<Block> NewBlock() {
    if (pool_.empty()) {
      ++allocated_;
      return std::unique_ptr<Block>(new Block);
    }
    std::unique_ptr<Block> b = std::move(pool_.back());
    pool_.pop_back();
    return b;
  }

  Blocks blocks_;
  Blocks pool_;
  size_t size_ = 0;
  uint64_t allocated_ = 0;
};

}  // namespace live_key
}  // namespace dlcbf
