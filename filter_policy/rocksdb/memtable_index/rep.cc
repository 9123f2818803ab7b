// The memtable index rep: a MemTableRep decorator that keeps an elastic
// dlCBF over the user keys of its memtable and answers Get for absent keys
// without searching the base rep; reader reclamation and counters.
//
// Design note
//   Index. One ElasticFilter (thread_safe) per memtable. Three kernels
//   (MemTableIndexOptions::fast_kernel, dense_kernel):
//
//   Fast kernel (the default; id field "fast"): FastDLeftFilter with D = 2
//   (filter_policy/core/fast_dleft_filter.cc): every candidate bucket of a
//   key lies in one 64-byte block, so a probe reads one line (plus a spare
//   line for the few spill-flagged (block, bucket) pairs). 16-bit cells (13-bit remainder, 2-bit
//   counter, 1 metadata bit) and a 1/8 spare area, sized at 75 % load:
//   18 / 0.75 = 24 bits (3 bytes) per expected key, FPR at sizing
//   32 a / (4 * 8191) (Bonomi et al., Claim 3). It overflows only
//   above the kernel's MaxLoad (0.80; a spare line pair full). Lookups stay
//   lock-free: the kernel's thread-safe readers validate a negative against
//   a per-stripe sequence number, so a relocation or spill of another key
//   never hides an indexed one (tests/fast_dleft_filter_test.cc, with a
//   negative control).
//
//   Dense kernel (id field "dense"): DenseDLeftFilter, 16-bit remainders,
//   d = 2 (filter_policy/core/dense_dleft_filter.cc): variable-occupancy
//   buckets in 64-byte blocks, 512 / (28 * 0.75) = 24.4 bits per expected
//   key, FPR at sizing 2 * 0.75 * 28 / (36 * 65535) = 0.0018 %; a probe
//   reads two lines (requested together). Not the default: at equal memory
//   the fast kernel's one-line probe is cheaper, and its 0.073 % already
//   costs under a nanosecond of skiplist search per negative Get on
//   average. Its lock-free readers validate negatives against the stripes
//   of both candidate blocks (tests/dense_dleft_filter_test.cc, with a
//   negative control). It migrates in one go, on overflow (~1.3x sizing).
//   Its 8-bit class (id field "dense8") is sized at 85 % of 48 slots:
//   512 / (48 * 0.85) = 12.5 bits per expected key, FPR at sizing
//   2 * 0.85 * 48 / (80 * 255) = 0.40 %, overflow at ~1.16x the sizing:
//   half the fast kernel's memory, for a 5x higher FPR than the fast
//   kernel's. Each false positive costs a skiplist search, so on
//   memtable_index_bench's missing-key reads the 8-bit class runs about
//   10 % behind the fast kernel where the 16-bit one runs level with it
//   (this folder's README has the figures).
//
//   General kernel (id field "general", or any d/L/r field): a dlCBF with
//   d = 2 subtables, L = 3 cells per bucket, r = 14 remainder bits and c = 1
//   counter bit (the elastic filter needs c >= 1; we never erase), sized at
//   75 % load: 15 / 0.75 = 20 bits (2.5 bytes) per expected key, FPR
//   d L 0.75 / (2^r - 1) at sizing. Why
//   not the paper's d = 4, L = 8: 5x the FPR in the same bits and twice the
//   bucket probes; its better load balance matters for deletions, which a
//   memtable index never sees. With breadth-first relocation d = 2, L = 3
//   still fills to ~94 % before an insert overflows, and a 45-bit bucket is
//   matched in one SWAR step (L = 4 needs two).
//
//   The trade-off chosen for the default: the fast kernel's probe reads
//   one line instead of two buckets in two lines
//   (tools/bench/memtable_index_bench prints the kernels' probe costs side
//   by side; the measured figures are in README.md and this folder's
//   README), for 24 / 20 = 1.2x the bytes and ~2.7x the FPR (the ratio of
//   the two formulas above at a = 0.75). A false positive (one base-rep search)
//   costs on average less than the probe time saved. Example:
//   expected_entries = 1,000,000 -> 3 MB, 4.7 % of a 64 MiB write buffer
//   of ~64-byte entries.
//
//   Drift. The general kernel overflows at ~94 % cell load (~1.26x the
//   sizing) and then migrates in one go on that writer (53 ms at 1M keys).
//   The fast kernel starts an incremental migration at its MaxLoad (80 % of
//   the cells, 1.07x the sizing): each insert copies one group of 16
//   blocks into the ABF being built aside (ElasticOptions::
//   incremental_migration; worst insert 143 us at 1M keys) and the ABF is
//   published after blocks / 16 + ABF bytes / 16 KiB inserts; Get keeps
//   using the complete dlCBF until then. Either way the ABF has 1-bit
//   cells in the same bytes (insert-only, so a plain lossless Bloom filter:
//   Θ = 0, T = k), k chosen for abf_growth = 4 x the keys at migration:
//   general k = round(ln2 * 20 E / (4 * 1.26 E)) = 3; fast k = round(ln2 *
//   24 E / (4 * ~1.07-1.2 E)) = 3 or 4 (Stats().abf_probes reports it).
//   Predicted FPR at 10x the sizing, 1 - (1 - n / (B Rn)) (1 - (1 -
//   e^{-kn/m})^k): general 0.47, fast 0.37 (its 1.2x bytes; measured
//   0.46-0.47 and 0.36-0.37), against 0.71-0.75 measured for RocksDB's
//   memtable Bloom in the same bytes.
//
//   Memory after migration. The ElasticFilter keeps the frozen dlCBF for
//   lock-free readers that may still be inside it. This rep reclaims it
//   with the grace periods of common/reader_sections.h (readers announce
//   themselves in a thread-local slot while the filter may be a dlCBF; the
//   migrating writer frees the dlCBF once every reader that was inside has
//   left, else retries every 256 inserts and at MarkReadOnly/MarkFlushed),
//   so the index returns to its budget soon after the migration.
//   ApproximateMemoryUsage() counts the retained bytes while they exist.
//
//   Ordering. Each insert variant decodes the user key from the entry
//   (varint32 internal-key length, user key, 8-byte tag), strips the
//   timestamp, inserts its hash into the index, and only then calls the base
//   rep's insert, which makes the entry visible. MemTable readers obtain
//   their snapshot after the writer published the sequence number, which
//   happens after the rep insert, so a reader that may see the entry sees
//   the index insert too (the ElasticFilter's own readers are lock-free and
//   never miss a key whose Insert happened-before, also across migration).
//   Failure to index (ABF allocation during migration) turns the index off
//   (release store) before the entry is inserted: Get then always delegates.
//
//   Dedupe. 1024 slots of the last inserted 64-bit hashes per filter. A
//   slot holding h proves that InsertHash(h) completed (stored with release
//   after it); since the index never erases, ContainsHash(h) stays true, and
//   equal hashes are indistinguishable to the filter anyway, so the insert
//   can be skipped without taking the filter's writer lock (overwrites of
//   hot keys, prefixes of clustered keys). 8 KiB per filter.
//
//   Costs. Insert: one XXH3 of the user key, one dedupe probe, the
//   filter's locked insert. Get: one TLS access, one XXH3 and a lock-free
//   filter probe (fast kernel: one line; general: 2 buckets in up to two
//   lines; after migration k = 3-4 bits). The built-in Bloom costs one
//   hash and one line, so at equal memory a readmissing Get is about as
//   fast as with the built-in Bloom when its FPR is fine (well-mixed keys)
//   -- and much faster when it is not (drift, clustered keys);
//   tools/bench/memtable_index_bench measures both, and both kernels alone
//   (KERNELPROBE lines).
//   "Maybe" adds a callback trampoline that counts false positives (one
//   memcmp per visited entry). Counters: common/striped_counters.h.
#include "dlcbf/rocksdb/memtable_index.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>

#include "filter_policy/rocksdb/abi/memtable_abi.h"
#include "filter_policy/rocksdb/common/reader_sections.h"
#include "filter_policy/rocksdb/common/striped_counters.h"
#include "filter_policy/rocksdb/memtable_index/memtable_index_internal.h"
#include "filter_policy/rocksdb/common/status_conversion.h"
#include "rocksdb/comparator.h"
#include "rocksdb/convenience.h"
#include "rocksdb/env.h"
#include "rocksdb/slice_transform.h"

namespace dlcbf {
namespace memtable_index {


ElasticOptions IndexFilterOptions(const MemTableIndexOptions& o, uint64_t entries) {
  ElasticOptions eo;
  if (o.dense_kernel) {
    eo.kernel = ElasticKernel::kDense;
    eo.dense.remainder_bits = o.dense_remainder_bits;
  } else if (o.fast_kernel) {
    eo.kernel = ElasticKernel::kFast;
    eo.fast.subtables = 2;
  } else {
    eo.kernel = ElasticKernel::kGeneral;
    eo.dleft.subtables = o.subtables;
    eo.dleft.cells_per_bucket = o.cells_per_bucket;
    eo.dleft.remainder_bits = o.remainder_bits;
    eo.dleft.counter_bits = kCounterBits;
  }
  eo.expected_items = entries;
  eo.sizing_load = o.dense_kernel && o.dense_remainder_bits == 8 ? kDense8SizingLoad : kSizingLoad;
  eo.migrate_at_load = 0;   // only when an insert overflows (or the fast kernel's steps)
  eo.abf_counter_bits = 1;  // insert-only: a plain (lossless) Bloom filter
  eo.abf_growth = o.abf_growth;
  eo.thread_safe = true;
  return eo;
}

namespace {

// Reclaiming the frozen dlCBF after a migration: the ElasticFilter keeps
// the dlCBF because a lock-free reader that loaded the "no ABF yet" pointer
// may still be inside it; ReleaseRetired() runs once a grace period of
// common/reader_sections.h has passed. Readers enter a read section only
// while the filter may still be a dlCBF (afterwards they read the ABF).
using reclaim::ReaderSlot;

enum Counter : size_t {
  kEntries = 0,
  kIndexInserts,
  kSkipped,
  kDelegated,
  kFalsePositives,
  kPrefixInserts,
  kPrefixSeeks,
  kPrefixSkipped,
  kNumCounters
};

using Counters = StripedCounters<kNumCounters, 32>;

// One ElasticFilter plus its dedupe cache.
struct IndexFilter {
  std::unique_ptr<ElasticFilter> filter;
  std::unique_ptr<std::atomic<uint64_t>[]> recent;
  std::atomic<bool> migration_seen{false};
  std::atomic<bool> steps_seen{false};       // incremental migration began
  std::atomic<bool> reclaim_pending{false};  // migrated, dlCBF still held
  std::atomic<bool> reclaimed{false};        // dlCBF freed: no announcing
  std::atomic<bool> reclaiming{false};       // one writer at a time
  std::atomic<uint64_t> reclaim_tick{0};
  std::atomic<uint64_t> bytes{0};  // filter + retained + cache
  uint64_t sized_for = 0;

  // Lock-free membership test with the reader announcement (see above).
  bool Contains(ReaderSlot* t, const Slice& key) const {
    // Only a reader that may still take the dlCBF path announces itself.
    // migration_seen is set (release) by the writer that observed the ABF
    // published; a reader that sees it reads the ABF only (the pointer never
    // goes back). So after a migration the announcing readers are just the
    // few already in flight, and the reclamation is not starved by a steady
    // stream of readers.
    if (migration_seen.load(std::memory_order_acquire)) return filter->Contains(glue::View(key));
    reclaim::ReadSection section(t);
    return filter->Contains(glue::View(key));
  }
};

// Context of a delegated Get: forwards every entry to RocksDB's callback and
// notes whether one carried the looked-up user key (false-positive count).
struct GetProbe {
  void* args;
  bool (*callback)(void*, const char*);
  Slice user_key;  // timestamp stripped
  size_t ts_size;
  bool matched;

  static bool Call(void* arg, const char* entry) {
    GetProbe* p = static_cast<GetProbe*>(arg);
    if (!p->matched) {
      Slice uk;
      if (internal::UserKeyOfMemTableKey(entry, &uk) && uk.size() >= p->ts_size) {
        uk.remove_suffix(p->ts_size);
        if (uk == p->user_key) p->matched = true;
      }
    }
    return p->callback(p->args, entry);
  }
};

}  // namespace

class IndexedRep final : public MemTableRep {
 public:
  IndexedRep(std::unique_ptr<MemTableRep> base, bool identity_handles,
             const MemTableRep::KeyComparator& key_cmp, Allocator* allocator,
             const SliceTransform* transform, Logger* logger, uint32_t cf_id,
             const MemTableIndexOptions& options, std::shared_ptr<FactoryState> state)
      : MemTableRep(allocator),
        base_(std::move(base)),
        identity_handles_(identity_handles),
        transform_(transform),
        logger_(logger),
        cf_id_(cf_id),
        options_(options),
        state_(std::move(state)) {
    const char* why = Setup(key_cmp, allocator);
    if (why != nullptr) {
      bypass_reason_.store(why, std::memory_order_relaxed);
      active_.store(false, std::memory_order_release);
      if (logger_ != nullptr) {
        rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, logger_,
                     "[dlcbf_index] cf %" PRIu32 ": memtable index bypassed: %s", cf_id_, why);
      }
    } else {
      active_.store(true, std::memory_order_release);
    }
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->live.insert(this);
    ++state_->created;
    if (!active_.load(std::memory_order_relaxed)) ++state_->bypassed;
  }

  ~IndexedRep() override {
    // First, so a concurrent GetMemTableIndexStats never sees a half-dead rep.
    MemTableIndexStats s = Stats();
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->live.erase(this);
    AddCounters(&state_->folded, s);
  }

  // --- allocation and inserts ----------------------------------------------
  KeyHandle Allocate(const size_t len, char** buf) override {
    if (identity_handles_) return base_->Allocate(len, buf);
    // The base's handle is not its buffer: remember both in the arena.
    char* mem = allocator_->AllocateAligned(sizeof(HandleNode));
    HandleNode* node = new (mem) HandleNode();
    node->base_handle = base_->Allocate(len, buf);
    node->entry = *buf;
    return node;
  }

  void Insert(KeyHandle handle) override {
    base_->Insert(Index(handle));
  }
  bool InsertKey(KeyHandle handle) override {
    return base_->InsertKey(Index(handle));
  }
  void InsertWithHint(KeyHandle handle, void** hint) override {
    base_->InsertWithHint(Index(handle), hint);
  }
  bool InsertKeyWithHint(KeyHandle handle, void** hint) override {
    return base_->InsertKeyWithHint(Index(handle), hint);
  }
  void InsertWithHintConcurrently(KeyHandle handle, void** hint) override {
    base_->InsertWithHintConcurrently(Index(handle), hint);
  }
  bool InsertKeyWithHintConcurrently(KeyHandle handle, void** hint) override {
    return base_->InsertKeyWithHintConcurrently(Index(handle), hint);
  }
  void InsertConcurrently(KeyHandle handle) override {
    base_->InsertConcurrently(Index(handle));
  }
  bool InsertKeyConcurrently(KeyHandle handle) override {
    return base_->InsertKeyConcurrently(Index(handle));
  }

  // --- reads -----------------------------------------------------------------
  bool Contains(const char* key) const override { return base_->Contains(key); }

  void Get(const rocksdb::LookupKey& k, void* callback_args,
           bool (*callback_func)(void* arg, const char* entry)) override {
    ReaderSlot* t = reclaim::MySlot();
    if (active_.load(std::memory_order_acquire)) {
      Slice ukey;
      const char* mkey = internal::MemTableKeyOfLookupKey(k);
      if (mkey != nullptr && internal::UserKeyOfMemTableKey(mkey, &ukey) &&
          ukey.size() >= ts_size_) {
        ukey.remove_suffix(ts_size_);
        bool consulted = true;
        bool maybe = true;
        if (keys_.filter != nullptr) {
          maybe = keys_.Contains(t, ukey);
        } else if (transform_->InDomain(ukey)) {
          maybe = prefixes_.Contains(t, transform_->Transform(ukey));
        } else {
          consulted = false;
        }
        if (!maybe) {
          counters_.Add(t, kSkipped);
          return;
        }
        counters_.Add(t, kDelegated);
        if (consulted) {
          GetProbe probe{callback_args, callback_func, ukey, ts_size_, false};
          base_->Get(k, &probe, &GetProbe::Call);
          if (!probe.matched) counters_.Add(t, kFalsePositives);
          return;
        }
        base_->Get(k, callback_args, callback_func);
        return;
      }
    }
    counters_.Add(t, kDelegated);
    base_->Get(k, callback_args, callback_func);
  }

  uint64_t ApproximateNumEntries(const Slice& start_ikey, const Slice& end_key) override {
    return base_->ApproximateNumEntries(start_ikey, end_key);
  }

  void UniqueRandomSample(const uint64_t num_entries, const uint64_t target_sample_size,
                          std::unordered_set<const char*>* entries) override {
    base_->UniqueRandomSample(num_entries, target_sample_size, entries);
  }

  MemTableRep::Iterator* GetIterator(rocksdb::Arena* arena) override {
    return base_->GetIterator(arena);
  }

  MemTableRep::Iterator* GetDynamicPrefixIterator(rocksdb::Arena* arena) override;

  bool IsMergeOperatorSupported() const override { return base_->IsMergeOperatorSupported(); }
  bool IsSnapshotSupported() const override { return base_->IsSnapshotSupported(); }

  // --- lifecycle -----------------------------------------------------------
  void MarkReadOnly() override {
    base_->MarkReadOnly();
    TryReclaim(&keys_);
    TryReclaim(&prefixes_);
  }

  void MarkFlushed() override {
    base_->MarkFlushed();
    TryReclaim(&keys_);
    TryReclaim(&prefixes_);
    if (logger_ != nullptr) {
      const std::string line = Stats().ToString();
      rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, logger_,
                   "[dlcbf_index] cf %" PRIu32 ": memtable flushed: %s", cf_id_, line.c_str());
    }
  }

  size_t ApproximateMemoryUsage() override {
    return base_->ApproximateMemoryUsage() +
           static_cast<size_t>(keys_.bytes.load(std::memory_order_relaxed) +
                               prefixes_.bytes.load(std::memory_order_relaxed));
  }

  // --- statistics ----------------------------------------------------------
  MemTableIndexStats Stats() const {
    MemTableIndexStats s;
    s.active = active_.load(std::memory_order_acquire);
    const char* why = bypass_reason_.load(std::memory_order_acquire);
    if (why != nullptr) s.bypass_reason = why;
    s.column_family_id = cf_id_;
    s.timestamp_size = ts_size_;
    s.capped = capped_;
    s.entries = counters_.Sum(kEntries);
    s.index_inserts = counters_.Sum(kIndexInserts);
    s.skipped_searches = counters_.Sum(kSkipped);
    s.delegated = counters_.Sum(kDelegated);
    s.gets = s.skipped_searches + s.delegated;
    s.false_positives = counters_.Sum(kFalsePositives);
    s.prefix_inserts = counters_.Sum(kPrefixInserts);
    s.prefix_seeks = counters_.Sum(kPrefixSeeks);
    s.prefix_seeks_skipped = counters_.Sum(kPrefixSkipped);
    s.index_bytes = keys_.bytes.load(std::memory_order_relaxed) +
                    prefixes_.bytes.load(std::memory_order_relaxed);
    const IndexFilter* main = keys_.filter != nullptr ? &keys_ : &prefixes_;
    if (main->filter != nullptr) {
      const ElasticStats es = main->filter->Stats();
      s.mode = es.mode;
      s.migration_cause = es.migration_cause;
      s.migrations = es.mode == ElasticMode::kAutoscaling ? 1 : 0;
      s.sized_for = main->sized_for;
      s.predicted_fpr = es.predicted_fpr;
      s.retained_bytes = es.retained_bytes;
      s.fast_kernel = options_.fast_kernel && !options_.dense_kernel;
      s.dense_kernel = options_.dense_kernel;
      s.dense_remainder_bits = options_.dense_kernel ? options_.dense_remainder_bits : 0;
      if (es.mode == ElasticMode::kAutoscaling) s.abf_probes = es.abf.counting.num_probes;
      s.migrated_items = es.migrated_items;
    }
    if (prefixes_.filter != nullptr) {
      s.prefixes_indexed = true;
      const ElasticStats ps = prefixes_.filter->Stats();
      s.prefix_mode = ps.mode;
      s.prefix_predicted_fpr = ps.predicted_fpr;
      if (keys_.filter != nullptr) {
        s.retained_bytes += ps.retained_bytes;
        s.migrations += ps.mode == ElasticMode::kAutoscaling ? 1 : 0;
      }
    }
    return s;
  }

  // Used by the prefix iterator: may an entry with this key's prefix exist?
  bool PrefixMayExist(const Slice& internal_key, const char* memtable_key) {
    if (!active_.load(std::memory_order_acquire)) return true;
    Slice ukey;
    if (memtable_key != nullptr) {
      if (!internal::UserKeyOfMemTableKey(memtable_key, &ukey)) return true;
    } else {
      if (internal_key.size() < 8) return true;
      ukey = Slice(internal_key.data(), internal_key.size() - 8);
    }
    if (ukey.size() < ts_size_) return true;
    ukey.remove_suffix(ts_size_);
    if (!transform_->InDomain(ukey)) return true;
    ReaderSlot* t = reclaim::MySlot();
    counters_.Add(t, kPrefixSeeks);
    if (prefixes_.Contains(t, transform_->Transform(ukey))) return true;
    counters_.Add(t, kPrefixSkipped);
    return false;
  }

 private:
  struct HandleNode {
    KeyHandle base_handle = nullptr;
    const char* entry = nullptr;
  };

  const char* EntryOf(KeyHandle handle) const {
    return identity_handles_ ? static_cast<const char*>(handle)
                             : static_cast<const HandleNode*>(handle)->entry;
  }
  KeyHandle BaseHandle(KeyHandle handle) const {
    return identity_handles_ ? handle : static_cast<HandleNode*>(handle)->base_handle;
  }

  // Indexes the entry behind `handle`; returns the base's handle. Runs
  // before the base insert (see the design note).
  KeyHandle Index(KeyHandle handle) {
    counters_.Add(kEntries);
    if (active_.load(std::memory_order_relaxed)) {
      Slice ukey;
      if (!internal::UserKeyOfMemTableKey(EntryOf(handle), &ukey) || ukey.size() < ts_size_) {
        Disable("an entry could not be decoded");
      } else {
        ukey.remove_suffix(ts_size_);
        if (keys_.filter != nullptr && AddTo(&keys_, ukey)) counters_.Add(kIndexInserts);
        if (prefixes_.filter != nullptr && transform_->InDomain(ukey) &&
            AddTo(&prefixes_, transform_->Transform(ukey))) {
          counters_.Add(kPrefixInserts);
        }
      }
    }
    return BaseHandle(handle);
  }

  // True if the filter was updated, false if the dedupe cache proved the
  // hash present (or the index was disabled).
  bool AddTo(IndexFilter* f, const Slice& key) {
    const uint64_t h = f->filter->Hash(glue::View(key));
    std::atomic<uint64_t>* slot = h != 0 ? &f->recent[h & (kRecentSlots - 1)] : nullptr;
    if (slot != nullptr && slot->load(std::memory_order_acquire) == h) return false;
    if (f->filter->InsertHash(h) != OpResult::kOk) {
      Disable("the index could not grow (allocation failed during migration)");
      return false;
    }
    if (slot != nullptr) slot->store(h, std::memory_order_release);
    if (!f->steps_seen.load(std::memory_order_relaxed) && f->filter->migrating() &&
        !f->steps_seen.exchange(true, std::memory_order_acq_rel)) {
      // The ABF being filled aside is memory of this memtable too.
      const ElasticFilter::Memory mem = f->filter->MemoryUsage();
      f->bytes.store(mem.bytes + mem.retained_bytes + kRecentSlots * sizeof(uint64_t),
                     std::memory_order_relaxed);
    }
    if (!f->migration_seen.load(std::memory_order_relaxed) &&
        f->filter->mode() == ElasticMode::kAutoscaling &&
        !f->migration_seen.exchange(true, std::memory_order_acq_rel)) {
      OnMigration(f);
    } else if (f->reclaim_pending.load(std::memory_order_relaxed) &&
               (f->reclaim_tick.fetch_add(1, std::memory_order_relaxed) & 255) == 255) {
      TryReclaim(f);  // a reader was still inside at the last attempt
    }
    return true;
  }

  // Frees the frozen dlCBF once no reader can be inside it.
  void TryReclaim(IndexFilter* f) {
    if (!f->reclaim_pending.load(std::memory_order_acquire)) return;
    if (f->reclaiming.exchange(true, std::memory_order_acquire)) return;
    // A reader that announces itself after Start() also loads the
    // published ABF pointer after it, so it never enters the dlCBF. The
    // readers found inside were already in flight; give them a moment (one
    // Contains call each) before deferring to a later attempt.
    bool clear = false;
    reclaim::GracePeriod grace;
    grace.Start();
    for (int round = 0; round < 64; ++round) {
      if (grace.Done()) {
        clear = true;
        break;
      }
      std::this_thread::yield();
    }
    if (clear) {
      f->filter->ReleaseRetired();
      const ElasticFilter::Memory mem = f->filter->MemoryUsage();
      f->bytes.store(mem.bytes + mem.retained_bytes + kRecentSlots * sizeof(uint64_t),
                     std::memory_order_relaxed);
      f->reclaimed.store(true, std::memory_order_release);
      f->reclaim_pending.store(false, std::memory_order_release);
    }
    f->reclaiming.store(false, std::memory_order_release);
  }

  void OnMigration(IndexFilter* f) {
    const ElasticStats es = f->filter->Stats();
    f->bytes.store(es.bytes + es.retained_bytes + kRecentSlots * sizeof(uint64_t),
                   std::memory_order_relaxed);
    if (es.retained_bytes > 0) {
      f->reclaim_pending.store(true, std::memory_order_release);
      TryReclaim(f);
    }
    if (logger_ != nullptr) {
      rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, logger_,
                   "[dlcbf_index] cf %" PRIu32 ": %s index sized for %" PRIu64
                   " entries migrated (%s) at insert %" PRIu64 " to autoscaling Bloom:"
                   " %" PRIu64 " fingerprints, %" PRIu64 " bytes (+%" PRIu64
                   " retained), predicted_fpr=%.4g",
                   cf_id_, f == &keys_ ? "key" : "prefix", f->sized_for,
                   dlcbf::ToString(es.migration_cause), es.migrated_at_insert,
                   es.migrated_fingerprints, es.bytes, es.retained_bytes, es.predicted_fpr);
    }
  }

  void Disable(const char* why) {
    const char* expected = nullptr;
    bypass_reason_.compare_exchange_strong(expected, why, std::memory_order_acq_rel);
    active_.store(false, std::memory_order_release);
  }

  // Decides whether the index can be used and builds it. nullptr = OK,
  // else the reason to bypass.
  const char* Setup(const MemTableRep::KeyComparator& key_cmp, Allocator* allocator) {
    const rocksdb::Comparator* ucmp = internal::UserComparatorOfMemTable(key_cmp);
    if (ucmp != nullptr) {
      ts_size_ = ucmp->timestamp_size();
      if (ucmp->CanKeysWithDifferentByteContentsBeEqual() && !options_.trust_comparator &&
          !IsBuiltinU64TsComparator(ucmp)) {
        return "the user comparator may treat keys with different bytes as equal "
               "(CanKeysWithDifferentByteContentsBeEqual); set trust_comparator to override";
      }
    } else if (options_.assume_timestamp_size >= 0) {
      ts_size_ = static_cast<size_t>(options_.assume_timestamp_size);
    } else {
      return "the memtable's user comparator (timestamp size) could not be identified; "
             "set assume_timestamp_size to override";
    }

    const bool want_prefixes = options_.prefixes && transform_ != nullptr;
    if (!options_.whole_keys && !want_prefixes) {
      return "prefix_only index without a prefix_extractor";
    }

    // Sizing: bits per entry at the sizing load, capped by the write buffer
    // estimate (8 x arena block size while that is < 1 MiB).
    // Fast kernel: 512 bits per block of 32 cells, plus one spare line per
    // 8 blocks, at the sizing load.
    // Dense kernel: 512 bits per block of 28 slots at the sizing load, or
    // of 48 slots at kDense8SizingLoad (8-bit class).
    const double dense_bits_per_entry = options_.dense_remainder_bits == 8 ? 512.0 / (48.0 * kDense8SizingLoad)
                                                                           : 512.0 / (28.0 * kSizingLoad);
    const double bits_per_entry = options_.dense_kernel  ? dense_bits_per_entry
                                  : options_.fast_kernel ? 512.0 * (1.0 + 1.0 / 8.0) / (32.0 * kSizingLoad)
                                                         : (options_.remainder_bits + kCounterBits) / kSizingLoad;
    uint64_t key_entries = options_.expected_entries;
    if (options_.budget_bytes > 0) {
      key_entries = std::max<uint64_t>(
          1, static_cast<uint64_t>(static_cast<double>(options_.budget_bytes) * 8.0 /
                                   bits_per_entry));
    }
    uint64_t prefix_entries =
        options_.expected_prefixes > 0
            ? options_.expected_prefixes
            : std::max<uint64_t>(1024, (options_.whole_keys ? key_entries : 4 * key_entries) / 4);
    const size_t block = allocator != nullptr ? allocator->BlockSize() : 0;
    if (block > 0 && block < (size_t{1} << 20)) {
      const double cap_bytes = options_.max_write_buffer_fraction * 8.0 * static_cast<double>(block);
      const double want_bytes =
          ((options_.whole_keys ? key_entries : 0) + (want_prefixes ? prefix_entries : 0)) *
          bits_per_entry / 8.0;
      if (want_bytes > cap_bytes) {
        const double scale = cap_bytes / want_bytes;
        key_entries = std::max<uint64_t>(1, static_cast<uint64_t>(key_entries * scale));
        prefix_entries = std::max<uint64_t>(1, static_cast<uint64_t>(prefix_entries * scale));
        capped_ = true;
      }
    }
    if (options_.whole_keys) {
      if (!MakeFilter(key_entries, &keys_)) return "the key index could not be allocated";
    }
    if (want_prefixes) {
      if (!MakeFilter(prefix_entries, &prefixes_)) return "the prefix index could not be allocated";
    }
    return nullptr;
  }

  bool MakeFilter(uint64_t entries, IndexFilter* f) {
    std::unique_ptr<ElasticFilter> filter;
    if (!ElasticFilter::Create(IndexFilterOptions(options_, entries), &filter).ok()) return false;
    std::unique_ptr<std::atomic<uint64_t>[]> recent(
        new (std::nothrow) std::atomic<uint64_t>[kRecentSlots]);
    if (!recent) return false;
    for (size_t i = 0; i < kRecentSlots; ++i) recent[i].store(0, std::memory_order_relaxed);
    const ElasticFilter::Memory mem = filter->MemoryUsage();  // O(1): not Stats()
    f->filter = std::move(filter);
    f->recent = std::move(recent);
    f->sized_for = entries;
    f->bytes.store(mem.bytes + kRecentSlots * sizeof(uint64_t), std::memory_order_relaxed);
    return true;
  }

  static bool IsBuiltinU64TsComparator(const rocksdb::Comparator* ucmp) {
    static const rocksdb::Comparator* const u64ts = [] {
      const rocksdb::Comparator* c = nullptr;
      rocksdb::ConfigOptions cfg;
      const std::string name = std::string(rocksdb::BytewiseComparator()->Name()) + ".u64ts";
      if (!rocksdb::Comparator::CreateFromString(cfg, name, &c).ok()) c = nullptr;
      return c;
    }();
    return u64ts != nullptr && ucmp == u64ts;
  }

  const std::unique_ptr<MemTableRep> base_;
  const bool identity_handles_;
  const SliceTransform* const transform_;
  Logger* const logger_;
  const uint32_t cf_id_;
  const MemTableIndexOptions options_;
  const std::shared_ptr<FactoryState> state_;

  size_t ts_size_ = 0;
  bool capped_ = false;
  IndexFilter keys_;
  IndexFilter prefixes_;
  std::atomic<bool> active_{false};
  std::atomic<const char*> bypass_reason_{nullptr};
  mutable Counters counters_;
};

// Dynamic-prefix iterator: Seek/SeekForPrev to a target whose prefix no
// entry has is answered "invalid" without touching the base iterator (the
// contract of GetDynamicPrefixIterator; RocksDB's own memtable prefix Bloom
// does the same). Everything else is forwarded.
class PrefixFilteredIterator final : public MemTableRep::Iterator {
 public:
  PrefixFilteredIterator(IndexedRep* rep, MemTableRep::Iterator* base, bool base_in_arena)
      : rep_(rep), base_(base), base_in_arena_(base_in_arena) {}
  ~PrefixFilteredIterator() override {
    if (base_in_arena_) {
      base_->~Iterator();
    } else {
      delete base_;
    }
  }
  bool Valid() const override { return !empty_ && base_->Valid(); }
  const char* key() const override { return base_->key(); }
  void Next() override { base_->Next(); }
  void Prev() override { base_->Prev(); }
  void Seek(const Slice& internal_key, const char* memtable_key) override {
    empty_ = !rep_->PrefixMayExist(internal_key, memtable_key);
    if (!empty_) base_->Seek(internal_key, memtable_key);
  }
  void SeekForPrev(const Slice& internal_key, const char* memtable_key) override {
    empty_ = !rep_->PrefixMayExist(internal_key, memtable_key);
    if (!empty_) base_->SeekForPrev(internal_key, memtable_key);
  }
  void RandomSeek() override {
    empty_ = false;
    base_->RandomSeek();
  }
  void SeekToFirst() override {
    empty_ = false;
    base_->SeekToFirst();
  }
  void SeekToLast() override {
    empty_ = false;
    base_->SeekToLast();
  }

 private:
  IndexedRep* const rep_;
  MemTableRep::Iterator* const base_;
  const bool base_in_arena_;
  bool empty_ = false;
};

MemTableRep::Iterator* IndexedRep::GetDynamicPrefixIterator(rocksdb::Arena* arena) {
  if (prefixes_.filter == nullptr || !active_.load(std::memory_order_acquire)) {
    return base_->GetDynamicPrefixIterator(arena);
  }
  MemTableRep::Iterator* base_iter = base_->GetDynamicPrefixIterator(arena);
  if (arena != nullptr) {
    // rocksdb::Arena derives from Allocator only (abi/memtable_abi.h).
    Allocator* a = reinterpret_cast<Allocator*>(arena);
    char* mem = a->AllocateAligned(sizeof(PrefixFilteredIterator));
    return new (mem) PrefixFilteredIterator(this, base_iter, /*base_in_arena=*/true);
  }
  return new PrefixFilteredIterator(this, base_iter, /*base_in_arena=*/false);
}


void AddCounters(MemTableIndexStats* into, const MemTableIndexStats& s) {
  into->migrations += s.migrations;
  into->entries += s.entries;
  into->index_inserts += s.index_inserts;
  into->gets += s.gets;
  into->skipped_searches += s.skipped_searches;
  into->delegated += s.delegated;
  into->false_positives += s.false_positives;
  into->prefix_inserts += s.prefix_inserts;
  into->prefix_seeks += s.prefix_seeks;
  into->prefix_seeks_skipped += s.prefix_seeks_skipped;
}

MemTableRep* NewIndexedRep(std::unique_ptr<MemTableRep> base, bool identity_handles,
                           const MemTableRep::KeyComparator& key_cmp, Allocator* allocator,
                           const SliceTransform* transform, Logger* logger,
                           uint32_t column_family_id, const MemTableIndexOptions& options,
                           std::shared_ptr<FactoryState> state) {
  return new IndexedRep(std::move(base), identity_handles, key_cmp, allocator, transform, logger,
                        column_family_id, options, std::move(state));
}

MemTableIndexStats RepStats(IndexedRep* rep) { return rep->Stats(); }

}  // namespace memtable_index
}  // namespace dlcbf
