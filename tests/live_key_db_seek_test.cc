// LiveKeyDB's iterators with live-region counts
// (LiveKeyIndexOptions::live_prefix_counts and live_range_lengths;
// live_iterator.cc): differential oracles against the base DB's iterator at
// the same snapshot (every Seek/SeekForPrev/Next/Prev, keys and values; for
// ranges in three read modes, with bounds, and a negative control), and the
// paths where the counts alone would skip a live key: an iterator's
// snapshot older than a delete (with its negative control), an index
// swapped under an iterator, a prefix extractor changed by SetOptions; a
// queue's head Seek, and bad options.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/live_key_db.h"
#include "filter_policy/testing/live_key_db_testing.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/iterator.h"
#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction_db.h"
#include "rocksdb/comparator.h"
#include "rocksdb_test_util.h"

namespace fs = std::filesystem;
using dlcbf::LiveKeyDB;
using dlcbf::LiveKeyIndexOptions;
using dlcbf::LiveKeyStats;
using rocksdb::ReadOptions;
using rocksdb::Status;
using rocksdb::WriteOptions;

namespace {

std::string TestDir(const std::string& name) { return dlcbf::testing_util::TestDir("live_key_db_seek_test", name); }

// 4-byte prefixes "p000".."p049", then a 4-digit suffix.
std::string Prefix(int p) {
  char b[8];
  std::snprintf(b, sizeof(b), "p%03d", p);
  return b;
}
std::string Key(int p, int i) {
  char b[16];
  std::snprintf(b, sizeof(b), "p%03d%04d", p, i);
  return b;
}

rocksdb::Options Options(int prefix_len = 4) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(prefix_len));
  o.write_buffer_size = 256 << 10;
  return o;
}
LiveKeyIndexOptions IndexOptions() {
  LiveKeyIndexOptions io;
  io.expected_keys = 20000;
  io.live_prefix_counts = true;
  io.persist_index = false;
  return io;
}

std::unique_ptr<LiveKeyDB> Open(const std::string& dir, const rocksdb::Options& o = Options(),
                                const LiveKeyIndexOptions& io = IndexOptions()) {
  LiveKeyDB* raw = nullptr;
  const Status s = LiveKeyDB::Open(o, io, dir, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::unique_ptr<LiveKeyDB>(raw);
}

// What an iterator shows from a Seek (or SeekForPrev) of target, forward
// (or backward) to the end: keys and values, then its status.
std::string Walk(rocksdb::Iterator* it, const std::string& target, bool backward) {
  std::string out;
  if (backward) {
    it->SeekForPrev(target);
  } else {
    it->Seek(target);
  }
  int n = 0;
  for (; it->Valid() && n < 200; ++n) {
    out += it->key().ToString() + "=" + it->value().ToString() + ";";
    if (backward) {
      it->Prev();
    } else {
      it->Next();
    }
  }
  return out + "|" + it->status().ToString();
}

uint64_t DeadSeeks(LiveKeyDB* db) { return db->GetLiveKeyStats().dead_prefix_seeks; }

#ifdef DLCBF_TESTING
// Runs scenario() with LiveKeyDB's fault f on (the negative controls), then
// turns it off; returns what the scenario returned.
template <class Scenario>
auto UnderFault(dlcbf::internal::LiveKeyFault f, Scenario&& scenario) {
  dlcbf::internal::SetLiveKeyFaultForTesting(f);
  auto r = scenario();
  dlcbf::internal::SetLiveKeyFaultForTesting(dlcbf::internal::LiveKeyFault::kNone);
  return r;
}
#endif

}  // namespace

// Random Puts, Deletes, SingleDeletes, DeleteRanges and Merges over 50
// prefixes, flushes and compactions between rounds; after each round,
// every prefix is walked forward and backward through LiveKeyDB's
// iterator and the base DB's, both at one snapshot and at the latest
// state: the same keys, values and statuses. Whole prefixes are deleted
// on the way, so dead prefixes are answered from the counts (counted).
TEST(LiveKeyDBSeek, DifferentialOracle) {
  const std::string dir = TestDir("oracle");
  rocksdb::Options o = Options();
  o.merge_operator = std::make_shared<dlcbf::testing_util::AppendOperator>();
  auto db = Open(dir, o);
  ASSERT_TRUE(db != nullptr);
  rocksdb::DB* base = db->GetBaseDB();
  std::mt19937_64 rng(20261129);
  auto U = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  uint64_t compared = 0;
  for (int round = 0; round < 12; ++round) {
    for (int op = 0; op < 3000; ++op) {
      const int p = U(50), i = U(40);
      const int what = U(100);
      WriteOptions wo;
      if (what < 45) {
        ASSERT_TRUE(db->Put(wo, Key(p, i), "v" + std::to_string(round)).ok());
      } else if (what < 75) {
        ASSERT_TRUE(db->Delete(wo, Key(p, i)).ok());
      } else if (what < 85) {
        ASSERT_TRUE(db->Merge(wo, Key(p, i), "m").ok());
      } else if (what < 88) {
        // A whole prefix, key by key (a consumed queue).
        for (int j = 0; j < 40; ++j) ASSERT_TRUE(db->Delete(wo, Key(p, j)).ok());
      } else if (what < 90) {
        ASSERT_TRUE(db->DeleteRange(wo, db->DefaultColumnFamily(), Key(p, 0), Key(p + 1, 0)).ok());
      } else {
        ASSERT_TRUE(db->Put(wo, Key(p, i), std::string(1 + U(20), 'x')).ok());
      }
    }
    if (round % 3 == 1) {
      ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    }
    if (round % 4 == 3) {
      ASSERT_TRUE(db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).ok());
    }
    ASSERT_TRUE(db->WaitForDeferredChecks(60000));
    const rocksdb::Snapshot* snap = db->GetSnapshot();
    for (int p = 0; p < 51; ++p) {
      for (bool at_snapshot : {false, true}) {
        ReadOptions ro;
        ro.prefix_same_as_start = true;
        if (at_snapshot) ro.snapshot = snap;
        std::unique_ptr<rocksdb::Iterator> ours(db->NewIterator(ro));
        std::unique_ptr<rocksdb::Iterator> theirs(base->NewIterator(ro));
        for (bool backward : {false, true}) {
          const std::string target = backward ? Prefix(p) + "\xff" : Prefix(p);
          const std::string a = Walk(ours.get(), target, backward), b = Walk(theirs.get(), target, backward);
          ASSERT_EQ(a, b) << "round " << round << " prefix " << p << (backward ? " backward" : " forward")
                          << (at_snapshot ? " at a snapshot" : "");
          ++compared;
        }
      }
    }
    // Writes after the snapshot: the snapshot iterators must still see
    // what was there (the counts are of the latest state).
    for (int p = 0; p < 50; p += 7) {
      for (int j = 0; j < 40; ++j) ASSERT_TRUE(db->Delete(WriteOptions(), Key(p, j)).ok());
    }
    ASSERT_TRUE(db->WaitForDeferredChecks(60000));
    for (int p = 0; p < 50; p += 7) {
      ReadOptions ro;
      ro.prefix_same_as_start = true;
      ro.snapshot = snap;
      std::unique_ptr<rocksdb::Iterator> ours(db->NewIterator(ro));
      std::unique_ptr<rocksdb::Iterator> theirs(base->NewIterator(ro));
      ASSERT_EQ(Walk(ours.get(), Prefix(p), false), Walk(theirs.get(), Prefix(p), false))
          << "round " << round << " prefix " << p << " at a snapshot from before its keys were deleted";
      ++compared;
    }
    db->ReleaseSnapshot(snap);
  }
  const LiveKeyStats st = db->GetLiveKeyStats();
  std::printf("  %llu walks compared, %llu Seeks answered from the counts\n",
              static_cast<unsigned long long>(compared), static_cast<unsigned long long>(st.dead_prefix_seeks));
  EXPECT_GT(st.dead_prefix_seeks, 0u) << "no Seek was answered from the counts: the oracle tested nothing of them";
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// A key live at an iterator's snapshot, deleted (and its copy erased)
// before the Seek: the count is 0, the slot's last erase is past the
// snapshot, so the Seek reads RocksDB and finds the key. Returns how many
// of the keys the snapshot holds the Seeks missed.
int SnapshotScenario(bool implicit_snapshot) {
  const std::string dir = TestDir(implicit_snapshot ? "implicit" : "snapshot");
  auto db = Open(dir);
  if (!db) return -1;
  for (int p = 0; p < 20; ++p) {
    if (!db->Put(WriteOptions(), Key(p, 1), "v").ok()) return -1;
  }
  ReadOptions ro;
  ro.prefix_same_as_start = true;
  const rocksdb::Snapshot* snap = implicit_snapshot ? nullptr : db->GetSnapshot();
  ro.snapshot = snap;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  for (int p = 0; p < 20; ++p) {
    if (!db->Delete(WriteOptions(), Key(p, 1)).ok()) return -1;
  }
  if (!db->WaitForDeferredChecks(60000)) return -1;
  int missed = 0;
  for (int p = 0; p < 20; ++p) {
    it->Seek(Prefix(p));
    if (!it->Valid() || it->key().ToString() != Key(p, 1)) ++missed;
  }
  // The premise: at the latest state, those prefixes are dead and answered
  // from the counts.
  const uint64_t before = DeadSeeks(db.get());
  {
    ReadOptions now;
    now.prefix_same_as_start = true;
    std::unique_ptr<rocksdb::Iterator> latest(db->NewIterator(now));
    latest->Seek(Prefix(0));
    if (latest->Valid()) return -1;
  }
  if (DeadSeeks(db.get()) == before) {
    std::fprintf(stderr, "the premise failed: a dead prefix was not answered from the counts\n");
    return -1;
  }
  it.reset();
  if (snap != nullptr) db->ReleaseSnapshot(snap);
  db->Close().PermitUncheckedError();
  db.reset();
  fs::remove_all(dir);
  std::printf("  %d of 20 keys the iterator's snapshot holds missed\n", missed);
  return missed;
}

TEST(LiveKeyDBSeek, SnapshotOlderThanADeleteSeesTheKey) { EXPECT_EQ(SnapshotScenario(false), 0); }
TEST(LiveKeyDBSeek, IteratorMadeBeforeADeleteSeesTheKey) { EXPECT_EQ(SnapshotScenario(true), 0); }
TEST(LiveKeyDBSeek, SnapshotNegativeControl) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build (fault hooks exist only there)";
#else
  const auto fault = dlcbf::internal::LiveKeyFault::kPrefixIgnoresErasedAt;
  const int explicit_missed = UnderFault(fault, [] { return SnapshotScenario(false); });
  const int implicit_missed = UnderFault(fault, [] { return SnapshotScenario(true); });
  EXPECT_EQ(explicit_missed, 20) << "without erased_at, the counts skip keys an older snapshot holds";
  EXPECT_EQ(implicit_missed, 20);
#endif
}

// 10,000 keys under one prefix, all deleted and not compacted (#10300's
// scenario): the Seek is answered from the counts; the base DB's iterator
// agrees that the prefix is empty.
TEST(LiveKeyDBSeek, DeadPrefixIsAnsweredFromTheCounts) {
  const std::string dir = TestDir("dead");
  rocksdb::Options o = Options();
  o.disable_auto_compactions = true;
  auto db = Open(dir, o);
  ASSERT_TRUE(db != nullptr);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key(7, i % 10000), "v").ok());
  ASSERT_TRUE(db->Put(WriteOptions(), Key(8, 0), "next prefix").ok());
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(db->Delete(WriteOptions(), Key(7, i)).ok());
  ASSERT_TRUE(db->WaitForDeferredChecks(60000));
  ReadOptions ro;
  ro.prefix_same_as_start = true;
  const uint64_t before = DeadSeeks(db.get());
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  it->Seek(Prefix(7));
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
  EXPECT_EQ(DeadSeeks(db.get()), before + 1) << "the dead prefix was not answered from the counts";
  it->Seek(Prefix(8));  // a live prefix: RocksDB's Seek
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key().ToString(), Key(8, 0));
  std::unique_ptr<rocksdb::Iterator> theirs(db->GetBaseDB()->NewIterator(ro));
  theirs->Seek(Prefix(7));
  EXPECT_FALSE(theirs->Valid());
  it.reset();
  theirs.reset();
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// Waits until the index serves again (trusted, the world watch settled):
// an absent key's Get is answered from it.
bool Serving(LiveKeyDB* db) {
  for (int i = 0; i < 12000; ++i) {
    const uint64_t before = db->GetLiveKeyStats().short_circuited;
    std::string v;
    db->Get(ReadOptions(), "absent-key", &v).PermitUncheckedError();
    if (db->GetLiveKeyStats().short_circuited > before) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// An index swapped in under an iterator: DeleteFilesInRange (through the
// base DB) drops the file of a prefix's only keys without moving the
// sequence number; the world watch rebuilds every index, whose counts see
// the prefix empty. The iterator, made before, still reads the dropped
// file (its SuperVersion): its Seek must read RocksDB (the serial changed)
// and find the keys. Returns the keys missed, -1 if the premise failed.
int SwapScenario() {
  const std::string dir = TestDir("swap");
  auto db = Open(dir);
  if (!db) return -1;
  for (int i = 0; i < 10; ++i) {
    if (!db->Put(WriteOptions(), Key(3, i), "v").ok()) return -1;
  }
  if (!db->Put(WriteOptions(), Key(9, 0), "other").ok()) return -1;
  if (!db->Flush(rocksdb::FlushOptions()).ok()) return -1;
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  if (!db->CompactRange(cro, nullptr, nullptr).ok()) return -1;
  // Two files at the bottom: one per prefix (a split by a separate flush).
  if (!db->Put(WriteOptions(), Key(9, 1), "other").ok()) return -1;
  if (!Serving(db.get())) return -1;
  ReadOptions ro;
  ro.prefix_same_as_start = true;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  it->Seek(Prefix(40));  // (the iterator's SuperVersion checked now, before the drop: only the serial is left)
  const std::string lo = Prefix(0), hi = Prefix(50);
  const rocksdb::Slice b(lo), e(hi);
  if (!rocksdb::DeleteFilesInRange(db->GetBaseDB(), db->DefaultColumnFamily(), &b, &e).ok()) return -1;
  std::string v;
  if (!db->GetBaseDB()->Get(ReadOptions(), Key(3, 0), &v).IsNotFound()) {
    std::fprintf(stderr, "the premise failed: DeleteFilesInRange dropped nothing\n");
    return -1;
  }
  if (!Serving(db.get())) return -1;  // rebuilt: the new counts see prefix 3 empty
  int missed = 0;
  for (int i = 0; i < 10; ++i) {
    it->Seek(Key(3, i));
    if (!it->Valid() || it->key().ToString() != Key(3, i)) ++missed;
  }
  it.reset();
  db->Close().PermitUncheckedError();
  db.reset();
  fs::remove_all(dir);
  std::printf("  %d of 10 keys the iterator still sees missed\n", missed);
  return missed;
}

TEST(LiveKeyDBSeek, IndexSwappedUnderAnIteratorIsNotUsed) { EXPECT_EQ(SwapScenario(), 0); }
TEST(LiveKeyDBSeek, IndexSwappedUnderAnIteratorNegativeControl) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build (fault hooks exist only there)";
#else
  const int missed = UnderFault(dlcbf::internal::LiveKeyFault::kPrefixIgnoresSerial, SwapScenario);
  EXPECT_EQ(missed, 10) << "without the serial, the new index's counts skip what the iterator sees";
#endif
}

// SetOptions installs a shorter prefix extractor (through the base DB, as
// any program holding it may): prefix_same_as_start then returns keys the
// counts (grouped by 4 bytes) never grouped with the target. Once the index
// serves again, the Seek must still read RocksDB. Returns the Seeks that
// missed a key RocksDB's iterator returns.
int ExtractorScenario() {
  const std::string dir = TestDir("extractor");
  auto db = Open(dir);
  if (!db) return -1;
  for (int p = 0; p < 10; ++p) {
    if (!db->Put(WriteOptions(), Key(2 * p + 12, 1), "v").ok()) return -1;  // "p012", "p014", ...
  }
  if (!db->GetBaseDB()->SetOptions({{"prefix_extractor", "rocksdb.FixedPrefix.2"}}).ok()) return -1;
  if (!Serving(db.get())) return -1;
  ReadOptions ro;
  ro.prefix_same_as_start = true;
  std::unique_ptr<rocksdb::Iterator> ours(db->NewIterator(ro));
  std::unique_ptr<rocksdb::Iterator> theirs(db->GetBaseDB()->NewIterator(ro));
  int missed = 0;
  for (int p = 0; p < 10; ++p) {
    const std::string dead = Prefix(2 * p + 11);  // "p011", "p013", ...: no key of their own
    ours->Seek(dead);
    theirs->Seek(dead);
    if (!theirs->Valid()) return -1;  // the premise: the shorter prefix returns the next key
    if (!ours->Valid() || ours->key() != theirs->key()) ++missed;
  }
  ours.reset();
  theirs.reset();
  db->Close().PermitUncheckedError();
  db.reset();
  fs::remove_all(dir);
  std::printf("  %d of 10 Seeks missed a key under the new, shorter prefix\n", missed);
  return missed;
}

TEST(LiveKeyDBSeek, ChangedPrefixExtractorIsNotTrusted) { EXPECT_EQ(ExtractorScenario(), 0); }
TEST(LiveKeyDBSeek, ChangedPrefixExtractorNegativeControl) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build (fault hooks exist only there)";
#else
  const int missed = UnderFault(dlcbf::internal::LiveKeyFault::kPrefixIgnoresExtractor, ExtractorScenario);
  EXPECT_EQ(missed, 10) << "without the SuperVersion's extractor check, the old counts skip keys";
#endif
}

// Without live_prefix_counts, or without prefix_same_as_start, the
// iterator is RocksDB's own: nothing is answered from counts.
TEST(LiveKeyDBSeek, OffByDefault) {
  const std::string dir = TestDir("off");
  LiveKeyIndexOptions io = IndexOptions();
  io.live_prefix_counts = false;
  auto db = Open(dir, Options(), io);
  ASSERT_TRUE(db != nullptr);
  ASSERT_TRUE(db->Put(WriteOptions(), Key(1, 1), "v").ok());
  ASSERT_TRUE(db->Delete(WriteOptions(), Key(1, 1)).ok());
  ReadOptions ro;
  ro.prefix_same_as_start = true;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  it->Seek(Prefix(1));
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(DeadSeeks(db.get()), 0u);
  it.reset();
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// ---- range regions (LiveKeyIndexOptions::live_range_lengths) ---------------

namespace {

uint64_t MovedSeeks(LiveKeyDB* db) { return db->GetLiveKeyStats().moved_seeks; }

// How an iterator of the range oracle reads: in total order on a family
// without a prefix extractor, with total_order_seek on one with an
// extractor, or confined to the target's prefix (prefix_same_as_start).
enum class RangeMode { kNoExtractor, kTotalOrderSeek, kSameAsStart };

struct RangeOracleResult {
  uint64_t walks = 0, differences = 0, moved = 0, dead = 0;
};

// Keys "p%03d%04d" (8 bytes) over 50 prefixes; counts by the first 4 and
// 7 bytes (prefixes, runs of 10). Rounds of Puts, Deletes (most in runs,
// as a queue's consumer deletes its head), DeleteRanges and Merges,
// flushes and compactions between; after each round, Seeks to random
// targets (keys, prefixes, shorter and longer strings, the empty
// string), with and without bounds, at one snapshot and at the latest
// state, each walked forward 5 steps and compared, keys and values, with
// the base DB's iterator made with the same options; then deletes after
// the snapshot and the snapshot's walks again. Returns what it compared.
RangeOracleResult RangeOracle(RangeMode mode, const std::string& name) {
  RangeOracleResult res;
  const std::string dir = TestDir("range_" + name);
  rocksdb::Options o = Options();
  if (mode == RangeMode::kNoExtractor) o.prefix_extractor.reset();
  o.merge_operator = std::make_shared<dlcbf::testing_util::AppendOperator>();
  LiveKeyIndexOptions io = IndexOptions();
  io.live_range_lengths = {4, 7};
  auto db = Open(dir, o, io);
  if (!db) return res;
  rocksdb::DB* base = db->GetBaseDB();
  std::mt19937_64 rng(20261130 + static_cast<int>(mode));
  auto U = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  // (With prefix_same_as_start, a target outside the extractor's domain is
  // the caller's error: RocksDB asserts it.)
  const int kinds = mode == RangeMode::kSameAsStart ? 3 : 6;
  auto target = [&]() -> std::string {
    switch (U(kinds)) {
      case 0: return Key(U(51), U(45));
      case 1: return Prefix(U(51));
      case 2: return Prefix(U(51)) + std::to_string(U(10));  // inside a prefix, between runs
      case 3: return Prefix(U(51)).substr(0, 1 + U(3));     // shorter than a prefix
      case 4: return Key(U(50), U(40)) + "\xff";             // longer than any key
      default: return U(2) ? std::string() : std::string("p0");
    }
  };
  auto compare = [&](const ReadOptions& ro, const std::string& t, const std::string& what) {
    std::unique_ptr<rocksdb::Iterator> ours(db->NewIterator(ro)), theirs(base->NewIterator(ro));
    ours->Seek(t);
    theirs->Seek(t);
    std::string a, b;
    for (int j = 0; j < 5 && ours->Valid(); ++j, ours->Next()) a += ours->key().ToString() + "=" + ours->value().ToString() + ";";
    for (int j = 0; j < 5 && theirs->Valid(); ++j, theirs->Next()) b += theirs->key().ToString() + "=" + theirs->value().ToString() + ";";
    a += "|" + ours->status().ToString();
    b += "|" + theirs->status().ToString();
    ++res.walks;
    if (a != b) {
      if (res.differences++ < 3) {
        std::printf("  difference at Seek(\"%s\") %s:\n    livekey %.120s\n    base    %.120s\n", t.c_str(), what.c_str(),
                    a.c_str(), b.c_str());
      }
    }
  };
  std::string lower, upper;
  rocksdb::Slice lo_slice, up_slice;
  auto options = [&](const rocksdb::Snapshot* snap, int bounds) {
    ReadOptions ro;
    ro.snapshot = snap;
    if (mode == RangeMode::kTotalOrderSeek) ro.total_order_seek = true;
    if (mode == RangeMode::kSameAsStart) ro.prefix_same_as_start = true;
    if (bounds & 1) {
      lower = Key(U(50), U(40));
      lo_slice = lower;
      ro.iterate_lower_bound = &lo_slice;
    }
    if (bounds & 2) {
      upper = Key(U(50), U(40));
      if ((bounds & 1) && upper < lower) upper.swap(lower), lo_slice = lower;
      up_slice = upper;
      ro.iterate_upper_bound = &up_slice;
    }
    return ro;
  };
  for (int round = 0; round < 10; ++round) {
    for (int op = 0; op < 2500; ++op) {
      const int p = U(50), i = U(40);
      const int what = U(100);
      WriteOptions wo;
      Status s;
      if (what < 40) {
        s = db->Put(wo, Key(p, i), "v" + std::to_string(round));
      } else if (what < 60) {
        s = db->Delete(wo, Key(p, i));
      } else if (what < 70) {
        // A run from the head of a prefix (a queue's consumer).
        const int n = 1 + U(40);
        for (int j = 0; j < n && s.ok(); ++j) s = db->Delete(wo, Key(p, j));
      } else if (what < 77) {
        s = db->DeleteRange(wo, db->DefaultColumnFamily(), Key(p, i), Key(p, i + 10));
      } else if (what < 87) {
        s = db->Merge(wo, Key(p, i), "m");
      } else {
        s = db->Put(wo, Key(p, i), std::string(1 + U(20), 'x'));
      }
      if (!s.ok()) {
        ADD_FAILURE() << s.ToString();
        return res;
      }
    }
    if (round % 3 == 1 && !db->Flush(rocksdb::FlushOptions()).ok()) return res;
    if (round % 4 == 3 && !db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).ok()) return res;
    if (!db->WaitForDeferredChecks(60000)) return res;
    const rocksdb::Snapshot* snap = db->GetSnapshot();
    for (int k = 0; k < 300; ++k) {
      const bool at_snapshot = k % 2 == 1;
      const ReadOptions ro = options(at_snapshot ? snap : nullptr, U(4) == 0 ? U(4) : 0);
      compare(ro, target(), "round " + std::to_string(round) + (at_snapshot ? " at a snapshot" : ""));
    }
    // Deletes after the snapshot (whole prefixes, key by key): the
    // snapshot's Seeks must still see what was there.
    for (int p = round % 7; p < 50; p += 7) {
      for (int j = 0; j < 40; ++j) {
        if (!db->Delete(WriteOptions(), Key(p, j)).ok()) return res;
      }
    }
    if (!db->WaitForDeferredChecks(60000)) return res;
    for (int k = 0; k < 100; ++k) {
      const ReadOptions ro = options(snap, 0);
      compare(ro, k % 2 ? Prefix(round % 7 + 7 * U(7)) : target(),
              "round " + std::to_string(round) + " at a snapshot from before the deletes");
    }
    db->ReleaseSnapshot(snap);
  }
  res.moved = MovedSeeks(db.get());
  res.dead = DeadSeeks(db.get());
  db->Close().PermitUncheckedError();
  db.reset();
  fs::remove_all(dir);
  std::printf("  %llu walks compared, %llu differences, %llu Seeks moved, %llu answered dead\n",
              static_cast<unsigned long long>(res.walks), static_cast<unsigned long long>(res.differences),
              static_cast<unsigned long long>(res.moved), static_cast<unsigned long long>(res.dead));
  return res;
}

class LiveKeyDBRangeSeek : public ::testing::TestWithParam<RangeMode> {};

std::string ModeName(const ::testing::TestParamInfo<RangeMode>& info) {
  switch (info.param) {
    case RangeMode::kNoExtractor: return "NoExtractor";
    case RangeMode::kTotalOrderSeek: return "TotalOrderSeek";
    default: return "SameAsStart";
  }
}

}  // namespace

TEST_P(LiveKeyDBRangeSeek, DifferentialOracle) {
  const RangeOracleResult r = RangeOracle(GetParam(), ModeName({GetParam(), 0}));
  EXPECT_GT(r.walks, 3000u);
  EXPECT_EQ(r.differences, 0u);
  EXPECT_GT(r.moved, 0u) << "no Seek was moved: the oracle tested nothing of the range counts";
}

// The oracle can fail: a Seek moved one region too far (LiveKeyFault::
// kSeekSkipsALiveRegion) skips live keys, and the walks show it.
TEST_P(LiveKeyDBRangeSeek, DifferentialOracleNegativeControl) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build (fault hooks exist only there)";
#else
  const RangeOracleResult r = UnderFault(dlcbf::internal::LiveKeyFault::kSeekSkipsALiveRegion,
                                         [&] { return RangeOracle(GetParam(), ModeName({GetParam(), 0}) + "_control"); });
  EXPECT_GT(r.differences, 0u) << "the oracle missed Seeks moved past live keys";
#endif
}

// (Named LiveKeyDB...: tools/run.sh runs LiveKeyDB's tests under TSan
// without its deadlock detector, which cannot follow a rebuild's LockAll.)
INSTANTIATE_TEST_SUITE_P(LiveKeyDBRangeSeekModes, LiveKeyDBRangeSeek,
                         ::testing::Values(RangeMode::kNoExtractor, RangeMode::kTotalOrderSeek, RangeMode::kSameAsStart),
                         ModeName);

// A queue (#5265's consumers): 16-byte keys (an 8-byte name, then a
// big-endian counter), 100,000 appended, 99 % deleted from the head and not
// compacted. The consumer's Seek to the head is moved past the dead regions
// (lengths 14 and 15: runs of 65,536 and 256 counters) and steps over at
// most one region's tombstones, where the base DB's steps over all of them.
TEST(LiveKeyDBRangeSeekQueue, HeadSeekStepsOverOneRegionAtMost) {
  const std::string dir = TestDir("queue");
  rocksdb::Options o = Options();
  o.prefix_extractor.reset();
  o.disable_auto_compactions = true;
  LiveKeyIndexOptions io = IndexOptions();
  io.expected_keys = 200000;
  io.live_range_lengths = {14, 15};
  auto db = Open(dir, o, io);
  ASSERT_TRUE(db != nullptr);
  auto key = [](uint64_t i) {
    std::string k("/queue//");
    for (int b = 7; b >= 0; --b) k.push_back(static_cast<char>((i >> (8 * b)) & 0xff));
    return k;
  };
  constexpr uint64_t kKeys = 100000, kConsumed = 99000;
  WriteOptions wo;
  wo.disableWAL = true;
  for (uint64_t i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Put(wo, key(i), "v").ok());
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  for (uint64_t i = 0; i < kConsumed; ++i) ASSERT_TRUE(db->Delete(wo, key(i)).ok());
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  ASSERT_TRUE(db->WaitForDeferredChecks(60000));
  ASSERT_TRUE(Serving(db.get()));
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  auto seek = [&](rocksdb::DB* d, uint64_t* skipped) {
    rocksdb::get_perf_context()->Reset();
    std::unique_ptr<rocksdb::Iterator> it(d->NewIterator(ReadOptions()));
    it->Seek("/queue//");
    *skipped = rocksdb::get_perf_context()->internal_delete_skipped_count;
    return it->Valid() ? it->key().ToString() : std::string("(invalid)");
  };
  uint64_t ours_skipped = 0, theirs_skipped = 0;
  const uint64_t moved = MovedSeeks(db.get());
  EXPECT_EQ(seek(db.get(), &ours_skipped), key(kConsumed));
  EXPECT_EQ(seek(db->GetBaseDB(), &theirs_skipped), key(kConsumed));
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  std::printf("  the head Seek stepped over %llu tombstones (base DB: %llu)\n",
              static_cast<unsigned long long>(ours_skipped), static_cast<unsigned long long>(theirs_skipped));
  EXPECT_EQ(MovedSeeks(db.get()), moved + 1);
  EXPECT_GE(theirs_skipped, kConsumed);
  EXPECT_LT(ours_skipped, 256u);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// Bad live_range_lengths are refused at Open, naming the field.
TEST(LiveKeyDBRangeSeekQueue, BadLengthsAreRefused) {
  const std::vector<std::vector<uint32_t>> bad = {{0}, {65}, {8, 8}, {9, 8}, {1, 2, 3, 4, 5}};
  for (const auto& lengths : bad) {
    LiveKeyIndexOptions io = IndexOptions();
    io.live_range_lengths = lengths;
    const Status s = io.Validate();
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.ToString().find("live_range_lengths"), std::string::npos) << s.ToString();
    LiveKeyDB* raw = nullptr;
    const Status o = LiveKeyDB::Open(Options(), io, TestDir("bad"), &raw);
    EXPECT_TRUE(o.IsInvalidArgument()) << o.ToString();
    EXPECT_EQ(raw, nullptr);
  }
  LiveKeyIndexOptions io = IndexOptions();
  io.live_range_lengths = {1, 2, 63, 64};
  EXPECT_TRUE(io.Validate().ok());
}

// NewIterators: one iterator per family over one view, each planned as
// NewIterator's: runs of dead keys in both families are moved past, and
// every walk equals the base DB's NewIterators'.
TEST(LiveKeyDBRangeSeekQueue, NewIteratorsPlanEachFamily) {
  const std::string dir = TestDir("iterators");
  rocksdb::Options o = Options();
  o.prefix_extractor.reset();
  LiveKeyIndexOptions io = IndexOptions();
  io.live_range_lengths = {4, 7};
  auto db = Open(dir, o, io);
  ASSERT_TRUE(db != nullptr);
  rocksdb::ColumnFamilyHandle* cf1 = nullptr;
  ASSERT_TRUE(db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(o), "cf1", &cf1).ok());
  std::vector<rocksdb::ColumnFamilyHandle*> fams = {db->DefaultColumnFamily(), cf1};
  for (auto* h : fams) {
    for (int p = 0; p < 10; ++p) {
      for (int i = 0; i < 40; ++i) ASSERT_TRUE(db->Put(WriteOptions(), h, Key(p, i), "v" + std::to_string(p)).ok());
    }
    // Prefixes 2-6 consumed: the Seek to p002 moves to p007.
    for (int p = 2; p < 7; ++p) {
      for (int i = 0; i < 40; ++i) ASSERT_TRUE(db->Delete(WriteOptions(), h, Key(p, i)).ok());
    }
  }
  ASSERT_TRUE(db->WaitForDeferredChecks(60000));
  ASSERT_TRUE(Serving(db.get()));
  std::vector<rocksdb::Iterator*> ours, theirs;
  ASSERT_TRUE(db->NewIterators(ReadOptions(), fams, &ours).ok());
  ASSERT_TRUE(db->GetBaseDB()->NewIterators(ReadOptions(), fams, &theirs).ok());
  ASSERT_EQ(ours.size(), 2u);
  const uint64_t moved = MovedSeeks(db.get());
  for (size_t f = 0; f < 2; ++f) {
    EXPECT_EQ(Walk(ours[f], Prefix(2), false), Walk(theirs[f], Prefix(2), false)) << "family " << f;
    ours[f]->Seek(Prefix(2));
    ASSERT_TRUE(ours[f]->Valid());
    EXPECT_EQ(ours[f]->key().ToString(), Key(7, 0));
  }
  EXPECT_EQ(MovedSeeks(db.get()), moved + 4) << "each family's Seeks were not planned from the counts";
  for (auto* it : ours) delete it;
  for (auto* it : theirs) delete it;
  ASSERT_TRUE(db->DestroyColumnFamilyHandle(cf1).ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

namespace {

// Runs of dead keys in prefixes 2-6 of 10 (40 keys each) in a family
// without a prefix extractor (or with a 4-byte one), counted by lengths
// {4, 7}; then every prefix's Seek through LiveKeyDB's iterator and the
// base DB's with `ro` (made by make_ro for each), walked 5 steps. Returns
// the walks that differ (-1: the setup failed); *moved: Seeks moved.
int DeadRunsScenario(const std::string& name, rocksdb::Options o,
                     const std::function<ReadOptions()>& make_ro, uint64_t* moved) {
  const std::string dir = TestDir(name);
  LiveKeyIndexOptions io = IndexOptions();
  io.live_range_lengths = {4, 7};
  auto db = Open(dir, o, io);
  if (!db) return -1;
  for (int p = 0; p < 10; ++p) {
    for (int i = 0; i < 40; ++i) {
      if (!db->Put(WriteOptions(), Key(p, i), "v").ok()) return -1;
    }
  }
  if (!db->Flush(rocksdb::FlushOptions()).ok()) return -1;
  for (int p = 2; p < 7; ++p) {
    for (int i = 0; i < 40; ++i) {
      if (!db->Delete(WriteOptions(), Key(p, i)).ok()) return -1;
    }
  }
  if (!db->Flush(rocksdb::FlushOptions()).ok()) return -1;
  if (!db->WaitForDeferredChecks(60000) || !Serving(db.get())) return -1;
  const uint64_t before = MovedSeeks(db.get());
  int differ = 0;
  for (int p = 0; p < 10; ++p) {
    const ReadOptions ro = make_ro();
    std::unique_ptr<rocksdb::Iterator> ours(db->NewIterator(ro)), theirs(db->GetBaseDB()->NewIterator(ro));
    const std::string a = Walk(ours.get(), Prefix(p) + "1", false), b = Walk(theirs.get(), Prefix(p) + "1", false);
    if (a != b) {
      if (differ++ == 0) std::printf("  Seek(%s): livekey %.80s, base %.80s\n", (Prefix(p) + "1").c_str(), a.c_str(), b.c_str());
    }
  }
  *moved = MovedSeeks(db.get()) - before;
  db->Close().PermitUncheckedError();
  db.reset();
  fs::remove_all(dir);
  std::printf("  %d of 10 walks differ; %llu Seeks moved\n", differ, static_cast<unsigned long long>(*moved));
  return differ;
}

}  // namespace

// A family ordered by ReverseBytewiseComparator: its range regions are not
// contiguous in its order, so none is counted and no Seek is moved (a move
// to the region's successor would return a key on the wrong side).
TEST(LiveKeyDBRangeSeekQueue, ReverseComparatorIsNeverMoved) {
  rocksdb::Options o = Options();
  o.prefix_extractor.reset();
  o.comparator = rocksdb::ReverseBytewiseComparator();
  uint64_t moved = 0;
  EXPECT_EQ(DeadRunsScenario("reverse", o, [] { return ReadOptions(); }, &moved), 0);
  EXPECT_EQ(moved, 0u);
}

// total_order_seek with prefix_same_as_start: RocksDB still stops at the
// Seek target's prefix, so a move across prefixes would return keys of
// another prefix; such iterators are RocksDB's own.
TEST(LiveKeyDBRangeSeekQueue, TotalOrderWithSameAsStartIsNeverMoved) {
  uint64_t moved = 0;
  EXPECT_EQ(DeadRunsScenario("total_same", Options(),
                             [] {
                               ReadOptions ro;
                               ro.total_order_seek = true;
                               ro.prefix_same_as_start = true;
                               return ro;
                             },
                             &moved),
            0);
  EXPECT_EQ(moved, 0u);
}

// ReadOptions::table_filter hiding the file of the deletes: the base DB's
// iterator shows the older versions the counts call dead; such iterators
// are RocksDB's own.
TEST(LiveKeyDBRangeSeekQueue, TableFilterIsNeverMoved) {
  rocksdb::Options o = Options();
  o.prefix_extractor.reset();
  uint64_t moved = 0;
  EXPECT_EQ(DeadRunsScenario("table_filter", o,
                             [] {
                               ReadOptions ro;
                               ro.table_filter = [](const rocksdb::TableProperties& tp) { return tp.num_deletions == 0; };
                               return ro;
                             },
                             &moved),
            0);
  EXPECT_EQ(moved, 0u);
}

// The premise of the three above: with plain ReadOptions on a bytewise
// family, the same scenario moves Seeks past the dead runs and agrees.
TEST(LiveKeyDBRangeSeekQueue, DeadRunsAreMovedPast) {
  rocksdb::Options o = Options();
  o.prefix_extractor.reset();
  uint64_t moved = 0;
  EXPECT_EQ(DeadRunsScenario("dead_runs", o, [] { return ReadOptions(); }, &moved), 0);
  EXPECT_GE(moved, 5u);
}

// Refresh: the iterator reads the latest state from then on, and so do
// its plans. Made before a prefix's keys are deleted, its Seek there is
// RocksDB's (they were live at its number); refreshed, the Seek is moved
// past them; both as the base DB's iterator, refreshed alike.
TEST(LiveKeyDBRangeSeekQueue, RefreshMovesToTheLatestState) {
  const std::string dir = TestDir("refresh");
  rocksdb::Options o = Options();
  o.prefix_extractor.reset();
  LiveKeyIndexOptions io = IndexOptions();
  io.live_range_lengths = {4, 7};
  auto db = Open(dir, o, io);
  ASSERT_TRUE(db != nullptr);
  for (int p = 0; p < 6; ++p) {
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key(p, i), "v").ok());
  }
  ASSERT_TRUE(Serving(db.get()));
  std::unique_ptr<rocksdb::Iterator> ours(db->NewIterator(ReadOptions())), theirs(db->GetBaseDB()->NewIterator(ReadOptions()));
  for (int p = 1; p < 5; ++p) {
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(db->Delete(WriteOptions(), Key(p, i)).ok());
  }
  ASSERT_TRUE(db->WaitForDeferredChecks(60000));
  uint64_t moved = MovedSeeks(db.get());
  EXPECT_EQ(Walk(ours.get(), Key(1, 0), false), Walk(theirs.get(), Key(1, 0), false));
  ours->Seek(Key(1, 0));
  ASSERT_TRUE(ours->Valid());
  EXPECT_EQ(ours->key().ToString(), Key(1, 0)) << "a key live at the iterator's number was skipped";
  EXPECT_EQ(MovedSeeks(db.get()), moved) << "a region deleted after the iterator was made counted as dead";
  ASSERT_TRUE(ours->Refresh().ok());
  ASSERT_TRUE(theirs->Refresh().ok());
  moved = MovedSeeks(db.get());
  EXPECT_EQ(Walk(ours.get(), Prefix(1), false), Walk(theirs.get(), Prefix(1), false));
  ours->Seek(Prefix(1));
  ASSERT_TRUE(ours->Valid());
  EXPECT_EQ(ours->key().ToString(), Key(5, 0));
  EXPECT_GT(MovedSeeks(db.get()), moved) << "the refreshed iterator's Seek was not moved";
  ours.reset();
  theirs.reset();
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// The transaction routes: the TransactionDB and OptimisticTransactionDB
// that LiveKeyDB hands out make their DB-level iterators through it, so
// their Seeks are planned too (a transaction's own GetIterator is
// RocksDB's, over its write batch).
TEST(LiveKeyDBRangeSeekQueue, TransactionRoutesPlanTheirIterators) {
  for (bool optimistic : {false, true}) {
    const std::string dir = TestDir(optimistic ? "occ" : "txn");
    rocksdb::Options o = Options();
    o.prefix_extractor.reset();
    LiveKeyIndexOptions io = IndexOptions();
    io.live_range_lengths = {4, 7};
    rocksdb::DB* db = nullptr;
    rocksdb::TransactionDB* tdb = nullptr;
    rocksdb::OptimisticTransactionDB* odb = nullptr;
    if (optimistic) {
      ASSERT_TRUE(LiveKeyDB::OpenOptimisticTransactionDB(o, io, dir, &odb).ok());
      db = odb;
    } else {
      ASSERT_TRUE(LiveKeyDB::OpenTransactionDB(o, rocksdb::TransactionDBOptions(), io, dir, &tdb).ok());
      db = tdb;
    }
    LiveKeyDB* live = LiveKeyDB::FromTransactionDB(db);
    ASSERT_TRUE(live != nullptr);
    for (int p = 0; p < 6; ++p) {
      for (int i = 0; i < 40; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key(p, i), "v").ok());
    }
    for (int p = 1; p < 5; ++p) {
      for (int i = 0; i < 40; ++i) ASSERT_TRUE(db->Delete(WriteOptions(), Key(p, i)).ok());
    }
    ASSERT_TRUE(live->WaitForDeferredChecks(60000));
    ASSERT_TRUE(Serving(live));
    const uint64_t moved = MovedSeeks(live);
    {
      std::unique_ptr<rocksdb::Iterator> ours(db->NewIterator(ReadOptions())),
          theirs(live->GetBaseDB()->NewIterator(ReadOptions()));
      EXPECT_EQ(Walk(ours.get(), Key(1, 0), false), Walk(theirs.get(), Key(1, 0), false));
      ours->Seek(Key(1, 0));
      ASSERT_TRUE(ours->Valid());
      EXPECT_EQ(ours->key().ToString(), Key(5, 0));
    }
    EXPECT_GT(MovedSeeks(live), moved) << (optimistic ? "optimistic" : "pessimistic") << ": the Seek was not planned";
    delete db;
    fs::remove_all(dir);
  }
}
