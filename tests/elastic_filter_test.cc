// Tests of the elastic filter (dlCBF -> ABF migration without the keys):
// fed 10x its sizing it never fails an insert, never returns a false
// negative, its FPR after migration matches the model, erase keeps
// working, saturated fingerprints stay pinned, and concurrent readers
// never miss a published key across the migration. Every scenario runs on
// every d-left kernel (ElasticKernel::kGeneral, kFast and kDense).
#include "dlcbf/core/elastic_filter.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/dense_dleft_testing.h"
#include "filter_policy/testing/elastic_testing.h"
#endif
#include "sizing_test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace dlcbf {
namespace {

constexpr uint64_t kSizing = 2000;

ElasticOptions Opts(bool thread_safe = false) {
  ElasticOptions o;
  o.expected_items = kSizing;
  o.thread_safe = thread_safe;
  return o;
}

// The kernel's fingerprint space B * Rn and table bytes, from the options
// as sized by the filter.
uint64_t FpSpace(const ElasticFilter& f) {
  const ElasticOptions& o = f.options();
  if (o.kernel == ElasticKernel::kFast) return o.fast.blocks * (8 / o.fast.subtables) * 8191;
  if (o.kernel == ElasticKernel::kDense) {
    return o.dense.blocks_per_subtable * o.dense.BucketsPerBlock() * ((uint64_t{1} << o.dense.remainder_bits) - 1);
  }
  return o.dleft.buckets_per_subtable * ((uint64_t{1} << o.dleft.remainder_bits) - 1);
}
// Cells counted by migrate_at_load.
uint64_t Cells(const ElasticFilter& f) {
  const ElasticOptions& o = f.options();
  if (o.kernel == ElasticKernel::kFast) return 32 * o.fast.blocks;
  if (o.kernel == ElasticKernel::kDense) return o.dense.Blocks() * o.dense.SlotsPerBlock();
  return uint64_t{o.dleft.subtables} * o.dleft.buckets_per_subtable * o.dleft.cells_per_bucket;
}
uint64_t KernelBytes(const ElasticFilter& f) {
  const ElasticOptions& o = f.options();
  if (o.kernel == ElasticKernel::kFast) return o.fast.Bytes();
  if (o.kernel == ElasticKernel::kDense) return o.dense.Bytes();
  std::unique_ptr<DLeftCountingBloomFilter> ref;
  EXPECT_TRUE(DLeftCountingBloomFilter::Create(o.dleft, &ref).ok());
  return ref ? ref->bytes() : 0;
}

std::unique_ptr<ElasticFilter> Make(const ElasticOptions& o) {
  std::unique_ptr<ElasticFilter> f;
  Status s = ElasticFilter::Create(o, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return f;
}

std::string Key(uint64_t i) { return "elastic-" + std::to_string(i); }

// FPR tolerance after migration. predicted = 1 - (1 - c)(1 - F_abf) with
// F_abf = P1^k the lossless ABF model. Error sources (1 SE each):
//   query sampling        sqrt(p (1 - p) / Q)
//   fill of this filter   k P1^(k-1) sd(P1),  sd(P1) ~ sqrt(P1 P0 / m)
// plus a bias bound: the model counts n inserted keys, but keys sharing a
// dlCBF fingerprint (n^2 / (2 B Rn) pairs) are one ABF element, which
// lowers the true F_abf by at most dF/dn * n^2 / (2 B Rn).
double Tolerance(const ElasticStats& st, uint64_t queries, uint64_t fp_space) {
  const double p = st.predicted_fpr;
  const double m = static_cast<double>(st.abf.counting.num_counters);
  const double k = st.abf.counting.num_probes;
  const double n = static_cast<double>(st.abf.n);
  const double P1 = st.abf.model.P1, P0 = st.abf.model.P0;
  const double fill_sd = k * std::pow(P1, k - 1) * std::sqrt(P1 * P0 / m);
  const double se = std::sqrt(p * (1 - p) / static_cast<double>(queries) + fill_sd * fill_sd);
  const double dF_dn = k * std::pow(P1, k - 1) * (k / m) * P0;
  const double bias = dF_dn * n * n / (2.0 * static_cast<double>(fp_space));
  return 4.5 * se + bias;
}

double MeasureFpr(const ElasticFilter& f, uint64_t base, uint64_t q) {
  uint64_t fp = 0;
  for (uint64_t i = 0; i < q; ++i) fp += f.Contains("fresh-" + std::to_string(base + i)) ? 1 : 0;
  return static_cast<double>(fp) / static_cast<double>(q);
}

class ElasticKernelTest : public ::testing::TestWithParam<ElasticKernel> {
 protected:
  ElasticOptions Opts(bool thread_safe = false) const {
    ElasticOptions o = ::dlcbf::Opts(thread_safe);
    o.kernel = GetParam();
    return o;
  }
};

INSTANTIATE_TEST_SUITE_P(Kernels, ElasticKernelTest,
                         ::testing::Values(ElasticKernel::kGeneral, ElasticKernel::kFast,
                                           ElasticKernel::kDense),
                         [](const ::testing::TestParamInfo<ElasticKernel>& i) {
                           return i.param == ElasticKernel::kFast    ? "Fast"
                                  : i.param == ElasticKernel::kDense ? "Dense"
                                                                     : "General";
                         });

TEST(ElasticOptionsTest, ValidateNamesTheField) {
  auto invalid = [](const ElasticOptions& o, const char* field) {
    Status s = o.Validate();
    EXPECT_TRUE(s.IsInvalidArgument()) << field;
    EXPECT_NE(s.ToString().find(field), std::string::npos) << s.ToString();
  };
  EXPECT_TRUE(Opts().Validate().ok());
  ElasticOptions o = Opts();
  o.kernel = ElasticKernel::kGeneral;
  o.dleft.counter_bits = 0;
  invalid(o, "dleft.counter_bits");
  o = Opts();
  o.kernel = ElasticKernel::kGeneral;
  o.dleft.subtables = 1;
  invalid(o, "dleft");
  o = Opts();
  o.min_tpr = 0.9;
  invalid(o, "allow_false_negatives");
  o = Opts();
  o.abf_counter_bits = 9;
  invalid(o, "abf_counter_bits");
  o = Opts();
  o.migrate_at_load = 1.5;
  invalid(o, "migrate_at_load");
  o = Opts();
  o.abf_growth = 0.5;
  invalid(o, "abf_growth");
  o = Opts();
  o.kernel = ElasticKernel::kFast;
  EXPECT_TRUE(o.Validate().ok());
  o.fast.subtables = 3;
  invalid(o, "fast.");
}

// The default kernel is the fast one; a general-kernel geometry set while
// the kernel is kFast is refused (it would be ignored), naming the field.
TEST(ElasticOptionsTest, DefaultKernelIsFastAndRefusesGeneralGeometry) {
  ElasticOptions o;
  EXPECT_EQ(o.kernel, ElasticKernel::kFast);
  o.expected_items = kSizing;
  auto f = Make(o);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->Stats().fast.bytes, testing_util::FastAt(kSizing, 0.75).Bytes());
  o.dleft.thread_safe = true;  // overridden by ElasticOptions::thread_safe: allowed
  EXPECT_TRUE(o.Validate().ok());
  const std::vector<std::pair<const char*, std::function<void(DLeftOptions&)>>> fields = {
      {"dleft.subtables", [](DLeftOptions& d) { d.subtables = 2; }},
      {"dleft.buckets_per_subtable", [](DLeftOptions& d) { d.buckets_per_subtable = 7; }},
      {"dleft.cells_per_bucket", [](DLeftOptions& d) { d.cells_per_bucket = 3; }},
      {"dleft.remainder_bits", [](DLeftOptions& d) { d.remainder_bits = 12; }},
      {"dleft.counter_bits", [](DLeftOptions& d) { d.counter_bits = 0; }},
      {"dleft.seed", [](DLeftOptions& d) { d.seed = 1; }},
      {"dleft.relocation", [](DLeftOptions& d) { d.relocation = Relocation::kNone; }},
      {"dleft.max_relocation_nodes", [](DLeftOptions& d) { d.max_relocation_nodes = 3; }},
      {"dleft.max_bytes", [](DLeftOptions& d) { d.max_bytes = 1 << 20; }},
  };
  for (const auto& field : fields) {
    ElasticOptions bad = o;
    field.second(bad.dleft);
    const Status s = bad.Validate();
    EXPECT_TRUE(s.IsInvalidArgument()) << field.first;
    EXPECT_NE(s.ToString().find(field.first), std::string::npos) << s.ToString();
    EXPECT_NE(s.ToString().find("kGeneral"), std::string::npos) << s.ToString();
    std::unique_ptr<ElasticFilter> none;
    EXPECT_TRUE(ElasticFilter::Create(bad, &none).IsInvalidArgument()) << field.first;
    bad.kernel = ElasticKernel::kGeneral;  // the same geometry is fine there
    if (std::string(field.first) != "dleft.counter_bits") {
      EXPECT_TRUE(bad.Validate().ok()) << field.first << ": " << bad.Validate().ToString();
    }
  }
}

// The dense kernel: sized by ForLoad at min(sizing_load, MaxLoad) of its
// remainder class; its own errors and foreign fields are named.
TEST(ElasticOptionsTest, DenseKernelSizingAndFields) {
  ElasticOptions o = Opts();
  o.kernel = ElasticKernel::kDense;
  o.dense.remainder_bits = 16;
  auto f = Make(o);
  ASSERT_TRUE(f);
  DenseDLeftOptions want;
  want.remainder_bits = 16;
  ASSERT_TRUE(DenseDLeftOptions::ForLoad(kSizing, 0.75, 16, &want).ok());
  EXPECT_EQ(f->options().dense.blocks_per_subtable, want.blocks_per_subtable);
  EXPECT_EQ(f->MemoryUsage().bytes, want.Bytes());
  o.sizing_load = 0.99;  // above MaxLoad: capped
  f = Make(o);
  ASSERT_TRUE(f);
  ASSERT_TRUE(DenseDLeftOptions::ForLoad(kSizing, DenseDLeftOptions::MaxLoad(16), 16, &want).ok());
  EXPECT_EQ(f->options().dense.blocks_per_subtable, want.blocks_per_subtable);
  auto invalid = [](const ElasticOptions& x, const char* field) {
    const Status s = x.Validate();
    EXPECT_TRUE(s.IsInvalidArgument()) << field;
    EXPECT_NE(s.ToString().find(field), std::string::npos) << s.ToString();
  };
  ElasticOptions bad = o;
  bad.dense.remainder_bits = 12;
  invalid(bad, "dense.remainder_bits must be 8 or 16");
  bad = o;
  bad.fast.subtables = 4;  // a fast-kernel field while the kernel is kDense
  invalid(bad, "fast.subtables");
  bad = Opts();
  bad.kernel = ElasticKernel::kFast;
  bad.dense.remainder_bits = 16;  // a dense-kernel field while the kernel is kFast
  invalid(bad, "dense.remainder_bits");
}

// The fast kernel is sized by ForLoad at min(sizing_load, MaxLoad).
TEST(ElasticOptionsTest, FastKernelSizing) {
  ElasticOptions o = Opts();
  o.kernel = ElasticKernel::kFast;
  auto f = Make(o);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->options().fast.blocks, testing_util::FastAt(kSizing, 0.75).blocks);
  EXPECT_EQ(f->MemoryUsage().bytes, f->options().fast.Bytes());
  o.sizing_load = 0.95;  // above MaxLoad: capped
  f = Make(o);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->options().fast.blocks,
            testing_util::FastAt(kSizing, FastDLeftOptions::MaxLoad(2)).blocks);
}

// The main scenario: 10x the sizing, then erase half, lossless mode.
TEST_P(ElasticKernelTest, TenTimesSizingLosslessThenErase) {
  auto f = Make(Opts());
  const uint64_t n = 10 * kSizing;
  uint64_t migrated_at = 0;
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(f->Insert(Key(i)), OpResult::kOk) << i;
    if (migrated_at == 0 && f->mode() == ElasticMode::kAutoscaling) migrated_at = i + 1;
  }
  ElasticStats st = f->Stats();
  EXPECT_EQ(st.mode, ElasticMode::kAutoscaling);
  EXPECT_EQ(st.migrated_at_insert, migrated_at);
  EXPECT_GT(st.migrated_at_insert, kSizing);  // sized at 75 % load: migrates later
  if (GetParam() == ElasticKernel::kFast) {
    // In steps from MaxLoad on; the insert that copied the last group
    // published the ABF, after it was itself counted.
    EXPECT_EQ(st.migration_cause, MigrationCause::kIncremental);
    EXPECT_EQ(st.migrated_items, st.migrated_at_insert);
  } else {
    EXPECT_EQ(st.migration_cause, MigrationCause::kOverflow);
    EXPECT_EQ(st.migrated_items + 1, st.migrated_at_insert);  // all earlier inserts live
  }
  EXPECT_GT(st.migrated_fingerprints, 0u);
  EXPECT_EQ(st.items, n);
  EXPECT_EQ(st.inserts, n);
  EXPECT_EQ(st.failed_inserts, 0u);
  EXPECT_EQ(st.retained_bytes, 0u);  // not thread-safe: the dlCBF was freed
  EXPECT_TRUE(st.abf.lossless);
  // Same byte budget as the dlCBF it replaced.
  const uint64_t kernel_bytes = KernelBytes(*f);
  EXPECT_LE(st.bytes, kernel_bytes);
  EXPECT_GT(st.bytes + 8, kernel_bytes);
  const uint64_t fp_space = FpSpace(*f);

  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i))) << i;  // zero FN

  const uint64_t q = 20000;
  double fpr = MeasureFpr(*f, 0, q);
  EXPECT_NEAR(fpr, st.predicted_fpr, Tolerance(st, q, fp_space))
      << "model " << st.abf.model.fpr << " k=" << st.abf.counting.num_probes;

  // Erase after migration: the first half. Every live key is erasable.
  for (uint64_t i = 0; i < n / 2; ++i) ASSERT_EQ(f->Erase(Key(i)), OpResult::kOk) << i;
  for (uint64_t i = n / 2; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i))) << i;
  st = f->Stats();
  EXPECT_EQ(st.items, n / 2);
  fpr = MeasureFpr(*f, 1000000, q);
  EXPECT_NEAR(fpr, st.predicted_fpr, Tolerance(st, q, fp_space));
  // Certainly-absent keys (Contains false: a zero counter) are kNotFound
  // and change nothing. (Erasing a never-inserted key that is a false
  // positive would remove other keys' evidence -- the documented "only
  // erase keys you inserted" contract of every counting filter.)
  uint64_t not_found = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const std::string absent = "absent-" + std::to_string(i);
    if (f->Contains(absent)) continue;
    ASSERT_EQ(f->Erase(absent), OpResult::kNotFound);
    ++not_found;
  }
  EXPECT_GT(not_found, 100u);
  EXPECT_EQ(f->Stats().items, n / 2);
  for (uint64_t i = n / 2; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i))) << i;
}

// Explicit k > 1 at 3x: the model with more than one probe.
// migrate_on_overflow = false: the full kernel refuses the insert
// (kOverflow, counted in failed_inserts) and changes nothing; it never
// migrates, and every key it took stays found. (The fast kernel's
// incremental steps are a migration of their own: off here.)
TEST_P(ElasticKernelTest, OverflowReturnedToTheCallerWhenAsked) {
  ElasticOptions o = Opts();
  o.migrate_on_overflow = false;
  o.incremental_migration = false;
  std::unique_ptr<ElasticFilter> f = Make(o);
  ASSERT_TRUE(f);
  std::vector<uint64_t> taken;
  uint64_t refused = 0, i = 0;
  for (; i < 4 * kSizing && refused < 100; ++i) {
    const uint64_t h = f->Hash(Key(i));
    const OpResult r = f->InsertHash(h);
    if (r == OpResult::kOk) {
      taken.push_back(h);
    } else {
      ASSERT_EQ(r, OpResult::kOverflow);
      ++refused;
    }
  }
  ASSERT_EQ(refused, 100u) << "the kernel never filled in " << i << " inserts";
  const ElasticStats st = f->Stats();
  EXPECT_EQ(st.mode, ElasticMode::kDLeft);
  EXPECT_EQ(st.migration_cause, MigrationCause::kNone);
  EXPECT_EQ(st.failed_inserts, 100u);
  EXPECT_EQ(st.items, taken.size());
  for (uint64_t h : taken) ASSERT_TRUE(f->ContainsHash(h));
  // The default migrates instead (the control).
  o.migrate_on_overflow = true;
  std::unique_ptr<ElasticFilter> g = Make(o);
  for (uint64_t j = 0; j < i; ++j) ASSERT_EQ(g->InsertHash(g->Hash(Key(j))), OpResult::kOk);
  EXPECT_EQ(g->Stats().mode, ElasticMode::kAutoscaling);
}

// ElasticFilter's own InsertHashBatch (one lock, prefetching) is n
// InsertHash calls: fed the same hashes in batches of uneven sizes,
// through the migration, a filter ends in the same state as one fed them
// singly (same counters, same answers to 20,000 absent keys), in both
// thread modes; with migrate_on_overflow = false each refusal is reported
// where single inserts see it and the batch goes on past it.
// (CountingFilterApiTest checks the per-key results on small filters.)
TEST_P(ElasticKernelTest, InsertHashBatchEqualsSingleInserts) {
  for (bool thread_safe : {false, true}) {
    SCOPED_TRACE(thread_safe ? "thread_safe" : "single-threaded");
    auto single = Make(Opts(thread_safe));
    auto batched = Make(Opts(thread_safe));
    const uint64_t n = 3 * kSizing;
    std::vector<uint64_t> hs(n);
    std::vector<OpResult> out(n);
    for (uint64_t i = 0; i < n; ++i) hs[i] = single->Hash(Key(i));
    for (uint64_t h : hs) ASSERT_EQ(single->InsertHash(h), OpResult::kOk);
    size_t at = 0, step = 1;
    while (at < n) {
      const size_t len = std::min<size_t>(step, n - at);
      batched->InsertHashBatch(hs.data() + at, len, out.data() + at);
      at += len;
      step = step * 3 % 997 + 1;  // 1, 4, 13, 40, ... uneven lengths
    }
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], OpResult::kOk) << i;
    batched->InsertHashBatch(hs.data(), 0, out.data());  // empty: no change
    const ElasticStats a = single->Stats(), b = batched->Stats();
    EXPECT_EQ(a.mode, ElasticMode::kAutoscaling);  // the batches crossed the migration
    EXPECT_EQ(b.mode, a.mode);
    EXPECT_EQ(b.items, a.items);
    EXPECT_EQ(b.inserts, a.inserts);
    EXPECT_EQ(b.migration_cause, a.migration_cause);
    EXPECT_EQ(b.migrated_at_insert, a.migrated_at_insert);
    for (uint64_t h : hs) ASSERT_TRUE(batched->ContainsHash(h));
    uint64_t differ = 0, positives = 0;
    for (uint64_t i = 0; i < 20000; ++i) {
      const std::string k = "absent-" + std::to_string(i);
      differ += single->Contains(k) != batched->Contains(k) ? 1 : 0;
      positives += batched->Contains(k) ? 1 : 0;
    }
    EXPECT_EQ(differ, 0u);
    EXPECT_GT(positives, 0u);  // the comparison saw both answers
  }
  ElasticOptions o = Opts();
  o.migrate_on_overflow = false;
  o.incremental_migration = false;
  auto single = Make(o), batched = Make(o);
  std::vector<uint64_t> hs;
  std::vector<OpResult> want;
  uint64_t refused = 0;
  for (uint64_t i = 0; i < 4 * kSizing && refused < 50; ++i) {
    hs.push_back(single->Hash(Key(i)));
    want.push_back(single->InsertHash(hs.back()));
    refused += want.back() == OpResult::kOk ? 0 : 1;
  }
  ASSERT_EQ(refused, 50u) << "the kernel never filled";
  std::vector<OpResult> got(hs.size());
  batched->InsertHashBatch(hs.data(), hs.size(), got.data());
  for (size_t i = 0; i < hs.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  EXPECT_EQ(batched->Stats().items, single->Stats().items);
  EXPECT_EQ(batched->Stats().failed_inserts, 50u);
}

TEST_P(ElasticKernelTest, ThreeTimesSizingWithThreeProbes) {
  ElasticOptions o = Opts();
  o.abf_probes = 3;
  o.abf_counter_bits = 2;  // twice the counters; some saturate (sticky)
  auto f = Make(o);
  const uint64_t n = 3 * kSizing;
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(f->Insert(Key(i)), OpResult::kOk);
  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i)));
  const ElasticStats st = f->Stats();
  ASSERT_EQ(st.mode, ElasticMode::kAutoscaling);
  EXPECT_EQ(st.abf.counting.num_probes, 3u);
  EXPECT_EQ(st.abf.counting.counter_bits, 2u);
  const uint64_t fp_space = FpSpace(*f);
  const uint64_t q = 20000;
  EXPECT_NEAR(MeasureFpr(*f, 0, q), st.predicted_fpr, Tolerance(st, q, fp_space));
}

// Keys inserted more often than the dlCBF counter can count: their
// fingerprints are pinned at migration, so no number of erases removes
// them (the dlCBF's sticky rule carried over). The dense kernel stores
// copies, so its multiplicities are exact and carry over exactly instead.
TEST_P(ElasticKernelTest, SaturatedFingerprintsArePinnedAcrossMigration) {
  auto f = Make(Opts());
  for (int i = 0; i < 10; ++i) ASSERT_EQ(f->Insert("hot"), OpResult::kOk);  // dlCBF counter saturates
  for (uint64_t i = 0; f->mode() == ElasticMode::kDLeft; ++i) ASSERT_EQ(f->Insert(Key(i)), OpResult::kOk);
  const ElasticStats st = f->Stats();
  if (GetParam() == ElasticKernel::kDense) {
    EXPECT_EQ(st.pinned_fingerprints, 0u);
    for (int i = 0; i < 10; ++i) {
      EXPECT_TRUE(f->Contains("hot")) << "copy " << i << " of 10 still stored";
      EXPECT_EQ(f->Erase("hot"), OpResult::kOk);
    }
    return;
  }
  EXPECT_GE(st.pinned_fingerprints, 1u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(f->Erase("hot"), OpResult::kOk);
  EXPECT_TRUE(f->Contains("hot"));
  EXPECT_GE(f->Stats().pinned_erases, 20u);
}

TEST_P(ElasticKernelTest, LoadThresholdMigration) {
  ElasticOptions o = Opts();
  o.migrate_at_load = 0.5;
  auto f = Make(o);
  uint64_t i = 0;
  while (f->mode() == ElasticMode::kDLeft) ASSERT_EQ(f->Insert(Key(i++)), OpResult::kOk);
  const ElasticStats st = f->Stats();
  EXPECT_EQ(st.migration_cause, MigrationCause::kLoadThreshold);
  EXPECT_EQ(st.migrated_at_insert, Cells(*f) / 2 + 1);
  for (uint64_t j = 0; j < i; ++j) ASSERT_TRUE(f->Contains(Key(j)));
}

TEST_P(ElasticKernelTest, DLeftModeBeforeMigration) {
  auto f = Make(Opts());
  for (uint64_t i = 0; i < kSizing; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  ElasticStats st = f->Stats();
  EXPECT_EQ(st.mode, ElasticMode::kDLeft);
  EXPECT_EQ(st.migration_cause, MigrationCause::kNone);
  EXPECT_EQ(st.migrated_at_insert, 0u);
  EXPECT_NEAR(st.predicted_fpr,
              GetParam() == ElasticKernel::kFast    ? st.fast.predicted_fpr
              : GetParam() == ElasticKernel::kDense ? st.dense.predicted_fpr
                                                    : st.dleft.predicted_fpr,
              0);
  if (GetParam() == ElasticKernel::kFast) {
    EXPECT_EQ(st.fast.items, kSizing);
  }
  if (GetParam() == ElasticKernel::kDense) {
    EXPECT_EQ(st.dense.items, kSizing);
  }
  EXPECT_EQ(f->Erase(Key(0)), OpResult::kOk);
  EXPECT_EQ(f->Stats().items, kSizing - 1);
  std::vector<std::string> keys;
  for (uint64_t i = 1; i < 200; ++i) keys.push_back(Key(i));
  std::vector<std::string_view> slices(keys.begin(), keys.end());
  std::unique_ptr<bool[]> out(new bool[slices.size()]);
  f->ContainsBatch(slices.data(), slices.size(), out.get());
  for (size_t i = 0; i < slices.size(); ++i) EXPECT_TRUE(out[i]);
}

// MemoryUsage() is the O(1) view of Stats().bytes / retained_bytes, in both
// modes and after the frozen dlCBF is released.
TEST_P(ElasticKernelTest, MemoryUsageMatchesStats) {
  auto f = Make(Opts(/*thread_safe=*/true));
  auto same = [&](const char* when) {
    const ElasticStats st = f->Stats();
    const ElasticFilter::Memory m = f->MemoryUsage();
    EXPECT_EQ(m.bytes, st.bytes) << when;
    EXPECT_EQ(m.retained_bytes, st.retained_bytes) << when;
  };
  same("empty");
  for (uint64_t i = 0; i < kSizing; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  same("dlCBF mode");
  ASSERT_EQ(f->Stats().mode, ElasticMode::kDLeft);
  for (uint64_t i = kSizing; i < 4 * kSizing; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  ASSERT_EQ(f->Stats().mode, ElasticMode::kAutoscaling);
  EXPECT_GT(f->MemoryUsage().retained_bytes, 0u) << "thread-safe migration keeps the dlCBF";
  same("migrated");
  f->ReleaseRetired();
  EXPECT_EQ(f->MemoryUsage().retained_bytes, 0u);
  same("released");
}

// Opt-in lossy mode: the ABF is auto-tuned; measured TPR stays near the
// requested floor (it is approximate membership: misses are expected).
TEST_P(ElasticKernelTest, OptInLossyModeTunesTheAbf) {
  ElasticOptions o = Opts();
  o.min_tpr = 0.9;
  o.allow_false_negatives = true;
  o.abf_probes = 20;
  o.abf_counter_bits = 8;
  auto f = Make(o);
  const uint64_t n = 10 * kSizing;
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(f->Insert(Key(i)), OpResult::kOk);
  const ElasticStats st = f->Stats();
  ASSERT_EQ(st.mode, ElasticMode::kAutoscaling);
  EXPECT_FALSE(st.abf.lossless);
  EXPECT_GE(st.abf.model.tpr, 0.9);
  uint64_t tp = 0;
  for (uint64_t i = 0; i < n; ++i) tp += f->Contains(Key(i)) ? 1 : 0;
  const double tpr = static_cast<double>(tp) / n;
  // SE of a TPR measured on one filter: fill fluctuation dominates; allow
  // the model's TPR minus 0.03 (>= 5 SE at m = 5376, k = 20).
  EXPECT_GT(tpr, st.abf.model.tpr - 0.03);
  EXPECT_LT(tpr, 1.0);
}

// Thread-safe mode: one writer inserts 10x the sizing (crossing the
// migration) and publishes a watermark; a reader checks random published
// keys (single and batch lookups) and must never get a false negative.
TEST_P(ElasticKernelTest, ConcurrencyReadersNeverMissAcrossMigration) {
  auto f = Make(Opts(/*thread_safe=*/true));
  const uint64_t n = 10 * kSizing;
  std::atomic<uint64_t> published{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> misses{0}, reads{0};
  std::thread reader([&] {
    std::mt19937_64 rng(11);
    std::vector<std::string> keys(8);
    std::vector<std::string_view> slices(8);
    bool out[8];
    while (!done.load(std::memory_order_acquire)) {
      const uint64_t p = published.load(std::memory_order_acquire);
      if (p == 0) continue;
      for (int j = 0; j < 8; ++j) {
        keys[j] = Key(rng() % p);
        slices[j] = keys[j];
        if (!f->Contains(slices[j])) misses.fetch_add(1);
      }
      f->ContainsBatch(slices.data(), 8, out);
      for (bool b : out) {
        if (!b) misses.fetch_add(1);
      }
      reads.fetch_add(16, std::memory_order_release);
    }
  });
  // Handshake instead of timing: every 256 inserts the writer waits until
  // the reader has completed another round, so reads interleave with the
  // whole insert stream, migration included, however threads are scheduled.
  uint64_t seen = 0;
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(f->Insert(Key(i)), OpResult::kOk);
    published.store(i + 1, std::memory_order_release);
    if (i % 256 == 0) {
      while (reads.load(std::memory_order_acquire) == seen) std::this_thread::yield();
      seen = reads.load(std::memory_order_acquire);
    }
  }
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_GE(reads.load(), 16 * (n / 256));
  ElasticStats st = f->Stats();
  EXPECT_EQ(st.mode, ElasticMode::kAutoscaling);
  EXPECT_GT(st.retained_bytes, 0u);  // frozen dlCBF kept for in-flight readers
  f->ReleaseRetired();
  EXPECT_EQ(f->Stats().retained_bytes, 0u);
  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i)));
}

// ---------------------------------------------------------------------------
// Incremental migration (kFast, ElasticOptions::incremental_migration)
// ---------------------------------------------------------------------------

// Runs one op sequence: keys 0..n-1 inserted (every third one twice), and
// once the incremental migration is under way, erases of some keys (both
// in blocks already copied and in blocks still to copy) between the
// inserts. Returns the filter and the live multiset.
struct IncrementalRun {
  std::unique_ptr<ElasticFilter> f;
  std::multiset<uint64_t> live;
  uint64_t phase_inserts = 0;   // Insert calls made while migrating()
  uint64_t phase_erases = 0;
  int64_t window_first = -1;    // first and last outer step i with erases
  int64_t window_last = -1;
  uint64_t published_at = 0;    // items when the ABF was published
};

// window_first < 0: erase while the filter is migrating (and record that
// window of steps); else erase in the given window (the reference run).
IncrementalRun RunIncremental(const ElasticOptions& o, uint64_t n, int64_t window_first = -1,
                              int64_t window_last = -1) {
  IncrementalRun r;
  r.f = Make(o);
  if (!r.f) return r;
  uint64_t erase_next = 0;
  const bool reference = window_first >= 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (reference ? static_cast<int64_t>(i) > window_last
                  : r.f->mode() == ElasticMode::kAutoscaling) {
      break;
    }
    const bool during = reference ? static_cast<int64_t>(i) >= window_first : r.f->migrating();
    if (during && !reference) {
      if (r.window_first < 0) r.window_first = static_cast<int64_t>(i);
      r.window_last = static_cast<int64_t>(i);
    }
    for (int rep = 0; rep < (i % 3 == 0 ? 2 : 1); ++rep) {
      if (r.f->migrating()) ++r.phase_inserts;
      EXPECT_EQ(r.f->Insert(Key(i)), OpResult::kOk);
      r.live.insert(i);
    }
    // During the steps, erase an old key (its block is anywhere: copied
    // or not yet) every other step.
    if (during && i % 2 == 0) {
      while (erase_next < i && r.live.count(erase_next) == 0) ++erase_next;
      if (erase_next < i) {
        EXPECT_EQ(r.f->Erase(Key(erase_next)), OpResult::kOk);
        r.live.erase(r.live.find(erase_next));
        ++r.phase_erases;
      }
      erase_next += 7;
    }
    if (r.published_at == 0 && r.f->mode() == ElasticMode::kAutoscaling) {
      r.published_at = r.f->Stats().migrated_items;
    }
  }
  return r;
}

ElasticOptions IncrementalOpts(bool thread_safe) {
  ElasticOptions o = Opts(thread_safe);
  o.kernel = ElasticKernel::kFast;
  o.expected_items = 20000;  // 834 blocks: 53 groups of 16
  o.abf_probes = 3;          // the same ABF geometry in the reference below
  return o;
}

TEST(ElasticIncremental, StepsThenPublishesLosslesslyAndExactly) {
  for (bool thread_safe : {false, true}) {
    ElasticOptions o = IncrementalOpts(thread_safe);
    IncrementalRun r = RunIncremental(o, 100000);
    ASSERT_TRUE(r.f);
    ElasticStats st = r.f->Stats();
    ASSERT_EQ(st.mode, ElasticMode::kAutoscaling);
    EXPECT_EQ(st.migration_cause, MigrationCause::kIncremental);
    const uint64_t blocks = r.f->options().fast.blocks;
    const uint64_t groups = (blocks + 15) / 16;
    const uint64_t abf_pages_steps = (st.bytes + (16 << 10) - 1) / (16 << 10);
    // One step per insert: the pages of the ABF, then one group each.
    EXPECT_GE(r.phase_inserts, groups);
    EXPECT_LE(r.phase_inserts, groups + abf_pages_steps + 1);
    EXPECT_GT(r.phase_erases, 10u);
    // It started at MaxLoad of the cells (items counted once per key).
    EXPECT_GE(static_cast<double>(st.migrated_items - r.phase_inserts),
              0.8 * 32 * static_cast<double>(blocks) - 2 * static_cast<double>(r.phase_inserts));
    // Lossless: every live key is found after the switch.
    for (uint64_t k : r.live) ASSERT_TRUE(r.f->Contains(Key(k))) << k << " ts=" << thread_safe;

    // Exact: a filter that saw the same ops and migrated in one go at the
    // same moment (migrate_at_load just below the publishing point) has
    // the same ABF: identical answers for absent keys, and identical again
    // after erasing every live key once more from both.
    ElasticOptions ref_o = o;
    ref_o.incremental_migration = false;
    ref_o.migrate_at_load =
        (static_cast<double>(r.published_at) - 0.5) / (32.0 * static_cast<double>(blocks));
    IncrementalRun ref = RunIncremental(ref_o, 100000, r.window_first, r.window_last);
    ASSERT_TRUE(ref.f);
    ASSERT_EQ(ref.f->mode(), ElasticMode::kAutoscaling);
    EXPECT_EQ(ref.f->Stats().migration_cause, MigrationCause::kLoadThreshold);
    ASSERT_EQ(ref.live, r.live);
    uint64_t differ = 0, positives = 0;
    for (uint64_t i = 0; i < 200000; ++i) {
      const std::string k = "absent-" + std::to_string(i);
      const bool a = r.f->Contains(k);
      differ += a != ref.f->Contains(k);
      positives += a;
    }
    EXPECT_EQ(differ, 0u);
    EXPECT_GT(positives, 0u);  // the comparison is not vacuous
    for (uint64_t k : r.live) {
      EXPECT_EQ(r.f->Erase(Key(k)), ref.f->Erase(Key(k)));
    }
    for (uint64_t i = 0; i < 200000; ++i) {
      const std::string k = "absent-" + std::to_string(i);
      differ += r.f->Contains(k) != ref.f->Contains(k);
    }
    EXPECT_EQ(differ, 0u);
  }
}

// Negative control: without the mirroring, keys inserted during the steps
// into blocks already copied are missing from the published ABF.
TEST(ElasticIncremental, NegativeControlWithoutMirrorLosesKeys) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "negative control needs the DLCBF_TESTING build of the library (its fault hook "
                  "exists only there; the in-tree plugin build links the shipped library)";
#else
  internal::SetElasticSkipMirrorForTesting(true);
  IncrementalRun r = RunIncremental(IncrementalOpts(false), 100000);
  internal::SetElasticSkipMirrorForTesting(false);
  ASSERT_TRUE(r.f);
  ASSERT_EQ(r.f->mode(), ElasticMode::kAutoscaling);
  uint64_t lost = 0;
  for (uint64_t k : r.live) lost += r.f->Contains(Key(k)) ? 0 : 1;
  EXPECT_GT(lost, 0u) << "the mirroring is not needed: the test above cannot fail";
#endif
}

// An insert that overflows during the steps finishes the copy at once.
TEST(ElasticIncremental, OverflowDuringTheStepsFinishesAtOnce) {
  ElasticOptions o = Opts();
  o.kernel = ElasticKernel::kFast;
  o.fast.blocks = 4096;  // 256 groups: 256+ steps, far more than block 0 takes
  o.expected_items = 0;  // keep those blocks
  auto f = Make(o);
  ASSERT_TRUE(f);
  // Fill to MaxLoad with spread keys: the steps start.
  uint64_t i = 0;
  while (!f->migrating() && i < 200000) ASSERT_EQ(f->Insert(Key(i++)), OpResult::kOk);
  ASSERT_TRUE(f->migrating());
  // Now hashes that all land in block 0 until it and its spare pair
  // overflow (block = the top 12 bits of the hash: 0).
  std::vector<uint64_t> hot;
  for (uint64_t j = 1; f->mode() == ElasticMode::kDLeft && j < 100000; ++j) {
    const uint64_t h = (j * 0x9E3779B97F4A7C15ULL) >> 12;  // < 2^52: block 0 of 4096
    ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
    hot.push_back(h);
  }
  ElasticStats st = f->Stats();
  ASSERT_EQ(st.mode, ElasticMode::kAutoscaling);
  EXPECT_EQ(st.migration_cause, MigrationCause::kOverflow);
  EXPECT_FALSE(f->migrating());
  EXPECT_LT(hot.size(), 200u);  // block 0 and its spare pair overflowed
  for (uint64_t k = 0; k < i; ++k) ASSERT_TRUE(f->Contains(Key(k))) << k;
  for (size_t j = 0; j < hot.size(); ++j) ASSERT_TRUE(f->ContainsHash(hot[j])) << j << " of " << hot.size();
}

// The dense kernel the same way: Adopt a loaded DenseDLeftFilter (the
// LiveKeyDB index file's path), serialize it back unchanged, grow it into
// its ABF without losing a key.
TEST(ElasticAdopt, WrapsALoadedDenseKernel) {
  for (bool thread_safe : {false, true}) {
    DenseDLeftOptions dopt;
    dopt.thread_safe = thread_safe;
    ASSERT_TRUE(DenseDLeftOptions::ForBitsPerKey(5000, 12, &dopt).ok());
    std::unique_ptr<DenseDLeftFilter> k;
    ASSERT_TRUE(DenseDLeftFilter::Create(dopt, &k).ok());
    for (uint64_t i = 0; i < 5000; ++i) ASSERT_EQ(k->Insert(Key(i)), OpResult::kOk);
    std::string bytes;
    k->Serialize(&bytes);
    std::unique_ptr<DenseDLeftFilter> loaded;
    ASSERT_TRUE(DenseDLeftFilter::Deserialize(bytes, &loaded, DeserializeOptions{thread_safe}).ok());
    ElasticOptions o;
    o.kernel = ElasticKernel::kDense;
    std::unique_ptr<ElasticFilter> f;
    // The wrong kind is refused (and the kernel freed, not leaked).
    std::unique_ptr<DenseDLeftFilter> spare;
    ASSERT_TRUE(DenseDLeftFilter::Deserialize(bytes, &spare).ok());
    EXPECT_TRUE(ElasticFilter::Adopt(ElasticOptions(), std::move(spare), 5000, &f).IsInvalidArgument());
    ASSERT_TRUE(ElasticFilter::Adopt(o, std::move(loaded), 5000, &f).ok());
    EXPECT_EQ(f->options().dense.blocks_per_subtable, dopt.blocks_per_subtable);
    EXPECT_EQ(f->options().thread_safe, thread_safe);
    std::string again;
    ASSERT_TRUE(f->SerializeKernel(&again));
    EXPECT_EQ(again, bytes);
    uint64_t n = 5000;
    while (f->mode() == ElasticMode::kDLeft && n < 50000) ASSERT_EQ(f->Insert(Key(n++)), OpResult::kOk);
    ASSERT_EQ(f->mode(), ElasticMode::kAutoscaling);
    for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i))) << i;
  }
}

// Adopt wraps a kernel read back from its serialized form, without a copy;
// the filter then grows and migrates like one it created.
TEST(ElasticAdopt, WrapsALoadedKernelAndMigratesFromIt) {
  for (bool thread_safe : {false, true}) {
    FastDLeftOptions fo = testing_util::FastAt(5000, 0.75);
    fo.thread_safe = thread_safe;
    std::unique_ptr<FastDLeftFilter> k;
    ASSERT_TRUE(FastDLeftFilter::Create(fo, &k).ok());
    for (uint64_t i = 0; i < 5000; ++i) ASSERT_EQ(k->Insert(Key(i)), OpResult::kOk);
    std::string bytes;
    k->Serialize(&bytes);
    std::unique_ptr<FastDLeftFilter> loaded;
    ASSERT_TRUE(FastDLeftFilter::Deserialize(bytes, &loaded, DeserializeOptions{thread_safe}).ok());

    ElasticOptions o;  // kFast by default
    std::unique_ptr<ElasticFilter> f;
    ASSERT_TRUE(ElasticFilter::Adopt(o, std::move(loaded), 5000, &f).ok());
    EXPECT_EQ(f->options().fast.blocks, fo.blocks);
    EXPECT_EQ(f->options().thread_safe, thread_safe);
    for (uint64_t i = 0; i < 5000; ++i) ASSERT_TRUE(f->Contains(Key(i))) << i;
    std::string again;
    ASSERT_TRUE(f->SerializeKernel(&again));
    EXPECT_EQ(again, bytes);  // the same table, not a copy of its contents
    EXPECT_EQ(f->Stats().items, 5000u);
    // Grows past the kernel's capacity: steps, then the ABF.
    uint64_t n = 5000;
    while (f->mode() == ElasticMode::kDLeft && n < 50000) {
      ASSERT_EQ(f->Insert(Key(n++)), OpResult::kOk);
    }
    ASSERT_EQ(f->mode(), ElasticMode::kAutoscaling);
    EXPECT_EQ(f->Stats().migration_cause, MigrationCause::kIncremental);
    for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i))) << i;
    std::string none;
    EXPECT_FALSE(f->SerializeKernel(&none));
    EXPECT_TRUE(none.empty());
  }
  std::unique_ptr<ElasticFilter> f;
  EXPECT_TRUE(ElasticFilter::Adopt(ElasticOptions(), std::unique_ptr<FastDLeftFilter>(), 0, &f).IsInvalidArgument());
  std::unique_ptr<FastDLeftFilter> k;
  ASSERT_TRUE(FastDLeftFilter::Create(testing_util::FastAt(100, 0.75), &k).ok());
  ElasticOptions general;
  general.kernel = ElasticKernel::kGeneral;
  EXPECT_TRUE(ElasticFilter::Adopt(general, std::move(k), 0, &f).IsInvalidArgument());
  EXPECT_EQ(f, nullptr);
  ElasticOptions g2;
  g2.kernel = ElasticKernel::kGeneral;
  auto gf = Make(g2);
  ASSERT_TRUE(gf);
  std::string none;
  EXPECT_FALSE(gf->SerializeKernel(&none));
}

// A chunked copy (a LiveKeyDB checkpoint's) lets a writer that waits for
// the lock in before it takes the lock for its next chunk
// (ElasticFilter::LetWaitingWritersIn). The copy is held inside chunk 1
// (the chunk-locked hook) until a writer, started there, has found the
// lock taken, counts itself waiting (the writer-waits hook) and has had
// time to block. In chunk 2, under the lock again, the writer's insert
// must be in the filter, in each of 20 tries. The hand-off may wait up to
// 60 s here (a loaded machine), so the outcome does not depend on how soon
// the writer is scheduled. Without the hand-off the copy took the lock
// back first in 1-10 of 20 tries on an idle 2-vCPU VM and in 18-20 with
// both vCPUs busy (2026-11-28): the test then fails, but not in every run,
// so there is no negative control that must fail. Returns how many tries
// found the insert in chunk 2, or -1 on a setup failure.
#ifdef DLCBF_TESTING
namespace handoff_test {
ElasticFilter* filter = nullptr;
constexpr uint64_t kHash = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kChunk = 64;
std::atomic<bool> go{false}, writer_waits{false}, in_chunk2{false};
void ChunkLocked(uint64_t first_block) {
  if (first_block == kChunk) {  // chunk 1: let the writer find the lock taken
    go = true;
    while (!writer_waits.load()) std::this_thread::yield();
    // Time for it to block in the lock (else it may take the lock as it
    // comes, hand-off or not, and a run without the hand-off shows nothing).
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } else if (first_block == 2 * kChunk) {
    in_chunk2 = filter->ContainsHash(kHash);  // (readers take no lock)
  }
}
void WriterWaits() { writer_waits = true; }
}  // namespace handoff_test

int InsertsSeenInTheNextChunk(bool handoff, int tries) {
  using namespace handoff_test;
  internal::SetElasticChunkHandoffForTesting(handoff, 60'000'000);
  internal::SetElasticWriterWaitsHookForTesting(&WriterWaits);
  dense_testing::SetChunkLockedHook(&ChunkLocked);
  int seen = 0;
  for (int t = 0; t < tries && seen >= 0; ++t) {
    ElasticOptions o;
    o.expected_items = 100000;
    o.thread_safe = true;
    o.kernel = ElasticKernel::kDense;
    o.migrate_on_overflow = false;
    std::unique_ptr<ElasticFilter> f;
    if (!ElasticFilter::Create(o, &f).ok()) {
      seen = -1;
      break;
    }
    filter = f.get();
    go = false;
    writer_waits = false;
    in_chunk2 = false;
    std::thread writer([&] {
      while (!go.load()) std::this_thread::yield();
      (void)f->InsertHash(kHash);
    });
    uint64_t items = 0;
    const bool copied = f->SerializeKernelInChunks([](std::string_view) { return true; }, kChunk, &items);
    go = true;  // (a copy that never reached chunk 1 must not leave the writer waiting)
    writer.join();
    if (!copied || !f->ContainsHash(kHash)) {
      seen = -1;
      break;
    }
    if (in_chunk2) ++seen;
  }
  dense_testing::SetChunkLockedHook(nullptr);
  internal::SetElasticWriterWaitsHookForTesting(nullptr);
  internal::SetElasticChunkHandoffForTesting(true);
  filter = nullptr;
  return seen;
}
#endif  // DLCBF_TESTING

TEST(ElasticChunkedCopyConcurrency, AWaitingWriterGoesBeforeTheNextChunk) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build of the library (its chunk and writer hooks exist only "
                  "there; the in-tree plugin build links the shipped library)";
#else
  EXPECT_EQ(InsertsSeenInTheNextChunk(true, 20), 20);
#endif
}

}  // namespace
}  // namespace dlcbf
