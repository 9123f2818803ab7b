// Regression tests of LiveKeyDB's closed world: each way a key can become
// visible in RocksDB without an indexed LiveKeyDB write that moves no
// sequence number, or that an index file could carry past a restart (the
// threat model in filter_policy/rocksdb/live_key_db/README.md). Each test
// reproduces one path with the public API and checks the promise: a key
// the base DB holds is never NotFound through LiveKeyDB. Each has a
// negative control that puts the old behaviour back with a fault hook and
// must lose keys.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/live_key_db.h"
#include "filter_policy/testing/live_key_db_testing.h"
#include "rocksdb/compaction_filter.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb_test_util.h"

namespace fs = std::filesystem;
using dlcbf::LiveKeyDB;
using dlcbf::LiveKeyIndexOptions;
using dlcbf::LiveKeyStats;
using dlcbf::testing_util::Diag;
using dlcbf::internal::LiveKeyFault;
using rocksdb::ReadOptions;
using rocksdb::Status;
using rocksdb::WriteOptions;

namespace {

std::string TestDir(const std::string& name) {
  return dlcbf::testing_util::TestDir("live_key_db_closed_world_test", name);
}

std::string Key(const char* prefix, int i) {
  char b[32];
  std::snprintf(b, sizeof(b), "%s%06d", prefix, i);
  return b;
}

std::vector<std::string> Keys(const char* prefix, int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(Key(prefix, i));
  return v;
}

// Keys the base DB holds that LiveKeyDB answers NotFound (Get or MultiGet);
// -1000 when the base holds none of them (the scenario did not set up).
int CountLost(LiveKeyDB* db, const std::vector<std::string>& keys) {
  int lost = 0, held = 0;
  for (const std::string& k : keys) {
    std::string v;
    if (!db->GetBaseDB()->Get(ReadOptions(), k, &v).ok()) continue;
    ++held;
    if (db->Get(ReadOptions(), k, &v).IsNotFound()) {
      ++lost;
      continue;
    }
    std::vector<std::string> vals;
    const std::vector<Status> st = db->MultiGet(ReadOptions(), {db->DefaultColumnFamily()}, {rocksdb::Slice(k)}, &vals);
    if (st[0].IsNotFound()) ++lost;
  }
  std::printf("  %d of %d keys the base DB holds answered NotFound\n", lost, held);
  return held == 0 ? -1000 : lost;
}

bool WaitFor(const std::function<bool()>& done, int timeout_ms = 60000) {
  for (int waited = 0; !done(); waited += 5) {
    if (waited > timeout_ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class FaultScope {
 public:
  explicit FaultScope(LiveKeyFault f) { dlcbf::internal::SetLiveKeyFaultForTesting(f); }
  ~FaultScope() { dlcbf::internal::SetLiveKeyFaultForTesting(LiveKeyFault::kNone); }
};

#ifdef DLCBF_TESTING
#define NEEDS_FAULT_HOOKS()
#else
#define NEEDS_FAULT_HOOKS() GTEST_SKIP() << "needs the DLCBF_TESTING build (fault hooks exist only there)"
#endif

std::unique_ptr<LiveKeyDB> OpenLive(const rocksdb::Options& o, const LiveKeyIndexOptions& io, const std::string& dir) {
  LiveKeyDB* raw = nullptr;
  const Status s = LiveKeyDB::Open(o, io, dir, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::unique_ptr<LiveKeyDB> db(raw);
  if (db) {
    EXPECT_TRUE(db->WaitForBackgroundRebuilds(60000));
  }
  return db;
}

rocksdb::Options Plain() {
  rocksdb::Options o;
  o.create_if_missing = true;
  return o;
}

// Copies the open DB's files as a crash would leave them.
void CrashImage(LiveKeyDB* db, const std::string& dir, const std::string& image) {
  EXPECT_TRUE(db->FlushWAL(true).ok());
  EXPECT_TRUE(db->PauseBackgroundWork().ok());
  EXPECT_TRUE(db->DisableFileDeletions().ok());
  fs::copy(dir, image, fs::copy_options::recursive);
#if ROCKSDB_MAJOR >= 9
  EXPECT_TRUE(db->EnableFileDeletions().ok());
#else
  EXPECT_TRUE(db->EnableFileDeletions(/*force=*/true).ok());
#endif
  EXPECT_TRUE(db->ContinueBackgroundWork().ok());
}

// ---- 1. persistence respects trust ---------------------------------------------------

// Writes through GetBaseDB() that nothing read before Close: Close must not
// save an index that misses them (the file's sequence number would equal
// the DB's, and the next Open would load it as exact). `read_first`: a Get
// detects them first, and Close comes while the rebuild may still run.
int CloseAfterBaseWritesScenario(bool read_first) {
  const std::string dir = TestDir(read_first ? "close_detected" : "close_undetected");
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  const std::vector<std::string> theirs = Keys("base", 200);
  {
    auto db = OpenLive(Plain(), io, dir);
    if (!db) return -1;
    for (const std::string& k : Keys("own", 200)) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
    for (const std::string& k : theirs) EXPECT_TRUE(db->GetBaseDB()->Put(WriteOptions(), k, "v").ok());
    if (read_first) {
      std::string v;
      db->Get(ReadOptions(), "absent", &v).PermitUncheckedError();
    }
    EXPECT_TRUE(db->Close().ok());
  }
  auto db = OpenLive(Plain(), io, dir);
  if (!db) return -1;
  const int lost = CountLost(db.get(), theirs);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  return lost;
}

TEST(LiveKeyClosedWorld, CloseAfterBaseWritesLosesNoKey) { EXPECT_EQ(CloseAfterBaseWritesScenario(false), 0); }
TEST(LiveKeyClosedWorld, CloseAfterDetectedBaseWritesLosesNoKey) { EXPECT_EQ(CloseAfterBaseWritesScenario(true), 0); }
TEST(LiveKeyClosedWorld, CloseAfterBaseWritesNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kSaveUntrustedIndex);
  EXPECT_GT(CloseAfterBaseWritesScenario(false), 0) << "an index file saved past unseen writes must lose keys";
}

// A background checkpoint after writes through GetBaseDB(), then a crash:
// the checkpoint must not claim a sequence number past writes it did not
// count.
int CheckpointAfterBaseWritesScenario() {
  const std::string dir = TestDir("ckpt_base");
  const std::string image = TestDir("ckpt_base_image");
  auto logger = std::make_shared<dlcbf::testing_util::CapturingLogger>();
  rocksdb::Options o = Plain();
  o.info_log = logger;
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.checkpoint_interval_seconds = 0.001;
  const std::vector<std::string> theirs = Keys("base", 200);
  {
    auto db = OpenLive(o, io, dir);
    if (!db) return -1;
    for (const std::string& k : Keys("own", 200)) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
    for (const std::string& k : theirs) EXPECT_TRUE(db->GetBaseDB()->Put(WriteOptions(), k, "v").ok());
    const uint64_t before = db->GetLiveKeyStats().checkpoints;
    EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());  // (requests a checkpoint)
    // Written (the old behaviour) or refused (the LOG says so).
    EXPECT_TRUE(WaitFor([&] {
      return db->GetLiveKeyStats().checkpoints > before ||
             logger->All().find("no checkpoint while the index does not account") != std::string::npos;
    }));
    CrashImage(db.get(), dir, image);
    EXPECT_TRUE(db->Close().ok());
  }
  auto db = OpenLive(Plain(), io, image);
  if (!db) return -1;
  const int lost = CountLost(db.get(), theirs);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove_all(image);
  return lost;
}

TEST(LiveKeyClosedWorld, CheckpointAfterBaseWritesLosesNoKey) { EXPECT_EQ(CheckpointAfterBaseWritesScenario(), 0); }
TEST(LiveKeyClosedWorld, CheckpointAfterBaseWritesNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kSaveUntrustedIndex);
  EXPECT_GT(CheckpointAfterBaseWritesScenario(), 0) << "a checkpoint saved past unseen writes must lose keys";
}

// ---- 2. an ingestion through the base DB at sequence number 0 ---------------------------

int IngestAtSeqnoZeroScenario() {
  const std::string dir = TestDir("ingest_zero");
  const std::string sst = dir + "_ext.sst";
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.persist_index = false;
  auto db = OpenLive(Plain(), io, dir);
  if (!db) return -1;
  for (const std::string& k : Keys("own", 100)) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
  const std::vector<std::string> ingested = Keys("ing", 1000);  // (sorts before "own": no overlap)
  {
    rocksdb::SstFileWriter w(rocksdb::EnvOptions(), Plain());
    EXPECT_TRUE(w.Open(sst).ok());
    for (const std::string& k : ingested) EXPECT_TRUE(w.Put(k, "i").ok());
    EXPECT_TRUE(w.Finish().ok());
  }
  const uint64_t seq = db->GetLatestSequenceNumber();
  EXPECT_TRUE(db->GetBaseDB()->IngestExternalFile({sst}, rocksdb::IngestExternalFileOptions()).ok());
  EXPECT_EQ(db->GetLatestSequenceNumber(), seq) << "the premise: an ingestion at global sequence number 0";
  const int lost = CountLost(db.get(), ingested);
  // Detected, then rebuilt: the indexes serve again and hold the keys.
  EXPECT_TRUE(WaitFor([&] {
    const LiveKeyStats st = db->GetLiveKeyStats();
    return lost > 0 || (st.indexes_trusted && st.trust_recoveries > 0);
  }));
  const int lost_after = lost > 0 ? 0 : CountLost(db.get(), ingested);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove(sst);
  return lost + lost_after;
}

TEST(LiveKeyClosedWorld, IngestionAtSeqnoZeroLosesNoKey) { EXPECT_EQ(IngestAtSeqnoZeroScenario(), 0); }
TEST(LiveKeyClosedWorld, IngestionAtSeqnoZeroNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kIgnoreTableFileChanges);
  EXPECT_GT(IngestAtSeqnoZeroScenario(), 0) << "an unseen ingestion at sequence number 0 must lose keys";
}

// An ingestion at sequence number 0 while the indexes are being rebuilt
// after an earlier unseen write: the rebuild's scan began before it, so the
// recovery must not end there (it scans again).
int ChangeDuringRecoveryScenario() {
  const std::string dir = TestDir("change_during_recovery");
  const std::string sst = dir + "_ext.sst";
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.persist_index = false;
  auto db = OpenLive(Plain(), io, dir);
  if (!db) return -1;
  for (const std::string& k : Keys("own", 100)) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
  const std::vector<std::string> ingested = Keys("ing", 500);
  {
    rocksdb::SstFileWriter w(rocksdb::EnvOptions(), Plain());
    EXPECT_TRUE(w.Open(sst).ok());
    for (const std::string& k : ingested) EXPECT_TRUE(w.Put(k, "i").ok());
    EXPECT_TRUE(w.Finish().ok());
  }
  dlcbf::internal::SetLiveKeyRebuildPauseForTesting(true);
  EXPECT_TRUE(db->GetBaseDB()->Put(WriteOptions(), "base-key", "v").ok());
  std::string v;
  EXPECT_TRUE(db->Get(ReadOptions(), "base-key", &v).ok());  // (detects it: a recovery starts)
  const bool scanning = WaitFor([] { return dlcbf::internal::GetLiveKeyRebuildWaitingForTesting(); });
  EXPECT_TRUE(scanning) << "the premise: the recovery's rebuild scan is under way";
  EXPECT_TRUE(db->GetBaseDB()->IngestExternalFile({sst}, rocksdb::IngestExternalFileOptions()).ok());
  dlcbf::internal::SetLiveKeyRebuildPauseForTesting(false);
  EXPECT_TRUE(WaitFor([&] {
    const LiveKeyStats st = db->GetLiveKeyStats();
    return st.indexes_trusted && st.trust_recoveries > 0;
  }));
  const int lost = CountLost(db.get(), ingested);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove(sst);
  return scanning ? lost : -1;
}

TEST(LiveKeyClosedWorld, UnseenChangeDuringRecoveryLosesNoKey) {
  NEEDS_FAULT_HOOKS();
  EXPECT_EQ(ChangeDuringRecoveryScenario(), 0);
}
TEST(LiveKeyClosedWorld, UnseenChangeDuringRecoveryNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kRecoveryIgnoresLaterChanges);
  EXPECT_GT(ChangeDuringRecoveryScenario(), 0) << "a recovery that ends past a later change must lose keys";
}

// ---- 3. a checkpoint brought forward over a hash memtable -------------------------------

rocksdb::Options HashMemtableOptions() {
  rocksdb::Options o = Plain();
  o.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(3));
  o.memtable_factory.reset(rocksdb::NewHashSkipListRepFactory());
  o.allow_concurrent_memtable_write = false;  // (a hash memtable takes one writer)
  o.avoid_flush_during_recovery = true;       // the replayed WAL stays in the memtable
  return o;
}

int HashMemtableReplayScenario() {
  const std::string dir = TestDir("hash_memtable");
  const std::string image = TestDir("hash_memtable_image");
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.checkpoint_interval_seconds = 3600;  // the first flush's checkpoint only
  const std::vector<std::string> late = Keys("new", 500);
  {
    auto db = OpenLive(HashMemtableOptions(), io, dir);
    if (!db) return -1;
    for (const std::string& k : Keys("old", 500)) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
    EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    EXPECT_TRUE(WaitFor([&] { return db->GetLiveKeyStats().checkpoints > 0; }));
    for (const std::string& k : late) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
    CrashImage(db.get(), dir, image);
    EXPECT_TRUE(db->Close().ok());
  }
  auto db = OpenLive(HashMemtableOptions(), io, image);
  if (!db) return -1;
  const LiveKeyStats st = db->GetLiveKeyStats();
  EXPECT_EQ(Diag(st, "checkpoint_replays"), 1u) << "the premise: the checkpoint is brought forward";
  const int lost = CountLost(db.get(), late);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove_all(image);
  return lost;
}

TEST(LiveKeyClosedWorld, HashMemtableReplayLosesNoKey) { EXPECT_EQ(HashMemtableReplayScenario(), 0); }
TEST(LiveKeyClosedWorld, HashMemtableReplayNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kReplayWithoutTotalOrder);
  EXPECT_GT(HashMemtableReplayScenario(), 0) << "a replay that cannot read the hash memtable must lose keys";
}

// ---- 4. DeleteFilesInRange uncovers older versions -----------------------------------

// Puts at L2 (with a key outside the range, so that file stays), their
// Deletes alone in an L1 file; DeleteFilesInRange over the deleted keys
// drops the L1 file and the Puts are live again. `reopen`: the drop is
// made by a plain RocksDB while LiveKeyDB is closed.
int DeleteFilesScenario(bool reopen) {
  const std::string dir = TestDir(reopen ? "delete_files_closed" : "delete_files");
  rocksdb::Options o = Plain();
  o.disable_auto_compactions = true;
  o.num_levels = 4;
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.persist_index = reopen;
  const std::vector<std::string> keys = Keys("k", 100);
  auto db = OpenLive(o, io, dir);
  if (!db) return -1;
  for (const std::string& k : keys) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
  EXPECT_TRUE(db->Put(WriteOptions(), "zz-outside", "v").ok());
  EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  rocksdb::CompactRangeOptions cro;
  cro.change_level = true;
  cro.target_level = 2;
  EXPECT_TRUE(db->CompactRange(cro, nullptr, nullptr).ok());
  for (const std::string& k : keys) EXPECT_TRUE(db->Delete(WriteOptions(), k).ok());
  EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  std::vector<std::string> l0;
  for (const auto& f : files) {
    if (f.level == 0) l0.push_back(f.name);
  }
  EXPECT_EQ(l0.size(), 1u);
  EXPECT_TRUE(db->CompactFiles(rocksdb::CompactionOptions(), l0, 1).ok());
  EXPECT_TRUE(db->WaitForDeferredChecks(60000));
  std::string v;
  EXPECT_TRUE(db->Get(ReadOptions(), keys[0], &v).IsNotFound()) << "the premise: the keys are deleted";
  const rocksdb::Slice begin(keys.front()), end(keys.back());
  if (reopen) {
    EXPECT_TRUE(db->Close().ok());
    db.reset();
    rocksdb::DB* plain = nullptr;
    EXPECT_TRUE(dlcbf::compat::OpenDB(o, dir, &plain).ok());
    EXPECT_TRUE(rocksdb::DeleteFilesInRange(plain, plain->DefaultColumnFamily(), &begin, &end).ok());
    EXPECT_TRUE(plain->Get(ReadOptions(), keys[0], &v).ok()) << "the premise: the Puts are live again";
    delete plain;
    db = OpenLive(o, io, dir);
    if (!db) return -1;
  } else {
    EXPECT_TRUE(rocksdb::DeleteFilesInRange(db.get(), db->DefaultColumnFamily(), &begin, &end).ok());
  }
  const int lost = CountLost(db.get(), keys);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  return lost;
}

TEST(LiveKeyClosedWorld, DeleteFilesInRangeLosesNoKey) { EXPECT_EQ(DeleteFilesScenario(false), 0); }
TEST(LiveKeyClosedWorld, DeleteFilesInRangeNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kIgnoreTableFileChanges);
  EXPECT_GT(DeleteFilesScenario(false), 0) << "a file drop the world watch ignores must lose keys";
}
// The reverse of a drop: a file list read before a flush installs its
// file, compared after OnFlushCompleted named the file, shows the file
// "gone". The watch must not take that for a removal: a false alarm
// bypasses every index, rebuilds them all and deletes the index file (seen
// as a flaky LiveKeyExactness.NoWalWriteToAFamilyNotYetServingNegativeControl
// on a loaded machine: its reopen found no index file). The world hook
// forces the order: the flush's MANIFEST sync is counted, the reconciler
// reads the list (before the install), the flush installs and is noted,
// and only then does the reconciler compare.
TEST(LiveKeyClosedWorld, StaleFileListIsNoUnseenChange) {
  NEEDS_FAULT_HOOKS();
  const std::string dir = TestDir("stale_list");
  LiveKeyIndexOptions io;
  io.expected_keys = 1000;
  auto db = OpenLive(Plain(), io, dir);
  ASSERT_TRUE(db);
  for (const std::string& k : Keys("k", 100)) ASSERT_TRUE(db->Put(WriteOptions(), k, "v").ok());
  std::mutex m;
  std::condition_variable cv;
  bool armed = true, counted = false, listed = false, noted = false;
  const auto wait = [&](std::unique_lock<std::mutex>& l, const bool& flag) {
    return cv.wait_for(l, std::chrono::seconds(10), [&] { return flag; });
  };
  using P = dlcbf::internal::LiveKeyWorldPoint;
  dlcbf::internal::SetLiveKeyWorldHookForTesting([&](P p) {
    std::unique_lock<std::mutex> l(m);
    if (!armed) return;
    if (p == P::kEditCounted && !counted) {
      counted = true;
      cv.notify_all();
      wait(l, listed);  // (RocksDB installs the flush only after this returns)
    } else if (p == P::kReconcilerListed && counted && !listed) {
      listed = true;
      cv.notify_all();
      wait(l, noted);
    } else if (p == P::kFlushNoted && listed) {
      noted = true;
      cv.notify_all();
    }
  });
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  {
    std::unique_lock<std::mutex> l(m);
    wait(l, noted);
    armed = false;
  }
  dlcbf::internal::SetLiveKeyWorldHookForTesting(nullptr);
  EXPECT_TRUE(counted && listed && noted) << "the order under test did not happen: counted=" << counted
                                          << " listed=" << listed << " noted=" << noted;
  // Settled again: an absent key's Get answers from the index.
  const uint64_t before = db->GetLiveKeyStats().short_circuited;
  EXPECT_TRUE(WaitFor([&] {
    std::string v;
    db->Get(ReadOptions(), "absent", &v).PermitUncheckedError();
    return db->GetLiveKeyStats().short_circuited > before;
  }));
  const LiveKeyStats st = db->GetLiveKeyStats();
  EXPECT_EQ(st.unseen_write_detections, 0u) << st.ToString();
  EXPECT_EQ(CountLost(db.get(), Keys("k", 100)), 0);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

TEST(LiveKeyClosedWorld, FilesDroppedWhileClosedAreNotTrusted) { EXPECT_EQ(DeleteFilesScenario(true), 0); }
TEST(LiveKeyClosedWorld, FilesDroppedWhileClosedNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kIgnoreTableFileChanges);
  EXPECT_GT(DeleteFilesScenario(true), 0) << "an index file loaded past a file drop must lose keys";
}

// A compaction filter that answers kRemoveAndSkipUntil for key "a": the
// entries it skips (here the Deletes of a000000..a000099) are dropped
// unread, and the older Puts of those keys in a lower level are live again.
class SkipUntilFilter : public rocksdb::CompactionFilter {
 public:
  Decision FilterV2(int, const rocksdb::Slice& key, ValueType, const rocksdb::Slice&, std::string*,
                    std::string* skip_until) const override {
    if (key != rocksdb::Slice("a")) return Decision::kKeep;
    *skip_until = "b";
    return Decision::kRemoveAndSkipUntil;
  }
  const char* Name() const override { return "SkipUntilFilter"; }
};

// The same filter made for flushes too (a factory may ask for that): the
// flush drops the Deletes from the memtable unread.
class SkipUntilFilterFactory : public rocksdb::CompactionFilterFactory {
 public:
  bool ShouldFilterTableFileCreation(rocksdb::TableFileCreationReason) const override { return true; }
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context&) override {
    return std::unique_ptr<rocksdb::CompactionFilter>(new SkipUntilFilter);
  }
  const char* Name() const override { return "SkipUntilFilterFactory"; }
};

// `in_flush`: the decision is made by the flush of the Deletes (a
// factory's filter), not by the compaction after it.
int SkipUntilFilterScenario(bool in_flush = false) {
  const std::string dir = TestDir(in_flush ? "skip_until_flush" : "skip_until_filter");
  SkipUntilFilter filter;
  rocksdb::Options o = Plain();
  o.disable_auto_compactions = true;
  o.num_levels = 4;
  if (in_flush) {
    o.compaction_filter_factory = std::make_shared<SkipUntilFilterFactory>();
  } else {
    o.compaction_filter = &filter;
  }
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.persist_index = false;
  const std::vector<std::string> keys = Keys("a", 100);
  auto db = OpenLive(o, io, dir);
  if (!db) return -1;
  for (const std::string& k : keys) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
  EXPECT_TRUE(db->Put(WriteOptions(), "zz-outside", "v").ok());
  EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  rocksdb::CompactRangeOptions cro;
  cro.change_level = true;
  cro.target_level = 2;
  EXPECT_TRUE(db->CompactRange(cro, nullptr, nullptr).ok());
  for (const std::string& k : keys) EXPECT_TRUE(db->Delete(WriteOptions(), k).ok());
  EXPECT_TRUE(db->WaitForDeferredChecks(60000));
  std::string v;
  EXPECT_TRUE(db->Get(ReadOptions(), keys[0], &v).IsNotFound()) << "the premise: the keys are deleted";
  EXPECT_TRUE(db->Put(WriteOptions(), "a", "the filter skips from here").ok());
  EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  if (in_flush) {
    EXPECT_TRUE(db->GetBaseDB()->Get(ReadOptions(), keys[0], &v).ok()) << "the premise: the Puts are live again";
    // Once the index serves again (the flush's edit, which changed no
    // file, settles after WorldWatch::kSettleAfter; a rebuild ran), no key
    // the flush uncovered may be missing from it.
    EXPECT_TRUE(WaitFor([&] {
      std::string w;
      const uint64_t before = db->GetLiveKeyStats().short_circuited;
      db->Get(ReadOptions(), "absent", &w).PermitUncheckedError();
      return db->GetLiveKeyStats().short_circuited > before;
    }));
    const int lost = CountLost(db.get(), keys);
    EXPECT_TRUE(db->Close().ok());
    db.reset();
    fs::remove_all(dir);
    return lost;
  }
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  std::vector<std::string> l0;
  for (const auto& f : files) {
    if (f.level == 0) l0.push_back(f.name);
  }
  EXPECT_EQ(l0.size(), 1u);
  EXPECT_TRUE(db->CompactFiles(rocksdb::CompactionOptions(), l0, 1).ok());
  EXPECT_TRUE(db->GetBaseDB()->Get(ReadOptions(), keys[0], &v).ok()) << "the premise: the Puts are live again";
  const int lost = CountLost(db.get(), keys);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  return lost;
}

TEST(LiveKeyClosedWorld, SkipUntilCompactionFilterLosesNoKey) { EXPECT_EQ(SkipUntilFilterScenario(), 0); }
TEST(LiveKeyClosedWorld, SkipUntilInAFlushLosesNoKey) { EXPECT_EQ(SkipUntilFilterScenario(true), 0); }
TEST(LiveKeyClosedWorld, SkipUntilInAFlushNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kIgnoreTableFileChanges);
  EXPECT_GT(SkipUntilFilterScenario(true), 0) << "a flush's skip-until decision the guard ignores must lose keys";
}
TEST(LiveKeyClosedWorld, SkipUntilCompactionFilterNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kIgnoreTableFileChanges);
  EXPECT_GT(SkipUntilFilterScenario(), 0) << "a skip-until decision the guard ignores must lose keys";
}

// CreateColumnFamilyWithImport through LiveKeyDB: no event names an
// import's files, so the watch adopts them when LiveKeyDB registers the
// family (WorldWatch::AdoptFamily). Every imported key is found, and the
// indexes serve again afterwards (the import's edit settles, the ledger's
// gap is rebuilt away): absent keys short-circuit.
TEST(LiveKeyClosedWorld, ImportThroughLiveKeyDBIsIndexedAndServes) {
  const std::string dir = TestDir("import");
  const std::string src_dir = dir + "_src", export_dir = dir + "_export";
  rocksdb::ExportImportFilesMetaData* meta = nullptr;
  {
    rocksdb::DB* src = nullptr;
    ASSERT_TRUE(dlcbf::compat::OpenDB(Plain(), src_dir, &src).ok());
    for (const std::string& k : Keys("x", 200)) ASSERT_TRUE(src->Put(WriteOptions(), k, "x").ok());
    ASSERT_TRUE(src->Flush(rocksdb::FlushOptions()).ok());
    rocksdb::Checkpoint* cp = nullptr;
    ASSERT_TRUE(rocksdb::Checkpoint::Create(src, &cp).ok());
    ASSERT_TRUE(cp->ExportColumnFamily(src->DefaultColumnFamily(), export_dir, &meta).ok());
    delete cp;
    ASSERT_TRUE(src->Close().ok());
    delete src;
  }
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.persist_index = false;
  auto db = OpenLive(Plain(), io, dir);
  ASSERT_TRUE(db != nullptr);
  rocksdb::ColumnFamilyHandle* h = nullptr;
  ASSERT_TRUE(db->CreateColumnFamilyWithImport(Plain(), "imported", rocksdb::ImportColumnFamilyOptions(), *meta, &h)
                  .ok());
  for (const std::string& k : Keys("x", 200)) {
    std::string v;
    EXPECT_TRUE(db->Get(ReadOptions(), h, k, &v).ok()) << k;
  }
  EXPECT_TRUE(WaitFor([&] {
    std::string v;
    const uint64_t before = db->GetLiveKeyStats().short_circuited;
    db->Get(ReadOptions(), h, "absent", &v).PermitUncheckedError();
    return db->GetLiveKeyStats().short_circuited > before;
  })) << "the indexes never served again after the import";
  ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  delete meta;
  fs::remove_all(dir);
  fs::remove_all(src_dir);
  fs::remove_all(export_dir);
}

// A checkpoint taken after the keys were deleted, then DeleteFilesInRange
// uncovers their Puts, then a crash: that checkpoint must not be brought
// forward past the drop (a replay reads what was written since, never what
// a removed file uncovered).
int CheckpointThenDropScenario() {
  const std::string dir = TestDir("ckpt_drop");
  const std::string image = TestDir("ckpt_drop_image");
  rocksdb::Options o = Plain();
  o.disable_auto_compactions = true;
  o.num_levels = 4;
  LiveKeyIndexOptions io;
  io.expected_keys = 10000;
  io.checkpoint_interval_seconds = 3600;  // one checkpoint per Open, at its first flush
  const std::vector<std::string> keys = Keys("k", 100);
  {
    auto db = OpenLive(o, io, dir);
    if (!db) return -1;
    for (const std::string& k : keys) EXPECT_TRUE(db->Put(WriteOptions(), k, "v").ok());
    EXPECT_TRUE(db->Put(WriteOptions(), "zz-outside", "v").ok());
    EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    rocksdb::CompactRangeOptions cro;
    cro.change_level = true;
    cro.target_level = 2;
    EXPECT_TRUE(db->CompactRange(cro, nullptr, nullptr).ok());
    EXPECT_TRUE(db->Close().ok());
  }
  {
    auto db = OpenLive(o, io, dir);
    if (!db) return -1;
    for (const std::string& k : keys) EXPECT_TRUE(db->Delete(WriteOptions(), k).ok());
    EXPECT_TRUE(db->WaitForDeferredChecks(60000));
    EXPECT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());  // this Open's one checkpoint: the keys are dead
    EXPECT_TRUE(WaitFor([&] { return db->GetLiveKeyStats().checkpoints > 0; }));
    std::vector<rocksdb::LiveFileMetaData> files;
    db->GetLiveFilesMetaData(&files);
    std::vector<std::string> l0;
    for (const auto& f : files) {
      if (f.level == 0) l0.push_back(f.name);
    }
    EXPECT_EQ(l0.size(), 1u);
    EXPECT_TRUE(db->CompactFiles(rocksdb::CompactionOptions(), l0, 1).ok());
    const rocksdb::Slice begin(keys.front()), end(keys.back());
    EXPECT_TRUE(rocksdb::DeleteFilesInRange(db.get(), db->DefaultColumnFamily(), &begin, &end).ok());
    std::string v;
    EXPECT_TRUE(db->GetBaseDB()->Get(ReadOptions(), keys[0], &v).ok()) << "the premise: the Puts are live again";
    EXPECT_TRUE(db->Put(WriteOptions(), "after-the-drop", "v").ok());  // (the file is then older than the DB)
    CrashImage(db.get(), dir, image);
    EXPECT_TRUE(db->Close().ok());
  }
  auto db = OpenLive(o, io, image);
  if (!db) return -1;
  const int lost = CountLost(db.get(), keys);
  EXPECT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove_all(image);
  return lost;
}

TEST(LiveKeyClosedWorld, CheckpointThenDeleteFilesThenCrash) { EXPECT_EQ(CheckpointThenDropScenario(), 0); }
TEST(LiveKeyClosedWorld, CheckpointThenDeleteFilesThenCrashNegativeControl) {
  NEEDS_FAULT_HOOKS();
  FaultScope f(LiveKeyFault::kSaveUntrustedIndex);
  EXPECT_GT(CheckpointThenDropScenario(), 0) << "a checkpoint kept past a file drop must lose keys";
}

}  // namespace
