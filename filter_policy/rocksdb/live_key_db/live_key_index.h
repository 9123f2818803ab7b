// The index of one column family: a thread-safe counting filter over the
// live keys, and its overflow path. Internal to
// filter_policy/rocksdb/live_key_db/.
//
// The kernel (LiveKeyIndexOptions::kernel) is created, or read back from
// LIVEKEY_INDEX, first and wrapped without a copy in an ElasticFilter
// (ElasticFilter::Adopt). Readers are lock-free: both kernels validate a
// negative answer against per-stripe sequence numbers.
//   kDense (default): DenseDLeftFilter, d = 2, sized by bits_per_key; a
//     negative lookup reads two lines. Its ElasticFilter never migrates on
//     overflow (migrate_on_overflow = false): a key that finds both
//     candidate blocks full goes to the stash (Stash() below).
//   kFast: FastDLeftFilter, D = 2, at min(sizing_load, MaxLoad = 0.80); one
//     line per lookup (two when its bucket spilled). Past MaxLoad its
//     ElasticFilter migrates to the ABF in steps of one 16-block group per
//     insert while readers keep the complete dlCBF.
// capacity() is where the kernel reaches its sizing MaxLoad; LiveKeyDB
// rebuilds before it (rebuild_at_capacity), so neither path is normally
// taken; when one is, no insert copies the table.
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
#include <type_traits>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dlcbf/core/elastic_filter.h"
#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"
#include "dlcbf/core/hash_mix.h"
#include "dlcbf/rocksdb/live_key_db.h"
#include "filter_policy/rocksdb/live_key_db/epochs.h"
#include "filter_policy/rocksdb/live_key_db/live_region_counts.h"
#include "filter_policy/rocksdb/common/status_conversion.h"
#include "rocksdb/slice.h"
#include "rocksdb/status.h"

namespace dlcbf {
namespace live_key {

using rocksdb::Slice;


// ---------------------------------------------------------------------------
// The index of one column family.
// ---------------------------------------------------------------------------
class LiveKeyIndex {
 public:
  // The kernel's options for `sized_for` keys (LiveKeyIndexOptions::kernel):
  // InvalidArgument or MemoryLimit when no table of that size can be made.
  static dlcbf::Status FastOptions(const LiveKeyIndexOptions& o, uint64_t sized_for, FastDLeftOptions* out) {
    FastDLeftOptions f;
    f.subtables = 2;
    f.seed = o.seed;
    f.thread_safe = true;
    dlcbf::Status s = FastDLeftOptions::ForLoad(std::max<uint64_t>(1, sized_for),
                                                std::min(o.sizing_load, FastDLeftOptions::MaxLoad(2)), &f);
    if (s.ok()) *out = f;
    return s;
  }
  static dlcbf::Status DenseOptions(const LiveKeyIndexOptions& o, uint64_t sized_for, DenseDLeftOptions* out) {
    DenseDLeftOptions d;
    d.subtables = 2;
    d.seed = o.seed;
    d.thread_safe = true;
    dlcbf::Status s = DenseDLeftOptions::ForBitsPerKey(std::max<uint64_t>(1, sized_for), o.bits_per_key, &d);
    if (s.ok()) *out = d;
    return s;
  }

  static rocksdb::Status Create(const LiveKeyIndexOptions& o, uint64_t sized_for, EpochDomain* epochs,
                       std::unique_ptr<LiveKeyIndex>* out) {
    if (o.kernel == ElasticKernel::kDense) {
      DenseDLeftOptions d;
      std::unique_ptr<DenseDLeftFilter> f;
      dlcbf::Status cs = DenseOptions(o, sized_for, &d);
      if (cs.ok()) cs = DenseDLeftFilter::Create(d, &f);
      if (!cs.ok()) return glue::ToRocksStatus(cs);
      return Wrap(o, sized_for, 0, epochs, std::move(f), out);
    }
    FastDLeftOptions fo;
    std::unique_ptr<FastDLeftFilter> f;
    dlcbf::Status cs = FastOptions(o, sized_for, &fo);
    if (cs.ok()) cs = FastDLeftFilter::Create(fo, &f);
    if (!cs.ok()) return glue::ToRocksStatus(cs);
    return Wrap(o, sized_for, 0, epochs, std::move(f), out);
  }

  // `kind` is what Serialize reported for the blob. A blob of the other
  // kernel than o.kernel is refused (the caller rebuilds).
  static rocksdb::Status Load(const Slice& blob, uint8_t kind, const LiveKeyIndexOptions& o, uint64_t sized_for,
                     uint64_t entries, EpochDomain* epochs, std::unique_ptr<LiveKeyIndex>* out) {
    if (kind != KindOf(o.kernel)) return rocksdb::Status::Corruption("written for the other index kernel");
    if (sized_for == 0) return rocksdb::Status::Corruption("sized_for is 0");
    if (o.kernel == ElasticKernel::kDense) return LoadKernel<DenseDLeftFilter>(blob, o, sized_for, entries, epochs, out);
    return LoadKernel<FastDLeftFilter>(blob, o, sized_for, entries, epochs, out);
  }

  // A dense index from its base image (whole, or sparse: kind
  // kSparseDenseKind, or compact sparse: kSparseCompactDenseKind) with the
  // file's delta records written over it, built
  // in place (DenseDLeftFilter::DeserializeWithRecords: a sparse base costs
  // its records, not the table); `compact_runs`: the records are compact
  // (file version 6). `entries`: the count the file recorded
  // for the base, replaced by the kernel's item count when records were
  // applied (what the deltas' blocks hold).
  static rocksdb::Status LoadDense(const Slice& image, uint8_t kind, const std::vector<Slice>& record_runs,
                                   bool compact_runs, const LiveKeyIndexOptions& o, uint64_t sized_for,
                                   uint64_t* entries, EpochDomain* epochs, std::unique_ptr<LiveKeyIndex>* out) {
    if (o.kernel != ElasticKernel::kDense) return rocksdb::Status::Corruption("written for the other index kernel");
    if (sized_for == 0) return rocksdb::Status::Corruption("sized_for is 0");
    std::unique_ptr<DenseDLeftFilter> f;
    uint64_t items = 0;
    std::vector<std::string_view> runs;
    for (const Slice& r : record_runs) runs.push_back(glue::View(r));
    const DenseDLeftFilter::ImageLayout layout = kind == kSparseCompactDenseKind ? DenseDLeftFilter::ImageLayout::kSparseCompact
                                                 : kind == kSparseDenseKind      ? DenseDLeftFilter::ImageLayout::kSparse
                                                                                 : DenseDLeftFilter::ImageLayout::kWhole;
    rocksdb::Status s = glue::ToRocksStatus(DenseDLeftFilter::DeserializeWithRecords(
        glue::View(image), layout, runs, &f, DeserializeOptions{/*thread_safe=*/true}, &items, compact_runs));
    if (!s.ok()) return s;
    if (f->options().seed != o.seed) return rocksdb::Status::Corruption("hash seed differs");
    if (f->options().subtables != 2) return rocksdb::Status::Corruption("kernel is not d = 2");
    if (!record_runs.empty()) *entries = items;
    return Wrap(o, sized_for, *entries, epochs, std::move(f), out);
  }

  // The kernel byte of the index file (persistence.cc): 1 fast, 2 dense,
  // 3 dense as a sparse image, 4 the same with compact records (LoadDense).
  static uint8_t KindOf(ElasticKernel k) { return k == ElasticKernel::kDense ? 2 : 1; }
  static constexpr uint8_t kSparseDenseKind = 3;         // 72-byte records (still read)
  static constexpr uint8_t kSparseCompactDenseKind = 4;  // compact records (written)
  static bool IsSparseKind(uint8_t kind) { return kind == kSparseDenseKind || kind == kSparseCompactDenseKind; }

  bool Contains(uint64_t h) const {
    if (elastic_->ContainsHash(h)) return true;  // one line per block probed
    const ElasticFilter* st = stash_.load(std::memory_order_acquire);
    return st != nullptr && st->ContainsHash(StashHash(h));
  }
  // Starts loading what Contains/Insert of h read: this object's writer
  // lock and the filter's lines for h (ElasticFilter::PrefetchHash). Like
  // Contains: in a read section.
  void Prefetch(uint64_t h) const {
    __builtin_prefetch(&entries_, 1);
    elastic_->PrefetchHash(h);
  }
  void ContainsBatch(const uint64_t* h, size_t n, bool* out) const {
    elastic_->ContainsHashBatch(h, n, out);
    const ElasticFilter* st = stash_.load(std::memory_order_acquire);
    if (st == nullptr) return;
    for (size_t i = 0; i < n; ++i) {
      if (!out[i]) out[i] = st->ContainsHash(StashHash(h[i]));
    }
  }

  // Never fails except when memory for the ABF cannot be had; then the
  // index is unchanged and the caller must not write the key. No lock of
  // its own: the ElasticFilter serializes its writers (one lock less on
  // every new-key Put; each costs a dependent cache miss after the base
  // write has evicted it).
  // kr: the key's regions for the live-region counts (Rep::RegionsOf;
  // empty when the family counts none), counted once the copy is taken,
  // before the caller's base write.
  rocksdb::Status Insert(uint64_t h, const KeyRegions& kr) {
    OpResult r = elastic_->InsertHash(h);
    if (r == OpResult::kOverflow && overflow_to_stash_) r = InsertStash(h);
    if (r != OpResult::kOk) {
      return rocksdb::Status::MemoryLimit("LiveKeyDB: the elastic index could not grow");
    }
    if (regions_ != nullptr) regions_->Add(kr);
    entries_.fetch_add(1, std::memory_order_relaxed);
    MaybeReleaseElastic();
    return rocksdb::Status::OK();
  }

  // Insert of hs[0..n) for bulk loads (rebuild scans, checkpoint replay;
  // their callers count the keys' regions: CountRegions): the kernel's batch
  // (ElasticFilter::InsertHashBatch: its writer lock once, lines
  // prefetched ahead), keys it cannot place going to the stash as Insert
  // sends them. `out` holds n results (scratch). On error (as Insert's)
  // some of the keys are counted: the caller abandons the index.
  rocksdb::Status InsertBatch(const uint64_t* hs, size_t n, OpResult* out) {
    elastic_->InsertHashBatch(hs, n, out);
    uint64_t counted = 0;
    rocksdb::Status s;
    for (size_t i = 0; i < n; ++i) {
      OpResult r = out[i];
      if (r == OpResult::kOverflow && overflow_to_stash_) r = InsertStash(hs[i]);
      if (r == OpResult::kOk) {
        ++counted;
      } else if (s.ok()) {
        s = rocksdb::Status::MemoryLimit("LiveKeyDB: the elastic index could not grow");
      }
    }
    entries_.fetch_add(counted, std::memory_order_relaxed);
    MaybeReleaseElastic();
    return s;
  }

  // Frees the ElasticFilter's frozen dlCBF once it migrated and no reader
  // can be inside it (once; the rare path takes release_mu_).
  void MaybeReleaseElastic() {
    if (!elastic_released_.load(std::memory_order_acquire) &&
        elastic_->mode() == ElasticMode::kAutoscaling) {
      std::lock_guard<std::mutex> l(release_mu_);
      if (!elastic_released_.load(std::memory_order_relaxed)) {
        epochs_->Synchronize();
        elastic_->ReleaseRetired();
        elastic_released_.store(true, std::memory_order_release);
      }
    }
  }

  // True once, for the first caller that sees this index past capacity
  // (LiveKeyStats::index_migrations counts them).
  bool FirstSeenPastCapacity() {
    if (migration_seen_.load(std::memory_order_relaxed) || !past_capacity()) return false;
    return !migration_seen_.exchange(true);
  }

  // Only for keys counted on behalf of the caller (see the invariant).
  //
  // Exactness with a stash: one multiset over ONE fingerprint identity.
  // The kernel matches keys by their true fingerprint f(h) (bucket,
  // remainder: the permutations are invertible, so two keys collide in a
  // subtable iff their true fingerprints are equal). The stash is fed
  // StashHash(h), a bijective function of f(h) alone, so every key of one
  // true fingerprint gives the stash the same input. Write n_f for the
  // copies counted on behalf of keys of fingerprint f, kernel(f) for the
  // kernel's count of f and stash_f for the stash inputs StashHash of f
  // inserted and not erased; invariant: kernel(f) + stash_f = n_f. Erase
  // of a key of fingerprint f (n_f >= 1, the caller's copy): kernel(f) > 0
  // -> take one there; else stash_f = n_f >= 1 -> take one from the stash,
  // whose input was inserted (a counting filter never loses another
  // input's evidence when only inserted inputs are erased). Either way the
  // invariant holds, and a key of fingerprint f with n_f >= 1 is found:
  // kernel(f) > 0, or the stash holds its input. (Before: the stash took
  // the raw key hash under its own seed, so an erase of a stashed key A
  // found B's copy in the kernel whenever f(A) = f(B), took it, and B's
  // lookup then missed the kernel and A's stash input alike:
  // LiveKeyIndexStashTest.EraseOfStashedKeyKeepsCollidingKernelKey.)
  //
  // kr as Insert's; `latest` the DB's latest sequence number, read after
  // the delete that made the copy redundant returned (LiveRegionCounts).
  void Erase(uint64_t h, const KeyRegions& kr, uint64_t latest) {
    if (regions_ != nullptr) regions_->Remove(kr, latest);
    if (elastic_->EraseHash(h) == OpResult::kOk) {
      entries_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    ElasticFilter* st = stash_.load(std::memory_order_acquire);
    if (st != nullptr && st->EraseHash(StashHash(h)) == OpResult::kOk) {
      entries_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  // The live-region counts (LiveKeyIndexOptions::live_prefix_counts,
  // live_range_lengths): made before the index is published (a rebuild's
  // fresh index, a new family's empty one), never for an index read from a
  // file (it carries none). nullptr: every region may hold live keys.
  void AttachRegionCounts() { regions_.reset(new LiveRegionCounts(sized_for_)); }
  const LiveRegionCounts* region_counts() const { return regions_.get(); }
  LiveRegionCounts* mutable_region_counts() { return regions_.get(); }
  // A bulk load's key of regions kr (InsertBatch counts none).
  void CountRegions(const KeyRegions& kr) {
    if (regions_ != nullptr) regions_->Add(kr);
  }

  // The stash's input for key hash h: a bijection of the dense kernel's
  // true fingerprint of h (see Erase), mixed so the stash's own hashing
  // sees uniform inputs. Identity for the fast kernel (it has no stash).
  uint64_t StashHash(uint64_t h) const {
    if (dense_ == nullptr) return h;
    const uint64_t canonical = dense_->HashOfFingerprint(dense_->FingerprintOfHash(h));
    return internal::Mix64(canonical ^ stash_seed_);
  }

  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  // Unchecked copies counted into this index (Rep::TakeUncheckedCopy):
  // entries() - unchecked() is at most what the index would hold if every
  // one of them had been checked. Reset by replacing the index (a rebuild).
  uint64_t unchecked() const { return unchecked_.load(std::memory_order_relaxed); }
  // Copies of h's fingerprint in the dense kernel (lock-free, exact when
  // no writer of its blocks runs meanwhile); ~0u for the fast kernel and
  // once the index has a stash (copies may lie there).
  uint32_t KernelCopies(uint64_t h) const {
    if (dense_ == nullptr || stash_.load(std::memory_order_acquire) != nullptr) return ~0u;
    return dense_->CountHash(h);
  }
  // Takes one of `limit` unchecked copies: how many are taken with it, 0
  // once all were (racing writers may take a few past the limit, one each;
  // exactly one of them sees `limit`).
  uint64_t TakeUnchecked(uint64_t limit) {
    if (unchecked_.load(std::memory_order_relaxed) >= limit) return 0;
    return unchecked_.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  // The dense kernel overflowed into a stash (never removed): the index is
  // not persisted (Serialize) until a rebuild replaces it.
  bool has_stash() const { return stash_.load(std::memory_order_acquire) != nullptr; }
  uint64_t sized_for() const { return sized_for_; }
  // The dlCBF is past MaxLoad: migrating to its ABF, or migrated.
  bool past_capacity() const {
    return stash_.load(std::memory_order_acquire) != nullptr || elastic_->migrating() ||
           elastic_->mode() == ElasticMode::kAutoscaling;
  }
  // Entries at which the kernel reaches the MaxLoad its sizing helpers use
  // (its first moves, and far later its first overflow, come after it).
  uint64_t capacity() const { return capacity_; }
  // Time for a background rebuild: past capacity, past `drift` x sized_for,
  // or past `at_capacity` x capacity() (so the rebuild can finish before
  // the kernel fills; LiveKeyIndexOptions::rebuild_at_capacity).
  bool NeedsRebuild(double drift, double at_capacity) const {
    const double e = static_cast<double>(entries());
    return past_capacity() || e > drift * static_cast<double>(sized_for_) ||
           e > at_capacity * static_cast<double>(capacity_);
  }

  // The kernel's serialized form and its kind (KindOf); false once
  // migrated (the ABF is not persisted: the index is rebuilt instead).
  bool Serialize(std::string* out, uint8_t* kind) const {
    *kind = KindOf(elastic_->options().kernel);
    if (stash_.load(std::memory_order_acquire) != nullptr) return false;  // two parts: rebuilt instead
    return elastic_->SerializeKernel(out);
  }

  // Serialize's bytes copied in chunks, the kernel's writer lock held
  // around each chunk only, and streamed to `sink` as they are copied
  // (ElasticFilter::SerializeKernelInChunks: for every fingerprint the
  // image holds at least the fewest copies the kernel held at any instant
  // of the copy; the item count and the checksum are streamed as zeros,
  // the caller's to write: DenseDLeftFilter::kImageItemsOffset). `items`
  // gets the entries it holds. Dense kernel only. False (what was
  // streamed is no image) for the fast kernel, after a relocation, when
  // `sink` fails, and with a stash at the start or at the end (the stash
  // is never removed, so none at the end means none throughout: the
  // kernel held every copy).
  // `sparse`: the sparse image with compact records (kind
  // kSparseCompactDenseKind).
  bool SerializeInChunks(const DenseDLeftFilter::ImageSink& sink, uint8_t* kind, uint64_t* items,
                         uint64_t chunk_blocks, const std::function<void(uint64_t)>* between_chunks,
                         bool sparse = false) const {
    *kind = sparse ? kSparseCompactDenseKind : KindOf(elastic_->options().kernel);
    if (dense_ == nullptr || stash_.load(std::memory_order_acquire) != nullptr) return false;
    if (!elastic_->SerializeKernelInChunks(sink, chunk_blocks, items, between_chunks,
                                           sparse ? DenseDLeftFilter::ImageLayout::kSparseCompact
                                                  : DenseDLeftFilter::ImageLayout::kWhole)) {
      return false;
    }
    return stash_.load(std::memory_order_acquire) == nullptr;
  }

  // Checkpoints that write what changed (checkpoint.cc): the dense
  // kernel's changed blocks (DenseDLeftFilter::CopyChangedBlocks), on the
  // terms of SerializeInChunks above (no stash at the start or the end).
  bool TrackChangedBlocks() { return dense_ != nullptr && elastic_->TrackChangedKernelBlocks(); }
  // The records are streamed to `sink` a chunk at a time; false: what was
  // streamed is no delta.
  bool CopyChangedBlocks(const DenseDLeftFilter::ImageSink& sink, uint64_t chunk_blocks, uint64_t* copied,
                         const std::function<void(uint64_t)>* between_chunks) const {
    if (dense_ == nullptr || stash_.load(std::memory_order_acquire) != nullptr) return false;
    if (!elastic_->CopyChangedKernelBlocks(sink, chunk_blocks, copied, between_chunks)) return false;
    return stash_.load(std::memory_order_acquire) == nullptr;
  }

  void Describe(LiveKeyCfStats* st) const {
    st->entries = entries();
    st->unchecked_copies = unchecked();
    st->sized_for = sized_for_;
    st->drift = sized_for_ ? static_cast<double>(st->entries) / static_cast<double>(sized_for_) : 0;
    const ElasticStats es = elastic_->Stats();
    const ElasticFilter* stash = stash_.load(std::memory_order_acquire);
    st->mode = es.mode == ElasticMode::kAutoscaling ? "elastic-abf"
               : es.migration_in_progress           ? "dlcbf-migrating"
               : stash != nullptr                   ? "dlcbf-overflow"
                                                    : "dlcbf";
    st->bytes = es.bytes + es.retained_bytes;
    st->predicted_fpr = es.predicted_fpr;
    if (stash != nullptr) {
      const ElasticStats ss = stash->Stats();
      st->bytes += ss.bytes + ss.retained_bytes;
      st->predicted_fpr = 1.0 - (1.0 - es.predicted_fpr) * (1.0 - ss.predicted_fpr);  // either part
    }
    st->region_count_bytes = regions_ != nullptr ? regions_->bytes() : 0;
    st->bytes += st->region_count_bytes;
  }

 private:
  LiveKeyIndex(const LiveKeyIndexOptions& o, uint64_t sized_for, EpochDomain* epochs)
      : abf_counter_bits_(o.abf_counter_bits), sized_for_(std::max<uint64_t>(1, sized_for)),
        epochs_(epochs) {}

  template <class Kernel>
  static rocksdb::Status LoadKernel(const Slice& blob, const LiveKeyIndexOptions& o, uint64_t sized_for,
                                    uint64_t entries, EpochDomain* epochs, std::unique_ptr<LiveKeyIndex>* out) {
    std::unique_ptr<Kernel> f;
    rocksdb::Status s =
        glue::ToRocksStatus(Kernel::Deserialize(glue::View(blob), &f, DeserializeOptions{/*thread_safe=*/true}));
    if (!s.ok()) return s;
    if (f->options().seed != o.seed) return rocksdb::Status::Corruption("hash seed differs");
    if (f->options().subtables != 2) return rocksdb::Status::Corruption("kernel is not d = 2");
    return Wrap(o, sized_for, entries, epochs, std::move(f), out);
  }

  // The dense kernel's overflow (ElasticOptions::migrate_on_overflow =
  // false): keys that find both candidate blocks full go to a small stash,
  // a thread-safe fast-kernel ElasticFilter created on the first overflow
  // and sized for 1/16 of the kernel's capacity (at least 4096 keys). It
  // migrates to its own ABF in steps if it fills (no insert copies a
  // table: the dense kernel's migration would copy the whole table on the
  // writer), and the rebuild that the overflow schedules
  // (past_capacity()) replaces both. Readers look in the stash only when
  // the kernel says no, and only once it exists (one acquire load).
  ElasticFilter* Stash() {
    ElasticFilter* st = stash_.load(std::memory_order_acquire);
    if (st != nullptr) return st;
    std::lock_guard<std::mutex> l(release_mu_);
    st = stash_.load(std::memory_order_relaxed);
    if (st != nullptr) return st;
    ElasticOptions eo;
    eo.kernel = ElasticKernel::kFast;
    eo.thread_safe = true;
    eo.expected_items = std::max<uint64_t>(4096, capacity_ / 16);
    eo.abf_counter_bits = abf_counter_bits_;
    eo.fast.seed = stash_seed_;
    if (!ElasticFilter::Create(eo, &stash_owner_).ok()) return nullptr;
    stash_.store(stash_owner_.get(), std::memory_order_release);
    return stash_owner_.get();
  }
  OpResult InsertStash(uint64_t h) {
    ElasticFilter* st = Stash();
    return st == nullptr ? OpResult::kOverflow : st->InsertHash(StashHash(h));
  }

  template <class Kernel>
  static rocksdb::Status Wrap(const LiveKeyIndexOptions& o, uint64_t sized_for, uint64_t entries,
                     EpochDomain* epochs, std::unique_ptr<Kernel> kernel,
                     std::unique_ptr<LiveKeyIndex>* out) {
    const uint64_t capacity = KernelCapacity(*kernel);
    const Kernel* kernel_ptr = kernel.get();
    ElasticOptions eo;
    eo.kernel = std::is_same<Kernel, DenseDLeftFilter>::value ? ElasticKernel::kDense : ElasticKernel::kFast;
    eo.abf_counter_bits = o.abf_counter_bits;
    const bool dense = eo.kernel == ElasticKernel::kDense;
    eo.migrate_on_overflow = !dense;  // the dense kernel overflows into the stash
    std::unique_ptr<ElasticFilter> e;
    rocksdb::Status s = glue::ToRocksStatus(ElasticFilter::Adopt(eo, std::move(kernel), entries, &e));
    if (!s.ok()) return s;
    std::unique_ptr<LiveKeyIndex> idx(new LiveKeyIndex(o, sized_for, epochs));
    idx->capacity_ = capacity;
    idx->overflow_to_stash_ = dense;
    idx->stash_seed_ = o.seed ^ 0x57A5400000000001ULL;
    // The dense kernel stays the ElasticFilter's for the index's life
    // (migrate_on_overflow = false: it never migrates), so the pointer the
    // stash's fingerprint identity reads through stays valid.
    if constexpr (std::is_same<Kernel, DenseDLeftFilter>::value) idx->dense_ = kernel_ptr;
    idx->elastic_ = std::move(e);
    idx->entries_.store(entries);
    *out = std::move(idx);
    return rocksdb::Status::OK();
  }

  static uint64_t KernelCapacity(const DenseDLeftFilter& k) {
    const DenseDLeftOptions& o = k.options();
    return static_cast<uint64_t>(static_cast<double>(o.Blocks()) * o.SlotsPerBlock() *
                                 DenseDLeftOptions::MaxLoad(o.remainder_bits));
  }
  static uint64_t KernelCapacity(const FastDLeftFilter& k) {
    const FastDLeftOptions& o = k.options();
    return static_cast<uint64_t>(32.0 * static_cast<double>(o.blocks) * FastDLeftOptions::MaxLoad(o.subtables));
  }

  const uint32_t abf_counter_bits_;
  uint64_t capacity_ = 0;
  const uint64_t sized_for_;
  EpochDomain* const epochs_;
  std::unique_ptr<ElasticFilter> elastic_;  // never null after Create/Load
  std::mutex release_mu_;                    // the one ReleaseRetired; the stash's creation
  std::atomic<bool> elastic_released_{false};
  std::atomic<bool> migration_seen_{false};
  bool overflow_to_stash_ = false;
  uint64_t stash_seed_ = 0;
  const DenseDLeftFilter* dense_ = nullptr;  // the dense kernel (StashHash), else null
  std::unique_ptr<ElasticFilter> stash_owner_;  // under release_mu_
  std::atomic<ElasticFilter*> stash_{nullptr};
  std::unique_ptr<LiveRegionCounts> regions_;
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> unchecked_{0};
};


}  // namespace live_key
}  // namespace dlcbf
