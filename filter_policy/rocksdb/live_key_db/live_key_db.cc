// LiveKeyDB: a StackableDB with one counting filter per column family over
// the live user keys (issue #8). Contract: include/dlcbf/rocksdb/live_key_db.h.
//
// Design note
//   Index. Per column family a thread-safe DLeftCountingBloomFilter sized
//   for max(expected_keys, ...) at load 0.75 with d 2, L 4, r 14, c 2:
//   16-bit cells, 21.3 bits per key, predicted FPR d L 0.75 / (2^r - 1) =
//   0.037 % at the sizing (measured in the bench: 340 of 1.2 M absent-key
//   probes answered "maybe", 0.028 %). 1 M keys: 2.7 MB. Readers are
//   lock-free (the dlCBF validates negative answers against bucket
//   versions). d 2 / L 4 instead of the paper's d 4 / L 8: 4x lower FPR in
//   the same bits and half the work per probe and insert (40 vs 110 ns per
//   probe, 100 vs 200 ns per insert on this VM); the paper's balance without
//   relocation is not needed because inserts relocate breadth-first.
//
//   Elastic fallback. dlcbf::ElasticFilter exposes neither its dlCBF nor a
//   serialization, so the index owns the dlCBF itself (which it can
//   persist) and, when an insert overflows (at ~1.3x the sizing), hands its
//   contents to a new ElasticFilter of the same geometry and seed: for every
//   stored true fingerprint f (ForEachFingerprint) it inserts the 64-bit
//   hash h(f) = ceil(f.packed * 2^64 / (B Rn)), the smallest hash whose
//   mixed-radix fingerprint is f, `count` times (the inversion is verified
//   against FingerprintOfHash whenever an index is created). The
//   ElasticFilter then migrates to its ABF without the keys, as designed.
//   Measured: 190 ms for 1.3 M keys, during which this family's index
//   writers wait (readers do not: one pointer publish, never a half-built
//   filter). The frozen dlCBF is freed after an epoch grace period. Past
//   the handover the FPR is the ABF's (0.25 at 1.5x the sizing), so
//   overwrites and deletes of absent keys pay more liveness reads; an
//   automatic rebuild is queued at once and the handed-over index is not
//   persisted. (Requested API: ElasticFilter::Serialize/Deserialize or
//   adoption of an existing dlCBF would remove the re-insert pass.)
//
//   Exactness. Invariant: live(k) => count(k) >= 1 in the index, where
//   count(k) = inserts - erases done on behalf of k. Put/Merge insert only
//   when k is not live (index "no", or index "maybe" and a liveness read
//   says not found); Delete erases only when a liveness read says k was
//   live; both under k's stripe, so nothing changes k in between. Hence
//   each live key is counted once, erase never takes away another key's
//   evidence, and stale entries (count without liveness) can only add
//   false positives. A failed liveness read is treated as "not live" (Put
//   inserts, Delete keeps the entry): the safe side.
//
//   Readers and memory reclamation. Readers never lock: they enter an
//   epoch section (increment a per-thread-slot counter of the current
//   epoch parity, re-check the epoch), load the column-family table and the
//   index pointer, probe, and leave. Writers probe inside a section too.
//   Whoever retires memory (rebuild swap, handover, dropped family, table
//   change) publishes the replacement, flips the epoch and waits until the
//   old parity drains. Cost per Get: two uncontended atomic RMWs on the
//   caller's slot. A missing-key Get through the index: 0.17-0.20 us.
//
//   Rebuild without losing updates. With every stripe held: create the scan
//   iterator (its sequence number is fixed at creation) and turn on the
//   family's delta log. Without locks: scan keys into a new index sized for
//   max(expected_keys, headroom x entries); writers keep updating the old
//   index and append every index insert/erase (a hash and a sign) to the
//   log. With every stripe held again: replay the log into the new index
//   and publish it. Every logged change is relative to a state after the
//   iterator's sequence number and per key in stripe order, so the new
//   index ends exactly as one built at the swap. Writers pause twice: for
//   1024 mutex acquisitions, and for the replay (~0.1 us per update made
//   during the scan; 41 us for 291 updates in the oracle test). Scan speed:
//   1.5 M keys in 0.67 s (cached) to 1.3 s (at Open).
//
//   Persistence. File layout, version 2 (little-endian, internal/coding.h):
//     offset 0   u64 magic "DLKYIDX1"
//            8   u32 version = 2
//           12   u64 latest sequence number at the save
//           20   u64 hash seed
//           28   u32 len + DB identity bytes
//                u32 n + n x u64: the number of every live SST file of the
//                  DB (all column families), ascending
//                u32 families | per family: u32 id | u32 len + name |
//                  u64 sized_for | u64 entries |
//                  u64 len + DLeftCountingBloomFilter::Serialize()
//                u64 XXH3-64 of everything before (seed 0x4C4B494458)
//   Version 1 recorded only the SSTs that still carried the ingestion
//   property; a compaction erases that property, so a v1 file is never
//   trusted (rejected, the index is rebuilt).
//   Save (Close): pause background work (no compaction changes the file
//   set after it is recorded), then write <name>.tmp, fsync, rename,
//   directory fsync. Load (Open): only if the checksum, version, identity,
//   seed and sequence number match AND every live SST that is not in the
//   saved set has a smallest sequence number > 0. Why: the equal sequence
//   number proves that no sequenced write happened since the save, so a new
//   file whose keys all carry sequence numbers (a flush of the recovered
//   WAL) holds only keys the index saw. An ingestion at the bottom level
//   gets global seqno 0 and leaves the sequence number unchanged, and any
//   compaction output that contains such keys keeps seqno 0 for them. A
//   bottom-level compaction of our own keys (seqnos zeroed) between the
//   save and the load is rejected too: a needless but safe rebuild. The
//   file is deleted after Open.
//
//   Costs (tools/live_key_bench, Release, 2-core shared VM, 1 M keys x
//   100 B in L0 x 13 files + L1..L4, bloomfilter:10 SSTs, five runs; see
//   README): missing-key Gets 0.20-0.26 vs 2.2-3.7 us (11-14x), recently
//   deleted 0.17-0.24 vs 1.2-1.7 us (7-11x), hits +0-0.6 us (one probe,
//   usually cache-cold), new-key Puts +0.5-0.8 us = 1.07-1.13x (median
//   1.09x; a probe and an insert whose two buckets are cache-cold after the
//   WAL write and memtable insert, plus ~1,650 instructions, 2/3 of them in
//   the dlCBF's probe and insert), overwrites and deletes +13-24 us =
//   2.4-2.6x (one liveness Get of a key that is not cached).
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
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include "dlcbf/core/elastic_filter.h"
#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"
#include "dlcbf/internal/live_key_db_testing.h"
#include "rocksdb/env.h"
#include "rocksdb/iterator.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/write_batch.h"

namespace dlcbf {

using rocksdb::ColumnFamilyDescriptor;
using rocksdb::ColumnFamilyHandle;
using rocksdb::DB;
using rocksdb::InfoLogLevel;
using rocksdb::Iterator;
using rocksdb::PinnableSlice;
using rocksdb::ReadOptions;
using rocksdb::Slice;
using rocksdb::Status;
using rocksdb::WriteBatch;
using rocksdb::WriteOptions;

namespace internal {
namespace {
std::atomic<int> g_fault{0};
}  // namespace
void SetLiveKeyFaultForTesting(LiveKeyFault fault) { g_fault.store(static_cast<int>(fault)); }
LiveKeyFault GetLiveKeyFaultForTesting() { return static_cast<LiveKeyFault>(g_fault.load()); }
}  // namespace internal

namespace {

constexpr uint64_t kFileMagic = 0x31584449594B4C44ULL;  // "DLKYIDX1"
constexpr uint32_t kFileVersion = 2;  // 1 lacked the SST set: never trusted
constexpr uint64_t kFileChecksumSeed = 0x4C4B494458ULL;
constexpr uint64_t kMaxExpectedKeys = uint64_t{1} << 40;

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---------------------------------------------------------------------------
// Epochs: lock-free readers, writers wait for readers before freeing.
// ---------------------------------------------------------------------------
enum Counter : uint32_t {
  kLookups,
  kShortCircuited,
  kBypassed,
  kWriteKeys,
  kLivenessReads,
  kIndexInserts,
  kIndexErases,
  kUndone,
  kRangeErased,
  kRangeLimitHits,
  kIngestedKeys,
  kNumCounters
};

constexpr uint32_t kSlots = 64;

struct alignas(64) Slot {
  std::atomic<uint64_t> active[2]{};
  std::atomic<uint64_t> counters[kNumCounters]{};
};

uint32_t ThreadIndex() {
  static std::atomic<uint32_t> next{0};
  thread_local const uint32_t index = next.fetch_add(1, std::memory_order_relaxed);
  return index;
}

class EpochDomain {
 public:
  EpochDomain() : slots_(new Slot[kSlots]()) {}

  Slot& MySlot() { return slots_[ThreadIndex() % kSlots]; }

  // Enter a read section; returns the parity to pass to Exit. Counting on
  // the parity of an epoch that is re-checked after the increment makes
  // the first flip after this point wait for us (see Synchronize).
  uint32_t Enter(Slot& s) {
    for (;;) {
      const uint64_t e = epoch_.load();
      const uint32_t p = static_cast<uint32_t>(e & 1);
      s.active[p].fetch_add(1);
      if (epoch_.load() == e) return p;
      s.active[p].fetch_sub(1, std::memory_order_release);
    }
  }
  void Exit(Slot& s, uint32_t p) { s.active[p].fetch_sub(1, std::memory_order_release); }

  // Returns once every read section that began before the call has ended.
  // Callers publish the replacement pointer (seq_cst) before calling.
  void Synchronize() {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t e = epoch_.fetch_add(1);
    const uint32_t old = static_cast<uint32_t>(e & 1);
    for (uint32_t i = 0; i < kSlots; ++i) {
      while (slots_[i].active[old].load() != 0) std::this_thread::yield();
    }
  }

  // Statistics: a plain load + store (no locked instruction). Exact while
  // no two threads share a slot (at most kSlots threads); otherwise an
  // increment can be lost, which only affects statistics.
  void Bump(Counter c, uint64_t n = 1) {
    std::atomic<uint64_t>& x = MySlot().counters[c];
    x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Sum(Counter c) const {
    uint64_t s = 0;
    for (uint32_t i = 0; i < kSlots; ++i) s += slots_[i].counters[c].load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> epoch_{0};
  std::mutex mu_;
};

class ReadSection {
 public:
  explicit ReadSection(EpochDomain* d) : d_(d), slot_(d->MySlot()), parity_(d->Enter(slot_)) {}
  ~ReadSection() { d_->Exit(slot_, parity_); }
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;

 private:
  EpochDomain* d_;
  Slot& slot_;
  uint32_t parity_;
};

// The smallest 64-bit hash whose phase-1 fingerprint (b, q) -- read off the
// hash as the mixed-radix fraction h * B / 2^64 -- packs to `packed` =
// b * Rn + q: h = ceil(packed * 2^64 / (B Rn)). Then packed <= h B Rn / 2^64
// < packed + 1 because B Rn < 2^56.
uint64_t HashOfFingerprint(uint64_t packed, uint64_t buckets, uint64_t rn) {
  __extension__ typedef unsigned __int128 u128;
  const u128 den = static_cast<u128>(buckets) * rn;
  const u128 num = static_cast<u128>(packed) << 64;
  return static_cast<uint64_t>((num + den - 1) / den);
}

// ---------------------------------------------------------------------------
// The index of one column family.
// ---------------------------------------------------------------------------
class LiveKeyIndex {
 public:
  static Status Create(const LiveKeyIndexOptions& o, uint64_t sized_for, EpochDomain* epochs,
                       std::unique_ptr<LiveKeyIndex>* out) {
    DLeftOptions d = o.dleft;
    d.SizeFor(std::max<uint64_t>(1, sized_for), o.sizing_load);
    d.thread_safe = true;
    std::unique_ptr<DLeftCountingBloomFilter> f;
    Status s = DLeftCountingBloomFilter::Create(d, &f);
    if (!s.ok()) return s;
    std::unique_ptr<LiveKeyIndex> idx(new LiveKeyIndex(o, sized_for, epochs));
    idx->dleft_ = std::move(f);
    s = idx->CheckHashing();
    if (!s.ok()) return s;
    *out = std::move(idx);
    return Status::OK();
  }

  static Status Load(const Slice& blob, const LiveKeyIndexOptions& o, uint64_t sized_for,
                     uint64_t entries, EpochDomain* epochs, std::unique_ptr<LiveKeyIndex>* out) {
    std::unique_ptr<DLeftCountingBloomFilter> f;
    Status s = DLeftCountingBloomFilter::Deserialize(blob, &f, /*thread_safe=*/true);
    if (!s.ok()) return s;
    if (f->options().seed != o.dleft.seed) return Status::Corruption("hash seed differs");
    if (f->options().counter_bits == 0) return Status::Corruption("filter has no counters");
    if (sized_for == 0) return Status::Corruption("sized_for is 0");
    std::unique_ptr<LiveKeyIndex> idx(new LiveKeyIndex(o, sized_for, epochs));
    idx->dleft_ = std::move(f);
    idx->entries_.store(entries);
    s = idx->CheckHashing();
    if (!s.ok()) return s;
    *out = std::move(idx);
    return Status::OK();
  }

  bool Contains(uint64_t h) const {
    const ElasticFilter* e = elastic_pub_.load();
    if (e != nullptr) return e->ContainsHash(h);
    // The batch form prefetches all d candidate buckets before probing, so
    // their cache misses overlap (one miss latency instead of up to d).
    bool out = false;
    dleft_->ContainsHashBatch(&h, 1, &out);
    return out;
  }
  void ContainsBatch(const uint64_t* h, size_t n, bool* out) const {
    const ElasticFilter* e = elastic_pub_.load();
    if (e == nullptr) {
      dleft_->ContainsHashBatch(h, n, out);
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = e->ContainsHash(h[i]);
    }
  }

  // Never fails except when memory for the elastic filter cannot be had;
  // then the index is unchanged and the caller must not write the key.
  Status Insert(uint64_t h) {
    std::lock_guard<std::mutex> l(mu_);
    if (!elastic_) {
      if (dleft_->InsertHash(h) == OpResult::kOk) {
        entries_.fetch_add(1, std::memory_order_relaxed);
        return Status::OK();
      }
      Status s = HandoverLocked();
      if (!s.ok()) return s;
    }
    if (elastic_->InsertHash(h) != OpResult::kOk) {
      return Status::MemoryLimit("LiveKeyDB: the elastic index could not grow");
    }
    entries_.fetch_add(1, std::memory_order_relaxed);
    // Free frozen filters once no reader can be inside them: ours right
    // after the handover, the ElasticFilter's dlCBF once it migrated.
    const bool migrated = elastic_->mode() == ElasticMode::kAutoscaling;
    if (dleft_ || (migrated && !elastic_released_)) {
      epochs_->Synchronize();
      dleft_.reset();
      if (migrated) {
        elastic_->ReleaseRetired();
        elastic_released_ = true;
      }
    }
    return Status::OK();
  }

  // Only for keys counted on behalf of the caller (see the invariant).
  void Erase(uint64_t h) {
    std::lock_guard<std::mutex> l(mu_);
    const OpResult r = elastic_ ? elastic_->EraseHash(h) : dleft_->EraseHash(h);
    if (r == OpResult::kOk) entries_.fetch_sub(1, std::memory_order_relaxed);
  }

  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  uint64_t sized_for() const { return sized_for_; }
  bool handed_over() const { return elastic_pub_.load(std::memory_order_relaxed) != nullptr; }
  bool NeedsRebuild(double drift) const {
    return handed_over() ||
           static_cast<double>(entries()) > drift * static_cast<double>(sized_for_);
  }

  // False when handed over (the elastic filter cannot be serialized).
  bool Serialize(std::string* out) const {
    std::lock_guard<std::mutex> l(mu_);
    if (elastic_ || !dleft_) return false;
    dleft_->Serialize(out);
    return true;
  }

  void Describe(LiveKeyCfStats* st) const {
    std::lock_guard<std::mutex> l(mu_);
    st->entries = entries();
    st->sized_for = sized_for_;
    st->drift = sized_for_ ? static_cast<double>(st->entries) / static_cast<double>(sized_for_) : 0;
    if (!elastic_) {
      st->mode = "dlcbf";
      st->bytes = dleft_->bytes();
      st->predicted_fpr = dleft_->PredictedFpr();
      return;
    }
    const ElasticStats es = elastic_->Stats();
    st->mode = es.mode == ElasticMode::kDLeft ? "elastic-dlcbf" : "elastic-abf";
    st->bytes = es.bytes + es.retained_bytes + (dleft_ ? dleft_->bytes() : 0);
    st->predicted_fpr = es.predicted_fpr;
  }

 private:
  LiveKeyIndex(const LiveKeyIndexOptions& o, uint64_t sized_for, EpochDomain* epochs)
      : abf_counter_bits_(o.abf_counter_bits), sized_for_(std::max<uint64_t>(1, sized_for)),
        epochs_(epochs) {}

  // The key hash and the fingerprint inversion must agree with the dlCBF.
  Status CheckHashing() const {
    const DLeftOptions& d = dleft_->options();
    const uint64_t rn = (uint64_t{1} << d.remainder_bits) - 1;
    const uint64_t space = d.buckets_per_subtable * rn;
    uint64_t state = 0x11FE0B5EULL ^ space;
    for (int i = 0; i < 32; ++i) {
      const uint64_t packed = i == 0 ? 0 : i == 1 ? space - 1 : internal::SplitMix64(&state) % space;
      if (dleft_->FingerprintOfHash(HashOfFingerprint(packed, d.buckets_per_subtable, rn)).packed !=
          packed) {
        return Status::NotSupported("LiveKeyDB: fingerprint inversion disagrees with the dlCBF");
      }
      const std::string key = "live-key-self-check-" + std::to_string(i);
      if (dleft_->Hash(key) != internal::HashKey(key.data(), key.size(), d.seed)) {
        return Status::NotSupported("LiveKeyDB: key hash disagrees with the dlCBF");
      }
    }
    return Status::OK();
  }

  // mu_ held. Re-creates the dlCBF's contents in an ElasticFilter.
  Status HandoverLocked() {
    ElasticOptions eo;
    eo.dleft = dleft_->options();
    eo.expected_items = 0;  // keep the exact geometry
    eo.thread_safe = true;
    eo.abf_counter_bits = abf_counter_bits_;
    std::unique_ptr<ElasticFilter> e;
    Status s = ElasticFilter::Create(eo, &e);
    if (!s.ok()) return s;
    const uint64_t buckets = eo.dleft.buckets_per_subtable;
    const uint64_t rn = (uint64_t{1} << eo.dleft.remainder_bits) - 1;
    bool ok = true;
    dleft_->ForEachFingerprint(
        [&](const DLeftCountingBloomFilter::TrueFingerprint& f, uint32_t count) {
          const uint64_t h = HashOfFingerprint(f.packed, buckets, rn);
          for (uint32_t i = 0; i < count; ++i) ok &= e->InsertHash(h) == OpResult::kOk;
        });
    if (!ok) return Status::MemoryLimit("LiveKeyDB: the elastic index could not be allocated");
    elastic_ = std::move(e);
    elastic_pub_.store(elastic_.get());  // readers switch here
    return Status::OK();
  }

  const uint32_t abf_counter_bits_;
  const uint64_t sized_for_;
  EpochDomain* const epochs_;
  mutable std::mutex mu_;  // every mutation
  std::unique_ptr<DLeftCountingBloomFilter> dleft_;  // until handed over + grace
  std::unique_ptr<ElasticFilter> elastic_;
  std::atomic<const ElasticFilter*> elastic_pub_{nullptr};
  bool elastic_released_ = false;
  std::atomic<uint64_t> entries_{0};
};

// ---------------------------------------------------------------------------
// Per column family state. Never freed before Close (pointers stay valid).
// ---------------------------------------------------------------------------
struct CfState {
  uint32_t id = 0;
  std::string name;
  ColumnFamilyHandle* handle = nullptr;  // kept alive until Close
  bool handle_released = false;          // user called DestroyColumnFamilyHandle
  const rocksdb::Comparator* cmp = nullptr;
  bool indexed = false;
  std::string bypass_reason;

  // Changed only with every stripe held (writers hold one: stable for them).
  bool dropped = false;
  std::atomic<LiveKeyIndex*> active{nullptr};
  std::unique_ptr<LiveKeyIndex> owned;
  std::atomic<bool> rebuilding{false};

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

}  // namespace

// ---------------------------------------------------------------------------
// Options and stats
// ---------------------------------------------------------------------------
Status LiveKeyIndexOptions::Validate() const {
  if (expected_keys == 0 || expected_keys > kMaxExpectedKeys) {
    return Status::InvalidArgument("expected_keys must be in [1, 2^40]");
  }
  if (!(sizing_load > 0.0 && sizing_load <= 1.0)) {
    return Status::InvalidArgument("sizing_load must be in (0, 1]");
  }
  DLeftOptions d = dleft;
  d.SizeFor(expected_keys, sizing_load);
  Status s = d.Validate();
  if (s.IsInvalidArgument()) {
    return Status::InvalidArgument("dleft." + std::string(s.getState() ? s.getState() : ""));
  }
  if (!s.ok()) return s;
  if (d.counter_bits == 0) {
    return Status::InvalidArgument("dleft.counter_bits must be >= 1 (live keys are erased)");
  }
  if (abf_counter_bits < 1 || abf_counter_bits > 8) {
    return Status::InvalidArgument("abf_counter_bits must be in [1, 8]");
  }
  if (!(auto_rebuild_drift == 0.0 || (auto_rebuild_drift > 1.0 && std::isfinite(auto_rebuild_drift)))) {
    return Status::InvalidArgument("auto_rebuild_drift must be 0 (off) or a finite value > 1");
  }
  if (!(rebuild_headroom >= 1.0 && rebuild_headroom <= 1000.0)) {
    return Status::InvalidArgument("rebuild_headroom must be in [1, 1000]");
  }
  if (lock_stripes == 0 || lock_stripes > (1u << 20) || (lock_stripes & (lock_stripes - 1)) != 0) {
    return Status::InvalidArgument("lock_stripes must be a power of two in [1, 2^20]");
  }
  if (index_file_name.empty() || index_file_name.find('/') != std::string::npos ||
      index_file_name == "." || index_file_name == "..") {
    return Status::InvalidArgument("index_file_name must be a plain file name (no '/')");
  }
  if (rebuild_progress_interval == 0) {
    return Status::InvalidArgument("rebuild_progress_interval must be >= 1");
  }
  return Status::OK();
}

std::string LiveKeyStats::ToString() const {
  std::ostringstream o;
  o << "LiveKeyDB: lookups=" << lookups << " short_circuited=" << short_circuited
    << " bypassed_reads=" << bypassed_reads << " write_keys=" << write_keys
    << " liveness_reads=" << liveness_reads << " index_inserts=" << index_inserts
    << " index_erases=" << index_erases << " undone_inserts=" << undone_inserts
    << " delete_range_erased=" << delete_range_erased
    << " delete_range_limit_hits=" << delete_range_limit_hits
    << " ingested_keys=" << ingested_keys << " rebuilds=" << rebuilds
    << " auto_rebuilds=" << auto_rebuilds << " failed_rebuilds=" << failed_rebuilds
    << " index_file_loads=" << index_file_loads
    << " index_file_rejections=" << index_file_rejections;
  if (!last_rejection.empty()) o << " last_rejection=\"" << last_rejection << "\"";
  for (const LiveKeyCfStats& c : column_families) {
    o << "\n  cf " << c.id << " '" << c.name << "': ";
    if (!c.indexed) {
      o << "not indexed (" << c.bypass_reason << ")";
      continue;
    }
    char fpr[32];
    std::snprintf(fpr, sizeof(fpr), "%.3g", c.predicted_fpr);
    o << "mode=" << c.mode << " entries=" << c.entries << " sized_for=" << c.sized_for
      << " drift=" << c.drift << " bytes=" << c.bytes << " predicted_fpr=" << fpr
      << " loaded_from_file=" << (c.loaded_from_file ? 1 : 0) << " rebuilds=" << c.rebuilds;
    if (c.rebuilds > 0) {
      o << " last_rebuild=\"" << c.last_rebuild_reason << "\" (" << c.last_rebuild_seconds
        << " s, " << c.last_rebuild_keys << " keys, " << c.last_rebuild_deltas << " deltas, pause "
        << c.last_rebuild_pause_micros << " us)";
    }
    if (c.rebuild_in_progress) o << " rebuilding";
  }
  return o.str();
}

// ---------------------------------------------------------------------------
// Rep
// ---------------------------------------------------------------------------
struct LiveKeyDB::Rep {
  Rep(DB* b, const LiveKeyIndexOptions& o)
      : opt(o), base(b), env(b->GetEnv()), dbname(b->GetName()),
        stripes(new std::mutex[o.lock_stripes]), stripe_mask(o.lock_stripes - 1) {
    log = b->GetDBOptions().info_log;
  }

  LiveKeyIndexOptions opt;
  DB* base;
  rocksdb::Env* env;
  std::string dbname;
  std::shared_ptr<rocksdb::Logger> log;
  EpochDomain epochs;
  std::unique_ptr<std::mutex[]> stripes;
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

  std::atomic<bool> closing{false};
  bool closed = false;

  std::atomic<uint64_t> rebuilds{0}, auto_rebuilds{0}, failed_rebuilds{0};
  std::atomic<uint64_t> file_loads{0}, file_rejections{0};
  std::mutex reject_mu;
  std::string last_rejection;

  // ---- helpers ---------------------------------------------------------------
  uint64_t Hash(const Slice& k) const { return internal::HashKey(k.data(), k.size(), opt.dleft.seed); }
  uint32_t StripeOf(uint32_t cf, uint64_t h) const {
    return static_cast<uint32_t>(internal::Mix64(h ^ (uint64_t{cf} * 0x9E3779B97F4A7C15ULL))) &
           stripe_mask;
  }
  void LockAll() {
    for (uint32_t i = 0; i <= stripe_mask; ++i) stripes[i].lock();
  }
  void UnlockAll() {
    for (uint32_t i = stripe_mask + 1; i-- > 0;) stripes[i].unlock();
  }

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
        const LiveKeyIndex* idx = cf != nullptr ? cf->active.load() : nullptr;
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
    const Status s = base->Get(ReadOptions(), h, key, &v);
    if (s.ok()) return Liveness::kLive;
    if (s.IsNotFound()) return Liveness::kNotLive;
    return Liveness::kUnknown;
  }

  // A writer's probe. The stripe keeps the index object in place, but a
  // handover inside it (another stripe's insert) may free its dlCBF after an
  // epoch grace period: probe inside a read section like every reader.
  bool WriterContains(const LiveKeyIndex* idx, uint64_t h) {
    ReadSection rs(&epochs);
    return idx->Contains(h);
  }

  // Callers hold the key's stripe (or all stripes).
  Status IndexInsert(CfState* cf, LiveKeyIndex* idx, uint64_t h) {
    Status s = idx->Insert(h);
    if (!s.ok()) return s;
    epochs.Bump(kIndexInserts);
    if (cf->rebuilding.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      cf->delta.emplace_back(h, true);
    }
    if (opt.auto_rebuild_drift > 0 && idx->NeedsRebuild(opt.auto_rebuild_drift)) {
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
  Probed ProbeLocked(uint32_t id, uint64_t hash, bool probe) {
    Probed p;
    ReadSection rs(&epochs);
    const CfTable* t = table.load();
    CfState* cf = t ? t->Find(id) : nullptr;
    if (cf == nullptr || !cf->indexed || cf->dropped) return p;
    p.cf = cf;
    p.idx = cf->active.load();
    p.contains = probe && p.idx->Contains(hash);
    return p;
  }

  // Put / Merge / PutEntity of one key.
  template <class WriteFn>
  Status Upsert(ColumnFamilyHandle* h, const Slice& key, WriteFn&& write) {
    const uint32_t id = h->GetID();
    const uint64_t hash = Hash(key);
    std::lock_guard<std::mutex> l(stripes[StripeOf(id, hash)]);
    const Probed p = ProbeLocked(id, hash, /*probe=*/true);
    if (p.cf == nullptr) return write();
    epochs.Bump(kWriteKeys);
    // Not in the index: certainly not live. In it: a liveness read decides.
    const bool insert = !p.contains || ReadLiveness(h, key) != Liveness::kLive;
    if (internal::g_fault.load(std::memory_order_relaxed) != 0) {
      return UpsertWithFault(p, hash, insert, write);
    }
    if (insert) {
      Status s = IndexInsert(p.cf, p.idx, hash);
      if (!s.ok()) return s;  // nothing written
    }
    Status s = write();
    if (!s.ok() && insert && ReadLiveness(h, key) == Liveness::kNotLive) {
      IndexErase(p.cf, p.idx, hash);
      epochs.Bump(kUndone);
    }
    return s;
  }

  // The deliberately wrong order (internal/live_key_db_testing.h): base
  // write, pause, index insert. Only the oracle's negative control runs it.
  template <class WriteFn>
  Status UpsertWithFault(const Probed& p, uint64_t hash, bool insert, WriteFn&& write) {
    Status s = write();
    if (s.ok() && insert) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      s = IndexInsert(p.cf, p.idx, hash);
    }
    return s;
  }

  // Delete / SingleDelete of one key.
  template <class WriteFn>
  Status Remove(ColumnFamilyHandle* h, const Slice& key, bool may_erase, WriteFn&& write) {
    const uint32_t id = h->GetID();
    const uint64_t hash = Hash(key);
    std::lock_guard<std::mutex> l(stripes[StripeOf(id, hash)]);
    const Probed p = ProbeLocked(id, hash, /*probe=*/may_erase);
    if (p.cf == nullptr) return write();
    epochs.Bump(kWriteKeys);
    const bool was_live = p.contains && ReadLiveness(h, key) == Liveness::kLive;
    Status s = write();
    if (s.ok() && was_live) IndexErase(p.cf, p.idx, hash);
    return s;
  }

  Status WriteBatchImpl(const WriteOptions& wo, WriteBatch* batch);
  Status Ingest(const std::vector<rocksdb::IngestExternalFileArg>& args);

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
  Status CreateEmptyIndex(CfState* cf) {
    std::unique_ptr<LiveKeyIndex> idx;
    Status s = LiveKeyIndex::Create(opt, opt.expected_keys, &epochs, &idx);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> sl(swap_mu);
    cf->owned = std::move(idx);
    cf->active.store(cf->owned.get());
    return s;
  }
  // Registers freshly created (empty) families.
  Status RegisterNew(const std::vector<ColumnFamilyHandle*>& handles) {
    std::lock_guard<std::mutex> l(cf_mu);
    Status result;
    for (ColumnFamilyHandle* h : handles) {
      if (h == nullptr) continue;
      CfState* cf = AddFamily(h);
      if (cf->indexed) {
        Status s = CreateEmptyIndex(cf);
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
  CfState* FindState(uint32_t id) {
    std::lock_guard<std::mutex> l(cf_mu);
    auto it = cfs.find(id);
    return it == cfs.end() ? nullptr : it->second.get();
  }

  // ---- rebuild -----------------------------------------------------------------------
  Status Rebuild(CfState* cf, const std::string& reason, bool automatic);

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
    if (!cf->dropped && cf->owned && cf->owned->NeedsRebuild(opt.auto_rebuild_drift)) {
      ScheduleRebuild(cf);
    }
  }
  void BackgroundLoop() {
    std::unique_lock<std::mutex> l(bg_mu);
    for (;;) {
      bg_cv.wait(l, [&] { return bg_stop || !queue.empty(); });
      if (bg_stop) break;
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
          if (idx != nullptr) {
            char buf[160];
            std::snprintf(buf, sizeof(buf),
                          "automatic: %" PRIu64 " entries, sized for %" PRIu64 "%s",
                          idx->entries(), idx->sized_for(),
                          idx->handed_over() ? ", dlCBF full (elastic mode)" : "");
            why = buf;
          }
        }
        Status s = Rebuild(cf, why, /*automatic=*/true);
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
  Status LiveSsts(std::vector<uint64_t>* numbers, std::vector<uint64_t>* smallest_seqno);
  Status Persist();
  void LoadFromFile(std::vector<CfState*>* loaded);
  Status Init(const std::vector<ColumnFamilyHandle*>& handles);
};

// ---------------------------------------------------------------------------
// Rebuild
// ---------------------------------------------------------------------------
Status LiveKeyDB::Rep::Rebuild(CfState* cf, const std::string& reason, bool automatic) {
  std::lock_guard<std::mutex> rl(rebuild_mu);
  if (cf->dropped) return Status::OK();
  if (!cf->indexed) return Status::NotSupported("LiveKeyDB: column family is not indexed");
  if (closing.load()) return Status::Aborted("LiveKeyDB: closing");
  cf->rebuild_running.store(true);
  const auto t0 = std::chrono::steady_clock::now();

  LiveKeyIndex* old = cf->active.load();
  uint64_t basis = 0;
  if (old != nullptr) {
    basis = old->entries();
  } else {
    uint64_t est = 0;
    if (base->GetIntProperty(cf->handle, "rocksdb.estimate-num-keys", &est)) basis = est;
  }
  const double want = std::ceil(static_cast<double>(basis) * opt.rebuild_headroom);
  const uint64_t sized_for = std::min<uint64_t>(
      kMaxExpectedKeys,
      std::max<uint64_t>(opt.expected_keys, want >= 1e15 ? uint64_t{1} << 50 : static_cast<uint64_t>(want)));

  std::unique_ptr<LiveKeyIndex> fresh;
  Status s = LiveKeyIndex::Create(opt, sized_for, &epochs, &fresh);
  if (!s.ok()) {
    cf->rebuild_running.store(false);
    failed_rebuilds.fetch_add(1);
    return s;
  }
  rocksdb::Info(log, "LiveKeyDB: rebuilding the index of column family '%s' (%s), sized for %" PRIu64
                " keys", cf->name.c_str(), reason.c_str(), sized_for);

  ReadOptions ro;
  ro.fill_cache = false;
  ro.total_order_seek = true;
  ro.readahead_size = 2 << 20;
  std::unique_ptr<Iterator> it;
  LockAll();
  it.reset(base->NewIterator(ro, cf->handle));
  {
    std::lock_guard<std::mutex> l(cf->delta_mu);
    cf->delta.clear();
  }
  cf->rebuilding.store(true);
  UnlockAll();

  uint64_t keys = 0;
  auto last_log = std::chrono::steady_clock::now();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    s = fresh->Insert(Hash(it->key()));
    if (!s.ok()) break;
    ++keys;
    if (keys % opt.rebuild_progress_interval == 0 ||
        ((keys & 0xFFFF) == 0 && SecondsSince(last_log) >= 10.0)) {
      last_log = std::chrono::steady_clock::now();
      rocksdb::Info(log, "LiveKeyDB: rebuilding '%s': %" PRIu64 " keys scanned, %.1f s",
                    cf->name.c_str(), keys, SecondsSince(t0));
    }
    if ((keys & 0xFFF) == 0 && closing.load(std::memory_order_relaxed)) {
      s = Status::Aborted("LiveKeyDB: closing");
      break;
    }
  }
  if (s.ok()) s = it->status();
  it.reset();

  std::unique_ptr<LiveKeyIndex> retired;
  uint64_t deltas = 0;
  LockAll();
  const auto p0 = std::chrono::steady_clock::now();
  if (s.ok()) {
    std::vector<std::pair<uint64_t, bool>> log_copy;
    {
      std::lock_guard<std::mutex> l(cf->delta_mu);
      log_copy.swap(cf->delta);
    }
    deltas = log_copy.size();
    for (const auto& d : log_copy) {
      if (d.second) {
        s = fresh->Insert(d.first);
        if (!s.ok()) break;
      } else {
        fresh->Erase(d.first);
      }
    }
  }
  if (s.ok()) {
    std::lock_guard<std::mutex> sl(swap_mu);
    retired = std::move(cf->owned);
    cf->owned = std::move(fresh);
    cf->active.store(cf->owned.get());
  }
  cf->rebuilding.store(false);
  {
    std::lock_guard<std::mutex> l(cf->delta_mu);
    std::vector<std::pair<uint64_t, bool>>().swap(cf->delta);
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
  if (!s.ok()) {
    failed_rebuilds.fetch_add(1);
    rocksdb::Warn(log, "LiveKeyDB: rebuild of '%s' abandoned after %" PRIu64 " keys: %s",
                  cf->name.c_str(), keys, s.ToString().c_str());
    return s;
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
    cf->last_deltas = deltas;
    cf->last_pause_micros = pause_us;
  }
  rocksdb::Info(log, "LiveKeyDB: rebuilt '%s': %" PRIu64 " keys in %.2f s, %" PRIu64
                " concurrent updates replayed, writers paused %" PRIu64 " us",
                cf->name.c_str(), keys, secs, deltas, pause_us);
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Persistence
// ---------------------------------------------------------------------------
namespace {

void PutString32(std::string* dst, const Slice& s) {
  internal::PutFixed32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s.data(), s.size());
}
bool GetString32(internal::Decoder* d, std::string* out) {
  uint32_t n = 0;
  if (!d->Get32(&n) || n > d->remaining()) return false;
  out->assign(d->data(), n);
  return d->Skip(n);
}

std::string BaseName(const std::string& path) {
  const size_t p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

Status WriteFileAtomically(rocksdb::Env* env, const std::string& dir, const std::string& name,
                           const std::string& data) {
  const std::string final_name = dir + "/" + name;
  const std::string tmp = final_name + ".tmp";
  std::unique_ptr<rocksdb::WritableFile> f;
  Status s = env->NewWritableFile(tmp, &f, rocksdb::EnvOptions());
  if (s.ok()) s = f->Append(data);
  if (s.ok()) s = f->Sync();
  if (f) {
    Status c = f->Close();
    if (s.ok()) s = c;
  }
  if (s.ok()) s = env->RenameFile(tmp, final_name);
  if (!s.ok()) {
    env->DeleteFile(tmp).PermitUncheckedError();
    return s;
  }
  std::unique_ptr<rocksdb::Directory> d;
  s = env->NewDirectory(dir, &d);
  if (s.ok()) s = d->Fsync();
  return s;
}

}  // namespace

// The SST set: the numbers of every live SST file of the DB (all column
// families), sorted; with `smallest_seqno`, each file's smallest sequence
// number in the same order.
Status LiveKeyDB::Rep::LiveSsts(std::vector<uint64_t>* numbers,
                                std::vector<uint64_t>* smallest_seqno) {
  std::vector<rocksdb::LiveFileMetaData> files;
  base->GetLiveFilesMetaData(&files);
  std::vector<std::pair<uint64_t, uint64_t>> v;
  for (const auto& f : files) {
    uint64_t n = f.file_number;
    if (n == 0) n = std::strtoull(BaseName(f.name).c_str(), nullptr, 10);  // "/000123.sst"
    v.emplace_back(n, f.smallest_seqno);
  }
  std::sort(v.begin(), v.end());
  numbers->clear();
  if (smallest_seqno) smallest_seqno->clear();
  for (const auto& e : v) {
    numbers->push_back(e.first);
    if (smallest_seqno) smallest_seqno->push_back(e.second);
  }
  return Status::OK();
}

Status LiveKeyDB::Rep::Persist() {
  std::vector<CfState*> fams;
  {
    std::lock_guard<std::mutex> l(cf_mu);
    for (auto& kv : cfs) {
      if (kv.second->indexed && !kv.second->dropped && kv.second->owned) {
        fams.push_back(kv.second.get());
      }
    }
  }
  std::string identity;
  Status s = base->GetDbIdentity(identity);
  if (!s.ok()) return s;
  // No compaction may change the SST set after it is recorded (a
  // compaction at the bottom level zeroes sequence numbers, so its output
  // would be rejected at the next Open: a needless rebuild).
  s = base->PauseBackgroundWork();
  if (!s.ok()) return s;
  std::vector<uint64_t> ssts;
  s = LiveSsts(&ssts, nullptr);
  if (!s.ok()) return s;

  std::string body;
  internal::PutFixed64(&body, kFileMagic);
  internal::PutFixed32(&body, kFileVersion);
  internal::PutFixed64(&body, base->GetLatestSequenceNumber());
  internal::PutFixed64(&body, opt.dleft.seed);
  PutString32(&body, identity);
  internal::PutFixed32(&body, static_cast<uint32_t>(ssts.size()));
  for (uint64_t n : ssts) internal::PutFixed64(&body, n);
  std::string entries;
  uint32_t n = 0, skipped = 0;
  for (CfState* cf : fams) {
    std::string blob;
    if (!cf->owned->Serialize(&blob)) {
      ++skipped;
      continue;
    }
    internal::PutFixed32(&entries, cf->id);
    PutString32(&entries, cf->name);
    internal::PutFixed64(&entries, cf->owned->sized_for());
    internal::PutFixed64(&entries, cf->owned->entries());
    internal::PutFixed64(&entries, blob.size());
    entries.append(blob);
    ++n;
  }
  if (n == 0) {
    rocksdb::Info(log, "LiveKeyDB: no index to persist (%u in elastic mode)", skipped);
    return Status::OK();
  }
  internal::PutFixed32(&body, n);
  body.append(entries);
  internal::PutFixed64(&body, internal::HashKey(body.data(), body.size(), kFileChecksumSeed));
  s = WriteFileAtomically(env, dbname, opt.index_file_name, body);
  if (s.ok()) {
    rocksdb::Info(log, "LiveKeyDB: persisted %u index(es), %zu bytes, at sequence %" PRIu64
                  " (%u in elastic mode not persisted)",
                  n, body.size(), base->GetLatestSequenceNumber(), skipped);
  }
  return s;
}

void LiveKeyDB::Rep::LoadFromFile(std::vector<CfState*>* loaded) {
  const std::string path = IndexPath();
  if (!env->FileExists(path).ok()) {
    rocksdb::Info(log, "LiveKeyDB: no index file (first open, or the last session did not close "
                  "cleanly); indexes will be rebuilt");
    return;
  }
  std::string data;
  Status s = rocksdb::ReadFileToString(env, path, &data);
  if (!s.ok()) return Reject("unreadable: " + s.ToString());
  if (data.size() < 8 + 4 + 8 + 8 + 4 + 4 + 4 + 8) return Reject("truncated");
  const size_t body = data.size() - 8;
  if (internal::HashKey(data.data(), body, kFileChecksumSeed) !=
      internal::DecodeFixed64(data.data() + body)) {
    return Reject("checksum mismatch (corrupt file)");
  }
  internal::Decoder d(data.data(), body);
  uint64_t magic = 0, seq = 0, seed = 0;
  uint32_t version = 0, n_ssts = 0, n = 0;
  std::string identity;
  if (!d.Get64(&magic) || magic != kFileMagic) return Reject("bad magic");
  if (!d.Get32(&version)) return Reject("truncated header");
  if (version == 1) {
    return Reject("format version 1 does not record the SST set, so keys added behind "
                  "LiveKeyDB's back (an ingestion at seqno 0) cannot be ruled out");
  }
  if (version != kFileVersion) {
    return Reject("unsupported version " + std::to_string(version));
  }
  if (!d.Get64(&seq) || !d.Get64(&seed) || !GetString32(&d, &identity)) return Reject("truncated header");
  std::string db_identity;
  if (!base->GetDbIdentity(db_identity).ok() || db_identity != identity) {
    return Reject("written for another DB (identity differs)");
  }
  const uint64_t latest = base->GetLatestSequenceNumber();
  if (seq != latest) {
    return Reject("saved at sequence " + std::to_string(seq) + ", DB is at " +
                  std::to_string(latest) + " (writes since the save)");
  }
  if (seed != opt.dleft.seed) return Reject("hash seed differs from index_options.dleft.seed");
  if (!d.Get32(&n_ssts) || n_ssts > d.remaining() / 8) return Reject("truncated SST list");
  std::vector<uint64_t> saved_ssts(n_ssts);
  for (uint64_t& f : saved_ssts) d.Get64(&f);
  std::sort(saved_ssts.begin(), saved_ssts.end());
  std::vector<uint64_t> now_ssts, now_smallest;
  s = LiveSsts(&now_ssts, &now_smallest);
  if (!s.ok()) return Reject("cannot list live SST files: " + s.ToString());
  for (size_t i = 0; i < now_ssts.size(); ++i) {
    // A file new to the index is harmless only if every key in it carries a
    // real sequence number (<= the verified one: written through LiveKeyDB
    // before the save, e.g. a flush of the recovered WAL). Sequence number 0
    // marks an ingestion at the bottom level, or a compaction output that
    // may contain one.
    if (now_smallest[i] == 0 &&
        !std::binary_search(saved_ssts.begin(), saved_ssts.end(), now_ssts[i])) {
      return Reject("SST file " + std::to_string(now_ssts[i]) +
                    " is not in the saved SST set and holds sequence number 0 (an ingestion, "
                    "or a compaction after the save): it may hold keys the index never saw");
    }
  }
  if (!d.Get32(&n)) return Reject("truncated");
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t id = 0;
    std::string name;
    uint64_t sized_for = 0, entries = 0, len = 0;
    if (!d.Get32(&id) || !GetString32(&d, &name) || !d.Get64(&sized_for) || !d.Get64(&entries) ||
        !d.Get64(&len) || len > d.remaining()) {
      return Reject("truncated entry");
    }
    const Slice blob(d.data(), static_cast<size_t>(len));
    d.Skip(static_cast<size_t>(len));
    CfState* cf = FindState(id);
    if (cf == nullptr || cf->dropped || cf->name != name) {
      Reject("entry for column family " + std::to_string(id) + " '" + name + "' has no match");
      continue;
    }
    if (!cf->indexed || cf->owned) continue;
    std::unique_ptr<LiveKeyIndex> idx;
    s = LiveKeyIndex::Load(blob, opt, sized_for, entries, &epochs, &idx);
    if (!s.ok()) {
      Reject("index of '" + name + "': " + s.ToString());
      continue;
    }
    {
      std::lock_guard<std::mutex> sl(swap_mu);
      cf->owned = std::move(idx);
      cf->active.store(cf->owned.get());
    }
    {
      std::lock_guard<std::mutex> l(cf->info_mu);
      cf->loaded_from_file = true;
    }
    file_loads.fetch_add(1);
    loaded->push_back(cf);
    rocksdb::Info(log, "LiveKeyDB: loaded the index of '%s' (%" PRIu64 " entries) at sequence %" PRIu64,
                  name.c_str(), entries, seq);
  }
  if (d.remaining() != 0) Reject("trailing bytes (entries loaded before were checksummed)");
}

Status LiveKeyDB::Rep::Init(const std::vector<ColumnFamilyHandle*>& handles) {
  {
    std::lock_guard<std::mutex> l(cf_mu);
    for (ColumnFamilyHandle* h : handles) AddFamily(h);
    PublishTableLocked();
  }
  std::vector<CfState*> loaded;
  if (opt.persist_index) LoadFromFile(&loaded);
  std::vector<CfState*> todo;
  {
    std::lock_guard<std::mutex> l(cf_mu);
    for (auto& kv : cfs) {
      CfState* cf = kv.second.get();
      if (!cf->indexed) {
        rocksdb::Info(log, "LiveKeyDB: column family '%s' not indexed: %s", cf->name.c_str(),
                      cf->bypass_reason.c_str());
      } else if (!cf->owned) {
        todo.push_back(cf);
      }
    }
  }
  for (CfState* cf : todo) {
    Status s = Rebuild(cf, loaded.empty() ? "open: no usable index file" : "open: not in the index file",
                       /*automatic=*/false);
    if (!s.ok()) return s;
  }
  if (opt.persist_index && env->FileExists(IndexPath()).ok()) {
    // From here on every write makes the file stale: never leave it behind.
    Status s = env->DeleteFile(IndexPath());
    if (!s.ok()) {
      rocksdb::Warn(log, "LiveKeyDB: cannot delete %s: %s", IndexPath().c_str(), s.ToString().c_str());
    }
  }
  bg = std::thread([this] { BackgroundLoop(); });
  return Status::OK();
}

// ---------------------------------------------------------------------------
// WriteBatch
// ---------------------------------------------------------------------------
namespace {

enum class OpKind : uint8_t { kPut, kMerge, kDelete, kSingleDelete, kRange };

struct BatchOp {
  OpKind kind;
  uint32_t cf;
  Slice key;
  Slice end;
};

class BatchCollector : public WriteBatch::Handler {
 public:
  std::vector<BatchOp> ops;
  Status PutCF(uint32_t cf, const Slice& key, const Slice&) override { return Add(OpKind::kPut, cf, key); }
  Status PutEntityCF(uint32_t cf, const Slice& key, const Slice&) override {
    return Add(OpKind::kPut, cf, key);
  }
  Status PutBlobIndexCF(uint32_t cf, const Slice& key, const Slice&) override {
    return Add(OpKind::kPut, cf, key);
  }
  Status MergeCF(uint32_t cf, const Slice& key, const Slice&) override {
    return Add(OpKind::kMerge, cf, key);
  }
  Status DeleteCF(uint32_t cf, const Slice& key) override { return Add(OpKind::kDelete, cf, key); }
  Status SingleDeleteCF(uint32_t cf, const Slice& key) override {
    return Add(OpKind::kSingleDelete, cf, key);
  }
  Status DeleteRangeCF(uint32_t cf, const Slice& b, const Slice& e) override {
    ops.push_back(BatchOp{OpKind::kRange, cf, b, e});
    return Status::OK();
  }
  void LogData(const Slice&) override {}
  Status MarkBeginPrepare(bool) override { return Unsupported(); }
  Status MarkEndPrepare(const Slice&) override { return Unsupported(); }
  Status MarkNoop(bool) override { return Status::OK(); }
  Status MarkRollback(const Slice&) override { return Unsupported(); }
  Status MarkCommit(const Slice&) override { return Unsupported(); }
  Status MarkCommitWithTimestamp(const Slice&, const Slice&) override { return Unsupported(); }

 private:
  Status Add(OpKind k, uint32_t cf, const Slice& key) {
    ops.push_back(BatchOp{k, cf, key, Slice()});
    return Status::OK();
  }
  static Status Unsupported() {
    return Status::NotSupported("LiveKeyDB: write batches with transaction markers");
  }
};

struct Overlay {
  CfState* cf;
  std::string key;
  uint64_t hash;
  bool l0_known = false;
  bool l0 = false;    // live before the batch
  bool cur = false;   // live after the ops seen so far
  bool keep = false;  // made dead by an untrusted SingleDelete
};

}  // namespace

Status LiveKeyDB::Rep::WriteBatchImpl(const WriteOptions& wo, WriteBatch* batch) {
  BatchCollector col;
  Status s = batch->Iterate(&col);
  if (!s.ok()) return s;

  // Indexed families of the batch (the table is read once).
  std::unordered_map<uint32_t, CfState*> fams;
  bool any = false, has_range = false;
  {
    ReadSection rs(&epochs);
    const CfTable* t = table.load();
    for (const BatchOp& op : col.ops) {
      if (fams.count(op.cf)) continue;
      CfState* cf = t ? t->Find(op.cf) : nullptr;
      fams[op.cf] = (cf != nullptr && cf->indexed) ? cf : nullptr;
    }
  }
  for (const BatchOp& op : col.ops) {
    if (fams[op.cf] == nullptr) continue;
    any = true;
    if (op.kind == OpKind::kRange) has_range = true;
  }
  if (!any) return base->Write(wo, batch);

  // Stripes: all of them for range deletions (the scan may meet any key).
  std::vector<uint32_t> taken;
  if (has_range) {
    LockAll();
  } else {
    for (const BatchOp& op : col.ops) {
      if (fams[op.cf] != nullptr) taken.push_back(StripeOf(op.cf, Hash(op.key)));
    }
    std::sort(taken.begin(), taken.end());
    taken.erase(std::unique(taken.begin(), taken.end()), taken.end());
    for (uint32_t i : taken) stripes[i].lock();
  }
  struct Unlocker {
    Rep* r;
    bool all;
    const std::vector<uint32_t>* t;
    ~Unlocker() {
      if (all) {
        r->UnlockAll();
      } else {
        for (size_t i = t->size(); i-- > 0;) r->stripes[(*t)[i]].unlock();
      }
    }
  } unlocker{this, has_range, &taken};

  // The overlay, in batch order.
  std::vector<Overlay> ov;
  std::unordered_map<std::string, size_t> pos;
  auto touch = [&](CfState* cf, const Slice& key, uint64_t hash) -> Overlay& {
    std::string k(reinterpret_cast<const char*>(&cf->id), sizeof(cf->id));
    k.append(key.data(), key.size());
    auto it = pos.find(k);
    if (it != pos.end()) return ov[it->second];
    pos.emplace(std::move(k), ov.size());
    ov.push_back(Overlay{cf, key.ToString(), hash});
    return ov.back();
  };
  uint64_t scan_budget = opt.delete_range_scan_limit;
  for (const BatchOp& op : col.ops) {
    CfState* cf = fams[op.cf];
    if (cf == nullptr || cf->dropped) continue;
    switch (op.kind) {
      case OpKind::kPut:
      case OpKind::kMerge: {
        Overlay& e = touch(cf, op.key, Hash(op.key));
        e.cur = true;
        e.keep = false;
        break;
      }
      case OpKind::kDelete:
      case OpKind::kSingleDelete: {
        Overlay& e = touch(cf, op.key, Hash(op.key));
        e.cur = false;
        e.keep = op.kind == OpKind::kSingleDelete && !opt.trust_single_delete;
        break;
      }
      case OpKind::kRange: {
        const rocksdb::Comparator* cmp = cf->cmp;
        for (Overlay& e : ov) {
          if (e.cf == cf && cmp->Compare(e.key, op.key) >= 0 && cmp->Compare(e.key, op.end) < 0) {
            e.cur = false;
            e.keep = false;
          }
        }
        if (cmp->Compare(op.key, op.end) >= 0) break;
        // Live keys of the range before the batch: their count must go.
        if (scan_budget == 0) {
          epochs.Bump(kRangeLimitHits);
          break;
        }
        ReadOptions ro;
        ro.fill_cache = false;
        ro.total_order_seek = true;
        Slice upper = op.end;
        ro.iterate_upper_bound = &upper;
        std::unique_ptr<Iterator> it(base->NewIterator(ro, cf->handle));
        for (it->Seek(op.key); it->Valid(); it->Next()) {
          if (scan_budget == 0) {
            epochs.Bump(kRangeLimitHits);
            break;
          }
          --scan_budget;
          Overlay& e = touch(cf, it->key(), Hash(it->key()));
          if (!e.l0_known) {
            e.l0_known = true;
            e.l0 = true;  // visible before the batch
          }
          e.cur = false;
          e.keep = false;
        }
        if (!it->status().ok()) return it->status();  // nothing written yet
        break;
      }
    }
  }

  // State before the batch for the keys we still need it for.
  std::vector<size_t> need_read;
  for (size_t i = 0; i < ov.size(); ++i) {
    Overlay& e = ov[i];
    epochs.Bump(kWriteKeys);
    if (e.l0_known) continue;
    if (!WriterContains(e.cf->active.load(), e.hash)) {
      e.l0_known = true;
      e.l0 = false;
    } else {
      need_read.push_back(i);
    }
  }
  if (!need_read.empty()) {
    std::vector<ColumnFamilyHandle*> hs;
    std::vector<Slice> ks;
    for (size_t i : need_read) {
      hs.push_back(ov[i].cf->handle);
      ks.push_back(ov[i].key);
    }
    std::vector<PinnableSlice> vals(ks.size());
    std::vector<Status> sts(ks.size());
    base->MultiGet(ReadOptions(), ks.size(), hs.data(), ks.data(), vals.data(), sts.data());
    epochs.Bump(kLivenessReads, ks.size());
    for (size_t j = 0; j < need_read.size(); ++j) {
      Overlay& e = ov[need_read[j]];
      e.l0_known = true;
      e.l0 = sts[j].ok();  // unknown counts as not live: insert, never erase
    }
  }

  // Insert the keys that become live, write, erase the keys that stopped.
  std::vector<size_t> inserted;
  for (size_t i = 0; i < ov.size(); ++i) {
    Overlay& e = ov[i];
    if (!e.cur || e.l0) continue;
    s = IndexInsert(e.cf, e.cf->active.load(), e.hash);
    if (!s.ok()) {
      for (size_t j : inserted) IndexErase(ov[j].cf, ov[j].cf->active.load(), ov[j].hash);
      return s;
    }
    inserted.push_back(i);
  }
  s = base->Write(wo, batch);
  if (s.ok()) {
    for (Overlay& e : ov) {
      if (!e.cur && e.l0 && !e.keep) {
        IndexErase(e.cf, e.cf->active.load(), e.hash);
        if (has_range) epochs.Bump(kRangeErased);
      }
    }
  } else {
    for (size_t i : inserted) {
      Overlay& e = ov[i];
      if (ReadLiveness(e.cf->handle, e.key) == Liveness::kNotLive) {
        IndexErase(e.cf, e.cf->active.load(), e.hash);
        epochs.Bump(kUndone);
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------
// Ingestion
// ---------------------------------------------------------------------------
Status LiveKeyDB::Rep::Ingest(const std::vector<rocksdb::IngestExternalFileArg>& args) {
  std::vector<std::pair<CfState*, const rocksdb::IngestExternalFileArg*>> work;
  for (const auto& a : args) {
    CfState* cf = Lookup(a.column_family);
    if (cf != nullptr) work.emplace_back(cf, &a);
  }
  if (work.empty()) return base->IngestExternalFiles(args);

  LockAll();
  struct Unlock {
    Rep* r;
    ~Unlock() { r->UnlockAll(); }
  } unlock{this};
  struct Added {
    CfState* cf;
    std::string key;
    uint64_t hash;
  };
  std::vector<Added> added;
  auto undo_all = [&] {
    for (const Added& a : added) IndexErase(a.cf, a.cf->active.load(), a.hash);
  };
  for (const auto& w : work) {
    CfState* cf = w.first;
    if (cf->dropped) continue;
    const rocksdb::Options cf_opts = base->GetOptions(w.second->column_family);
    for (const std::string& file : w.second->external_files) {
      rocksdb::SstFileReader reader(cf_opts);
      Status s = reader.Open(file);
      if (!s.ok()) {
        undo_all();
        return s;
      }
      std::unique_ptr<Iterator> it(reader.NewIterator(ReadOptions()));
      std::vector<std::string> pending;  // keys the index may hold: read them
      auto flush_pending = [&]() -> Status {
        if (pending.empty()) return Status::OK();
        std::vector<ColumnFamilyHandle*> hs(pending.size(), cf->handle);
        std::vector<Slice> ks(pending.begin(), pending.end());
        std::vector<PinnableSlice> vals(ks.size());
        std::vector<Status> sts(ks.size());
        base->MultiGet(ReadOptions(), ks.size(), hs.data(), ks.data(), vals.data(), sts.data());
        epochs.Bump(kLivenessReads, ks.size());
        for (size_t i = 0; i < ks.size(); ++i) {
          if (sts[i].ok()) continue;  // live already: counted
          const uint64_t h = Hash(ks[i]);
          Status is = IndexInsert(cf, cf->active.load(), h);
          if (!is.ok()) return is;
          added.push_back(Added{cf, pending[i], h});
        }
        pending.clear();
        return Status::OK();
      };
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        epochs.Bump(kIngestedKeys);
        const uint64_t h = Hash(it->key());
        if (WriterContains(cf->active.load(), h)) {
          pending.push_back(it->key().ToString());
          if (pending.size() >= 256) s = flush_pending();
        } else {
          s = IndexInsert(cf, cf->active.load(), h);
          if (s.ok()) added.push_back(Added{cf, it->key().ToString(), h});
        }
        if (!s.ok()) break;
      }
      if (s.ok()) s = it->status();
      if (s.ok()) s = flush_pending();
      if (!s.ok()) {
        undo_all();
        return s;
      }
    }
  }
  Status s = base->IngestExternalFiles(args);
  if (!s.ok()) {
    for (const Added& a : added) {
      if (ReadLiveness(a.cf->handle, a.key) == Liveness::kNotLive) {
        IndexErase(a.cf, a.cf->active.load(), a.hash);
        epochs.Bump(kUndone);
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------
// LiveKeyDB
// ---------------------------------------------------------------------------
LiveKeyDB::LiveKeyDB(DB* base, const LiveKeyIndexOptions& index_options)
    : StackableDB(base), rep_(new Rep(base, index_options)) {}

LiveKeyDB::~LiveKeyDB() {
  if (!rep_->closed) Close().PermitUncheckedError();
}

Status LiveKeyDB::Open(const rocksdb::Options& options, const LiveKeyIndexOptions& index_options,
                       const std::string& path, LiveKeyDB** dbptr) {
  if (dbptr == nullptr) return Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  std::vector<ColumnFamilyDescriptor> cfds{
      ColumnFamilyDescriptor(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options))};
  std::vector<ColumnFamilyHandle*> handles;
  LiveKeyDB* db = nullptr;
  Status s = Open(rocksdb::DBOptions(options), index_options, path, cfds, &handles, &db);
  if (!s.ok()) return s;
  for (ColumnFamilyHandle* h : handles) db->GetBaseDB()->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  *dbptr = db;
  return s;
}

Status LiveKeyDB::Open(const rocksdb::DBOptions& db_options, const LiveKeyIndexOptions& index_options,
                       const std::string& path,
                       const std::vector<ColumnFamilyDescriptor>& column_families,
                       std::vector<ColumnFamilyHandle*>* handles, LiveKeyDB** dbptr) {
  if (dbptr == nullptr) return Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  if (handles == nullptr) return Status::InvalidArgument("handles must not be null");
  Status s = index_options.Validate();
  if (!s.ok()) return s;
  DB* base = nullptr;
  s = DB::Open(db_options, path, column_families, handles, &base);
  if (!s.ok()) return s;
  std::unique_ptr<LiveKeyDB> db(new LiveKeyDB(base, index_options));
  s = db->rep_->Init(*handles);
  if (!s.ok()) {
    db->rep_->StopBackground();
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

Status LiveKeyDB::Close() {
  Rep& r = *rep_;
  if (r.closed) return Status::OK();
  r.StopBackground();
  if (r.opt.persist_index) {
    Status ps = r.Persist();
    if (!ps.ok()) {
      rocksdb::Warn(r.log, "LiveKeyDB: could not persist the index (the next Open rebuilds): %s",
                    ps.ToString().c_str());
    }
  }
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
  r.closed = true;
  return db_->Close();
}

Status LiveKeyDB::Resume() { return db_->Resume(); }

Status LiveKeyDB::RebuildIndex(ColumnFamilyHandle* column_family) {
  std::vector<CfState*> todo;
  {
    std::lock_guard<std::mutex> l(rep_->cf_mu);
    for (auto& kv : rep_->cfs) {
      CfState* cf = kv.second.get();
      if (cf->dropped) continue;
      if (column_family != nullptr && cf->id != column_family->GetID()) continue;
      if (!cf->indexed) {
        if (column_family != nullptr) {
          return Status::NotSupported("LiveKeyDB: column family is not indexed", cf->bypass_reason);
        }
        continue;
      }
      todo.push_back(cf);
    }
  }
  if (column_family != nullptr && todo.empty()) {
    return Status::InvalidArgument("LiveKeyDB: unknown column family");
  }
  for (CfState* cf : todo) {
    Status s = rep_->Rebuild(cf, "requested", /*automatic=*/false);
    if (!s.ok()) return s;
    rep_->MaybeReschedule(cf);
  }
  return Status::OK();
}

bool LiveKeyDB::WaitForBackgroundRebuilds(uint64_t timeout_ms) {
  std::unique_lock<std::mutex> l(rep_->bg_mu);
  return rep_->bg_idle_cv.wait_for(l, std::chrono::milliseconds(timeout_ms),
                                   [&] { return rep_->queue.empty() && !rep_->bg_busy; });
}

LiveKeyStats LiveKeyDB::GetLiveKeyStats() const {
  Rep& r = *rep_;
  LiveKeyStats st;
  st.lookups = r.epochs.Sum(kLookups);
  st.short_circuited = r.epochs.Sum(kShortCircuited);
  st.bypassed_reads = r.epochs.Sum(kBypassed);
  st.write_keys = r.epochs.Sum(kWriteKeys);
  st.liveness_reads = r.epochs.Sum(kLivenessReads);
  st.index_inserts = r.epochs.Sum(kIndexInserts);
  st.index_erases = r.epochs.Sum(kIndexErases);
  st.undone_inserts = r.epochs.Sum(kUndone);
  st.delete_range_erased = r.epochs.Sum(kRangeErased);
  st.delete_range_limit_hits = r.epochs.Sum(kRangeLimitHits);
  st.ingested_keys = r.epochs.Sum(kIngestedKeys);
  st.rebuilds = r.rebuilds.load();
  st.auto_rebuilds = r.auto_rebuilds.load();
  st.failed_rebuilds = r.failed_rebuilds.load();
  st.index_file_loads = r.file_loads.load();
  st.index_file_rejections = r.file_rejections.load();
  {
    std::lock_guard<std::mutex> l(r.reject_mu);
    st.last_rejection = r.last_rejection;
  }
  std::vector<const CfState*> fams;
  {
    std::lock_guard<std::mutex> l(r.cf_mu);
    for (auto& kv : r.cfs) fams.push_back(kv.second.get());
  }
  // swap_mu keeps every `owned` index alive and in place while described.
  std::lock_guard<std::mutex> sl(r.swap_mu);
  for (const CfState* cf : fams) {
    if (cf->dropped) continue;
    LiveKeyCfStats c;
    c.id = cf->id;
    c.name = cf->name;
    c.indexed = cf->indexed;
    c.bypass_reason = cf->bypass_reason;
    if (cf->indexed && cf->owned) cf->owned->Describe(&c);
    c.rebuild_in_progress = cf->rebuild_running.load();
    {
      std::lock_guard<std::mutex> il(cf->info_mu);
      c.loaded_from_file = cf->loaded_from_file;
      c.rebuilds = cf->rebuilds;
      c.last_rebuild_reason = cf->last_reason;
      c.last_rebuild_seconds = cf->last_seconds;
      c.last_rebuild_keys = cf->last_keys;
      c.last_rebuild_deltas = cf->last_deltas;
      c.last_rebuild_pause_micros = cf->last_pause_micros;
    }
    st.column_families.push_back(std::move(c));
  }
  return st;
}

// ---- reads -----------------------------------------------------------------------

Status LiveKeyDB::Get(const ReadOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, PinnableSlice* value) {
  if (!rep_->MayBeLive(options, column_family, key)) {
    if (value != nullptr) value->Reset();
    return Status::NotFound();
  }
  return db_->Get(options, column_family, key, value);
}

Status LiveKeyDB::Get(const ReadOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, PinnableSlice* value, std::string* timestamp) {
  rep_->epochs.Bump(kBypassed);
  return db_->Get(options, column_family, key, value, timestamp);
}

Status LiveKeyDB::GetEntity(const ReadOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, rocksdb::PinnableWideColumns* columns) {
  if (!rep_->MayBeLive(options, column_family, key)) {
    if (columns != nullptr) columns->Reset();
    return Status::NotFound();
  }
  return db_->GetEntity(options, column_family, key, columns);
}

namespace {

// maybe[i] for n keys of (possibly) different families; false = certainly
// absent. Families without an index answer "maybe".
void ProbeKeys(EpochDomain* epochs, const std::atomic<const CfTable*>& table, uint64_t seed,
               size_t n, ColumnFamilyHandle* const* cfs, const Slice* keys, bool* maybe,
               uint64_t* indexed) {
  std::vector<uint64_t> hashes(n);
  for (size_t i = 0; i < n; ++i) hashes[i] = internal::HashKey(keys[i].data(), keys[i].size(), seed);
  *indexed = 0;
  ReadSection rs(epochs);
  const CfTable* t = table.load();
  size_t i = 0;
  while (i < n) {
    // Runs of the same family use the batched probe.
    size_t j = i + 1;
    while (j < n && cfs[j] == cfs[i]) ++j;
    const CfState* cf = (t != nullptr && cfs[i] != nullptr) ? t->Find(cfs[i]->GetID()) : nullptr;
    const LiveKeyIndex* idx = cf != nullptr ? cf->active.load() : nullptr;
    if (idx == nullptr) {
      for (size_t k = i; k < j; ++k) maybe[k] = true;
    } else {
      idx->ContainsBatch(hashes.data() + i, j - i, maybe + i);
      *indexed += j - i;
    }
    i = j;
  }
}

}  // namespace

std::vector<Status> LiveKeyDB::MultiGet(const ReadOptions& options,
                                        const std::vector<ColumnFamilyHandle*>& column_family,
                                        const std::vector<Slice>& keys,
                                        std::vector<std::string>* values) {
  Rep& r = *rep_;
  const size_t n = keys.size();
  if (Rep::BypassRead(options) || column_family.size() != n || n == 0) {
    r.epochs.Bump(kBypassed, n);
    return db_->MultiGet(options, column_family, keys, values);
  }
  std::unique_ptr<bool[]> maybe(new bool[n]);
  uint64_t indexed = 0;
  ProbeKeys(&r.epochs, r.table, r.opt.dleft.seed, n, column_family.data(), keys.data(), maybe.get(),
            &indexed);
  std::vector<ColumnFamilyHandle*> sub_cf;
  std::vector<Slice> sub_keys;
  std::vector<size_t> where;
  for (size_t i = 0; i < n; ++i) {
    if (!maybe[i]) continue;
    sub_cf.push_back(column_family[i]);
    sub_keys.push_back(keys[i]);
    where.push_back(i);
  }
  r.epochs.Bump(kLookups, indexed);
  r.epochs.Bump(kShortCircuited, n - where.size());
  r.epochs.Bump(kBypassed, n - indexed);
  std::vector<Status> out(n, Status::NotFound());
  values->assign(n, std::string());
  if (where.empty()) return out;
  std::vector<std::string> sub_vals;
  std::vector<Status> sub = db_->MultiGet(options, sub_cf, sub_keys, &sub_vals);
  for (size_t j = 0; j < where.size(); ++j) {
    out[where[j]] = sub[j];
    if (j < sub_vals.size()) (*values)[where[j]] = std::move(sub_vals[j]);
  }
  return out;
}

std::vector<Status> LiveKeyDB::MultiGet(const ReadOptions& options,
                                        const std::vector<ColumnFamilyHandle*>& column_family,
                                        const std::vector<Slice>& keys,
                                        std::vector<std::string>* values,
                                        std::vector<std::string>* timestamps) {
  rep_->epochs.Bump(kBypassed, keys.size());
  return db_->MultiGet(options, column_family, keys, values, timestamps);
}

void LiveKeyDB::MultiGet(const ReadOptions& options, const size_t num_keys,
                         ColumnFamilyHandle** column_families, const Slice* keys,
                         PinnableSlice* values, Status* statuses, const bool sorted_input) {
  Rep& r = *rep_;
  if (Rep::BypassRead(options) || num_keys == 0) {
    r.epochs.Bump(kBypassed, num_keys);
    db_->MultiGet(options, num_keys, column_families, keys, values, statuses, sorted_input);
    return;
  }
  std::unique_ptr<bool[]> maybe(new bool[num_keys]);
  uint64_t indexed = 0;
  ProbeKeys(&r.epochs, r.table, r.opt.dleft.seed, num_keys, column_families, keys, maybe.get(),
            &indexed);
  std::vector<size_t> where;
  for (size_t i = 0; i < num_keys; ++i) {
    if (maybe[i]) where.push_back(i);
  }
  r.epochs.Bump(kLookups, indexed);
  r.epochs.Bump(kShortCircuited, num_keys - where.size());
  r.epochs.Bump(kBypassed, num_keys - indexed);
  if (where.size() == num_keys) {
    db_->MultiGet(options, num_keys, column_families, keys, values, statuses, sorted_input);
    return;
  }
  for (size_t i = 0; i < num_keys; ++i) {
    if (!maybe[i]) {
      values[i].Reset();
      statuses[i] = Status::NotFound();
    }
  }
  if (where.empty()) return;
  std::vector<ColumnFamilyHandle*> sub_cf;
  std::vector<Slice> sub_keys;
  for (size_t i : where) {
    sub_cf.push_back(column_families[i]);
    sub_keys.push_back(keys[i]);
  }
  std::vector<PinnableSlice> sub_vals(where.size());
  std::vector<Status> sub_st(where.size());
  db_->MultiGet(options, where.size(), sub_cf.data(), sub_keys.data(), sub_vals.data(),
                sub_st.data(), sorted_input);
  for (size_t j = 0; j < where.size(); ++j) {
    statuses[where[j]] = sub_st[j];
    values[where[j]].Reset();
    if (sub_st[j].ok()) values[where[j]].PinSelf(sub_vals[j]);
  }
}

void LiveKeyDB::MultiGet(const ReadOptions& options, ColumnFamilyHandle* column_family,
                         const size_t num_keys, const Slice* keys, PinnableSlice* values,
                         Status* statuses, const bool sorted_input) {
  std::vector<ColumnFamilyHandle*> cfs(num_keys, column_family);
  MultiGet(options, num_keys, cfs.data(), keys, values, statuses, sorted_input);
}

bool LiveKeyDB::KeyMayExist(const ReadOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, std::string* value, bool* value_found) {
  return KeyMayExist(options, column_family, key, value, nullptr, value_found);
}

bool LiveKeyDB::KeyMayExist(const ReadOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, std::string* value, std::string* timestamp,
                            bool* value_found) {
  Rep& r = *rep_;
  if (!Rep::BypassRead(options) && timestamp == nullptr && column_family != nullptr) {
    const uint64_t h = r.Hash(key);
    int verdict = -1;
    {
      ReadSection rs(&r.epochs);
      const CfTable* t = r.table.load();
      const CfState* cf = t ? t->Find(column_family->GetID()) : nullptr;
      const LiveKeyIndex* idx = cf != nullptr ? cf->active.load() : nullptr;
      if (idx != nullptr) verdict = idx->Contains(h) ? 1 : 0;
    }
    if (verdict >= 0) {
      r.epochs.Bump(kLookups);
      if (verdict == 0) {
        r.epochs.Bump(kShortCircuited);
        if (value_found != nullptr) *value_found = false;
        return false;
      }
      return db_->KeyMayExist(options, column_family, key, value, value_found);
    }
  }
  r.epochs.Bump(kBypassed);
  return db_->KeyMayExist(options, column_family, key, value, timestamp, value_found);
}

// ---- writes ------------------------------------------------------------------------

namespace {
Status TimestampOnIndexed(const ColumnFamilyHandle* h) {
  return Status::InvalidArgument("LiveKeyDB: column family '" + h->GetName() +
                                 "' is indexed and has no user-defined timestamps");
}
}  // namespace

Status LiveKeyDB::Put(const WriteOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, const Slice& value) {
  if (column_family == nullptr) return db_->Put(options, column_family, key, value);
  return rep_->Upsert(column_family, key,
                      [&] { return db_->Put(options, column_family, key, value); });
}

Status LiveKeyDB::Put(const WriteOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, const Slice& ts, const Slice& value) {
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return db_->Put(options, column_family, key, ts, value);
}

Status LiveKeyDB::PutEntity(const WriteOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, const rocksdb::WideColumns& columns) {
  if (column_family == nullptr) return db_->PutEntity(options, column_family, key, columns);
  return rep_->Upsert(column_family, key,
                      [&] { return db_->PutEntity(options, column_family, key, columns); });
}

Status LiveKeyDB::Merge(const WriteOptions& options, ColumnFamilyHandle* column_family,
                        const Slice& key, const Slice& value) {
  if (column_family == nullptr) return db_->Merge(options, column_family, key, value);
  return rep_->Upsert(column_family, key,
                      [&] { return db_->Merge(options, column_family, key, value); });
}

Status LiveKeyDB::Merge(const WriteOptions& options, ColumnFamilyHandle* column_family,
                        const Slice& key, const Slice& ts, const Slice& value) {
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return db_->Merge(options, column_family, key, ts, value);
}

Status LiveKeyDB::Delete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                         const Slice& key) {
  if (column_family == nullptr) return db_->Delete(options, column_family, key);
  return rep_->Remove(column_family, key, /*may_erase=*/true,
                      [&] { return db_->Delete(options, column_family, key); });
}

Status LiveKeyDB::Delete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                         const Slice& key, const Slice& ts) {
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return db_->Delete(options, column_family, key, ts);
}

Status LiveKeyDB::SingleDelete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                               const Slice& key) {
  if (column_family == nullptr) return db_->SingleDelete(options, column_family, key);
  return rep_->Remove(column_family, key, rep_->opt.trust_single_delete,
                      [&] { return db_->SingleDelete(options, column_family, key); });
}

Status LiveKeyDB::SingleDelete(const WriteOptions& options, ColumnFamilyHandle* column_family,
                               const Slice& key, const Slice& ts) {
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return db_->SingleDelete(options, column_family, key, ts);
}

Status LiveKeyDB::DeleteRange(const WriteOptions& options, ColumnFamilyHandle* column_family,
                              const Slice& begin_key, const Slice& end_key) {
  if (rep_->Lookup(column_family) == nullptr) {
    return db_->DeleteRange(options, column_family, begin_key, end_key);
  }
  WriteBatch batch;
  Status s = batch.DeleteRange(column_family, begin_key, end_key);
  if (!s.ok()) return s;
  return rep_->WriteBatchImpl(options, &batch);
}

Status LiveKeyDB::DeleteRange(const WriteOptions& options, ColumnFamilyHandle* column_family,
                              const Slice& begin_key, const Slice& end_key, const Slice& ts) {
  if (rep_->Lookup(column_family) != nullptr) return TimestampOnIndexed(column_family);
  return db_->DeleteRange(options, column_family, begin_key, end_key, ts);
}

Status LiveKeyDB::Write(const WriteOptions& options, WriteBatch* updates) {
  if (updates == nullptr) return db_->Write(options, updates);
  return rep_->WriteBatchImpl(options, updates);
}

Status LiveKeyDB::IngestExternalFile(ColumnFamilyHandle* column_family,
                                     const std::vector<std::string>& external_files,
                                     const rocksdb::IngestExternalFileOptions& options) {
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = column_family;
  arg.external_files = external_files;
  arg.options = options;
  return rep_->Ingest({arg});
}

Status LiveKeyDB::IngestExternalFiles(const std::vector<rocksdb::IngestExternalFileArg>& args) {
  return rep_->Ingest(args);
}

// ---- column families -------------------------------------------------------------

Status LiveKeyDB::CreateColumnFamilyWithImport(const rocksdb::ColumnFamilyOptions& options,
                                               const std::string& column_family_name,
                                               const rocksdb::ImportColumnFamilyOptions& import_options,
                                               const rocksdb::ExportImportFilesMetaData& metadata,
                                               ColumnFamilyHandle** handle) {
  Status s = db_->CreateColumnFamilyWithImport(options, column_family_name, import_options,
                                               metadata, handle);
  if (!s.ok()) return s;
  CfState* cf = nullptr;
  {
    std::lock_guard<std::mutex> l(rep_->cf_mu);
    cf = rep_->AddFamily(*handle);
  }
  if (cf->indexed) {
    // Nobody else has the handle yet: build the index before publishing.
    s = rep_->Rebuild(cf, "imported column family", /*automatic=*/false);
    if (!s.ok()) {
      cf->indexed = false;
      cf->bypass_reason = "index build after import failed: " + s.ToString();
    }
  }
  std::lock_guard<std::mutex> l(rep_->cf_mu);
  rep_->PublishTableLocked();
  return s;
}

Status LiveKeyDB::CreateColumnFamily(const rocksdb::ColumnFamilyOptions& options,
                                     const std::string& column_family_name,
                                     ColumnFamilyHandle** handle) {
  Status s = db_->CreateColumnFamily(options, column_family_name, handle);
  if (!s.ok()) return s;
  return rep_->RegisterNew({*handle});
}

Status LiveKeyDB::CreateColumnFamilies(const rocksdb::ColumnFamilyOptions& options,
                                       const std::vector<std::string>& column_family_names,
                                       std::vector<ColumnFamilyHandle*>* handles) {
  Status s = db_->CreateColumnFamilies(options, column_family_names, handles);
  Status r = rep_->RegisterNew(*handles);  // those created before a failure too
  return s.ok() ? r : s;
}

Status LiveKeyDB::CreateColumnFamilies(const std::vector<ColumnFamilyDescriptor>& column_families,
                                       std::vector<ColumnFamilyHandle*>* handles) {
  Status s = db_->CreateColumnFamilies(column_families, handles);
  Status r = rep_->RegisterNew(*handles);
  return s.ok() ? r : s;
}

Status LiveKeyDB::DropColumnFamily(ColumnFamilyHandle* column_family) {
  Rep& r = *rep_;
  CfState* cf = column_family != nullptr ? r.FindState(column_family->GetID()) : nullptr;
  if (cf == nullptr || cf->dropped) return db_->DropColumnFamily(column_family);
  std::unique_ptr<LiveKeyIndex> retired;
  Status s;
  {
    std::lock_guard<std::mutex> rl(r.rebuild_mu);
    r.LockAll();
    s = db_->DropColumnFamily(column_family);
    if (s.ok()) {
      std::lock_guard<std::mutex> sl(r.swap_mu);
      cf->dropped = true;
      retired = std::move(cf->owned);
      cf->active.store(nullptr);
    }
    r.UnlockAll();
  }
  if (s.ok()) {
    std::lock_guard<std::mutex> l(r.cf_mu);
    r.PublishTableLocked();  // waits for readers of the old table
  }
  if (retired) {
    r.epochs.Synchronize();
    retired.reset();
  }
  return s;
}

Status LiveKeyDB::DropColumnFamilies(const std::vector<ColumnFamilyHandle*>& column_families) {
  for (ColumnFamilyHandle* h : column_families) {
    Status s = DropColumnFamily(h);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status LiveKeyDB::DestroyColumnFamilyHandle(ColumnFamilyHandle* column_family) {
  Rep& r = *rep_;
  if (column_family != nullptr && !r.closed) {
    std::lock_guard<std::mutex> l(r.cf_mu);
    auto it = r.cfs.find(column_family->GetID());
    if (it != r.cfs.end() && it->second->handle == column_family) {
      it->second->handle_released = true;  // destroyed at Close
      return Status::OK();
    }
  }
  return db_->DestroyColumnFamilyHandle(column_family);
}

}  // namespace dlcbf
