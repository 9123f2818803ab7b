// LiveKeyDB::Rep: the state behind a LiveKeyDB. Its single-key write path
// (Upsert, Remove), which keeps the index exact, reads top-down in
// write_path.h. It composes the parts, each
// in its own file with its contract: the family table (CfState here;
// column_families.cc), the lock stripes and known key states (stripes.h),
// the deferred checks (checker.h, checker.cc), the background thread
// (background.cc), rebuilds (rebuild.cc), checkpoints (checkpoint.cc), the
// index file (persistence.cc), batches (write_batch.cc) and ingestion
// (ingest.cc). Internal to filter_policy/rocksdb/live_key_db/.
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
#include "filter_policy/rocksdb/live_key_db/cache_charge.h"
#include "filter_policy/rocksdb/live_key_db/epochs.h"
#include "filter_policy/rocksdb/live_key_db/live_key_index.h"
#include "filter_policy/rocksdb/live_key_db/checker.h"
#include "filter_policy/rocksdb/live_key_db/seq_ledger.h"
#include "filter_policy/rocksdb/live_key_db/stripes.h"
#include "filter_policy/rocksdb/live_key_db/world_watch.h"
#include "filter_policy/rocksdb/live_key_db/live_region_counts.h"
#include "rocksdb/env.h"
#include "rocksdb/iterator.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/write_batch.h"

namespace dlcbf {
namespace live_key {

using rocksdb::ColumnFamilyHandle;

constexpr uint64_t kFileMagic = 0x31584449594B4C44ULL;  // "DLKYIDX1"
// 1 lacked the SST set; 2 held DLeftCountingBloomFilter indexes; 3 held
// FastDLeftFilter indexes; 4 records each index's kernel (fast or dense);
// 5 is 4's layout (the base) followed by delta segments (the changed
// blocks of later checkpoints); 6 is 5 with compact records in its
// deltas and sparse bases (FORMATS.md). 4, 5 and 6 are loaded; older
// files are rebuilt.
constexpr uint32_t kFileVersion = 6;                  // deltas hold compact records
constexpr uint32_t kFileVersionWith72ByteRecords = 5;  // still loaded
constexpr uint32_t kFileVersionWithoutDeltas = 4;      // still loaded
constexpr uint64_t kDeltaMagic = 0x41544C4559444B4CULL;  // "LKDYELTA"
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
  // (rebuild.cc) starts from it and counts only the keys written since
  // checkpoint_seq (checkpoint.cc, ReplaySince). Set by Open's load, or by
  // the first Rebuild's deferred load (under rebuild_mu); taken by
  // Rebuild.
  std::unique_ptr<LiveKeyIndex> checkpoint_base;
  uint64_t checkpoint_seq = 0;
  std::vector<uint64_t> checkpoint_ssts;  // the SST set it saw, sorted

  std::string name;
  ColumnFamilyHandle* handle = nullptr;  // kept alive until Close
  bool handle_released = false;          // user called DestroyColumnFamilyHandle
  const rocksdb::Comparator* cmp = nullptr;
  std::string bypass_reason;

  // The prefix extractor the live-region counts group keys by
  // (LiveKeyIndexOptions::live_prefix_counts; null: no prefix regions),
  // fixed at registration. An iterator whose SuperVersion runs another one
  // reads RocksDB (Rep::ExtractorIsOurs).
  std::shared_ptr<const rocksdb::SliceTransform> prefix;
  std::atomic<uint64_t> prefix_checked_sv{0};  // a SuperVersion number (+1) known to run `prefix`

  // The family's indexes count range regions (live_range_lengths): only
  // for the bytewise comparator (they are contiguous in its order). Fixed
  // at registration.
  bool counts_ranges = false;
  // The family's indexes count live keys per region (LiveRegionCounts):
  // prefixes, ranges or both.
  bool counts_regions() const { return prefix != nullptr || counts_ranges; }

  struct Delta {
    uint64_t hash;
    KeyRegions regions;  // the key's (LiveRegionCounts)
    bool insert;
  };
  std::mutex delta_mu;
  std::vector<Delta> delta;  // while rebuilding

  std::atomic<bool> rebuild_queued{false};
  std::atomic<bool> rebuild_running{false};

  mutable std::mutex info_mu;
  bool loaded_from_file = false;
  uint64_t rebuilds = 0;
  std::string last_reason;
  double last_seconds = 0;
  uint64_t last_keys = 0, last_deltas = 0, last_pause_micros = 0;
  uint32_t last_scan_parts = 0;
};

struct CfTable {
  std::vector<CfState*> by_id;
  CfState* Find(uint32_t id) const { return id < by_id.size() ? by_id[id] : nullptr; }
};

enum class Liveness { kLive, kNotLive, kUnknown };

// SharedSnapshot, PendingCheck: checker.h.

// Known, KnownKey: stripes.h.

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
        stripes(o.lock_stripes),
        deferring_writers(o.max_deferring_writers != 0 ? o.max_deferring_writers
                                                       : std::max(2u, std::thread::hardware_concurrency()) - 1) {
    log = b->GetDBOptions().info_log;
  }

  LiveKeyIndexOptions opt;
  DB* base;
  rocksdb::Env* env;
  std::string dbname;
  std::shared_ptr<rocksdb::Logger> log;
  EpochDomain epochs;
  Stripes stripes;  // per-key locks and known key states (stripes.h)

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
  CheckQueue checks;  // guarded by check_mu (checker.h)
  bool check_stop = false;
  bool check_busy = false;
  bool check_sleeping = false;  // CheckLoop waits for a first check (idle)
  std::atomic<uint64_t> pending_checks{0};
  // LiveKeyDB writes in progress (WriterScope), and how many may defer
  // their checks (LiveKeyIndexOptions::max_deferring_writers, resolved).
  std::atomic<uint32_t> writers_in_flight{0};
  const uint32_t deferring_writers;
  class WriterScope;  // (write_path.h)

  std::atomic<bool> closing{false};
  bool closed = false;

  std::atomic<uint64_t> rebuilds{0}, auto_rebuilds{0}, failed_rebuilds{0};
  // The listener that accounts for the DB's table files (world_watch.h):
  // it requests checkpoints after flushes and compactions and reports
  // changes LiveKeyDB cannot account for (MarkUntrusted). Registered with
  // the DB before the Rep exists; attached once the background thread
  // runs, detached before it stops.
  std::shared_ptr<live_key::WorldWatch> world;
  // Checkpoints (persistence.cc, Checkpoint): requested by the world watch,
  // written by the background thread at most once per
  // checkpoint_interval_seconds.
  bool checkpoint_due = false;  // guarded by bg_mu
  std::chrono::steady_clock::time_point last_checkpoint{};  // valid once checkpointed
  bool checkpointed = false;                                // (both under bg_mu)
  std::atomic<uint64_t> checkpoints{0}, last_checkpoint_seq{0};
  std::atomic<uint64_t> checkpoint_deltas{0}, checkpoint_bytes{0}, last_checkpoint_bytes{0};
  std::atomic<uint64_t> checkpoint_failures{0};
  // The most memory one checkpoint held for its copies (images, records,
  // chunk and read buffers).
  std::atomic<uint64_t> max_checkpoint_buffer_bytes{0};
  void NoteCheckpointBuffer(uint64_t bytes);
  // The index file as this process last wrote it (checkpoint.cc): a delta
  // may be appended only while `appendable` (this process wrote its base
  // and every delta since, each index of the base tracks its changed
  // blocks since its copy) and the families and their indexes are the
  // base's. Used by the background thread's checkpoints and by Close after
  // that thread stopped, never both at once.
  struct IndexFileState {
    bool appendable = false;
    uint64_t base_bytes = 0, delta_bytes = 0;
    uint64_t whole_bytes = 0;  // the indexes' own size when the base was written (a sparse base is less)
    std::vector<std::pair<uint32_t, uint64_t>> indexes;  // (family id, CfState::serial), the base's order
  } file_state;
  std::atomic<uint64_t> last_checkpoint_pause_us{0}, max_checkpoint_pause_us{0};
  std::atomic<uint64_t> checkpoint_replays{0}, checkpoint_replayed_keys{0};
  std::atomic<uint64_t> file_loads{0}, file_rejections{0};
  std::mutex reject_mu;
  std::string last_rejection;

  // ---- writes LiveKeyDB did not make (seq_ledger.h) --------------------------
  SeqLedger ledger;
  // Sticky once a write LiveKeyDB never saw is certain: every family's
  // reads bypass its index until RecoverTrust rebuilt them all.
  std::atomic<bool> untrusted{false};
  std::atomic<uint64_t> unseen_write_detections{0}, trust_recoveries{0};
  bool trust_recovery_due = false;  // guarded by bg_mu
  // Every LiveKeyDB write reaches RocksDB here, as one batch (write_path.h).
  rocksdb::Status LedgerWrite(const WriteOptions& wo, WriteBatch* b);
  // May the index's "no" be returned? Invariant (seq_ledger.h): the DB's
  // latest sequence number <= ledger.verified() => every write it holds
  // went through LiveKeyDB. Otherwise the read goes to RocksDB; when no
  // LiveKeyDB write is in flight, the gap is a write it never saw.
  // `trust`: TrustEpoch() read before the index was probed. A recovery
  // that made the indexes trusted again after it (RecoverTrust) swapped in
  // indexes the probe did not read: the probe's "no" may be from the old,
  // untrusted one, so it is not returned.
  uint64_t TrustEpoch() const { return trust_epoch.load(std::memory_order_acquire); }
  bool IndexTrusted(uint64_t trust) {
    if (untrusted.load(std::memory_order_acquire)) return false;
    if (trust_epoch.load(std::memory_order_acquire) != trust) return false;
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kTrustUnseenWrites) return true;
    const bool ignore_files = internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kIgnoreTableFileChanges;
#else
    constexpr bool ignore_files = false;
#endif
    // Every table file accounted for (world_watch.h): none appeared or
    // went that a flush, compaction or LiveKeyDB's own ingestion does not
    // explain.
    if (!ignore_files && !world->Settled()) return false;
    const uint64_t verified = ledger.verified();  // before the DB's number
    if (base->GetLatestSequenceNumber() <= verified) return true;
    uint64_t latest = 0, at = 0;
    if (ledger.Quiescent([&] { return base->GetLatestSequenceNumber(); }, &latest, &at) && latest > at) {
      MarkUntrusted("the DB is at sequence " + std::to_string(latest) + " but LiveKeyDB's own writes account "
                    "only for " + std::to_string(at) + ": a write it never saw (GetBaseDB(), a TransactionDB or "
                    "another wrapper on top, an ingestion or import)");
    }
    return false;
  }
  // A change LiveKeyDB cannot account for is certain (a sequence number it
  // did not write, a table file the world watch cannot explain): every
  // index is bypassed until RecoverTrust rebuilt them all, and the index
  // file is removed (no checkpoint can replay such a change). One LOG line.
  void MarkUntrusted(const std::string& why);  // background.cc
  void ForgetIndexFile();                      // background.cc
  // Bumped by MarkUntrusted before it removes the index file: a file
  // written from a trust check before the bump is removed by its writer
  // (SaveWhileTrusted).
  std::atomic<uint64_t> untrust_events{0};
  std::mutex trust_mu;  // MarkUntrusted's count and flag against RecoverTrust's last check
  std::atomic<uint64_t> trust_epoch{0};  // bumped by RecoverTrust before it trusts the indexes again
  // Persistence respects trust: a file may claim sequence number `seq`
  // only if, read before it, the ledger accounted for every number up to
  // it and nothing unseen is known (seq_ledger.h's invariant).
  bool TrustedUpTo(uint64_t seq, uint64_t verified_before) const {
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kSaveUntrustedIndex) return true;
#endif
    return !untrusted.load(std::memory_order_acquire) && world->Settled() && seq <= verified_before;
  }
  // After a file was written from a trust check made when untrust_events
  // was `events`: keeps it only if no unseen change came since; else
  // removes it and says so (Status::Incomplete).
  rocksdb::Status KeepFileIfStillTrusted(uint64_t events);  // persistence.cc
  void RecoverTrust();                  // background.cc

  // ---- helpers ---------------------------------------------------------------
  uint64_t Hash(const Slice& k) const { return internal::HashKey(k.data(), k.size(), opt.seed); }
  void LockAll() { stripes.LockAll(); }
  void UnlockAll() { stripes.UnlockAll(base->GetLatestSequenceNumber()); }
  void UnlockStripe(uint32_t i) { stripes.Unlock(i, base->GetLatestSequenceNumber()); }
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
  class StripeGuard;  // one stripe, held for a scope (write_path.h)

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
      const uint64_t trust = TrustEpoch();  // (before the probe: IndexTrusted)
      {
        ReadSection rs(&epochs);
        const CfTable* t = table.load();
        const CfState* cf = t ? t->Find(column_family->GetID()) : nullptr;
        const LiveKeyIndex* idx = ServingIndex(cf);
        if (idx != nullptr) verdict = idx->Contains(h) ? 1 : 0;
      }
      if (verdict == 0 && !IndexTrusted(trust)) {  // a "no" only for writes it saw
        epochs.Bump(kUnverifiedReads);
        verdict = -1;
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

  // The write path's steps (write_path.h, in the order a Put takes them):
  // a point read of the key's liveness; the writer's probe.
  Liveness ReadLiveness(ColumnFamilyHandle* h, const Slice& key);

  bool WriterContains(const CfState* cf, const LiveKeyIndex* idx, uint64_t h);

  // The index updates under the key's stripe, with the live-region counts.
  rocksdb::Status IndexInsert(CfState* cf, LiveKeyIndex* idx, uint64_t h, const KeyRegions& kr);
  void IndexErase(CfState* cf, LiveKeyIndex* idx, uint64_t h, const KeyRegions& kr);
  uint64_t LatestForErase(const LiveKeyIndex* idx) const;
  // The options ask for live-region counts (some family may count them).
  bool CountsRegions() const { return opt.live_prefix_counts || !opt.live_range_lengths.empty(); }
  // The regions of a key the live-region counts count (write_path.h).
  KeyRegions RegionsOf(const CfState* cf, const Slice& key) const;
  uint64_t PrefixRegion(const CfState* cf, const Slice& key) const;
  uint64_t RangeRegion(const Slice& key, uint32_t L) const;
  static constexpr uint64_t kPrefixHashSalt = 0x5052454649584553ULL;  // "PREFIXES"
  static constexpr uint64_t kRangeHashSalt = 0x52414e4745533a00ULL;   // "RANGES:" + L

  void Reject(const std::string& why) {
    file_rejections.fetch_add(1);
    {
      std::lock_guard<std::mutex> l(reject_mu);
      last_rejection = why;
    }
    rocksdb::Warn(log, "LiveKeyDB: index file %s/%s not used: %s", dbname.c_str(),
                  opt.index_file_name.c_str(), why.c_str());
  }

  // ---- single-key writes (write_path.h: the write path, top-down) -------------------
  struct Probed;
  void PrefetchIndex(uint32_t id, uint64_t hash);
  Probed ProbeLocked(uint32_t id, uint64_t hash, bool probe);
  template <class WriteCall>
  rocksdb::Status Upsert(ColumnFamilyHandle* h, const Slice& key, WriteCall&& write);
#ifdef DLCBF_TESTING
  template <class WriteCall>
  rocksdb::Status UpsertWithFault(const Probed& p, uint64_t hash, const KeyRegions& kr, bool insert, WriteCall&& write);
#endif
  template <class WriteCall>
  rocksdb::Status Remove(ColumnFamilyHandle* h, const Slice& key, bool may_erase, WriteCall&& write);

  // ---- live-region counts on Seek (live_iterator.cc) -------------------------------
  // What one iterator's Seeks may use: fixed when it is made (or refreshed).
  struct SeekView {
    uint64_t seq = 0;     // the sequence number it reads at
    uint64_t serial = 0;  // cf->serial before seq was read
    bool confined = false;  // prefix_same_as_start with cf's counted prefix
    bool free = false;      // total order: range regions anywhere
    bool check_extractor = false;  // its SuperVersion must run cf->prefix (null: none)
    int extractor_ok = 0;          // ExtractorIsOurs' answer (0 not asked or not known, 1 yes, -1 no)
  };
  enum class SeekPlan { kAsIs, kMoved, kDead };
  // Where a Seek (forward) or SeekForPrev of `target` by iterator `it` may
  // go: kDead, no key it can return is live at v->seq (it stays invalid);
  // kMoved, every key in [target, *to) is dead and RocksDB seeks *to; kAsIs,
  // RocksDB seeks target.
  SeekPlan PlanSeek(CfState* cf, const Slice& target, bool forward, SeekView* v, rocksdb::Iterator* it,
                    std::string* to);
  // The family of an iterator whose Seeks the counts may plan, its view
  // filled but for serial and seq; nullptr: RocksDB's own iterator.
  CfState* IteratorView(const ReadOptions& options, ColumnFamilyHandle* column_family, SeekView* v);
  // 1 if it's SuperVersion runs the prefix extractor cf->prefix (both
  // null: it runs none), -1 if not, 0 if not known now (an older
  // SuperVersion never checked while current; ask again later).
  int ExtractorIsOurs(CfState* cf, rocksdb::Iterator* it);

  // ---- deferred liveness checks (checker.cc; the contract: checker.h) ------------
  SharedSnapshot* CheckSnapshot(uint32_t si, bool* busy = nullptr);
  // Busy overwrites' unchecked copies (write_path.h).
  static constexpr uint64_t kMinUncheckedCopies = 64;
  static constexpr uint32_t kMaxFingerprintCopies = 4;
  uint64_t UncheckedLimit(const LiveKeyIndex* idx) const;
  bool UncheckedBudgetSpent(const LiveKeyIndex* idx) const;
  bool TakeUncheckedCopy(CfState* cf, LiveKeyIndex* idx, uint64_t hash);
  void ReleaseSnapshotRef(SharedSnapshot* s, uint32_t n = 1);  // n references
  void DropCurrentSnapshot();
  void QueueCheck(CfState* cf, uint64_t hash, SharedSnapshot* snap, const Slice& key, uint32_t si, Known after);
  void RunChecks(CheckQueue::Blocks* batch);
  void ApplyCheck(PendingCheck* c, bool live);
  void CheckLoop();
  void StopChecks();
  static constexpr size_t kCheckWakeBatch = 256;  // queued checks that wake the checker
  static constexpr int kCheckPollMs = 1;          // its poll while checks come
  static constexpr size_t kCheckMultiGet = 64;    // keys per MultiGet

  rocksdb::Status WriteBatchImpl(const WriteOptions& wo, WriteBatch* batch);
  // A read that found `key` live in the DB at the latest state, with its
  // stripe's stamp and the all-stripes epoch taken before the read
  // (Stripes::StampBeforeRead, AllEpochBeforeRead). At a later write of the
  // key, with the stripe held: if both are unchanged, no LiveKeyDB write
  // released that stripe (or every stripe) since the read, so
  // no LiveKeyDB write changed the key: it is still live and its copy is
  // in the index (the index's invariant; writes behind LiveKeyDB's back
  // add keys or leave stale copies, never remove one). The write then
  // needs neither a liveness read nor a deferred check (IndexedWrite;
  // counted in known_writes). A changed stamp only costs the hint: the
  // write takes the ordinary path. A transaction's Get and GetForUpdate
  // record these (transactions.cc): a read-modify-write commits like a
  // Put of a known-live key.
  struct LiveHint {
    uint32_t cf;
    uint64_t hash;
    uint32_t si;
    uint64_t stamp;
    uint64_t epoch;
    std::string key;
  };
  // What `batches` write, applied in order as one atomic write by `write`
  // (which must also account its sequence numbers to the ledger), kept
  // exact in the index as Write keeps a batch (write_batch.cc). A
  // transaction's commit comes here (transactions.cc); prepare_markers
  // admits its prepared batch's markers.
  // The write, called once: a reference to a callable (no allocation).
  class WriteFn {
   public:
    template <class F>
    explicit WriteFn(F& f) : obj_(&f), call_([](void* o) { return (*static_cast<F*>(o))(); }) {}
    rocksdb::Status operator()() const { return call_(obj_); }

   private:
    void* obj_;
    rocksdb::Status (*call_)(void*);
  };
  rocksdb::Status IndexedWrite(const WriteBatch* const* batches, size_t num_batches, bool prepare_markers,
                               WriteFn write, const std::vector<LiveHint>* hints = nullptr);
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

  // ---- column families (column_families.cc) ----------------------------------------
  CfState* AddFamily(ColumnFamilyHandle* h);  // cf_mu held; no index yet
  rocksdb::Status CreateEmptyIndex(CfState* cf, bool empty_family);
  // Registers freshly created (empty) families.
  rocksdb::Status RegisterNew(const std::vector<ColumnFamilyHandle*>& handles);
  rocksdb::Status RegisterImported(ColumnFamilyHandle* h);
  CfState* FindState(uint32_t id);

  // ---- rebuild -----------------------------------------------------------------------
  rocksdb::Status Rebuild(CfState* cf, const std::string& reason, bool automatic);
  rocksdb::Status CreateBelowTrigger(uint64_t basis, uint64_t sized_for, std::unique_ptr<LiveKeyIndex>* out);
  // Where a full scan of cf splits into `ways` parts (rebuild.cc).
  std::vector<std::string> ScanSplits(CfState* cf, uint32_t ways);

  // ---- the background thread (background.cc): rebuilds, then checkpoints ---------
  // Queues an automatic rebuild of cf (once while one is queued).
  void ScheduleRebuild(CfState* cf);
  // After a rebuild: queues another if the writes during it outgrew it.
  void MaybeReschedule(CfState* cf);
  // From the world watch: a checkpoint is due (written at most once per
  // checkpoint_interval_seconds, after any queued rebuild).
  void RequestCheckpoint();
  void BackgroundLoop();
  // Close: detaches the world watch, drains the checks, stops the thread.
  void StopBackground();

  // ---- durability of what an index file claims (checkpoint.cc) ------------------------
  // disableWAL writes begun so far (NoteWrite: counted BEFORE the write)
  // and finished (when NoteWrite's scope ends: after the write returned,
  // whatever it returned); nowal_durable: the finished count read before
  // the last flush MakeDurable made (background thread and Close only).
  // Every write finished by then was in a memtable that flush wrote out;
  // one begun but not finished was not, and keeps begun != nowal_durable
  // until the next flush (test LiveKeyExactness.NoWalWriteInFlightAtACheckpoint).
  std::atomic<uint64_t> nowal_writes{0}, nowal_done{0};
  uint64_t nowal_durable = 0;
  // Every LiveKeyDB write calls NoteWrite first and keeps the result until
  // the write returned (write_path.h).
  class NoWalScope;
  NoWalScope NoteWrite(const WriteOptions& wo);
  // Makes every write with a sequence number up to the one just taken
  // durable (the WAL synced, memtables holding disableWAL writes flushed).
  // `may_flush` false (Close, background work paused: a flush would never
  // finish): Incomplete instead of flushing.
  rocksdb::Status MakeDurable(const std::vector<CfState*>& fams, bool may_flush = true);

  // ---- memory in RocksDB's accounting (LiveKeyIndexOptions::charge_cache) -------------
  // Every owned index's bytes (swap_mu keeps them in place).
  uint64_t IndexBytes();
  // Sets the charge to IndexBytes() + extra (an index being built). No-op
  // without charge_cache; a refused charge is counted and logged.
  void UpdateCacheCharge(uint64_t extra = 0);
  std::mutex charge_mu;
  std::unique_ptr<CacheCharge> charge;  // guarded by charge_mu
  std::atomic<uint64_t> charged_bytes{0}, charge_failures{0};

  // ---- persistence -------------------------------------------------------------------
  std::string IndexPath() const { return dbname + "/" + opt.index_file_name; }
  rocksdb::Status LiveSsts(std::vector<uint64_t>* numbers, std::vector<uint64_t>* smallest_seqno);
  rocksdb::Status Persist();
  rocksdb::Status PersistAt(uint64_t seq);  // Persist, once the index is trusted up to seq
  std::vector<CfState*> SavableFamilies();
  // Saves every serving index with the sequence number it covers
  // (checkpoint.cc): dense tables copied in chunks after the writers
  // resume, others with the writers paused.
  rocksdb::Status Checkpoint();
  // One attempt; TryAgain when a chunked copy was refused.
  rocksdb::Status CheckpointOnce(bool chunked, bool may_flush = true);
  // 4096 blocks of 64 bytes (256 KiB): the longest a writer waits for a
  // checkpoint's copy is one such memcpy (about 20 us).
  static constexpr uint64_t kCheckpointChunkBlocks = 4096;
  // One family's part of the index file (format version 6): its kernel
  // kind and serialized kernel (a base), or its changed-block records (a
  // delta segment, compact: DenseDLeftFilter::CompactRecords).
  struct SavedIndex {
    CfState* cf;
    uint8_t kind;
    uint64_t sized_for, entries;
    std::string blob;  // the kernel's image; in a delta: changed-block records
  };
  // The file's head (magic through the family count; the sequence number
  // at kHeadSeqAt) and one index's head before its blob (`*entries_at`,
  // `*size_at`: where its entry count and blob size lie in it).
  static constexpr size_t kHeadSeqAt = 12;
  std::string FileHead(uint64_t seq, const std::string& identity, const std::vector<uint64_t>& ssts,
                       size_t indexes) const;
  static std::string IndexHead(const SavedIndex& e, uint64_t blob_bytes, size_t* entries_at = nullptr,
                               size_t* size_at = nullptr);
  // A delta segment's lead and head (magic, body length at kDeltaBodyAt,
  // sequence number at kDeltaSeqAt, SST set, index count) and one index's
  // head before its records (`*size_at`: where their length lies).
  static constexpr size_t kDeltaBodyAt = 8, kDeltaSeqAt = 16;
  static std::string DeltaHead(uint64_t seq, const std::vector<uint64_t>& ssts, size_t indexes, uint64_t body = 0);
  static std::string DeltaIndexHead(const SavedIndex& e, uint64_t records_bytes, size_t* size_at = nullptr);
  // A new base written as its dense tables are copied (checkpoint.cc), so
  // no copy of an index is held in memory: pieces go to <name>.tmp as they
  // come; what is known only at the end (each index's entry count and
  // blob size, each image's item count and checksum: Late, LateImage) is
  // written as zeros and filled in by Finish, which reads the file back
  // once, in order, for the checksums, then syncs and renames it (the
  // steps of WriteFileAtomically). Memory: one read buffer
  // (kReadBackBytes). Destroyed unfinished: the .tmp is removed.
  class StreamedIndexFile {
   public:
    static constexpr size_t kReadBackBytes = 1 << 20;
    // NotSupported when the Env has no RandomRWFile (the caller copies
    // with the writers paused instead).
    rocksdb::Status Open(rocksdb::Env* env, const std::string& dir, const std::string& name);
    // A delta segment appended to the file at `path` instead: offsets
    // count from the file's end, Finish syncs it (no rename), and an
    // unfinished segment stays as a torn one (the load ignores it; the
    // caller writes a new base next).
    rocksdb::Status OpenAppend(rocksdb::Env* env, const std::string& path);
    rocksdb::Status Append(const Slice& piece);
    uint64_t size() const { return size_; }
    const rocksdb::Status& status() const { return status_; }
    void Late(uint64_t at, uint64_t value);  // a fixed64 at `at`
    // A dense image streamed at [begin, end) (DenseDLeftFilter's streamed
    // SerializeInChunks) holding `items` entries.
    void LateImage(uint64_t begin, uint64_t end, uint64_t items);
    rocksdb::Status Finish(uint64_t* bytes);
    ~StreamedIndexFile();

   private:
    struct Field {
      uint64_t at, value;
      int image;  // >= 0: the checksum of images_[image], known at Finish
    };
    rocksdb::Env* env_ = nullptr;
    std::string dir_, final_, tmp_;  // tmp_ empty: appending to final_
    std::unique_ptr<rocksdb::RandomRWFile> f_;
    uint64_t origin_ = 0;  // the file offset of size() 0
    uint64_t size_ = 0;
    rocksdb::Status status_;
    internal::StreamHash written_{0};  // every byte appended, as appended
    std::vector<Field> fields_;
    std::vector<std::pair<uint64_t, uint64_t>> images_;  // [begin, end)
  };
  // Writes the whole file (a base: tmp, fsync, rename, directory fsync);
  // `*bytes` its size.
  rocksdb::Status WriteIndexFile(uint64_t seq, const std::string& identity, const std::vector<uint64_t>& ssts,
                                 const std::vector<SavedIndex>& saved, uint64_t* bytes = nullptr);
  // Appends a delta segment to the file (append, fsync); `*bytes` its size.
  rocksdb::Status AppendIndexDelta(uint64_t seq, const std::vector<uint64_t>& ssts,
                                   const std::vector<SavedIndex>& deltas, uint64_t* bytes);
  // True when the next checkpoint of `fams` (under rebuild_mu) may be a
  // delta: file_state.appendable, the same families and indexes, and the
  // deltas so far under half the base or, after a sparse base, half the
  // indexes' own size (else a new base merges them: the file stays under
  // 1.5x the indexes plus its base).
  bool CanAppendDelta(const std::vector<CfState*>& fams);
  // `streamed`: the base, already streamed (else written from `saved`).
  rocksdb::Status WriteCheckpointFile(bool delta, bool appendable, uint64_t seq, const std::string& identity,
                                      const std::vector<uint64_t>& ssts, const std::vector<SavedIndex>& saved,
                                      StreamedIndexFile* streamed);
  // Brings a checkpoint forward (checkpoint.cc): the keys of the SST files
  // past `seq` and of the memtables, visible at `snap`, counted into `idx`.
  rocksdb::Status ReplaySince(CfState* cf, uint64_t seq, const rocksdb::Snapshot* snap, LiveKeyIndex* idx,
                              uint64_t* keys);
  // `deferred`: read by the first build after an Open that left the
  // builds to the background (file_load_pending), every family not
  // serving loaded as a checkpoint.
  void LoadFromFile(std::vector<CfState*>* loaded, bool deferred = false);
  // The index file is read by the first Rebuild, not by Open (with
  // background_open_build: Open then costs what RocksDB's does, whatever
  // the index's size). Guarded by rebuild_mu (set before the background
  // thread starts).
  bool file_load_pending = false;
  // The DB's sequence number when Open recovered it: a deferred load
  // checks the file against it, not against the sequence number at the
  // load (writes since could carry the DB past a file that is ahead of
  // it, which must be rejected).
  uint64_t open_seq = 0;
  // From this size (the file's, or the index's at expected_keys) on, a
  // background Open defers the load.
  static constexpr uint64_t kDeferredLoadBytes = uint64_t{64} << 20;
  rocksdb::Status Init(const std::vector<ColumnFamilyHandle*>& handles);
};


}  // namespace dlcbf

// The single-key write path, top-down (member definitions of Rep).
#include "filter_policy/rocksdb/live_key_db/write_path.h"
