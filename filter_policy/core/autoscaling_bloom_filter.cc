// Autoscaling Bloom filter: a CBF read through (Θ, T) (Kleyko et al. 2019,
// §3.4-§4.3), lossless (Θ = 0, T = k) unless the caller opts in.
//
// Design note:
//   - Expected FPR (paper Fig. 2: m = 10,000, k = 100, n = 500). Lossless
//     Θ = 0, T = k: FPR = P_1^k = 0.517 (a standard Bloom filter at 5x its
//     optimal k). Opt-in L_TPR = 0.97: AutoTune picks Θ = 4, T = 65 with
//     model TPR 0.977 / FPR 0.043 (paper: 0.98 / 0.04); Monte-Carlo over
//     our implementation agrees within sampling error (tools/abf_model,
//     tests/abf_test.cc). At n = 5000, L_TPR = 0.9: Θ = 48, T = 57,
//     FPR 0.587 vs 1.000 for the untuned Bloom filter (paper Fig. 4).
//   - Space. Exactly the CBF's: m * w bits (w in {1,2,4,8}); (Θ, T) is one
//     atomic word. Θ <= 2^w - 2, so the tunable range is set by w: 4-bit
//     counters allow Θ <= 14 (enough near the optimal-k load λ ~ 0.7, not
//     for Fig. 4's λ = 50, which needs w >= 7).
//   - Lookup cost. Lossless: the CBF's early-exit "all k nonzero" probe.
//     Lossy: counts positions above Θ and stops as soon as T is reached or
//     can no longer be reached.
//   - Trade-off. A lossy ABF's FPR falls far below the Bloom filter's at
//     the same m and k, but stored keys are missed with probability
//     1 - TPR. That is why lossy pairs need allow_false_negatives and why
//     AutoTune(1.0) never asks the model (see abf_model.h "Lossless
//     requests" for the proof that Θ = 0 is the only lossless Θ).
#include "dlcbf/core/autoscaling_bloom_filter.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"

namespace dlcbf {

namespace {

// Serialized format: filter_policy/FORMATS.md, "Autoscaling Bloom filter".
constexpr uint32_t kMagic = 0x31464241;
constexpr uint8_t kVersion = 1;

uint64_t DoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  return u;
}
double BitsDouble(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof(d));
  return d;
}

bool ValidLtpr(double l) { return l >= 0.0 && l <= 1.0; }  // false for NaN

}  // namespace

Status AutoscalingOptions::Validate() const {
  Status s = counting.Validate();
  if (!s.ok()) {
    return Status::InvalidArgument("counting." + s.message());
  }
  if (!ValidLtpr(min_tpr)) {
    return Status::InvalidArgument("min_tpr (L_TPR) must be in [0, 1]");
  }
  if (min_tpr < 1.0 && !allow_false_negatives) {
    return Status::InvalidArgument(
        "min_tpr (L_TPR) < 1 admits false negatives; set allow_false_negatives");
  }
  return Status::OK();
}

AutoscalingBloomFilter::AutoscalingBloomFilter(const AutoscalingOptions& options,
                                               std::unique_ptr<CountingBloomFilter> cbf)
    : options_(options), cbf_(std::move(cbf)), thresholds_(Pack(0, cbf_->num_probes())) {}

AutoscalingBloomFilter::~AutoscalingBloomFilter() = default;

Status AutoscalingBloomFilter::Create(const AutoscalingOptions& options,
                                               std::unique_ptr<AutoscalingBloomFilter>* out) {
  if (out == nullptr) return Status::InvalidArgument("out must not be null");
  Status s = options.Validate();
  if (!s.ok()) return s;
  std::unique_ptr<CountingBloomFilter> cbf;
  s = CountingBloomFilter::Create(options.counting, &cbf);
  if (!s.ok()) return s;
  out->reset(new AutoscalingBloomFilter(options, std::move(cbf)));
  return Status::OK();
}

uint32_t AutoscalingBloomFilter::theta() const {
  return static_cast<uint32_t>(thresholds_.load(std::memory_order_acquire) >> 32);
}
uint32_t AutoscalingBloomFilter::decision_threshold() const {
  return static_cast<uint32_t>(thresholds_.load(std::memory_order_acquire));
}
bool AutoscalingBloomFilter::lossless() const {
  const uint64_t p = thresholds_.load(std::memory_order_acquire);
  return (p >> 32) == 0 || static_cast<uint32_t>(p) == 0;
}

abf::FilterShape AutoscalingBloomFilter::Shape() const {
  abf::FilterShape s;
  s.m = cbf_->num_counters();
  s.k = cbf_->num_probes();
  s.n = cbf_->items();
  s.counter_max = cbf_->max_counter();
  return s;
}

bool AutoscalingBloomFilter::ContainsHash(uint64_t hash) const {
  const uint64_t p = thresholds_.load(std::memory_order_acquire);
  const uint32_t theta = static_cast<uint32_t>(p >> 32);
  const uint32_t T = static_cast<uint32_t>(p);
  if (theta == 0 && T == cbf_->num_probes()) return cbf_->ContainsHash(hash);
  if (T == 0) return true;
  return cbf_->DotProductHash(hash, theta, T) >= T;
}

uint32_t AutoscalingBloomFilter::DotProductHash(uint64_t hash) const {
  return cbf_->DotProductHash(hash, theta());
}

void AutoscalingBloomFilter::ContainsHashBatch(const uint64_t* hashes, size_t n,
                                               bool* out) const {
  const uint64_t p = thresholds_.load(std::memory_order_acquire);
  if ((p >> 32) == 0 && static_cast<uint32_t>(p) == cbf_->num_probes()) {
    cbf_->ContainsHashBatch(hashes, n, out);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = ContainsHash(hashes[i]);
}

Status AutoscalingBloomFilter::CheckThresholds(uint32_t theta, uint32_t T,
                                                        bool allow_lossy) const {
  if (T > cbf_->num_probes()) {
    return Status::InvalidArgument("T (decision threshold) must be <= k = " +
                                            std::to_string(cbf_->num_probes()));
  }
  if (theta >= cbf_->max_counter()) {
    return Status::InvalidArgument(
        "theta must be <= 2^w - 2 = " + std::to_string(cbf_->max_counter() - 1) +
        " (a larger theta binarizes every counter to 0)");
  }
  if (theta != 0 && T != 0 && !allow_lossy) {
    return Status::InvalidArgument(
        "theta >= 1 with T >= 1 admits false negatives; set allow_false_negatives");
  }
  return Status::OK();
}

Status AutoscalingBloomFilter::SetThresholds(uint32_t theta, uint32_t T) {
  Status s = CheckThresholds(theta, T, options_.allow_false_negatives);
  if (!s.ok()) return s;
  thresholds_.store(Pack(theta, T), std::memory_order_release);
  return s;
}

Status AutoscalingBloomFilter::AutoTune(double l_tpr, abf::Tuning* result) {
  if (!ValidLtpr(l_tpr)) {
    return Status::InvalidArgument("l_tpr (L_TPR) must be in [0, 1]");
  }
  abf::Tuning t;
  if (l_tpr >= 1.0) {
    // Lossless: fixed answer, independent of the model (see header).
    t = abf::OptimizeT(Shape(), 0, 1.0);
  } else {
    if (!options_.allow_false_negatives) {
      return Status::InvalidArgument(
          "l_tpr (L_TPR) < 1 admits false negatives; set allow_false_negatives");
    }
    t = abf::OptimizeThresholds(Shape(), l_tpr);
  }
  Status s = SetThresholds(t.theta, t.T);
  if (!s.ok()) return s;
  autotunes_.fetch_add(1, std::memory_order_relaxed);
  if (result != nullptr) *result = t;
  return s;
}

void AutoscalingBloomFilter::Clear() {
  cbf_->Clear();
  thresholds_.store(Pack(0, cbf_->num_probes()), std::memory_order_release);
  autotunes_.store(0, std::memory_order_relaxed);
}

AutoscalingStats AutoscalingBloomFilter::Stats() const {
  AutoscalingStats st;
  st.counting = cbf_->Stats();
  const uint64_t p = thresholds_.load(std::memory_order_acquire);
  st.theta = static_cast<uint32_t>(p >> 32);
  st.decision_threshold = static_cast<uint32_t>(p);
  st.lossless = st.theta == 0 || st.decision_threshold == 0;
  st.n = st.counting.items;
  st.autotunes = autotunes_.load(std::memory_order_relaxed);
  abf::FilterShape shape = Shape();
  shape.n = st.n;
  st.model = abf::Evaluate(shape, st.theta, st.decision_threshold);
  return st;
}

void AutoscalingBloomFilter::Serialize(std::string* out) const {
  const size_t start = out->size();
  const uint64_t p = thresholds_.load(std::memory_order_acquire);
  internal::PutFixed32(out, kMagic);
  internal::PutFixed8(out, kVersion);
  internal::PutFixed8(out, 0);
  internal::PutFixed16(out, 0);
  internal::PutFixed32(out, static_cast<uint32_t>(p >> 32));
  internal::PutFixed32(out, static_cast<uint32_t>(p));
  internal::PutFixed64(out, DoubleBits(options_.min_tpr));
  internal::PutFixed64(out, autotunes_.load(std::memory_order_relaxed));
  std::string cbf;
  cbf_->Serialize(&cbf);
  internal::PutFixed64(out, cbf.size());
  out->append(cbf);
  internal::PutFixed64(out, internal::HashKey(out->data() + start, out->size() - start, 0));
}

Status AutoscalingBloomFilter::Deserialize(std::string_view data, std::unique_ptr<AutoscalingBloomFilter>* out,
                                           const DeserializeOptions& read_options) {
  if (out == nullptr) return Status::InvalidArgument("out must not be null");
  internal::Decoder dec(data.data(), data.size());
  uint32_t magic = 0, theta = 0, T = 0;
  uint8_t version = 0, r8 = 0;
  uint16_t r16 = 0;
  uint64_t ltpr_bits = 0, autotunes = 0, cbf_len = 0;
  if (!dec.Get32(&magic) || !dec.Get8(&version) || !dec.Get8(&r8) || !dec.Get16(&r16) ||
      !dec.Get32(&theta) || !dec.Get32(&T) || !dec.Get64(&ltpr_bits) ||
      !dec.Get64(&autotunes) || !dec.Get64(&cbf_len)) {
    return Status::Corruption("autoscaling Bloom filter: truncated header");
  }
  if (magic != kMagic) return Status::Corruption("autoscaling Bloom filter: bad magic");
  if (version != kVersion) {
    return Status::Corruption("autoscaling Bloom filter: unsupported version " +
                              std::to_string(version));
  }
  if (r8 != 0 || r16 != 0) {
    return Status::Corruption("autoscaling Bloom filter: nonzero reserved field");
  }
  if (dec.remaining() < 8 || cbf_len != dec.remaining() - 8) {
    return Status::Corruption("autoscaling Bloom filter: length does not match input size");
  }
  const uint64_t expected = internal::HashKey(data.data(), data.size() - 8, 0);
  if (internal::DecodeFixed64(data.data() + data.size() - 8) != expected) {
    return Status::Corruption("autoscaling Bloom filter: checksum mismatch");
  }
  const double min_tpr = BitsDouble(ltpr_bits);
  if (!ValidLtpr(min_tpr)) {
    return Status::Corruption("autoscaling Bloom filter: min_tpr outside [0, 1]");
  }
  std::unique_ptr<CountingBloomFilter> cbf;
  DeserializeOptions inner;
  inner.thread_safe = read_options.thread_safe;
  Status s = CountingBloomFilter::Deserialize(std::string_view(dec.data(), cbf_len), &cbf, inner);
  if (!s.ok()) return s;
  AutoscalingOptions opt;
  opt.counting = cbf->options();
  opt.min_tpr = min_tpr;
  opt.allow_false_negatives = read_options.allow_false_negatives;
  std::unique_ptr<AutoscalingBloomFilter> f(new AutoscalingBloomFilter(opt, std::move(cbf)));
  if (T > f->cbf_->num_probes() || theta >= f->cbf_->max_counter()) {
    return Status::Corruption("autoscaling Bloom filter: thresholds out of range for k, w");
  }
  s = f->CheckThresholds(theta, T, read_options.allow_false_negatives);
  if (!s.ok()) return s;  // lossy without opt-in: InvalidArgument
  if (min_tpr < 1.0 && !read_options.allow_false_negatives) {
    // Keep the invariant "min_tpr < 1 implies opted in": a lossless filter
    // saved with L_TPR < 1 loads with the safe default instead.
    f->options_.min_tpr = 1.0;
  }
  f->thresholds_.store(Pack(theta, T), std::memory_order_release);
  f->autotunes_.store(autotunes, std::memory_order_relaxed);
  *out = std::move(f);
  return Status::OK();
}

}  // namespace dlcbf
