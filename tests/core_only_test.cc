// The standalone core: this program links dlcbf_core alone (no RocksDB, no
// glue; tests/CMakeLists.txt checks the binary for librocksdb) and uses
// every core filter through dlcbf::Status and std::string_view keys, as a
// program that never heard of RocksDB would.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "dlcbf/core/autoscaling_bloom_filter.h"
#include "dlcbf/core/counting_bloom_filter.h"
#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/elastic_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"
#include "dlcbf/core/status.h"
#include "dlcbf/model/abf_model.h"

namespace dlcbf {
namespace {

// Insert, find, erase, and the status of a bad option, for any filter.
template <class Filter, class Options>
void RoundTrip(const Options& o) {
  std::unique_ptr<Filter> f;
  const Status s = Filter::Create(o, &f);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string key = "standalone";
  ASSERT_EQ(f->Insert(key), OpResult::kOk);
  EXPECT_TRUE(f->Contains(std::string_view(key)));
  EXPECT_EQ(f->Erase(key), OpResult::kOk);
  EXPECT_FALSE(f->Contains(key)) << "a lone key erased from an otherwise empty filter";
}

TEST(CoreOnly, EveryFilterWithoutRocksDB) {
  DLeftOptions d;
  ASSERT_TRUE(DLeftOptions::ForLoad(1000, 0.75, &d).ok());
  RoundTrip<DLeftCountingBloomFilter>(d);
  FastDLeftOptions fast;
  ASSERT_TRUE(FastDLeftOptions::ForLoad(1000, 0.75, &fast).ok());
  RoundTrip<FastDLeftFilter>(fast);
  DenseDLeftOptions dense;
  ASSERT_TRUE(DenseDLeftOptions::ForFpr(1000, 0.001, &dense).ok());
  RoundTrip<DenseDLeftFilter>(dense);
  CountingBloomOptions c;
  c.num_counters = 8192;
  c.num_probes = 3;
  RoundTrip<CountingBloomFilter>(c);
  ElasticOptions e;
  e.expected_items = 1000;
  RoundTrip<ElasticFilter>(e);
}

TEST(CoreOnly, StatusNamesTheField) {
  DenseDLeftOptions o;
  o.remainder_bits = 12;
  std::unique_ptr<DenseDLeftFilter> f;
  const Status s = DenseDLeftFilter::Create(o, &f);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.ToString().rfind("Invalid argument: remainder_bits", 0), 0u) << s.ToString();
  EXPECT_EQ(f, nullptr);
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status::Corruption("what", "why").ToString(), "Corruption: what: why");
}

}  // namespace
}  // namespace dlcbf
