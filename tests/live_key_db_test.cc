// Tests of dlcbf::LiveKeyDB: exact maintenance against a
// std::map oracle under concurrency, failure injection on the WAL,
// crash/reopen and persistence checks, drift and automatic rebuilds.
#include "dlcbf/internal/rocksdb_compat.h"
#include "dlcbf/rocksdb/live_key_db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"
#ifdef DLCBF_TESTING
#include "filter_policy/testing/live_key_db_testing.h"
#endif
#include "rocksdb/cache.h"
#include "rocksdb/version.h"
#if ROCKSDB_MAJOR >= 8
#include "rocksdb/advanced_cache.h"  // (where Cache is defined since 8.x)
#endif
#include "rocksdb/db.h"
#include "rocksdb/table.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb_test_util.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/write_batch.h"
#if __has_include("rocksdb/attribute_groups.h")
#include "rocksdb/attribute_groups.h"
#endif

namespace fs = std::filesystem;
using dlcbf::LiveKeyDB;
using dlcbf::LiveKeyIndexOptions;
using dlcbf::LiveKeyStats;
using dlcbf::testing_util::Diag;
using rocksdb::ReadOptions;
using rocksdb::Slice;
using rocksdb::Status;
using rocksdb::WriteOptions;

namespace {

using dlcbf::testing_util::AppendOperator;

std::string TestDir(const std::string& name) {
  return dlcbf::testing_util::TestDir("live_key_db_test", name);
}

rocksdb::Options BaseOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.merge_operator = std::make_shared<AppendOperator>();
  o.write_buffer_size = 256 << 10;  // flushes happen: keys live in SSTs too
  return o;
}

LiveKeyIndexOptions SmallIndex(uint64_t expected = 1000) {
  LiveKeyIndexOptions io;
  io.expected_keys = expected;
  return io;
}

std::string Key(const char* prefix, int i) {
  char b[32];
  std::snprintf(b, sizeof(b), "%s%06d", prefix, i);
  return b;
}

std::string GetOr(rocksdb::DB* db, const std::string& k, Status* st = nullptr) {
  std::string v;
  Status s = db->Get(ReadOptions(), k, &v);
  if (st) *st = s;
  return s.ok() ? v : "<" + s.ToString() + ">";
}

// Stats once the deferred liveness checks queued so far have run (the
// index counts are exact then).
// (And once an index Open left to the background is built.)
template <class DbPtr>
LiveKeyStats Settled(const DbPtr& db) {
  EXPECT_TRUE(db->WaitForBackgroundRebuilds(60000));
  EXPECT_TRUE(db->WaitForDeferredChecks(60000));
  return db->GetLiveKeyStats();
}

const dlcbf::LiveKeyCfStats& Cf(const LiveKeyStats& st, uint32_t id = 0) {
  for (const auto& c : st.column_families) {
    if (c.id == id) return c;
  }
  static dlcbf::LiveKeyCfStats none;
  ADD_FAILURE() << "no stats for column family " << id;
  return none;
}

using dlcbf::testing_util::ReadFile;
void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}
std::string ReadLog(const std::string& dir) { return ReadFile(dir + "/LOG"); }

// Every key of `oracle` agrees with the DB; count of live keys returned.
uint64_t CheckAgainst(rocksdb::DB* db, const std::map<std::string, std::string>& oracle,
                      const std::vector<std::string>& absent) {
  for (const auto& kv : oracle) {
    Status s;
    EXPECT_EQ(GetOr(db, kv.first, &s), kv.second) << kv.first;
  }
  for (const auto& k : absent) {
    if (oracle.count(k)) continue;
    Status s;
    GetOr(db, k, &s);
    EXPECT_TRUE(s.IsNotFound()) << k << " " << s.ToString();
  }
  return oracle.size();
}

}  // namespace

// ---------------------------------------------------------------------------
TEST(LiveKeyDBTest, OptionsValidation) {
  struct Case {
    std::function<void(LiveKeyIndexOptions*)> set;
    const char* field;
  };
  std::vector<Case> cases = {
      {[](LiveKeyIndexOptions* o) { o->expected_keys = 0; }, "expected_keys"},
      {[](LiveKeyIndexOptions* o) { o->sizing_load = 1.5; }, "sizing_load"},
      {[](LiveKeyIndexOptions* o) { o->abf_counter_bits = 0; }, "abf_counter_bits"},
      {[](LiveKeyIndexOptions* o) { o->auto_rebuild_drift = 0.5; }, "auto_rebuild_drift"},
      {[](LiveKeyIndexOptions* o) { o->rebuild_headroom = 0.9; }, "rebuild_headroom"},
      {[](LiveKeyIndexOptions* o) { o->lock_stripes = 1000; }, "lock_stripes"},
      {[](LiveKeyIndexOptions* o) { o->index_file_name = "a/b"; }, "index_file_name"},
      {[](LiveKeyIndexOptions* o) { o->rebuild_progress_interval = 0; }, "rebuild_progress_interval"},
      {[](LiveKeyIndexOptions* o) { o->max_pending_checks = 0; }, "max_pending_checks"},
      {[](LiveKeyIndexOptions* o) { o->max_deferring_writers = (1u << 20) + 1; }, "max_deferring_writers"},
      {[](LiveKeyIndexOptions* o) { o->unchecked_copy_budget = -0.01; }, "unchecked_copy_budget"},
      {[](LiveKeyIndexOptions* o) { o->unchecked_copy_budget = 1.5; }, "unchecked_copy_budget"},
      {[](LiveKeyIndexOptions* o) { o->unchecked_copy_budget = std::nan(""); }, "unchecked_copy_budget"},
      {[](LiveKeyIndexOptions* o) { o->rebuild_scan_threads = 0; }, "rebuild_scan_threads"},
      {[](LiveKeyIndexOptions* o) { o->checkpoint_interval_seconds = -1; }, "checkpoint_interval_seconds"},
  };
  const std::string dir = TestDir("options");
  for (const Case& c : cases) {
    LiveKeyIndexOptions io;
    c.set(&io);
    Status s = io.Validate();
    EXPECT_TRUE(s.IsInvalidArgument()) << c.field << ": " << s.ToString();
    EXPECT_NE(s.ToString().find(c.field), std::string::npos) << s.ToString();
    LiveKeyDB* db = nullptr;
    s = LiveKeyDB::Open(BaseOptions(), io, dir, &db);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_EQ(db, nullptr);
  }
  EXPECT_TRUE(LiveKeyIndexOptions().Validate().ok());
  EXPECT_TRUE(LiveKeyDB::Open(BaseOptions(), LiveKeyIndexOptions(), dir, nullptr).IsInvalidArgument());
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// LiveKeyIndexOptions::charge_cache: the cache's usage follows the
// indexes' bytes (LiveKeyStats::index_bytes and the property) through
// Open, a rebuild to a bigger index and Close; without the option nothing
// is charged; a strict cache too small for the index refuses the charge
// (counted), and the DB works on.
TEST(LiveKeyDBTest, IndexMemoryIsChargedToTheCache) {
  std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(256 << 20);
  rocksdb::Options o;
  o.create_if_missing = true;
  LiveKeyIndexOptions io;
  io.expected_keys = 200000;
  io.charge_cache = cache;
  io.checkpoint_interval_seconds = 0;
  const std::string dir = TestDir("charge");
  LiveKeyDB* db = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(o, io, dir, &db).ok());
  // The cache's own entries for a charge: within 1 KiB of the bytes.
  auto near = [](uint64_t a, uint64_t b) { return a >= b && a - b < 1024; };
  LiveKeyStats st = db->GetLiveKeyStats();
  ASSERT_GT(st.index_bytes, 100000u);
  EXPECT_EQ(st.cache_charged_bytes, st.index_bytes);
  EXPECT_TRUE(near(cache->GetUsage(), st.index_bytes)) << cache->GetUsage() << " vs " << st.index_bytes;
  std::string prop;
  ASSERT_TRUE(db->GetProperty("dlcbf.livekey.index-bytes", &prop));
  EXPECT_EQ(prop, std::to_string(st.index_bytes));
  uint64_t iprop = 0;
  ASSERT_TRUE(db->GetIntProperty(db->DefaultColumnFamily(), "dlcbf.livekey.index-bytes", &iprop));
  EXPECT_EQ(iprop, st.index_bytes);
  // A rebuild for more keys: a bigger index, charged once swapped in.
  for (int i = 0; i < 300000; ++i) ASSERT_TRUE(db->Put(WriteOptions(), "k" + std::to_string(i), "v").ok());
  ASSERT_TRUE(db->WaitForBackgroundRebuilds(120000));
  ASSERT_TRUE(db->RebuildIndex().ok());
  const LiveKeyStats grown = db->GetLiveKeyStats();
  EXPECT_GT(grown.index_bytes, st.index_bytes);
  EXPECT_EQ(grown.cache_charged_bytes, grown.index_bytes);
  EXPECT_TRUE(near(cache->GetUsage(), grown.index_bytes)) << cache->GetUsage() << " vs " << grown.index_bytes;
  EXPECT_EQ(grown.cache_charge_failures, 0u);
  ASSERT_TRUE(db->Close().ok());
  EXPECT_EQ(cache->GetUsage(), 0u) << "Close releases the charge";
  delete db;

  // Without the option: nothing charged, the bytes still reported.
  std::shared_ptr<rocksdb::Cache> untouched = rocksdb::NewLRUCache(256 << 20);
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = untouched;
  t.no_block_cache = false;
  io.charge_cache.reset();
  ASSERT_TRUE(LiveKeyDB::Open(o, io, dir, &db).ok());
  st = db->GetLiveKeyStats();
  EXPECT_GT(st.index_bytes, 0u);
  EXPECT_EQ(st.cache_charged_bytes, 0u);
  EXPECT_EQ(untouched->GetUsage(), 0u);
  ASSERT_TRUE(db->Close().ok());
  delete db;

  // A strict cache smaller than the index: the charge is refused and
  // counted; reads and writes go on.
  std::shared_ptr<rocksdb::Cache> tiny = rocksdb::NewLRUCache(64 << 10, -1, /*strict_capacity_limit=*/true);
  io.charge_cache = tiny;
  ASSERT_TRUE(LiveKeyDB::Open(o, io, dir, &db).ok());
  st = db->GetLiveKeyStats();
  EXPECT_GE(st.cache_charge_failures, 1u);
  EXPECT_EQ(st.cache_charged_bytes, 0u);
  EXPECT_LE(tiny->GetUsage(), size_t{64} << 10);
  std::string v;
  EXPECT_TRUE(db->Get(ReadOptions(), "k7", &v).ok());
  ASSERT_TRUE(db->Close().ok());
  delete db;
  std::filesystem::remove_all(dir);
}

TEST(LiveKeyDBTest, ExactMaintenanceAndReadPaths) {
  const std::string dir = TestDir("basic");
  LiveKeyDB* raw = nullptr;
  // SingleDelete is used as documented here: opt in to erasing on it (the
  // default keeps a stale entry; see SingleDeleteMisuseCostsNoKey).
  LiveKeyIndexOptions io = SmallIndex();
  io.trust_single_delete = true;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), io, dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  WriteOptions wo;

  ASSERT_TRUE(db->Put(wo, "a", "1").ok());
  ASSERT_TRUE(db->Put(wo, "b", "2").ok());
  EXPECT_EQ(GetOr(db.get(), "a"), "1");
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(Cf(st).entries, 2u);
  EXPECT_EQ(Cf(st).mode, "dlcbf");
  EXPECT_EQ(Diag(st, "liveness_reads"), 0u);  // new keys need no read
  // The diagnostics by name: 2 inserts (the two new keys); no such name; the dump.
  uint64_t inserts = 0, none = 7;
  EXPECT_TRUE(st.GetDiagnostic("index_inserts", &inserts));
  EXPECT_EQ(inserts, 2u);
  EXPECT_FALSE(st.GetDiagnostic("no_such_counter", &none));
  EXPECT_EQ(none, 7u) << "an unknown name leaves the value alone";
  EXPECT_NE(st.ToString().find("\n  diagnostics: write_keys=2 "), std::string::npos) << st.ToString();

  // Absent keys: answered by the index alone.
  Status s;
  GetOr(db.get(), "zz", &s);
  EXPECT_TRUE(s.IsNotFound());
  std::string v;
  EXPECT_FALSE(db->KeyMayExist(ReadOptions(), "zz", &v));
  st = Settled(db);
  EXPECT_GE(st.short_circuited, 2u);

  // Overwrite: no read on the write path; the deferred check finds "a" was
  // live and takes the second copy back, so nothing is counted twice.
  ASSERT_TRUE(db->Put(wo, "a", "1b").ok());
  st = Settled(db);
  EXPECT_EQ(Diag(st, "liveness_reads"), 0u);
  EXPECT_EQ(Diag(st, "deferred_checks"), 1u);
  EXPECT_EQ(Diag(st, "check_erases"), 1u);
  EXPECT_EQ(Diag(st, "pending_checks"), 0u);
  EXPECT_EQ(Cf(st).entries, 2u);

  // Delete of an absent key: no read, no check, no index change.
  ASSERT_TRUE(db->Delete(wo, "nope").ok());
  st = Settled(db);
  EXPECT_EQ(Diag(st, "liveness_reads"), 0u);
  EXPECT_EQ(Diag(st, "deferred_checks"), 1u);
  EXPECT_EQ(Cf(st).entries, 2u);

  // Delete / SingleDelete of live keys.
  ASSERT_TRUE(db->Delete(wo, "a").ok());
  ASSERT_TRUE(db->SingleDelete(wo, "b").ok());
  GetOr(db.get(), "a", &s);
  EXPECT_TRUE(s.IsNotFound());
  st = Settled(db);
  EXPECT_EQ(Cf(st).entries, 0u);
  // A second delete of a deleted key: the index says no, nothing to do.
  ASSERT_TRUE(db->Delete(wo, "a").ok());
  EXPECT_EQ(Cf(Settled(db)).entries, 0u);

  // Merge creates a key; merging again does not count it twice.
  ASSERT_TRUE(db->Merge(wo, "m", "x").ok());
  EXPECT_EQ(Cf(Settled(db)).entries, 1u);
  ASSERT_TRUE(db->Merge(wo, "m", "y").ok());
  EXPECT_EQ(Cf(Settled(db)).entries, 1u);
  EXPECT_EQ(GetOr(db.get(), "m"), "x,y");

  // Wide columns.
  ASSERT_TRUE(db->PutEntity(wo, db->DefaultColumnFamily(), "e", {{"c", "v"}}).ok());
  rocksdb::PinnableWideColumns cols;
  EXPECT_TRUE(db->GetEntity(ReadOptions(), db->DefaultColumnFamily(), "e", &cols).ok());
  EXPECT_TRUE(db->GetEntity(ReadOptions(), db->DefaultColumnFamily(), "e-absent", &cols).IsNotFound());
  EXPECT_EQ(Cf(Settled(db)).entries, 2u);

  // MultiGet, every overload.
  std::vector<Slice> keys = {"m", "zz", "e", "a"};
  std::vector<std::string> vals;
  std::vector<Status> sts = db->MultiGet(ReadOptions(), keys, &vals);
  ASSERT_EQ(sts.size(), 4u);
  EXPECT_TRUE(sts[0].ok());
  EXPECT_EQ(vals[0], "x,y");
  EXPECT_TRUE(sts[1].IsNotFound());
  EXPECT_TRUE(sts[2].ok());
  EXPECT_TRUE(sts[3].IsNotFound());
  std::vector<rocksdb::PinnableSlice> pvals(4);
  std::vector<Status> psts(4);
  db->MultiGet(ReadOptions(), db->DefaultColumnFamily(), keys.size(), keys.data(), pvals.data(),
               psts.data());
  EXPECT_TRUE(psts[0].ok());
  EXPECT_EQ(pvals[0].ToString(), "x,y");
  EXPECT_TRUE(psts[1].IsNotFound());
  EXPECT_TRUE(psts[2].ok());
  EXPECT_TRUE(psts[3].IsNotFound());

  // Snapshot / read-tier reads bypass: the index knows only the latest state.
  ASSERT_TRUE(db->Put(wo, "s", "old").ok());
  const rocksdb::Snapshot* snap = db->GetSnapshot();
  ASSERT_TRUE(db->Delete(wo, "s").ok());
  ReadOptions at_snap;
  at_snap.snapshot = snap;
  EXPECT_TRUE(db->Get(at_snap, "s", &v).ok());
  EXPECT_EQ(v, "old");
  EXPECT_TRUE(db->Get(ReadOptions(), "s", &v).IsNotFound());
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(at_snap));
  it->Seek("s");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key().ToString(), "s");
  it.reset();
  db->ReleaseSnapshot(snap);
  ReadOptions mem_only;
  mem_only.read_tier = rocksdb::kMemtableTier;
  const uint64_t bypassed = Settled(db).bypassed_reads;
  db->Get(mem_only, "zz", &v).PermitUncheckedError();
  EXPECT_EQ(Settled(db).bypassed_reads, bypassed + 1);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
TEST(LiveKeyDBTest, WriteBatchOverlayAndDeleteRange) {
  const std::string dir = TestDir("batch");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  WriteOptions wo;
  std::map<std::string, std::string> oracle;
  std::vector<std::string> all;
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(db->Put(wo, Key("r", i), "v").ok());
    oracle[Key("r", i)] = "v";
    all.push_back(Key("r", i));
  }
  ASSERT_TRUE(db->Put(wo, "e1", "x").ok());
  ASSERT_TRUE(db->Put(wo, "e2", "x").ok());
  oracle["e1"] = oracle["e2"] = "x";

  rocksdb::WriteBatch b;
  b.Put("k1", "1");
  b.Delete("k1");          // new then gone: no net change
  b.Put("k2", "2");
  b.Merge("k3", "3");      // merge of an absent key creates it
  b.Put("k4", "a");
  b.Delete("k4");
  b.Put("k4", "b");        // back again
  b.Delete("e1");          // existing key deleted
  b.Put("e2", "y");        // existing key overwritten
  b.Merge("e2", "z");
  b.Put(Key("r", 10) + "x", "in-range");         // inside the range below
  b.DeleteRange(Key("r", 0), Key("r", 30));      // kills r0..r29 and r10x
  b.Put(Key("r", 5), "again");                   // after the range: live
  ASSERT_TRUE(db->Write(wo, &b).ok());
  oracle.erase("e1");
  oracle["e2"] = "y,z";
  oracle["k2"] = "2";
  oracle["k3"] = "3";
  oracle["k4"] = "b";
  for (int i = 0; i < 30; ++i) oracle.erase(Key("r", i));
  oracle[Key("r", 5)] = "again";
  all.insert(all.end(), {"k1", "e1", Key("r", 10) + "x"});
  CheckAgainst(db.get(), oracle, all);
  {
    // The batch read nothing: e1 (deleted) and e2 (overwritten) went to
    // deferred checks, which took e2's second copy and e1's copy back.
    const LiveKeyStats st = Settled(db);
    EXPECT_EQ(Diag(st, "liveness_reads"), 0u) << st.ToString();
    EXPECT_EQ(Diag(st, "deferred_checks"), 2u) << st.ToString();
    EXPECT_EQ(Diag(st, "check_erases"), 2u) << st.ToString();
    EXPECT_EQ(Cf(st).entries, oracle.size());
  }
  // The same batch shapes with checks off: one MultiGet reads them.
  {
    LiveKeyIndexOptions sync = SmallIndex();
    sync.defer_liveness_checks = false;
    ASSERT_TRUE(db->Close().ok());
    db.reset();
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), sync, dir, &raw).ok());
    db.reset(raw);
    rocksdb::WriteBatch b2;
    b2.Put("e2", "w");     // overwrite: counted once
    b2.Delete("k2");       // delete of a live key
    ASSERT_TRUE(db->Write(wo, &b2).ok());
    oracle["e2"] = "w";
    oracle.erase("k2");
    all.push_back("k2");
    const LiveKeyStats st = Settled(db);
    EXPECT_EQ(Diag(st, "liveness_reads"), 2u) << st.ToString();
    EXPECT_EQ(Diag(st, "deferred_checks"), 0u) << st.ToString();
    EXPECT_EQ(Cf(st).entries, oracle.size());
    CheckAgainst(db.get(), oracle, all);
  }

  // DeleteRange past the scan limit leaves stale entries: still correct.
  LiveKeyIndexOptions limited = SmallIndex();
  limited.delete_range_scan_limit = 5;
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), limited, dir, &raw).ok());
  db.reset(raw);
  EXPECT_EQ(Cf(Settled(db)).entries, oracle.size());
  ASSERT_TRUE(db->DeleteRange(wo, db->DefaultColumnFamily(), Key("r", 30), Key("r", 50)).ok());
  for (int i = 30; i < 50; ++i) oracle.erase(Key("r", i));
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.delete_range_limit_hits, 1u);
  EXPECT_EQ(Cf(st).entries, oracle.size() + 15);  // 15 stale entries
  CheckAgainst(db.get(), oracle, all);
  ASSERT_TRUE(db->RebuildIndex().ok());
  EXPECT_EQ(Cf(Settled(db)).entries, oracle.size());
  CheckAgainst(db.get(), oracle, all);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// The concurrency oracle (overlapping reads and writes, rebuilds,
// DeleteRange, ingestion, with a negative control) is in
// tests/live_key_db_oracle_test.cc.

// ---------------------------------------------------------------------------
namespace {

class FailingWalFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FailingWalFile(std::unique_ptr<rocksdb::FSWritableFile>&& f, std::atomic<bool>* fail)
      : FSWritableFileOwnerWrapper(std::move(f)), fail_(fail) {}
  rocksdb::IOStatus Append(const Slice& d, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    if (fail_->load()) return Injected();
    return FSWritableFileOwnerWrapper::Append(d, o, dbg);
  }
  rocksdb::IOStatus Append(const Slice& d, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    if (fail_->load()) return Injected();
    return FSWritableFileOwnerWrapper::Append(d, o, info, dbg);
  }
  static rocksdb::IOStatus Injected() {
    rocksdb::IOStatus s = rocksdb::IOStatus::IOError("injected WAL write failure");
    s.SetRetryable(true);  // recoverable: DB::Resume() works once the disk is back
    return s;
  }

 private:
  std::atomic<bool>* fail_;
};

class FailingWalFs : public rocksdb::FileSystemWrapper {
 public:
  explicit FailingWalFs(const std::shared_ptr<rocksdb::FileSystem>& base)
      : FileSystemWrapper(base) {}
  const char* Name() const override { return "FailingWalFs"; }
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(f, o, r, dbg);
    if (s.ok() && f.size() > 4 && f.compare(f.size() - 4, 4, ".log") == 0) {
      r->reset(new FailingWalFile(std::move(*r), &fail));
    }
    return s;
  }
  std::atomic<bool> fail{false};
};

}  // namespace

TEST(LiveKeyDBTest, FailedWalWritesLeaveNoFalseNegative) {
  const std::string dir = TestDir("walfail");
  auto failing = std::make_shared<FailingWalFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(failing);
  rocksdb::Options o = BaseOptions();
  o.env = env.get();
  // No automatic recovery: RocksDB < 9.1 may clear a WAL write error without
  // replacing the failed WAL (its recovery flush is skipped when the memtable
  // is empty), and the next write then appends to the failed writer, which
  // trips the assertion in WritableFileWriter::AssertFalseAndGetStatusForPrevError
  // (facebook/rocksdb#12448). With auto-recovery on, that race depends on
  // timing: it aborted this test under CI load. Here the error stays until
  // the test's explicit Resume(), which runs with the memtable non-empty and
  // so always switches to a fresh WAL.
  o.max_bgerror_resume_count = 0;
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(o, SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  WriteOptions wo;
  std::map<std::string, std::string> oracle;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(db->Put(wo, Key("a", i), "v").ok());
    oracle[Key("a", i)] = "v";
  }
  const uint64_t before = Cf(Settled(db)).entries;

  failing->fail.store(true);
  EXPECT_FALSE(db->Put(wo, "new", "x").ok());            // new key: inserted, undone
  EXPECT_FALSE(db->Put(wo, Key("a", 1), "y").ok());       // overwrite
  EXPECT_FALSE(db->Delete(wo, Key("a", 2)).ok());         // delete: entry kept
  EXPECT_FALSE(db->SingleDelete(wo, Key("a", 3)).ok());
  EXPECT_FALSE(db->Merge(wo, "merged", "m").ok());
  rocksdb::WriteBatch b;
  b.Put("batch-new", "1");
  b.Delete(Key("a", 4));
  b.DeleteRange(Key("a", 10), Key("a", 15));
  EXPECT_FALSE(db->Write(wo, &b).ok());
  LiveKeyStats st = Settled(db);
  EXPECT_GE(Diag(st, "undone_inserts"), 3u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, before) << st.ToString();
  CheckAgainst(db.get(), oracle, {"new", "merged", "batch-new"});

  failing->fail.store(false);
  // Recover explicitly (auto-recovery is off, see above), then retry the
  // write until the DB accepts writes again; every failed attempt goes
  // through the undo path once more.
  Status ws;
  for (int i = 0; i < 500; ++i) {
    ws = db->Put(wo, "new", "x");
    if (ws.ok()) break;
    db->Resume().PermitUncheckedError();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(ws.ok()) << ws.ToString();
  oracle["new"] = "x";
  ASSERT_TRUE(db->Delete(wo, Key("a", 2)).ok());
  oracle.erase(Key("a", 2));
  CheckAgainst(db.get(), oracle, {"merged", "batch-new", Key("a", 2)});
  EXPECT_EQ(Cf(Settled(db)).entries, oracle.size());
  ASSERT_TRUE(db->Close().ok());
  db.reset();

  // After a reopen (index loaded or rebuilt) nothing is lost either.
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  db.reset(raw);
  CheckAgainst(db.get(), oracle, {"merged", "batch-new"});
  EXPECT_EQ(Cf(Settled(db)).entries, oracle.size());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
namespace {

std::map<std::string, std::string> Fill(rocksdb::DB* db, int n, int deleted, const char* prefix) {
  std::map<std::string, std::string> oracle;
  WriteOptions wo;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(db->Put(wo, Key(prefix, i), "v" + std::to_string(i)).ok());
    oracle[Key(prefix, i)] = "v" + std::to_string(i);
  }
  for (int i = 0; i < deleted; ++i) {
    EXPECT_TRUE(db->Delete(wo, Key(prefix, i * 3)).ok());
    oracle.erase(Key(prefix, i * 3));
  }
  return oracle;
}

std::vector<std::string> Probes(int n, const char* prefix) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(Key(prefix, i));
  return v;
}

}  // namespace

TEST(LiveKeyDBTest, CleanCloseLoadsConsistentIndex) {
  const std::string dir = TestDir("clean");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 2000, 500, "c");
  // 2000 keys outgrow the index sized for 1000, and the automatic rebuild
  // runs in the background: on a loaded machine the index may still be in
  // elastic mode at Close, which persists nothing (by design). A manual
  // rebuild first makes the close deterministic.
  ASSERT_TRUE(db->RebuildIndex().ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  ASSERT_TRUE(fs::exists(dir + "/LIVEKEY_INDEX"));

  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  db.reset(raw);
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 1u) << st.ToString();
  EXPECT_EQ(st.rebuilds, 0u);
  EXPECT_TRUE(Cf(st).loaded_from_file);
  EXPECT_EQ(Cf(st).entries, oracle.size());
  EXPECT_TRUE(fs::exists(dir + "/LIVEKEY_INDEX")) << "kept after Open: a checkpoint from then on";
  CheckAgainst(db.get(), oracle, Probes(2100, "c"));
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  EXPECT_NE(ReadLog(dir).find("LiveKeyDB: loaded the index"), std::string::npos);
  fs::remove_all(dir);
}

TEST(LiveKeyDBTest, CrashImageIsRebuilt) {
  const std::string dir = TestDir("crash");
  const std::string copy = TestDir("crash_copy");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 1500, 300, "c");
  ASSERT_TRUE(db->Close().ok());  // a valid index file...
  db.reset();
  // (No checkpoint while this DB is open: the image then holds the file of the
  // Close above, older than the DB, whatever the flush timing.)
  LiveKeyIndexOptions no_checkpoints = SmallIndex();
  no_checkpoints.checkpoint_interval_seconds = 0;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), no_checkpoints, dir, &raw).ok());
  db.reset(raw);
  // ...loaded (and kept: a checkpoint); more writes, then a "crash": copy the files of
  // the open DB (what a power cut would leave, the WAL synced).
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(db->Delete(WriteOptions(), Key("c", i * 5)).ok());
    oracle.erase(Key("c", i * 5));
    ASSERT_TRUE(db->Put(WriteOptions(), Key("d", i), "w").ok());
    oracle[Key("d", i)] = "w";
  }
  // Hold background work and file deletions while copying: a flush or a
  // purge of obsolete files in the middle of the copy would make the image
  // inconsistent (or make the copy fail on a file that went away), which a
  // power cut does not. The checker thread writes no file.
  ASSERT_TRUE(db->FlushWAL(true).ok());
  ASSERT_TRUE(db->PauseBackgroundWork().ok());
  ASSERT_TRUE(db->DisableFileDeletions().ok());
  fs::copy(dir, copy, fs::copy_options::recursive);
#if ROCKSDB_MAJOR >= 9
  ASSERT_TRUE(db->EnableFileDeletions().ok());
#else
  ASSERT_TRUE(db->EnableFileDeletions(/*force=*/true).ok());
#endif
  ASSERT_TRUE(db->ContinueBackgroundWork().ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();

  const std::string bare = copy + "_no_index_file";
  fs::copy(copy, bare, fs::copy_options::recursive);
  fs::remove(bare + "/LIVEKEY_INDEX");
  auto probes = Probes(1600, "c");
  auto more = Probes(400, "d");
  probes.insert(probes.end(), more.begin(), more.end());

  // 1. The image holds the file saved at the clean Close, older than the
  // DB now: a checkpoint, brought forward by the keys written since.
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), copy, &raw).ok());
  db.reset(raw);
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 1u) << st.ToString();
  EXPECT_EQ(Diag(st, "checkpoint_replays"), 1u) << st.ToString();
  // The 300 deleted keys keep their copies (stale: false positives only).
  EXPECT_GE(Cf(st).entries, oracle.size());
  CheckAgainst(db.get(), oracle, probes);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  EXPECT_NE(ReadLog(copy).find("brought the checkpoint of 'default'"), std::string::npos);

  // 2. Without the file: a full build.
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), bare, &raw).ok());
  db.reset(raw);
  st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 0u);
  // (A second, automatic rebuild follows when the first, sized by RocksDB's
  // key estimate, lands past rebuild_at_capacity.)
  EXPECT_GE(st.rebuilds, 1u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, oracle.size());
  CheckAgainst(db.get(), oracle, probes);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  const std::string log = ReadLog(bare);
  EXPECT_NE(log.find("no index file"), std::string::npos);
  EXPECT_NE(log.find("LiveKeyDB: rebuilt 'default'"), std::string::npos);
  fs::remove_all(dir);
  fs::remove_all(copy);
  fs::remove_all(bare);
}

TEST(LiveKeyDBTest, StaleCorruptForeignOrTruncatedFilesAreRejected) {
  const std::string dir = TestDir("reject");
  const std::string other = TestDir("reject_other");
  const std::string file = dir + "/LIVEKEY_INDEX";
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 1000, 200, "c");
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  const std::string good = ReadFile(file);
  ASSERT_GT(good.size(), 100u);

  auto reopen_expect_rejected = [&](const std::string& why) {
    LiveKeyDB* r = nullptr;
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &r).ok());
    std::unique_ptr<LiveKeyDB> d(r);
    LiveKeyStats st = Settled(d);
    EXPECT_EQ(st.index_file_loads, 0u) << why;
    EXPECT_GE(st.index_file_rejections, 1u) << why;
    EXPECT_NE(st.last_rejection.find(why), std::string::npos) << st.last_rejection;
    EXPECT_EQ(st.rebuilds, 1u);
    EXPECT_EQ(Cf(st).entries, oracle.size());
    CheckAgainst(d.get(), oracle, Probes(1100, "c"));
    ASSERT_TRUE(d->Close().ok());
    d.reset();
    EXPECT_NE(ReadLog(dir).find(why), std::string::npos);
  };

  // 1. Corrupt: one flipped byte in the middle.
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x40;
  WriteFile(file, bad);
  reopen_expect_rejected("checksum mismatch");
  // 2. Truncated.
  WriteFile(file, good.substr(0, 20));
  reopen_expect_rejected("truncated");
  // 3. Older than the DB (the file from before more writes): a
  // checkpoint, loaded and brought forward by the keys written since.
  const std::string before = dir + "_before";
  fs::remove_all(before);
  fs::copy(dir, before, fs::copy_options::recursive);  // the DB as the file saw it
  WriteFile(before + "/LIVEKEY_INDEX", good);
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  db.reset(raw);
  ASSERT_TRUE(db->Put(WriteOptions(), "later", "x").ok());
  oracle["later"] = "x";
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  const std::string newer = ReadFile(file);
  WriteFile(file, good);
  {
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
    db.reset(raw);
    const LiveKeyStats st = Settled(db);
    EXPECT_EQ(st.index_file_loads, 1u) << st.ToString();
    EXPECT_EQ(Diag(st, "checkpoint_replays"), 1u) << st.ToString();
    EXPECT_GE(Cf(st).entries, oracle.size());
    CheckAgainst(db.get(), oracle, Probes(1100, "c"));
    ASSERT_TRUE(db->Close().ok());
    db.reset();
  }
  // 3b. Ahead of the DB (a DB restored from an older copy, with a newer
  // file): rejected and rebuilt.
  WriteFile(before + "/LIVEKEY_INDEX", newer);
  {
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), before, &raw).ok());
    db.reset(raw);
    const LiveKeyStats st = Settled(db);
    EXPECT_EQ(st.index_file_loads, 0u) << st.ToString();
    EXPECT_NE(st.last_rejection.find("ahead of the DB"), std::string::npos) << st.last_rejection;
    auto old_oracle = oracle;
    old_oracle.erase("later");
    CheckAgainst(db.get(), old_oracle, Probes(1100, "c"));
    ASSERT_TRUE(db->Close().ok());
    db.reset();
    fs::remove_all(before);
  }
  // 4. Foreign: a valid file of another DB at the same sequence number.
  {
    LiveKeyDB* r = nullptr;
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), other, &r).ok());
    std::unique_ptr<LiveKeyDB> d(r);
    // Same number of writes: reach the same sequence number.
    rocksdb::SequenceNumber target = 0;
    {
      LiveKeyDB* r2 = nullptr;
      ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &r2).ok());
      target = r2->GetLatestSequenceNumber();
      ASSERT_TRUE(r2->Close().ok());
      delete r2;
    }
    // (Distinct keys: ~1200 overwrites of one key queue as many deferred
    // checks, and when the checker lags (both cores busy) their copies can
    // push the small index into elastic mode, which is not persisted.)
    for (int i = 0; d->GetLatestSequenceNumber() < target; ++i) {
      ASSERT_TRUE(d->Put(WriteOptions(), "f" + std::to_string(i), "1").ok());
    }
    Settled(d);
    // (~1200 keys in an index sized for 1000: a rebuild starts on the way
    // (rebuild_at_capacity); Close would abort it mid-scan.)
    ASSERT_TRUE(d->WaitForBackgroundRebuilds(60000));
    ASSERT_TRUE(d->Close().ok());
    ASSERT_TRUE(fs::exists(other + "/LIVEKEY_INDEX")) << ReadLog(other);
  }
  fs::copy_file(other + "/LIVEKEY_INDEX", file, fs::copy_options::overwrite_existing);
  reopen_expect_rejected("identity");
  // 5. Older and newer format versions with a valid checksum: version 2
  // (the DLeftCountingBloomFilter layout), version 3 (no kernel byte) and
  // an unknown version 7 are rejected and rebuilt, never trusted; versions
  // 4 and 5 (6's base, without delta segments or with 72-byte delta
  // records: LiveKeyExactness.Version5DeltasStillLoad) still load. First
  // a current file at the current sequence number (so only the version
  // differs).
  {
    LiveKeyDB* r = nullptr;
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &r).ok());
    std::unique_ptr<LiveKeyDB> d(r);
    ASSERT_TRUE(d->Close().ok());
  }
  const std::string current = ReadFile(file);
  ASSERT_GT(current.size(), 100u);
  ASSERT_EQ(dlcbf::internal::DecodeFixed32(current.data() + 8), 6u) << "the current version is 6";
  auto with_version = [&](uint32_t v) {
    std::string f = current.substr(0, current.size() - 8);
    std::string enc;
    dlcbf::internal::PutFixed32(&enc, v);
    f.replace(8, 4, enc);
    dlcbf::internal::PutFixed64(&f, dlcbf::internal::HashKey(f.data(), f.size(), 0x4C4B494458ULL));
    return f;
  };
  WriteFile(file, with_version(2));
  reopen_expect_rejected("format version 2");
  WriteFile(file, with_version(3));
  reopen_expect_rejected("format version 3");
  // The rebuilt index was saved again at Close: as version 6, and it loads;
  // so does the same file marked version 5, and 4.
  ASSERT_EQ(dlcbf::internal::DecodeFixed32(ReadFile(file).data() + 8), 6u);
  for (uint32_t older : {5u, 4u}) {
    const std::string v6 = ReadFile(file);
    std::string f = v6.substr(0, v6.size() - 8);
    std::string enc;
    dlcbf::internal::PutFixed32(&enc, older);
    f.replace(8, 4, enc);
    dlcbf::internal::PutFixed64(&f, dlcbf::internal::HashKey(f.data(), f.size(), 0x4C4B494458ULL));
    WriteFile(file, f);
    LiveKeyDB* r = nullptr;
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &r).ok());
    std::unique_ptr<LiveKeyDB> d(r);
    LiveKeyStats st = Settled(d);
    EXPECT_EQ(st.index_file_loads, 1u) << "version " << older << " loads: " << st.last_rejection;
    EXPECT_EQ(st.rebuilds, 0u);
    CheckAgainst(d.get(), oracle, Probes(1100, "c"));
    ASSERT_TRUE(d->Close().ok());
  }
  {
    LiveKeyDB* r = nullptr;
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &r).ok());
    std::unique_ptr<LiveKeyDB> d(r);
    LiveKeyStats st = Settled(d);
    EXPECT_EQ(st.index_file_loads, 1u) << st.last_rejection;
    EXPECT_EQ(st.rebuilds, 0u);
    CheckAgainst(d.get(), oracle, Probes(1100, "c"));
    ASSERT_TRUE(d->Close().ok());
  }
  const std::string saved = ReadFile(file);
  {
    // Same checks on the unknown future version, against the file just saved.
    std::string f = saved.substr(0, saved.size() - 8);
    std::string enc;
    dlcbf::internal::PutFixed32(&enc, 7);
    f.replace(8, 4, enc);
    dlcbf::internal::PutFixed64(&f, dlcbf::internal::HashKey(f.data(), f.size(), 0x4C4B494458ULL));
    WriteFile(file, f);
  }
  reopen_expect_rejected("unsupported version 7");
  // A file of the other kernel: its entry is rejected, the family rebuilt.
  {
    LiveKeyDB* r = nullptr;
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &r).ok());
    ASSERT_TRUE(r->Close().ok());
    delete r;
    LiveKeyIndexOptions fast = SmallIndex();
    fast.kernel = dlcbf::ElasticKernel::kFast;
    ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), fast, dir, &r).ok());
    const LiveKeyStats st = r->GetLiveKeyStats();
    EXPECT_EQ(st.index_file_loads, 0u);
    EXPECT_NE(st.last_rejection.find("other index kernel"), std::string::npos) << st.last_rejection;
    CheckAgainst(r, oracle, Probes(1100, "c"));
    ASSERT_TRUE(r->Close().ok());
    delete r;
  }
  fs::remove_all(dir);
  fs::remove_all(other);
}

// Ingestion by a plain RocksDB into the bottom level adds keys WITHOUT
// advancing the sequence number; the saved index must not be trusted as it
// is then: the file new to it with sequence number 0 is read before the
// index serves (as from a checkpoint), so its keys are found.
TEST(LiveKeyDBTest, IngestBehindOurBackIsDetected) {
  const std::string dir = TestDir("ingest_back");
  const std::string sst = dir + "_file.sst";
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 100, 0, "c");
  ASSERT_TRUE(db->Close().ok());
  db.reset();

  rocksdb::Options o = BaseOptions();
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), o);
  ASSERT_TRUE(w.Open(sst).ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(w.Put(Key("z", i), "ing").ok());
  ASSERT_TRUE(w.Finish().ok());
  rocksdb::DB* plain = nullptr;
  ASSERT_TRUE(dlcbf::compat::OpenDB(o, dir, &plain).ok());
  const auto seq = plain->GetLatestSequenceNumber();
  ASSERT_TRUE(plain->IngestExternalFile({sst}, rocksdb::IngestExternalFileOptions()).ok());
  EXPECT_EQ(plain->GetLatestSequenceNumber(), seq) << "ingested at seqno 0";
  ASSERT_TRUE(plain->Close().ok());
  delete plain;
  for (int i = 0; i < 50; ++i) oracle[Key("z", i)] = "ing";

  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  db.reset(raw);
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 1u) << st.ToString();
  EXPECT_EQ(Diag(st, "checkpoint_replays"), 1u) << "the zeroed file was read: " << st.ToString();
  EXPECT_GE(Diag(st, "checkpoint_replayed_keys"), 50u) << st.ToString();
  CheckAgainst(db.get(), oracle, {});
  EXPECT_EQ(Cf(st).entries, oracle.size());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove(sst);
}

// Regression (ingestion at seqno 0, then a compaction, behind LiveKeyDB's
// back): the compaction rewrites the ingested file, so no live SST carries
// the ingestion property any more and the sequence number never moved. A
// load check based on either would trust an index that lacks the keys.
// The saved SST set catches it: the compacted file is new to the index
// and holds sequence number 0, so its keys are read before the index
// serves (over-counting the old keys it also holds: false positives only).
TEST(LiveKeyDBTest, IngestAtSeqnoZeroThenCompactedIsDetected) {
  const std::string dir = TestDir("ingest_compact");
  const std::string sst = dir + "_file.sst";
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 300, 0, "c");
  ASSERT_TRUE(db->Close().ok());
  db.reset();

  rocksdb::Options o = BaseOptions();
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), o);
  ASSERT_TRUE(w.Open(sst).ok());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(w.Put(Key("z", i), "ing").ok());  // after every "c" key
  ASSERT_TRUE(w.Finish().ok());
  rocksdb::DB* plain = nullptr;
  ASSERT_TRUE(dlcbf::compat::OpenDB(o, dir, &plain).ok());
  const auto seq = plain->GetLatestSequenceNumber();
  ASSERT_TRUE(plain->IngestExternalFile({sst}, rocksdb::IngestExternalFileOptions()).ok());
  ASSERT_EQ(plain->GetLatestSequenceNumber(), seq) << "ingested at global seqno 0";
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  ASSERT_TRUE(plain->CompactRange(cro, nullptr, nullptr).ok());
  ASSERT_EQ(plain->GetLatestSequenceNumber(), seq);
  // The premise: no live SST still says "ingested".
  rocksdb::TablePropertiesCollection props;
  ASSERT_TRUE(plain->GetPropertiesOfAllTables(&props).ok());
  for (const auto& kv : props) {
    EXPECT_EQ(kv.second->user_collected_properties.count("rocksdb.external_sst_file.version"), 0u)
        << kv.first;
  }
  ASSERT_TRUE(plain->Close().ok());
  delete plain;
  for (int i = 0; i < 200; ++i) oracle[Key("z", i)] = "ing";

  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  db.reset(raw);
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 1u) << st.ToString();
  EXPECT_EQ(Diag(st, "checkpoint_replays"), 1u) << st.ToString();
  CheckAgainst(db.get(), oracle, Probes(400, "c"));  // every key found
  EXPECT_GE(Cf(Settled(db)).entries, oracle.size());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove(sst);
}

// Regression (SingleDelete misuse): two Puts, then a SingleDelete. RocksDB
// may resurrect the older value once a flush drops the SingleDelete with the
// newer Put. With the default (trust_single_delete = false) the index keeps
// the key, so the resurrected value is found, and a Delete of another key
// can never take a count that misuse left uncounted.
TEST(LiveKeyDBTest, SingleDeleteMisuseCostsNoKey) {
  const std::string dir = TestDir("sd_misuse");
  LiveKeyIndexOptions io = SmallIndex(5000);
  ASSERT_FALSE(io.trust_single_delete) << "the safe default";
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), io, dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  WriteOptions wo;
  constexpr int kMisused = 500;
  for (int i = 0; i < kMisused; ++i) {
    ASSERT_TRUE(db->Put(wo, Key("m", i), "old").ok());
  }
  // The older versions are in an SST; the newer Put and the SingleDelete
  // meet in the memtable and cancel at the next flush.
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  for (int i = 0; i < kMisused; ++i) {
    ASSERT_TRUE(db->Put(wo, Key("m", i), "new").ok());
    ASSERT_TRUE(db->SingleDelete(wo, Key("m", i)).ok());
  }
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  // Other keys, some written and deleted, to exercise erase next to them.
  auto oracle = Fill(db.get(), 2000, 0, "o");
  for (int i = 0; i < 2000; i += 3) {
    ASSERT_TRUE(db->Delete(wo, Key("o", i)).ok());
    oracle.erase(Key("o", i));
  }
  // Whatever RocksDB now returns for a misused key through the base DB,
  // LiveKeyDB must return the same (no false negative, never another key's).
  int resurrected = 0;
  for (int i = 0; i < kMisused; ++i) {
    std::string base_v, v;
    Status bs = db->GetBaseDB()->Get(ReadOptions(), Key("m", i), &base_v);
    Status s = db->Get(ReadOptions(), Key("m", i), &v);
    if (bs.ok()) {
      ++resurrected;
      EXPECT_TRUE(s.ok()) << Key("m", i) << ": base DB has '" << base_v << "', LiveKeyDB "
                          << s.ToString();
      EXPECT_EQ(v, base_v);
    } else {
      EXPECT_TRUE(s.IsNotFound()) << s.ToString();
    }
  }
  // The premise of the regression: RocksDB did resurrect the old values.
  EXPECT_GT(resurrected, 0) << "RocksDB no longer resurrects on SingleDelete misuse";
  CheckAgainst(db.get(), oracle, Probes(2000, "o"));
  std::printf("  resurrected by RocksDB: %d of %d misused keys\n", resurrected, kMisused);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

TEST(LiveKeyDBTest, IngestExternalFileAddsKeysFirst) {
  const std::string dir = TestDir("ingest");
  const std::string sst = dir + "_file.sst";
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 100, 0, "c");
  rocksdb::SstFileWriter w(rocksdb::EnvOptions(), BaseOptions());
  ASSERT_TRUE(w.Open(sst).ok());
  for (int i = 50; i < 150; ++i) ASSERT_TRUE(w.Put(Key("c", i), "ing").ok());  // 50 overwrites
  ASSERT_TRUE(w.Finish().ok());
  EXPECT_FALSE(db->IngestExternalFile({dir + "_missing.sst"}, rocksdb::IngestExternalFileOptions()).ok());
  EXPECT_EQ(Cf(Settled(db)).entries, 100u);
  ASSERT_TRUE(db->IngestExternalFile({sst}, rocksdb::IngestExternalFileOptions()).ok());
  for (int i = 50; i < 150; ++i) oracle[Key("c", i)] = "ing";
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(Diag(st, "ingested_keys"), 100u);
  EXPECT_EQ(Cf(st).entries, 150u) << "overwrites are not counted twice";
  CheckAgainst(db.get(), oracle, Probes(200, "c"));
  // Saved with the ingested file listed: the next Open may load it.
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  db.reset(raw);
  EXPECT_EQ(Settled(db).index_file_loads, 1u) << Settled(db).last_rejection;
  CheckAgainst(db.get(), oracle, Probes(200, "c"));
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  fs::remove(sst);
}

// ---------------------------------------------------------------------------
// Write calls of newer releases (tests/live_key_db_surface_test.py checks
// that LiveKeyDB overrides every one; these check what the overrides do).
// Each skips loudly on a release without the call.
// ---------------------------------------------------------------------------

// [Put k, Put k, SingleDelete k] in one batch, untrusted SingleDelete (the
// default): RocksDB brings the first value back at flush (the SingleDelete
// cancels only the second Put), so the key must keep an index entry.
TEST(LiveKeyDBTest, BatchPutPutSingleDeleteKeepsAnEntry) {
  const std::string dir = TestDir("batch_put_put_sd");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(5000), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 100, 0, "a");  // keys the index holds: a000000..
  constexpr int kKeys = 200;
  for (int i = 0; i < kKeys; ++i) {
    // Half on keys the index does not hold (the lost case), half on keys
    // it holds (a000000.. a000099).
    const std::string k = i < 100 ? Key("n", i) : Key("a", i - 100);
    rocksdb::WriteBatch b;
    ASSERT_TRUE(b.Put(k, "first").ok());
    ASSERT_TRUE(b.Put(k, "second").ok());
    ASSERT_TRUE(b.SingleDelete(k).ok());
    ASSERT_TRUE(db->Write(WriteOptions(), &b).ok());
  }
  // Whether RocksDB resurrects "first" depends on how the flush meets the
  // three versions (undefined behaviour for SingleDelete; both outcomes
  // were seen): the index must keep an entry for every key either way.
  // (A read the index answers "no" counts as short-circuited.)
  const uint64_t short_before = db->GetLiveKeyStats().short_circuited;
  for (int i = 0; i < kKeys; ++i) {
    const std::string k = i < 100 ? Key("n", i) : Key("a", i - 100);
    std::string v;
    db->Get(ReadOptions(), k, &v).PermitUncheckedError();
  }
  EXPECT_EQ(db->GetLiveKeyStats().short_circuited - short_before, 0u)
      << "keys of [Put, Put, SingleDelete] batches without an index entry";
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  int resurrected = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string k = i < 100 ? Key("n", i) : Key("a", i - 100);
    std::string base_v, v;
    const Status bs = db->GetBaseDB()->Get(ReadOptions(), k, &base_v);
    const Status s = db->Get(ReadOptions(), k, &v);
    if (bs.ok()) {
      ++resurrected;
      EXPECT_TRUE(s.ok()) << k << ": the base DB has '" << base_v << "', LiveKeyDB says " << s.ToString();
      EXPECT_EQ(v, base_v) << k;
    } else {
      EXPECT_TRUE(s.IsNotFound()) << k << " " << s.ToString();
    }
  }
  std::printf("  resurrected by RocksDB: %d of %d keys\n", resurrected, kKeys);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

TEST(LiveKeyDBTest, PutEntityWithAttributeGroupsIndexesEveryFamily) {
#if !DLCBF_ROCKSDB_AT_LEAST(8, 9)
  GTEST_SKIP() << "RocksDB " << ROCKSDB_MAJOR << "." << ROCKSDB_MINOR
               << " has no PutEntity with AttributeGroups (it came in 8.9)";
#else
  const std::string dir = TestDir("attribute_groups");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  rocksdb::ColumnFamilyHandle* c1 = nullptr;
  ASSERT_TRUE(db->CreateColumnFamily(BaseOptions(), "c1", &c1).ok());
  // (WideColumn holds Slices: the value strings must outlive the call.)
  std::deque<std::string> values;
  auto groups = [&](const std::string& v) {
    values.push_back("d" + v);
    const std::string& dv = values.back();
    values.push_back("c" + v);
    const std::string& cv = values.back();
    rocksdb::AttributeGroups g;
    g.emplace_back(db->DefaultColumnFamily(),
                   rocksdb::WideColumns{{rocksdb::kDefaultWideColumnName, dv}, {"col", "x"}});
    g.emplace_back(c1, rocksdb::WideColumns{{rocksdb::kDefaultWideColumnName, cv}});
    return g;
  };
  WriteOptions wo;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(db->PutEntity(wo, Key("e", i), groups(std::to_string(i))).ok());
  for (int i = 0; i < 50; ++i) {
    std::string v;
    ASSERT_TRUE(db->Get(ReadOptions(), db->DefaultColumnFamily(), Key("e", i), &v).ok()) << Key("e", i);
    EXPECT_EQ(v, "d" + std::to_string(i));
    ASSERT_TRUE(db->Get(ReadOptions(), c1, Key("e", i), &v).ok()) << Key("e", i);
    EXPECT_EQ(v, "c" + std::to_string(i));
    rocksdb::PinnableWideColumns cols;
    ASSERT_TRUE(db->GetEntity(ReadOptions(), db->DefaultColumnFamily(), Key("e", i), &cols).ok());
    EXPECT_EQ(cols.columns().size(), 2u);
  }
  const LiveKeyStats st = Settled(db);
  EXPECT_EQ(Cf(st, 0).entries, 50u) << st.ToString();
  EXPECT_EQ(Cf(st, c1->GetID()).entries, 50u) << st.ToString();
  EXPECT_EQ(st.unseen_write_detections, 0u) << "LiveKeyDB's own PutEntity went through its index";
  // Negative control: the same call on the base DB, as StackableDB's
  // forwarding made it before LiveKeyDB overrode it, leaves the key out of
  // the index; only the fail-safe (the sequence-number ledger) keeps it
  // found: the read sees the unseen write and goes to RocksDB.
  // (The ledger sees it at once: the read's "no" goes unverified to
  // RocksDB; the detection's certainty and the rebuild follow.)
  ASSERT_TRUE(db->GetBaseDB()->PutEntity(wo, "bypassed", groups("b")).ok());
  std::string v;
  EXPECT_TRUE(db->GetBaseDB()->Get(ReadOptions(), "bypassed", &v).ok());
  EXPECT_TRUE(db->Get(ReadOptions(), "bypassed", &v).ok());
  const LiveKeyStats after = db->GetLiveKeyStats();
  EXPECT_GT(after.unverified_reads + after.unseen_write_detections,
            st.unverified_reads + st.unseen_write_detections)
      << "a write behind LiveKeyDB's back went unseen: this test could not tell the paths apart";
  // Empty groups: RocksDB's own answer, unchanged.
  const Status empty_ours = db->PutEntity(wo, "z", rocksdb::AttributeGroups{});
  const Status empty_base = db->GetBaseDB()->PutEntity(wo, "z", rocksdb::AttributeGroups{});
  EXPECT_EQ(empty_ours.code(), empty_base.code()) << empty_ours.ToString() << " / " << empty_base.ToString();
  ASSERT_TRUE(db->DestroyColumnFamilyHandle(c1).ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
#endif
}

TEST(LiveKeyDBTest, BatchWithTimedPutIsIndexed) {
#if !DLCBF_ROCKSDB_AT_LEAST(9, 1)
  GTEST_SKIP() << "RocksDB " << ROCKSDB_MAJOR << "." << ROCKSDB_MINOR
               << " has no TimedPut in write batches (it came in 9.1)";
#else
  const std::string dir = TestDir("timed_put");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  rocksdb::WriteBatch b;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(b.TimedPut(db->DefaultColumnFamily(), Key("tp", i), "v", 1700000000 + i).ok());
  }
  const Status s = db->Write(WriteOptions(), &b);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < 20; ++i) {
    std::string v;
    EXPECT_TRUE(db->Get(ReadOptions(), Key("tp", i), &v).ok()) << Key("tp", i);
  }
  EXPECT_EQ(Cf(Settled(db)).entries, 20u);
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
#endif
}

TEST(LiveKeyDBTest, TwoPhaseIngestionIndexesTheFiles) {
#if !DLCBF_ROCKSDB_AT_LEAST(11, 5)
  GTEST_SKIP() << "RocksDB " << ROCKSDB_MAJOR << "." << ROCKSDB_MINOR
               << " has no PrepareFileIngestion / CommitFileIngestionHandles (they came in 11.5)";
#else
  const std::string dir = TestDir("two_phase_ingest");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 100, 0, "t");
  auto write_sst = [&](const std::string& path, int from, int to, const char* v) {
    rocksdb::SstFileWriter w(rocksdb::EnvOptions(), BaseOptions());
    ASSERT_TRUE(w.Open(path).ok());
    for (int i = from; i < to; ++i) ASSERT_TRUE(w.Put(Key("t", i), v).ok());
    ASSERT_TRUE(w.Finish().ok());
  };
  const std::string a = dir + "_a.sst", b = dir + "_b.sst", c = dir + "_c.sst";
  write_sst(a, 50, 150, "a");   // 50 overwrites, 50 new
  write_sst(b, 150, 200, "b");  // 50 new, committed with the single-handle call
  write_sst(c, 200, 250, "c");  // prepared on the base DB: refused
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = db->DefaultColumnFamily();
  arg.external_files = {a};
  std::unique_ptr<rocksdb::FileIngestionHandle> ha;
  ASSERT_TRUE(db->PrepareFileIngestion({arg}, &ha).ok());
  std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> hs;
  hs.push_back(std::move(ha));
  ASSERT_TRUE(db->CommitFileIngestionHandles(std::move(hs)).ok());
  for (int i = 50; i < 150; ++i) oracle[Key("t", i)] = "a";
  std::unique_ptr<rocksdb::FileIngestionHandle> hb;
  ASSERT_TRUE(db->PrepareFileIngestion(db->DefaultColumnFamily(), {b}, rocksdb::IngestExternalFileOptions(), &hb).ok());
  ASSERT_TRUE(db->CommitFileIngestionHandle(std::move(hb)).ok());
  for (int i = 150; i < 200; ++i) oracle[Key("t", i)] = "b";
  // A handle the index never saw prepared is refused, and nothing lands.
  std::unique_ptr<rocksdb::FileIngestionHandle> hc;
  arg.external_files = {c};
  ASSERT_TRUE(db->GetBaseDB()->PrepareFileIngestion({arg}, &hc).ok());
  std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> hcs;
  hcs.push_back(std::move(hc));
  EXPECT_TRUE(db->CommitFileIngestionHandles(std::move(hcs)).IsInvalidArgument());
  std::string v;
  EXPECT_TRUE(db->GetBaseDB()->Get(ReadOptions(), Key("t", 200), &v).IsNotFound());
  const LiveKeyStats st = Settled(db);
  EXPECT_EQ(Diag(st, "ingested_keys"), 150u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, 200u) << "overwrites are not counted twice: " << st.ToString();
  CheckAgainst(db.get(), oracle, Probes(260, "t"));
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
  for (const std::string& f : {a, b, c}) fs::remove(f);
#endif
}

TEST(LiveKeyDBTest, ClipColumnFamilyThenRebuildDropsTheClippedKeys) {
#if !DLCBF_ROCKSDB_AT_LEAST(8, 3)
  GTEST_SKIP() << "RocksDB " << ROCKSDB_MAJOR << "." << ROCKSDB_MINOR
               << " has no ClipColumnFamily (it came in 8.3)";
#else
  const std::string dir = TestDir("clip");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  auto oracle = Fill(db.get(), 300, 0, "q");
  ASSERT_TRUE(db->ClipColumnFamily(db->DefaultColumnFamily(), Key("q", 100), Key("q", 200)).ok());
  for (auto it = oracle.begin(); it != oracle.end();) {
    it = (it->first < Key("q", 100) || it->first >= Key("q", 200)) ? oracle.erase(it) : std::next(it);
  }
  ASSERT_TRUE(db->WaitForBackgroundRebuilds(60000));
  const LiveKeyStats st = Settled(db);
  EXPECT_GE(st.auto_rebuilds, 1u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, 100u) << "the clipped keys' entries were dropped: " << st.ToString();
  CheckAgainst(db.get(), oracle, Probes(300, "q"));
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
#endif
}

TEST(LiveKeyDBTest, ImportFromSeveralExportsIsIndexed) {
#if !DLCBF_ROCKSDB_AT_LEAST(8, 4)
  GTEST_SKIP() << "RocksDB " << ROCKSDB_MAJOR << "." << ROCKSDB_MINOR
               << " has no CreateColumnFamilyWithImport over several exports (it came in 8.4)";
#else
  const std::string dir = TestDir("import_multi");
  const std::string src_dir = dir + "_src";
  std::vector<rocksdb::ExportImportFilesMetaData*> metas;
  {
    // Two plain DBs, each exporting its default family (disjoint keys).
    for (int part = 0; part < 2; ++part) {
      rocksdb::DB* src = nullptr;
      const std::string d = src_dir + std::to_string(part);
      fs::remove_all(d);
      ASSERT_TRUE(dlcbf::compat::OpenDB(BaseOptions(), d, &src).ok());
      for (int i = part * 100; i < part * 100 + 100; ++i) {
        ASSERT_TRUE(src->Put(WriteOptions(), Key("x", i), "x").ok());
      }
      ASSERT_TRUE(src->Flush(rocksdb::FlushOptions()).ok());
      rocksdb::Checkpoint* cp = nullptr;
      ASSERT_TRUE(rocksdb::Checkpoint::Create(src, &cp).ok());
      rocksdb::ExportImportFilesMetaData* m = nullptr;
      ASSERT_TRUE(cp->ExportColumnFamily(src->DefaultColumnFamily(), d + "_export", &m).ok());
      metas.push_back(m);
      delete cp;
      ASSERT_TRUE(src->Close().ok());
      delete src;
    }
  }
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  rocksdb::ColumnFamilyHandle* h = nullptr;
  const std::vector<const rocksdb::ExportImportFilesMetaData*> cmetas(metas.begin(), metas.end());
  ASSERT_TRUE(db->CreateColumnFamilyWithImport(BaseOptions(), "imported", rocksdb::ImportColumnFamilyOptions(),
                                               cmetas, &h).ok());
  for (int i = 0; i < 200; ++i) {
    std::string v;
    EXPECT_TRUE(db->Get(ReadOptions(), h, Key("x", i), &v).ok()) << Key("x", i);
  }
  std::string v;
  EXPECT_TRUE(db->Get(ReadOptions(), h, Key("x", 200), &v).IsNotFound());
  const LiveKeyStats st = Settled(db);
  EXPECT_TRUE(Cf(st, h->GetID()).indexed) << st.ToString();
  EXPECT_EQ(Cf(st, h->GetID()).entries, 200u) << st.ToString();
  // Reads go to RocksDB until the world watch has accounted for the
  // import's MANIFEST edit; then the index serves: an absent key is
  // answered from it alone.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool served = false;
  while (!served && std::chrono::steady_clock::now() < deadline) {
    const uint64_t before = db->GetLiveKeyStats().short_circuited;
    EXPECT_TRUE(db->Get(ReadOptions(), h, Key("x", 200), &v).IsNotFound());
    served = db->GetLiveKeyStats().short_circuited > before;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(served) << "the index never served the imported family";
  ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  for (auto* m : metas) delete m;
  fs::remove_all(dir);
  for (int part = 0; part < 2; ++part) {
    fs::remove_all(src_dir + std::to_string(part));
    fs::remove_all(src_dir + std::to_string(part) + "_export");
  }
#endif
}

// ---------------------------------------------------------------------------
TEST(LiveKeyDBTest, ColumnFamilies) {
  const std::string dir = TestDir("cf");
  rocksdb::Options o = BaseOptions();
  o.create_missing_column_families = true;
  // A comparator that may call different bytes equal is not indexed.
  struct LooseComparator : public rocksdb::Comparator {
    const char* Name() const override { return "LooseComparator"; }
    int Compare(const Slice& a, const Slice& b) const override {
      return rocksdb::BytewiseComparator()->Compare(a, b);
    }
    void FindShortestSeparator(std::string*, const Slice&) const override {}
    void FindShortSuccessor(std::string*) const override {}
  };
  static LooseComparator loose;
  rocksdb::ColumnFamilyOptions loose_opts(o);
  loose_opts.comparator = &loose;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfds = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o)},
      {"one", rocksdb::ColumnFamilyOptions(o)},
      {"loose", loose_opts}};
  std::vector<rocksdb::ColumnFamilyHandle*> hs;
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(rocksdb::DBOptions(o), SmallIndex(), dir, cfds, &hs, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  WriteOptions wo;
  ASSERT_TRUE(db->Put(wo, hs[1], "k", "one").ok());
  ASSERT_TRUE(db->Put(wo, hs[2], "k", "loose").ok());
  std::string v;
  EXPECT_TRUE(db->Get(ReadOptions(), hs[0], "k", &v).IsNotFound());
  EXPECT_TRUE(db->Get(ReadOptions(), hs[1], "k", &v).ok());
  EXPECT_TRUE(db->Get(ReadOptions(), hs[2], "k", &v).ok());
  EXPECT_EQ(v, "loose");
  rocksdb::ColumnFamilyHandle* two = nullptr;
  ASSERT_TRUE(db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(o), "two", &two).ok());
  ASSERT_TRUE(db->Put(wo, two, "t", "2").ok());
  EXPECT_TRUE(db->Get(ReadOptions(), two, "t", &v).ok());
  EXPECT_TRUE(db->Get(ReadOptions(), two, "k", &v).IsNotFound());
  EXPECT_TRUE(db->Put(wo, hs[1], "k", "ts", "x").IsInvalidArgument());  // timestamps
  LiveKeyStats st = Settled(db);
  ASSERT_EQ(st.column_families.size(), 4u) << st.ToString();
  EXPECT_EQ(Cf(st, hs[1]->GetID()).entries, 1u);
  EXPECT_FALSE(Cf(st, hs[2]->GetID()).indexed);
  EXPECT_NE(Cf(st, hs[2]->GetID()).bypass_reason.find("LooseComparator"), std::string::npos);
  EXPECT_EQ(Cf(st, two->GetID()).entries, 1u);
  EXPECT_TRUE(db->RebuildIndex(hs[2]).IsNotSupported());
  ASSERT_TRUE(db->RebuildIndex(hs[1]).ok());

  ASSERT_TRUE(db->DropColumnFamily(two).ok());
  ASSERT_TRUE(db->DestroyColumnFamilyHandle(two).ok());
  EXPECT_EQ(Settled(db).column_families.size(), 3u);
  for (auto* h : hs) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();

  // Both indexed families come back from the file.
  cfds.resize(3);
  ASSERT_TRUE(LiveKeyDB::Open(rocksdb::DBOptions(o), SmallIndex(), dir, cfds, &hs, &raw).ok());
  db.reset(raw);
  st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 2u) << st.ToString();
  EXPECT_TRUE(db->Get(ReadOptions(), hs[1], "k", &v).ok());
  EXPECT_EQ(v, "one");
  for (auto* h : hs) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// An index caught in the middle of its incremental migration is still
// complete and persistable: it is saved at Close, loaded at Open, and then
// finishes migrating as keys keep coming, without losing one.
TEST(LiveKeyDBTest, IndexPersistsMidMigrationAndFinishesIt) {
  const std::string dir = TestDir("midmigration");
  LiveKeyIndexOptions io = SmallIndex(1000);
  io.kernel = dlcbf::ElasticKernel::kFast;  // the kernel that migrates in steps
  io.auto_rebuild_drift = 0;  // keep this index (no rebuild replaces it)
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), io, dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  WriteOptions wo;
  int n = 0;
  while (Cf(Settled(db)).mode != "dlcbf-migrating" && n < 5000) {
    ASSERT_TRUE(db->Put(wo, Key("m", n++), "v").ok());
  }
  ASSERT_EQ(Cf(Settled(db)).mode, "dlcbf-migrating") << n;
  EXPECT_GT(n, 1000);  // not before the sizing
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  ASSERT_TRUE(fs::exists(dir + "/LIVEKEY_INDEX"));

  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), io, dir, &raw).ok());
  db.reset(raw);
  LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 1u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, static_cast<uint64_t>(n));
  std::string v;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(db->Get(ReadOptions(), Key("m", i), &v).ok()) << i;
  const int loaded = n;
  while (Cf(Settled(db)).mode != "elastic-abf" && n < 20000) {
    ASSERT_TRUE(db->Put(wo, Key("m", n++), "v").ok());
  }
  st = Settled(db);
  EXPECT_EQ(Cf(st).mode, "elastic-abf") << st.ToString();
  EXPECT_GT(n, loaded);
  EXPECT_EQ(Cf(st).entries, static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) ASSERT_TRUE(db->Get(ReadOptions(), Key("m", i), &v).ok()) << i;
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
TEST(LiveKeyDBTest, DriftTenfoldThenRebuild) {
  const std::string dir = TestDir("drift");
  constexpr int kExpected = 1000;
  constexpr int kKeys = 10 * kExpected;
  // 1. No automatic rebuilds: the elastic fallback keeps it lossless.
  LiveKeyIndexOptions io = SmallIndex(kExpected);
  io.auto_rebuild_drift = 0;
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), io, dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  WriteOptions wo;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Put(wo, Key("d", i), "v").ok());
  LiveKeyStats st = Settled(db);
  // The dense kernel (default) overflows into its stash; the fast one
  // migrates to its ABF.
  EXPECT_EQ(Cf(st).mode, io.kernel == dlcbf::ElasticKernel::kDense ? "dlcbf-overflow" : "elastic-abf")
      << st.ToString();
  EXPECT_EQ(st.index_migrations, 1u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, static_cast<uint64_t>(kKeys));
  const double fpr_drifted = Cf(st).predicted_fpr;
  std::string v;
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Get(ReadOptions(), Key("d", i), &v).ok()) << i;
  ASSERT_TRUE(db->RebuildIndex().ok());
  st = Settled(db);
  EXPECT_EQ(Cf(st).mode, "dlcbf");
  EXPECT_GE(Cf(st).sized_for, static_cast<uint64_t>(kKeys));
  EXPECT_LT(Cf(st).predicted_fpr, 0.01);
  EXPECT_LT(Cf(st).predicted_fpr, fpr_drifted);
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Get(ReadOptions(), Key("d", i), &v).ok()) << i;
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);

  // 2. Automatic: rebuilds in the background as the keys grow 10x.
  io.auto_rebuild_drift = 1.5;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), io, dir, &raw).ok());
  db.reset(raw);
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(db->Put(wo, Key("d", i), "v").ok());
    if (i % 997 == 0) {  // readers never miss while it happens
      for (int j = 0; j <= i; j += 7) ASSERT_TRUE(db->Get(ReadOptions(), Key("d", j), &v).ok());
    }
  }
  ASSERT_TRUE(db->WaitForBackgroundRebuilds(20000));
  st = Settled(db);
  EXPECT_GE(st.auto_rebuilds, 1u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, static_cast<uint64_t>(kKeys));
  EXPECT_GE(static_cast<double>(Cf(st).sized_for) * 1.5, static_cast<double>(kKeys)) << st.ToString();
  EXPECT_EQ(Cf(st).mode, "dlcbf") << st.ToString();
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Get(ReadOptions(), Key("d", i), &v).ok()) << i;
  std::printf("  %s\n", st.ToString().c_str());
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  EXPECT_NE(ReadLog(dir).find("automatic"), std::string::npos);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Deferred liveness checks (blind overwrites and deletes) across Close and
// a SIGKILL: no key is lost while checks are pending, a Close drains them
// (the saved index is exact), and a crash leaves no index file, so the
// reopen rebuilds from the data.
namespace {

// The workload of the pending-checks tests: 200 keys, then blind
// overwrites of 0..49 and deletes of 150..199 (100 checks).
[[maybe_unused]] std::map<std::string, std::string> BlindWrites(LiveKeyDB* db) {
  std::map<std::string, std::string> oracle;
  for (int i = 0; i < 200; ++i) {
    EXPECT_TRUE(db->Put(WriteOptions(), Key("p", i), "v").ok());
    oracle[Key("p", i)] = "v";
  }
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(db->Put(WriteOptions(), Key("p", i), "w").ok());
    oracle[Key("p", i)] = "w";
    EXPECT_TRUE(db->Delete(WriteOptions(), Key("p", 150 + i)).ok());
    oracle.erase(Key("p", 150 + i));
  }
  return oracle;
}

#ifdef DLCBF_TESTING
struct CheckPause {
  CheckPause() { dlcbf::internal::SetLiveKeyCheckPauseForTesting(true); }
  ~CheckPause() { dlcbf::internal::SetLiveKeyCheckPauseForTesting(false); }
};
#endif

}  // namespace

TEST(LiveKeyDBDeferredChecks, PendingChecksLoseNothingAndCloseDrainsThem) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build (the checker pause hook exists only there)";
#else
  const std::string dir = TestDir("pending");
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  std::map<std::string, std::string> oracle;
  {
    CheckPause pause;
    oracle = BlindWrites(db.get());
    const LiveKeyStats st = db->GetLiveKeyStats();
    EXPECT_EQ(Diag(st, "pending_checks"), 100u) << st.ToString();
    EXPECT_EQ(Diag(st, "liveness_reads"), 0u) << "overwrites and deletes read on the write path";
    // The checks share snapshots: a new one only when the key's stripe was
    // written after the current one was taken. With 1024 stripes and 100
    // distinct keys that happens only when two of those keys share a
    // stripe, so far fewer snapshots than checks.
    EXPECT_GE(Diag(st, "check_snapshots"), 1u);
    EXPECT_LT(Diag(st, "check_snapshots"), Diag(st, "deferred_checks") / 4) << st.ToString();
    // Pending: 50 second copies and 50 deleted keys' copies are still
    // counted; every live key is found, every deleted one is not (RocksDB
    // answers where the index over-counts).
    EXPECT_EQ(Cf(st).entries, 250u);
    CheckAgainst(db.get(), oracle, Probes(200, "p"));
    // A key Put again before its delete's check ran must stay found.
    ASSERT_TRUE(db->Put(WriteOptions(), Key("p", 150), "again").ok());
    oracle[Key("p", 150)] = "again";
    // Close drains the queue although the checker is paused.
    ASSERT_TRUE(db->Close().ok());
    db.reset();
  }
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  db.reset(raw);
  const LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 1u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, oracle.size()) << "the saved index is exact: " << st.ToString();
  CheckAgainst(db.get(), oracle, Probes(200, "p"));
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
#endif
}

// The child of SigkillWithPendingChecksRebuilds, started by exec of this
// binary with --gtest_also_run_disabled_tests (so never run by ctest
// itself): writes with the checker paused, reports, and kills itself.
TEST(LiveKeyDBDeferredChecks, DISABLED_ChildWritesThenDies) {
#ifdef DLCBF_TESTING
  const char* dir = std::getenv("DLCBF_LIVEKEY_CRASH_DIR");
  ASSERT_NE(dir, nullptr) << "run only by SigkillWithPendingChecksRebuilds";
  dlcbf::internal::SetLiveKeyCheckPauseForTesting(true);
  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  BlindWrites(raw);
  ASSERT_EQ(Diag(raw->GetLiveKeyStats(), "pending_checks"), 100u);
  std::ofstream(std::string(dir) + "/CHILD_READY") << "100 checks pending\n";
  raise(SIGKILL);  // no Close: the checks and the index die with the process
#endif
}

TEST(LiveKeyDBDeferredChecks, SigkillWithPendingChecksRebuilds) {
#ifndef DLCBF_TESTING
  GTEST_SKIP() << "needs the DLCBF_TESTING build (the checker pause hook exists only there)";
#else
  const std::string dir = TestDir("sigkill");
  fs::create_directories(dir);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // only exec after fork in a threaded process
    setenv("DLCBF_LIVEKEY_CRASH_DIR", dir.c_str(), 1);
    execl("/proc/self/exe", "live_key_db_test", "--gtest_also_run_disabled_tests",
          "--gtest_filter=LiveKeyDBDeferredChecks.DISABLED_ChildWritesThenDies", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "child did not die by SIGKILL (status " << status << ")";
  ASSERT_TRUE(fs::exists(dir + "/CHILD_READY")) << "child was killed before its writes were done";

  // The same writes, replayed into a map: what the DB must hold.
  std::map<std::string, std::string> oracle;
  for (int i = 0; i < 200; ++i) oracle[Key("p", i)] = i < 50 ? "w" : "v";
  for (int i = 150; i < 200; ++i) oracle.erase(Key("p", i));

  LiveKeyDB* raw = nullptr;
  ASSERT_TRUE(LiveKeyDB::Open(BaseOptions(), SmallIndex(), dir, &raw).ok());
  std::unique_ptr<LiveKeyDB> db(raw);
  const LiveKeyStats st = Settled(db);
  EXPECT_EQ(st.index_file_loads, 0u) << st.ToString();
  EXPECT_EQ(st.rebuilds, 1u) << st.ToString();
  EXPECT_EQ(Cf(st).entries, oracle.size()) << st.ToString();
  CheckAgainst(db.get(), oracle, Probes(200, "p"));
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  fs::remove_all(dir);
#endif
}
