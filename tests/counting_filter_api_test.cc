// The one contract of the counting filters (dlcbf/core/counting_filter.h),
// checked on every filter that inherits it: the key forms equal the hash
// forms on Hash(key); every batched form (by key and by hash, insert,
// erase and contains) returns exactly what the single calls return in
// index order and leaves the filter in the same state; and against a
// std::multiset oracle no inserted-and-not-erased key is ever reported
// absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dlcbf/core/autoscaling_bloom_filter.h"
#include "dlcbf/core/counting_bloom_filter.h"
#include "dlcbf/core/counting_filter.h"
#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/elastic_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"

namespace dlcbf {
namespace {

constexpr uint64_t kKeys = 3000;

// A filter of each type with room for kKeys keys (so no kOverflow is
// expected, though the tests compare results whatever they are).
template <class F>
std::unique_ptr<F> Make();

template <>
std::unique_ptr<CountingBloomFilter> Make() {
  CountingBloomOptions o;
  o.num_counters = 16 * kKeys;
  o.num_probes = 5;
  std::unique_ptr<CountingBloomFilter> f;
  EXPECT_TRUE(CountingBloomFilter::Create(o, &f).ok());
  return f;
}
template <>
std::unique_ptr<AutoscalingBloomFilter> Make() {
  AutoscalingOptions o;
  o.counting.num_counters = 16 * kKeys;
  o.counting.num_probes = 5;
  std::unique_ptr<AutoscalingBloomFilter> f;
  EXPECT_TRUE(AutoscalingBloomFilter::Create(o, &f).ok());
  return f;
}
template <>
std::unique_ptr<DLeftCountingBloomFilter> Make() {
  DLeftOptions o;
  EXPECT_TRUE(DLeftOptions::ForFpr(kKeys, 1e-3, &o).ok());
  std::unique_ptr<DLeftCountingBloomFilter> f;
  EXPECT_TRUE(DLeftCountingBloomFilter::Create(o, &f).ok());
  return f;
}
template <>
std::unique_ptr<FastDLeftFilter> Make() {
  FastDLeftOptions o;
  EXPECT_TRUE(FastDLeftOptions::ForLoad(kKeys, 0.7, &o).ok());
  std::unique_ptr<FastDLeftFilter> f;
  EXPECT_TRUE(FastDLeftFilter::Create(o, &f).ok());
  return f;
}
template <>
std::unique_ptr<DenseDLeftFilter> Make() {
  DenseDLeftOptions o;
  EXPECT_TRUE(DenseDLeftOptions::ForLoad(kKeys, 0.8, 8, &o).ok());
  std::unique_ptr<DenseDLeftFilter> f;
  EXPECT_TRUE(DenseDLeftFilter::Create(o, &f).ok());
  return f;
}
template <>
std::unique_ptr<ElasticFilter> Make() {
  ElasticOptions o;
  // Sized for a third of the keys: the batches drive it through its
  // migration to the ABF, so the contract is checked in both modes.
  o.expected_items = kKeys / 3;
  std::unique_ptr<ElasticFilter> f;
  EXPECT_TRUE(ElasticFilter::Create(o, &f).ok());
  return f;
}

template <class F>
class CountingFilterApiTest : public ::testing::Test {};

using AllFilters = ::testing::Types<CountingBloomFilter, AutoscalingBloomFilter, DLeftCountingBloomFilter,
                                    FastDLeftFilter, DenseDLeftFilter, ElasticFilter>;
struct FilterNames {
  template <class F>
  static std::string GetName(int) {
    if (std::is_same<F, CountingBloomFilter>::value) return "CBF";
    if (std::is_same<F, AutoscalingBloomFilter>::value) return "ABF";
    if (std::is_same<F, DLeftCountingBloomFilter>::value) return "DLeft";
    if (std::is_same<F, FastDLeftFilter>::value) return "Fast";
    if (std::is_same<F, DenseDLeftFilter>::value) return "Dense";
    return "Elastic";
  }
};
TYPED_TEST_SUITE(CountingFilterApiTest, AllFilters, FilterNames);

std::vector<std::string> Keys(uint64_t n, const char* prefix) {
  std::vector<std::string> v;
  for (uint64_t i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

std::vector<std::string_view> Views(const std::vector<std::string>& keys) {
  return std::vector<std::string_view>(keys.begin(), keys.end());
}

// Batches (by key on one filter, by hash on a second) against single
// calls on a third: same results, element by element, and the same
// answers afterwards. Batch lengths vary around CountingFilterApi's block
// of kKeyBlock keys, including 0.
TYPED_TEST(CountingFilterApiTest, BatchesEqualSingleCallsInOrder) {
  using F = TypeParam;
  auto by_key = Make<F>(), by_hash = Make<F>(), single = Make<F>();
  ASSERT_TRUE(by_key && by_hash && single);
  // Duplicates on purpose: multiplicity must be counted the same way.
  std::vector<std::string> keys = Keys(kKeys, "k");
  for (uint64_t i = 0; i < kKeys / 4; ++i) keys.push_back("k" + std::to_string(i * 3));
  std::mt19937_64 rng(7);
  std::shuffle(keys.begin(), keys.end(), rng);
  const std::vector<std::string_view> views = Views(keys);
  std::vector<uint64_t> hashes;
  for (const std::string& k : keys) {
    hashes.push_back(single->Hash(k));
    ASSERT_EQ(hashes.back(), by_key->Hash(k));
  }
  const size_t lens[] = {0, 1, 5, CountingFilterApi<F>::kKeyBlock - 1, CountingFilterApi<F>::kKeyBlock,
                         CountingFilterApi<F>::kKeyBlock + 1, 3 * CountingFilterApi<F>::kKeyBlock + 7, 1000};

  auto run_batches = [&](auto&& step) {
    size_t at = 0;
    for (size_t round = 0; at < keys.size(); ++round) {
      const size_t len = std::min(lens[round % (sizeof(lens) / sizeof(lens[0]))], keys.size() - at);
      step(at, len);
      at += len;
    }
  };
  // Inserts.
  run_batches([&](size_t at, size_t len) {
    std::vector<OpResult> a(len + 1, OpResult::kNotSupported), b(len + 1, OpResult::kNotSupported);
    by_key->InsertBatch(views.data() + at, len, a.data());
    by_hash->InsertHashBatch(hashes.data() + at, len, b.data());
    for (size_t i = 0; i < len; ++i) {
      const OpResult want = single->Insert(views[at + i]);
      ASSERT_EQ(a[i], want) << "InsertBatch, key " << at + i;
      ASSERT_EQ(b[i], want) << "InsertHashBatch, key " << at + i;
    }
    ASSERT_EQ(a[len], OpResult::kNotSupported) << "wrote past out[n - 1]";
    ASSERT_EQ(b[len], OpResult::kNotSupported) << "wrote past out[n - 1]";
  });
  // Lookups, present and absent.
  std::vector<std::string> probes = Keys(kKeys, "k");
  for (const std::string& k : Keys(kKeys, "absent")) probes.push_back(k);
  const std::vector<std::string_view> pviews = Views(probes);
  std::vector<uint64_t> phashes;
  for (const std::string& k : probes) phashes.push_back(single->Hash(k));
  std::unique_ptr<bool[]> got(new bool[probes.size() + 1]), got_h(new bool[probes.size() + 1]);
  for (F* f : {by_key.get(), by_hash.get(), single.get()}) {
    got[probes.size()] = got_h[probes.size()] = true;
    f->ContainsBatch(pviews.data(), probes.size(), got.get());
    f->ContainsHashBatch(phashes.data(), probes.size(), got_h.get());
    for (size_t i = 0; i < probes.size(); ++i) {
      const bool want = single->Contains(pviews[i]);
      ASSERT_EQ(got[i], want) << "ContainsBatch, probe " << i;
      ASSERT_EQ(got_h[i], want) << "ContainsHashBatch, probe " << i;
      ASSERT_EQ(f->Contains(pviews[i]), want) << "the three filters differ at probe " << i;
      ASSERT_EQ(f->ContainsHash(phashes[i]), want);
    }
    ASSERT_TRUE(got[probes.size()] && got_h[probes.size()]) << "wrote past out[n - 1]";
  }
  // Erases: every key once (duplicates stay once).
  run_batches([&](size_t at, size_t len) {
    std::vector<OpResult> a(len), b(len);
    by_key->EraseBatch(views.data() + at, len, a.data());
    by_hash->EraseHashBatch(hashes.data() + at, len, b.data());
    for (size_t i = 0; i < len; ++i) {
      const OpResult want = single->Erase(views[at + i]);
      ASSERT_EQ(a[i], want) << "EraseBatch, key " << at + i;
      ASSERT_EQ(b[i], want) << "EraseHashBatch, key " << at + i;
    }
  });
  for (size_t i = 0; i < probes.size(); ++i) {
    const bool want = single->Contains(pviews[i]);
    ASSERT_EQ(by_key->Contains(pviews[i]), want) << i;
    ASSERT_EQ(by_hash->Contains(pviews[i]), want) << i;
  }
}

// The multiset oracle through the batched key forms only: after each
// batch of inserts and erases of keys the oracle holds, every key with a
// positive count is found (ContainsBatch), and Count is at least the
// oracle's multiplicity where the filter counts.
TYPED_TEST(CountingFilterApiTest, NoFalseNegativesThroughBatches) {
  using F = TypeParam;
  auto f = Make<F>();
  ASSERT_TRUE(f);
  std::multiset<std::string> oracle;
  std::mt19937_64 rng(11);
  const std::vector<std::string> universe = Keys(kKeys / 2, "u");
  for (int round = 0; round < 40; ++round) {
    std::vector<std::string> ins, del;
    for (int i = 0; i < 60; ++i) ins.push_back(universe[rng() % universe.size()]);
    for (const std::string& k : oracle) {
      if (del.size() < 25 && rng() % 4 == 0) del.push_back(k);
    }
    std::vector<OpResult> r(ins.size());
    const std::vector<std::string_view> iv = Views(ins);
    f->InsertBatch(iv.data(), iv.size(), r.data());
    for (size_t i = 0; i < ins.size(); ++i) {
      if (r[i] == OpResult::kOk) oracle.insert(ins[i]);
    }
    r.assign(del.size(), OpResult::kNotSupported);
    const std::vector<std::string_view> dv = Views(del);
    f->EraseBatch(dv.data(), dv.size(), r.data());
    for (size_t i = 0; i < del.size(); ++i) {
      // The oracle held each of these keys when it was erased, so the
      // filter holds its evidence: the erase must succeed.
      ASSERT_EQ(r[i], OpResult::kOk) << del[i];
      oracle.erase(oracle.find(del[i]));
    }
    const std::vector<std::string_view> uv = Views(universe);
    std::unique_ptr<bool[]> found(new bool[uv.size()]);
    f->ContainsBatch(uv.data(), uv.size(), found.get());
    for (size_t i = 0; i < uv.size(); ++i) {
      if (oracle.count(universe[i]) > 0) {
        ASSERT_TRUE(found[i]) << "false negative for " << universe[i] << " in round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace dlcbf
