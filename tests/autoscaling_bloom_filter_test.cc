// Tests of the autoscaling Bloom filter: the lossless default and how hard
// it is to lose, the opt-in lossy mode against the model, zero false
// negatives against a std::multiset oracle, and serialization.
#include "dlcbf/core/autoscaling_bloom_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace dlcbf {
namespace {

AutoscalingOptions Opts(uint64_t m, uint32_t k, uint32_t w, bool allow_lossy = false) {
  AutoscalingOptions o;
  o.counting.num_counters = m;
  o.counting.num_probes = k;
  o.counting.counter_bits = w;
  o.allow_false_negatives = allow_lossy;
  return o;
}

std::unique_ptr<AutoscalingBloomFilter> Make(const AutoscalingOptions& o) {
  std::unique_ptr<AutoscalingBloomFilter> f;
  Status s = AutoscalingBloomFilter::Create(o, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return f;
}

std::string Key(uint64_t i) { return "abf-" + std::to_string(i); }

TEST(AutoscalingBloomFilterTest, StartsLossless) {
  auto f = Make(Opts(10000, 100, 8));
  EXPECT_EQ(f->theta(), 0u);
  EXPECT_EQ(f->decision_threshold(), 100u);
  EXPECT_TRUE(f->lossless());
  EXPECT_EQ(f->options().min_tpr, 1.0);
  EXPECT_FALSE(f->options().allow_false_negatives);
}

TEST(AutoscalingBloomFilterTest, LossyRequiresExplicitOptIn) {
  auto f = Make(Opts(10000, 100, 8));
  for (int i = 0; i < 500; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  // AutoTune with L_TPR < 1, lossy thresholds, lossy options: all refused.
  Status s = f->AutoTune(0.97);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("allow_false_negatives"), std::string::npos);
  EXPECT_TRUE(f->SetThresholds(4, 65).IsInvalidArgument());
  EXPECT_TRUE(f->lossless());
  EXPECT_EQ(f->theta(), 0u);
  AutoscalingOptions o = Opts(10000, 100, 8);
  o.min_tpr = 0.9;
  std::unique_ptr<AutoscalingBloomFilter> g;
  EXPECT_TRUE(AutoscalingBloomFilter::Create(o, &g).IsInvalidArgument());
  // Lossless non-default pairs are fine: Θ = 0 with any T, or T = 0.
  EXPECT_TRUE(f->SetThresholds(0, 50).ok());
  EXPECT_TRUE(f->lossless());
  EXPECT_TRUE(f->SetThresholds(7, 0).ok());
  EXPECT_TRUE(f->lossless());
  // Range checks.
  EXPECT_TRUE(f->SetThresholds(0, 101).IsInvalidArgument());
  EXPECT_TRUE(f->SetThresholds(255, 0).IsInvalidArgument());  // Θ <= 2^w - 2
  EXPECT_TRUE(f->AutoTune(std::nan("")).IsInvalidArgument());
  EXPECT_TRUE(f->AutoTune(1.5).IsInvalidArgument());
  EXPECT_TRUE(f->AutoTune(-0.1).IsInvalidArgument());
}

TEST(AutoscalingBloomFilterTest, AutoTuneAtOneIsAlwaysThetaZeroTk) {
  // Even with the opt-in, and even where the model's TPR for a lossy pair
  // rounds to 1.0 (λ = 10 k n / m large), L_TPR = 1 means Θ = 0, T = k.
  auto f = Make(Opts(100, 10, 8, /*allow_lossy=*/true));
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  abf::Tuning t;
  ASSERT_TRUE(f->AutoTune(1.0, &t).ok());
  EXPECT_EQ(f->theta(), 0u);
  EXPECT_EQ(f->decision_threshold(), 10u);
  EXPECT_TRUE(t.lossless);
  ASSERT_TRUE(f->AutoTune().ok());  // options().min_tpr == 1
  EXPECT_TRUE(f->lossless());
}

// Paper Fig. 2 through the public API: AutoTune(0.97) at n = 500 picks
// Θ = 4, T = 65 (eq. 22 over Θ; T per eq. 21), and the filter's measured
// TPR/FPR match the model. SEs as in tests/abf_model_test.cc, here for
// R = 10 filters and Q = 5000 fresh keys each.
TEST(AutoscalingBloomFilterTest, OptInAutoTuneMatchesPaperAndModel) {
  const int R = 10, Q = 5000;
  double tp = 0, fp = 0;
  abf::Tuning t;
  for (int r = 0; r < R; ++r) {
    AutoscalingOptions o = Opts(10000, 100, 8, /*allow_lossy=*/true);
    o.counting.seed = 1000 + r;
    o.min_tpr = 0.97;
    auto f = Make(o);
    for (int i = 0; i < 500; ++i) EXPECT_EQ(f->Insert(Key(r * 1000000 + i)), OpResult::kOk);
    ASSERT_TRUE(f->AutoTune(0.97, &t).ok());
    ASSERT_EQ(f->theta(), 4u);
    ASSERT_EQ(f->decision_threshold(), 65u);
    EXPECT_FALSE(f->lossless());
    EXPECT_EQ(f->Stats().model.T, 65u);
    for (int i = 0; i < 500; ++i) tp += f->Contains(Key(r * 1000000 + i)) ? 1 : 0;
    for (int i = 0; i < Q; ++i) fp += f->Contains("fresh-" + std::to_string(r * Q + i)) ? 1 : 0;
  }
  const abf::ModelPoint p = abf::Evaluate(abf::FilterShape{10000, 100, 500, 255}, 4, 65);
  auto slope = [&](double prob) { return 100 * std::exp(abf::BinomialLogPmf(99, prob, 64)); };
  const double se_t = std::sqrt(std::pow(slope(p.px), 2) * p.px * (1 - p.px) / 10000 / R +
                                p.tpr * (1 - p.tpr) / (500.0 * R));
  const double se_f = std::sqrt(std::pow(slope(p.py), 2) * p.P1 * p.P0 / 10000 / R +
                                p.fpr * (1 - p.fpr) / (1.0 * Q * R));
  EXPECT_NEAR(tp / (500.0 * R), p.tpr, 4.5 * se_t);
  EXPECT_NEAR(fp / (1.0 * Q * R), p.fpr, 4.5 * se_f);
  EXPECT_LT(tp / (500.0 * R), 1.0);  // lossy really does miss stored keys
  EXPECT_NEAR(t.fpr, 0.04, 0.01);
}

// Lossless mode vs a std::multiset oracle: random inserts (with duplicates)
// and erases of keys the oracle holds, 2-bit counters to force saturation,
// and a small m to force heavy sharing. After every batch of operations,
// every key the oracle holds must be reported present.
TEST(AutoscalingBloomFilterTest, LosslessNeverFalseNegativeVsMultisetOracle) {
  for (uint32_t w : {2u, 4u}) {
    auto f = Make(Opts(3000, 4, w));
    std::multiset<uint64_t> oracle;
    std::mt19937_64 rng(w);
    uint64_t checks = 0;
    for (int step = 0; step < 40000; ++step) {
      const uint64_t x = rng() % 1500;  // small universe: many duplicates
      if (oracle.empty() || rng() % 3 != 0) {
        ASSERT_EQ(f->Insert(Key(x)), OpResult::kOk);
        oracle.insert(x);
      } else {
        auto it = oracle.lower_bound(x);
        if (it == oracle.end()) it = oracle.begin();
        ASSERT_EQ(f->Erase(Key(*it)), OpResult::kOk);  // live keys always erasable
        oracle.erase(it);
      }
      if (step % 997 == 0) {
        ASSERT_TRUE(f->AutoTune(1.0).ok());
        for (uint64_t y : std::set<uint64_t>(oracle.begin(), oracle.end())) {
          ASSERT_TRUE(f->Contains(Key(y))) << "w=" << w << " step=" << step;
          ++checks;
        }
      }
    }
    EXPECT_EQ(f->n(), oracle.size());
    EXPECT_GT(checks, 10000u);
    if (w == 2) {
      EXPECT_GT(f->Stats().counting.sticky_erases, 0u);  // saturation exercised
    }
  }
}

TEST(AutoscalingBloomFilterTest, StatsCarryTheModel) {
  auto f = Make(Opts(10000, 100, 8));
  for (int i = 0; i < 500; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  const AutoscalingStats st = f->Stats();
  EXPECT_EQ(st.n, 500u);
  EXPECT_TRUE(st.lossless);
  EXPECT_EQ(st.model.tpr, 1.0);
  EXPECT_NEAR(st.model.fpr, 0.517, 0.001);
}

// ---------------------------------------------------------- serialization

TEST(AutoscalingSerializationTest, RoundTripLossless) {
  auto f = Make(Opts(4000, 6, 4));
  for (int i = 0; i < 300; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  ASSERT_TRUE(f->SetThresholds(0, 5).ok());
  std::string blob;
  f->Serialize(&blob);
  std::unique_ptr<AutoscalingBloomFilter> g;
  ASSERT_TRUE(AutoscalingBloomFilter::Deserialize(blob, &g).ok());
  EXPECT_EQ(g->theta(), 0u);
  EXPECT_EQ(g->decision_threshold(), 5u);
  EXPECT_EQ(g->n(), 300u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(g->Contains(Key(i)), f->Contains(Key(i)));
  std::string again;
  g->Serialize(&again);
  EXPECT_EQ(again, blob);
}

TEST(AutoscalingSerializationTest, LossyFilterNeedsOptInToLoad) {
  AutoscalingOptions o = Opts(10000, 100, 8, /*allow_lossy=*/true);
  o.min_tpr = 0.97;
  auto f = Make(o);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  ASSERT_TRUE(f->AutoTune().ok());
  ASSERT_FALSE(f->lossless());
  std::string blob;
  f->Serialize(&blob);
  std::unique_ptr<AutoscalingBloomFilter> g;
  Status s = AutoscalingBloomFilter::Deserialize(blob, &g);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(g, nullptr);
  DeserializeOptions ro;
  ro.allow_false_negatives = true;
  ASSERT_TRUE(AutoscalingBloomFilter::Deserialize(blob, &g, ro).ok());
  EXPECT_EQ(g->theta(), f->theta());
  EXPECT_EQ(g->decision_threshold(), f->decision_threshold());
  EXPECT_EQ(g->options().min_tpr, 0.97);
}

TEST(AutoscalingSerializationTest, TruncatedAndCorruptInput) {
  auto f = Make(Opts(600, 3, 4));
  for (int i = 0; i < 60; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  std::string blob;
  f->Serialize(&blob);
  for (size_t len = 0; len < blob.size(); ++len) {
    const std::string cut = blob.substr(0, len);
    std::unique_ptr<AutoscalingBloomFilter> g;
    ASSERT_TRUE(AutoscalingBloomFilter::Deserialize(cut, &g).IsCorruption()) << len;
  }
  for (size_t i = 0; i < blob.size(); ++i) {
    std::string bad = blob;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    std::unique_ptr<AutoscalingBloomFilter> g;
    ASSERT_TRUE(AutoscalingBloomFilter::Deserialize(bad, &g).IsCorruption()) << i;
  }
  std::unique_ptr<AutoscalingBloomFilter> g;
  EXPECT_TRUE(AutoscalingBloomFilter::Deserialize(std::string_view(), &g).IsCorruption());
}

}  // namespace
}  // namespace dlcbf
