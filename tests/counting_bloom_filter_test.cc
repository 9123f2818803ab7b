// Tests of the standard counting Bloom filter: options, distinct probes,
// saturation and erase rules, batch lookups, FPR vs the formula,
// serialization (round trip, truncation, corruption) and concurrent reads.
#include "dlcbf/core/counting_bloom_filter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"

namespace dlcbf {
namespace {

std::unique_ptr<CountingBloomFilter> Make(uint64_t m, uint32_t k, uint32_t w,
                                          bool thread_safe = false) {
  CountingBloomOptions o;
  o.num_counters = m;
  o.num_probes = k;
  o.counter_bits = w;
  o.thread_safe = thread_safe;
  std::unique_ptr<CountingBloomFilter> f;
  Status s = CountingBloomFilter::Create(o, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return f;
}

std::string Key(uint64_t i) { return "key-" + std::to_string(i); }

TEST(CountingBloomOptionsTest, ValidateNamesTheField) {
  auto check = [](CountingBloomOptions o, const char* field) {
    Status s = o.Validate();
    EXPECT_TRUE(s.IsInvalidArgument()) << field;
    EXPECT_NE(s.ToString().find(field), std::string::npos) << s.ToString();
    std::unique_ptr<CountingBloomFilter> f;
    EXPECT_TRUE(CountingBloomFilter::Create(o, &f).IsInvalidArgument());
    EXPECT_EQ(f, nullptr);
  };
  CountingBloomOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.counter_bits = 0;
  check(o, "counter_bits");
  o.counter_bits = 9;
  check(o, "counter_bits");
  o = CountingBloomOptions();
  o.num_counters = 0;
  check(o, "num_counters");
  o.num_counters = (uint64_t{1} << 32) + 1;
  check(o, "num_counters");
  o = CountingBloomOptions();
  o.num_probes = 0;
  check(o, "num_probes");
  o.num_counters = 5;
  o.num_probes = 6;
  check(o, "num_probes");
  o = CountingBloomOptions();
  o.max_bytes = 100;
  std::unique_ptr<CountingBloomFilter> f;
  EXPECT_TRUE(CountingBloomFilter::Create(o, &f).IsMemoryLimit());
}

TEST(CountingBloomFilterTest, ProbePositionsAreDistinctAndInRange) {
  // Prime, power of two, highly composite, tiny and k == m.
  const std::pair<uint64_t, uint32_t> shapes[] = {
      {509, 7}, {1024, 9}, {10000, 100}, {720720, 30}, {6, 6}, {1, 1}, {30, 29}};
  std::mt19937_64 rng(1);
  for (const auto& [m, k] : shapes) {
    auto f = Make(m, k, 4);
    std::vector<uint64_t> pos(k);
    for (int i = 0; i < 2000; ++i) {
      f->Positions(rng(), pos.data());
      std::set<uint64_t> s(pos.begin(), pos.end());
      ASSERT_EQ(s.size(), k) << "m=" << m;
      ASSERT_LT(*s.rbegin(), m);
    }
  }
}

TEST(CountingBloomFilterTest, InsertContainsCountErase) {
  auto f = Make(4096, 5, 4);
  EXPECT_FALSE(f->Contains("a"));
  EXPECT_EQ(f->Count("a"), 0u);
  EXPECT_EQ(f->Insert("a"), OpResult::kOk);
  EXPECT_EQ(f->Insert("a"), OpResult::kOk);
  EXPECT_TRUE(f->Contains("a"));
  EXPECT_GE(f->Count("a"), 2u);
  EXPECT_EQ(f->items(), 2u);
  EXPECT_EQ(f->Erase("a"), OpResult::kOk);
  EXPECT_TRUE(f->Contains("a"));
  EXPECT_EQ(f->Erase("a"), OpResult::kOk);
  EXPECT_FALSE(f->Contains("a"));
  EXPECT_EQ(f->items(), 0u);
  // The hash variants are the same operations.
  const uint64_t h = f->Hash("b");
  EXPECT_EQ(f->InsertHash(h), OpResult::kOk);
  EXPECT_TRUE(f->Contains("b"));
  EXPECT_TRUE(f->ContainsHash(h));
  EXPECT_EQ(f->EraseHash(h), OpResult::kOk);
  EXPECT_FALSE(f->Contains("b"));
}

TEST(CountingBloomFilterTest, EraseOfAbsentKeyIsNotFoundAndChangesNothing) {
  auto f = Make(2048, 4, 4);
  EXPECT_EQ(f->Erase("never"), OpResult::kNotFound);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  std::string before;
  f->Serialize(&before);
  int not_found = 0;
  for (int i = 1000; i < 2000; ++i) {
    // Only erase keys with at least one zero counter (certainly absent).
    if (f->Count(Key(i)) != 0) continue;
    EXPECT_EQ(f->Erase(Key(i)), OpResult::kNotFound);
    ++not_found;
  }
  EXPECT_GT(not_found, 900);
  std::string after;
  f->Serialize(&after);
  EXPECT_EQ(before, after);  // bit-for-bit, stats included
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(f->Contains(Key(i)));
}

TEST(CountingBloomFilterTest, SaturatedCountersStickAndNeverCauseFalseNegatives) {
  auto f = Make(1024, 3, 2);  // counters saturate at 3
  ASSERT_EQ(f->max_counter(), 3u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f->Insert("hot"), OpResult::kOk);
  EXPECT_EQ(f->Count("hot"), 3u);
  CountingBloomStats st = f->Stats();
  EXPECT_EQ(st.saturations, 2u * 3u);  // inserts 4 and 5 dropped at 3 counters
  EXPECT_EQ(st.saturated_counters, 3u);
  // Erase more times than inserted: the counters are stuck, so the key stays
  // (a safe false positive), and every skipped decrement is counted.
  for (int i = 0; i < 7; ++i) EXPECT_EQ(f->Erase("hot"), OpResult::kOk);
  EXPECT_TRUE(f->Contains("hot"));
  EXPECT_EQ(f->Count("hot"), 3u);
  EXPECT_EQ(f->Stats().sticky_erases, 7u * 3u);
}

TEST(CountingBloomFilterTest, OneBitCountersAreAPlainBloomFilter) {
  auto f = Make(1024, 4, 1);
  EXPECT_EQ(f->Insert("x"), OpResult::kOk);
  EXPECT_EQ(f->Stats().saturated_counters, 4u);
  EXPECT_EQ(f->Erase("x"), OpResult::kOk);  // sticky: nothing cleared
  EXPECT_TRUE(f->Contains("x"));
}

TEST(CountingBloomFilterTest, OddCounterWidthsPackWithoutStraddling) {
  for (uint32_t w : {3u, 5u, 6u, 7u}) {
    auto f = Make(1000, 6, w);
    EXPECT_EQ(f->bytes(), 8 * ((1000 + 64 / w - 1) / (64 / w)));
    for (int i = 0; i < 300; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(f->Contains(Key(i))) << w;
    for (int i = 0; i < 300; ++i) ASSERT_EQ(f->Erase(Key(i)), OpResult::kOk);
    const CountingBloomStats st = f->Stats();
    EXPECT_EQ(st.nonzero_counters, st.saturated_counters) << w;  // only sticky ones left
  }
}

TEST(CountingBloomFilterTest, BatchMatchesSingleLookups) {
  auto f = Make(20000, 7, 4);
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  std::vector<std::string> keys;
  for (int i = 0; i < 4000; i += 3) keys.push_back(Key(i));
  std::vector<std::string_view> slices(keys.begin(), keys.end());
  std::unique_ptr<bool[]> out(new bool[slices.size()]);
  f->ContainsBatch(slices.data(), slices.size(), out.get());
  for (size_t i = 0; i < slices.size(); ++i) EXPECT_EQ(out[i], f->Contains(slices[i]));
}

TEST(CountingBloomFilterTest, ClearResets) {
  auto f = Make(1024, 3, 4);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  f->Clear();
  const CountingBloomStats st = f->Stats();
  EXPECT_EQ(st.items, 0u);
  EXPECT_EQ(st.nonzero_counters, 0u);
  EXPECT_FALSE(f->Contains(Key(1)));
}

// FPR of the paper's §5.1 CBF shape at 1/8 scale: m/n = 13.5, k = 9.
// Expected (1 - (1 - k/m)^n)^k = 0.001529. With Q = 400k fresh keys the
// sampling SE is sqrt(f/Q) = 6.2e-5; the fill of one filter moves FPR by
// k f sd(P1)/P1 = 9 * 0.00153 * sqrt(P0/(P1 m)) ~ 1.0e-5. Tolerance 4.5 SE.
TEST(CountingBloomFilterTest, FalsePositiveRateMatchesFormula) {
  const uint64_t n = 6144, m = 82944;
  auto f = Make(m, 9, 4);
  for (uint64_t i = 0; i < n; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  const double expected = f->Stats().predicted_fpr;
  EXPECT_NEAR(expected, 0.001529, 2e-5);
  const uint64_t q = 400000;
  uint64_t fp = 0;
  for (uint64_t i = 0; i < q; ++i) fp += f->Contains(Key(1000000 + i)) ? 1 : 0;
  const double se = std::sqrt(expected / q + std::pow(1.0e-5, 2));
  EXPECT_NEAR(static_cast<double>(fp) / q, expected, 4.5 * se);
}

// ---------------------------------------------------------- serialization

TEST(CountingBloomSerializationTest, RoundTrip) {
  for (uint32_t w : {1u, 4u, 5u, 8u}) {
    auto f = Make(3001, 6, w);
    for (int i = 0; i < 400; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(f->Erase(Key(i)), OpResult::kOk);
    std::string blob;
    f->Serialize(&blob);
    std::unique_ptr<CountingBloomFilter> g;
    ASSERT_TRUE(CountingBloomFilter::Deserialize(blob, &g).ok());
    EXPECT_EQ(g->num_counters(), 3001u);
    EXPECT_EQ(g->num_probes(), 6u);
    EXPECT_EQ(g->counter_bits(), w);
    EXPECT_EQ(g->items(), f->items());
    EXPECT_EQ(g->Stats().saturations, f->Stats().saturations);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(g->Contains(Key(i)), f->Contains(Key(i)));
    std::string again;
    g->Serialize(&again);
    EXPECT_EQ(again, blob);
  }
}

TEST(CountingBloomSerializationTest, TruncatedInputIsCorruption) {
  auto f = Make(500, 3, 4);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  std::string blob;
  f->Serialize(&blob);
  for (size_t len = 0; len < blob.size(); ++len) {
    std::unique_ptr<CountingBloomFilter> g;
    // A copy of exactly `len` bytes, so a read past the end is an ASan error.
    const std::string cut = blob.substr(0, len);
    Status s = CountingBloomFilter::Deserialize(cut, &g);
    ASSERT_TRUE(s.IsCorruption()) << len << " " << s.ToString();
    ASSERT_EQ(g, nullptr);
  }
  std::unique_ptr<CountingBloomFilter> g;
  EXPECT_TRUE(CountingBloomFilter::Deserialize(blob + "x", &g).IsCorruption());
}

TEST(CountingBloomSerializationTest, GarbageAndBitFlipsAreCorruption) {
  auto f = Make(500, 3, 4);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  std::string blob;
  f->Serialize(&blob);
  for (size_t i = 0; i < blob.size(); ++i) {
    std::string bad = blob;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    std::unique_ptr<CountingBloomFilter> g;
    ASSERT_TRUE(CountingBloomFilter::Deserialize(bad, &g).IsCorruption()) << i;
  }
  std::mt19937_64 rng(3);
  for (int t = 0; t < 200; ++t) {
    std::string junk(static_cast<size_t>(rng() % 200), '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    std::unique_ptr<CountingBloomFilter> g;
    ASSERT_TRUE(CountingBloomFilter::Deserialize(junk, &g).IsCorruption());
  }
}

// Structural checks run even when the checksum is made to match.
TEST(CountingBloomSerializationTest, InconsistentFieldsWithValidChecksum) {
  auto f = Make(100, 3, 5);  // 12 counters per word, 4 padding bits
  EXPECT_EQ(f->Insert("a"), OpResult::kOk);
  std::string blob;
  f->Serialize(&blob);
  auto reseal = [](std::string b) {
    b.resize(b.size() - 8);
    internal::PutFixed64(&b, internal::HashKey(b.data(), b.size(), 0));
    return b;
  };
  auto expect_corrupt = [&](const std::string& b, const char* why) {
    std::unique_ptr<CountingBloomFilter> g;
    Status s = CountingBloomFilter::Deserialize(b, &g);
    EXPECT_TRUE(s.IsCorruption()) << why << ": " << s.ToString();
  };
  std::string b = blob;
  b[67] = static_cast<char>(b[67] | 0x80);  // bit 63 of word 0: padding (60 bits used)
  expect_corrupt(reseal(b), "padding");
  b = blob;
  b[5] = 0;  // w = 0
  expect_corrupt(reseal(b), "counter bits");
  b = blob;
  b[4] = 2;  // version
  expect_corrupt(reseal(b), "version");
  b = blob;
  b[8] = static_cast<char>(200);  // k = 200 > m = 100
  expect_corrupt(reseal(b), "k > m");
  b = blob;
  b[52] = static_cast<char>(50);  // declared words != ceil(100 / 12) = 9
  expect_corrupt(reseal(b), "word count");
}

// ------------------------------------------------------------- concurrency

// One writer inserting (and erasing other keys) while a reader checks keys
// whose insert was published before the read: never a false negative.
TEST(CountingBloomConcurrencyTest, ReadersNeverSeeFalseNegatives) {
  auto f = Make(1 << 16, 5, 4, /*thread_safe=*/true);
  const uint64_t n = 60000;
  std::atomic<uint64_t> published{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> misses{0}, reads{0};
  std::thread reader([&] {
    std::mt19937_64 rng(5);
    while (!done.load(std::memory_order_acquire)) {
      const uint64_t p = published.load(std::memory_order_acquire);
      if (p == 0) continue;
      // Keys 2i are permanent; odd keys come and go.
      const uint64_t i = 2 * (rng() % ((p + 1) / 2));
      if (i >= p) continue;
      if (!f->Contains(Key(i))) misses.fetch_add(1);
      reads.fetch_add(1, std::memory_order_release);
    }
  });
  uint64_t seen = 0;  // handshake: reads interleave with the whole stream
  for (uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
    if (i % 2 == 1 && i >= 3) {
      EXPECT_EQ(f->Erase(Key(i - 2)), OpResult::kOk);
    }
    published.store(i + 1, std::memory_order_release);
    if (i % 256 == 0) {
      while (reads.load(std::memory_order_acquire) == seen) std::this_thread::yield();
      seen = reads.load(std::memory_order_acquire);
    }
  }
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_GE(reads.load(), n / 256);
}

}  // namespace
}  // namespace dlcbf
