// Elastic filter: a d-left counting Bloom filter that, instead of failing
// when it fills up, migrates in place to an autoscaling (counting) Bloom
// filter of the same byte budget -- without the original keys.
//
// What it is
//   Mode kDLeft: a d-left counting Bloom filter sized for an expected number
//   of keys (exact erase, FPR ~ F / (B * Rn), Bonomi et al. 2006 Claim 3).
//   Three kernels (ElasticOptions::kernel): kGeneral, the paper's layout
//   with any geometry (DLeftCountingBloomFilter, options.dleft); kFast, the
//   cache-line-local FastDLeftFilter (options.fast: one 64-byte line per
//   query, fixed cells); kDense, the variable-occupancy DenseDLeftFilter
//   (options.dense: half the fast kernel's space, d lines per query). All
//   migrate the same way, through one internal kernel contract; below, "the
//   dlCBF" is whichever kernel was chosen.
//   When an insert returns kOverflow (every candidate bucket full even after
//   relocation), or live items pass migrate_at_load * capacity, the filter
//   migrates to mode kAutoscaling: an AutoscalingBloomFilter whose counter
//   array uses the dlCBF's byte budget (m = bytes * 8 / w counters). The
//   keys are not needed: the kernel's ForEachFingerprint
//   recovers every stored true fingerprint f (paper §3.2, via P_i^-1) with
//   its multiplicity, and the ABF's k probe positions are derived from f,
//   not from the key: probe hash = Mix64(f.packed ^ salt). A later key x is
//   mapped the same way (f = FingerprintOfHash(Hash(x))), so lookups and
//   erases after the migration stay consistent with what was migrated.
//
// Why it exists
//   A dlCBF is ~2.5x smaller than a CBF at equal FPR (paper §5.1) but has a
//   hard capacity; a memtable index cannot know its key count in advance
//   and must never refuse an insert. The elastic filter keeps the dlCBF's
//   space advantage while the estimate holds and degrades gracefully (a
//   rising but model-predicted FPR, erase still supported) when it does not.
//
// Guarantees
//   - Insert never fails: it returns kOk, both before and after migration.
//     (Exceptions: if allocating the ABF during migration fails, or with
//     migrate_on_overflow = false when the kernel is full, the insert
//     returns kOverflow and the filter is unchanged.)
//   - No false negatives in the default lossless mode (min_tpr = 1): before
//     migration by the dlCBF's guarantee; after it, every stored fingerprint
//     is in the ABF with its multiplicity, read at Θ = 0, T = k. dlCBF
//     counters that had saturated (true multiplicity unknown) are "pinned":
//     their erases are no-ops (as in the dlCBF), so they can never be
//     decremented away.
//   - Erase works in both modes (kNotFound, unchanged, for a key that is
//     certainly absent). As with any counting filter, only erase keys you
//     inserted.
//   - False positives after migration: y collides with a stored
//     fingerprint (<= n / (B * Rn)) or its ABF probes are set (the ABF
//     model, abf_model.h, for n keys); Stats().predicted_fpr combines both.
//   - Lossy ABF thresholds (TPR < 1) only with min_tpr < 1 AND
//     allow_false_negatives; then the ABF is AutoTune'd at migration and
//     whenever n moves by retune_fraction. Never for RocksDB read paths.
//
// Thread safety (ElasticOptions::thread_safe)
//   - false: like std containers (const methods concurrently; writers need
//     external synchronization). The dlCBF is freed at migration.
//   - true: every method may be called from any thread. Writers
//     (Insert, Erase, ReleaseRetired, Stats) serialize on a mutex; readers
//     (Contains*, mode()) never lock. Design of the migration moment:
//       1. The migrating writer holds the mutex, so the dlCBF is frozen.
//       2. It builds the complete ABF off to the side from
//          ForEachFingerprint; readers keep reading the (intact) dlCBF.
//          (With incremental_migration, the default for kFast, this is
//          spread over inserts, each under the mutex; the dlCBF keeps
//          taking every insert, so it stays complete for readers, and the
//          ABF receives each op whose block is already copied.)
//       3. It publishes the ABF with one release-store of an atomic pointer.
//       4. Readers load that pointer with acquire: null -> dlCBF, else ABF.
//     A reader therefore sees either the full old filter or the full new
//     one, never a half-built ABF, so a key whose Insert happened-before
//     the read is always found. A reader that picked the dlCBF just before
//     the switch may answer from it afterwards; for erased keys that is a
//     (harmless) false positive. Because such a reader may still be inside
//     the dlCBF, the frozen dlCBF stays allocated until the filter is
//     destroyed or ReleaseRetired() is called (Stats().retained_bytes).
//     Counter words of the ABF are read with relaxed atomics and a live
//     key's counters never drop below 1, so ABF-mode reads concurrent with
//     inserts/erases never miss a live key either.
//
// Ownership
//   Create hands out a std::unique_ptr owning both representations.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <functional>
#include <mutex>
#include <unordered_set>

#include "dlcbf/core/autoscaling_bloom_filter.h"
#include "dlcbf/core/counting_filter.h"
#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"
#include <string_view>
#include "dlcbf/core/status.h"

namespace dlcbf {

namespace internal {
class Hashing;          // internal/dleft_layout.h
class CountingKernel;   // the kernel contract, elastic_filter.cc
}  // namespace internal

enum class ElasticMode : uint8_t {
  kDLeft = 0,        // d-left counting Bloom filter
  kAutoscaling = 1,  // after migration: ABF over true fingerprints
};
const char* ToString(ElasticMode mode);

enum class MigrationCause : uint8_t {
  kNone = 0,           // not migrated
  kOverflow = 1,       // an insert found every candidate bucket full
  kLoadThreshold = 2,  // live items passed migrate_at_load * capacity
  kIncremental = 3,    // kFast: live items reached the kernel's MaxLoad; the
                       // ABF was filled in steps (ElasticOptions::
                       // incremental_migration) and then published
};
const char* ToString(MigrationCause cause);

// The d-left kernel of mode kDLeft.
enum class ElasticKernel : uint8_t {
  kGeneral = 0,  // DLeftCountingBloomFilter (ElasticOptions::dleft)
  kFast = 1,     // FastDLeftFilter (ElasticOptions::fast)
  kDense = 2,    // DenseDLeftFilter (ElasticOptions::dense)
};

struct ElasticOptions {
  // The default is the fast kernel: one 64-byte line per probe, at the
  // cost of a coarse fixed cell (13-bit remainder, 2-bit counter: 24 bits
  // per key at load 0.75, predicted FPR 32 a / (4 * 8191) = 0.073 %).
  // kDense halves the space per key at the same FPR class (d lines per
  // probe). kGeneral takes any geometry from `dleft` (whose default is the
  // paper's d = 4, L = 8, r = 14, c = 2 of §5.1; the memtable index sets
  // d = 2, L = 3 itself): choose it for wider counters or the paper's
  // exact layout. Measured probe costs: tools/bench/peer_bench and the
  // README.
  ElasticKernel kernel = ElasticKernel::kFast;
  // kGeneral only: the initial dlCBF. If expected_items > 0, Create applies
  // DLeftOptions::ForLoad(expected_items, sizing_load) to it. With kFast every
  // field except thread_safe must keep its default (Validate names the
  // first one that does not): a geometry set here would otherwise be
  // silently ignored.
  DLeftOptions dleft;
  // kFast: the initial kernel (subtables 2 or 4, seed, max_bytes). If
  // expected_items > 0, Create sets fast.blocks from
  // FastDLeftOptions::ForLoad(expected_items, min(sizing_load,
  // FastDLeftOptions::MaxLoad(subtables))). The kernel's counters are
  // 2-bit (saturate at 4).
  FastDLeftOptions fast;
  // kDense: the initial kernel (remainder_bits 8 or 16, subtables, seed,
  // max_bytes). If expected_items > 0, Create sizes it with
  // DenseDLeftOptions::ForLoad(expected_items, min(sizing_load,
  // DenseDLeftOptions::MaxLoad(remainder_bits))). Multiplicities are
  // copies (nothing saturates, nothing is pinned at migration). It
  // migrates in one go (its moves cross blocks, like the general kernel's
  // relocations): incremental_migration does not apply. The fields of the
  // kernels not chosen must keep their defaults (Validate names the first
  // one that does not).
  DenseDLeftOptions dense;
  uint64_t expected_items = 0;
  double sizing_load = 0.75;  // 6 of 8 cells, the paper's §5.1 load

  // Migrate when live items exceed this fraction of the dlCBF's cells
  // (d * B * L; kFast: 32 per block, the spare not counted). 0 = only when
  // an insert overflows.
  double migrate_at_load = 0;

  // kFast only: migrate in steps instead of in one go. Copying every
  // stored fingerprint into the ABF costs ~50 ns each, all on the insert
  // that overflowed (50 ms at 1M keys), with every other writer waiting
  // for the lock. With this option, once live items reach
  // FastDLeftOptions::MaxLoad of the cells, each insert also copies one
  // group of FastDLeftFilter::kGroupBlocks blocks (~400 fingerprints) into
  // an ABF being built aside (after first mapping the ABF's pages, 16 KiB
  // per insert), and mirrors itself into it if its block is already copied
  // (erases likewise). Readers keep using the complete dlCBF; the ABF is
  // published when the last group is copied (cause kIncremental), after
  // blocks / 16 + ABF bytes / 16 KiB inserts. An insert that overflows
  // before then copies the rest at once (cause kOverflow). Memory: the ABF
  // being built is counted in MemoryUsage().bytes meanwhile.
  bool incremental_migration = true;

  // true (default): an insert that finds every candidate full migrates to
  // the ABF at once (cause kOverflow; the general and dense kernels copy the
  // whole table on that insert). false: it returns kOverflow instead and
  // changes nothing, for a caller that keeps such keys elsewhere
  // (LiveKeyDB's dense index puts them in a small overflow filter until a
  // rebuild replaces it: no insert copies the table). Migrations at
  // migrate_at_load or in incremental steps are unaffected.
  bool migrate_on_overflow = true;

  // The ABF that takes over. Its k is abf_probes, or when 0,
  // round(ln 2 * m / (abf_growth * n_migration)) (optimal for abf_growth
  // times the items present at migration), clamped to [1, m].
  uint32_t abf_counter_bits = 4;
  uint32_t abf_probes = 0;
  double abf_growth = 2.0;
  uint64_t abf_seed = 0xE1A5717CF11E0001ULL;  // salt for fingerprint -> probes

  // Lossless by default. min_tpr < 1 requires allow_false_negatives.
  double min_tpr = 1.0;
  bool allow_false_negatives = false;
  double retune_fraction = 0.1;  // lossy only: re-tune when n moves by 10 %

  bool thread_safe = false;  // overrides dleft.thread_safe / fast.thread_safe

  // OK, or InvalidArgument naming the field.
  Status Validate() const;
};

struct ElasticStats {
  ElasticMode mode = ElasticMode::kDLeft;
  uint64_t items = 0;    // live items: inserts - erases that returned kOk
  uint64_t inserts = 0;  // Insert calls (all returned kOk unless noted above)
  uint64_t failed_inserts = 0;  // ABF allocation failure during migration, or
                                // kOverflow returned (migrate_on_overflow = false)

  // Migration record (0 / kNone before it happens).
  MigrationCause migration_cause = MigrationCause::kNone;
  uint64_t migrated_at_insert = 0;     // 1-based ordinal of the triggering insert
  uint64_t migrated_items = 0;         // live items at migration
  uint64_t migrated_fingerprints = 0;  // distinct fingerprints carried over
  uint64_t pinned_fingerprints = 0;    // saturated dlCBF counters, now sticky
  uint64_t pinned_erases = 0;          // erases absorbed by a pinned fingerprint

  bool migration_in_progress = false;  // incremental migration under way
  uint64_t migration_copied_blocks = 0;  // of the dlCBF's blocks, so far

  uint64_t bytes = 0;           // the active representation (plus the ABF
                                // being filled during an incremental migration)
  uint64_t retained_bytes = 0;  // frozen dlCBF kept for in-flight readers
  // kDLeft: 1 - (1 - 1/(B Rn))^F (paper Claim 3). kAutoscaling:
  // 1 - (1 - n/(B Rn)) (1 - FPR_model(m, k, n, Θ, T)).
  double predicted_fpr = 0;

  DLeftStats dleft;        // filled in mode kDLeft, kernel kGeneral
  FastDLeftStats fast;     // filled in mode kDLeft, kernel kFast
  DenseDLeftStats dense;   // filled in mode kDLeft, kernel kDense
  AutoscalingStats abf;    // filled in mode kAutoscaling
};

class ElasticFilter : public CountingFilterApi<ElasticFilter> {
 public:
  // InvalidArgument (field named) or MemoryLimit. Starts in kDLeft mode.
  static Status Create(const ElasticOptions& options,
                                std::unique_ptr<ElasticFilter>* out);

  // Wraps an existing kernel (for example one read back with its
  // Deserialize) without copying it: O(1). options.kernel must name the
  // kernel's kind (kFast or kDense); options.fast / options.dense,
  // thread_safe and expected_items are taken from the kernel (its size,
  // seed and thread-safety). `items` is the number of live items it holds
  // (the caller's count: it decides when migration starts and the ABF's
  // k). InvalidArgument for a null kernel or options that do not validate
  // (the kernel is then freed with the unique_ptr).
  static Status Adopt(const ElasticOptions& options, std::unique_ptr<FastDLeftFilter> kernel, uint64_t items,
                      std::unique_ptr<ElasticFilter>* out);
  static Status Adopt(const ElasticOptions& options, std::unique_ptr<DenseDLeftFilter> kernel, uint64_t items,
                      std::unique_ptr<ElasticFilter>* out);

  // Appends the kernel's Serialize() (FastDLeftFilter or DenseDLeftFilter,
  // as options().kernel says) and returns true
  // while the filter is in mode kDLeft (also during incremental steps: the
  // kernel is complete); false, appending nothing, for the general kernel
  // or after migration. Takes the writer lock in thread_safe mode.
  bool SerializeKernel(std::string* out) const;
  // SerializeKernel's bytes, copied `chunk_blocks` blocks at a time with
  // the writer lock held around each chunk only
  // (DenseDLeftFilter::SerializeInChunks, streamed to `sink`: its
  // guarantee, the two fields the caller writes, the entries the image
  // holds in `items`, `between_chunks`, `layout`). Only for the dense kernel with
  // migrate_on_overflow = false (the kernel then stays the filter's for
  // its life); false otherwise (nothing streamed), and when a relocation
  // moved an entry during the copy or `sink` failed (what was streamed is
  // no image). Between chunks the copy tries to let the writers that found
  // the lock taken (Insert, Erase and their batches) have it first: it
  // yields while any waits, for at most kChunkHandoffMicros per chunk, so
  // under steady contention a copy of N chunks takes up to N ms longer.
  static constexpr uint32_t kChunkHandoffMicros = 1000;
  bool SerializeKernelInChunks(const DenseDLeftFilter::ImageSink& sink, uint64_t chunk_blocks, uint64_t* items,
                               const std::function<void(uint64_t)>* between_chunks = nullptr,
                               DenseDLeftFilter::ImageLayout layout = DenseDLeftFilter::ImageLayout::kWhole) const;
  // The dense kernel's changed blocks (DenseDLeftFilter::TrackChangedBlocks
  // and CopyChangedBlocks, under this filter's writer lock), on the same
  // terms as SerializeKernelInChunks; false otherwise.
  bool TrackChangedKernelBlocks();
  bool CopyChangedKernelBlocks(const DenseDLeftFilter::ImageSink& sink, uint64_t chunk_blocks, uint64_t* copied,
                               const std::function<void(uint64_t)>* between_chunks = nullptr) const;

  ~ElasticFilter();

  // The primitives of CountingFilterApi (counting_filter.h), whose
  // contract they follow; the key forms and key batches come from there.
  //   Hash: XXH3-64 of the key with the kernel's seed (the kernel's H(x)).
  //   InsertHash: always kOk (see Guarantees for the allocation-failure
  //     exception): a full kernel migrates instead of overflowing.
  //   EraseHash: kOk, or kNotFound (no change) when the key is certainly
  //     absent.
  //   ContainsHashBatch: the kernel's (or the ABF's) batched probe.
  uint64_t Hash(std::string_view key) const;
  OpResult InsertHash(uint64_t hash);
  //   InsertHashBatch: CountingFilterApi's batch (out[i] is what InsertHash
  //     of hashes[i] returns, in order), with the writer lock taken once
  //     (thread_safe mode: no other writer runs between the batch's
  //     inserts) and each kernel line prefetched a few inserts ahead; for
  //     bulk loads such as an index rebuild.
  void InsertHashBatch(const uint64_t* hashes, size_t n, OpResult* out);
  OpResult EraseHash(uint64_t hash);
  bool ContainsHash(uint64_t hash) const;
  void ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const;
  // A hint, changing nothing: starts loading the writer lock and, while in
  // mode kDLeft with the fast kernel, the kernel's lines for `hash`
  // (FastDLeftFilter::PrefetchHash). Any thread; lock-free.
  void PrefetchHash(uint64_t hash) const;

  ElasticMode mode() const;
  // True while an incremental migration is under way (lock-free).
  bool migrating() const { return migrating_flag_.load(std::memory_order_acquire); }

  // Frees the frozen dlCBF kept after a thread-safe migration.
  // Precondition: no reader is inside a Contains* call that began before
  // the migration (e.g. at a quiescent point). No-op otherwise.
  void ReleaseRetired();

  // O(table size); takes the writer lock in thread_safe mode.
  ElasticStats Stats() const;

  // Memory, O(1): {bytes, retained_bytes} exactly as Stats() reports them
  // (the active representation; the frozen dlCBF kept for in-flight
  // readers). Takes the writer lock in thread_safe mode.
  struct Memory {
    uint64_t bytes = 0;
    uint64_t retained_bytes = 0;
  };
  Memory MemoryUsage() const;

  const ElasticOptions& options() const { return options_; }

 private:
  explicit ElasticFilter(const ElasticOptions& options);
  Status Init();
  // The ABF probe hash of a key hash / of a packed true fingerprint.
  uint64_t ProbeHash(uint64_t key_hash) const;
  uint64_t ProbeHashOfPacked(uint64_t packed) const;
  // The packed true fingerprint of a key hash (either kernel's phase 1).
  uint64_t PackedOfHash(uint64_t key_hash) const;
  // The fast kernel's phase 1 (FastDLeftFilter::FingerprintOfHash), packed
  // as block << 16 | bucket << 13 | remainder. Valid after the kernel is
  // freed (it depends on blocks and subtables only).
  uint64_t FastPackedOfHash(uint64_t key_hash) const;
  Status InitFast(std::unique_ptr<FastDLeftFilter> given = nullptr);
  Status InitGeneral();
  Status InitDense(std::unique_ptr<DenseDLeftFilter> given = nullptr);
  static Status NewForAdopt(ElasticOptions o, std::unique_ptr<ElasticFilter>* out,
                            std::unique_ptr<ElasticFilter>* f);
  void SetAdoptedItems(uint64_t items);
  // Keeps phase 1 of a kernel that hashes through internal::Hashing
  // (general, dense) and checks it against the kernel's own.
  template <class K>
  Status KeepHashing(const K& kernel, const internal::Hashing& h);
  bool fast() const { return options_.kernel == ElasticKernel::kFast; }
  // Migration steps; the caller holds mu_ (thread_safe) or is the only
  // writer. Start allocates the ABF aside (false if it could not), Copy
  // carries the next `groups` groups of kGroupBlocks blocks (kGeneral: the
  // whole table), Finish copies the rest and publishes it. Migrate does
  // all three at once.
  bool StartMigration();
  void CopyGroups(uint64_t groups);
  void FinishMigration(MigrationCause cause);
  bool Migrate(MigrationCause cause);
  // During an incremental migration: an insert / erase of `hash` that the
  // dlCBF accepted, mirrored into the ABF if its block is already copied.
  void MirrorInsert(uint64_t hash);
  OpResult InsertHashLocked(uint64_t hash);  // InsertHash with the writer lock held (or not thread_safe)
  void MirrorErase(uint64_t hash);
  void MaybeRetune();

  ElasticOptions options_;
  std::unique_ptr<internal::Hashing> hashing_;  // the dlCBF's phase 1; outlives it
  uint64_t dleft_capacity_ = 0;  // d * B * L
  uint32_t dleft_max_counter_ = 0;
  uint64_t dleft_bytes_ = 0;
  double fingerprint_space_ = 1;  // B * Rn

  // The one contract ElasticFilter needs of a dlCBF kernel (insert,
  // erase, probe, the stored fingerprints in copy units, stats), with one
  // implementation per kernel (elastic_filter.cc). Null after migration
  // (non-thread-safe) or ReleaseRetired.
  std::unique_ptr<internal::CountingKernel> kernel_;
  uint64_t fast_blocks_ = 0;                         // kFast: N
  uint32_t fast_bucket_mask_ = 0;                    // kFast: Bb - 1
  std::unique_ptr<AutoscalingBloomFilter> abf_;
  std::atomic<const AutoscalingBloomFilter*> published_{nullptr};
  // Incremental migration: the ABF being filled, and the first block not
  // yet copied into it (kFast; fast_blocks_ when all are).
  std::unique_ptr<AutoscalingBloomFilter> pending_;
  uint64_t copied_blocks_ = 0;
  uint64_t copied_fingerprints_ = 0;
  uint64_t prefaulted_bytes_ = 0;
  std::atomic<bool> migrating_flag_{false};
  bool incremental_ = false;          // kFast and options.incremental_migration
  double incremental_at_items_ = 0;  // MaxLoad * cells: where the steps start
  std::unordered_set<uint64_t> pinned_;  // packed fingerprints; writers only

  mutable std::mutex mu_;  // writers (thread_safe mode)
  // Writers waiting for mu_ (LockWriters), which a chunked copy lets in
  // between its chunks (LetWaitingWritersIn).
  mutable std::atomic<uint32_t> writers_waiting_{0};
  void LockWriters(std::unique_lock<std::mutex>* lock) const;
  void LetWaitingWritersIn() const;
  // A chunked copy's between-chunks callback: LetWaitingWritersIn, then
  // the caller's `between_chunks` (if any).
  std::function<void(uint64_t)> HandingOff(const std::function<void(uint64_t)>* between_chunks) const;
  uint64_t items_ = 0;
  uint64_t inserts_ = 0;
  uint64_t failed_inserts_ = 0;
  uint64_t pinned_erases_ = 0;
  uint64_t last_tuned_n_ = 0;
  bool load_migration_failed_ = false;
  MigrationCause cause_ = MigrationCause::kNone;
  uint64_t migrated_at_insert_ = 0;
  uint64_t migrated_items_ = 0;
  uint64_t migrated_fingerprints_ = 0;
};

}  // namespace dlcbf
