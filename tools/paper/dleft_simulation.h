// The paper-reproduction simulation of Bonomi et al., ESA 2006, §5.1-5.2,
// shared by tools/dlcbf_sim and tests/dleft_paper_test (header-only so both
// run the very same loop).
//
// One trial (paper §5.1):
//   1. Create a DLeftCountingBloomFilter with the configured geometry and a
//      per-trial hash seed.
//   2. Insert `initial_load` fresh random 64-bit keys (8-byte little-endian
//      slices hashed by the filter's own H = XXH3), remembering their hashes.
//   3. churn_steps times: erase a uniformly random live key (swap-pop), then
//      insert a fresh random key.
//   4. Measure the false-positive rate with fpr_probes fresh random keys and
//      record Stats() (load distribution, counters, relocations).
//
// Overflow policy: when Insert returns kOverflow (all d candidate buckets
// full and relocation, if enabled, failed) the filter is unchanged; the key
// is NOT added to the live set and the trial continues with one element
// fewer. The trial counts as an overflow trial (TrialResult::overflows > 0);
// the step of the first overflow is recorded. Continuing (instead of
// stopping) keeps the Table 1 averages over all trials comparable.
//
// Reproducibility: trial t uses seeds derived only from (seed, t) by
// TrialSeeds(), and results are stored by trial index, so the outcome does
// not depend on the number of threads.
//
// Fresh probe keys are random 64-bit values; the chance one of them equals a
// live key is about fpr_probes * m / 2^64 (~3e-11) and is ignored.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include <string_view>
#include "dlcbf/core/status.h"

namespace dlcbf {
namespace sim {

struct SimConfig {
  // Geometry and relocation policy. `filter.seed` is ignored: every trial
  // gets its own hash seed from TrialSeeds().
  DLeftOptions filter;
  uint64_t initial_load = 49152;          // m, elements kept in the set
  uint64_t churn_steps = uint64_t{1} << 20;
  uint64_t fpr_probes = 10000;
  uint64_t seed = 1;
  uint64_t trials = 1;
  unsigned threads = 2;

  Status Validate() const {
    Status s = filter.Validate();
    if (!s.ok()) return s;
    const uint64_t cells = uint64_t{filter.subtables} * filter.buckets_per_subtable *
                           filter.cells_per_bucket;
    if (initial_load < 1) {
      return Status::InvalidArgument("initial_load must be >= 1");
    }
    if (initial_load > cells) {
      return Status::InvalidArgument(
          "initial_load must be <= d * B * L = " + std::to_string(cells) +
          " (the table's cell capacity)");
    }
    if (trials < 1) return Status::InvalidArgument("trials must be >= 1");
    if (threads < 1) return Status::InvalidArgument("threads must be >= 1");
    if (churn_steps > (uint64_t{1} << 40)) {
      return Status::InvalidArgument("churn_steps must be <= 2^40");
    }
    if (fpr_probes > (uint64_t{1} << 40)) {
      return Status::InvalidArgument("fpr_probes must be <= 2^40");
    }
    return Status::OK();
  }
};

struct TrialResult {
  uint64_t trial = 0;
  uint64_t filter_seed = 0;
  // Stats().load_ge_all / load_ge after the churn: k = 0 .. L + 1.
  std::vector<double> load_ge;
  std::vector<std::vector<double>> subtable_load_ge;
  uint64_t probes = 0;
  uint64_t false_positives = 0;
  double fpr = 0;            // false_positives / probes (0 when no probes)
  double predicted_fpr = 0;  // Claim 3 for the final fingerprint count
  uint64_t final_items = 0;  // live set size at the end
  uint64_t fingerprints = 0;
  uint32_t max_counter = 0;
  uint64_t overflows = 0;    // inserts that returned kOverflow
  int64_t first_overflow_step = -1;  // -1 none; < initial_load: fill phase
  uint64_t relocations = 0;
  uint64_t saturations = 0;
  uint64_t sticky_erases = 0;
  uint64_t erase_failures = 0;  // erases of live keys that were not kOk (bug)
  uint64_t false_negatives = 0; // live keys not reported present at the end (bug)
};

// The two seeds of trial t: the filter's hash seed and the key stream seed.
inline void TrialSeeds(uint64_t seed, uint64_t trial, uint64_t* filter_seed,
                       uint64_t* key_seed) {
  uint64_t st = internal::Mix64(seed ^ 0x6473696D2D64ULL) ^
                internal::Mix64((trial + 1) * 0xD1B54A32D192ED03ULL);
  *filter_seed = internal::SplitMix64(&st);
  *key_seed = internal::SplitMix64(&st);
}

// Runs trial `trial` of `cfg` (cfg must be valid).
inline Status RunTrial(const SimConfig& cfg, uint64_t trial, TrialResult* out) {
  TrialResult r;
  r.trial = trial;
  uint64_t key_state = 0;
  TrialSeeds(cfg.seed, trial, &r.filter_seed, &key_state);

  DLeftOptions opt = cfg.filter;
  opt.seed = r.filter_seed;
  opt.thread_safe = false;
  std::unique_ptr<DLeftCountingBloomFilter> f;
  Status s = DLeftCountingBloomFilter::Create(opt, &f);
  if (!s.ok()) return s;

  auto next_hash = [&]() {
    const uint64_t key = internal::SplitMix64(&key_state);
    char buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(key >> (8 * i));
    return f->Hash(std::string_view(buf, sizeof(buf)));
  };

  std::vector<uint64_t> live;
  live.reserve(cfg.initial_load);
  uint64_t step = 0;  // global operation clock: fill inserts, then churn steps
  auto insert_fresh = [&]() {
    const uint64_t h = next_hash();
    if (f->InsertHash(h) == OpResult::kOk) {
      live.push_back(h);
    } else {
      if (r.overflows == 0) r.first_overflow_step = static_cast<int64_t>(step);
      ++r.overflows;
    }
  };

  for (uint64_t i = 0; i < cfg.initial_load; ++i, ++step) insert_fresh();
  for (uint64_t t = 0; t < cfg.churn_steps; ++t, ++step) {
    if (!live.empty()) {
      const size_t idx = static_cast<size_t>(
          internal::Mul64Hi(internal::SplitMix64(&key_state), live.size()));
      if (f->EraseHash(live[idx]) != OpResult::kOk) ++r.erase_failures;
      live[idx] = live.back();
      live.pop_back();
    }
    insert_fresh();
  }

  // No false negatives: every live key must still be reported present.
  constexpr size_t kBatch = 1024;
  uint64_t hashes[kBatch];
  bool hit[kBatch];
  for (size_t base = 0; base < live.size(); base += kBatch) {
    const size_t n = std::min(kBatch, live.size() - base);
    f->ContainsHashBatch(live.data() + base, n, hit);
    for (size_t i = 0; i < n; ++i) r.false_negatives += hit[i] ? 0 : 1;
  }

  // False positives: fresh random keys, probed in batches.
  for (uint64_t done = 0; done < cfg.fpr_probes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBatch, cfg.fpr_probes - done));
    for (size_t i = 0; i < n; ++i) hashes[i] = next_hash();
    f->ContainsHashBatch(hashes, n, hit);
    for (size_t i = 0; i < n; ++i) r.false_positives += hit[i] ? 1 : 0;
    done += n;
  }
  r.probes = cfg.fpr_probes;
  r.fpr = r.probes ? static_cast<double>(r.false_positives) / static_cast<double>(r.probes) : 0;

  const DLeftStats st = f->Stats();
  r.load_ge = st.load_ge_all;
  r.subtable_load_ge = st.load_ge;
  r.predicted_fpr = st.predicted_fpr;
  r.final_items = live.size();
  r.fingerprints = st.fingerprints;
  r.max_counter = st.max_counter;
  r.relocations = st.relocations;
  r.saturations = st.saturations;
  r.sticky_erases = st.sticky_erases;
  *out = std::move(r);
  return Status::OK();
}

// Called after each finished trial with (finished, total); serialized.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// Runs cfg.trials independent trials on cfg.threads worker threads;
// (*results)[t] is trial t.
inline Status RunTrials(const SimConfig& cfg, std::vector<TrialResult>* results,
                                 const ProgressFn& progress = nullptr) {
  Status s = cfg.Validate();
  if (!s.ok()) return s;
  results->assign(cfg.trials, TrialResult());
  std::atomic<uint64_t> next{0};
  std::mutex mu;  // guards first_error, done and progress calls
  Status first_error;
  uint64_t done = 0;
  auto worker = [&]() {
    for (uint64_t t = next.fetch_add(1); t < cfg.trials; t = next.fetch_add(1)) {
      TrialResult tr;
      Status ts = RunTrial(cfg, t, &tr);
      std::lock_guard<std::mutex> lock(mu);
      if (!ts.ok()) {
        if (first_error.ok()) first_error = ts;
        next.store(cfg.trials);
        return;
      }
      (*results)[t] = std::move(tr);
      ++done;
      if (progress) progress(done, cfg.trials);
    }
  };
  const unsigned n = static_cast<unsigned>(
      std::min<uint64_t>(cfg.threads, cfg.trials));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < n; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  return first_error;
}

struct Summary {
  uint64_t trials = 0;
  // Per k = 0 .. L + 1: mean over trials and the sample standard deviation
  // of one trial's value (0 for a single trial).
  std::vector<double> load_ge_mean, load_ge_sd;
  // Mean over trials of subtable i's load_ge[k].
  std::vector<std::vector<double>> subtable_load_ge_mean;
  double fpr_min = 0, fpr_avg = 0, fpr_max = 0;
  uint64_t probes = 0, false_positives = 0;  // pooled over trials
  double predicted_fpr_avg = 0;  // mean of the per-trial Claim-3 predictions
  uint32_t max_counter = 0;
  uint64_t saturations = 0, trials_with_saturation = 0, sticky_erases = 0;
  uint64_t overflow_trials = 0, overflow_events = 0;
  uint64_t relocations_min = 0, relocations_max = 0;
  double relocations_avg = 0;
  uint64_t erase_failures = 0, false_negatives = 0;
  double final_items_avg = 0;
};

inline Summary Summarize(const std::vector<TrialResult>& rs) {
  Summary s;
  s.trials = rs.size();
  if (rs.empty()) return s;
  const size_t K = rs[0].load_ge.size();
  const size_t d = rs[0].subtable_load_ge.size();
  s.load_ge_mean.assign(K, 0.0);
  s.load_ge_sd.assign(K, 0.0);
  s.subtable_load_ge_mean.assign(d, std::vector<double>(K, 0.0));
  s.fpr_min = std::numeric_limits<double>::infinity();
  s.fpr_max = -std::numeric_limits<double>::infinity();
  s.relocations_min = std::numeric_limits<uint64_t>::max();
  const double n = static_cast<double>(rs.size());
  for (const TrialResult& r : rs) {
    for (size_t k = 0; k < K && k < r.load_ge.size(); ++k) s.load_ge_mean[k] += r.load_ge[k] / n;
    for (size_t i = 0; i < d && i < r.subtable_load_ge.size(); ++i) {
      for (size_t k = 0; k < K && k < r.subtable_load_ge[i].size(); ++k) {
        s.subtable_load_ge_mean[i][k] += r.subtable_load_ge[i][k] / n;
      }
    }
    s.fpr_min = std::min(s.fpr_min, r.fpr);
    s.fpr_max = std::max(s.fpr_max, r.fpr);
    s.fpr_avg += r.fpr / n;
    s.probes += r.probes;
    s.false_positives += r.false_positives;
    s.predicted_fpr_avg += r.predicted_fpr / n;
    s.max_counter = std::max(s.max_counter, r.max_counter);
    s.saturations += r.saturations;
    s.trials_with_saturation += r.saturations > 0 ? 1 : 0;
    s.sticky_erases += r.sticky_erases;
    s.overflow_trials += r.overflows > 0 ? 1 : 0;
    s.overflow_events += r.overflows;
    s.relocations_min = std::min(s.relocations_min, r.relocations);
    s.relocations_max = std::max(s.relocations_max, r.relocations);
    s.relocations_avg += static_cast<double>(r.relocations) / n;
    s.erase_failures += r.erase_failures;
    s.false_negatives += r.false_negatives;
    s.final_items_avg += static_cast<double>(r.final_items) / n;
  }
  if (rs.size() > 1) {
    for (const TrialResult& r : rs) {
      for (size_t k = 0; k < K && k < r.load_ge.size(); ++k) {
        const double dv = r.load_ge[k] - s.load_ge_mean[k];
        s.load_ge_sd[k] += dv * dv / (n - 1);
      }
    }
    for (double& v : s.load_ge_sd) v = std::sqrt(v);
  }
  return s;
}

// Rn, the number of distinct remainders the filter stores for (r, c), and
// the counter's saturated value, exactly as the implementation defines them.
inline uint64_t RemainderValues(uint32_t r, uint32_t c) {
  internal::Geometry g;
  g.remainder_bits = r;
  g.counter_bits = c;
  return g.remainder_values();
}
inline uint32_t SaturatedCounter(uint32_t c) {
  internal::Geometry g;
  g.counter_bits = c;
  return g.max_counter();
}

// Paper §4 bound on the FPR: (m / (B * 2^r)) = 24 * 2^-r at load 6 of 8 with
// d = 4; and Claim 3's exact 1 - (1 - 1/(B * Rn))^m for m stored elements.
inline double PaperFprBound(uint64_t m, uint64_t B, uint32_t r) {
  return static_cast<double>(m) / (static_cast<double>(B) * std::ldexp(1.0, static_cast<int>(r)));
}
inline double Claim3Fpr(uint64_t m, uint64_t B, uint32_t r, uint32_t c) {
  const double Rn = static_cast<double>(RemainderValues(r, c));
  return -std::expm1(static_cast<double>(m) * std::log1p(-1.0 / (static_cast<double>(B) * Rn)));
}

// Expected number of distinct true fingerprints (occupied cells) among m
// elements: B * Rn * (1 - (1 - 1/(B * Rn))^m) ~ m - m^2 / (2 B Rn). Keys
// with equal fingerprints share one cell (its counter counts them), so the
// bucket loads of a dlCBF follow the fluid limit for this many elements,
// not for m: 49116 instead of 49152 in the paper's §5.1 setting, which
// lowers "load >= 7" by 0.0024 (the gap between Table 1's two columns).
inline double ExpectedFingerprints(uint64_t m, uint64_t B, uint32_t r, uint32_t c) {
  const double Rn = static_cast<double>(RemainderValues(r, c));
  return static_cast<double>(B) * Rn * Claim3Fpr(m, B, r, c);
}

}  // namespace sim
}  // namespace dlcbf
