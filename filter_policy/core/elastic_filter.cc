// Elastic filter: dlCBF (Bonomi et al. 2006) that migrates, without the
// keys, to an autoscaling CBF (Kleyko et al. 2019) in the same byte budget.
//
// Design note (the paper's §5.1 geometry, 2^20 bits, sized for 49,152
// keys; numbers from tests/elastic_filter_test.cc and the model):
//   - Before migration: the dlCBF's FPR 1 - (1 - 2^-25)^F <= 0.00146
//     (Claim 3) at 21.3 bits/key.
//   - Migration: the budget of 131,072 bytes becomes m = 262,144 4-bit
//     counters. Every stored fingerprint f (recovered through P_i^-1 by
//     ForEachFingerprint) is inserted `count` times with probe hash
//     Mix64(f.packed ^ salt); this is O(d B L + k F) and touches no key.
//     Because the ABF hashes the fingerprint, two keys with the same f are
//     the same element to it, exactly as in the dlCBF (Claim 2), and the
//     dlCBF's fingerprint FPR (n / (B Rn) = n * 3e-8 here) adds to the ABF's.
//   - After migration (lossless Θ = 0, T = k): FPR = (1 - (1 - k/m)^n)^k
//     (eqs. 9, 20). Migration happens on overflow, which with breadth-first
//     relocation comes only when the table is essentially full (tests: 2,691st
//     insert into 2,688 cells; here ~65.5k items). k is fixed then, optimal
//     for abf_growth = 2x those items: k = round(ln 2 * 262144 / 131072) = 1,
//     so FPR = 1 - e^{-n/m}: 0.22 at 65.5k items, 0.39 at 2x, 0.85 at 10x the
//     sizing (491,520 items), against 0.022 for a plain 1-bit Bloom filter
//     of 2^20 bits at 2x (k = 6) -- the price of 4-bit counters (erase
//     support) in a budget sized for the dlCBF's 21 bits/key. Narrower
//     counters buy positions: abf_counter_bits = 2 gives 524,288 counters,
//     k = 3, FPR 0.031 / 0.147 / 0.83 at the same loads, but 4 % of 2-bit
//     counters saturate at 2x (λ = 0.75), each then a permanent false
//     positive position under churn.
//   - Opt-in lossy mode (min_tpr < 1, allow_false_negatives): the ABF is
//     re-tuned by the model whenever n moves by retune_fraction. With the
//     automatic k = 1 at 10x, the only lossy pair (Θ = 1, T = 1) has
//     TPR = 1 - e^{-1.875} = 0.85, so at L_TPR = 0.9 AutoTune stays at the
//     lossless pair; lossy pays off when k is large for the load (set
//     abf_probes, like the paper's k = 100 at n = 5000: FPR 0.59 vs 1.0).
//   - Fast kernel (ElasticOptions::kernel = kFast): the dlCBF is a
//     FastDLeftFilter (one 64-byte line per query; D = 2: N blocks, Bb = 4
//     buckets, Rn = 8191, so B Rn = 4 N 8191 fingerprints; 16-bit cells with
//     2-bit counters). Sized by ForLoad at min(sizing_load, MaxLoad = 0.80).
//     Migration reads FastDLeftFilter::ForEachFingerprint (block cells
//     through P_i^-1, spare cells decoded); the packed fingerprint is
//     block << 16 | bucket << 13 | remainder, and later keys are mapped by
//     the same phase 1 (fastrange block, bucket, remainder; FastPackedOfHash,
//     self-checked against FingerprintOfHash at Init), so it works after
//     the kernel is freed. Counters saturate at 4: such fingerprints are
//     pinned as above. The kernel overflows only when a spare line pair is
//     full, i.e. at a load above MaxLoad (see fast_dleft_filter.cc).
//     In thread-safe mode the kernel's own lock-free readers (sequence
//     number validated) serve reads until the ABF is published.
//   - Where the migration runs. Copying costs ~50 ns per stored
//     fingerprint (k random counter writes each): 53 ms at 1M keys and
//     250 ms at 4M in one go, measured on the insert that overflowed while
//     every other writer waits for the mutex. The fast kernel therefore
//     migrates in steps (ElasticOptions::incremental_migration, default):
//     from MaxLoad of its cells on, each insert first maps 16 KiB of the new
//     ABF's pages (a page fault costs ~10 us on a VM; left to the first
//     copies they took 8 ms at 1M keys), then copies one group of 16 blocks
//     (FastDLeftFilter::ForEachFingerprintInBlocks: a spare line pair
//     serves exactly 16 blocks, so groups partition the fingerprints) and
//     mirrors itself (and every erase) into the ABF when its block is
//     already copied. Invariant: the ABF holds exactly the fingerprints of
//     the copied blocks with the dlCBF's multiplicities, so when the last
//     group is copied it equals a one-shot migration at that moment (a
//     test compares the two bit for bit, and a negative control without
//     the mirroring loses keys). Readers use the dlCBF, which still holds
//     everything, until the one release-store publishes the ABF. Measured
//     (Release, 2 vCPUs): the worst insert during the steps took 143 us at
//     1M keys and 150 us at 4M, against 53 ms and 253 ms; the steps last
//     blocks / 16 + ABF bytes / 16 KiB inserts (~2,800 at 1M keys), and
//     they start at 1.07x a 0.75-load sizing instead of the overflow at
//     1.12-1.27x. An insert that overflows during the steps copies the rest
//     at once (cause kOverflow). The general kernel relocates fingerprints
//     across the whole table, so it has no block order to copy in: it
//     still migrates in one go, on the writer, under the mutex; readers
//     never wait in either case.
//   - Trade-off: never refusing an insert costs one table scan of copying
//     (spread over inserts for the fast kernel, a stop-the-writers pause
//     for the general one) and, during the steps and in thread-safe mode
//     until ReleaseRetired(), the memory of both representations.
#include "dlcbf/core/elastic_filter.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/elastic_testing.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include "filter_policy/core/elastic_sizing.h"

namespace dlcbf {

// ---------------------------------------------------------------------------
// The kernel contract. Each method forwards to the kernel's own call of the
// same name (one virtual call per operation, where the kernel itself is an
// out-of-line call anyway); what differs between kernels is how their true
// fingerprints are packed and copied, and which stats they fill.
// ---------------------------------------------------------------------------
namespace internal {
class CountingKernel {
 public:
  using PackedFn = std::function<void(uint64_t packed, uint32_t count)>;
  virtual ~CountingKernel() = default;
  virtual OpResult InsertHash(uint64_t h) = 0;
  virtual OpResult EraseHash(uint64_t h) = 0;
  virtual bool ContainsHash(uint64_t h) const = 0;
  virtual void ContainsHashBatch(const uint64_t* h, size_t n, bool* out) const = 0;
  virtual void PrefetchHash(uint64_t h) const = 0;
  // Copy units: the stored fingerprints are reported unit range by unit
  // range, [first, end) with both multiples of UnitsPerStep() (or end =
  // Units()), each fingerprint in exactly one unit. Kernels whose moves
  // cross the table have one unit (copied in one go).
  virtual uint64_t Units() const { return 1; }
  virtual uint64_t UnitsPerStep() const { return 1; }
  virtual void ForEachPacked(uint64_t first, uint64_t end, const PackedFn& fn) const = 0;
  // The mode-kDLeft fields of `st`: the kernel's own stats, bytes and
  // predicted FPR.
  virtual void FillStats(ElasticStats* st) const = 0;
  // The kernel's serialized form, where the filter offers it (kFast).
  virtual bool Serialize(std::string*) const { return false; }
  // The same, chunk by chunk under `writers` (kDense only:
  // DenseDLeftFilter::SerializeInChunks).
  virtual bool SerializeInChunks(const DenseDLeftFilter::ImageSink&, std::mutex*, uint64_t, uint64_t*,
                                 const std::function<void(uint64_t)>*, DenseDLeftFilter::ImageLayout) const {
    return false;
  }
  virtual bool TrackChangedBlocks() { return false; }
  virtual bool CopyChangedBlocks(const DenseDLeftFilter::ImageSink&, std::mutex*, uint64_t, uint64_t*,
                                 const std::function<void(uint64_t)>*) const {
    return false;
  }
};
}  // namespace internal

namespace {

// The forwarding shared by every kernel.
template <class F>
class KernelOf : public internal::CountingKernel {
 public:
  explicit KernelOf(std::unique_ptr<F> f) : f_(std::move(f)) {}
  OpResult InsertHash(uint64_t h) override { return f_->InsertHash(h); }
  OpResult EraseHash(uint64_t h) override { return f_->EraseHash(h); }
  bool ContainsHash(uint64_t h) const override { return f_->ContainsHash(h); }
  void ContainsHashBatch(const uint64_t* h, size_t n, bool* out) const override {
    f_->ContainsHashBatch(h, n, out);
  }
  const F& filter() const { return *f_; }

 protected:
  std::unique_ptr<F> f_;
};

class GeneralKernel final : public KernelOf<DLeftCountingBloomFilter> {
 public:
  using KernelOf::KernelOf;
  void PrefetchHash(uint64_t) const override {}  // d lines: nothing to hint cheaply
  void ForEachPacked(uint64_t, uint64_t, const PackedFn& fn) const override {
    f_->ForEachFingerprint(
        [&](const DLeftCountingBloomFilter::TrueFingerprint& f, uint32_t count) { fn(f.packed, count); });
  }
  void FillStats(ElasticStats* st) const override {
    st->dleft = f_->Stats();
    st->bytes = st->dleft.bytes;
    st->predicted_fpr = st->dleft.predicted_fpr;
  }
};

class FastKernel final : public KernelOf<FastDLeftFilter> {
 public:
  using KernelOf::KernelOf;
  void PrefetchHash(uint64_t h) const override { f_->PrefetchHash(h); }
  uint64_t Units() const override { return f_->options().blocks; }
  uint64_t UnitsPerStep() const override { return FastDLeftFilter::kGroupBlocks; }
  void ForEachPacked(uint64_t first, uint64_t end, const PackedFn& fn) const override {
    // Packed as block << 16 | bucket << 13 | remainder (FastPackedOfHash).
    f_->ForEachFingerprintInBlocks(first, end, [&](const FastDLeftFilter::TrueFingerprint& f, uint32_t count) {
      fn((f.block << 16) | (uint64_t{f.bucket} << 13) | f.remainder, count);
    });
  }
  void FillStats(ElasticStats* st) const override {
    st->fast = f_->Stats();
    st->bytes = st->fast.bytes;
    st->predicted_fpr = st->fast.predicted_fpr;
  }
  bool Serialize(std::string* out) const override {
    f_->Serialize(out);
    return true;
  }
};

class DenseKernel final : public KernelOf<DenseDLeftFilter> {
 public:
  DenseKernel(std::unique_ptr<DenseDLeftFilter> f, const internal::Hashing* hashing)
      : KernelOf(std::move(f)), hashing_(hashing) {}
  void PrefetchHash(uint64_t h) const override { f_->PrefetchHash(h); }
  void ForEachPacked(uint64_t, uint64_t, const PackedFn& fn) const override {
    // Packed as internal::Hashing::Pack (bucket * Rn + remainder), the same
    // mapping PackedOfHash applies to later keys.
    f_->ForEachFingerprint([&](const DenseDLeftFilter::TrueFingerprint& f, uint32_t copies) {
      fn(hashing_->Pack(internal::Fingerprint{f.bucket, f.remainder}), copies);
    });
  }
  bool Serialize(std::string* out) const override {
    f_->Serialize(out);
    return true;
  }
  bool SerializeInChunks(const DenseDLeftFilter::ImageSink& sink, std::mutex* writers, uint64_t chunk_blocks,
                         uint64_t* items, const std::function<void(uint64_t)>* between_chunks,
                         DenseDLeftFilter::ImageLayout layout) const override {
    return f_->SerializeInChunks(sink, writers, chunk_blocks, items, between_chunks, layout);
  }
  bool TrackChangedBlocks() override { return f_->TrackChangedBlocks(); }
  bool CopyChangedBlocks(const DenseDLeftFilter::ImageSink& sink, std::mutex* writers, uint64_t chunk_blocks,
                         uint64_t* copied, const std::function<void(uint64_t)>* between_chunks) const override {
    return f_->CopyChangedBlocks(sink, writers, chunk_blocks, copied, between_chunks);
  }
  void FillStats(ElasticStats* st) const override {
    st->dense = f_->Stats();
    st->bytes = st->dense.bytes;
    st->predicted_fpr = st->dense.predicted_fpr;
  }

 private:
  const internal::Hashing* hashing_;  // owned by the ElasticFilter, outlives this
};


}  // namespace

ElasticFilter::ElasticFilter(const ElasticOptions& options) : options_(options) {
  if (fast()) {
    options_.fast = elastic_detail::SizedFast(options_);
    return;
  }
  if (options_.kernel == ElasticKernel::kDense) {
    options_.dense = elastic_detail::SizedDense(options_);
    return;
  }
  if (options_.expected_items > 0) {
    // Validate() accepted this request, so it succeeds.
    (void)DLeftOptions::ForLoad(options_.expected_items, options_.sizing_load, &options_.dleft);
  }
  options_.dleft.thread_safe = options_.thread_safe;
}

ElasticFilter::~ElasticFilter() = default;

Status ElasticFilter::Create(const ElasticOptions& options,
                                      std::unique_ptr<ElasticFilter>* out) {
  if (out == nullptr) return Status::InvalidArgument("out must not be null");
  Status s = options.Validate();
  if (!s.ok()) return s;
  std::unique_ptr<ElasticFilter> f(new ElasticFilter(options));
  s = f->Init();
  if (!s.ok()) return s;
  *out = std::move(f);
  return s;
}

Status ElasticFilter::Adopt(const ElasticOptions& options, std::unique_ptr<FastDLeftFilter> kernel, uint64_t items,
                            std::unique_ptr<ElasticFilter>* out) {
  if (kernel == nullptr) return Status::InvalidArgument("kernel must not be null");
  if (options.kernel != ElasticKernel::kFast) {
    return Status::InvalidArgument("kernel: Adopt of a FastDLeftFilter needs kernel = kFast");
  }
  ElasticOptions o = options;
  o.fast = kernel->options();
  o.thread_safe = o.fast.thread_safe;
  std::unique_ptr<ElasticFilter> f;
  Status s = NewForAdopt(o, out, &f);
  if (s.ok()) s = f->InitFast(std::move(kernel));
  if (s.ok()) {
    f->SetAdoptedItems(items);
    *out = std::move(f);
  }
  return s;
}

Status ElasticFilter::Adopt(const ElasticOptions& options, std::unique_ptr<DenseDLeftFilter> kernel, uint64_t items,
                            std::unique_ptr<ElasticFilter>* out) {
  if (kernel == nullptr) return Status::InvalidArgument("kernel must not be null");
  if (options.kernel != ElasticKernel::kDense) {
    return Status::InvalidArgument("kernel: Adopt of a DenseDLeftFilter needs kernel = kDense");
  }
  ElasticOptions o = options;
  o.dense = kernel->options();
  o.thread_safe = o.dense.thread_safe;
  std::unique_ptr<ElasticFilter> f;
  Status s = NewForAdopt(o, out, &f);
  if (s.ok()) s = f->InitDense(std::move(kernel));
  if (s.ok()) {
    f->SetAdoptedItems(items);
    *out = std::move(f);
  }
  return s;
}

// The part of Adopt shared by the kernels: the options (sized by the
// kernel, not by expected_items) must validate; then an uninitialized
// filter for them.
Status ElasticFilter::NewForAdopt(ElasticOptions o, std::unique_ptr<ElasticFilter>* out,
                                  std::unique_ptr<ElasticFilter>* f) {
  if (out == nullptr) return Status::InvalidArgument("out must not be null");
  o.expected_items = 0;  // keep the kernel's size
  Status s = o.Validate();
  if (s.ok()) f->reset(new ElasticFilter(o));
  return s;
}

// After the kernel's Init: the caller's count of the live items it holds.
void ElasticFilter::SetAdoptedItems(uint64_t items) {
  items_ = items;
  inserts_ = items;
}

bool ElasticFilter::SerializeKernel(std::string* out) const {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  if (abf_ != nullptr || kernel_ == nullptr) return false;
  return kernel_->Serialize(out);
}

bool ElasticFilter::SerializeKernelInChunks(const DenseDLeftFilter::ImageSink& sink, uint64_t chunk_blocks,
                                            uint64_t* items, const std::function<void(uint64_t)>* between_chunks,
                                            DenseDLeftFilter::ImageLayout layout) const {
  // The dense kernel without migrate_on_overflow stays this filter's for
  // its life (no migration can start during the copy).
  if (options_.kernel != ElasticKernel::kDense || options_.migrate_on_overflow) return false;
  {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (options_.thread_safe) lock.lock();
    if (abf_ != nullptr || kernel_ == nullptr) return false;
  }
  if (!options_.thread_safe) return kernel_->SerializeInChunks(sink, nullptr, chunk_blocks, items, between_chunks, layout);
  const std::function<void(uint64_t)> between = HandingOff(between_chunks);
  return kernel_->SerializeInChunks(sink, &mu_, chunk_blocks, items, &between, layout);
}

bool ElasticFilter::TrackChangedKernelBlocks() {
  if (options_.kernel != ElasticKernel::kDense || options_.migrate_on_overflow) return false;
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  if (abf_ != nullptr || kernel_ == nullptr) return false;
  return kernel_->TrackChangedBlocks();
}

bool ElasticFilter::CopyChangedKernelBlocks(const DenseDLeftFilter::ImageSink& sink, uint64_t chunk_blocks,
                                            uint64_t* copied,
                                            const std::function<void(uint64_t)>* between_chunks) const {
  if (options_.kernel != ElasticKernel::kDense || options_.migrate_on_overflow) return false;
  {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (options_.thread_safe) lock.lock();
    if (abf_ != nullptr || kernel_ == nullptr) return false;
  }
  if (!options_.thread_safe) return kernel_->CopyChangedBlocks(sink, nullptr, chunk_blocks, copied, between_chunks);
  const std::function<void(uint64_t)> between = HandingOff(between_chunks);
  return kernel_->CopyChangedBlocks(sink, &mu_, chunk_blocks, copied, &between);
}

Status ElasticFilter::InitFast(std::unique_ptr<FastDLeftFilter> given) {
  std::unique_ptr<FastDLeftFilter> fast_ = std::move(given);
  if (fast_ == nullptr) {
    Status s = FastDLeftFilter::Create(options_.fast, &fast_);
    if (!s.ok()) return s;
  }
  fast_blocks_ = options_.fast.blocks;
  fast_bucket_mask_ = (8 / options_.fast.subtables) - 1;
  // Self-check: our phase 1 must agree with the kernel's, or migrated
  // fingerprints and later lookups would disagree (false negatives).
  uint64_t state = 0xE1A571CULL;
  for (int i = 0; i < 16; ++i) {
    const uint64_t h = internal::SplitMix64(&state);
    const FastDLeftFilter::TrueFingerprint f = fast_->FingerprintOfHash(h);
    const uint64_t packed = (f.block << 16) | (uint64_t{f.bucket} << 13) | f.remainder;
    const std::string key = "elastic-self-check-" + std::to_string(i);
    if (packed != FastPackedOfHash(h) || fast_->Hash(key) != Hash(key)) {
      return Status::NotSupported(
          "ElasticFilter: fast phase 1 disagrees with FastDLeftFilter");
    }
  }
  dleft_capacity_ = 32 * fast_blocks_;
  dleft_max_counter_ = 4;
  incremental_ = options_.incremental_migration;
  incremental_at_items_ =
      FastDLeftOptions::MaxLoad(options_.fast.subtables) * static_cast<double>(dleft_capacity_);
  dleft_bytes_ = fast_->bytes();
  fingerprint_space_ = static_cast<double>(fast_blocks_) *
                       static_cast<double>(fast_bucket_mask_ + 1) * 8191.0;
  kernel_.reset(new FastKernel(std::move(fast_)));
  return Status::OK();
}

uint64_t ElasticFilter::FastPackedOfHash(uint64_t h) const {
  // FastDLeftFilter's phase 1 (design note of fast_dleft_filter.cc).
  const uint64_t block = internal::Mul64Hi(h, fast_blocks_);
  const uint64_t bucket = (h >> 32) & fast_bucket_mask_;
  const uint64_t q = (((h & 0xFFFFFFFFULL) * 8191) >> 32) + 1;
  return (block << 16) | (bucket << 13) | q;
}

uint64_t ElasticFilter::PackedOfHash(uint64_t h) const {
  return fast() ? FastPackedOfHash(h) : hashing_->Pack(hashing_->FingerprintOf(h));
}

Status ElasticFilter::Init() {
  switch (options_.kernel) {
    case ElasticKernel::kFast: return InitFast();
    case ElasticKernel::kDense: return InitDense();
    case ElasticKernel::kGeneral: break;
  }
  return InitGeneral();
}

// Self-check: our phase-1 mapping must agree with the kernel's, or
// migrated fingerprints and later lookups would disagree (false
// negatives). Then keep it: keys are mapped to fingerprints through it
// after the kernel is gone.
template <class K>
Status ElasticFilter::KeepHashing(const K& kernel, const internal::Hashing& h) {
  uint64_t state = 0xE1A571CULL;
  for (int i = 0; i < 16; ++i) {
    const uint64_t x = internal::SplitMix64(&state);
    const std::string key = "elastic-self-check-" + std::to_string(i);
    const auto f = kernel.FingerprintOfHash(x);
    uint64_t packed;
    if constexpr (std::is_same_v<K, DenseDLeftFilter>) {
      packed = h.Pack(internal::Fingerprint{f.bucket, f.remainder});
    } else {
      packed = f.packed;
    }
    if (packed != h.Pack(h.FingerprintOf(x)) || kernel.Hash(key) != h.Hash(key.data(), key.size())) {
      return Status::NotSupported("ElasticFilter: internal::Hashing disagrees with the kernel");
    }
  }
  hashing_.reset(new internal::Hashing(h));
  return Status::OK();
}

Status ElasticFilter::InitGeneral() {
  std::unique_ptr<DLeftCountingBloomFilter> dleft;
  Status s = DLeftCountingBloomFilter::Create(options_.dleft, &dleft);
  if (!s.ok()) return s;
  internal::Geometry g;
  g.subtables = options_.dleft.subtables;
  g.buckets = options_.dleft.buckets_per_subtable;
  g.cells = options_.dleft.cells_per_bucket;
  g.remainder_bits = options_.dleft.remainder_bits;
  g.counter_bits = options_.dleft.counter_bits;
  internal::PermutationKeys keys;
  const std::vector<uint64_t> pk = dleft->permutation_keys();
  for (size_t i = 0; i + 1 < pk.size() && i / 2 < internal::kMaxSubtables; i += 2) {
    keys.k[i / 2][0] = pk[i];
    keys.k[i / 2][1] = pk[i + 1];
  }
  s = KeepHashing(*dleft, internal::Hashing(g, options_.dleft.seed, keys));
  if (!s.ok()) return s;
  dleft_capacity_ = dleft->capacity_cells();
  dleft_max_counter_ = dleft->max_counter();
  dleft_bytes_ = dleft->bytes();
  fingerprint_space_ = static_cast<double>(g.buckets) * static_cast<double>(g.remainder_values());
  kernel_.reset(new GeneralKernel(std::move(dleft)));
  return Status::OK();
}

Status ElasticFilter::InitDense(std::unique_ptr<DenseDLeftFilter> given) {
  std::unique_ptr<DenseDLeftFilter> dense = std::move(given);
  Status s;
  if (dense == nullptr) {
    s = DenseDLeftFilter::Create(options_.dense, &dense);
    if (!s.ok()) return s;
  }
  const DenseDLeftOptions& o = options_.dense;
  internal::Geometry g;  // phase 1 needs B and Rn only
  g.subtables = o.subtables;
  g.buckets = o.blocks_per_subtable * o.BucketsPerBlock();
  g.cells = 1;
  g.remainder_bits = o.remainder_bits;
  s = KeepHashing(*dense, internal::Hashing(g, o.seed, internal::PermutationKeys::FromSeed(o.seed)));
  if (!s.ok()) return s;
  dleft_capacity_ = o.Blocks() * o.SlotsPerBlock();
  dleft_max_counter_ = UINT32_MAX;  // copies: nothing saturates, nothing is pinned
  dleft_bytes_ = dense->bytes();
  fingerprint_space_ = static_cast<double>(g.buckets) * static_cast<double>(g.remainder_values());
  // Every call this filter makes that writes the kernel (or reads its
  // writer state: Stats, ForEachFingerprint, Serialize) holds mu_, so the
  // kernel's own writer mutex would be a second global lock per insert;
  // its lock-free readers are unchanged. The kernel is ours alone from here.
  if (options_.thread_safe) dense->SetWritersSerializedByCaller();
  kernel_.reset(new DenseKernel(std::move(dense), hashing_.get()));
  return Status::OK();
}

uint64_t ElasticFilter::Hash(std::string_view key) const {
  if (fast()) return internal::HashKey(key.data(), key.size(), options_.fast.seed);
  return hashing_->Hash(key.data(), key.size());
}

uint64_t ElasticFilter::ProbeHashOfPacked(uint64_t packed) const {
  return internal::Mix64(packed ^ options_.abf_seed);
}

uint64_t ElasticFilter::ProbeHash(uint64_t key_hash) const {
  return ProbeHashOfPacked(PackedOfHash(key_hash));
}

bool ElasticFilter::StartMigration() {
  const uint32_t w = options_.abf_counter_bits;
  const uint64_t words = std::max<uint64_t>(1, dleft_bytes_ / 8);
  const uint64_t m = std::min<uint64_t>(words * (64 / w), uint64_t{1} << 32);
  const double grown = options_.abf_growth * static_cast<double>(std::max<uint64_t>(items_, 1));
  uint32_t k = options_.abf_probes != 0
                   ? options_.abf_probes
                   : OptimalNumProbes(m, static_cast<uint64_t>(std::ceil(grown)));
  k = static_cast<uint32_t>(std::min<uint64_t>(k, m));

  AutoscalingOptions ao;
  ao.counting.num_counters = m;
  ao.counting.num_probes = k;
  ao.counting.counter_bits = w;
  ao.counting.seed = options_.abf_seed;
  ao.counting.thread_safe = false;  // writers already serialize on mu_
  ao.counting.max_bytes = ~uint64_t{0};
  ao.min_tpr = options_.min_tpr;
  ao.allow_false_negatives = options_.allow_false_negatives;
  if (!AutoscalingBloomFilter::Create(ao, &pending_).ok()) {
    pending_.reset();
    return false;
  }
  copied_blocks_ = 0;
  copied_fingerprints_ = 0;
  prefaulted_bytes_ = 0;
  migrating_flag_.store(true, std::memory_order_release);
  return true;
}

void ElasticFilter::CopyGroups(uint64_t groups) {
  AutoscalingBloomFilter* abf = pending_.get();
  auto carry = [&](uint64_t packed, uint32_t count) {
    const uint64_t ph = ProbeHashOfPacked(packed);
    // The ABF's Insert is always kOk (a counter saturates, it never fails).
    for (uint32_t i = 0; i < count; ++i) (void)abf->InsertHash(ph);
    // A saturated dlCBF counter hides the true multiplicity: never let
    // erases take this fingerprint out (the dlCBF's sticky rule).
    if (count >= dleft_max_counter_) pinned_.insert(packed);
    ++copied_fingerprints_;
  };
  const uint64_t n = kernel_->Units();
  if (copied_blocks_ >= n) return;
  const uint64_t step = kernel_->UnitsPerStep();
  const uint64_t left = (n - copied_blocks_ + step - 1) / step;  // steps still to copy
  const uint64_t end = std::min<uint64_t>(n, copied_blocks_ + std::min(groups, left) * step);
  kernel_->ForEachPacked(copied_blocks_, end, carry);
  copied_blocks_ = end;
}

void ElasticFilter::FinishMigration(MigrationCause cause) {
  CopyGroups(~uint64_t{0});  // everything not yet copied
  if (options_.min_tpr < 1.0) pending_->AutoTune(options_.min_tpr);
  last_tuned_n_ = pending_->n();

  abf_ = std::move(pending_);
  published_.store(abf_.get(), std::memory_order_release);  // the switch
  migrating_flag_.store(false, std::memory_order_release);
  if (!options_.thread_safe) kernel_.reset();  // no reader can be inside it

  cause_ = cause;
  migrated_at_insert_ = inserts_;
  migrated_items_ = items_;
  migrated_fingerprints_ = copied_fingerprints_;
}

bool ElasticFilter::Migrate(MigrationCause cause) {
  if (pending_ == nullptr && !StartMigration()) return false;
  FinishMigration(cause);
  return true;
}

#ifdef DLCBF_TESTING
namespace {
std::atomic<bool> g_skip_mirror_for_testing{false};  // testing/elastic_testing.h
std::atomic<bool> g_chunk_handoff_for_testing{true};
std::atomic<uint64_t> g_chunk_handoff_micros_for_testing{0};
std::atomic<void (*)()> g_writer_waits_hook_for_testing{nullptr};
}  // namespace

namespace internal {
void SetElasticSkipMirrorForTesting(bool skip) {
  g_skip_mirror_for_testing.store(skip, std::memory_order_relaxed);
}
void SetElasticChunkHandoffForTesting(bool on, uint64_t max_micros) {
  g_chunk_handoff_for_testing.store(on, std::memory_order_relaxed);
  g_chunk_handoff_micros_for_testing.store(max_micros, std::memory_order_relaxed);
}
void SetElasticWriterWaitsHookForTesting(void (*hook)()) { g_writer_waits_hook_for_testing.store(hook); }
}  // namespace internal
#define DLCBF_ELASTIC_SKIP_MIRROR() g_skip_mirror_for_testing.load(std::memory_order_relaxed)
#define DLCBF_ELASTIC_NO_HANDOFF() (!g_chunk_handoff_for_testing.load(std::memory_order_relaxed))
#else
#define DLCBF_ELASTIC_SKIP_MIRROR() false
#define DLCBF_ELASTIC_NO_HANDOFF() false
#endif

// The writers' lock, handed to them between a chunked copy's chunks.
// std::mutex is not fair: a copy that unlocks and locks again at once (a
// sparse base's chunks of empty blocks have nothing to write in between)
// can take it back before a writer it woke gets to run, chunk after
// chunk. A writer then slept through most of a copy: 10-25 ms at the end
// of each first base of a 300 MB index on a 2-vCPU VM, where a chunk
// takes tens of microseconds (livekey_scale_bench, 2026-11-28; gone with
// the hand-off in six runs of six). A writer that finds the lock taken
// counts itself in writers_waiting_ while it waits; between chunks the
// copy yields until none waits, or for at most kChunkHandoffMicros (a
// stream of writers then still lets the copy go on, a chunk at a time: a
// 300 MB index's 1,144 chunks may take up to 1.1 s longer, with
// LiveKeyDB's rebuild_mu held). A writer not yet counted, or not
// scheduled within the bound, may still wait a chunk; so may the
// other lockers of mu_ (Stats, MemoryUsage...), which are not counted.
// An uncontended writer pays what lock() costs: one try_lock.
void ElasticFilter::LockWriters(std::unique_lock<std::mutex>* lock) const {
  if (lock->try_lock()) return;
  writers_waiting_.fetch_add(1, std::memory_order_relaxed);
#ifdef DLCBF_TESTING
  if (void (*hook)() = g_writer_waits_hook_for_testing.load()) hook();
#endif
  lock->lock();
  writers_waiting_.fetch_sub(1, std::memory_order_relaxed);
}

std::function<void(uint64_t)> ElasticFilter::HandingOff(const std::function<void(uint64_t)>* between_chunks) const {
  return [this, between_chunks](uint64_t blocks) {
    LetWaitingWritersIn();
    if (between_chunks != nullptr && *between_chunks) (*between_chunks)(blocks);
  };
}

void ElasticFilter::LetWaitingWritersIn() const {
  if (DLCBF_ELASTIC_NO_HANDOFF() || writers_waiting_.load(std::memory_order_relaxed) == 0) return;
  uint64_t max_micros = kChunkHandoffMicros;
#ifdef DLCBF_TESTING
  if (const uint64_t t = g_chunk_handoff_micros_for_testing.load(std::memory_order_relaxed)) max_micros = t;
#endif
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(max_micros);
  while (writers_waiting_.load(std::memory_order_relaxed) != 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::yield();  // (the woken writer may need this core)
  }
}

// The block of a key hash is the top field of its packed fingerprint (fast
// kernel); blocks below copied_blocks_ are in the ABF already.
void ElasticFilter::MirrorInsert(uint64_t hash) {
  if (DLCBF_ELASTIC_SKIP_MIRROR()) return;
  const uint64_t packed = PackedOfHash(hash);
  if ((packed >> 16) < copied_blocks_) (void)pending_->InsertHash(ProbeHashOfPacked(packed));  // always kOk
}

void ElasticFilter::MirrorErase(uint64_t hash) {
  if (DLCBF_ELASTIC_SKIP_MIRROR()) return;
  const uint64_t packed = PackedOfHash(hash);
  if ((packed >> 16) >= copied_blocks_) return;  // its copy is still to come
  if (!pinned_.empty() && pinned_.count(packed) != 0) return;  // sticky, as after the switch
  // kOk: the dlCBF just erased this fingerprint, so its copied counters are set.
  (void)pending_->EraseHash(ProbeHashOfPacked(packed));
}

void ElasticFilter::MaybeRetune() {
  if (options_.min_tpr >= 1.0) return;  // lossless: (0, k) forever
  const double n = static_cast<double>(abf_->n());
  const double last = static_cast<double>(std::max<uint64_t>(last_tuned_n_, 1));
  if (std::fabs(n - last) > options_.retune_fraction * last) {
    abf_->AutoTune(options_.min_tpr);
    last_tuned_n_ = abf_->n();
  }
}

OpResult ElasticFilter::InsertHash(uint64_t hash) {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) LockWriters(&lock);
  return InsertHashLocked(hash);
}

void ElasticFilter::InsertHashBatch(const uint64_t* hashes, size_t n, OpResult* out) {
  // How far ahead the kernel's lines are requested: enough inserts to
  // cover a DRAM round trip (~100 ns) at ~30-60 ns per cached insert.
  constexpr size_t kAhead = 8;
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) LockWriters(&lock);
  for (size_t i = 0; i < n && i < kAhead; ++i) PrefetchHash(hashes[i]);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) PrefetchHash(hashes[i + kAhead]);
    out[i] = InsertHashLocked(hashes[i]);
  }
}

OpResult ElasticFilter::InsertHashLocked(uint64_t hash) {
  ++inserts_;
  if (abf_ == nullptr) {
    if (kernel_->InsertHash(hash) == OpResult::kOk) {
      ++items_;
      if (pending_ != nullptr) {  // incremental migration under way
        MirrorInsert(hash);
        // One step: map the next 16 KiB of the new ABF (page faults cost
        // ~10 us each on a VM, ~7 ms for 3 MB if left to the first copies),
        // or, once all are mapped, copy the next group of blocks.
        const uint64_t mapped = pending_->Prefault(prefaulted_bytes_, 16 << 10);
        prefaulted_bytes_ += mapped;
        if (mapped == 0) CopyGroups(1);
        if (copied_blocks_ >= kernel_->Units()) FinishMigration(MigrationCause::kIncremental);
        return OpResult::kOk;
      }
      if (incremental_ && !load_migration_failed_ &&
          static_cast<double>(items_) >= incremental_at_items_) {
        // Allocation failure: stay a dlCBF; overflow will retry at once.
        if (!StartMigration()) load_migration_failed_ = true;
        return OpResult::kOk;
      }
      if (options_.migrate_at_load > 0 && !load_migration_failed_ &&
          static_cast<double>(items_) >
              options_.migrate_at_load * static_cast<double>(dleft_capacity_)) {
        // On allocation failure stay a dlCBF (the insert itself succeeded)
        // and do not retry on every insert; overflow will retry.
        if (!Migrate(MigrationCause::kLoadThreshold)) load_migration_failed_ = true;
      }
      return OpResult::kOk;
    }
    // kOverflow: the dlCBF is unchanged; move to the ABF and insert there
    // (or leave the key to the caller: migrate_on_overflow = false).
    if (!options_.migrate_on_overflow && pending_ == nullptr) {
      ++failed_inserts_;
      return OpResult::kOverflow;
    }
    if (!Migrate(MigrationCause::kOverflow)) {
      ++failed_inserts_;
      return OpResult::kOverflow;
    }
  }
  (void)abf_->InsertHash(ProbeHash(hash));  // always kOk (saturating counters)
  ++items_;
  MaybeRetune();
  return OpResult::kOk;
}

OpResult ElasticFilter::EraseHash(uint64_t hash) {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) LockWriters(&lock);
  if (abf_ == nullptr) {
    const OpResult r = kernel_->EraseHash(hash);
    if (r == OpResult::kOk) {
      if (items_ > 0) --items_;
      if (pending_ != nullptr) MirrorErase(hash);
    }
    return r;
  }
  const uint64_t packed = PackedOfHash(hash);
  if (!pinned_.empty() && pinned_.count(packed) != 0) {
    ++pinned_erases_;
    if (items_ > 0) --items_;
    return OpResult::kOk;
  }
  const OpResult r = abf_->EraseHash(ProbeHashOfPacked(packed));
  if (r == OpResult::kOk) {
    if (items_ > 0) --items_;
    MaybeRetune();
  }
  return r;
}

bool ElasticFilter::ContainsHash(uint64_t hash) const {
  const AutoscalingBloomFilter* a = published_.load(std::memory_order_acquire);
  if (a == nullptr) return kernel_->ContainsHash(hash);
  return a->ContainsHash(ProbeHash(hash));
}

void ElasticFilter::ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const {
  const AutoscalingBloomFilter* a = published_.load(std::memory_order_acquire);
  if (a == nullptr) {
    kernel_->ContainsHashBatch(hashes, n, out);
    return;
  }
  uint64_t probe[32];  // the ABF's batched probe prefetches its words
  for (size_t i = 0; i < n; i += 32) {
    const size_t m = std::min<size_t>(32, n - i);
    for (size_t j = 0; j < m; ++j) probe[j] = ProbeHash(hashes[i + j]);
    a->ContainsHashBatch(probe, m, out + i);
  }
}

void ElasticFilter::PrefetchHash(uint64_t hash) const {
  __builtin_prefetch(&mu_, 1);
  if (published_.load(std::memory_order_acquire) == nullptr) kernel_->PrefetchHash(hash);
}

ElasticMode ElasticFilter::mode() const {
  return published_.load(std::memory_order_acquire) == nullptr ? ElasticMode::kDLeft
                                                               : ElasticMode::kAutoscaling;
}

void ElasticFilter::ReleaseRetired() {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  if (abf_ != nullptr) kernel_.reset();
}

ElasticFilter::Memory ElasticFilter::MemoryUsage() const {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  Memory m;
  if (abf_ == nullptr) {
    m.bytes = dleft_bytes_ + (pending_ != nullptr ? pending_->counting().bytes() : 0);
  } else {
    m.bytes = abf_->counting().bytes();
    m.retained_bytes = kernel_ != nullptr ? dleft_bytes_ : 0;
  }
  return m;
}

ElasticStats ElasticFilter::Stats() const {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (options_.thread_safe) lock.lock();
  ElasticStats st;
  st.items = items_;
  st.inserts = inserts_;
  st.failed_inserts = failed_inserts_;
  st.migration_cause = cause_;
  st.migrated_at_insert = migrated_at_insert_;
  st.migrated_items = migrated_items_;
  st.migrated_fingerprints = migrated_fingerprints_;
  st.pinned_fingerprints = pinned_.size();
  st.pinned_erases = pinned_erases_;
  if (abf_ == nullptr) {
    st.mode = ElasticMode::kDLeft;
    st.migration_in_progress = pending_ != nullptr;
    st.migration_copied_blocks = pending_ != nullptr ? copied_blocks_ : 0;
    kernel_->FillStats(&st);
    if (pending_ != nullptr) st.bytes += pending_->counting().bytes();
    return st;
  }
  st.mode = ElasticMode::kAutoscaling;
  st.abf = abf_->Stats();
  st.bytes = abf_->counting().bytes();
  st.retained_bytes = kernel_ != nullptr ? dleft_bytes_ : 0;
  // A stored fingerprint collision (<= n distinct fingerprints) or an ABF
  // false positive on a fresh fingerprint.
  const double n = static_cast<double>(st.abf.n);
  const double collide =
      n > 0 ? -std::expm1(n * std::log1p(-1.0 / fingerprint_space_)) : 0.0;
  st.predicted_fpr = 1.0 - (1.0 - collide) * (1.0 - st.abf.model.fpr);
  return st;
}

}  // namespace dlcbf
