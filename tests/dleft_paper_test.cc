// Paper-reproduction tests: the fluid limit of d-left hashing with deletions
// against Bonomi et al., ESA 2006, Table 1 and §5.2, and shortened versions
// of the §5.1/§5.2 simulations (the loop of tools/dlcbf_sim, shared through
// tools/paper/dleft_simulation.h) against the fluid limit and Claim 3.
//
// Every tolerance is derived from the math (printed precision of the paper,
// binomial standard deviations); nothing here measures time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tools/paper/dleft_simulation.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/model/dleft_fluid_limit.h"

namespace dlcbf {
namespace {

// ---------------------------------------------------------------------------
// Fluid limit
// ---------------------------------------------------------------------------

FluidLimitParams PaperParams(uint64_t elements = 49152) {
  FluidLimitParams p;  // d = 4, B = 2048, 2^20 churn steps, max_load = 20
  p.elements = elements;
  return p;
}

FluidLimitResult Compute(const FluidLimitParams& p) {
  FluidLimitResult r;
  Status s = ComputeFluidLimit(p, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

TEST(FluidLimitTest, ReproducesTable1SteadyStateColumn) {
  const FluidLimitResult r = Compute(PaperParams());
  ASSERT_EQ(r.load_ge.size(), 21u);
  EXPECT_EQ(r.load_ge[0], 1.0);
  // Table 1 prints 4 decimals: rounding error <= 0.00005, and that is the
  // tolerance (the largest gap is 4.5e-5, at load >= 3; it was 0.0005,
  // 22 % of the load >= 8 value).
  const double table1[] = {1.0000, 0.9999, 0.9990, 0.9920, 0.9505, 0.7669, 0.2894, 0.0023};
  for (int k = 1; k <= 8; ++k) {
    EXPECT_NEAR(r.load_ge[k], table1[k - 1], 0.00005) << "load >= " << k;
  }
  // "Load >= 9: 1.681e-27", 4 significant digits (relative rounding 3e-4).
  EXPECT_NEAR(r.load_ge[9] / 1.681e-27, 1.0, 1e-3) << r.load_ge[9];
  EXPECT_LT(r.load_ge[10], 1e-90);
}

TEST(FluidLimitTest, Section52LoadSixAndAHalf) {
  // §5.2: 8192 buckets at average load 6.5 = 53248 elements; the paper
  // finds load >= 9 ~ 2.205e-08 in the steady state.
  const FluidLimitResult r = Compute(PaperParams(53248));
  EXPECT_GT(r.load_ge[9], 2.205e-08 / 1.5);
  EXPECT_LT(r.load_ge[9], 2.205e-08 * 1.5);
  EXPECT_NEAR(r.load_ge[9] / 2.205e-08, 1.0, 1e-3) << r.load_ge[9];
  // The paper's text says "53428 elements"; that is load 6.522 and a value
  // 2.46x larger, so the paper's 2.205e-08 is for 53248 (a digit swap).
  const FluidLimitResult typo = Compute(PaperParams(53428));
  EXPECT_GT(typo.load_ge[9] / r.load_ge[9], 2.0);
}

TEST(FluidLimitTest, OverflowEstimatesMatchSection52) {
  FluidLimitParams p = PaperParams(53248);
  p.capacity = 8;
  const FluidLimitResult r65 = Compute(p);
  // Paper: overflow "slightly over 2 percent of the time" (254 of 10000).
  EXPECT_GT(r65.overflow_probability, 0.02);
  EXPECT_LT(r65.overflow_probability, 0.04);
  EXPECT_NEAR(r65.overflow_probability, -std::expm1(-r65.expected_overflows), 1e-15);
  // Paper, load 6.75 with first-subtable moves: "a potential bucket
  // overflow occurred between 40 to 100 times in each trial".
  p.elements = 55296;
  const FluidLimitResult r675 = Compute(p);
  EXPECT_GT(r675.expected_overflows, 40.0);
  EXPECT_LT(r675.expected_overflows, 100.0);
}

double PoissonTail(double lambda, int k) {  // P(X >= k)
  double term = std::exp(-lambda), cdf = 0;
  for (int j = 0; j < k; ++j) {
    cdf += term;
    term *= lambda / (j + 1);
  }
  return 1.0 - cdf;
}

TEST(FluidLimitTest, OneChoiceIsPoisson) {
  // d = 1: each bucket receives a Poisson number of elements, both after
  // pure insertion and in the churn steady state (arrivals at rate 1 per
  // bucket per unit tau, each element leaving at rate B/m).
  FluidLimitParams p;
  p.d = 1;
  p.buckets_per_subtable = 1000;
  p.elements = 6000;
  p.max_load = 60;  // P(Poisson(6) > 60) ~ 1e-36: no truncation
  for (uint64_t churn : {uint64_t{0}, uint64_t{1} << 20}) {
    p.churn_steps = churn;
    const FluidLimitResult r = Compute(p);
    for (int k = 0; k <= 20; ++k) {
      EXPECT_NEAR(r.load_ge[k], PoissonTail(6.0, k), 1e-9) << "k=" << k << " churn=" << churn;
    }
  }
}

TEST(FluidLimitTest, ConservesElementsAndOrdersSubtables) {
  for (uint64_t m : {uint64_t{49152}, uint64_t{53248}, uint64_t{55296}}) {
    const FluidLimitResult r = Compute(PaperParams(m));
    EXPECT_NEAR(r.mean_load, static_cast<double>(m) / (4 * 2048.0), 1e-9);
    EXPECT_LT(r.truncated_mass, 1e-12);
    for (size_t k = 1; k < r.load_ge.size(); ++k) EXPECT_LE(r.load_ge[k], r.load_ge[k - 1]);
    // Ties go left, so the left subtables are fuller at every load.
    for (size_t i = 1; i < r.subtable_load_ge.size(); ++i) {
      for (int k = 1; k <= 9; ++k) {
        EXPECT_LE(r.subtable_load_ge[i][k], r.subtable_load_ge[i - 1][k]) << i << "," << k;
      }
    }
  }
}

TEST(FluidLimitTest, StepSizeAndConvergence) {
  const FluidLimitResult base = Compute(PaperParams());
  FluidLimitParams fine = PaperParams();
  fine.tau_step = 1.0 / 1024;
  const FluidLimitResult r_fine = Compute(fine);
  FluidLimitParams conv = PaperParams();
  conv.churn_steps = 0;
  conv.converge_tol = 1e-10;
  const FluidLimitResult r_conv = Compute(conv);
  EXPECT_TRUE(r_conv.converged);
  EXPECT_GT(r_conv.churn_steps_run, 0);
  for (int k = 1; k <= 9; ++k) {
    EXPECT_NEAR(r_fine.load_ge[k] / base.load_ge[k], 1.0, 1e-8) << k;
    EXPECT_NEAR(r_conv.load_ge[k] / base.load_ge[k], 1.0, 1e-6) << k;
  }
}

TEST(FluidLimitTest, RejectsInvalidParameters) {
  auto bad = [](FluidLimitParams p) {
    FluidLimitResult r;
    EXPECT_TRUE(ComputeFluidLimit(p, &r).IsInvalidArgument());
    EXPECT_TRUE(FluidLimitLoadGe(p).empty());
  };
  FluidLimitParams p;
  p.d = 0;
  bad(p);
  p = FluidLimitParams();
  p.buckets_per_subtable = 0;
  bad(p);
  p = FluidLimitParams();
  p.elements = 0;
  bad(p);
  p = FluidLimitParams();
  p.max_load = 0;
  bad(p);
  p = FluidLimitParams();
  p.tau_step = 0;
  bad(p);
  p = FluidLimitParams();
  p.tau_step = std::nan("");
  bad(p);
  p = FluidLimitParams();
  p.capacity = p.max_load;
  bad(p);
  p = FluidLimitParams();
  p.churn_steps = uint64_t{1} << 62;
  bad(p);
  EXPECT_EQ(FluidLimitLoadGe(FluidLimitParams()).size(), 21u);
}

// ---------------------------------------------------------------------------
// Simulation (shortened §5.1 / §5.2)
// ---------------------------------------------------------------------------

sim::SimConfig PaperSim() {
  sim::SimConfig c;
  c.filter.relocation = Relocation::kNone;  // §5.1; geometry defaults = paper
  c.initial_load = 49152;
  c.churn_steps = uint64_t{1} << 18;  // 128 tau: 5.3 relaxation times
  c.fpr_probes = 100000;
  c.seed = 20060911;
  c.trials = 16;
  c.threads = 2;
  return c;
}

class PaperSimulationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cfg_ = new sim::SimConfig(PaperSim());
    auto* results = new std::vector<sim::TrialResult>();
    Status s = sim::RunTrials(*cfg_, results);
    ASSERT_TRUE(s.ok()) << s.ToString();
    summary_ = new sim::Summary(sim::Summarize(*results));
    delete results;
  }
  static void TearDownTestSuite() {
    delete summary_;
    delete cfg_;
    summary_ = nullptr;
    cfg_ = nullptr;
  }
  static sim::SimConfig* cfg_;
  static sim::Summary* summary_;
};
sim::SimConfig* PaperSimulationTest::cfg_ = nullptr;
sim::Summary* PaperSimulationTest::summary_ = nullptr;

TEST_F(PaperSimulationTest, Table1LoadsMatchFluidLimit) {
  ASSERT_NE(summary_, nullptr);
  const sim::Summary& s = *summary_;
  const uint32_t d = cfg_->filter.subtables;
  const uint64_t B = cfg_->filter.buckets_per_subtable;
  // Compare with the fluid limit after the same number of churn steps, for
  // the expected number of occupied cells F (equal fingerprints share one
  // cell: F = 49116 for m = 49152, which is what moves Table 1's simulation
  // column below its fluid-limit column).
  FluidLimitParams p = PaperParams();
  p.churn_steps = cfg_->churn_steps;
  p.elements = static_cast<uint64_t>(std::llround(sim::ExpectedFingerprints(
      cfg_->initial_load, B, cfg_->filter.remainder_bits, cfg_->filter.counter_bits)));
  EXPECT_EQ(p.elements, 49116u);
  const FluidLimitResult fluid = Compute(p);
  const FluidLimitResult table1 = Compute(PaperParams());  // m = 49152
  const double T = static_cast<double>(s.trials);
  for (int k = 1; k <= 9; ++k) {
    const double q = fluid.load_ge[k];
    // One trial's fraction over d*B buckets has standard deviation at most
    // the binomial sqrt(q(1-q)/(dB)) (bucket loads are negatively
    // correlated: the total is fixed); 4.5 sigma of the mean of T trials.
    // (An absolute 0.0005 for finite-size effects used to be added: 23 %
    // of q at load >= 8. Measured, every k is within 0.7 sigma of the
    // fluid limit, so no finite-size term is needed at B = 2048.)
    const double tol = 4.5 * std::sqrt(q * (1 - q) / (d * static_cast<double>(B) * T));
    EXPECT_NEAR(s.load_ge_mean[k], q, tol) << "load >= " << k;
    // Against Table 1's own fluid column (m = 49152), the paper's criterion
    // "matches extremely well": within 0.005 (its largest gap is 0.0026).
    EXPECT_NEAR(s.load_ge_mean[k], table1.load_ge[k], 0.005) << "load >= " << k;
  }
  // §5.1: no bucket overflow and, with 8 cells, no load-9 bucket at all.
  EXPECT_EQ(s.overflow_trials, 0u);
  EXPECT_EQ(s.load_ge_mean[9], 0.0);
  EXPECT_EQ(s.erase_failures, 0u);
  EXPECT_EQ(s.false_negatives, 0u);
  EXPECT_EQ(s.final_items_avg, 49152.0);
}

TEST_F(PaperSimulationTest, FalsePositiveRateMatchesClaim3) {
  ASSERT_NE(summary_, nullptr);
  const sim::Summary& s = *summary_;
  ASSERT_EQ(s.probes, cfg_->fpr_probes * s.trials);
  // Claim 3: a fresh key is a false positive with probability exactly
  // F/(B*Rn) for the F stored fingerprints; predicted_fpr_avg averages that
  // over trials. Pooled hits are binomial(n, p): allow 5 standard deviations.
  const double n = static_cast<double>(s.probes);
  const double p = s.predicted_fpr_avg;
  const double expected = n * p;
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(s.false_positives), expected, 5 * sd)
      << "pooled FPR " << static_cast<double>(s.false_positives) / n << " vs " << p;
  // The prediction itself is the paper's: Claim 3 for m elements, just
  // under 24 * 2^-14 = 0.001465 (0.00146386 for Rn = 2^14 - 1, 0.00146377 for
  // 2^14). Each trial's F is at most m (so p <= m/(B*Rn)) and about
  // m - m^2/(2*B*Rn) = m - 36 +- 6 (so p >= 0.998 * Claim 3 with room).
  const double claim3 = sim::Claim3Fpr(49152, 2048, 14, 2);
  EXPECT_NEAR(claim3, 0.0014638, 1.5e-7);
  EXPECT_NEAR(sim::PaperFprBound(49152, 2048, 14), 24.0 / 16384, 1e-15);
  EXPECT_LE(p, 49152.0 / (2048.0 * static_cast<double>(sim::RemainderValues(14, 2))));
  EXPECT_GE(p, claim3 * 0.998);
  // Counters: four keys sharing a fingerprint is rare (paper: 6 of 10000
  // trials); a counter never exceeds its saturated value.
  EXPECT_LE(s.max_counter, sim::SaturatedCounter(cfg_->filter.counter_bits));
  EXPECT_GE(s.max_counter, 2u);  // ~36 pairs share a fingerprint at any time
}

TEST(PaperSimulation, Section52OverflowAndFirstSubtableRelocation) {
  // Load 6.75 (55296 elements), paper geometry, 2^20 churn steps.
  sim::SimConfig c = PaperSim();
  c.initial_load = 55296;
  c.churn_steps = uint64_t{1} << 20;
  c.fpr_probes = 0;
  // The fluid limit (for the F = 55250 expected occupied cells) expects
  // E = 59.1 inserts per run that find all d choices full.
  FluidLimitParams p = PaperParams();
  p.capacity = 8;
  p.elements = static_cast<uint64_t>(std::llround(sim::ExpectedFingerprints(55296, 2048, 14, 2)));
  const double E = Compute(p).expected_overflows;
  ASSERT_GT(E, 50.0);
  ASSERT_LT(E, 70.0);

  // Without relocation such an insert overflows: P(no overflow) ~ e^-59.
  c.trials = 1;
  c.filter.relocation = Relocation::kNone;
  std::vector<sim::TrialResult> none;
  ASSERT_TRUE(sim::RunTrials(c, &none).ok());
  EXPECT_GT(none[0].overflows, 0u);
  EXPECT_EQ(none[0].relocations, 0u);

  // §5.2: with one move out of the first subtable the paper saw no overflow
  // in 10000 trials and "a potential bucket overflow occurred between 40 to
  // 100 times in each trial", all resolved (one move each).
  c.trials = 8;
  c.filter.relocation = Relocation::kFirstSubtable;
  std::vector<sim::TrialResult> first;
  ASSERT_TRUE(sim::RunTrials(c, &first).ok());
  double mean = 0;
  for (const sim::TrialResult& r : first) {
    EXPECT_EQ(r.overflows, 0u) << "trial " << r.trial;
    EXPECT_EQ(r.false_negatives, 0u);
    EXPECT_EQ(r.erase_failures, 0u);
    EXPECT_EQ(r.final_items, 55296u);
    // Poisson(E) per trial: E + 6 sqrt(E) = 105 is a 6-sigma bound.
    EXPECT_LT(static_cast<double>(r.relocations), E + 6 * std::sqrt(E))
        << "trial " << r.trial << " (filter seed " << r.filter_seed << ")";
    mean += static_cast<double>(r.relocations) / static_cast<double>(first.size());
  }
  // The mean of T Poisson counts: 5 standard deviations sqrt(E/T) plus 5%
  // model slack. Correlated subtable choices (a weak permutation P_i: the
  // bucket offsets between subtables take few distinct values) show up
  // here first, as an excess of all-choices-full inserts.
  const double T = static_cast<double>(first.size());
  EXPECT_NEAR(mean, E, 5 * std::sqrt(E / T) + 0.05 * E)
      << "first-subtable relocations per trial vs the fluid limit";
}

TEST(PaperSimulation, ResultsDoNotDependOnThreadCount) {
  sim::SimConfig c;
  c.filter.buckets_per_subtable = 128;
  c.initial_load = 3072;
  c.churn_steps = 20000;
  c.fpr_probes = 5000;
  c.seed = 7;
  c.trials = 5;
  std::vector<sim::TrialResult> a, b;
  c.threads = 1;
  ASSERT_TRUE(sim::RunTrials(c, &a).ok());
  c.threads = 3;
  ASSERT_TRUE(sim::RunTrials(c, &b).ok());
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  for (size_t t = 0; t < a.size(); ++t) {
    EXPECT_EQ(a[t].trial, t);
    EXPECT_EQ(a[t].filter_seed, b[t].filter_seed);
    EXPECT_EQ(a[t].load_ge, b[t].load_ge);
    EXPECT_EQ(a[t].false_positives, b[t].false_positives);
    EXPECT_EQ(a[t].fingerprints, b[t].fingerprints);
    if (t > 0) {
      EXPECT_NE(a[t].filter_seed, a[t - 1].filter_seed);
    }
  }
}

TEST(PaperSimulation, RejectsInvalidConfigs) {
  sim::SimConfig c;
  std::vector<sim::TrialResult> r;
  c.filter.subtables = 9;
  EXPECT_TRUE(sim::RunTrials(c, &r).IsInvalidArgument());
  c = sim::SimConfig();
  c.initial_load = 0;
  EXPECT_TRUE(sim::RunTrials(c, &r).IsInvalidArgument());
  c = sim::SimConfig();
  c.initial_load = 4 * 2048 * 8 + 1;  // more than the table's cells
  EXPECT_TRUE(sim::RunTrials(c, &r).IsInvalidArgument());
  c = sim::SimConfig();
  c.trials = 0;
  EXPECT_TRUE(sim::RunTrials(c, &r).IsInvalidArgument());
  c = sim::SimConfig();
  c.threads = 0;
  EXPECT_TRUE(sim::RunTrials(c, &r).IsInvalidArgument());
}

}  // namespace
}  // namespace dlcbf
