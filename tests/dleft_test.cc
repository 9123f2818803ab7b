// Tests of the d-left counting Bloom filter against the paper's claims and a
// std::multiset oracle. Statistical checks use tolerances derived from the
// binomial distribution; nothing here depends on timing.
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "test_scale.h"
#include "dlcbf/internal/hash.h"
#include "gtest/gtest.h"

namespace dlcbf {
namespace {

// ForFpr picks the narrowest remainder whose FPR at load 0.75 reaches the
// target, then enough buckets for the exact formula; ForBitsPerKey spends
// the budget (to within one bucket row) at a load <= 0.75.
TEST(DLeftOptionsSizing, ForFprChoosesTheRemainderWidth) {
  const uint64_t n = 100000;
  for (double fpr : {0.05, 0.01, 1e-3, 1e-4, 1e-6}) {
    DLeftOptions o;
    o.seed = 99;
    ASSERT_TRUE(DLeftOptions::ForFpr(n, fpr, &o).ok()) << fpr;
    EXPECT_EQ(o.seed, 99u);
    const double rn = std::ldexp(1.0, static_cast<int>(o.remainder_bits)) - 1;
    const double space = static_cast<double>(o.buckets_per_subtable) * rn;
    EXPECT_LE(-std::expm1(n * std::log1p(-1.0 / space)), fpr) << fpr;
    // One bit narrower would miss the target at load 0.75.
    EXPECT_GT(o.subtables * o.cells_per_bucket * 0.75 / (rn / 2 - 0.5), fpr) << fpr;
    EXPECT_LE(n, 0.75 * o.subtables * o.buckets_per_subtable * o.cells_per_bucket + 1e-9);
    std::unique_ptr<DLeftCountingBloomFilter> f;
    ASSERT_TRUE(DLeftCountingBloomFilter::Create(o, &f).ok());
  }
}

TEST(DLeftOptionsSizing, ForBitsPerKeySpendsTheBudget) {
  const uint64_t n = 100000;
  for (double bpk : {6.0, 10.0, 16.0, 24.0, 60.0}) {
    DLeftOptions o;
    ASSERT_TRUE(DLeftOptions::ForBitsPerKey(n, bpk, &o).ok()) << bpk;
    std::unique_ptr<DLeftCountingBloomFilter> f;
    ASSERT_TRUE(DLeftCountingBloomFilter::Create(o, &f).ok());
    const double bits = 8.0 * f->bytes() / n;
    const double row = 8.0 * o.subtables * o.cells_per_bucket * (o.remainder_bits + o.counter_bits) / n + 8.0 * 8 / n;
    EXPECT_LE(bits, bpk + row) << bpk;
    EXPECT_GE(bits, bpk - row) << bpk;
    EXPECT_LE(n, 0.75 * f->capacity_cells() + 1e-9) << bpk;
  }
}

std::string Key(uint64_t i) { return "key-" + std::to_string(i); }

std::unique_ptr<DLeftCountingBloomFilter> Make(const DLeftOptions& o) {
  std::unique_ptr<DLeftCountingBloomFilter> f;
  Status s = DLeftCountingBloomFilter::Create(o, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return f;
}

// Binomial tolerance: z standard deviations of a proportion over n trials.
double Tol(double p, double n, double z = 5.0) { return z * std::sqrt(p * (1 - p) / n) + 1e-12; }

struct GeoCase {
  const char* name;
  uint32_t d;
  uint64_t B;
  uint32_t L;
  uint32_t r;
  uint32_t c;
  Relocation reloc;
};

class DLeftGeometryTest : public ::testing::TestWithParam<GeoCase> {
 protected:
  DLeftOptions Options() const {
    const GeoCase& g = GetParam();
    DLeftOptions o;
    o.subtables = g.d;
    o.buckets_per_subtable = g.B;
    o.cells_per_bucket = g.L;
    o.remainder_bits = g.r;
    o.counter_bits = g.c;
    o.relocation = g.reloc;
    o.seed = 42;
    return o;
  }
};

// Oracle test: millions of random inserts/erases/lookups against a
// std::multiset of keys and a per-fingerprint multiplicity map. Checks:
// zero false negatives, Count equals the fingerprint's multiplicity (no
// saturation occurs at these sizes with c = 4; with smaller c the count is
// capped and sticky), false positive iff the fingerprint collides (Claim 2),
// erase of absent fingerprints is NotFound, and one copy per fingerprint
// (Claim 1).
TEST_P(DLeftGeometryTest, OracleMultiset) {
  DLeftOptions o = Options();
  auto f = Make(o);
  ASSERT_TRUE(f);
  const uint64_t capacity = f->capacity_cells();
  const uint64_t target = capacity * 7 / 10;       // stay below overflow risk
  const uint64_t universe = target * 3;            // repeats happen
  std::mt19937_64 rng(7);
  std::multiset<uint64_t> oracle;
  std::unordered_map<uint64_t, uint32_t> fp_mult;  // packed fingerprint -> multiplicity
  std::unordered_map<uint64_t, bool> fp_sticky;    // saturated at some point
  const uint32_t maxc = f->max_counter();
  const bool counted = o.counter_bits > 0;
  uint64_t false_negatives = 0, count_mismatch = 0, claim2_violations = 0;
  const int kOps = 600000;
  for (int op = 0; op < kOps; ++op) {
    uint64_t id = rng() % universe;
    std::string k = Key(id);
    uint64_t h = f->Hash(k);
    uint64_t fp = f->FingerprintOfHash(h).packed;
    int what = static_cast<int>(rng() % 10);
    if (what < 4 && oracle.size() < target) {
      if (!counted && oracle.count(id)) continue;  // static filters: set semantics
      OpResult r = f->InsertHash(h);
      if (r == OpResult::kOverflow) {
        // Only legitimate when the table really is nearly full; saturated
        // (sticky) cells of c = 1 accumulate and never leave.
        ASSERT_GT(f->Stats().fingerprints, capacity * 8 / 10);
        continue;
      }
      ASSERT_EQ(OpResult::kOk, r);
      oracle.insert(id);
      uint32_t& m = fp_mult[fp];
      if (counted && m + 1 >= maxc) fp_sticky[fp] = true;  // reaching 2^c saturates
      ++m;
    } else if (what < 7 && counted) {
      auto it = oracle.find(id);
      // Callers may only erase keys they inserted, or keys whose fingerprint
      // is absent (erasing a colliding foreign key removes evidence, as in
      // every counting filter).
      if (it == oracle.end() && (fp_mult[fp] > 0 || fp_sticky[fp])) continue;
      OpResult r = f->EraseHash(h);
      if (it != oracle.end()) {
        ASSERT_EQ(OpResult::kOk, r);
        oracle.erase(it);
        --fp_mult[fp];
      } else {
        ASSERT_EQ(OpResult::kNotFound, r) << "erase of an absent fingerprint must be NotFound";
      }
    } else {
      bool in = oracle.count(id) > 0;
      bool got = f->ContainsHash(h);
      uint32_t cnt = f->CountHash(h);
      if (in && !got) ++false_negatives;
      bool fp_present = fp_mult[fp] > 0 || fp_sticky[fp];
      if (got != fp_present) ++claim2_violations;
      uint32_t expect = fp_sticky[fp] ? maxc : std::min(fp_mult[fp], maxc);
      if (!counted) expect = fp_present ? 1 : 0;
      if (cnt != expect) ++count_mismatch;
    }
  }
  EXPECT_EQ(0u, false_negatives);
  EXPECT_EQ(0u, claim2_violations);
  EXPECT_EQ(0u, count_mismatch);
  // Every key still in the oracle is found.
  for (uint64_t id : oracle) ASSERT_TRUE(f->Contains(Key(id))) << id;
  // Claim 1: each fingerprint is stored at most once.
  std::set<uint64_t> seen;
  uint64_t dup = 0;
  f->ForEachFingerprint([&](const DLeftCountingBloomFilter::TrueFingerprint& t, uint32_t) {
    if (!seen.insert(t.packed).second) ++dup;
  });
  EXPECT_EQ(0u, dup);
  DLeftStats st = f->Stats();
  EXPECT_EQ(seen.size(), st.fingerprints);
  uint64_t distinct_fps = 0;
  for (auto& kv : fp_mult) distinct_fps += (kv.second > 0 || fp_sticky[kv.first]) ? 1 : 0;
  EXPECT_EQ(distinct_fps, st.fingerprints);
}

// Claim 3: FPR = 1 - (1 - 1/(B*Rn))^F, checked with a 5-sigma binomial bound.
TEST_P(DLeftGeometryTest, FalsePositiveRateMatchesClaim3) {
  auto f = Make(Options());
  ASSERT_TRUE(f);
  const uint64_t n = f->capacity_cells() * 6 / 10;
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(OpResult::kOk, f->Insert(Key(i)));
  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f->Contains(Key(i)));
  const double p = f->PredictedFpr();
  const int probes = 400000;
  int fp = 0;
  for (int i = 0; i < probes; ++i) fp += f->Contains("absent-" + std::to_string(i)) ? 1 : 0;
  const double measured = static_cast<double>(fp) / probes;
  EXPECT_NEAR(measured, p, Tol(p, probes)) << "predicted " << p;
}

TEST_P(DLeftGeometryTest, BatchEqualsSingle) {
  auto f = Make(Options());
  ASSERT_TRUE(f);
  const uint64_t n = f->capacity_cells() / 2;
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(OpResult::kOk, f->Insert(Key(i)));
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < 2 * n + 37; ++i) keys.push_back(Key(i));
  std::vector<std::string_view> slices(keys.begin(), keys.end());
  std::unique_ptr<bool[]> out(new bool[keys.size()]);
  f->ContainsBatch(slices.data(), slices.size(), out.get());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(f->Contains(keys[i]), out[i]) << i;
    if (i < n) {
      ASSERT_TRUE(out[i]);
    }
  }
}

TEST_P(DLeftGeometryTest, SerializationRoundTrip) {
  auto f = Make(Options());
  ASSERT_TRUE(f);
  const uint64_t n = f->capacity_cells() / 2;
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(OpResult::kOk, f->Insert(Key(i % (n / 2 + 1))));
  std::string bytes;
  f->Serialize(&bytes);
  std::unique_ptr<DLeftCountingBloomFilter> g;
  ASSERT_TRUE(DLeftCountingBloomFilter::Deserialize(bytes, &g).ok());
  for (uint64_t i = 0; i < 2 * n; ++i) {
    ASSERT_EQ(f->Count(Key(i)), g->Count(Key(i)));
  }
  std::string again;
  g->Serialize(&again);
  EXPECT_EQ(bytes, again);
  EXPECT_EQ(f->Stats().items, g->Stats().items);
  // The deserialized filter keeps working: erase what was inserted.
  if (GetParam().c > 0) {
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(OpResult::kOk, g->Erase(Key(i % (n / 2 + 1))));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, DLeftGeometryTest,
    ::testing::Values(GeoCase{"paper", 4, 2048, 8, 14, 2, Relocation::kNone},
                      GeoCase{"paper_bfs", 4, 2048, 8, 14, 2, Relocation::kBreadthFirst},
                      GeoCase{"odd_buckets_c4", 3, 1001, 4, 10, 4, Relocation::kBreadthFirst},
                      GeoCase{"wide_r", 2, 777, 6, 24, 3, Relocation::kFirstSubtable},
                      GeoCase{"static_c0", 4, 1500, 1, 9, 0, Relocation::kBreadthFirst},
                      GeoCase{"d8_c1", 8, 300, 2, 12, 1, Relocation::kBreadthFirst}),
    [](const ::testing::TestParamInfo<GeoCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------

TEST(DLeftTest, EraseAbsentIsNotFoundAndChangesNothing) {
  DLeftOptions o;
  auto f = Make(o);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  std::string before, after;
  f->Serialize(&before);
  int not_found = 0;
  for (int i = 1000; i < 3000; ++i) {
    if (f->Contains(Key(i))) continue;  // would collide: not "absent"
    ASSERT_EQ(OpResult::kNotFound, f->Erase(Key(i)));
    ++not_found;
  }
  f->Serialize(&after);
  EXPECT_GT(not_found, 1900);
  EXPECT_EQ(before, after);
}

TEST(DLeftTest, StaticFilterRejectsErase) {
  DLeftOptions o;
  o.counter_bits = 0;
  auto f = Make(o);
  ASSERT_EQ(OpResult::kOk, f->Insert("a"));
  EXPECT_EQ(OpResult::kNotSupported, f->Erase("a"));
  EXPECT_TRUE(f->Contains("a"));
  EXPECT_EQ(1u, f->Count("a"));
  ASSERT_EQ(OpResult::kOk, f->Insert("a"));  // repeats are no-ops
  EXPECT_EQ(1u, f->Stats().fingerprints);
}

TEST(DLeftTest, CounterSaturationIsSticky) {
  DLeftOptions o;
  o.counter_bits = 2;  // counts 1..4; 4 = saturated
  auto f = Make(o);
  for (int i = 0; i < 6; ++i) ASSERT_EQ(OpResult::kOk, f->Insert("hot"));
  EXPECT_EQ(4u, f->Count("hot"));
  DLeftStats s = f->Stats();
  EXPECT_EQ(2u, s.saturations);
  EXPECT_EQ(4u, s.max_counter);
  EXPECT_EQ(6u, s.items);
  // Erasing more times than inserted never clears a saturated counter.
  for (int i = 0; i < 8; ++i) ASSERT_EQ(OpResult::kOk, f->Erase("hot"));
  EXPECT_TRUE(f->Contains("hot"));
  EXPECT_EQ(4u, f->Count("hot"));
  EXPECT_EQ(8u, f->Stats().sticky_erases);
  // An unsaturated counter counts down exactly.
  for (int i = 0; i < 2; ++i) ASSERT_EQ(OpResult::kOk, f->Insert("warm"));
  EXPECT_EQ(2u, f->Count("warm"));
  ASSERT_EQ(OpResult::kOk, f->Erase("warm"));
  EXPECT_EQ(1u, f->Count("warm"));
  ASSERT_EQ(OpResult::kOk, f->Erase("warm"));
  EXPECT_FALSE(f->Contains("warm"));
  EXPECT_EQ(OpResult::kNotFound, f->Erase("warm"));
}

// A full table returns Overflow and is left bit-for-bit unchanged, for every
// relocation policy.
TEST(DLeftTest, OverflowLeavesFilterUnchanged) {
  for (Relocation rel : {Relocation::kNone, Relocation::kFirstSubtable, Relocation::kBreadthFirst}) {
    DLeftOptions o;
    o.subtables = 2;
    o.buckets_per_subtable = 8;
    o.cells_per_bucket = 2;
    o.remainder_bits = 16;
    o.relocation = rel;
    auto f = Make(o);
    int overflows = 0;
    std::vector<std::string> stored;
    for (int i = 0; i < 200; ++i) {
      std::string before, after;
      f->Serialize(&before);
      OpResult r = f->Insert(Key(i));
      if (r == OpResult::kOverflow) {
        f->Serialize(&after);
        ASSERT_EQ(before, after) << "overflow must not change the table";
        ++overflows;
      } else {
        ASSERT_EQ(OpResult::kOk, r);
        stored.push_back(Key(i));
      }
      for (const auto& k : stored) ASSERT_TRUE(f->Contains(k)) << "false negative after insert " << i;
    }
    EXPECT_GT(overflows, 0);
    EXPECT_EQ(static_cast<uint64_t>(overflows), f->Stats().overflows);
    EXPECT_LE(stored.size(), f->capacity_cells());
  }
}

// Relocation lets the table fill further before the first overflow
// (paper §5.2: a one-level move from subtable 0 already helps). With d = 4,
// L = 1 a breadth-first search reaches > 85% of cells (the 4-ary cuckoo
// threshold is 0.977) where plain d-left placement stops far earlier.
TEST(DLeftTest, RelocationRaisesAchievableLoad) {
  auto first_overflow = [](Relocation rel) {
    DLeftOptions o;
    o.subtables = 4;
    o.buckets_per_subtable = 2500;
    o.cells_per_bucket = 1;
    o.remainder_bits = 12;
    o.counter_bits = 0;
    o.relocation = rel;
    o.max_relocation_nodes = 512;
    auto f = Make(o);
    uint64_t i = 0;
    while (f->Insert(Key(i)) == OpResult::kOk) ++i;
    for (uint64_t j = 0; j < i; ++j) EXPECT_TRUE(f->Contains(Key(j)));
    return static_cast<double>(i) / static_cast<double>(f->capacity_cells());
  };
  double none = first_overflow(Relocation::kNone);
  double first = first_overflow(Relocation::kFirstSubtable);
  double bfs = first_overflow(Relocation::kBreadthFirst);
  EXPECT_LT(none, first);
  EXPECT_LT(first, bfs);
  EXPECT_GT(bfs, 0.85);
}

TEST(DLeftTest, ClearEmpties) {
  DLeftOptions o;
  auto f = Make(o);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  f->Clear();
  DLeftStats s = f->Stats();
  EXPECT_EQ(0u, s.items);
  EXPECT_EQ(0u, s.fingerprints);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(f->Contains(Key(i)));
  std::string a, b;
  f->Serialize(&a);
  Make(o)->Serialize(&b);
  EXPECT_EQ(a, b);
}

TEST(DLeftTest, StatsLoadHistogramIsConsistent) {
  DLeftOptions o;
  auto f = Make(o);
  for (int i = 0; i < 49152; ++i) ASSERT_EQ(OpResult::kOk, f->Insert(Key(i)));
  DLeftStats s = f->Stats();
  ASSERT_EQ(4u, s.load_ge.size());
  double cells = 0;
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(1.0, s.load_ge[i][0]);
    EXPECT_DOUBLE_EQ(0.0, s.load_ge[i][9]);
    for (uint32_t k = 1; k <= 8; ++k) {
      EXPECT_LE(s.load_ge[i][k], s.load_ge[i][k - 1]);
      cells += s.load_ge[i][k] * 2048;  // sum_k P(load >= k) * B = cells used
    }
  }
  EXPECT_NEAR(static_cast<double>(s.fingerprints), cells, 1e-6);
  EXPECT_NEAR(8.0 * (1 << 17) / 49152, s.bits_per_item, 1e-9);
  // Leftmost subtables fill first under ties-to-the-left (d-left property).
  EXPECT_GT(s.load_ge[0][7], s.load_ge[3][7]);
}

TEST(DLeftTest, ValidateNamesTheField) {
  struct Bad {
    void (*mut)(DLeftOptions*);
    const char* needle;
  };
  std::vector<Bad> bad = {
      {[](DLeftOptions* o) { o->subtables = 1; }, "subtables"},
      {[](DLeftOptions* o) { o->subtables = 9; }, "subtables"},
      {[](DLeftOptions* o) { o->buckets_per_subtable = 0; }, "buckets"},
      {[](DLeftOptions* o) { o->cells_per_bucket = 0; }, "cells"},
      {[](DLeftOptions* o) { o->cells_per_bucket = 65; }, "cells"},
      {[](DLeftOptions* o) { o->remainder_bits = 1; }, "remainder"},
      {[](DLeftOptions* o) { o->remainder_bits = 33; }, "remainder"},
      {[](DLeftOptions* o) { o->counter_bits = 5; }, "counter"},
      {[](DLeftOptions* o) { o->buckets_per_subtable = uint64_t{1} << 50; }, "buckets"},
      {[](DLeftOptions* o) { o->buckets_per_subtable = uint64_t{1} << 33; }, "max_bytes"},
      {[](DLeftOptions* o) { o->relocation = static_cast<Relocation>(7); }, "relocation"},
  };
  for (const Bad& b : bad) {
    DLeftOptions o;
    b.mut(&o);
    std::unique_ptr<DLeftCountingBloomFilter> f;
    Status s = DLeftCountingBloomFilter::Create(o, &f);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(std::string::npos, s.ToString().find(b.needle)) << s.ToString();
    EXPECT_EQ(nullptr, f);
  }
}

// ---------------------------------------------------------------------------
// Corrupt input: every truncation, every single-bit flip of the header and a
// sample in the payload, random bytes. Always a clear error, never a crash.

std::string SampleBytes() {
  DLeftOptions o;
  o.buckets_per_subtable = 64;
  o.seed = 1;
  auto f = Make(o);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(f->Insert(Key(i)), OpResult::kOk);
  std::string s;
  f->Serialize(&s);
  return s;
}

TEST(DLeftCorruptionTest, Truncation) {
  std::string good = SampleBytes();
  for (size_t n = 0; n < good.size(); ++n) {
    std::unique_ptr<DLeftCountingBloomFilter> f;
    Status s = DLeftCountingBloomFilter::Deserialize(std::string_view(good.data(), n), &f);
    ASSERT_FALSE(s.ok()) << n;
    ASSERT_EQ(nullptr, f);
  }
  std::string longer = good + "x";
  std::unique_ptr<DLeftCountingBloomFilter> f;
  EXPECT_TRUE(DLeftCountingBloomFilter::Deserialize(longer, &f).IsCorruption());
}

TEST(DLeftCorruptionTest, BitFlips) {
  std::string good = SampleBytes();
  for (size_t bit = 0; bit < good.size() * 8; bit += (bit < 1024 ? 1 : 97)) {
    std::string bad = good;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    std::unique_ptr<DLeftCountingBloomFilter> f;
    Status s = DLeftCountingBloomFilter::Deserialize(bad, &f);
    ASSERT_FALSE(s.ok()) << "bit " << bit;
  }
}

TEST(DLeftCorruptionTest, RandomBytesAndMessages) {
  std::mt19937_64 rng(3);
  for (int t = 0; t < 2000; ++t) {
    std::string junk(rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (t % 2 == 0 && junk.size() >= 6) {  // valid magic/version, junk after
      const char hdr[] = {'d', 'L', 'C', 'B', 1, 0};
      junk.replace(0, 6, hdr, 6);
    }
    std::unique_ptr<DLeftCountingBloomFilter> f;
    ASSERT_FALSE(DLeftCountingBloomFilter::Deserialize(junk, &f).ok());
  }
  std::string good = SampleBytes();
  std::unique_ptr<DLeftCountingBloomFilter> f;
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_NE(std::string::npos,
            DLeftCountingBloomFilter::Deserialize(bad_magic, &f).ToString().find("magic"));
  std::string bad_version = good;
  bad_version[4] = 9;
  EXPECT_TRUE(DLeftCountingBloomFilter::Deserialize(bad_version, &f).IsNotSupported());
}

// A header may not ask for more than Create() allows: max_relocation_nodes
// sizes the relocation search (found by fuzz_deserialize: 587M nodes asked
// for a 32 GiB visited table on the first full insert).
TEST(DLeftCorruptionTest, HeaderBoundsAreValidated) {
  DLeftOptions o;
  o.buckets_per_subtable = 4;
  o.cells_per_bucket = 2;
  auto f = Make(o);
  std::string good;
  f->Serialize(&good);
  std::string bad = good;
  const uint32_t huge = 0x23000100;  // max relocation nodes at offset 12
  for (int i = 0; i < 4; ++i) bad[12 + i] = static_cast<char>(huge >> (8 * i));
  // Re-seal the checksum so only the bound is wrong.
  const size_t body = bad.size() - 8;
  const uint64_t sum = internal::HashKey(bad.data(), body, 0);
  for (int i = 0; i < 8; ++i) bad[body + i] = static_cast<char>(sum >> (8 * i));
  std::unique_ptr<DLeftCountingBloomFilter> g;
  Status s = DLeftCountingBloomFilter::Deserialize(bad, &g);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find("max_relocation_nodes")) << s.ToString();
  ASSERT_TRUE(DLeftCountingBloomFilter::Deserialize(good, &g).ok());
}

// Golden schema test: pins the serialized bytes for a fixed seed and input.
// If this fails, the on-disk format changed: bump the format version and
// update filter_policy/FORMATS.md, then this constant.
TEST(DLeftFormatTest, GoldenBytes) {
  DLeftOptions o;
  o.subtables = 3;
  o.buckets_per_subtable = 10;
  o.cells_per_bucket = 4;
  o.remainder_bits = 11;
  o.counter_bits = 3;
  o.seed = 0x1234;
  auto f = Make(o);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(OpResult::kOk, f->Insert(Key(i % 80)));
  std::string bytes;
  f->Serialize(&bytes);
  // 32 header + 16*3 keys + 24 counts + ceil(3*10*4*14/8)=210 payload + 8 checksum.
  EXPECT_EQ(32u + 48u + 24u + 210u + 8u, bytes.size());
  EXPECT_EQ(std::string("dLCB\x01\x00\x03\x04\x0b\x03", 10), bytes.substr(0, 10));
  EXPECT_EQ(0x202bee9644398b78ULL, internal::HashKey(bytes.data(), bytes.size(), 0))
      << "golden hash; got 0x" << std::hex << internal::HashKey(bytes.data(), bytes.size(), 0);
}

// ---------------------------------------------------------------------------
// Relocation chains longer than the write guard (ApplyChain's `!fits`
// branch). One insert's guard holds 2 * kMaxSubtables + 2 = 18 stripes,
// enough for a chain of 16 moves (17 buckets); a longer chain is applied
// move by move, each move under its own guard of its two buckets, and is
// counted in DLeftStats::long_relocation_chains. With d = 2 and L = 1
// (cuckoo hashing, one cell per bucket) every full bucket has exactly one
// way out, so the breadth-first search follows two paths, which grow long
// as the load nears 1/2: with this geometry, seed and key sequence several
// inserts need 17 or more moves (deterministic: the hash is seeded).
DLeftOptions LongChainOptions(bool thread_safe) {
  DLeftOptions o;
  o.subtables = 2;
  o.buckets_per_subtable = 4096;
  o.cells_per_bucket = 1;
  o.remainder_bits = 16;
  o.counter_bits = 2;
  o.relocation = Relocation::kBreadthFirst;
  o.max_relocation_nodes = 4096;
  o.seed = 5;
  o.thread_safe = thread_safe;
  return o;
}

// Oracle: a std::multiset of the inserted keys and, from it, the expected
// multiplicity of every true fingerprint. After every long chain and at the
// end, the table must hold exactly those fingerprints with exactly those
// counters (nothing lost, duplicated, or re-counted by the moves), and
// every key must be found with its count; every overflow must leave the
// table bit-for-bit unchanged; finally every relocated fingerprint is
// still erasable where it now lives, down to an empty table.
TEST(DLeftLongChainTest, ChainsLongerThanTheGuardKeepEveryFingerprint) {
  for (bool thread_safe : {false, true}) {
    SCOPED_TRACE(thread_safe ? "thread_safe" : "single-threaded");
    const DLeftOptions o = LongChainOptions(thread_safe);
    auto f = Make(o);
    ASSERT_TRUE(f);
    std::multiset<std::string> oracle;
    std::map<uint64_t, uint32_t> expected;  // packed true fingerprint -> multiplicity
    auto fp_of = [&](const std::string& k) { return f->FingerprintOfHash(f->Hash(k)).packed; };
    auto check_all = [&](uint64_t at) {
      std::map<uint64_t, uint32_t> table;
      f->ForEachFingerprint([&](const DLeftCountingBloomFilter::TrueFingerprint& t, uint32_t count) {
        EXPECT_EQ(table.count(t.packed), 0u) << "Claim 1: fingerprint stored twice, insert " << at;
        table[t.packed] = count;
      });
      ASSERT_EQ(table, expected) << "table differs from the oracle after insert " << at;
      for (auto it = oracle.begin(); it != oracle.end(); it = oracle.upper_bound(*it)) {
        ASSERT_TRUE(f->Contains(*it)) << "false negative for " << *it << " after insert " << at;
        ASSERT_EQ(f->Count(*it), expected[fp_of(*it)]) << *it << " after insert " << at;
      }
    };
    const uint64_t max_inserts = f->capacity_cells();
    uint64_t overflows = 0, long_chains_seen = 0, i = 0;
    std::string before, after;
    for (; i < max_inserts && overflows < 40; ++i) {
      // Every 10th key is inserted twice (multiplicity 2: its counter must
      // travel with it); no fingerprint reaches the saturated count 4
      // unless two such keys collide, which the map would show.
      const std::string k = Key(i);
      for (int rep = 0; rep < (i % 10 == 0 ? 2 : 1); ++rep) {
        before.clear();
        f->Serialize(&before);
        const uint64_t long_before = f->Stats().long_relocation_chains;
        const OpResult r = f->Insert(k);
        if (r == OpResult::kOverflow) {
          after.clear();
          f->Serialize(&after);
          ASSERT_EQ(before, after) << "overflow changed the table at insert " << i;
          ++overflows;
          continue;
        }
        ASSERT_EQ(r, OpResult::kOk);
        oracle.insert(k);
        ++expected[fp_of(k)];
        if (f->Stats().long_relocation_chains != long_before) {
          ++long_chains_seen;
          check_all(i);
          if (HasFatalFailure()) return;
        }
      }
    }
    check_all(i);
    if (HasFatalFailure()) return;
    const DLeftStats s = f->Stats();
    EXPECT_EQ(s.overflows, overflows);
    EXPECT_GT(overflows, 0u) << "the run must reach the overflow region";
    EXPECT_GT(s.long_relocation_chains, 0u) << "no chain took the move-by-move branch";
    EXPECT_EQ(s.long_relocation_chains, long_chains_seen);
    EXPECT_GE(s.longest_relocation_chain, 2 * 8u + 1) << "longest chain";
    EXPECT_EQ(s.items, oracle.size());
    EXPECT_EQ(s.fingerprints, expected.size());
    std::printf("long chains (%s): %" PRIu64 " chains of > 16 moves (longest %u), %" PRIu64 " moves in all, "
                "%zu keys, %" PRIu64 " overflows\n",
                thread_safe ? "thread-safe" : "single-threaded", s.long_relocation_chains,
                s.longest_relocation_chain, s.relocations, oracle.size(), overflows);
    // Erase every occurrence: relocated fingerprints are found and
    // decremented where they now live.
    for (const std::string& k : oracle) ASSERT_EQ(f->Erase(k), OpResult::kOk) << k;
    EXPECT_EQ(f->Stats().fingerprints, 0u);
    EXPECT_EQ(f->Stats().items, 0u);
  }
}

// The same long chains with lock-free readers: each move of a long chain
// is published under its own stripe guard, so readers of keys that are
// present throughout must never see a transient false negative.
TEST(DLeftLongChainTest, ConcurrentReadersNeverMissDuringLongChains) {
  auto f = Make(LongChainOptions(true));
  ASSERT_TRUE(f);
  const uint64_t stable = f->capacity_cells() * 40 / 100;
  for (uint64_t i = 0; i < stable; ++i) ASSERT_EQ(OpResult::kOk, f->Insert(Key(i)));
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> misses{0}, rounds{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      std::vector<std::string> keys;
      for (uint64_t i = 0; i < stable; ++i) keys.push_back(Key(i));
      std::vector<std::string_view> slices(keys.begin(), keys.end());
      std::unique_ptr<bool[]> out(new bool[keys.size()]);
      started.fetch_add(1);
      do {  // at least one full round, then until the writer is done
        if (r == 0) {
          for (const auto& k : keys) misses.fetch_add(f->Contains(k) ? 0 : 1);
        } else {
          f->ContainsBatch(slices.data(), slices.size(), out.get());
          for (size_t i = 0; i < keys.size(); ++i) misses.fetch_add(out[i] ? 0 : 1);
        }
        rounds.fetch_add(1);
      } while (!done.load(std::memory_order_acquire));
    });
  }
  while (started.load() < 2) std::this_thread::yield();
  uint64_t overflows = 0;
  for (uint64_t i = stable; i < f->capacity_cells() && overflows < 40; ++i) {
    overflows += f->Insert(Key(i)) == OpResult::kOverflow ? 1 : 0;
  }
  done.store(true, std::memory_order_release);
  for (auto& t : readers) t.join();
  const DLeftStats s = f->Stats();
  EXPECT_EQ(misses.load(), 0u) << "transient false negatives over " << rounds.load() << " rounds";
  EXPECT_GT(s.long_relocation_chains, 0u) << "no chain took the move-by-move branch";
  for (uint64_t i = 0; i < stable; ++i) ASSERT_TRUE(f->Contains(Key(i))) << i;
}

// ---------------------------------------------------------------------------
// Thread-safe mode: readers must never see a false negative for a key that
// is present for the whole run, while writers churn the table at high load
// (forcing relocations that move fingerprints between buckets).
TEST(DLeftConcurrencyTest, NoTransientFalseNegatives) {
  DLeftOptions o;
  o.subtables = 4;
  o.buckets_per_subtable = 512;
  o.cells_per_bucket = 2;
  o.remainder_bits = 16;
  o.counter_bits = 2;
  o.relocation = Relocation::kBreadthFirst;
  o.thread_safe = true;
  auto f = Make(o);
  const uint64_t cells = f->capacity_cells();  // 4096
  // Stable keys: inserted before the readers start, never erased.
  const uint64_t stable = cells * 45 / 100;
  for (uint64_t i = 0; i < stable; ++i) ASSERT_EQ(OpResult::kOk, f->Insert(Key(i)));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0}, reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(100 + w);
      std::vector<std::string> mine;
      const uint64_t quota = cells * 22 / 100;  // two writers: load ~0.89 total
      while (!stop.load(std::memory_order_relaxed)) {
        if (mine.size() < quota) {
          std::string k = "w" + std::to_string(w) + "-" + std::to_string(rng());
          if (f->Insert(k) == OpResult::kOk) mine.push_back(k);
        } else {
          size_t i = rng() % mine.size();
          EXPECT_EQ(OpResult::kOk, f->Erase(mine[i]));
          mine[i] = mine.back();
          mine.pop_back();
        }
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::vector<std::string> keys;
      for (uint64_t i = 0; i < stable; ++i) keys.push_back(Key(i));
      std::vector<std::string_view> slices(keys.begin(), keys.end());
      std::unique_ptr<bool[]> out(new bool[keys.size()]);
      const int rounds = static_cast<int>(testing_util::Scaled(150, 20));  // DLCBF_TEST_SCALE
      for (int round = 0; round < rounds; ++round) {
        if (r == 0) {
          for (const auto& k : keys) {
            if (!f->Contains(k)) misses.fetch_add(1);
          }
        } else {
          f->ContainsBatch(slices.data(), slices.size(), out.get());
          for (size_t i = 0; i < keys.size(); ++i) if (!out[i]) misses.fetch_add(1);
        }
        reads.fetch_add(keys.size());
      }
    });
  }
  threads[2].join();
  threads[3].join();
  stop = true;
  threads[0].join();
  threads[1].join();
  DLeftStats s = f->Stats();
  EXPECT_EQ(0u, misses.load()) << "transient false negatives over " << reads.load() << " reads";
  EXPECT_GT(s.relocations, 0u) << "the test must exercise relocation";
  for (uint64_t i = 0; i < stable; ++i) ASSERT_TRUE(f->Contains(Key(i)));
}

}  // namespace
}  // namespace dlcbf

// Phase 1 inverted (keyless migration): HashOfFingerprint(p) is the smallest
// hash whose fingerprint packs to p, for the extremes and random values of
// several geometries, and the hash just below it belongs to p - 1.
TEST(DLeftFingerprintInverse, RoundTripsAndIsSmallest) {
  struct Geo { uint64_t buckets; uint32_t r; };
  for (const Geo& g : {Geo{1, 2}, Geo{7, 9}, Geo{1000, 14}, Geo{123457, 20}, Geo{3, 32}}) {
    dlcbf::DLeftOptions o;
    o.subtables = 2;
    o.buckets_per_subtable = g.buckets;
    o.cells_per_bucket = 1;
    o.remainder_bits = g.r;
    o.counter_bits = 0;
    std::unique_ptr<dlcbf::DLeftCountingBloomFilter> f;
    ASSERT_TRUE(dlcbf::DLeftCountingBloomFilter::Create(o, &f).ok());
    const uint64_t space = g.buckets * ((uint64_t{1} << g.r) - 1);
    uint64_t state = 0xF00D ^ space;
    for (int i = 0; i < 2000; ++i) {
      const uint64_t p = i == 0 ? 0 : i == 1 ? space - 1 : dlcbf::internal::SplitMix64(&state) % space;
      const uint64_t h = f->HashOfFingerprint(p);
      ASSERT_EQ(f->FingerprintOfHash(h).packed, p) << "geometry B=" << g.buckets << " r=" << g.r;
      if (p > 0) {
        ASSERT_EQ(f->FingerprintOfHash(h - 1).packed, p - 1) << "not the smallest hash";
      }
    }
  }
}
