// Tests for FastDLeftFilter, the cache-line-local dlCBF kernel: a
// multiset oracle over both fast-path geometries (D = 2, D = 4), FPR against
// the formula, saturation, overflow, exact erase, the spill path, batched
// calls, keyless migration, sizing, and the serialized form (round trip,
// golden bytes, every truncation and bit flip), and the thread-safe mode
// (an oracle race of readers against relocating writers, with a negative
// control that disables the readers' re-check and must see misses).
#include "dlcbf/core/fast_dleft_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "dlcbf/internal/coding.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/fast_dleft_testing.h"
#endif
#include "dlcbf/internal/hash.h"
#include "sizing_test_util.h"
#include "test_scale.h"

namespace dlcbf {
namespace {

std::unique_ptr<FastDLeftFilter> Make(const FastDLeftOptions& o) {
  std::unique_ptr<FastDLeftFilter> f;
  Status s = FastDLeftFilter::Create(o, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return f;
}

FastDLeftOptions Geometry(uint32_t d, uint64_t blocks, uint64_t seed = 42) {
  FastDLeftOptions o;
  o.subtables = d;
  o.blocks = blocks;
  o.seed = seed;
  return o;
}

std::string Bytes(const FastDLeftFilter& f) {
  std::string s;
  f.Serialize(&s);
  return s;
}

uint64_t Packed(const FastDLeftFilter::TrueFingerprint& f) {
  return (f.block << 16) | (static_cast<uint64_t>(f.bucket) << 13) | f.remainder;
}

// Reader pause (CPU relax instructions) of the widened-window runs.
constexpr uint32_t kControlPause = 64;

class FastDLeftGeometryTest : public ::testing::TestWithParam<uint32_t> {};

INSTANTIATE_TEST_SUITE_P(Geometries, FastDLeftGeometryTest, ::testing::Values(2u, 4u),
                         [](const ::testing::TestParamInfo<uint32_t>& i) {
                           return "D" + std::to_string(i.param);
                         });

// Random insert/erase/query sequences against a std::multiset of true
// fingerprints. The table is small and loaded past its block capacity so
// relocation, the spare and saturation are all exercised.
TEST_P(FastDLeftGeometryTest, MultisetOracle) {
  const uint32_t d = GetParam();
  for (uint64_t blocks : {1ull, 3ull, 16ull, 64ull}) {
    auto f = Make(Geometry(d, blocks, 7 + blocks));
    std::multiset<uint64_t> oracle;        // fingerprints of stored keys
    std::set<uint64_t> saturated;          // fingerprints that reached 4
    std::multiset<uint64_t> keys;          // key hashes stored
    std::mt19937_64 rng(blocks * 31 + d);
    // A pool of hashes with deliberate repeats (multiplicities up to ~6).
    std::vector<uint64_t> pool(blocks * 40);
    for (auto& h : pool) h = rng();
    const int ops = static_cast<int>(testing_util::Scaled(20000, 2000));
    for (int op = 0; op < ops; ++op) {
      const uint64_t h = pool[rng() % pool.size()];
      const uint64_t fp = Packed(f->FingerprintOfHash(h));
      const int what = static_cast<int>(rng() % 10);
      if (what < 5) {
        const std::string before = what == 0 ? Bytes(*f) : std::string();
        const OpResult r = f->InsertHash(h);
        if (r == OpResult::kOk) {
          oracle.insert(fp);
          keys.insert(h);
          if (oracle.count(fp) >= 4) saturated.insert(fp);
        } else {
          ASSERT_EQ(r, OpResult::kOverflow);
          if (what == 0) {
            ASSERT_EQ(before, Bytes(*f)) << "overflow changed the table";
          }
        }
      } else if (what < 8) {
        // Erase only keys we inserted, or fingerprints that are absent
        // (erasing a colliding key that was never inserted is misuse).
        if (keys.count(h) != 0) {
          ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
          keys.erase(keys.find(h));
          oracle.erase(oracle.find(fp));
        } else if (oracle.count(fp) == 0 && saturated.count(fp) == 0) {
          const std::string before = Bytes(*f);
          ASSERT_EQ(f->EraseHash(h), OpResult::kNotFound);
          ASSERT_EQ(before, Bytes(*f));
        }
      }
      // Every stored key is present; Count equals the oracle (or 4 once
      // saturated).
      const uint32_t expect =
          saturated.count(fp) ? 4u : static_cast<uint32_t>(std::min<size_t>(4, oracle.count(fp)));
      ASSERT_EQ(f->CountHash(h), expect) << "op " << op;
      ASSERT_EQ(f->ContainsHash(h), expect != 0);
    }
    for (uint64_t h : keys) ASSERT_TRUE(f->ContainsHash(h));
    // The stored fingerprints are exactly the oracle's (one copy each).
    std::map<uint64_t, uint32_t> stored;
    f->ForEachFingerprint([&](const FastDLeftFilter::TrueFingerprint& t, uint32_t c) {
      EXPECT_EQ(stored.count(Packed(t)), 0u) << "two copies of one fingerprint";
      stored[Packed(t)] = c;
    });
    std::set<uint64_t> live(oracle.begin(), oracle.end());
    for (uint64_t s : saturated) live.insert(s);
    EXPECT_EQ(stored.size(), live.size());
    for (uint64_t fp : live) {
      ASSERT_EQ(stored.count(fp), 1u);
      const uint32_t expect =
          saturated.count(fp) ? 4u : static_cast<uint32_t>(std::min<size_t>(4, oracle.count(fp)));
      EXPECT_EQ(stored[fp], expect);
    }
    EXPECT_EQ(f->Stats().fingerprints, stored.size());
    if (blocks == 1) {
      EXPECT_GT(f->Stats().spilled + f->Stats().overflows, 0u) << "spare never used";
    }
    // Round trip keeps everything.
    std::unique_ptr<FastDLeftFilter> g;
    ASSERT_TRUE(FastDLeftFilter::Deserialize(Bytes(*f), &g).ok());
    EXPECT_EQ(Bytes(*g), Bytes(*f));
  }
}

TEST_P(FastDLeftGeometryTest, FprMatchesFormula) {
  const uint32_t d = GetParam();
  const uint64_t n = testing_util::Scaled(200000, 20000);
  auto f = Make(testing_util::FastAt(n, FastDLeftOptions::MaxLoad(d), d));
  std::mt19937_64 rng(99 + d);
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(f->InsertHash(rng()), OpResult::kOk);
  const double p = f->PredictedFpr();
  // The formula at the planned load (design note): D=2 a*0.0977%, D=4 a*0.195%.
  EXPECT_NEAR(p, (d == 2 ? 0.000977 : 0.00195) * FastDLeftOptions::MaxLoad(d), 0.00005);
  const uint64_t q = testing_util::Scaled(4000000, 400000);
  uint64_t fp = 0;
  for (uint64_t i = 0; i < q; ++i) fp += f->ContainsHash(rng());
  const double measured = static_cast<double>(fp) / static_cast<double>(q);
  // 5 sigma of a binomial(q, p).
  const double tol = 5 * std::sqrt(p * (1 - p) / static_cast<double>(q));
  EXPECT_NEAR(measured, p, tol) << "measured " << measured << " predicted " << p;
  // Lines per negative query = 1 + flagged fraction (counted two ways).
  uint64_t lines = 0;
  const uint64_t ql = 200000;
  for (uint64_t i = 0; i < ql; ++i) lines += f->LinesForHash(rng());
  const double avg = static_cast<double>(lines) / ql;
  const double flagged = f->SpillFlaggedFraction();
  EXPECT_NEAR(avg, 1 + flagged, 5 * std::sqrt(flagged * (1 - flagged) / ql) + 0.002);
  EXPECT_LE(avg, 2.0);
}

// The inline probe (D = 2, default mode) and the library's own lookups
// (batched, Count) must agree on every query, false positives included.
TEST_P(FastDLeftGeometryTest, InlineProbeMatchesLibraryLookups) {
  const uint32_t d = GetParam();
  // Load 0.9, past MaxLoad (so no sizing call makes it): heavy spilling.
  FastDLeftOptions heavy;
  heavy.subtables = d;
  heavy.blocks = static_cast<uint64_t>(std::ceil(50000 / (32 * 0.9)));
  auto f = Make(heavy);
  std::mt19937_64 rng(41 + d);
  for (int i = 0; i < 50000; ++i) (void)f->InsertHash(rng());  // overflow allowed: only the table state matters
  ASSERT_GT(f->Stats().spilled, 0u);
  std::vector<uint64_t> q(400000);
  for (auto& h : q) h = rng();
  std::unique_ptr<bool[]> out(new bool[q.size()]);
  f->ContainsHashBatch(q.data(), q.size(), out.get());
  uint64_t positives = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_EQ(f->ContainsHash(q[i]), out[i]) << i;
    ASSERT_EQ(f->ContainsHash(q[i]), f->CountHash(q[i]) != 0) << i;
    positives += out[i];
  }
  EXPECT_GT(positives, 0u) << "some false positives expected at this size";
}

TEST_P(FastDLeftGeometryTest, SaturationIsSticky) {
  auto f = Make(Geometry(GetParam(), 16));
  const uint64_t h = 0x1234567890ABCDEFULL;
  for (int i = 0; i < 10; ++i) ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
  EXPECT_EQ(f->CountHash(h), 4u);
  EXPECT_EQ(f->Stats().saturations, 6u);
  for (int i = 0; i < 12; ++i) ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
  EXPECT_TRUE(f->ContainsHash(h)) << "a saturated counter must never be decremented";
  EXPECT_EQ(f->CountHash(h), 4u);
  EXPECT_EQ(f->Stats().sticky_erases, 12u);
  // Below saturation the counter is exact.
  const uint64_t g = 0x0FEDCBA987654321ULL;
  for (int i = 0; i < 3; ++i) (void)f->InsertHash(g);  // overflow allowed: only the table state matters
  EXPECT_EQ(f->CountHash(g), 3u);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(f->EraseHash(g), OpResult::kOk);
  EXPECT_FALSE(f->ContainsHash(g));
  EXPECT_EQ(f->EraseHash(g), OpResult::kNotFound);
}

TEST_P(FastDLeftGeometryTest, OverflowLeavesTableUnchanged) {
  // One block (32 cells) and one spare line (24 cells).
  auto f = Make(Geometry(GetParam(), 1));
  std::mt19937_64 rng(5);
  std::vector<uint64_t> stored;
  int overflows = 0;
  for (int i = 0; i < 200; ++i) {
    const uint64_t h = rng();
    const std::string before = Bytes(*f);
    const FastDLeftStats s0 = f->Stats();
    const OpResult r = f->InsertHash(h);
    if (r == OpResult::kOverflow) {
      ++overflows;
      EXPECT_EQ(before, Bytes(*f));
      EXPECT_EQ(s0.items, f->Stats().items);
      EXPECT_EQ(s0.fingerprints, f->Stats().fingerprints);
    } else {
      ASSERT_EQ(r, OpResult::kOk);
      stored.push_back(h);
    }
  }
  EXPECT_GT(overflows, 0);
  EXPECT_GE(stored.size(), 32u + 20u) << "block + spare should hold about 56 fingerprints";
  EXPECT_LE(f->Stats().fingerprints, 56u);
  for (uint64_t h : stored) EXPECT_TRUE(f->ContainsHash(h));
}

TEST_P(FastDLeftGeometryTest, EraseIsExact) {
  auto f = Make(testing_util::FastAt(20000, FastDLeftOptions::MaxLoad(GetParam()), GetParam()));
  std::mt19937_64 rng(11);
  std::vector<uint64_t> a(10000), b(10000);
  for (auto& h : a) h = rng();
  for (auto& h : b) h = rng();
  for (uint64_t h : a) ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
  for (uint64_t h : b) ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
  for (uint64_t h : b) ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
  for (uint64_t h : a) ASSERT_TRUE(f->ContainsHash(h));
  for (uint64_t h : a) ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
  EXPECT_EQ(f->Stats().fingerprints, 0u);
  EXPECT_EQ(f->Stats().items, 0u);
  EXPECT_EQ(f->SpillFlaggedFraction(), 0.0) << "spill counters must return to zero";
  // Erasing an absent fingerprint changes nothing.
  const std::string before = Bytes(*f);
  EXPECT_EQ(f->EraseHash(rng()), OpResult::kNotFound);
  EXPECT_EQ(before, Bytes(*f));
}

TEST_P(FastDLeftGeometryTest, SpillPathForced) {
  // 1 block, 40 distinct fingerprints: at least 8 must be in the spare.
  auto f = Make(Geometry(GetParam(), 1, 3));
  std::mt19937_64 rng(17);
  std::vector<uint64_t> hs;
  std::set<uint64_t> fps;
  while (hs.size() < 40) {
    const uint64_t h = rng();
    if (!fps.insert(Packed(f->FingerprintOfHash(h))).second) continue;
    ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
    hs.push_back(h);
  }
  EXPECT_GE(f->Stats().spilled, 8u);
  EXPECT_GT(f->SpillFlaggedFraction(), 0.0);
  uint32_t two_lines = 0;
  for (uint64_t h : hs) {
    ASSERT_TRUE(f->ContainsHash(h));
    ASSERT_EQ(f->CountHash(h), 1u);
  }
  for (int i = 0; i < 1000; ++i) two_lines += f->LinesForHash(rng()) == 2;
  EXPECT_GT(two_lines, 0u);
  // Counters in the spare work too.
  for (uint64_t h : hs) ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
  for (uint64_t h : hs) ASSERT_EQ(f->CountHash(h), 2u);
  for (uint64_t h : hs) ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
  for (uint64_t h : hs) ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
  EXPECT_EQ(f->Stats().fingerprints, 0u);
  EXPECT_EQ(f->Stats().spilled, 0u);
  EXPECT_EQ(f->SpillFlaggedFraction(), 0.0);
}

TEST_P(FastDLeftGeometryTest, BatchedCallsMatchSingleCalls) {
  const uint32_t d = GetParam();
  auto f = Make(testing_util::FastAt(5000, FastDLeftOptions::MaxLoad(d), d));
  auto g = Make(testing_util::FastAt(5000, FastDLeftOptions::MaxLoad(d), d));
  std::mt19937_64 rng(23);
  std::vector<uint64_t> hs(5000);
  for (auto& h : hs) h = rng() % 3000 == 0 ? hs[0] : rng();
  std::vector<OpResult> r(hs.size());
  f->InsertHashBatch(hs.data(), hs.size(), r.data());
  for (size_t i = 0; i < hs.size(); ++i) ASSERT_EQ(g->InsertHash(hs[i]), r[i]);
  ASSERT_EQ(Bytes(*f), Bytes(*g));
  std::vector<uint64_t> q(hs.begin(), hs.end());
  for (int i = 0; i < 5000; ++i) q.push_back(rng());
  std::unique_ptr<bool[]> out(new bool[q.size()]);
  f->ContainsHashBatch(q.data(), q.size(), out.get());
  for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(out[i], f->ContainsHash(q[i]));
  f->EraseHashBatch(hs.data(), 2000, r.data());
  for (size_t i = 0; i < 2000; ++i) ASSERT_EQ(g->EraseHash(hs[i]), r[i]);
  ASSERT_EQ(Bytes(*f), Bytes(*g));
  // By key.
  std::vector<std::string> ks = {"a", "bb", "ccc", "dddd"};
  for (const auto& k : ks) (void)f->Insert(k);  // overflow allowed: only the table state matters
  std::vector<std::string_view> sl(ks.begin(), ks.end());
  sl.push_back("absent-key");
  bool o2[5];
  f->ContainsBatch(sl.data(), sl.size(), o2);
  for (size_t i = 0; i < sl.size(); ++i) EXPECT_EQ(o2[i], f->Contains(sl[i]));
  EXPECT_TRUE(o2[0] && o2[1] && o2[2] && o2[3]);
}

TEST_P(FastDLeftGeometryTest, KeylessMigration) {
  const uint32_t d = GetParam();
  const FastDLeftOptions o = testing_util::FastAt(20000, FastDLeftOptions::MaxLoad(d), d);
  auto f = Make(o);
  auto g = Make(o);
  std::mt19937_64 rng(29);
  std::vector<uint64_t> hs(20000);
  for (auto& h : hs) {
    h = rng();
    ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
  }
  for (int i = 0; i < 50; ++i) (void)f->InsertHash(hs[i]);  // overflow allowed: only the table state matters  // some multiplicity 2
  ASSERT_GT(f->Stats().spilled, 0u) << "migration must cover spare entries too";
  f->ForEachFingerprint([&](const FastDLeftFilter::TrueFingerprint& t, uint32_t c) {
    ASSERT_EQ(g->InsertFingerprint(t, c), OpResult::kOk);
  });
  for (size_t i = 0; i < hs.size(); ++i) ASSERT_EQ(g->CountHash(hs[i]), f->CountHash(hs[i]));
  EXPECT_EQ(g->Stats().fingerprints, f->Stats().fingerprints);
  EXPECT_EQ(g->Stats().items, f->Stats().items);
}

// HashOfFingerprint inverts phase 1 for every fingerprint, at the edges of
// the block, bucket and remainder ranges too.
TEST_P(FastDLeftGeometryTest, HashOfFingerprintInvertsPhaseOne) {
  for (uint64_t blocks : {uint64_t{1}, uint64_t{3}, uint64_t{1000}, uint64_t{123457}}) {
    auto f = Make(Geometry(GetParam(), blocks));
    ASSERT_TRUE(f);
    const uint32_t bb = 8 / GetParam();
    std::mt19937_64 rng(blocks);
    for (int i = 0; i < 5000; ++i) {
      FastDLeftFilter::TrueFingerprint t{rng() % blocks, static_cast<uint32_t>(rng() % bb),
                                         static_cast<uint32_t>(1 + rng() % 8191)};
      if (i < 4) {
        t.block = (i & 1) ? blocks - 1 : 0;
        t.bucket = (i & 2) ? bb - 1 : 0;
        t.remainder = (i & 1) ? 8191 : 1;
      }
      const FastDLeftFilter::TrueFingerprint g = f->FingerprintOfHash(f->HashOfFingerprint(t));
      ASSERT_EQ(g.block, t.block) << blocks;
      ASSERT_EQ(g.bucket, t.bucket) << blocks;
      ASSERT_EQ(g.remainder, t.remainder) << blocks;
    }
  }
}

TEST(FastDLeftOptionsTest, SizingAndValidation) {
  for (uint32_t d : {2u, 4u}) {
    FastDLeftOptions a;
    a.subtables = d;
    a.seed = 77;
    ASSERT_TRUE(FastDLeftOptions::ForFpr(1000000, 0.0005, &a).ok());
    EXPECT_LE(a.PredictedFpr(1000000), 0.0005);
    EXPECT_EQ(a.seed, 77u) << "sizing keeps the other fields";
    EXPECT_GE(a.blocks, static_cast<uint64_t>(std::ceil(1000000 / (32 * FastDLeftOptions::MaxLoad(d)))));
    FastDLeftOptions b;
    b.subtables = d;
    ASSERT_TRUE(FastDLeftOptions::ForBitsPerKey(1000000, 24, &b).ok());
    EXPECT_NEAR(8.0 * b.Bytes() / 1e6, 24, 0.1);
    EXPECT_TRUE(a.Validate().ok());
  }
}

// Requests outside the kernel's range are InvalidArgument naming the
// argument, and leave *out unchanged: never a clamp, never a 2 GB table.
TEST(FastDLeftOptionsTest, SizingOutOfRangeIsInvalidArgument) {
  const double nan = std::nan("");
  struct Case {
    const char* what;
    std::function<Status(FastDLeftOptions*)> call;
  };
  const std::vector<Case> cases = {
      {"load", [](FastDLeftOptions* o) { return FastDLeftOptions::ForLoad(1000, 0.95, o); }},
      {"load", [](FastDLeftOptions* o) { return FastDLeftOptions::ForLoad(1000, 0.0, o); }},
      {"load", [&](FastDLeftOptions* o) { return FastDLeftOptions::ForLoad(1000, nan, o); }},
      {"expected_items", [](FastDLeftOptions* o) { return FastDLeftOptions::ForLoad(0, 0.5, o); }},
      {"bits_per_key", [](FastDLeftOptions* o) { return FastDLeftOptions::ForBitsPerKey(1000, 4, o); }},
      {"bits_per_key", [](FastDLeftOptions* o) { return FastDLeftOptions::ForBitsPerKey(1000, 1e4, o); }},
      // The case: 1e-6 at 1M keys would need about 2.2 GB.
      {"fpr", [](FastDLeftOptions* o) { return FastDLeftOptions::ForFpr(1000000, 1e-6, o); }},
      {"fpr", [](FastDLeftOptions* o) { return FastDLeftOptions::ForFpr(1000, 1.0, o); }},
      {"subtables", [](FastDLeftOptions* o) {
         o->subtables = 3;
         return FastDLeftOptions::ForLoad(1000, 0.5, o);
       }},
  };
  for (const Case& c : cases) {
    FastDLeftOptions o;
    o.blocks = 12345;
    const Status s = c.call(&o);
    EXPECT_TRUE(s.IsInvalidArgument()) << c.what << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.what), std::string::npos) << s.ToString();
    EXPECT_EQ(o.blocks, 12345u) << c.what << ": *out must stay unchanged";
  }
  // Exactly MaxLoad is in range.
  FastDLeftOptions o;
  EXPECT_TRUE(FastDLeftOptions::ForLoad(1000, FastDLeftOptions::MaxLoad(2), &o).ok());
  // A table over max_bytes: MemoryLimit from Validate, *out unchanged.
  o.max_bytes = 4096;
  const uint64_t before = o.blocks;
  EXPECT_TRUE(FastDLeftOptions::ForLoad(1000000, 0.5, &o).IsMemoryLimit());
  EXPECT_EQ(o.blocks, before);
}

TEST(FastDLeftOptionsTest, Validation) {
  FastDLeftOptions bad;
  bad.subtables = 3;
  EXPECT_TRUE(bad.Validate().IsInvalidArgument());
  bad = FastDLeftOptions();
  bad.blocks = 0;
  EXPECT_TRUE(bad.Validate().IsInvalidArgument());
  bad = FastDLeftOptions();
  bad.blocks = 1000;
  bad.max_bytes = 1000;
  EXPECT_TRUE(bad.Validate().IsMemoryLimit());
  std::unique_ptr<FastDLeftFilter> f;
  EXPECT_FALSE(FastDLeftFilter::Create(bad, &f).ok());
  EXPECT_EQ(f, nullptr);
}

// Thread-safe mode: a writer churns keys through a small, nearly full table
// (so fingerprints relocate and spill all the time) while readers check
// keys that stay present throughout (the oracle: inserted before the
// readers start, never erased): never a miss. The negative control below
// runs the same race with the readers' sequence-number re-check disabled
// and must see misses, which proves this test can fail.

#ifdef DLCBF_TESTING
// Sets a test hook for one scope and always restores the default.
struct HookScope {
  HookScope(internal::FastDLeftFault fault, uint32_t pause) {
    internal::SetFastDLeftFaultForTesting(fault);
    internal::SetFastDLeftReaderPauseForTesting(pause);
  }
  ~HookScope() {
    internal::SetFastDLeftFaultForTesting(internal::FastDLeftFault::kNone);
    internal::SetFastDLeftReaderPauseForTesting(0);
  }
};
#endif

struct RaceResult {
  uint64_t misses = 0;       // negatives for a stable key
  uint64_t checks = 0;       // stable-key probes made
  uint64_t relocations = 0;  // kernel counters after the run
  uint64_t spare_events = 0; // spilled + overflows
};

// Two blocks (64 cells) and one spare line: every writer operation is near
// the stable keys, so a reader often probes while they move. Runs the
// writer for `rounds` operations, or until `stop_at_misses` misses (0 =
// never stop early).
RaceResult RunStableKeyRace(uint32_t d, uint64_t rounds, uint64_t stop_at_misses,
                            std::unique_ptr<FastDLeftFilter>* keep = nullptr,
                            std::vector<uint64_t>* stable_out = nullptr) {
  FastDLeftOptions o = Geometry(d, 2, 77);
  o.thread_safe = true;
  auto f = Make(o);
  RaceResult res;
  if (!f) return res;
  std::mt19937_64 rng(123);
  std::vector<uint64_t> stable(40), churn(60);
  for (auto& h : stable) {
    h = rng();
    EXPECT_EQ(f->InsertHash(h), OpResult::kOk);
  }
  for (auto& h : churn) h = rng();
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::atomic<uint64_t> misses{0}, checks{0};
  auto reader = [&](int id) {
    std::unique_ptr<bool[]> out(new bool[stable.size()]);
    started.fetch_add(1);
    while (!stop.load(std::memory_order_relaxed)) {
      for (size_t i = 0; i < stable.size(); ++i) {
        if (!f->ContainsHash(stable[i])) misses.fetch_add(1);
        if (f->CountHash(stable[i]) == 0) misses.fetch_add(1);
      }
      f->ContainsHashBatch(stable.data(), stable.size(), out.get());
      for (size_t i = 0; i < stable.size(); ++i) {
        if (!out[i]) misses.fetch_add(1);
      }
      checks.fetch_add(3 * stable.size());
      if (id == 0) f->Stats();  // takes the writer lock
    }
  };
  std::thread r0(reader, 0), r1(reader, 1);
  // The writer starts once both readers run, and stops only after they
  // completed a pass (on a loaded machine, under ASan, a short writer loop
  // could otherwise end before any reader ran).
  while (started.load() < 2) std::this_thread::yield();
  std::vector<char> in(churn.size(), 0);
  for (uint64_t i = 0; i < rounds; ++i) {
    if (stop_at_misses != 0 && (i & 1023) == 0 && misses.load() >= stop_at_misses) break;
    const size_t j = rng() % churn.size();
    if (in[j]) {
      EXPECT_EQ(f->EraseHash(churn[j]), OpResult::kOk);
      in[j] = 0;
    } else if (f->InsertHash(churn[j]) == OpResult::kOk) {
      in[j] = 1;
    }
  }
  while (checks.load() == 0) std::this_thread::yield();
  stop = true;
  r0.join();
  r1.join();
  const FastDLeftStats s = f->Stats();
  res.misses = misses.load();
  res.checks = checks.load();
  res.relocations = s.relocations;
  res.spare_events = s.spilled + s.overflows;
  if (keep != nullptr) *keep = std::move(f);
  if (stable_out != nullptr) *stable_out = stable;
  return res;
}

TEST_P(FastDLeftGeometryTest, ConcurrencyReadersNeverMissStableKeys) {
  std::unique_ptr<FastDLeftFilter> f;
  std::vector<uint64_t> stable;
  const RaceResult r =
      RunStableKeyRace(GetParam(), testing_util::Scaled(300000, 20000), 0, &f, &stable);
  ASSERT_TRUE(f);
  EXPECT_EQ(r.misses, 0u) << "a reader missed a stably present key";
  EXPECT_GT(r.checks, 0u);
  EXPECT_GT(r.relocations, 0u) << "the test must exercise relocation";
  EXPECT_GT(r.spare_events, 0u) << "the test must exercise the spare";
  for (uint64_t h : stable) EXPECT_TRUE(f->ContainsHash(h));
  // The thread-safe mode round-trips like the default one.
  std::string bytes;
  f->Serialize(&bytes);
  std::unique_ptr<FastDLeftFilter> g;
  ASSERT_TRUE(FastDLeftFilter::Deserialize(bytes, &g, DeserializeOptions{/*thread_safe=*/true}).ok());
  for (uint64_t h : stable) EXPECT_TRUE(g->ContainsHash(h));
}

// The same race with the readers slowed between their candidate loads (the
// widened window the negative control uses): the re-check still hides
// every half-done move.
TEST_P(FastDLeftGeometryTest, ConcurrencyWidenedWindowStillNoMiss) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "the widened window needs the DLCBF_TESTING build of the library (reader pause hook)";
#else
  HookScope hooks(internal::FastDLeftFault::kNone, kControlPause);
  const RaceResult r = RunStableKeyRace(GetParam(), testing_util::Scaled(300000, 20000), 0);
  EXPECT_EQ(r.misses, 0u) << "a reader missed a stably present key";
  EXPECT_GT(r.checks, 0u);
  EXPECT_GT(r.relocations, 0u);
#endif
}

// Negative control: without the re-check of a negative answer, readers
// must observe false negatives (a fingerprint between its old and new
// bucket, or a spare group between its two lines). If this ever passes
// with zero misses, the race above no longer exercises what it claims.
TEST_P(FastDLeftGeometryTest, NegativeControlWithoutRecheckMisses) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "negative control needs the DLCBF_TESTING build of the library (its fault hook "
                  "exists only there; the in-tree plugin build links the shipped library)";
#else
  HookScope hooks(internal::FastDLeftFault::kSkipNegativeRecheck, kControlPause);
  // The race needs the readers on a CPU while the writer relocates; on a
  // loaded machine (a parallel ctest on 2 cores) one run of 2M writer steps
  // was once not enough, so up to 5 runs, stopping at the first that sees
  // a miss.
  RaceResult r;
  for (int attempt = 0; attempt < 5 && r.misses == 0; ++attempt) {
    r = RunStableKeyRace(GetParam(), 2000000, /*stop_at_misses=*/10);
  }
  std::printf("[ control  ] D=%u: %llu false negatives in %llu stable-key probes, "
              "%llu relocations\n",
              GetParam(), static_cast<unsigned long long>(r.misses),
              static_cast<unsigned long long>(r.checks),
              static_cast<unsigned long long>(r.relocations));
  EXPECT_GT(r.misses, 0u) << "the negative control found no false negative: the race "
                             "test cannot detect a missing re-check";
#endif
}

// ---------------------------------------------------------------------------
// Serialized form
// ---------------------------------------------------------------------------
std::unique_ptr<FastDLeftFilter> SmallFilled(uint32_t d) {
  auto f = Make(Geometry(d, 1, 0x5EED));
  for (uint64_t i = 1; i <= 40; ++i) (void)f->InsertHash(internal::Mix64(i));  // overflow allowed: only the table state matters  // spills
  (void)f->InsertHash(internal::Mix64(1));  // overflow allowed: only the table state matters
  return f;
}

TEST_P(FastDLeftGeometryTest, SerializationRoundTripAndCorruption) {
  auto f = SmallFilled(GetParam());
  const std::string s = Bytes(*f);
  ASSERT_EQ(s.size(), 64u + 64u + 64u + 8u);
  std::unique_ptr<FastDLeftFilter> g;
  ASSERT_TRUE(FastDLeftFilter::Deserialize(s, &g).ok());
  EXPECT_EQ(Bytes(*g), s);
  for (uint64_t i = 1; i <= 40; ++i) EXPECT_EQ(g->CountHash(internal::Mix64(i)), f->CountHash(internal::Mix64(i)));
  // Every truncation.
  for (size_t len = 0; len < s.size(); ++len) {
    std::unique_ptr<FastDLeftFilter> h;
    EXPECT_TRUE(FastDLeftFilter::Deserialize(std::string_view(s.data(), len), &h).IsCorruption()) << len;
    EXPECT_EQ(h, nullptr);
  }
  // Every single-bit flip.
  for (size_t bit = 0; bit < 8 * s.size(); ++bit) {
    std::string t = s;
    t[bit / 8] = static_cast<char>(t[bit / 8] ^ (1 << (bit % 8)));
    std::unique_ptr<FastDLeftFilter> h;
    EXPECT_FALSE(FastDLeftFilter::Deserialize(t, &h).ok()) << bit;
  }
  // Every bit flip with the checksum recomputed: rejected, or accepted only
  // as a well-formed table (structural checks); never a crash.
  int accepted = 0;
  for (size_t bit = 0; bit < 8 * (s.size() - 8); ++bit) {
    std::string t = s.substr(0, s.size() - 8);
    t[bit / 8] = static_cast<char>(t[bit / 8] ^ (1 << (bit % 8)));
    internal::PutFixed64(&t, internal::HashKey(t.data(), t.size(), 0));
    std::unique_ptr<FastDLeftFilter> h;
    Status st = FastDLeftFilter::Deserialize(t, &h);
    if (st.ok()) {
      ++accepted;
      EXPECT_EQ(Bytes(*h), t);
    } else {
      EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    }
  }
  // Flipped cell bits that keep the table consistent exist (e.g. a stored
  // remainder changed), but structure-breaking ones are rejected.
  EXPECT_LT(accepted, static_cast<int>(8 * (s.size() - 8)));
}

// Pins the version-1 layout: header fields, cell encoding, spare encoding
// and checksum. Changing any of them needs a new version.
TEST(FastDLeftFormatTest, GoldenBytes) {
  auto f = SmallFilled(2);
  const std::string s = Bytes(*f);
  std::string hex;
  static const char* kHex = "0123456789abcdef";
  for (unsigned char c : s.substr(0, 64)) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 15]);
  }
  EXPECT_EQ(hex,
            "644c464b0100020d02080000c0cf80e4000000000000000001000000000000"
            "00ed5e000000000000290000000000000028000000000000000900000000000000");
  EXPECT_EQ(internal::HashKey(s.data(), s.size(), 0), 0x7f17f344c0a1b7a5ULL) << std::hex << "got 0x"
                                                            << internal::HashKey(s.data(), s.size(), 0);
}

// The cell encoding by hand: f = (block 0, b = 1, q = 0x123) twice lands in
// subtable 0, bucket 1 = word 1, lane 0 as q | (count - 1) << 13 = 0x2123.
TEST(FastDLeftFormatTest, CellEncodingByHand) {
  auto f = Make(Geometry(2, 1, 0x5EED));
  ASSERT_EQ(f->InsertFingerprint({0, 1, 0x123}, 2), OpResult::kOk);
  const std::string s = Bytes(*f);
  EXPECT_EQ(static_cast<unsigned char>(s[64 + 8]), 0x23);
  EXPECT_EQ(static_cast<unsigned char>(s[64 + 9]), 0x21);
  for (size_t i = 64; i < 64 + 128; ++i) {
    if (i != 72 && i != 73) {
      EXPECT_EQ(s[i], 0) << i;
    }
  }
  EXPECT_EQ(f->InsertFingerprint({1, 0, 1}), OpResult::kNotFound) << "block out of range";
  EXPECT_EQ(f->InsertFingerprint({0, 0, 0}), OpResult::kNotFound) << "remainder 0 is the empty cell";
}

// Regression (found by fuzz_deserialize in a CI run): a table whose
// checksum is valid but whose last spare group has a buddy choice while no
// buddy line exists (an odd number of spare lines) used to load; the next
// Insert then tagged a spare entry that Deserialize, ForEachFingerprint and
// keyless migration decode to a block out of range. Deserialize now checks
// every spill counter (buddy choice only with a buddy; count covers its
// spare entries) and rejects this input.
TEST(FastDLeftRegression, BuddyChoiceWithoutBuddyLineIsRejected) {
  std::string s(
      "\x64\x4c\x46\x4b\x01\x00\x02\x0d\x02\x08\x00\x00\x93\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x01\x00\x00\x00\x00\x00\x00\x00\xed\x5e\x00\x00\x00\x00\x00\x00\x28\x00\x00\x00\x00\x00\x00\x35"
      "\x28\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\xf3\x1b\xd3\x1b\x97\x16\xa8\x03"
      "\x33\x86\x17\x98\x80\x0e\xca\x08\xb5\x10\xf9\x90\x9d\x16\x28\x01\x38\x1a\x5d\x1a\x0d\xd1\x01\xb8"
      "\x76\xa0\x4c\x05\x80\xf6\x00\xd6\x4b\x60\x54\x13\x78\x1c\xb0\x0e\x71\x1e\xd4\x00\xa9\x06\x05\x1b"
      "\xe5\x0e\x0a\x19\x45\x17\x00\x00\xc9\x74\x40\x3d\x0e\xd4\xd1\x01\xb8\x76\xa0\x4c\x05\x80\xf6\x00"
      "\xd6\x4b\x60\x06\x07\xe8\x53\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x9f\x95\x67\xf0\x97\xf5\xf2\x64",
      200);
  ASSERT_GE(s.size(), 8u);
  std::string sum;
  internal::PutFixed64(&sum, internal::HashKey(s.data(), s.size() - 8, 0));
  s.replace(s.size() - 8, 8, sum);
  std::unique_ptr<FastDLeftFilter> f;
  const Status st = FastDLeftFilter::Deserialize(s, &f, DeserializeOptions{/*thread_safe=*/true});
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.ToString().find("buddy"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace dlcbf
