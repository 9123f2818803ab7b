// LiveKeyDB::Rep: the state behind a LiveKeyDB (column families, lock
// stripes, epochs, the background rebuild thread) and the per-key write
// paths (Upsert, Remove) that keep the index exact. Its other members are
// defined in rebuild.cc, persistence.cc, write_batch.cc and ingest.cc.
// Internal to filter_policy/rocksdb/live_key_db/.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dlcbf/internal/hash.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/live_key_db_testing.h"
#endif
#include "dlcbf/rocksdb/live_key_db.h"
#include "filter_policy/rocksdb/live_key_db/epochs.h"
#include "filter_policy/rocksdb/live_key_db/live_key_index.h"
#include "rocksdb/env.h"
#include "rocksdb/iterator.h"
#include "rocksdb/write_batch.h"

namespace dlcbf {
namespace live_key {

using rocksdb::ColumnFamilyHandle;

constexpr uint64_t kFileMagic = 0x31584449594B4C44ULL;  // "DLKYIDX1"
// 1 lacked the SST set; 2 held DLeftCountingBloomFilter indexes; 3 held
// FastDLeftFilter indexes; 4 records each index's kernel (fast or dense).
// Only 4 is loaded; older files are rebuilt.
constexpr uint32_t kFileVersion = 4;
constexpr uint64_t kFileChecksumSeed = 0x4C4B494458ULL;
constexpr uint64_t kMaxExpectedKeys = uint64_t{1} << 40;

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---------------------------------------------------------------------------
// Per column family state. Never freed before Close (pointers stay valid).
// ---------------------------------------------------------------------------
struct CfState {
  // What every write reads comes first (24 bytes, together).
  uint32_t id = 0;
  bool indexed = false;
  // Changed only with every stripe held (writers hold one: stable for them).
  bool dropped = false;
  std::atomic<bool> rebuilding{false};
  // Bumped (with every stripe held) when a rebuild starts its scan: a
  // deferred check queued before that erases nothing (its copy may not be
  // in the new index).
  std::atomic<uint64_t> generation{0};
  // Bumped (with every stripe held) when a rebuild swaps its index in. A
  // check queued before a scan began erases from the index it was queued
  // against while that index is still the active one (the rebuild failed,
  // or has not swapped yet), without logging a delta (the scan counts the
  // key exactly); after a swap it erases nothing.
  std::atomic<uint64_t> serial{0};
  std::atomic<LiveKeyIndex*> active{nullptr};
  std::unique_ptr<LiveKeyIndex> owned;
  // Readers may use `active`. False while the index Open could not load is
  // built in the background: `active` is then an empty stand-in that takes
  // the writers' updates (logged for the build, as during any rebuild),
  // writers treat every key as possibly held (so none is inserted without
  // its check), and readers bypass it. Set with every stripe held at the
  // build's swap (release; readers acquire).
  std::atomic<bool> serving{true};
  std::atomic<uint64_t> scanned{0};  // keys the running rebuild scanned so far
  std::string build_error;           // guarded by info_mu
  // A checkpoint Open loaded (index file older than the DB): the build
  // starts from it and reads only the keys written since checkpoint_seq
  // (rebuild.cc). Set before the background thread starts; taken by it.
  std::unique_ptr<LiveKeyIndex> checkpoint_base;
  uint64_t checkpoint_seq = 0;
  std::vector<uint64_t> checkpoint_ssts;  // the SST set it saw, sorted

  std::string name;
  ColumnFamilyHandle* handle = nullptr;  // kept alive until Close
  bool handle_released = false;          // user called DestroyColumnFamilyHandle
  const rocksdb::Comparator* cmp = nullptr;
  std::string bypass_reason;

  std::mutex delta_mu;
  std::vector<std::pair<uint64_t, bool>> delta;  // (hash, insert?) while rebuilding

  std::atomic<bool> rebuild_queued{false};
  std::atomic<bool> rebuild_running{false};

  mutable std::mutex info_mu;
  bool loaded_from_file = false;
  uint64_t rebuilds = 0;
  std::string last_reason;
  double last_seconds = 0;
  uint64_t last_keys = 0, last_deltas = 0, last_pause_micros = 0;
};

struct CfTable {
  std::vector<CfState*> by_id;
  CfState* Find(uint32_t id) const { return id < by_id.size() ? by_id[id] : nullptr; }
};

enum class Liveness { kLive, kNotLive, kUnknown };

// Tells the Rep that a memtable flush completed (a checkpoint may be
// due). The listener is registered with the DB before the Rep exists, so
// it reaches the Rep through this: attached once the background thread
// runs, detached before it stops.
struct FlushSignal {
  std::mutex mu;
  std::function<void()> on_flush;  // empty when detached
  void Fire() {
    std::lock_guard<std::mutex> l(mu);
    if (on_flush) on_flush();
  }
  void Set(std::function<void()> f) {
    std::lock_guard<std::mutex> l(mu);
    on_flush = std::move(f);
  }
};

// A RocksDB snapshot shared by the checks of many writes (see
// Rep::CheckSnapshot): one reference for Rep::current_snap while it is the
// current one, one per queued check; the last release releases it.
struct SharedSnapshot {
  const rocksdb::Snapshot* snap = nullptr;
  uint64_t seq = 0;
  std::atomic<uint32_t> refs{1};
};

// A liveness check moved off the write path (live_key_db.cc, "Writes
// without a read"): the write of `key` counted a copy of `hash` up (blind
// Put/Merge) or kept its copy (blind Delete) without knowing whether the
// key was live before. The checker reads the key at `snapshot`, which
// shows the key as it was just before the write (every earlier write to
// the key's stripe is in it), and erases one copy if it was live there.
struct PendingCheck {
  CfState* cf = nullptr;
  uint64_t hash = 0;
  uint64_t generation = 0;  // CfState::generation when queued
  uint64_t serial = 0;      // CfState::serial when queued
  bool has_record = false;  // counted in its key's KnownKey (below)
  SharedSnapshot* snapshot = nullptr;
  std::string key;
};

// What a write knows of a key's count without reading it. While a key has
// a deferred check pending, LiveKeyDB remembers (per stripe, under the
// stripe) what the key's own writes have made of it:
//   kLive: the index holds exactly one copy on the key's behalf once its
//     pending checks have run (the key was last Put, or kept by an
//     untrusted SingleDelete);
//   kDead: it holds none (the key was last deleted).
// Each check erases one copy iff the key was live just before its write,
// whatever came after, so a write that knows the state needs neither a
// read nor a check, and adds no copy:
//   Put on kLive: nothing (the copy is there);   Put on kDead: insert;
//   Delete on kLive: erase after the write;      Delete on kDead: nothing.
// A blind write (state unknown) adds a copy and a check, and records the
// state; a key therefore holds at most two copies (its own and one blind
// copy) however often it is written while its check waits. kLive is set
// only when the copy is certain (a successful Put); every doubt leaves
// kUnknown, which falls back to the blind or reading path. A record lives
// while its key has pending checks (KnownKey::pending > 0). Range
// deletions and ingestions, which change keys without naming them, reset
// their family's records to kUnknown (Rep::ForgetKnownLocked).
enum class Known : uint8_t { kUnknown, kLive, kDead };
struct KnownKey {
  uint32_t cf = 0;
  Known state = Known::kUnknown;
  uint32_t pending = 0;  // deferred checks of the key not yet finished
  std::string key;
};
// Keyed by KnownSlot(cf, hash); the record's cf and key must match (a 64-bit
// hash collision between two keys finds no record for the second: it takes
// the ordinary path).
using KnownMap = std::unordered_map<uint64_t, KnownKey>;
inline uint64_t KnownSlot(uint32_t cf, uint64_t hash) { return hash ^ (uint64_t{cf} << 40); }

}  // namespace live_key

using rocksdb::ColumnFamilyDescriptor;
using rocksdb::ColumnFamilyHandle;
using rocksdb::DB;
using rocksdb::InfoLogLevel;
using rocksdb::Iterator;
using rocksdb::PinnableSlice;
using rocksdb::ReadOptions;
using rocksdb::Slice;
using rocksdb::WriteBatch;
using rocksdb::WriteOptions;
using namespace live_key;  // NOLINT: the Rep is this namespace's user

struct LiveKeyDB::Rep {
  Rep(DB* b, const LiveKeyIndexOptions& o)
      : opt(o), base(b), env(b->GetEnv()), dbname(b->GetName()),
        stripes(new std::mutex[o.lock_stripes]), stripe_seq(new std::atomic<uint64_t>[o.lock_stripes]),
        known(new KnownMap[o.lock_stripes]), stripe_mask(o.lock_stripes - 1) {
    for (uint32_t i = 0; i < o.lock_stripes; ++i) stripe_seq[i].store(0, std::memory_order_relaxed);
    log = b->GetDBOptions().info_log;
  }

  LiveKeyIndexOptions opt;
  DB* base;
  rocksdb::Env* env;
  std::string dbname;
  std::shared_ptr<rocksdb::Logger> log;
  EpochDomain epochs;
  std::unique_ptr<std::mutex[]> stripes;
  // The DB's latest sequence number when stripe i was last released: every
  // write made under stripe i is visible at any snapshot at or after it.
  // Written with the stripe held, just before its release (UnlockStripe,
  // UnlockAll, StripeGuard: the only ways a stripe is released).
  std::unique_ptr<std::atomic<uint64_t>[]> stripe_seq;
  // Per stripe, guarded by it: the keys of the stripe with pending checks
  // and what is known of them (KnownKey).
  std::unique_ptr<KnownMap[]> known;
  uint32_t stripe_mask;

  std::mutex cf_mu;  // cfs, the table, handles
  std::map<uint32_t, std::unique_ptr<CfState>> cfs;
  std::unique_ptr<CfTable> table_owner;
  std::atomic<const CfTable*> table{nullptr};

  std::mutex rebuild_mu;  // one rebuild (or drop) at a time
  std::mutex swap_mu;     // CfState::owned changes (stats read it); after stripes

  std::thread bg;
  std::mutex bg_mu;
  std::condition_variable bg_cv, bg_idle_cv;
  std::deque<uint32_t> queue;
  bool bg_stop = false;
  bool bg_busy = false;

  // The deferred liveness checks (CheckLoop) and their shared snapshot.
  std::mutex snap_mu;
  SharedSnapshot* current_snap = nullptr;  // guarded by snap_mu
  std::thread checker;
  std::mutex check_mu;
  std::condition_variable check_cv, check_idle_cv;
  std::deque<PendingCheck> checks;
  bool check_stop = false;
  bool check_busy = false;
  bool check_sleeping = false;  // CheckLoop waits for a first check (idle)
  std::atomic<uint64_t> pending_checks{0};

  std::atomic<bool> closing{false};
  bool closed = false;

  std::atomic<uint64_t> rebuilds{0}, auto_rebuilds{0}, failed_rebuilds{0};
  // Checkpoints (persistence.cc, Checkpoint): requested by FlushSignal,
  // written by the background thread at most once per
  // checkpoint_interval_seconds.
  std::shared_ptr<FlushSignal> flush_signal;
  bool checkpoint_due = false;  // guarded by bg_mu
  std::chrono::steady_clock::time_point last_checkpoint{};  // valid once checkpointed
  bool checkpointed = false;                                // (both under bg_mu)
  std::atomic<uint64_t> checkpoints{0}, last_checkpoint_seq{0};
  std::atomic<uint64_t> checkpoint_replays{0}, checkpoint_replayed_keys{0};
  std::atomic<uint64_t> file_loads{0}, file_rejections{0};
  std::mutex reject_mu;
  std::string last_rejection;

  // ---- helpers ---------------------------------------------------------------
  uint64_t Hash(const Slice& k) const { return internal::HashKey(k.data(), k.size(), opt.seed); }
  uint32_t StripeOf(uint32_t cf, uint64_t h) const {
    return static_cast<uint32_t>(internal::Mix64(h ^ (uint64_t{cf} * 0x9E3779B97F4A7C15ULL))) &
           stripe_mask;
  }
  void LockAll() {
    for (uint32_t i = 0; i <= stripe_mask; ++i) stripes[i].lock();
  }
  void UnlockAll() {
    const uint64_t seq = base->GetLatestSequenceNumber();
    for (uint32_t i = stripe_mask + 1; i-- > 0;) {
      stripe_seq[i].store(seq, std::memory_order_relaxed);
      stripes[i].unlock();
    }
  }
  void UnlockStripe(uint32_t i) {
    stripe_seq[i].store(base->GetLatestSequenceNumber(), std::memory_order_relaxed);
    stripes[i].unlock();
  }
  // Every stripe, held for a scope (ingestion, checkpoints).
  class AllStripesGuard {
   public:
    explicit AllStripesGuard(Rep* r) : r_(r) { r_->LockAll(); }
    ~AllStripesGuard() { r_->UnlockAll(); }
    AllStripesGuard(const AllStripesGuard&) = delete;
    AllStripesGuard& operator=(const AllStripesGuard&) = delete;

   private:
    Rep* r_;
  };
  // One stripe, held for a scope.
  class StripeGuard {
   public:
    StripeGuard(Rep* r, uint32_t i) : r_(r), i_(i) { r_->stripes[i_].lock(); }
    ~StripeGuard() { r_->UnlockStripe(i_); }
    StripeGuard(const StripeGuard&) = delete;
    StripeGuard& operator=(const StripeGuard&) = delete;

   private:
    Rep* r_;
    uint32_t i_;
  };

  // The state of an indexed, live family, or nullptr (pass through).
  CfState* Lookup(const ColumnFamilyHandle* h) {
    if (h == nullptr) return nullptr;
    ReadSection rs(&epochs);
    const CfTable* t = table.load();
    CfState* cf = t ? t->Find(h->GetID()) : nullptr;
    return (cf != nullptr && cf->indexed) ? cf : nullptr;
  }

  void PublishTableLocked() {  // cf_mu held
    std::unique_ptr<CfTable> t(new CfTable);
    for (auto& kv : cfs) {
      if (kv.second->dropped) continue;
      if (t->by_id.size() <= kv.first) t->by_id.resize(kv.first + 1, nullptr);
      t->by_id[kv.first] = kv.second.get();
    }
    std::unique_ptr<CfTable> old = std::move(table_owner);
    table_owner = std::move(t);
    table.store(table_owner.get());
    if (old) epochs.Synchronize();
  }

  // The index readers may consult, or nullptr (no index, or one still
  // being built: CfState::serving). In a read section.
  static const LiveKeyIndex* ServingIndex(const CfState* cf) {
    if (cf == nullptr) return nullptr;
    bool serving = cf->serving.load(std::memory_order_acquire);
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kServeIndexWhileBuilding) serving = true;
#endif
    return serving ? cf->active.load() : nullptr;
  }

  static bool BypassRead(const ReadOptions& ro) {
    return ro.snapshot != nullptr || ro.read_tier != rocksdb::kReadAllTier ||
           ro.timestamp != nullptr || ro.iter_start_ts != nullptr || ro.ignore_range_deletions;
  }

  // The index's answer for a point read at the latest state, with the
  // statistics counted: false = the key is certainly not live (return
  // NotFound without touching RocksDB), true = ask RocksDB (a "maybe", or a
  // read the index cannot serve).
  bool MayBeLive(const ReadOptions& options, ColumnFamilyHandle* column_family,
                 const Slice& key) {
    if (!BypassRead(options) && column_family != nullptr) {
      const uint64_t h = Hash(key);
      int verdict = -1;  // -1 bypass, 0 no, 1 maybe
      {
        ReadSection rs(&epochs);
        const CfTable* t = table.load();
        const CfState* cf = t ? t->Find(column_family->GetID()) : nullptr;
        const LiveKeyIndex* idx = ServingIndex(cf);
        if (idx != nullptr) verdict = idx->Contains(h) ? 1 : 0;
      }
      if (verdict >= 0) {
        epochs.Bump(kLookups);
        if (verdict == 0) epochs.Bump(kShortCircuited);
        return verdict != 0;
      }
    }
    epochs.Bump(kBypassed);
    return true;
  }

  Liveness ReadLiveness(ColumnFamilyHandle* h, const Slice& key) {
    epochs.Bump(kLivenessReads);
    PinnableSlice v;
    const rocksdb::Status s = base->Get(ReadOptions(), h, key, &v);
    if (s.ok()) return Liveness::kLive;
    if (s.IsNotFound()) return Liveness::kNotLive;
    return Liveness::kUnknown;
  }

  // A writer's probe. The stripe keeps the index object in place, but a
  // migration inside it (another stripe's insert) may free its dlCBF after
  // an epoch grace period: probe inside a read section like every reader.
  // While the family's index is being built at Open (not serving), every
  // key counts as possibly held: a write then takes the check (or read)
  // path, never a blind certain insert, so the built index is exact.
  bool WriterContains(const CfState* cf, const LiveKeyIndex* idx, uint64_t h) {
    if (!cf->serving.load(std::memory_order_relaxed)) return true;
    ReadSection rs(&epochs);
    return idx->Contains(h);
  }

  // ---- known liveness (KnownKey); callers hold stripe `si` -------------------
  KnownKey* FindKnown(uint32_t si, uint32_t cf, uint64_t h, const Slice& key) {
    KnownMap& m = known[si];
    if (m.empty()) return nullptr;
    auto it = m.find(KnownSlot(cf, h));
    if (it == m.end() || it->second.cf != cf || Slice(it->second.key) != key) return nullptr;
    return &it->second;
  }
  Known KnownState(uint32_t si, uint32_t cf, uint64_t h, const Slice& key) {
#ifdef DLCBF_TESTING
    const internal::LiveKeyFault f = internal::GetLiveKeyFaultForTesting();
    if (f == internal::LiveKeyFault::kIgnoreKnownState || f == internal::LiveKeyFault::kStaleCheckSnapshot ||
        f == internal::LiveKeyFault::kCheckEraseWithoutRead) {
      return Known::kUnknown;
    }
#endif
    const KnownKey* k = FindKnown(si, cf, h, key);
    return k == nullptr ? Known::kUnknown : k->state;
  }
  // Updates an existing record (none: nothing to update).
  void SetKnown(uint32_t si, uint32_t cf, uint64_t h, const Slice& key, Known state) {
    KnownKey* k = FindKnown(si, cf, h, key);
    if (k != nullptr) k->state = state;
  }
  // A check of the key is being queued: count it in the key's record
  // (created if needed) and set the state. False when the slot belongs to
  // another key (a hash collision): the check then runs without a record.
  bool RegisterCheck(uint32_t si, uint32_t cf, uint64_t h, const Slice& key, Known state) {
    KnownKey& k = known[si][KnownSlot(cf, h)];
    if (k.pending == 0) {
      k.cf = cf;
      k.key.assign(key.data(), key.size());
    } else if (k.cf != cf || Slice(k.key) != key) {
      return false;
    }
    ++k.pending;
    k.state = state;
    return true;
  }
  // A check with a record finished (or was dropped).
  void FinishCheck(uint32_t si, uint32_t cf, uint64_t h) {
    KnownMap& m = known[si];
    auto it = m.find(KnownSlot(cf, h));
    if (it == m.end()) return;
    if (--it->second.pending == 0) m.erase(it);
  }
  // With every stripe held: nothing more is known of cf's keys.
  void ForgetKnownLocked(const CfState* cf) {
    for (uint32_t i = 0; i <= stripe_mask; ++i) {
      for (auto& kv : known[i]) {
        if (kv.second.cf == cf->id) kv.second.state = Known::kUnknown;
      }
    }
  }

  // Callers hold the key's stripe (or all stripes).
  rocksdb::Status IndexInsert(CfState* cf, LiveKeyIndex* idx, uint64_t h) {
    rocksdb::Status s = idx->Insert(h);
    if (!s.ok()) return s;
    epochs.Bump(kIndexInserts);
    if (cf->rebuilding.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      cf->delta.emplace_back(h, true);
    }
    if (idx->FirstSeenPastCapacity()) epochs.Bump(kIndexMigrations);
    if (opt.auto_rebuild_drift > 0 && idx->NeedsRebuild(opt.auto_rebuild_drift, opt.rebuild_at_capacity)) {
      ScheduleRebuild(cf);
    }
    return s;
  }
  void IndexErase(CfState* cf, LiveKeyIndex* idx, uint64_t h) {
    idx->Erase(h);
    epochs.Bump(kIndexErases);
    if (cf->rebuilding.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      cf->delta.emplace_back(h, false);
    }
  }

  void Reject(const std::string& why) {
    file_rejections.fetch_add(1);
    {
      std::lock_guard<std::mutex> l(reject_mu);
      last_rejection = why;
    }
    rocksdb::Warn(log, "LiveKeyDB: index file %s/%s not used: %s", dbname.c_str(),
                  opt.index_file_name.c_str(), why.c_str());
  }

  // ---- single-key writes --------------------------------------------------------
  // With the key's stripe held: the family (nullptr when it is unindexed or
  // dropped: pass through), its index and the probe, in one read section.
  // The CfState outlives the section (freed at Close); the index stays in
  // place while the stripe is held (swaps take every stripe).
  struct Probed {
    CfState* cf = nullptr;
    LiveKeyIndex* idx = nullptr;
    bool contains = false;
  };
  // Before taking the stripe: starts loading the lines the probe and the
  // insert under it will read. A write to the base DB evicts them from the
  // core's caches, so each would otherwise be a miss paid in series (every
  // lock acquisition waits for the loads before it). A hint only: what
  // the writer uses is looked up again under the stripe.
  void PrefetchIndex(uint32_t id, uint64_t hash) {
    epochs.Prefetch(kIndexInserts);
    ReadSection rs(&epochs);
    const CfTable* t = table.load();
    const CfState* cf = t ? t->Find(id) : nullptr;
    const LiveKeyIndex* idx = cf != nullptr ? cf->active.load() : nullptr;
    if (idx != nullptr) idx->Prefetch(hash);
  }
  Probed ProbeLocked(uint32_t id, uint64_t hash, bool probe) {
    Probed p;
    ReadSection rs(&epochs);
    const CfTable* t = table.load();
    CfState* cf = t ? t->Find(id) : nullptr;
    if (cf == nullptr || !cf->indexed || cf->dropped) return p;
    p.cf = cf;
    p.idx = cf->active.load();
    p.contains = probe && (!cf->serving.load(std::memory_order_relaxed) || p.idx->Contains(hash));
    return p;
  }

  // Put / Merge / PutEntity of one key.
  template <class WriteFn>
  rocksdb::Status Upsert(ColumnFamilyHandle* h, const Slice& key, WriteFn&& write) {
    const uint32_t id = h->GetID();
    const uint64_t hash = Hash(key);
    const uint32_t si = StripeOf(id, hash);
    __builtin_prefetch(&stripes[si], 1);
    PrefetchIndex(id, hash);
    StripeGuard l(this, si);
    const Probed p = ProbeLocked(id, hash, /*probe=*/true);
    if (p.cf == nullptr) return write();
    epochs.Bump(kWriteKeys);
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kIndexInsertAfterWrite) {
      return UpsertWithFault(p, hash, !p.contains || ReadLiveness(h, key) != Liveness::kLive, write);
    }
#endif
    // A key whose check is pending: its state is known (KnownKey). Live:
    // its copy is counted, nothing to do (a hot key adds no copies).
    const Known known_state = KnownState(si, id, hash, key);
    if (known_state == Known::kLive) {
      epochs.Bump(kKnownWrites);
      return write();
    }
    // Not in the index, or known dead: certainly not live, so insert. In
    // it: either count up blindly now and check later (the common case),
    // or, when checks cannot be queued, read liveness first and insert
    // only if not live.
    const bool certain = !p.contains || known_state == Known::kDead;
    if (known_state == Known::kDead) epochs.Bump(kKnownWrites);
    SharedSnapshot* snap = certain ? nullptr : CheckSnapshot(si);
    const bool insert = certain || snap != nullptr || ReadLiveness(h, key) != Liveness::kLive;
    if (insert) {
      rocksdb::Status s = IndexInsert(p.cf, p.idx, hash);
      if (!s.ok()) {  // nothing written
        if (snap != nullptr) ReleaseSnapshotRef(snap);
        return s;
      }
    }
    rocksdb::Status s = write();
    if (s.ok()) {
      if (snap != nullptr) QueueCheck(p.cf, hash, snap, key, si, Known::kLive);
      if (known_state == Known::kDead) SetKnown(si, id, hash, key, Known::kLive);
      return s;
    }
    // A failed write may still have taken effect. Not live now: a failed
    // Put cannot have made the key not live, so it was not live before
    // either and the copy is its own: undo it. Live (or unknown) now with a
    // blind copy: the check decides as for a successful write (one copy
    // too many iff the key was live before).
    const Liveness now = insert ? ReadLiveness(h, key) : Liveness::kUnknown;
    if (insert && now == Liveness::kNotLive) {
      IndexErase(p.cf, p.idx, hash);
      epochs.Bump(kUndone);
      if (snap != nullptr) ReleaseSnapshotRef(snap);
    } else if (snap != nullptr) {
      QueueCheck(p.cf, hash, snap, key, si, Known::kUnknown);
    }
    return s;
  }

#ifdef DLCBF_TESTING
  // The deliberately wrong order (testing/live_key_db_testing.h): base
  // write, pause, index insert. Only the oracle's negative control runs
  // it; test builds only.
  template <class WriteFn>
  rocksdb::Status UpsertWithFault(const Probed& p, uint64_t hash, bool insert, WriteFn&& write) {
    rocksdb::Status s = write();
    if (s.ok() && insert) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      s = IndexInsert(p.cf, p.idx, hash);
    }
    return s;
  }
#endif  // DLCBF_TESTING


  // Delete / SingleDelete of one key.
  template <class WriteFn>
  rocksdb::Status Remove(ColumnFamilyHandle* h, const Slice& key, bool may_erase, WriteFn&& write) {
    const uint32_t id = h->GetID();
    const uint64_t hash = Hash(key);
    const uint32_t si = StripeOf(id, hash);
    __builtin_prefetch(&stripes[si], 1);
    if (may_erase) PrefetchIndex(id, hash);
    StripeGuard l(this, si);
    const Probed p = ProbeLocked(id, hash, /*probe=*/may_erase);
    if (p.cf == nullptr) return write();
    epochs.Bump(kWriteKeys);
    if (!p.contains) return write();  // certainly not live: nothing to erase
    // Known (a check of the key is pending): dead, nothing to erase; live,
    // erase its copy once the delete succeeded. A failed delete keeps it
    // (a stale entry if the delete took effect after all).
    const Known known_state = KnownState(si, id, hash, key);
    if (known_state != Known::kUnknown) {
      epochs.Bump(kKnownWrites);
      rocksdb::Status s = write();
      if (s.ok() && known_state == Known::kLive) {
        IndexErase(p.cf, p.idx, hash);
        SetKnown(si, id, hash, key, Known::kDead);
      }
      return s;
    }
    // Check later (the common case), or read liveness first when checks
    // cannot be queued; either way erase only after the write succeeded.
    SharedSnapshot* snap = CheckSnapshot(si);
    const bool was_live = snap == nullptr && ReadLiveness(h, key) == Liveness::kLive;
    rocksdb::Status s = write();
    if (snap != nullptr) {
      if (s.ok()) {
        QueueCheck(p.cf, hash, snap, key, si, Known::kDead);
      } else {
        ReleaseSnapshotRef(snap);
      }
    }
    if (s.ok() && was_live) IndexErase(p.cf, p.idx, hash);
    return s;
  }

  // ---- deferred liveness checks ------------------------------------------------
  // Under the key's stripe `si`: a reference to the snapshot a deferred
  // check reads at, or nullptr when checks are off, the queue is full or
  // the DB has no snapshots (the caller then reads synchronously). The
  // check must see the key as it was just before this write: every earlier
  // LiveKeyDB write to it was made under this stripe, so any snapshot at or
  // after stripe_seq[si] will do. The current shared snapshot is reused
  // while it is that recent (GetSnapshot takes the DB mutex and allocates:
  // most writes save both); else a new one replaces it. Changes to the key
  // that bypass LiveKeyDB (a compaction filter, TTL) can only make it not
  // live; then its old copy is stale and an erase it justifies is harmless.
  SharedSnapshot* CheckSnapshot(uint32_t si) {
    if (!opt.defer_liveness_checks) return nullptr;
    if (pending_checks.load(std::memory_order_relaxed) >= opt.max_pending_checks) {
      epochs.Bump(kQueueFullFallbacks);
      return nullptr;
    }
    uint64_t need = stripe_seq[si].load(std::memory_order_relaxed);
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kStaleCheckSnapshot) need = 0;
#endif
    std::lock_guard<std::mutex> l(snap_mu);
    if (current_snap == nullptr || current_snap->seq < need) {
      const rocksdb::Snapshot* fresh = base->GetSnapshot();
      if (fresh == nullptr) return nullptr;
      epochs.Bump(kCheckSnapshots);
      if (current_snap != nullptr) ReleaseSnapshotRef(current_snap);
      current_snap = new SharedSnapshot;
      current_snap->snap = fresh;
      current_snap->seq = fresh->GetSequenceNumber();
    }
    current_snap->refs.fetch_add(1, std::memory_order_relaxed);
    return current_snap;
  }
  void ReleaseSnapshotRef(SharedSnapshot* s) {
    if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      base->ReleaseSnapshot(s->snap);
      delete s;
    }
  }
  // Drops the current shared snapshot (so an idle DB holds none, and old
  // versions can be compacted away); queued checks keep theirs.
  void DropCurrentSnapshot() {
    std::lock_guard<std::mutex> l(snap_mu);
    if (current_snap != nullptr) ReleaseSnapshotRef(current_snap);
    current_snap = nullptr;
  }
  // Under the key's stripe `si` (the generation must be read there).
  // `after`: what the write made of the key (KnownKey), kUnknown if unsure.
  void QueueCheck(CfState* cf, uint64_t hash, SharedSnapshot* snap, const Slice& key, uint32_t si,
                  Known after) {
    PendingCheck c;
    c.cf = cf;
    c.hash = hash;
    c.generation = cf->generation.load(std::memory_order_relaxed);
    c.serial = cf->serial.load(std::memory_order_relaxed);
    c.has_record = RegisterCheck(si, cf->id, hash, key, after);
    c.snapshot = snap;
    c.key.assign(key.data(), key.size());
    pending_checks.fetch_add(1, std::memory_order_relaxed);
    epochs.Bump(kDeferredChecks);
    bool wake;
    {
      std::lock_guard<std::mutex> l(check_mu);
      checks.push_back(std::move(c));
      wake = checks.size() == kCheckWakeBatch || check_sleeping;
    }
    // No wake-up per check: a futex wake and a context switch would cost
    // the writer more than the check saves it. The checker polls every
    // kCheckPollMs while checks come, and is woken only when a batch has
    // piled up, or by the first check after it went to sleep (idle).
    if (wake) check_cv.notify_one();
  }
  static constexpr size_t kCheckWakeBatch = 256;
  static constexpr int kCheckPollMs = 1;
  // One check, once read: was the key live at the snapshot (just before
  // its write)?
  // Then the write counted a second copy up, or deleted a live key: erase
  // one copy from the index it was queued against (CfState::serial) while
  // that one is active, logging a delta only if the running rebuild's scan
  // began before the check was queued (CfState::generation); nothing once
  // a rebuild swapped in (its scan counted the key exactly) or the family
  // was dropped. A failed read erases nothing (a stale entry: the safe
  // side). The checker writes nothing to the DB, so it takes the stripe
  // without bumping stripe_seq.
  // The reads are batched (RunChecks): the checks of one family that share
  // a snapshot (most do: rep.h, CheckSnapshot) are read in one MultiGet.
  void RunChecks(std::vector<PendingCheck>* batch) {
    std::vector<ColumnFamilyHandle*> hs;
    std::vector<Slice> ks;
    std::vector<PinnableSlice> vals;
    std::vector<rocksdb::Status> sts;
    for (size_t i = 0; i < batch->size();) {
      PendingCheck& first = (*batch)[i];
      size_t j = i + 1;
      while (j < batch->size() && j - i < kCheckMultiGet && (*batch)[j].cf == first.cf &&
             (*batch)[j].snapshot == first.snapshot) {
        ++j;
      }
      const size_t n = j - i;
      hs.assign(n, first.cf->handle);
      ks.clear();
      for (size_t k = i; k < j; ++k) ks.emplace_back((*batch)[k].key);
      vals.clear();
      vals.resize(n);
      sts.assign(n, rocksdb::Status());
      ReadOptions ro;
      ro.snapshot = first.snapshot->snap;
      base->MultiGet(ro, n, hs.data(), ks.data(), vals.data(), sts.data());
      epochs.Bump(kCheckReads);
      for (size_t k = i; k < j; ++k) {
        ApplyCheck(&(*batch)[k], sts[k - i].ok());
        pending_checks.fetch_sub(1, std::memory_order_relaxed);
      }
      i = j;
    }
  }
  static constexpr size_t kCheckMultiGet = 64;
  void ApplyCheck(PendingCheck* c, bool live) {
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kCheckEraseWithoutRead) live = true;
#endif
    ReleaseSnapshotRef(c->snapshot);
    c->snapshot = nullptr;
    const uint32_t si = StripeOf(c->cf->id, c->hash);
    std::lock_guard<std::mutex> l(stripes[si]);
    if (c->has_record) FinishCheck(si, c->cf->id, c->hash);
    if (!live) return;
    LiveKeyIndex* idx = c->cf->active.load();
    const bool same_generation = c->cf->generation.load(std::memory_order_relaxed) == c->generation;
    bool same_index = c->cf->serial.load(std::memory_order_relaxed) == c->serial;
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kDropOldGenerationChecks) same_index = false;
#endif
    if (c->cf->dropped || idx == nullptr || (!same_generation && !same_index)) {
      epochs.Bump(kChecksDropped);
      return;
    }
    if (same_generation) {
      IndexErase(c->cf, idx, c->hash);
    } else {  // its scan began after this check was queued: not its delta
      idx->Erase(c->hash);
      epochs.Bump(kIndexErases);
    }
    epochs.Bump(kCheckErases);
  }
  // The checker thread: FIFO, so the checks of one key run in write order
  // (their erases commute anyway: each takes one copy the key added).
  // Close drains the queue before it stops.
  void CheckLoop() {
    std::unique_lock<std::mutex> l(check_mu);
    std::vector<PendingCheck> batch;
    bool idle = false;
    for (;;) {
      if (idle && checks.empty() && !check_stop) {
        // Idle (the shared snapshot is dropped): sleep until a check or
        // Close arrives, instead of polling an idle DB every kCheckPollMs.
        check_sleeping = true;
        check_cv.wait(l, [&] { return check_stop || !checks.empty(); });
        check_sleeping = false;
      }
      check_cv.wait_for(l, std::chrono::milliseconds(kCheckPollMs),
                        [&] { return check_stop || checks.size() >= kCheckWakeBatch; });
      if (checks.empty()) {
        if (check_stop) break;
        l.unlock();
        DropCurrentSnapshot();  // idle (no check waited this poll)
        l.lock();
        idle = true;
        continue;
      }
      idle = false;
#ifdef DLCBF_TESTING
      if (!check_stop && internal::GetLiveKeyCheckPauseForTesting()) {
        l.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        l.lock();
        continue;
      }
#endif
      // Take everything queued at once (one lock round trip per batch).
      batch.assign(std::make_move_iterator(checks.begin()), std::make_move_iterator(checks.end()));
      checks.clear();
      check_busy = true;
      l.unlock();
      RunChecks(&batch);
      batch.clear();
      l.lock();
      check_busy = false;
      if (checks.empty()) check_idle_cv.notify_all();
    }
    check_idle_cv.notify_all();
  }
  void StopChecks() {
    {
      std::lock_guard<std::mutex> l(check_mu);
      check_stop = true;
    }
    check_cv.notify_all();
    if (checker.joinable()) checker.join();
    DropCurrentSnapshot();
  }

  rocksdb::Status WriteBatchImpl(const WriteOptions& wo, WriteBatch* batch);
  // ingest.cc
  struct IngestIndexer;
  rocksdb::Status Ingest(const std::vector<rocksdb::IngestExternalFileArg>& args);
#if DLCBF_ROCKSDB_AT_LEAST(11, 5)
  rocksdb::Status PrepareIngestion(const std::vector<rocksdb::IngestExternalFileArg>& args,
                                   std::unique_ptr<rocksdb::FileIngestionHandle>* handle);
  rocksdb::Status CommitIngestion(std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> handles);
#endif
  std::mutex ingest_mu;
  std::unordered_set<const void*> ingest_handles;  // prepared, not yet destroyed

  // ---- column families -------------------------------------------------------------
  CfState* AddFamily(ColumnFamilyHandle* h) {  // cf_mu held; no index yet
    std::unique_ptr<CfState> st(new CfState);
    st->id = h->GetID();
    st->name = h->GetName();
    st->handle = st->id == 0 ? base->DefaultColumnFamily() : h;
    st->cmp = h->GetComparator();
    if (st->cmp == nullptr) {
      st->bypass_reason = "no comparator";
    } else if (st->cmp->timestamp_size() > 0) {
      st->bypass_reason = "user-defined timestamps";
    } else if (st->cmp->CanKeysWithDifferentByteContentsBeEqual() && !opt.trust_comparator) {
      st->bypass_reason = std::string("comparator ") + st->cmp->Name() +
                          " may consider different bytes equal (see trust_comparator)";
    } else {
      st->indexed = true;
    }
    CfState* raw = st.get();
    cfs[st->id] = std::move(st);
    return raw;
  }
  rocksdb::Status CreateEmptyIndex(CfState* cf) {
    std::unique_ptr<LiveKeyIndex> idx;
    rocksdb::Status s = LiveKeyIndex::Create(opt, opt.expected_keys, &epochs, &idx);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> sl(swap_mu);
    cf->owned = std::move(idx);
    cf->active.store(cf->owned.get());
    return s;
  }
  // Registers freshly created (empty) families.
  rocksdb::Status RegisterNew(const std::vector<ColumnFamilyHandle*>& handles) {
    std::lock_guard<std::mutex> l(cf_mu);
    rocksdb::Status result;
    for (ColumnFamilyHandle* h : handles) {
      if (h == nullptr) continue;
      CfState* cf = AddFamily(h);
      if (cf->indexed) {
        rocksdb::Status s = CreateEmptyIndex(cf);
        if (!s.ok()) {  // leave it unindexed rather than fail the creation
          cf->indexed = false;
          cf->bypass_reason = "index creation failed: " + s.ToString();
          if (result.ok()) result = s;
        }
      }
    }
    PublishTableLocked();
    return result;
  }
  rocksdb::Status RegisterImported(ColumnFamilyHandle* h);  // live_key_db.cc
  CfState* FindState(uint32_t id) {
    std::lock_guard<std::mutex> l(cf_mu);
    auto it = cfs.find(id);
    return it == cfs.end() ? nullptr : it->second.get();
  }

  // ---- rebuild -----------------------------------------------------------------------
  rocksdb::Status Rebuild(CfState* cf, const std::string& reason, bool automatic);

  void ScheduleRebuild(CfState* cf) {
    if (closing.load(std::memory_order_relaxed)) return;
    bool expected = false;
    if (!cf->rebuild_queued.compare_exchange_strong(expected, true)) return;
    std::lock_guard<std::mutex> l(bg_mu);
    queue.push_back(cf->id);
    bg_cv.notify_one();
  }
  void MaybeReschedule(CfState* cf) {
    if (opt.auto_rebuild_drift <= 0) return;
    std::lock_guard<std::mutex> sl(swap_mu);  // keeps `owned` alive
    if (!cf->dropped && cf->owned && cf->owned->NeedsRebuild(opt.auto_rebuild_drift, opt.rebuild_at_capacity)) {
      ScheduleRebuild(cf);
    }
  }
  void RequestCheckpoint() {
    if (opt.checkpoint_interval_seconds <= 0 || !opt.persist_index) return;
    std::lock_guard<std::mutex> l(bg_mu);
    checkpoint_due = true;
    bg_cv.notify_one();
  }
  void BackgroundLoop() {
    std::unique_lock<std::mutex> l(bg_mu);
    for (;;) {
      bg_cv.wait(l, [&] { return bg_stop || !queue.empty() || checkpoint_due; });
      if (bg_stop) break;
      if (queue.empty()) {  // a checkpoint is due (rebuilds go first)
        const auto next = last_checkpoint + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(opt.checkpoint_interval_seconds));
        if (checkpointed && std::chrono::steady_clock::now() < next) {
          bg_cv.wait_until(l, next, [&] { return bg_stop || !queue.empty(); });
          continue;
        }
        checkpoint_due = false;
        bg_busy = true;
        l.unlock();
        rocksdb::Status cs = Checkpoint();
        if (!cs.ok() && !closing.load()) {
          rocksdb::Warn(log, "LiveKeyDB: checkpoint failed (the last good one stays): %s", cs.ToString().c_str());
        }
        l.lock();
        last_checkpoint = std::chrono::steady_clock::now();
        checkpointed = true;
        bg_busy = false;
        bg_idle_cv.notify_all();
        continue;
      }
      const uint32_t id = queue.front();
      queue.pop_front();
      bg_busy = true;
      l.unlock();
      CfState* cf = FindState(id);
      if (cf != nullptr) {
        std::string why = "automatic";
        {
          std::lock_guard<std::mutex> sl(swap_mu);  // keeps `owned` alive
          const LiveKeyIndex* idx = cf->owned.get();
          if (!cf->serving.load(std::memory_order_acquire)) {
            why = "open: built in the background (no usable index file)";
          } else if (idx != nullptr) {
            char buf[160];
            std::snprintf(buf, sizeof(buf),
                          "automatic: %" PRIu64 " entries, sized for %" PRIu64 "%s",
                          idx->entries(), idx->sized_for(),
                          idx->past_capacity() ? ", dlCBF past capacity (migrating or ABF)" : "");
            why = buf;
          }
        }
        rocksdb::Status s = Rebuild(cf, why, /*automatic=*/true);
        if (!s.ok() && !closing.load()) {
          rocksdb::Warn(log, "LiveKeyDB: automatic rebuild of '%s' failed: %s", cf->name.c_str(),
                        s.ToString().c_str());
        }
        cf->rebuild_queued.store(false);
        if (s.ok()) MaybeReschedule(cf);  // writes during the scan may have outgrown it
      }
      l.lock();
      bg_busy = false;
      bg_idle_cv.notify_all();
    }
  }
  void StopBackground() {
    if (flush_signal) flush_signal->Set(nullptr);  // no checkpoint requests from here on
    StopChecks();  // drains the queue first: the index is exact when saved
    closing.store(true);
    {
      std::lock_guard<std::mutex> l(bg_mu);
      bg_stop = true;
      bg_cv.notify_all();
    }
    if (bg.joinable()) bg.join();
  }

  // ---- persistence -------------------------------------------------------------------
  std::string IndexPath() const { return dbname + "/" + opt.index_file_name; }
  rocksdb::Status LiveSsts(std::vector<uint64_t>* numbers, std::vector<uint64_t>* smallest_seqno);
  rocksdb::Status Persist();
  // Saves every serving index with the sequence number it covers, writers
  // paused while the tables are copied (persistence.cc).
  rocksdb::Status Checkpoint();
  // The index file's bytes (format version 4) for `blobs`: (family, its
  // kernel kind, its serialized kernel).
  struct SavedIndex {
    CfState* cf;
    uint8_t kind;
    uint64_t sized_for, entries;
    std::string blob;
  };
  rocksdb::Status WriteIndexFile(uint64_t seq, const std::string& identity, const std::vector<uint64_t>& ssts,
                                 const std::vector<SavedIndex>& saved);
  // Brings a checkpoint forward (rebuild.cc): the keys of the SST files
  // past `seq` and of the memtables, live at `snap`, counted into `idx`.
  rocksdb::Status ReplaySince(CfState* cf, uint64_t seq, const rocksdb::Snapshot* snap, LiveKeyIndex* idx,
                              uint64_t* keys);
  void LoadFromFile(std::vector<CfState*>* loaded);
  rocksdb::Status Init(const std::vector<ColumnFamilyHandle*>& handles);
};


}  // namespace dlcbf
