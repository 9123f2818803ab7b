// Autoscaling Bloom filter (ABF): a counting Bloom filter read through a
// binarization threshold Θ and a decision threshold T.
//
// What it is
//   Kleyko, Rahimi, Gayler, Osipov, "Autoscaling Bloom filter: controlling
//   trade-off between true and false positives" (2019), §3.4: the filter
//   is a CBF (counting_bloom_filter.h, w-bit saturating counters, k distinct
//   probes); a query q is a member iff at least T of its k counters exceed
//   Θ (ABF = [CBF > Θ], eq. 12; dot product with q >= T). n is tracked from
//   inserts and erases, and AutoTune(L_TPR) re-picks (Θ, T) for the current
//   n with the analytic optimizer (abf_model.h, eq. 22), without touching
//   the counters: the filter "autoscales" with n at fixed m and k.
//
// Why it exists
//   A Bloom filter's k is fixed when it is built; when n drifts far from the
//   design point its FPR degrades and the classic fix is a rebuild with a new
//   k (paper §4.3: 23 rebuilds over n = 50..5000). The ABF trades a bounded
//   loss of true positives for a much lower FPR without a rebuild, and it is
//   the fallback representation of the elastic filter (elastic_filter.h).
//
// LOSSLESS BY DEFAULT -- read before changing thresholds
//   Θ = 0, T = k is the standard Bloom filter: no false negatives, ever.
//   Every constructor starts there, AutoscalingOptions::min_tpr defaults to
//   1.0, and AutoTune(1.0) always returns Θ = 0, T = k without consulting
//   the model. Why that is the only useful guaranteed-lossless setting:
//   a live key's counters are each >= 1 (its own increment; saturated
//   counters are never decremented), so with Θ = 0 its dot product is k and
//   any T <= k accepts it (T = k has the lowest FPR). For Θ >= 1 nothing
//   bounds a key's counters above 1 -- a filter holding just that key has
//   all k counters at exactly 1 -- so every T >= 1 can reject it. Hence the
//   lossless settings are exactly {Θ = 0} and {T = 0} (accept everything).
//   Lossy settings (Θ >= 1 and T >= 1, i.e. TPR < 1 by design) are
//   approximate membership that MAY MISS STORED KEYS. They are refused
//   (InvalidArgument) unless AutoscalingOptions::allow_false_negatives is
//   set, and a serialized lossy filter is refused by Deserialize unless the
//   reader opts in too. Never use them on a RocksDB read path, where a
//   false negative is a wrong answer, not a slower one.
//
// Thread safety
//   Same model as CountingBloomFilter: readers (Contains*, DotProductHash)
//   never lock and may run concurrently with one writer in every mode;
//   with counting.thread_safe = true, Insert/Erase/Clear/SetThresholds/
//   AutoTune may be called from any thread. (Θ, T) are published as one
//   atomic word, so a reader never mixes a new Θ with an old T.
//
// Ownership
//   Create/Deserialize hand out a std::unique_ptr owning the counters.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dlcbf/model/abf_model.h"
#include "dlcbf/core/counting_bloom_filter.h"
#include "dlcbf/core/counting_filter.h"
#include <string_view>
#include "dlcbf/core/status.h"

namespace dlcbf {

struct AutoscalingOptions {
  // m, k, w, seed, thread_safe of the underlying CBF. Θ ranges over
  // [0, 2^w - 2]; wide counters (w = 8) give the optimizer room at high
  // load (the paper's Fig. 4 picks Θ = 48 at n = 5000).
  CountingBloomOptions counting;
  // L_TPR used by AutoTune(). 1.0 = lossless (Θ = 0, T = k).
  double min_tpr = 1.0;
  // Must be true for any lossy (Θ, T). See the header comment.
  bool allow_false_negatives = false;

  // OK, or InvalidArgument naming the field (counting.*, min_tpr).
  Status Validate() const;
};

struct AutoscalingStats {
  CountingBloomStats counting;
  uint32_t theta = 0;
  uint32_t decision_threshold = 0;  // T
  bool lossless = true;
  uint64_t n = 0;                   // tracked items (inserts - erases)
  uint64_t autotunes = 0;           // AutoTune calls that succeeded
  // The model (abf_model.h) at (m, k, n, Θ, T, counter_max): predicted
  // TPR, FPR and ACC for n distinct keys.
  abf::ModelPoint model;
};

class AutoscalingBloomFilter : public CountingFilterApi<AutoscalingBloomFilter> {
 public:
  // Create / Deserialize / Serialize: the life cycle of CountingFilterApi
  // (counting_filter.h). Create starts at Θ = 0, T = k.
  static Status Create(const AutoscalingOptions& options,
                                std::unique_ptr<AutoscalingBloomFilter>* out);

  // Format: filter_policy/FORMATS.md, "Autoscaling Bloom filter". Also
  // InvalidArgument when the stored thresholds are lossy and
  // options.allow_false_negatives is false.
  static Status Deserialize(std::string_view data, std::unique_ptr<AutoscalingBloomFilter>* out,
                            const DeserializeOptions& options = {});

  ~AutoscalingBloomFilter();

  // The primitives of CountingFilterApi (counting_filter.h); the key forms
  // and key batches come from there.
  //   Hash, InsertHash, EraseHash: the inner CountingBloomFilter's (Insert
  //     always kOk; Erase kNotFound and no change unless all k counters
  //     are nonzero), with n tracked. Thresholds are not re-tuned
  //     implicitly; call AutoTune.
  //   ContainsHash: at least T of the key's k counters exceed Θ. Never
  //     false for a live key while lossless() (the default); with lossy
  //     thresholds set on purpose a live key may read absent.
  uint64_t Hash(std::string_view key) const { return cbf_->Hash(key); }
  OpResult InsertHash(uint64_t hash) { return cbf_->InsertHash(hash); }
  OpResult EraseHash(uint64_t hash) { return cbf_->EraseHash(hash); }
  bool ContainsHash(uint64_t hash) const;
  void ContainsHashBatch(const uint64_t* hashes, size_t n, bool* out) const;

  // Number of the key's k counters above Θ (the dot product d of §3.4).
  uint32_t DotProductHash(uint64_t hash) const;

  // Sets (Θ, T). InvalidArgument if T > k, Θ > 2^w - 2, or the pair is
  // lossy (Θ >= 1 and T >= 1) without allow_false_negatives.
  Status SetThresholds(uint32_t theta, uint32_t T);

  // Re-picks (Θ, T) for the current n: eq. 22 maximizing ACC subject to
  // TPR >= l_tpr. l_tpr must be in [0, 1]; l_tpr == 1 -> Θ = 0, T = k
  // (always; the model is not consulted). l_tpr < 1 without
  // allow_false_negatives -> InvalidArgument and no change. `result` (may
  // be null) receives the chosen point.
  Status AutoTune(double l_tpr, abf::Tuning* result = nullptr);
  Status AutoTune() { return AutoTune(options_.min_tpr); }

  uint32_t theta() const;
  uint32_t decision_threshold() const;
  bool lossless() const;
  uint64_t n() const { return cbf_->items(); }

  // Zeroes the counters and resets to Θ = 0, T = k.
  void Clear();

  AutoscalingStats Stats() const;

  void Serialize(std::string* out) const;

  const AutoscalingOptions& options() const { return options_; }
  const CountingBloomFilter& counting() const { return *cbf_; }
  // CountingBloomFilter::Prefault of the counter array (same contract).
  uint64_t Prefault(uint64_t first_byte, uint64_t max_bytes) {
    return cbf_->Prefault(first_byte, max_bytes);
  }
  abf::FilterShape Shape() const;  // (m, k, n, 2^w - 1) for the model

 private:
  AutoscalingBloomFilter(const AutoscalingOptions& options,
                         std::unique_ptr<CountingBloomFilter> cbf);
  static uint64_t Pack(uint32_t theta, uint32_t T) {
    return (uint64_t{theta} << 32) | T;
  }
  Status CheckThresholds(uint32_t theta, uint32_t T, bool allow_lossy) const;

  AutoscalingOptions options_;
  std::unique_ptr<CountingBloomFilter> cbf_;
  std::atomic<uint64_t> thresholds_;  // Θ << 32 | T
  std::atomic<uint64_t> autotunes_{0};
};

}  // namespace dlcbf
