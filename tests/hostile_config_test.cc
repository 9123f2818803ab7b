// Hostile configuration and resource limits.
//
// Every public option struct and factory is fed NaN, infinities, negative,
// zero and huge values, widths beyond what is supported and malformed id
// strings. The answer must be a Status (InvalidArgument naming the field,
// or MemoryLimit for sizes that cannot be allocated) -- never an abort,
// never an exception, never a silently clamped value.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dlcbf/core/autoscaling_bloom_filter.h"
#include "dlcbf/core/counting_bloom_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/elastic_filter.h"
#include "dlcbf/internal/memory.h"
#include "filter_policy/rocksdb/abi/filter_abi.h"
#include "dlcbf/rocksdb/filter_policy.h"
#include "dlcbf/rocksdb/memtable_index.h"
#include "dlcbf/rocksdb/registration.h"
#include "rocksdb/convenience.h"
#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/object_registry.h"
#include "rocksdb_test_util.h"

namespace dlcbf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// InvalidArgument whose message names `field`.
// Either kind of status: the core's dlcbf::Status or the glue's rocksdb::Status.
template <class StatusT>
::testing::AssertionResult Rejects(const StatusT& s, const std::string& field) {
  if (!s.IsInvalidArgument()) {
    return ::testing::AssertionFailure() << "expected InvalidArgument naming \"" << field
                                         << "\", got " << s.ToString();
  }
  if (s.ToString().find(field) == std::string::npos) {
    return ::testing::AssertionFailure() << "message does not name \"" << field << "\": " << s.ToString();
  }
  return ::testing::AssertionSuccess();
}

// ---- DLeftOptions -------------------------------------------------------------

TEST(HostileDLeftOptions, EveryFieldValidated) {
  auto check = [](auto mutate, const std::string& field) {
    DLeftOptions o;
    mutate(o);
    EXPECT_TRUE(Rejects(o.Validate(), field));
    std::unique_ptr<DLeftCountingBloomFilter> f;
    EXPECT_TRUE(Rejects(DLeftCountingBloomFilter::Create(o, &f), field));
    EXPECT_EQ(f, nullptr);
  };
  check([](DLeftOptions& o) { o.subtables = 0; }, "subtables");
  check([](DLeftOptions& o) { o.subtables = 1; }, "subtables");
  check([](DLeftOptions& o) { o.subtables = 9; }, "subtables");
  check([](DLeftOptions& o) { o.subtables = UINT32_MAX; }, "subtables");
  check([](DLeftOptions& o) { o.buckets_per_subtable = 0; }, "buckets");
  check([](DLeftOptions& o) { o.buckets_per_subtable = uint64_t{1} << 40; }, "buckets");
  check([](DLeftOptions& o) { o.buckets_per_subtable = UINT64_MAX; }, "buckets");
  check([](DLeftOptions& o) { o.cells_per_bucket = 0; }, "cells");
  check([](DLeftOptions& o) { o.cells_per_bucket = 65; }, "cells");
  check([](DLeftOptions& o) { o.remainder_bits = 1; }, "remainder");
  check([](DLeftOptions& o) { o.remainder_bits = 33; }, "remainder");
  check([](DLeftOptions& o) { o.counter_bits = 5; }, "counter");  // wider than supported
  check([](DLeftOptions& o) { o.counter_bits = UINT32_MAX; }, "counter");
  check([](DLeftOptions& o) { o.relocation = static_cast<Relocation>(7); }, "relocation");
  check([](DLeftOptions& o) { o.max_relocation_nodes = (1u << 20) + 1; }, "max_relocation_nodes");
  check([](DLeftOptions& o) {
    o.buckets_per_subtable = uint64_t{1} << 39;
    o.remainder_bits = 20;
  }, "log2(B) + r");
}

TEST(HostileDLeftOptions, SizingNeverOverflows) {
  // Huge expected_items / tiny load: no undefined behaviour (UBSan checks
  // the double -> integer conversion); Validate reports B and *out stays.
  for (double load : {1e-300, 1e-30, 0.75, 1.0}) {
    DLeftOptions o;
    EXPECT_TRUE(Rejects(DLeftOptions::ForLoad(UINT64_MAX, load, &o), "buckets")) << load;
    EXPECT_EQ(o.buckets_per_subtable, DLeftOptions().buckets_per_subtable);
  }
  // An out-of-range argument is InvalidArgument naming it, never a silent
  // replacement.
  for (double load : {kNaN, -1.0, 0.0, 2.0, kInf}) {
    DLeftOptions o;
    EXPECT_TRUE(Rejects(DLeftOptions::ForLoad(1000, load, &o), "load")) << load;
  }
  for (double bpk : {kNaN, -1.0, 0.0, 5.0, 1e6, kInf}) {
    DLeftOptions o;
    EXPECT_TRUE(Rejects(DLeftOptions::ForBitsPerKey(1000, bpk, &o), "bits_per_key")) << bpk;
  }
  for (double fpr : {kNaN, -1.0, 0.0, 1e-12, 1.0, kInf}) {
    DLeftOptions o;
    EXPECT_TRUE(Rejects(DLeftOptions::ForFpr(1000, fpr, &o), "fpr")) << fpr;
  }
  DLeftOptions o;
  EXPECT_TRUE(Rejects(DLeftOptions::ForFpr(0, 0.01, &o), "expected_items"));
}

// ---- resource limits ------------------------------------------------------------

TEST(ResourceLimits, DLeftOverMaxBytesIsMemoryLimit) {
  DLeftOptions o;
  o.buckets_per_subtable = uint64_t{1} << 30;  // 4 * 2^30 * 8 * 16 bits = 64 GiB
  o.max_bytes = uint64_t{1} << 30;
  std::unique_ptr<DLeftCountingBloomFilter> f;
  Status s = DLeftCountingBloomFilter::Create(o, &f);
  EXPECT_TRUE(s.IsMemoryLimit()) << s.ToString();
  EXPECT_NE(s.ToString().find("max_bytes"), std::string::npos) << s.ToString();
  EXPECT_EQ(f, nullptr);
}

TEST(ResourceLimits, DLeftBeyondPhysicalMemoryIsMemoryLimitNotOom) {
  // The caller lifted max_bytes; the table (~2 TiB) still cannot be backed
  // by this machine. Create must say so instead of allocating (under
  // overcommit the zero-fill would get the process OOM-killed).
  DLeftOptions o;
  o.subtables = 8;
  o.cells_per_bucket = 64;
  o.remainder_bits = 14;
  o.counter_bits = 2;
  o.buckets_per_subtable = uint64_t{1} << 25;
  o.max_bytes = UINT64_MAX;
  ASSERT_TRUE(o.Validate().ok()) << o.Validate().ToString();
  ASSERT_GT(uint64_t{8} * (uint64_t{1} << 25) * 64 * 16 / 8, internal::PhysicalMemoryBytes());
  std::unique_ptr<DLeftCountingBloomFilter> f;
  Status s = DLeftCountingBloomFilter::Create(o, &f);
  EXPECT_TRUE(s.IsMemoryLimit()) << s.ToString();
  EXPECT_NE(s.ToString().find("physical memory"), std::string::npos) << s.ToString();
}

// A large table (2 MiB or more: mapped directly) of a size that is not a
// whole number of pages leaves nothing mapped past its end, before or
// after FreeTable. (The tail trim once unmapped from an address inside a
// page, which fails: up to 2 MiB stayed mapped per table, and the index
// file buffer is such a table at every load.)
TEST(ResourceLimits, LargeTablesLeaveNoMappingBehind) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t bytes : {dlcbf::internal::kHugePageBytes + 100, 3 * dlcbf::internal::kHugePageBytes + page + 1,
                       dlcbf::internal::kHugePageBytes * 4}) {
    auto* p = static_cast<uint8_t*>(dlcbf::internal::AllocateZeroedTable(bytes));
    ASSERT_NE(p, nullptr);
    p[bytes - 1] = 1;  // the last byte is the table's
    const uintptr_t past = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) / page * page;
    unsigned char vec = 0;
    // mincore fails with ENOMEM on an address range that is not mapped.
    EXPECT_NE(mincore(reinterpret_cast<void*>(past), page, &vec), 0) << bytes << ": the page past the table is mapped";
    EXPECT_EQ(errno, ENOMEM);
    dlcbf::internal::FreeTable(p, bytes);
    EXPECT_NE(mincore(reinterpret_cast<void*>(past), page, &vec), 0) << bytes;
  }
}

TEST(ResourceLimits, CountingOverMaxBytesIsMemoryLimit) {
  CountingBloomOptions o;
  o.num_counters = uint64_t{1} << 32;
  o.counter_bits = 8;
  o.max_bytes = uint64_t{1} << 20;
  std::unique_ptr<CountingBloomFilter> f;
  Status s = CountingBloomFilter::Create(o, &f);
  EXPECT_TRUE(s.IsMemoryLimit()) << s.ToString();
}

TEST(ResourceLimits, ElasticHugeExpectedItemsIsAnError) {
  for (ElasticKernel kernel : {ElasticKernel::kGeneral, ElasticKernel::kFast}) {
    const char* field = kernel == ElasticKernel::kFast ? "fast" : "dleft";
    ElasticOptions o;
    o.kernel = kernel;
    o.expected_items = UINT64_MAX;
    std::unique_ptr<ElasticFilter> f;
    Status s = ElasticFilter::Create(o, &f);
    EXPECT_FALSE(s.ok()) << field;
    EXPECT_EQ(f, nullptr) << field;
    EXPECT_NE(s.ToString().find(field), std::string::npos) << s.ToString();
    o.expected_items = uint64_t{1} << 40;  // a valid geometry of terabytes
    s = ElasticFilter::Create(o, &f);
    EXPECT_TRUE(s.IsMemoryLimit()) << field << ": " << s.ToString();
  }
}

// ---- CBF / ABF / Elastic options ------------------------------------------------

TEST(HostileCountingOptions, EveryFieldValidated) {
  auto check = [](auto mutate, const std::string& field) {
    CountingBloomOptions o;
    mutate(o);
    EXPECT_TRUE(Rejects(o.Validate(), field));
    std::unique_ptr<CountingBloomFilter> f;
    EXPECT_TRUE(Rejects(CountingBloomFilter::Create(o, &f), field));
  };
  check([](CountingBloomOptions& o) { o.counter_bits = 0; }, "counter_bits");
  check([](CountingBloomOptions& o) { o.counter_bits = 9; }, "counter_bits");  // wider than supported
  check([](CountingBloomOptions& o) { o.num_counters = 0; }, "num_counters");
  check([](CountingBloomOptions& o) { o.num_counters = (uint64_t{1} << 32) + 1; }, "num_counters");
  check([](CountingBloomOptions& o) { o.num_probes = 0; }, "num_probes");
  check([](CountingBloomOptions& o) { o.num_probes = 4097; }, "num_probes");
  check([](CountingBloomOptions& o) {
    o.num_counters = 3;
    o.num_probes = 4;
  }, "num_probes");
}

TEST(HostileAutoscalingOptions, EveryFieldValidated) {
  auto check = [](auto mutate, const std::string& field) {
    AutoscalingOptions o;
    mutate(o);
    EXPECT_TRUE(Rejects(o.Validate(), field));
    std::unique_ptr<AutoscalingBloomFilter> f;
    EXPECT_TRUE(Rejects(AutoscalingBloomFilter::Create(o, &f), field));
  };
  check([](AutoscalingOptions& o) { o.counting.counter_bits = 12; }, "counting.counter_bits");
  check([](AutoscalingOptions& o) { o.counting.num_counters = 0; }, "counting.num_counters");
  for (double v : {kNaN, -0.5, 1.5, kInf, -kInf}) {
    check([v](AutoscalingOptions& o) {
      o.min_tpr = v;
      o.allow_false_negatives = true;
    }, "min_tpr");
  }
  check([](AutoscalingOptions& o) { o.min_tpr = 0.9; }, "allow_false_negatives");
  // Thresholds and AutoTune arguments.
  std::unique_ptr<AutoscalingBloomFilter> f;
  ASSERT_TRUE(AutoscalingBloomFilter::Create(AutoscalingOptions(), &f).ok());
  EXPECT_TRUE(f->SetThresholds(0, f->counting().num_probes() + 1).IsInvalidArgument());
  EXPECT_TRUE(f->SetThresholds(1000, 1).IsInvalidArgument());
  EXPECT_TRUE(f->SetThresholds(1, 1).IsInvalidArgument());  // lossy without opt-in
  EXPECT_TRUE(f->AutoTune(kNaN).IsInvalidArgument());
  EXPECT_TRUE(f->AutoTune(-1).IsInvalidArgument());
  EXPECT_TRUE(f->AutoTune(2).IsInvalidArgument());
  EXPECT_TRUE(f->lossless());
}

TEST(HostileElasticOptions, EveryFieldValidated) {
  auto check = [](auto mutate, const std::string& field) {
    ElasticOptions o;
    mutate(o);
    EXPECT_TRUE(Rejects(o.Validate(), field));
    std::unique_ptr<ElasticFilter> f;
    EXPECT_TRUE(Rejects(ElasticFilter::Create(o, &f), field));
  };
  for (double v : {kNaN, 0.0, -1.0, 1.5, kInf}) {
    check([v](ElasticOptions& o) {
      o.expected_items = 1000;
      o.sizing_load = v;
    }, "sizing_load");
  }
  for (double v : {kNaN, -0.1, 1.1, kInf}) check([v](ElasticOptions& o) { o.migrate_at_load = v; }, "migrate_at_load");
  check([](ElasticOptions& o) { o.abf_counter_bits = 0; }, "abf_counter_bits");
  check([](ElasticOptions& o) { o.abf_counter_bits = 9; }, "abf_counter_bits");
  check([](ElasticOptions& o) { o.abf_probes = 5000; }, "abf_probes");
  for (double v : {kNaN, 0.5, kInf, -3.0}) check([v](ElasticOptions& o) { o.abf_growth = v; }, "abf_growth");
  for (double v : {kNaN, -1.0, 2.0}) {
    check([v](ElasticOptions& o) {
      o.min_tpr = v;
      o.allow_false_negatives = true;
    }, "min_tpr");
  }
  check([](ElasticOptions& o) { o.min_tpr = 0.5; }, "allow_false_negatives");
  for (double v : {kNaN, 0.0, -1.0, kInf}) check([v](ElasticOptions& o) { o.retune_fraction = v; }, "retune_fraction");
  check([](ElasticOptions& o) {
    o.kernel = ElasticKernel::kGeneral;
    o.dleft.counter_bits = 0;
  }, "counter_bits");
  check([](ElasticOptions& o) {
    o.kernel = ElasticKernel::kGeneral;
    o.dleft.subtables = 99;
  }, "subtables");
  check([](ElasticOptions& o) { o.dleft.subtables = 2; }, "dleft.subtables");  // kFast: unused
  check([](ElasticOptions& o) { o.fast.subtables = 3; }, "fast.subtables");
}

// ---- SST filter policy options and ids ------------------------------------------------

TEST(HostileFilterPolicyOptions, EveryFieldValidated) {
  auto check = [](auto mutate, const std::string& field) {
    DLeftFilterPolicyOptions o;
    mutate(o);
    EXPECT_TRUE(Rejects(o.Validate(), field));
    std::shared_ptr<const rocksdb::FilterPolicy> p;
    EXPECT_TRUE(Rejects(NewDLeftFilterPolicy(o, &p), field));
    EXPECT_EQ(p, nullptr);
    DLeftFilterPlan plan;
    EXPECT_TRUE(Rejects(PlanDLeftFilter(o, &plan), field));
  };
  for (double v : {kNaN, -10.0, 0.0, 3.9, 48.5, 1e300, kInf, -kInf}) {
    check([v](DLeftFilterPolicyOptions& o) { o.bits_per_key = v; }, "bits_per_key");
    EXPECT_EQ(NewDLeftFilterPolicy(v), nullptr) << v;
  }
  for (double v : {kNaN, -0.01, 1e-12, 0.51, kInf}) {
    check([v](DLeftFilterPolicyOptions& o) { o.fp_rate = v; }, "fp_rate");
  }
  check([](DLeftFilterPolicyOptions& o) { o.subtables = 1; }, "subtables");
  check([](DLeftFilterPolicyOptions& o) { o.subtables = 9; }, "subtables");
  check([](DLeftFilterPolicyOptions& o) { o.cells_per_bucket = 9; }, "cells_per_bucket");
  check([](DLeftFilterPolicyOptions& o) { o.remainder_bits = 1; }, "remainder_bits");
  check([](DLeftFilterPolicyOptions& o) { o.remainder_bits = 33; }, "remainder_bits");
  for (double v : {kNaN, 0.01, 1.0, -0.5, kInf}) {
    check([v](DLeftFilterPolicyOptions& o) { o.load = v; }, "load");
  }
  check([](DLeftFilterPolicyOptions& o) { o.max_relocation_nodes = 65537; }, "max_relocation_nodes");
  check([](DLeftFilterPolicyOptions& o) { o.max_filter_block_bytes = 100; }, "max_filter_block_bytes");
  check([](DLeftFilterPolicyOptions& o) { o.max_filter_block_bytes = uint64_t{1} << 33; },
        "max_filter_block_bytes");
  // Each field is in range, the combination is not (load r / b = 2.0):
  // Validate() passes, the planner (and so the factory) rejects it.
  DLeftFilterPolicyOptions o;
  o.remainder_bits = 20;
  o.bits_per_key = 10;
  std::shared_ptr<const rocksdb::FilterPolicy> p;
  EXPECT_TRUE(Rejects(NewDLeftFilterPolicy(o, &p), "remainder_bits"));
  EXPECT_EQ(p, nullptr);
}

class RegisteredTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { RegisterAll(*rocksdb::ObjectLibrary::Default()); }
};

TEST_F(RegisteredTest, MalformedPolicyIdsAreInvalidArgument) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dlcbf:nan", "bits_per_key"},       {"dlcbf:NaN", "bits_per_key"},
      {"dlcbf:inf", "bits_per_key"},       {"dlcbf:-10", "bits_per_key"},
      {"dlcbf:+10", "bits_per_key"},       {"dlcbf:0x10", "bits_per_key"},
      {"dlcbf:1e400", "bits_per_key"},     {"dlcbf:1e-400", "bits_per_key"},
      {"dlcbf:abc", "bits_per_key"},       {"dlcbf:10.5.5", "bits_per_key"},
      {"dlcbf:3", "bits_per_key"},         {"dlcbf:49", "bits_per_key"},
      {"dlcbf:99999999999999999999", "bits_per_key"},
      {"dlcbf:", "bits_per_key"},          {"dlcbf::", "bits_per_key"},
      {"dlcbf:fpr", "fp_rate"},            {"dlcbf:fpr0", "fp_rate"},
      {"dlcbf:fpr0.9", "fp_rate"},         {"dlcbf:fpr-0.1", "fp_rate"},
      {"dlcbf:fprnan", "fp_rate"},         {"dlcbf:10:d9", "subtables"},
      {"dlcbf:10:d1", "subtables"},        {"dlcbf:10:d", "subtables"},
      {"dlcbf:10:d-4", "subtables"},       {"dlcbf:10:d4294967298", "subtables"},
      {"dlcbf:10:L0", "cells_per_bucket"}, {"dlcbf:10:L9", "cells_per_bucket"},
      {"dlcbf:10:r99", "remainder_bits"},  {"dlcbf:10:loadnan", "load"},
      {"dlcbf:10:load2", "load"},          {"dlcbf:10:nodes99999999", "max_relocation_nodes"},
      {"dlcbf:10:d4:d4", "twice"},         {"dlcbf:10:bogus7", "unknown option"},
      {"dlcbf:10:", "unknown option"},     {"dlcbf:10:d4:", "unknown option"},
      {std::string("dlcbf:10\0", 9), "bits_per_key"},
      {"dlcbf:" + std::string(1000, '9'), "bits_per_key"},
  };
  rocksdb::ConfigOptions cfg;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    std::shared_ptr<const rocksdb::FilterPolicy> p;
    rocksdb::Status s;
    EXPECT_NO_THROW(s = rocksdb::FilterPolicy::CreateFromString(cfg, c.first, &p));
    EXPECT_TRUE(Rejects(s, c.second));
    DLeftFilterPolicyOptions o;
    EXPECT_TRUE(Rejects(ParseDLeftFilterPolicyId(c.first, &o), c.second));
  }
  // Through a whole options string, as an OPTIONS file would: RocksDB
  // 7.8.3 parses filter_policy with kByNameAllowFromNull, so a policy whose
  // factory fails is dropped WITHOUT an error (the same happens to
  // "bloomfilter:abc"); our factory writes a line to stderr. The table then
  // has no filter: slower, never wrong. Callers who load options should
  // check IsDLeftFilterPolicy(t.filter_policy.get()).
  rocksdb::BlockBasedTableOptions base, t;
  rocksdb::Status s = rocksdb::GetBlockBasedTableOptionsFromString(cfg, base, "filter_policy=dlcbf:nan", &t);
  EXPECT_TRUE(s.ok() || s.IsInvalidArgument()) << s.ToString();
  EXPECT_FALSE(IsDLeftFilterPolicy(t.filter_policy.get()));
  s = rocksdb::GetBlockBasedTableOptionsFromString(cfg, base, "filter_policy=dlcbf:9.5", &t);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(IsDLeftFilterPolicy(t.filter_policy.get()));
}

TEST_F(RegisteredTest, MemTableIndexOptionsValidated) {
  auto check = [](auto mutate, const std::string& field) {
    MemTableIndexOptions o;
    mutate(o);
    EXPECT_TRUE(Rejects(o.Validate(), field));
    std::shared_ptr<rocksdb::MemTableRepFactory> f;
    EXPECT_TRUE(Rejects(NewDLeftIndexedMemTableRepFactory(nullptr, o, &f), field));
    EXPECT_EQ(NewDLeftIndexedMemTableRepFactory(nullptr, o), nullptr);
  };
  check([](MemTableIndexOptions& o) { o.expected_entries = 0; }, "expected_entries");
  check([](MemTableIndexOptions& o) { o.expected_entries = (uint64_t{1} << 32) + 1; }, "expected_entries");
  check([](MemTableIndexOptions& o) { o.budget_bytes = 63; }, "budget_bytes");
  check([](MemTableIndexOptions& o) { o.budget_bytes = UINT64_MAX; }, "budget_bytes");
  check([](MemTableIndexOptions& o) { o.subtables = 9; }, "subtables");
  check([](MemTableIndexOptions& o) { o.cells_per_bucket = 0; }, "cells_per_bucket");
  check([](MemTableIndexOptions& o) { o.cells_per_bucket = 65; }, "cells_per_bucket");
  check([](MemTableIndexOptions& o) { o.remainder_bits = 3; }, "remainder_bits");
  check([](MemTableIndexOptions& o) { o.remainder_bits = 31; }, "remainder_bits");
  for (double v : {kNaN, 0.5, 1001.0, kInf}) check([v](MemTableIndexOptions& o) { o.abf_growth = v; }, "abf_growth");
  check([](MemTableIndexOptions& o) { o.whole_keys = false; }, "whole_keys");
  check([](MemTableIndexOptions& o) { o.expected_prefixes = UINT64_MAX; }, "expected_prefixes");
  check([](MemTableIndexOptions& o) { o.assume_timestamp_size = -2; }, "assume_timestamp_size");
  check([](MemTableIndexOptions& o) { o.assume_timestamp_size = 256; }, "assume_timestamp_size");
  for (double v : {kNaN, 0.0, -0.5, 1.5, kInf}) {
    check([v](MemTableIndexOptions& o) { o.max_write_buffer_fraction = v; }, "max_write_buffer_fraction");
  }
}

TEST_F(RegisteredTest, MalformedMemTableIdsAreInvalidArgument) {
  const std::vector<std::string> cases = {
      "dlcbf_index:0",          "dlcbf_index:-5",        "dlcbf_index:abc",
      "dlcbf_index:1e9",        "dlcbf_index:99999999999999999999999",
      "dlcbf_index:bytes1",     "dlcbf_index:bytes",     "dlcbf_index:1000:d99",
      "dlcbf_index:1000:L0",    "dlcbf_index:1000:r99",  "dlcbf_index:1000:growthnan",
      "dlcbf_index:1000:capnan", "dlcbf_index:1000:cap0", "dlcbf_index:1000:ts999",
      "dlcbf_index:1000:bogus", "dlcbf_index:1000:",
      "dlcbf_index::",          "dlcbf_index:1000:base:", "dlcbf_index:1000:base:no_such_rep",
      "dlcbf_index:1000:base:dlcbf_index:0",
  };
  rocksdb::ConfigOptions cfg;
  for (const auto& id : cases) {
    SCOPED_TRACE(id);
    std::shared_ptr<rocksdb::MemTableRepFactory> f;
    rocksdb::Status s;
    EXPECT_NO_THROW(s = rocksdb::MemTableRepFactory::CreateFromString(cfg, id, &f));
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  }
}

// ---- SST filter block size limit ----------------------------------------------------


TEST(ResourceLimits, OversizedFilterBlockFallsBackLosslessly) {
  DLeftFilterPolicyOptions o;
  o.max_filter_block_bytes = 4096;  // stands in for RocksDB's ~4 GiB
  std::shared_ptr<const rocksdb::FilterPolicy> policy;
  ASSERT_TRUE(NewDLeftFilterPolicy(o, &policy).ok());
  auto log = std::make_shared<testing_util::CapturingLogger>();
  log->SetInfoLogLevel(rocksdb::InfoLogLevel::DEBUG_LEVEL);
  rocksdb::BlockBasedTableOptions topts;
  topts.detect_filter_construct_corruption = true;
  rocksdb::FilterBuildingContext ctx(topts);
  ctx.info_log = log.get();
  for (int n : {100, 20000}) {
    SCOPED_TRACE(n);
    std::unique_ptr<rocksdb::FilterBitsBuilder> b(policy->GetBuilderWithContext(ctx));
    for (int i = 0; i < n; ++i) b->AddKey("key" + std::to_string(i));
    std::unique_ptr<const char[]> buf;
    rocksdb::Status fs;
    rocksdb::Slice block = b->Finish(&buf, &fs);
    ASSERT_TRUE(fs.ok()) << fs.ToString();
    EXPECT_LE(block.size(), 4096u);
    EXPECT_TRUE(b->MaybePostVerify(block).ok());
    std::unique_ptr<rocksdb::FilterBitsReader> r(policy->GetFilterBitsReader(block));
    int found = 0, fp = 0;
    for (int i = 0; i < n; ++i) found += r->MayMatch("key" + std::to_string(i));
    for (int i = 0; i < 10000; ++i) fp += r->MayMatch("other" + std::to_string(i));
    EXPECT_EQ(found, n);  // lossless
    if (n == 100) {
      EXPECT_EQ(GetDLeftFilterPolicyCounters(policy.get()).bloom_fallbacks, 0u);
      EXPECT_LT(fp, 300);
    } else {
      // 20000 keys at 10 bits/key need ~25 KB: capped Bloom block.
      EXPECT_EQ(GetDLeftFilterPolicyCounters(policy.get()).bloom_fallbacks, 1u);
      // It still filters, at the rate a Bloom filter of that size has
      // (it used to be only "fp < 10000", which fails only if every probe
      // matches). Block = 48-byte header + m/8 payload + 8-byte checksum;
      // k = round(ln 2 * m / n) probes. Expected fill P1 = 1 - (1-1/m)^(kn),
      // FPR = P1^k; tolerance 4.5 sd of the 10000 probes plus the fill
      // fluctuation k P1^(k-1) sqrt(P1 P0 / m).
      const double m = 8.0 * static_cast<double>(block.size() - 48 - 8);
      const double k = std::max(1.0, std::round(0.6931 * m / n));
      const double P1 = -std::expm1(k * n * std::log1p(-1.0 / m)), P0 = 1 - P1;
      const double p = std::pow(P1, k);
      const double fill_sd = k * std::pow(P1, k - 1) * std::sqrt(P1 * P0 / m);
      const double sd = std::sqrt(p * (1 - p) / 10000 + fill_sd * fill_sd);
      EXPECT_NEAR(fp / 10000.0, p, 4.5 * sd) << "capped Bloom block: m = " << m << ", k = " << k;
      EXPECT_NE(log->All().find("partition_filters"), std::string::npos) << log->All();
    }
  }
}

}  // namespace
}  // namespace dlcbf
