// Tests for DenseDLeftFilter, the dense dlCBF kernel (variable-occupancy
// buckets): a multiset oracle over both remainder classes, every d and
// both thread modes; the block codec against a portable reference; FPR
// against the formula; overflow (moves, then kOverflow with the filter
// unchanged); erasing absent keys; batched calls; keyless re-insertion;
// sizing errors; the serialized form (round trip, golden bytes, every
// truncation, bit flips); and an oracle race of lock-free readers against
// relocating writers, with a negative control that must see misses.
#include "dlcbf/core/dense_dleft_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/cpu.h"
#include "dlcbf/internal/dleft_layout.h"
#include "dlcbf/internal/hash.h"
#include "filter_policy/core/dense_dleft_block.h"
#include "filter_policy/core/dense_dleft_impl.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/dense_dleft_testing.h"
#endif
#include "test_scale.h"

namespace dlcbf {
namespace {

using testing_util::Scaled;

std::unique_ptr<DenseDLeftFilter> Make(const DenseDLeftOptions& o) {
  std::unique_ptr<DenseDLeftFilter> f;
  Status s = DenseDLeftFilter::Create(o, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return f;
}

DenseDLeftOptions Geometry(uint32_t r, uint32_t d, uint64_t bps, bool ts = false, uint64_t seed = 42) {
  DenseDLeftOptions o;
  o.remainder_bits = r;
  o.subtables = d;
  o.blocks_per_subtable = bps;
  o.thread_safe = ts;
  o.seed = seed;
  return o;
}

std::string Bytes(const DenseDLeftFilter& f) {
  std::string s;
  f.Serialize(&s);
  return s;
}

uint64_t Packed(const DenseDLeftFilter::TrueFingerprint& f) { return (f.bucket << 16) | f.remainder; }

// ---- block codec ----------------------------------------------------------
TEST(DenseBlockCodec, Select64MatchesNaive) {
  std::mt19937_64 rng(1);
  for (int it = 0; it < 20000; ++it) {
    uint64_t x = rng() & rng();  // sparse and dense words
    if (it % 3 == 0) x = rng();
    if (x == 0) continue;
    std::vector<int> ones;
    for (int b = 0; b < 64; ++b) {
      if ((x >> b) & 1) ones.push_back(b);
    }
    for (size_t j = 0; j < ones.size(); ++j) {
      ASSERT_EQ(dense_detail::Select64Portable(x, static_cast<int>(j)), ones[j]) << std::hex << x << " j=" << j;
      ASSERT_EQ(dense_detail::Select64(x, static_cast<int>(j)), ones[j]);
    }
  }
}

// Every compare path against the portable loop, on blocks of few distinct
// byte values (many equal slots; for r = 16 every pair of them).
enum class Path { kSse2, kAvx2, kAvx512 };
template <class C>
void CheckMatchMasks(Path path) {
  std::mt19937_64 rng(7);
  alignas(64) uint8_t blk[64];
  for (int it = 0; it < 5000; ++it) {
    for (auto& b : blk) b = static_cast<uint8_t>(rng() % 4);
    for (uint32_t v = 0; v < (C::kR == 8 ? 4u : 0x400u); v += (C::kR == 8 ? 1u : 0x100u) ) {
      for (uint32_t lo = 0; lo < (C::kR == 8 ? 1u : 4u); ++lo) {
        const uint32_t x = v + lo;
        const uint64_t want = dense_detail::MatchMaskPortable<C>(blk, x);
        // The thread-safe readers' form: from the block's words.
        uint64_t w[dense_detail::kBlockWords];
        std::memcpy(w, blk, sizeof(w));
        ASSERT_EQ(dense_detail::MatchMaskPortableWords<C>(w, x), want);
        switch (path) {
          case Path::kSse2:
            ASSERT_EQ(dense_detail::MatchMaskSse2<C>(blk, x), want);
            ASSERT_EQ(dense_detail::MatchMask<C>(blk, x), want);
            ASSERT_EQ(dense_detail::MatchMaskSse2Words<C>(w, x), want);
            ASSERT_EQ(dense_detail::MatchMaskWords<C>(w, x), want);
            break;
#ifdef DLCBF_DENSE_AVX_PATHS
          case Path::kAvx2:
            ASSERT_EQ(dense_detail::MatchMaskAvx2<C>(blk, x), want);
            ASSERT_EQ(dense_detail::MatchMaskAvx2Words<C>(w, x), want);
            ASSERT_EQ((dense_detail::MatchMaskWords<dense_detail::WithSimd<C, 1>>(w, x)), want);
            break;
          case Path::kAvx512:
            ASSERT_EQ(dense_detail::MatchMaskAvx512<C>(blk, x), want);
            ASSERT_EQ((dense_detail::MatchMaskWords<dense_detail::WithSimd<C, 2>>(w, x)), want);
            break;
#else
          default:
            FAIL() << "no AVX paths in this build";
#endif
        }
      }
    }
  }
}
bool CpuHas(Path p) {
#ifdef DLCBF_DENSE_AVX_PATHS
  if (p == Path::kAvx2) return __builtin_cpu_supports("avx2");
  if (p == Path::kAvx512) return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f");
  return true;
#else
  return p == Path::kSse2;
#endif
}
// The SSE2 compare (x86-64's baseline; the portable loop on other targets)
// runs everywhere; the AVX paths where the CPU has them, skipped loudly
// elsewhere.
TEST(DenseBlockCodec, MatchMaskSse2EqualsPortable) {
  CheckMatchMasks<dense_detail::Class8>(Path::kSse2);
  CheckMatchMasks<dense_detail::Class16>(Path::kSse2);
}
TEST(DenseBlockCodec, MatchMaskAvx2EqualsPortable) {
  if (!CpuHas(Path::kAvx2)) GTEST_SKIP() << "this CPU (or build) has no AVX2: its compare path is not run here";
  CheckMatchMasks<dense_detail::Class8>(Path::kAvx2);
  CheckMatchMasks<dense_detail::Class16>(Path::kAvx2);
}
TEST(DenseBlockCodec, MatchMaskAvx512EqualsPortable) {
  if (!CpuHas(Path::kAvx512)) GTEST_SKIP() << "this CPU (or build) has no AVX-512BW: its compare path is not run here";
  CheckMatchMasks<dense_detail::Class8>(Path::kAvx512);
  CheckMatchMasks<dense_detail::Class16>(Path::kAvx512);
}

// The SSE2 slot shifts (x86-64's baseline) against the word loop of other
// targets: every slot t, random blocks (the directory bytes must not move).
template <class C>
void CheckShifts() {
  std::mt19937_64 rng(5);
  for (int it = 0; it < 2000; ++it) {
    alignas(64) uint8_t a[64], b[64];
    for (auto& x : a) x = static_cast<uint8_t>(rng());
    // The shifts' precondition: a free last slot for an insert.
    std::memset(a + (C::kSlots - 1) * sizeof(typename C::Slot), 0, sizeof(typename C::Slot));
    const int t = static_cast<int>(rng() % C::kSlots);
    const uint32_t v = 1 + static_cast<uint32_t>(rng() % ((1u << C::kR) - 1));
    std::memcpy(b, a, 64);
    dense_detail::ShiftSlotsUp<C>(a, t, v);
    dense_detail::ShiftSlotsUpPortable<C>(b, t, v);
    ASSERT_EQ(std::memcmp(a, b, 64), 0) << "up, t=" << t;
    for (auto& x : a) x = static_cast<uint8_t>(rng());
    std::memcpy(b, a, 64);
    dense_detail::ShiftSlotsDown<C>(a, t);
    dense_detail::ShiftSlotsDownPortable<C>(b, t);
    ASSERT_EQ(std::memcmp(a, b, 64), 0) << "down, t=" << t;
  }
}
TEST(DenseBlockCodec, SlotShiftsEqualPortable) {
  CheckShifts<dense_detail::Class8>();
  CheckShifts<dense_detail::Class16>();
}

template <class C>
void CheckBlockOracle() {
  std::mt19937_64 rng(11);
  alignas(64) uint8_t blk[64] = {};
  std::vector<std::vector<uint32_t>> model(C::kBuckets);
  int used = 0;
  const uint32_t vmax = (1u << C::kR) - 1;
  for (int it = 0; it < 20000; ++it) {
    const uint32_t j = static_cast<uint32_t>(rng() % C::kBuckets);
    const uint32_t v = 1 + static_cast<uint32_t>(rng() % 3) * (vmax / 3);  // few values: many repeats
    if (rng() % 2 == 0 && used < C::kSlots) {
      dense_detail::InsertInBlock<C>(blk, j, v);
      model[j].push_back(v);
      ++used;
    } else {
      const int t = dense_detail::FindInBucket<C>(blk, j, v);
      auto it2 = std::find(model[j].begin(), model[j].end(), v);
      ASSERT_EQ(t >= 0, it2 != model[j].end());
      if (t >= 0) {
        dense_detail::RemoveFromBlock<C>(blk, t, j);
        model[j].erase(it2);
        --used;
      }
    }
    ASSERT_EQ(dense_detail::Used<C>(blk), used);
    ASSERT_EQ(dense_detail::CheckBlock<C>(blk), nullptr);
    for (uint32_t b = 0; b < static_cast<uint32_t>(C::kBuckets); b += 7) {
      ASSERT_EQ(dense_detail::CountInBucketDir<C>(dense_detail::LoadDir<C>(blk), b, dense_detail::MatchMask<C>(blk, v)),
                static_cast<uint32_t>(std::count(model[b].begin(), model[b].end(), v)));
    }
  }
}
TEST(DenseBlockCodec, InsertRemoveAgainstBucketModel) {
  CheckBlockOracle<dense_detail::Class8>();
  CheckBlockOracle<dense_detail::Class16>();
}

// ---- the filter, every class x d x thread mode ---------------------------
class DenseGeometryTest : public ::testing::TestWithParam<std::tuple<uint32_t, uint32_t, bool>> {
 protected:
  uint32_t r() const { return std::get<0>(GetParam()); }
  uint32_t d() const { return std::get<1>(GetParam()); }
  bool ts() const { return std::get<2>(GetParam()); }
};

// Every answer against a multiset of true fingerprints: Count is exact,
// Erase succeeds iff a copy is stored, no stored key is ever missed.
TEST_P(DenseGeometryTest, MultisetOracle) {
  auto f = Make(Geometry(r(), d(), 16, ts()));
  std::mt19937_64 rng(r() * 100 + d());
  std::map<uint64_t, uint32_t> fps;       // packed fingerprint -> copies
  std::map<uint64_t, uint32_t> keys;      // key -> times inserted - erased
  const uint64_t pool = 16 * d() * f->options().SlotsPerBlock();  // ~ full table
  const uint64_t ops = Scaled(60000, 5000);
  uint64_t overflows = 0;
  for (uint64_t it = 0; it < ops; ++it) {
    const uint64_t key = rng() % pool;
    const uint64_t h = internal::Mix64(key ^ 0xABCDEF);
    const uint64_t p = Packed(f->FingerprintOfHash(h));
    if (rng() % 100 < 55) {
      const OpResult res = f->InsertHash(h);
      if (res == OpResult::kOk) {
        ++fps[p];
        ++keys[key];
      } else {
        ASSERT_EQ(res, OpResult::kOverflow);
        ++overflows;
      }
    } else if (keys.count(key) && keys[key] > 0) {
      ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
      if (--fps[p] == 0) fps.erase(p);
      --keys[key];
    }
    if (it % 97 == 0) {
      for (const auto& [k, n] : keys) {
        if (n == 0) continue;
        const uint64_t hk = internal::Mix64(k ^ 0xABCDEF);
        ASSERT_TRUE(f->ContainsHash(hk)) << "false negative, key " << k;
        ASSERT_EQ(f->CountHash(hk), fps[Packed(f->FingerprintOfHash(hk))]);
      }
    }
  }
  uint64_t items = 0;
  for (const auto& kv : fps) items += kv.second;
  EXPECT_EQ(f->Stats().items, items);
  EXPECT_EQ(f->Stats().overflows, overflows);
  // ForEachFingerprint reports exactly the multiset (copies of one
  // fingerprint may sit in several subtables: summed here).
  std::map<uint64_t, uint32_t> seen;
  f->ForEachFingerprint([&](const DenseDLeftFilter::TrueFingerprint& t, uint32_t c) { seen[Packed(t)] += c; });
  EXPECT_EQ(seen, fps);
}

// Absent keys with unused fingerprints: kNotFound, table unchanged, and
// every present key still found.
TEST_P(DenseGeometryTest, EraseOfAbsentKeyHurtsNothing) {
  auto f = Make(Geometry(r(), d(), 8, ts()));
  std::set<uint64_t> fps;
  std::vector<uint64_t> present;
  const uint64_t n = static_cast<uint64_t>(0.8 * 8 * d() * f->options().SlotsPerBlock());
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t h = internal::Mix64(i);
    ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
    present.push_back(h);
    fps.insert(Packed(f->FingerprintOfHash(h)));
  }
  const std::string before = Bytes(*f);
  uint64_t tried = 0;
  for (uint64_t i = 1000000; tried < 20000; ++i) {
    const uint64_t h = internal::Mix64(i);
    if (fps.count(Packed(f->FingerprintOfHash(h)))) continue;
    ++tried;
    ASSERT_EQ(f->EraseHash(h), OpResult::kNotFound);
  }
  EXPECT_EQ(Bytes(*f), before);
  for (uint64_t h : present) ASSERT_TRUE(f->ContainsHash(h));
}

// Fill a small table until inserts fail: moves happen first, every
// kOverflow leaves the bytes unchanged, no inserted key is lost.
TEST_P(DenseGeometryTest, OverflowLeavesFilterUnchanged) {
  auto f = Make(Geometry(r(), d(), 64, ts()));
  std::vector<uint64_t> in;
  uint64_t fails = 0;
  for (uint64_t i = 0; fails < 50; ++i) {
    const uint64_t h = internal::Mix64(i * 7919);
    const std::string before = fails < 10 ? Bytes(*f) : std::string();
    const OpResult res = f->InsertHash(h);
    if (res == OpResult::kOk) {
      in.push_back(h);
    } else {
      ASSERT_EQ(res, OpResult::kOverflow);
      if (fails < 10) {
        ASSERT_EQ(Bytes(*f), before);
      }
      ++fails;
    }
  }
  const DenseDLeftStats s = f->Stats();
  // Residents move before an insert fails, unless the table is full to the
  // last slot (then no resident has anywhere to go).
  EXPECT_TRUE(s.relocations > 0 || s.load > 0.999) << "no move before kOverflow at load " << s.load;
  EXPECT_EQ(s.overflows, fails);
  EXPECT_GT(s.load, 0.9) << "d-left with moves fills small tables beyond 90%";
  for (uint64_t h : in) ASSERT_TRUE(f->ContainsHash(h));
}

TEST_P(DenseGeometryTest, BatchedCallsEqualSingleCalls) {
  auto f = Make(Geometry(r(), d(), 64, ts()));
  auto g = Make(Geometry(r(), d(), 64, ts()));
  std::vector<uint64_t> hs(5000);
  for (size_t i = 0; i < hs.size(); ++i) hs[i] = internal::Mix64(i + 17);
  std::vector<OpResult> res(hs.size());
  f->InsertHashBatch(hs.data(), 3000, res.data());
  for (size_t i = 0; i < 3000; ++i) ASSERT_EQ(res[i], g->InsertHash(hs[i]));
  EXPECT_EQ(Bytes(*f), Bytes(*g));
  std::unique_ptr<bool[]> out(new bool[hs.size()]);
  f->ContainsHashBatch(hs.data(), hs.size(), out.get());
  for (size_t i = 0; i < hs.size(); ++i) ASSERT_EQ(out[i], g->ContainsHash(hs[i])) << i;
  f->EraseHashBatch(hs.data(), 1000, res.data());
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(res[i], g->EraseHash(hs[i]));
  EXPECT_EQ(Bytes(*f), Bytes(*g));
  // By key.
  std::vector<std::string> ks = {"apple", "banana", "cherry", "apple"};
  std::vector<std::string_view> kv(ks.begin(), ks.end());
  std::vector<OpResult> kr(kv.size());
  f->InsertBatch(kv.data(), kv.size(), kr.data());
  for (size_t i = 0; i < kv.size(); ++i) ASSERT_EQ(kr[i], g->Insert(kv[i]));
  EXPECT_EQ(f->Count("apple"), 2u);
  f->ContainsBatch(kv.data(), kv.size(), out.get());
  for (size_t i = 0; i < kv.size(); ++i) ASSERT_TRUE(out[i]);
  f->EraseBatch(kv.data(), kv.size(), kr.data());
  for (size_t i = 0; i < kv.size(); ++i) ASSERT_EQ(kr[i], OpResult::kOk);
  EXPECT_EQ(f->Count("apple"), 0u);
}

// Keyless re-insertion: the fingerprints read back through P_i^-1 and
// re-inserted by hash give a filter with the same answers.
TEST_P(DenseGeometryTest, KeylessReinsertKeepsEveryAnswer) {
  auto f = Make(Geometry(r(), d(), 32, ts()));
  for (uint64_t i = 0; i < 32 * d() * f->options().SlotsPerBlock() * 8 / 10; ++i) {
    ASSERT_EQ(f->InsertHash(internal::Mix64(i * 3)), OpResult::kOk);
  }
  auto g = Make(Geometry(r(), d(), 32, ts()));
  f->ForEachFingerprint([&](const DenseDLeftFilter::TrueFingerprint& t, uint32_t c) {
    ASSERT_EQ(f->FingerprintOfHash(f->HashOfFingerprint(t)).bucket, t.bucket);
    ASSERT_EQ(g->InsertFingerprint(t, c), OpResult::kOk);
  });
  for (uint64_t i = 0; i < 200000; ++i) {
    const uint64_t h = internal::Mix64(i * 3);
    ASSERT_EQ(f->CountHash(h), g->CountHash(h));
  }
  EXPECT_EQ(g->InsertFingerprint({~uint64_t{0}, 1}, 1), OpResult::kNotFound);
}

TEST_P(DenseGeometryTest, SerializeRoundTripAndCorruption) {
  auto f = Make(Geometry(r(), d(), 4, ts()));
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i)), OpResult::kOk);
  const std::string s = Bytes(*f);
  ASSERT_EQ(s.size(), 64 + 64 * 4 * d() + 8);
  std::unique_ptr<DenseDLeftFilter> g;
  ASSERT_TRUE(DenseDLeftFilter::Deserialize(s, &g, DeserializeOptions{ts()}).ok());
  EXPECT_EQ(Bytes(*g), s);
  EXPECT_EQ(g->Stats().items, 100u);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(g->ContainsHash(internal::Mix64(i)));
  for (size_t n = 0; n < s.size(); ++n) {
    Status st = DenseDLeftFilter::Deserialize(std::string_view(s.data(), n), &g);
    ASSERT_TRUE(st.IsCorruption()) << n;
  }
  std::mt19937_64 rng(5);
  for (int it = 0; it < 300; ++it) {
    std::string c = s;
    c[rng() % c.size()] ^= static_cast<char>(1u << (rng() % 8));
    ASSERT_TRUE(DenseDLeftFilter::Deserialize(c, &g).IsCorruption());
  }
}

// With no writer between the chunks, the chunked copy is Serialize's
// bytes, whatever the chunk size; d != 2 is refused, `out` untouched.
TEST_P(DenseGeometryTest, SerializeInChunksEqualsSerializeWhenQuiet) {
  auto f = Make(Geometry(r(), d(), 16, ts()));
  for (uint64_t i = 0; i < 300; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i)), OpResult::kOk);
  const std::string whole = Bytes(*f);
  for (uint64_t chunk : {uint64_t{1}, uint64_t{3}, uint64_t{1000}}) {
    std::string out = "prefix";
    uint64_t items = 0;
    const bool ok = f->SerializeInChunks(&out, nullptr, chunk, &items);
    if (d() != 2) {
      EXPECT_FALSE(ok);
      EXPECT_EQ(out, "prefix");
      continue;
    }
    ASSERT_TRUE(ok) << chunk;
    EXPECT_EQ(out, "prefix" + whole) << chunk;
    EXPECT_EQ(items, 300u);
  }
}

INSTANTIATE_TEST_SUITE_P(ClassesAndD, DenseGeometryTest,
                         ::testing::Combine(::testing::Values(8u, 16u), ::testing::Values(2u, 3u, 4u),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<uint32_t, uint32_t, bool>>& i) {
                           return "r" + std::to_string(std::get<0>(i.param)) + "_d" +
                                  std::to_string(std::get<1>(i.param)) +
                                  (std::get<2>(i.param) ? "_ts" : "");
                         });

// The chunked copy while writers run between its chunks (one block per
// chunk, so every block is copied at its own instant): the rollback
// pattern of LiveKeyDB (a second copy of a counted key inserted, then one
// copy erased: the erase may take the older copy from the first candidate
// block while the new one went to the second), transient keys inserted and
// erased. Every key counted throughout the copy must be in the image
// (dense_dleft_serialize.cc: per fingerprint, at least the fewest copies
// held during the copy), and the image loads with its own item count.
TEST(DenseDLeftFilter, SerializeInChunksHoldsEveryKeyCountedThroughout) {
  for (uint32_t r : {8u, 16u}) {
    for (bool ts : {false, true}) {
      auto f = Make(Geometry(r, 2, 64, ts, 7));
      const uint64_t slots = 2 * 64 * f->options().SlotsPerBlock();
      std::mt19937_64 rng(r + (ts ? 1 : 0));
      std::vector<uint64_t> stable, transient;
      while (stable.size() < slots * 80 / 100) {
        const uint64_t h = rng();
        ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
        stable.push_back(h);
      }
      uint64_t rollbacks = 0;
      const std::function<void(uint64_t)> between = [&](uint64_t) {
        for (int k = 0; k < 4; ++k) {
          const uint64_t h = stable[rng() % stable.size()];
          ASSERT_EQ(f->InsertHash(h), OpResult::kOk);
          ASSERT_EQ(f->EraseHash(h), OpResult::kOk);
          ++rollbacks;
          if (transient.size() < slots / 20 && (rng() & 1)) {
            transient.push_back(rng());
            ASSERT_EQ(f->InsertHash(transient.back()), OpResult::kOk);
          } else if (!transient.empty()) {
            ASSERT_EQ(f->EraseHash(transient.back()), OpResult::kOk);
            transient.pop_back();
          }
        }
      };
      std::string image;
      uint64_t items = 0;
      ASSERT_TRUE(f->SerializeInChunks(&image, nullptr, 1, &items, &between)) << "r=" << r;
      EXPECT_GT(rollbacks, 500u);
      std::unique_ptr<DenseDLeftFilter> g;
      const Status st = DenseDLeftFilter::Deserialize(image, &g);
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(g->Stats().items, items);
      uint64_t missed = 0;
      for (uint64_t h : stable) missed += g->ContainsHash(h) ? 0 : 1;
      EXPECT_EQ(missed, 0u) << "r=" << r << " ts=" << ts;
    }
  }
}

// Changed blocks: a tracked filter's image (SerializeInChunks) patched
// with the records of the blocks changed since (CopyChangedBlocks) is the
// filter's image now, item count and checksum included; a second copy
// with no write between finds nothing; untracked filters refuse.
TEST(DenseDLeftFilter, ChangedBlocksPatchTheLastImageToTheCurrentOne) {
  for (uint32_t r : {8u, 16u}) {
    auto f = Make(Geometry(r, 2, 256, /*ts=*/true, 9));
    std::string none;
    uint64_t copied = 0;
    EXPECT_FALSE(f->CopyChangedBlocks(&none, nullptr, 64, &copied)) << "untracked";
    std::mt19937_64 rng(r);
    std::vector<uint64_t> in;
    for (int i = 0; i < 3000; ++i) {
      in.push_back(rng());
      ASSERT_EQ(f->InsertHash(in.back()), OpResult::kOk);
    }
    ASSERT_TRUE(f->TrackChangedBlocks());
    std::string image;
    ASSERT_TRUE(f->SerializeInChunks(&image, nullptr, 100));
    for (int i = 0; i < 200; ++i) {
      ASSERT_EQ(f->EraseHash(in[i]), OpResult::kOk);
      ASSERT_EQ(f->InsertHash(rng()), OpResult::kOk);
    }
    std::string records;
    ASSERT_TRUE(f->CopyChangedBlocks(&records, nullptr, 64, &copied));
    EXPECT_EQ(records.size(), 72 * copied);
    EXPECT_GT(copied, 0u);
    EXPECT_LT(copied, 400u + 1);  // at most one block per write
    uint64_t items = 0;
    ASSERT_TRUE(DenseDLeftFilter::PatchSerializedBlocks(&image, records, &items).ok());
    EXPECT_EQ(image, Bytes(*f));
    EXPECT_EQ(items, f->Stats().items);
    std::string again;
    ASSERT_TRUE(f->CopyChangedBlocks(&again, nullptr, 64, &copied));
    EXPECT_EQ(copied, 0u);
    EXPECT_TRUE(again.empty());
    // A record past the table is Corruption.
    std::string bad;
    internal::PutFixed64(&bad, 2 * 256);
    bad.append(64, '\0');
    EXPECT_TRUE(DenseDLeftFilter::PatchSerializedBlocks(&image, bad).IsCorruption());
  }
}

// A relocation during the copy (an insert into full candidate blocks
// moves a resident to its other block) could hide the resident from the
// image: the copy is refused and `out` left as it was.
TEST(DenseDLeftFilter, SerializeInChunksRefusesARelocation) {
  auto f = Make(Geometry(8, 2, 8, false, 3));
  std::mt19937_64 rng(11);
  const uint64_t slots = 2 * 8 * f->options().SlotsPerBlock();
  while (f->Stats().items < slots * 85 / 100) ASSERT_EQ(f->InsertHash(rng()), OpResult::kOk);
  ASSERT_EQ(f->Stats().relocations, 0u);
  bool moved = false;
  const std::function<void(uint64_t)> between = [&](uint64_t) {
    for (int i = 0; i < 10000 && !moved; ++i) {
      if (f->InsertHash(rng()) != OpResult::kOk) break;
      moved = f->Stats().relocations > 0;
    }
  };
  std::string out = "x";
  EXPECT_FALSE(f->SerializeInChunks(&out, nullptr, 1, nullptr, &between));
  ASSERT_TRUE(moved) << "the test must make a relocation happen";
  EXPECT_EQ(out, "x");
  // Without a writer the same filter copies again.
  EXPECT_TRUE(f->SerializeInChunks(&out, nullptr, 1, nullptr, nullptr));
  EXPECT_EQ(out, "x" + Bytes(*f));
}

// A directory that is not a valid encoding is Corruption, even with a
// good checksum (the checksum is recomputed here).
TEST(DenseDLeftFilter, InconsistentBlockIsCorruption) {
  auto f = Make(Geometry(8, 2, 1));
  ASSERT_EQ(f->InsertHash(1), OpResult::kOk);
  std::string s = Bytes(*f);
  auto reseal = [](std::string* x) {
    x->resize(x->size() - 8);
    const uint64_t h = internal::HashKey(x->data(), x->size(), 0);
    for (int i = 0; i < 8; ++i) x->push_back(static_cast<char>(h >> (8 * i)));
  };
  std::unique_ptr<DenseDLeftFilter> g;
  std::string a = s;
  a[64 + 40] = 7;  // a free slot that is not 0
  reseal(&a);
  EXPECT_TRUE(DenseDLeftFilter::Deserialize(a, &g).IsCorruption());
  std::string b = s;
  b[64 + 63] = static_cast<char>(0x80);  // a directory bit above the last bucket
  reseal(&b);
  EXPECT_TRUE(DenseDLeftFilter::Deserialize(b, &g).IsCorruption());
  std::string e = s;  // the one remainder after the last bucket: bit 80 set, bits 0..79 all terminators
  for (int i = 48; i < 64; ++i) e[64 + i] = 0;
  e[64 + 58] = 1;  // bit 80 = bit 16 of the high directory word (bytes 56..63)
  reseal(&e);
  EXPECT_TRUE(DenseDLeftFilter::Deserialize(e, &g).IsCorruption());
  std::string c = s;
  c[32] = 5;  // item count
  reseal(&c);
  EXPECT_TRUE(DenseDLeftFilter::Deserialize(c, &g).IsCorruption());
}

// Version 1's bytes for a fixed input, pinned: any change to the hashing,
// the permutations, the block encoding or the header is a new version.
// Placement is not part of the format: a reader probes every candidate, so
// bytes written by the earlier "least loaded, ties to the left" rule (all
// four keys alternating between the subtables) stay valid version 1 and
// must read back with every answer; the writer's current rule (the first
// candidate until it is 3/4 full: all four keys in subtable 0) gives the
// second pair.
std::string Hex(const std::string& s) {
  std::string hex;
  char buf[4];
  for (unsigned char ch : s) {
    std::snprintf(buf, sizeof(buf), "%02x", ch);
    hex += buf;
  }
  return hex;
}
std::string Unhex(const std::string& hex) {
  std::string s;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) s.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return s;
}
// [0]: r = 8, [1]: r = 16.
constexpr const char* kGoldenLeastLoaded[2] = {
    "644c444e010008023000500000000000010000000000000007000000000000000400000000000000eca105dc33d8010000000000000000000000000000000000a7ef000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000002000000000000200000000000000072ef0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001002000000000000000000000000fa356fbe8feb2519",
    "644c444e010010021c00240000000000010000000000000007000000000000000400000000000000eca105dc33d801000000000000000000000000000000000006583e05000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001000000001000000b3993e05000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000008020000000000d53344c7222128da"};
constexpr const char* kGoldenFirstChoice[2] = {
    "644c444e010008023000500000000000010000000000000007000000000000000400000000000000eca105dc33d8010000000000000000000000000000000000a7efef72000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000020000000000006008000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000009cb96cdb7e600da1",
    "644c444e010010021c00240000000000010000000000000007000000000000000400000000000000eca105dc33d801000000000000000000000000000000000006583e053e05b399000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000000b00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000778762394b10f5b2"};

TEST(DenseDLeftFilter, GoldenBytesVersion1) {
  for (uint32_t r : {8u, 16u}) {
    auto f = Make(Geometry(r, 2, 1, false, 7));
    for (const char* k : {"apple", "banana", "cherry", "apple"}) ASSERT_EQ(f->Insert(k), OpResult::kOk);
    EXPECT_EQ(Hex(Bytes(*f)), kGoldenFirstChoice[r == 16]) << "r=" << r;
  }
}

// The sparse image (DenseDLeftFilter::ImageLayout::kSparse: LiveKeyDB's
// base of a lightly filled index until file version 6; kSparseCompact
// since), with the two fields a streaming caller writes at the end (the
// item count and the checksum).
std::string SparseOf(const DenseDLeftFilter& f, uint64_t chunk_blocks = 3,
                     DenseDLeftFilter::ImageLayout layout = DenseDLeftFilter::ImageLayout::kSparse) {
  std::string out;
  uint64_t items = 0;
  const DenseDLeftFilter::ImageSink sink = [&out](std::string_view p) {
    out.append(p.data(), p.size());
    return true;
  };
  if (!f.SerializeInChunks(sink, nullptr, chunk_blocks, &items, nullptr, layout)) return "";
  internal::EncodeFixed64(&out[DenseDLeftFilter::kImageItemsOffset], items);
  internal::EncodeFixed64(&out[out.size() - 8],
                          internal::HashKey(out.data(), out.size() - 8, DenseDLeftFilter::kImageChecksumSeed));
  return out;
}

// Layout pin: header, then (block number, block) per block in use, then
// the checksum. [0]: r = 8, [1]: r = 16.
constexpr const char* kGoldenSparse[2] = {
    "644c444e010008023000500000000000040000000000000007000000000000000400000000000000eca105dc33d801000000000000000000000000000000000000000000000000009d0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000004000000000000000000000000300000000000000bdbdc8000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001800080000000000000000007a7bb1626d21c12b",
    "644c444e010010021c00240000000000040000000000000007000000000000000400000000000000eca105dc33d80100000000000000000000000000000000000000000000000000186000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000200000000000300000000000000f614f614cc660000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003010000000061a77adeb70f11cc"};

TEST(DenseDLeftFilter, GoldenBytesOfTheSparseImage) {
  for (uint32_t r : {8u, 16u}) {
    auto f = Make(Geometry(r, 2, 4, false, 7));
    for (const char* k : {"apple", "banana", "cherry", "apple"}) ASSERT_EQ(f->Insert(k), OpResult::kOk);
    const std::string sparse = SparseOf(*f);
    EXPECT_EQ(Hex(sparse), kGoldenSparse[r == 16]) << "r=" << r;
    std::string image;
    ASSERT_TRUE(DenseDLeftFilter::ExpandSparseImage(sparse, &image).ok());
    EXPECT_EQ(image, Bytes(*f));
    std::unique_ptr<DenseDLeftFilter> built;
    ASSERT_TRUE(DenseDLeftFilter::DeserializeWithRecords(Unhex(kGoldenSparse[r == 16]), DenseDLeftFilter::ImageLayout::kSparse, {}, &built).ok());
    EXPECT_EQ(Bytes(*built), Bytes(*f));
  }
}

// Expanded, a sparse image is Serialize's image, whatever the chunk size
// and fill; a flipped byte, records out of order or a wrong item count
// (checksummed anew) are Corruption, never an image.
TEST(DenseDLeftFilter, SparseImageExpandsToTheWholeImage) {
  for (uint32_t r : {8u, 16u}) {
    for (uint64_t keys : {uint64_t{0}, uint64_t{40}, uint64_t{2000}}) {
      auto f = Make(Geometry(r, 2, 256, true));
      for (uint64_t i = 0; i < keys; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i + 1)), OpResult::kOk);
      for (uint64_t chunk : {uint64_t{1}, uint64_t{7}, uint64_t{4096}}) {
        const std::string sparse = SparseOf(*f, chunk);
        ASSERT_FALSE(sparse.empty());
        if (keys == 40) {
          EXPECT_LT(sparse.size(), Bytes(*f).size() / 4) << "40 keys in 512 blocks";
        }
        std::string image;
        ASSERT_TRUE(DenseDLeftFilter::ExpandSparseImage(sparse, &image).ok()) << keys << " " << chunk;
        EXPECT_EQ(image, Bytes(*f)) << keys << " " << chunk;
      }
    }
    auto f = Make(Geometry(r, 2, 256, true));
    for (uint64_t i = 0; i < 40; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i + 1)), OpResult::kOk);
    const std::string sparse = SparseOf(*f);
    std::string image;
    for (size_t i = 0; i < sparse.size(); ++i) {
      std::string bad = sparse;
      bad[i] ^= 0x10;
      EXPECT_FALSE(DenseDLeftFilter::ExpandSparseImage(bad, &image).ok()) << "byte " << i;
    }
    auto reseal = [](std::string* x) {
      internal::EncodeFixed64(&(*x)[x->size() - 8], internal::HashKey(x->data(), x->size() - 8, 0));
    };
    std::string swapped = sparse;  // the first two records exchanged
    std::swap_ranges(swapped.begin() + 64, swapped.begin() + 64 + 72, swapped.begin() + 64 + 72);
    reseal(&swapped);
    EXPECT_TRUE(DenseDLeftFilter::ExpandSparseImage(swapped, &image).IsCorruption());
    std::string miscounted = sparse;
    internal::EncodeFixed64(&miscounted[DenseDLeftFilter::kImageItemsOffset], 41);
    reseal(&miscounted);
    EXPECT_TRUE(DenseDLeftFilter::ExpandSparseImage(miscounted, &image).IsCorruption());
    EXPECT_TRUE(DenseDLeftFilter::ExpandSparseImage(sparse.substr(0, sparse.size() - 30), &image).IsCorruption());
  }
}

// Built in place from a base (whole or sparse) and the changed-block
// records of several later copies (blocks named more than once), the
// filter is the two-step path's (expand, patch, Deserialize) and the
// live filter's, bit for bit, item count included; bad records are
// Corruption, never a filter.
TEST(DenseDLeftFilter, DeserializeWithRecordsEqualsTheTwoStepPath) {
  for (uint32_t r : {8u, 16u}) {
    for (bool sparse : {false, true}) {
      for (uint64_t keys : {uint64_t{0}, uint64_t{40}, uint64_t{3000}}) {
        auto f = Make(Geometry(r, 2, 256, /*ts=*/true, 11));
        std::mt19937_64 rng(r * 7 + keys + (sparse ? 1 : 0));
        std::vector<uint64_t> in;
        for (uint64_t i = 0; i < keys; ++i) {
          in.push_back(rng());
          ASSERT_EQ(f->InsertHash(in.back()), OpResult::kOk);
        }
        ASSERT_TRUE(f->TrackChangedBlocks());
        const std::string base = sparse ? SparseOf(*f) : Bytes(*f);
        if (!sparse) {  // (SparseOf copies with SerializeInChunks, which clears the bits)
          std::string ignored;
          ASSERT_TRUE(f->SerializeInChunks(&ignored, nullptr, 64));
        }
        std::string records;
        std::vector<std::string_view> runs;
        std::vector<size_t> run_starts;
        for (int round = 0; round < 3; ++round) {
          for (int i = 0; i < 60; ++i) {
            if (!in.empty() && rng() % 2 == 0) {
              ASSERT_EQ(f->EraseHash(in.back()), OpResult::kOk);
              in.pop_back();
            } else {
              in.push_back(rng());
              ASSERT_EQ(f->InsertHash(in.back()), OpResult::kOk);
            }
          }
          uint64_t copied = 0;
          run_starts.push_back(records.size());
          ASSERT_TRUE(f->CopyChangedBlocks(&records, nullptr, 64, &copied));
        }
        run_starts.push_back(records.size());
        for (size_t k = 0; k + 1 < run_starts.size(); ++k) {  // one run per copy
          runs.emplace_back(records.data() + run_starts[k], run_starts[k + 1] - run_starts[k]);
        }
        std::unique_ptr<DenseDLeftFilter> built;
        uint64_t items = 0;
        ASSERT_TRUE(DenseDLeftFilter::DeserializeWithRecords(base, sparse ? DenseDLeftFilter::ImageLayout::kSparse : DenseDLeftFilter::ImageLayout::kWhole, runs, &built, {}, &items).ok())
            << r << " " << sparse << " " << keys;
        std::string image = base;
        if (sparse) {
          ASSERT_TRUE(DenseDLeftFilter::ExpandSparseImage(base, &image).ok());
        }
        uint64_t two_step_items = 0;
        ASSERT_TRUE(DenseDLeftFilter::PatchSerializedBlocks(&image, records, &two_step_items).ok());
        EXPECT_EQ(Bytes(*built), image) << r << " " << sparse << " " << keys;
        EXPECT_EQ(Bytes(*built), Bytes(*f));
        // The same runs compact (index file version 6), read as they lie.
        std::vector<std::string> compact(runs.size());
        std::vector<std::string_view> compact_runs;
        for (size_t k = 0; k < runs.size(); ++k) {
          uint64_t next = 0;
          DenseDLeftFilter::CompactRecords(runs[k], &next, &compact[k]);
          compact_runs.push_back(compact[k]);
        }
        std::unique_ptr<DenseDLeftFilter> from_compact;
        uint64_t compact_items = 0;
        ASSERT_TRUE(DenseDLeftFilter::DeserializeWithRecords(
                        base, sparse ? DenseDLeftFilter::ImageLayout::kSparse : DenseDLeftFilter::ImageLayout::kWhole,
                        compact_runs, &from_compact, {}, &compact_items, /*compact_runs=*/true)
                        .ok());
        EXPECT_EQ(Bytes(*from_compact), Bytes(*f));
        EXPECT_EQ(compact_items, items);
        EXPECT_EQ(items, two_step_items);
        EXPECT_EQ(items, f->Stats().items);
        EXPECT_EQ(built->Stats().items, items);
        for (uint64_t h : in) EXPECT_GE(built->CountHash(h), 1u);
      }
    }
    // Corruption: a record past the table, a block that is no valid
    // encoding, a torn record, any flipped byte of a sparse base.
    auto f = Make(Geometry(r, 2, 256, true));
    for (uint64_t i = 0; i < 40; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i + 1)), OpResult::kOk);
    const std::string sparse = SparseOf(*f);
    std::unique_ptr<DenseDLeftFilter> out;
    std::string past;
    internal::PutFixed64(&past, 2 * 256);
    past.append(64, '\0');
    EXPECT_TRUE(DenseDLeftFilter::DeserializeWithRecords(sparse, DenseDLeftFilter::ImageLayout::kSparse, {past}, &out).IsCorruption());
    std::string garbage;
    internal::PutFixed64(&garbage, 3);
    garbage.append(64, '\xff');
    EXPECT_TRUE(DenseDLeftFilter::DeserializeWithRecords(sparse, DenseDLeftFilter::ImageLayout::kSparse, {garbage}, &out).IsCorruption());
    EXPECT_TRUE(DenseDLeftFilter::DeserializeWithRecords(Bytes(*f), DenseDLeftFilter::ImageLayout::kWhole, {garbage}, &out).IsCorruption());
    EXPECT_TRUE(DenseDLeftFilter::DeserializeWithRecords(sparse, DenseDLeftFilter::ImageLayout::kSparse, {garbage.substr(0, 50)}, &out).IsCorruption());
    for (size_t i = 0; i < sparse.size(); ++i) {
      std::string bad = sparse;
      bad[i] ^= 0x10;
      EXPECT_FALSE(DenseDLeftFilter::DeserializeWithRecords(bad, DenseDLeftFilter::ImageLayout::kSparse, {}, &out).ok()) << "byte " << i;
    }
    EXPECT_FALSE(DenseDLeftFilter::DeserializeWithRecords(sparse, DenseDLeftFilter::ImageLayout::kWhole, {}, &out).ok()) << "sparse read as whole";
    EXPECT_FALSE(DenseDLeftFilter::DeserializeWithRecords(Bytes(*f), DenseDLeftFilter::ImageLayout::kSparse, {}, &out).ok()) << "whole read as sparse";
  }
}

// Compact changed-block records (index file version 6): layout pinned on
// two hand-made records, a round trip of a real copy's records (chunked
// as CopyChangedBlocks hands them over, one `next` for the run), and
// malformed runs are Corruption.
// The compact sparse image (LiveKeyDB's sparse bases, kind 4): the
// sparse image with its records compact. Layout pinned; loaded in place
// it is the filter, as the 72-byte sparse image is, at every fill and
// chunk size; a flipped byte is never a filter.
std::string CompactSparseOf(const DenseDLeftFilter& f, uint64_t chunk_blocks = 3) {
  return SparseOf(f, chunk_blocks, DenseDLeftFilter::ImageLayout::kSparseCompact);
}

// Layout pin (the 72-byte image's records of kGoldenSparse, compact). [0]:
// r = 8, [1]: r = 16.
constexpr const char* kGoldenCompactSparse[2] = {
    "644c444e010008023000500000000000040000000000000007000000000000000400000000000000eca105dc33d801000000000000000000000000000000000000419d0000000000000000000000400000000241bdbdc8000000000000000000180008006e4217796ad96ec4",
    "644c444e010010021c00240000000000040000000000000007000000000000000400000000000000eca105dc33d80100000000000000000000000000000000000081186000000000000000000200000000000281f614f614cc66000000000301000000004604a1a6a6849001"};

TEST(DenseDLeftFilter, CompactSparseImageLoadsAsTheFilter) {
  using L = DenseDLeftFilter::ImageLayout;
  for (uint32_t r : {8u, 16u}) {
    auto g = Make(Geometry(r, 2, 4, false, 7));
    for (const char* k : {"apple", "banana", "cherry", "apple"}) ASSERT_EQ(g->Insert(k), OpResult::kOk);
    EXPECT_EQ(Hex(CompactSparseOf(*g)), kGoldenCompactSparse[r == 16]) << "r=" << r;
    for (uint64_t keys : {uint64_t{0}, uint64_t{40}, uint64_t{3000}}) {
      auto f = Make(Geometry(r, 2, 256, true));
      for (uint64_t i = 0; i < keys; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i + 1)), OpResult::kOk);
      for (uint64_t chunk : {uint64_t{1}, uint64_t{7}, uint64_t{4096}}) {
        const std::string compact = CompactSparseOf(*f, chunk);
        ASSERT_FALSE(compact.empty());
        if (keys == 40) {
          EXPECT_LT(compact.size(), SparseOf(*f, chunk).size() / 2) << "compact records";
        }
        std::unique_ptr<DenseDLeftFilter> built;
        uint64_t items = 0;
        ASSERT_TRUE(DenseDLeftFilter::DeserializeWithRecords(compact, L::kSparseCompact, {}, &built, {}, &items).ok())
            << keys << " " << chunk;
        EXPECT_EQ(Bytes(*built), Bytes(*f)) << keys << " " << chunk;
        EXPECT_EQ(items, f->Stats().items);
      }
    }
    auto f = Make(Geometry(r, 2, 256, true));
    for (uint64_t i = 0; i < 40; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i + 1)), OpResult::kOk);
    const std::string compact = CompactSparseOf(*f);
    std::unique_ptr<DenseDLeftFilter> out;
    for (size_t i = 0; i < compact.size(); ++i) {
      std::string bad = compact;
      bad[i] ^= 0x10;
      EXPECT_FALSE(DenseDLeftFilter::DeserializeWithRecords(bad, L::kSparseCompact, {}, &out).ok()) << "byte " << i;
    }
    EXPECT_FALSE(DenseDLeftFilter::DeserializeWithRecords(compact, L::kSparse, {}, &out).ok()) << "read as 72-byte records";
  }
}

TEST(DenseDLeftFilter, CompactRecordsRoundTripAndLayout) {
  std::string two;
  internal::PutFixed64(&two, 5);  // block 5: word 1 only
  for (int w = 0; w < 8; ++w) internal::PutFixed64(&two, w == 1 ? 0x0102030405060708ULL : 0);
  internal::PutFixed64(&two, 300);  // block 300: words 0 and 7
  for (int w = 0; w < 8; ++w) internal::PutFixed64(&two, w == 0 ? 1 : (w == 7 ? 0xffULL << 56 : 0));
  std::string compact;
  uint64_t next = 0;
  DenseDLeftFilter::CompactRecords(two, &next, &compact);
  EXPECT_EQ(next, 301u);
  // varint(5 - 0), mask 0x02, word 1; varint(300 - 6) = 0xa6 0x02, mask 0x81, words 0 and 7.
  EXPECT_EQ(Hex(compact),
            "05"  "02" "0807060504030201"
            "a602" "81" "0100000000000000" "00000000000000ff");
  std::string back;
  ASSERT_TRUE(DenseDLeftFilter::ExpandCompactRecords(compact, &back).ok());
  EXPECT_EQ(back, two);
  for (uint32_t r : {8u, 16u}) {
    auto f = Make(Geometry(r, 2, 512, /*ts=*/true, 3));
    std::mt19937_64 rng(r);
    for (int i = 0; i < 4000; ++i) ASSERT_EQ(f->InsertHash(rng()), OpResult::kOk);
    ASSERT_TRUE(f->TrackChangedBlocks());
    std::string ignored;
    ASSERT_TRUE(f->SerializeInChunks(&ignored, nullptr, 64));
    for (int i = 0; i < 500; ++i) ASSERT_EQ(f->InsertHash(rng()), OpResult::kOk);
    std::string records, run;
    uint64_t copied = 0, at = 0;
    const DenseDLeftFilter::ImageSink sink = [&](std::string_view piece) {
      records.append(piece.data(), piece.size());
      DenseDLeftFilter::CompactRecords(piece, &at, &run);
      return true;
    };
    ASSERT_TRUE(f->CopyChangedBlocks(sink, nullptr, 64, &copied));
    ASSERT_GT(copied, 100u);
    EXPECT_LT(run.size(), records.size() / 2) << "compact records: " << run.size() << " of " << records.size();
    std::string expanded;
    ASSERT_TRUE(DenseDLeftFilter::ExpandCompactRecords(run, &expanded).ok());
    EXPECT_EQ(expanded, records);
    for (size_t cut = 1; cut < 40; ++cut) {  // every torn end is refused
      std::string x;
      EXPECT_TRUE(DenseDLeftFilter::ExpandCompactRecords(std::string_view(run).substr(0, run.size() - cut), &x)
                      .IsCorruption() ||
                  x.size() % 72 == 0)
          << cut;
    }
  }
  std::string x;
  EXPECT_TRUE(DenseDLeftFilter::ExpandCompactRecords(std::string("\x80", 1), &x).IsCorruption());
  EXPECT_TRUE(DenseDLeftFilter::ExpandCompactRecords(std::string("\x05\x02\x01", 3), &x).IsCorruption());
  EXPECT_TRUE(DenseDLeftFilter::ExpandCompactRecords(std::string("\x05\x01" "\0\0\0\0\0\0\0\0", 10), &x).IsCorruption())
      << "a zero word marked nonzero";
  EXPECT_TRUE(DenseDLeftFilter::ExpandCompactRecords(std::string(11, '\xff'), &x).IsCorruption()) << "overlong varint";
}

TEST(DenseDLeftFilter, GoldenBytesOfTheLeastLoadedRuleStillRead) {
  for (uint32_t r : {8u, 16u}) {
    std::unique_ptr<DenseDLeftFilter> f;
    ASSERT_TRUE(DenseDLeftFilter::Deserialize(Unhex(kGoldenLeastLoaded[r == 16]), &f).ok()) << "r=" << r;
    EXPECT_EQ(f->Count("apple"), 2u);
    EXPECT_EQ(f->Count("banana"), 1u);
    EXPECT_EQ(f->Count("cherry"), 1u);
    EXPECT_EQ(f->Stats().items, 4u);
    EXPECT_EQ(Hex(Bytes(*f)), kGoldenLeastLoaded[r == 16]);
    // Erase finds each copy wherever the old rule placed it.
    ASSERT_EQ(f->Erase("apple"), OpResult::kOk);
    ASSERT_EQ(f->Erase("apple"), OpResult::kOk);
    ASSERT_EQ(f->Erase("banana"), OpResult::kOk);
    ASSERT_EQ(f->Erase("cherry"), OpResult::kOk);
    EXPECT_EQ(f->Stats().items, 0u);
    EXPECT_FALSE(f->Contains("apple"));
  }
#ifdef DLCBF_TESTING
  // The old rule, still selectable in test builds, writes those bytes.
  dense_testing::SetLeastLoadedOnly(true);
  for (uint32_t r : {8u, 16u}) {
    auto f = Make(Geometry(r, 2, 1, false, 7));
    for (const char* k : {"apple", "banana", "cherry", "apple"}) ASSERT_EQ(f->Insert(k), OpResult::kOk);
    EXPECT_EQ(Hex(Bytes(*f)), kGoldenLeastLoaded[r == 16]) << "r=" << r;
  }
  dense_testing::SetLeastLoadedOnly(false);
#endif
}

TEST(DenseDLeftFilter, FprMatchesFormula) {
  for (uint32_t r : {8u, 16u}) {
    DenseDLeftOptions o = Geometry(r, 2, 1);
    const uint64_t n = 200000;
    ASSERT_TRUE(DenseDLeftOptions::ForLoad(n, DenseDLeftOptions::MaxLoad(r), r, &o).ok());
    auto f = Make(o);
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(f->InsertHash(internal::Mix64(i)), OpResult::kOk);
    const uint64_t q = r == 8 ? 400000 : 4000000;
    uint64_t fp = 0;
    for (uint64_t i = 0; i < q; ++i) fp += f->ContainsHash(internal::Mix64(i + (uint64_t{1} << 40)));
    const double p = f->PredictedFpr();
    // Binomial(q, p): 5 standard deviations (+1 for tiny expectations).
    const double sd = std::sqrt(q * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(fp), q * p, 5 * sd + 1) << "r=" << r << " predicted " << p;
    const double want_bpk = 512.0 / (o.SlotsPerBlock() * DenseDLeftOptions::MaxLoad(r));
    EXPECT_NEAR(f->Stats().bits_per_item, want_bpk, 0.02 * want_bpk);
  }
}

// The insert's second-line gate (dense_dleft_impl.h, SecondLineItems):
// the Poisson tail it rests on, and the model against a real fill. At the
// gate, a subtable-0 block has reached first_choice_slots (so the next
// insert there reads the second line) with probability at most
// kSecondLineTail under the model.
TEST(DenseDLeftFilter, SecondLineGateMatchesTheModel) {
  using dense_detail::PoissonTailAtLeast;
  using dense_detail::SecondLineItems;
  EXPECT_DOUBLE_EQ(PoissonTailAtLeast(3.0, 0), 1.0);
  EXPECT_NEAR(PoissonTailAtLeast(1.0, 1), 1 - std::exp(-1.0), 1e-12);
  EXPECT_NEAR(PoissonTailAtLeast(2.0, 3), 1 - std::exp(-2.0) * (1 + 2 + 2), 1e-12);
  EXPECT_EQ(SecondLineItems(0, 1000), 0u);  // every insert compares both blocks
  for (uint32_t r : {8u, 16u}) {
    const int t = r == 8 ? dense_detail::Class8::kFirstChoiceSlots : dense_detail::Class16::kFirstChoiceSlots;
    const uint64_t nb = 20000;
    const uint64_t gate = SecondLineItems(t, nb);
    const double lambda = static_cast<double>(gate) / nb;
    // lambda is the largest multiple of 1/16 within the tail target.
    EXPECT_LE(PoissonTailAtLeast(lambda, t), dense_detail::kSecondLineTail) << "r=" << r;
    EXPECT_GT(PoissonTailAtLeast(lambda + 1.0 / 16, t), dense_detail::kSecondLineTail) << "r=" << r;
    EXPECT_NEAR(lambda, r == 8 ? 24.75 : 12.6875, 1e-9);  // the values SecondLineItems' comment quotes

    auto f = Make(Geometry(r, 2, nb));
    std::mt19937_64 rng(r);
    for (uint64_t i = 0; i < gate; ++i) ASSERT_EQ(f->InsertHash(rng()), OpResult::kOk);
    // Subtable 0's blocks that reached the threshold: a block stops there
    // (the rest of its keys go to subtable 1, nearly empty), so their share
    // is P(Poisson(lambda) >= t). Binomial over nb blocks: 6 sd.
    const std::string bytes = Bytes(*f);
    uint64_t reached = 0;
    for (uint64_t b = 0; b < nb; ++b) {
      alignas(64) uint8_t blk[64];
      std::memcpy(blk, bytes.data() + 64 + 64 * b, 64);  // the header is 64 bytes (FORMATS.md)
      const int used = r == 8 ? dense_detail::Used<dense_detail::Class8>(blk) : dense_detail::Used<dense_detail::Class16>(blk);
      reached += used >= t;
    }
    const double p = PoissonTailAtLeast(lambda, t);
    EXPECT_NEAR(static_cast<double>(reached), nb * p, 6 * std::sqrt(nb * p * (1 - p))) << "r=" << r;
  }
}

TEST(DenseDLeftFilter, SizingChoosesClassAndRejectsOutOfRange) {
  DenseDLeftOptions o;
  ASSERT_TRUE(DenseDLeftOptions::ForFpr(1000000, 0.005, &o).ok());
  EXPECT_EQ(o.remainder_bits, 8u);
  EXPECT_LE(o.PredictedFpr(1000000), 0.005 * 1.01);
  ASSERT_TRUE(DenseDLeftOptions::ForFpr(1000000, 0.00003, &o).ok());
  EXPECT_EQ(o.remainder_bits, 16u);
  EXPECT_LE(o.PredictedFpr(1000000), 0.00003 * 1.01);
  ASSERT_TRUE(DenseDLeftOptions::ForBitsPerKey(1000000, 12, &o).ok());
  EXPECT_EQ(o.remainder_bits, 8u);
  EXPECT_LE(o.Bytes() * 8.0 / 1e6, 12.0 + 0.01);
  ASSERT_TRUE(DenseDLeftOptions::ForBitsPerKey(1000000, 21, &o).ok());
  EXPECT_EQ(o.remainder_bits, 16u);
  const DenseDLeftOptions keep = o;
  Status s = DenseDLeftOptions::ForFpr(1000000, 1e-9, &o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("fpr must be in"), std::string::npos) << s.ToString();
  s = DenseDLeftOptions::ForBitsPerKey(1000000, 8, &o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("bits_per_key"), std::string::npos) << s.ToString();
  s = DenseDLeftOptions::ForLoad(1000, 0.99, 8, &o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("load must be in"), std::string::npos) << s.ToString();
  EXPECT_TRUE(DenseDLeftOptions::ForLoad(1000, 0.5, 12, &o).IsInvalidArgument());
  EXPECT_EQ(o.Bytes(), keep.Bytes()) << "a rejected request leaves the options unchanged";
  DenseDLeftOptions bad;
  bad.subtables = 5;
  std::unique_ptr<DenseDLeftFilter> f;
  EXPECT_TRUE(DenseDLeftFilter::Create(bad, &f).IsInvalidArgument());
  bad = DenseDLeftOptions();
  bad.blocks_per_subtable = 1u << 20;
  bad.max_bytes = 1u << 20;
  EXPECT_TRUE(DenseDLeftFilter::Create(bad, &f).IsMemoryLimit());
}

// Every kernel instance set (DenseSimdPath) makes the same filter as the
// portable one (no POPCNT, the compare path of the target's baseline): same
// answers, same bytes, after the same operations, both classes, both
// thread modes. The sets this CPU lacks are skipped loudly.
class DenseInstanceSetTest : public ::testing::TestWithParam<DenseSimdPath> {};
TEST_P(DenseInstanceSetTest, EqualsPortable) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build of the library (the forced-path switch)";
#else
  const DenseSimdPath path = GetParam();
  {
    dense_testing::SetForcedPath(-1);
    auto best = Make(Geometry(8, 2, 1));
    if (static_cast<int>(best->simd_path()) < static_cast<int>(path)) {
      GTEST_SKIP() << "this CPU runs at most the " << DenseSimdPathName(best->simd_path()) << " instances, not "
                   << DenseSimdPathName(path);
    }
  }
  // Each set with and without PDEP select (with it only where the CPU has
  // BMI2: said below when skipped).
  const bool bmi2 = __builtin_cpu_supports("bmi2");
  if (!bmi2) std::printf("  [ note ] this CPU has no BMI2: the PDEP variants are not run\n");
  // The kernel instances on every call: without the inline path, which
  // InlineProbeEqualsKernel compares with them.
  struct NoInline {
    NoInline() { dense_testing::SetNoInlineProbe(true); }
    ~NoInline() { dense_testing::SetNoInlineProbe(false); }
  } no_inline;
  for (int pdep = 0; pdep <= (bmi2 ? 1 : 0); ++pdep)
  for (uint32_t r : {8u, 16u}) {
    for (bool ts : {false, true}) {
      dense_testing::SetForcedPath(static_cast<int>(path));
      dense_testing::SetForcedPdep(pdep);
      auto fast = Make(Geometry(r, 2, 32, ts));
      dense_testing::SetForcedPath(-1);
      dense_testing::SetForcedPdep(-1);
      ASSERT_EQ(fast->simd_path(), path);
      dense_testing::SetForcePortable(true);
      auto portable = Make(Geometry(r, 2, 32, ts));
      dense_testing::SetForcePortable(false);
      ASSERT_EQ(portable->simd_path(), DenseSimdPath::kPortable);
      std::mt19937_64 rng(r + ts);
      for (int it = 0; it < 20000; ++it) {
        const uint64_t h = internal::Mix64(rng() % 3000);  // repeats: copies and erases
        if (rng() % 3 != 0) {
          ASSERT_EQ(fast->InsertHash(h), portable->InsertHash(h));
        } else {
          ASSERT_EQ(fast->EraseHash(h), portable->EraseHash(h));
        }
        ASSERT_EQ(fast->CountHash(h), portable->CountHash(h));
        ASSERT_EQ(fast->ContainsHash(h), portable->ContainsHash(h));
        ASSERT_EQ(fast->ContainsHash(h + 1), portable->ContainsHash(h + 1));
      }
      std::vector<uint64_t> hs(4096);
      for (size_t i = 0; i < hs.size(); ++i) hs[i] = internal::Mix64(i % 3000);
      std::unique_ptr<bool[]> a(new bool[hs.size()]), b(new bool[hs.size()]);
      fast->ContainsHashBatch(hs.data(), hs.size(), a.get());
      portable->ContainsHashBatch(hs.data(), hs.size(), b.get());
      for (size_t i = 0; i < hs.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
      EXPECT_EQ(Bytes(*fast), Bytes(*portable)) << "r=" << r << " ts=" << ts << " pdep=" << pdep;
      EXPECT_GT(fast->Stats().load, 0.5);
    }
  }
#endif
}
INSTANTIATE_TEST_SUITE_P(Paths, DenseInstanceSetTest,
                         ::testing::Values(DenseSimdPath::kSse2, DenseSimdPath::kAvx2, DenseSimdPath::kAvx512),
                         [](const ::testing::TestParamInfo<DenseSimdPath>& i) {
                           return std::string(DenseSimdPathName(i.param));
                         });

// The d = 2 candidate derivation (DenseD2CandidatesOf: subtable 0's block
// by one multiply, the r = 8 split-offset table with its carry and wrap)
// gives the positions of the two-phase hashing it shortcuts (phase 1, P_1,
// then / K and mod K), for block counts from 1 up to the largest the
// options accept, at hashes on block edges, at both ends of the range and
// at random. The inline probe and the kernel share the derivation, so
// InlineProbeEqualsKernel cannot see a mistake in it; this test can.
template <class C>
void CheckD2Candidates(uint64_t nb, uint64_t seed) {
  internal::Geometry g;
  g.subtables = 2;
  g.buckets = nb * C::kBuckets;
  g.cells = 1;
  g.remainder_bits = C::kR;
  const internal::PermutationKeys keys = internal::PermutationKeys::FromSeed(seed);
  const internal::Hashing hs(g, seed, keys);
  std::vector<uint64_t> table(g.remainder_values());
  for (uint64_t q = 0; q < table.size(); ++q) {
    table[q] = internal::SplitOffset<C>(hs.Permute(1, internal::Fingerprint{0, q}).bucket);
  }
  internal::DenseDLeftView v;
  v.blocks_per_subtable = nb;
  v.buckets = g.buckets;
  v.remainders = g.remainder_values();
  v.key1 = keys.k[1][0];
  v.offsets = C::kR == 8 ? table.data() : nullptr;
  v.r8 = C::kR == 8;
  std::vector<uint64_t> hashes = {0, 1, ~uint64_t{0}, ~uint64_t{0} - 1, uint64_t{1} << 63};
  std::mt19937_64 rng(seed ^ nb);
  for (int i = 0; i < 20000; ++i) hashes.push_back(rng());
  // The first and last hash of random buckets and blocks: the smallest h
  // with floor(h B Rn / 2^64) = packed, and the one before it.
  for (int i = 0; i < 2000; ++i) {
    const uint64_t b = rng() % g.buckets;
    const uint64_t packed = ((i & 1) != 0 ? b - b % C::kBuckets : b) * g.remainder_values() + rng() % g.remainder_values();
    const uint64_t h = hs.HashOfPacked(packed);
    hashes.push_back(h);
    hashes.push_back(h - 1);
  }
  uint64_t carries = 0, wraps = 0;
  for (uint64_t h : hashes) {
    const internal::Fingerprint f = hs.FingerprintOf(h);
    const internal::Location l = hs.Permute(1, f);
    const internal::DenseD2Candidates c = internal::DenseD2CandidatesOf<C>(v, h);
    ASSERT_EQ(c.blk0, f.bucket / C::kBuckets) << "r=" << C::kR << " nb=" << nb << " h=" << h;
    ASSERT_EQ(c.j0, f.bucket % C::kBuckets) << "r=" << C::kR << " nb=" << nb << " h=" << h;
    ASSERT_EQ(c.blk1, nb + l.bucket / C::kBuckets) << "r=" << C::kR << " nb=" << nb << " h=" << h;
    ASSERT_EQ(c.j1, l.bucket % C::kBuckets) << "r=" << C::kR << " nb=" << nb << " h=" << h;
    ASSERT_EQ(c.v, f.remainder + 1) << "r=" << C::kR << " nb=" << nb << " h=" << h;
    carries += l.bucket % C::kBuckets < f.bucket % C::kBuckets;
    wraps += l.bucket < f.bucket;
  }
  // Both corrections of the split-offset path ran (with one block, every
  // carry is also a wrap).
  EXPECT_GT(carries, 0u) << "r=" << C::kR << " nb=" << nb;
  if (nb > 1) {
    EXPECT_GT(wraps, 0u) << "r=" << C::kR << " nb=" << nb;
  }
}
TEST(DenseDLeftFilter, D2CandidatesEqualTheTwoPhaseHashing) {
  const uint64_t kMaxBlocks = (uint64_t{1} << 34) - 1;  // DenseDLeftOptions::Validate's bound
  for (uint64_t nb : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{7}, uint64_t{1000}, (uint64_t{1} << 20) + 3,
                      (uint64_t{1} << 32) + 1, kMaxBlocks}) {
    for (uint64_t seed : {uint64_t{7}, uint64_t{42}}) {
      CheckD2Candidates<dense_detail::Class8>(nb, seed);
      CheckD2Candidates<dense_detail::Class16>(nb, seed);
    }
  }
}

// The inline path (dense_dleft_probe.h, d = 2 without thread safety: the
// probe, the insert and the erase) and the kernel's own instances answer
// every call alike and write the same bytes, through a full table (inserts
// that move residents or overflow, which the inline insert leaves to the
// kernel), copies and erases; then every query, present and absent keys.
TEST(DenseDLeftFilter, InlineProbeEqualsKernel) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build of the library (the no-inline-probe switch)";
#else
#if DLCBF_DENSE_INLINE_INSERT
  if (!internal::PdepIsFast()) {
    std::printf("  [ note ] PDEP is slow on this CPU: InsertHash runs the kernel here, not the inline insert\n");
  }
#else
  std::printf("  [ note ] compiled without POPCNT/BMI2: InsertHash runs the kernel here; "
              "dense_dleft_filter_bmi2_test runs the inline insert\n");
#endif
  for (uint32_t r : {8u, 16u}) {
    auto inl = Make(Geometry(r, 2, 64));
    dense_testing::SetNoInlineProbe(true);
    auto kernel = Make(Geometry(r, 2, 64));
    dense_testing::SetNoInlineProbe(false);
    std::mt19937_64 rng(r);
    const uint64_t cap = 2 * 64 * inl->options().SlotsPerBlock();
    for (uint64_t i = 0; i < cap; ++i) {
      const uint64_t h = internal::Mix64(rng() % (cap / 2));  // repeats: copies
      const OpResult a = inl->InsertHash(h);
      ASSERT_EQ(a, kernel->InsertHash(h));
      if (i % 5 == 0) {
        ASSERT_EQ(inl->EraseHash(h), kernel->EraseHash(h));
      }
    }
    ASSERT_EQ(Bytes(*inl), Bytes(*kernel));
    EXPECT_GT(inl->Stats().load, 0.75);  // cap inserts, a fifth of them erased
    // Past capacity: inserts that find both candidates full (the kernel
    // moves a resident) until one overflows.
    for (uint64_t i = 0; i < cap; ++i) {
      const uint64_t h = internal::Mix64(cap + i);
      const OpResult a = inl->InsertHash(h);
      ASSERT_EQ(a, kernel->InsertHash(h)) << "r=" << r << " i=" << i;
      if (a == OpResult::kOverflow) break;
    }
    ASSERT_EQ(Bytes(*inl), Bytes(*kernel));
    EXPECT_GT(inl->Stats().relocations, 0u) << "r=" << r;
    EXPECT_GT(inl->Stats().overflows, 0u) << "r=" << r;
    EXPECT_EQ(inl->Stats().items, kernel->Stats().items);
    EXPECT_EQ(inl->Stats().relocations, kernel->Stats().relocations);
    uint64_t positives = 0;
    for (uint64_t i = 0; i < 200000; ++i) {
      const uint64_t h = internal::Mix64(i);
      const bool a = inl->ContainsHash(h);
      ASSERT_EQ(a, kernel->ContainsHash(h)) << "r=" << r << " i=" << i;
      ASSERT_EQ(a, kernel->CountHash(h) > 0) << "r=" << r << " i=" << i;
      positives += a;
    }
    EXPECT_GT(positives, 0u);
  }
#endif
}

// ---- the thread-safe mode: readers race relocating writers ---------------
// Stable keys are inserted first and never erased; a writer churns other
// keys at full load (moves and in-block shifts), readers check that every
// stable key is always found. The writer runs `steps` operations (stopping
// early once `stop_at_misses` misses were seen, if that is not 0), starts
// only when both readers run and ends only after they made a pass.
// Returns the misses seen.
// With `two_writers`, two writer threads share the work under a mutex of
// the test's own, and the filter is owner-serialized
// (SetWritersSerializedByCaller: no kernel writer lock).
uint64_t RaceMisses(uint32_t r, uint32_t pause, uint64_t steps, uint64_t stop_at_misses = 0,
                    bool two_writers = false) {
  auto f = Make(Geometry(r, 2, 8, true, 99));
  if (two_writers) f->SetWritersSerializedByCaller();
  const uint32_t slots = f->options().SlotsPerBlock();
  std::vector<uint64_t> stable;
  for (uint64_t i = 0; stable.size() < 8 * 2 * slots / 2; ++i) {
    if (f->InsertHash(internal::Mix64(i)) == OpResult::kOk) stable.push_back(internal::Mix64(i));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::atomic<uint64_t> misses{0}, passes{0};
  std::vector<std::thread> readers;
#ifdef DLCBF_TESTING
  dense_testing::SetReaderPause(pause);
#else
  (void)pause;
#endif
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      started.fetch_add(1);
      while (!stop.load(std::memory_order_relaxed)) {
        uint64_t local = 0;
        for (uint64_t h : stable) local += !f->ContainsHash(h);
        misses += local;
        passes.fetch_add(1);
      }
    });
  }
  while (started.load() < 2) std::this_thread::yield();
  std::mt19937_64 rng(3);
  std::vector<uint64_t> churn;
  std::mutex writer_mu;  // the owner's lock (two_writers)
  auto write = [&](uint64_t first, uint64_t stride) {
    for (uint64_t s = first; s < steps; s += stride) {
      if (stop_at_misses != 0 && (s & 1023) == 0 && misses.load() >= stop_at_misses) break;
      std::unique_lock<std::mutex> l(writer_mu, std::defer_lock);
      if (two_writers) l.lock();
      if (churn.size() < 8 * 2 * slots / 2 && rng() % 2 == 0) {
        const uint64_t h = rng();
        if (f->InsertHash(h) == OpResult::kOk) churn.push_back(h);
      } else if (!churn.empty()) {
        const size_t i = rng() % churn.size();
        EXPECT_EQ(f->EraseHash(churn[i]), OpResult::kOk);
        churn[i] = churn.back();
        churn.pop_back();
      }
    }
  };
  if (two_writers) {
    std::thread second(write, 1, 2);
    write(0, 2);
    second.join();
  } else {
    write(0, 1);
  }
  while (passes.load() == 0) std::this_thread::yield();
  stop = true;
  for (auto& t : readers) t.join();
#ifdef DLCBF_TESTING
  dense_testing::SetReaderPause(0);
#endif
  // A full run must have moved keys between blocks (a control that stops at
  // its first misses may have seen only in-block shifts).
  if (stop_at_misses == 0) {
    EXPECT_GT(f->Stats().relocations, 0u) << "the race needs moves between blocks";
  }
  return misses.load();
}

TEST(DenseDLeftConcurrency, LockFreeReadersNeverMissAStableKey) {
  for (uint32_t r : {8u, 16u}) EXPECT_EQ(RaceMisses(r, 64, Scaled(300000, 60000)), 0u) << "r=" << r;
}

// Owner-serialized writers (what ElasticFilter uses): two threads write
// under the caller's mutex, the kernel takes none; readers stay exact.
TEST(DenseDLeftConcurrency, OwnerSerializedWritersKeepReadersExact) {
  for (uint32_t r : {8u, 16u}) {
    EXPECT_EQ(RaceMisses(r, 64, Scaled(300000, 60000), 0, /*two_writers=*/true), 0u) << "r=" << r;
  }
}

// The race on every kernel instance set this CPU runs (each reads blocks
// with its own compare path's loads; dense_dleft_block.h, "the
// thread-safe readers' block read"). The sets it lacks are skipped loudly.
TEST(DenseDLeftConcurrency, EveryInstanceSetsReadersNeverMissAStableKey) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build of the library (the forced-path switch)";
#else
  DenseSimdPath best;
  {
    auto f = Make(Geometry(8, 2, 1));
    best = f->simd_path();
  }
  for (int path = 0; path <= static_cast<int>(DenseSimdPath::kAvx512); ++path) {
    if (path > static_cast<int>(best)) {
      std::printf("  [ SKIPPED ] the %s instances: this CPU runs at most %s\n",
                  DenseSimdPathName(static_cast<DenseSimdPath>(path)), DenseSimdPathName(best));
      continue;
    }
    for (uint32_t r : {8u, 16u}) {
      if (path == 0) {
        dense_testing::SetForcePortable(true);
      } else {
        dense_testing::SetForcedPath(path);
      }
      EXPECT_EQ(RaceMisses(r, 64, Scaled(300000, 60000)), 0u)
          << "r=" << r << " path=" << DenseSimdPathName(static_cast<DenseSimdPath>(path));
      dense_testing::SetForcePortable(false);
      dense_testing::SetForcedPath(-1);
    }
  }
#endif
}

TEST(DenseDLeftConcurrency, NegativeControlWithoutRecheckMisses) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build of the library (the fault hook is compiled only there)";
#else
  dense_testing::SetSkipNegativeRecheck(true);
  // Not scaled down: on a loaded 2-core machine (a parallel ctest, ASan)
  // the readers need time on a CPU while the writer moves keys; up to 5
  // runs of 2M steps, each stopping at the first 10 misses.
  uint64_t misses = 0;
  for (int run = 0; run < 5 && misses == 0; ++run) misses += RaceMisses(8, 64, 2000000, /*stop_at_misses=*/10);
  dense_testing::SetSkipNegativeRecheck(false);
  EXPECT_GT(misses, 0u) << "without the re-check, readers must be seen missing keys that writers move";
#endif
}

}  // namespace
}  // namespace dlcbf
