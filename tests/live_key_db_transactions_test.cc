// LiveKeyDB's transaction routes (filter_policy/rocksdb/live_key_db/
// transactions.cc and transaction_db.cc): every commit indexed, reads
// inside a transaction that skip the DB for absent keys, two-phase commit
// across a crash, the refusals at Open, and a concurrency oracle over
// committing, rolling back and conflicting transactions. Each lost-key
// path has a negative control (a test hook puts the wrong behaviour back)
// that must see the loss. The TransactionDB's non-transactional writes are
// checked against RocksDB's own TransactionDB (lock order and timeouts,
// range deletions without concurrency control). Every directory a test
// makes is removed when it ends.
#include "dlcbf/rocksdb/live_key_db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/internal/hash.h"
#include "filter_policy/rocksdb/live_key_db/live_key_index.h"
#include "filter_policy/testing/live_key_db_testing.h"
#include "rocksdb/db.h"
#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/transaction_db.h"
#include "rocksdb_test_util.h"

namespace fs = std::filesystem;
using dlcbf::LiveKeyDB;
using dlcbf::LiveKeyIndexOptions;
using dlcbf::LiveKeyStats;
using dlcbf::testing_util::Diag;
using dlcbf::internal::LiveKeyFault;
using rocksdb::ReadOptions;
using rocksdb::Status;
using rocksdb::Transaction;
using rocksdb::WriteOptions;

namespace {

// The directories the running test asked for: removed when it ends,
// passed or failed (a listener, so an ASSERT's early return leaves none).
std::mutex g_dirs_mu;
std::vector<std::string>& Dirs() {
  static auto* d = new std::vector<std::string>();
  return *d;
}
class RemoveTestDirs : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> l(g_dirs_mu);
    for (const std::string& d : Dirs()) {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
    Dirs().clear();
  }
};
const bool g_remove_test_dirs = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new RemoveTestDirs);
  return true;
}();

std::string TestDir(const std::string& name) {
  std::string d = dlcbf::testing_util::TestDir("live_key_db_transactions_test", name);
  std::lock_guard<std::mutex> l(g_dirs_mu);
  Dirs().push_back(d);
  return d;
}

std::string Key(const char* prefix, int i) {
  char b[32];
  std::snprintf(b, sizeof(b), "%s%07d", prefix, i);
  return b;
}

class FaultScope {
 public:
  explicit FaultScope(LiveKeyFault f) { dlcbf::internal::SetLiveKeyFaultForTesting(f); }
  ~FaultScope() { dlcbf::internal::SetLiveKeyFaultForTesting(LiveKeyFault::kNone); }
};

LiveKeyIndexOptions IndexOptions() {
  LiveKeyIndexOptions io;
  io.expected_keys = 100000;
  io.checkpoint_interval_seconds = 0;
  return io;
}

enum class Kind { kPessimistic, kOptimistic };

// One DB of either kind, as an app holds it.
struct TxnDb {
  Kind kind;
  rocksdb::TransactionDB* pess = nullptr;
  rocksdb::OptimisticTransactionDB* occ = nullptr;

  static Status Open(Kind kind, const std::string& dir, TxnDb* out,
                     rocksdb::TransactionDBOptions tdo = rocksdb::TransactionDBOptions()) {
    rocksdb::Options o;
    o.create_if_missing = true;
    out->kind = kind;
    if (kind == Kind::kPessimistic) return LiveKeyDB::OpenTransactionDB(o, tdo, IndexOptions(), dir, &out->pess);
    return LiveKeyDB::OpenOptimisticTransactionDB(o, IndexOptions(), dir, &out->occ);
  }
  rocksdb::DB* db() const { return pess != nullptr ? static_cast<rocksdb::DB*>(pess) : occ; }
  Transaction* Begin(Transaction* old = nullptr) {
    if (pess != nullptr) return pess->BeginTransaction(WriteOptions(), rocksdb::TransactionOptions(), old);
    return occ->BeginTransaction(WriteOptions(), rocksdb::OptimisticTransactionOptions(), old);
  }
  LiveKeyStats Stats() const { return LiveKeyDB::FromTransactionDB(db())->GetLiveKeyStats(); }
  void Close() {
    delete pess;
    delete occ;
    pess = nullptr;
    occ = nullptr;
  }
};

// Keys the DB below holds that the transaction DB (Get, MultiGet) or a
// transaction (Get, GetForUpdate) answers NotFound.
int CountLost(TxnDb* t, const std::vector<std::string>& keys) {
  rocksdb::DB* root = t->db()->GetRootDB();
  int lost = 0;
  std::unique_ptr<Transaction> txn(t->Begin());
  for (const std::string& k : keys) {
    std::string v;
    if (!root->Get(ReadOptions(), k, &v).ok()) continue;
    std::vector<std::string> vals;
    if (t->db()->Get(ReadOptions(), k, &v).IsNotFound() ||
        t->db()->MultiGet(ReadOptions(), {rocksdb::Slice(k)}, &vals)[0].IsNotFound() ||
        txn->Get(ReadOptions(), k, &v).IsNotFound() || txn->GetForUpdate(ReadOptions(), k, &v).IsNotFound()) {
      ++lost;
    }
  }
  txn->Rollback().PermitUncheckedError();
  return lost;
}

class LiveKeyDBTransactions : public ::testing::TestWithParam<Kind> {};

INSTANTIATE_TEST_SUITE_P(LiveKeyDB, LiveKeyDBTransactions, ::testing::Values(Kind::kPessimistic, Kind::kOptimistic),
                         [](const ::testing::TestParamInfo<Kind>& i) {
                           return i.param == Kind::kPessimistic ? std::string("TransactionDB")
                                                                : std::string("OptimisticTransactionDB");
                         });

// ---- Open ------------------------------------------------------------------------

TEST(LiveKeyDBTransactionsOpen, RefusesPoliciesItCannotIndexBeforeOpening) {
  for (auto policy : {rocksdb::WRITE_PREPARED, rocksdb::WRITE_UNPREPARED}) {
    const std::string dir = TestDir(std::string("policy") + std::to_string(static_cast<int>(policy)));
    rocksdb::TransactionDBOptions tdo;
    tdo.write_policy = policy;
    TxnDb t;
    const Status s = TxnDb::Open(Kind::kPessimistic, dir, &t, tdo);
    ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.ToString().find(policy == rocksdb::WRITE_PREPARED ? "WRITE_PREPARED" : "WRITE_UNPREPARED"),
              std::string::npos)
        << s.ToString();
    EXPECT_EQ(t.pess, nullptr);
    EXPECT_FALSE(fs::exists(dir)) << "nothing may be created";
  }
  rocksdb::TransactionDB* db = nullptr;
  rocksdb::Options o;
  o.create_if_missing = true;
  LiveKeyIndexOptions bad = IndexOptions();
  bad.expected_keys = 0;
  EXPECT_TRUE(LiveKeyDB::OpenTransactionDB(o, rocksdb::TransactionDBOptions(), bad, TestDir("bad"), &db)
                  .IsInvalidArgument());
  EXPECT_TRUE(LiveKeyDB::OpenTransactionDB(o, rocksdb::TransactionDBOptions(), IndexOptions(), TestDir("null"),
                                           nullptr)
                  .IsInvalidArgument());
  EXPECT_EQ(LiveKeyDB::FromTransactionDB(nullptr), nullptr);
}

// ---- commits ----------------------------------------------------------------------

// Commits, the DB's own writes and a commit-time batch are all found; the
// absent keys short-circuit, and no commit counts as a write LiveKeyDB
// never saw. Negative control: a commit that skips the index loses its
// keys.
TEST_P(LiveKeyDBTransactions, EveryCommitIsIndexed) {
  for (bool control : {false, true}) {
    if (control && !dlcbf::internal::kLiveKeyHooks) GTEST_SKIP() << "negative control: needs the DLCBF_TESTING build (fault hooks exist only there)";
    SCOPED_TRACE(control ? "negative control: commits not indexed" : "indexed");
    TxnDb t;
    ASSERT_TRUE(TxnDb::Open(GetParam(), TestDir(control ? "commit_nc" : "commit"), &t).ok());
    std::vector<std::string> keys;
    {
      std::unique_ptr<FaultScope> f(control ? new FaultScope(LiveKeyFault::kCommitUnindexed) : nullptr);
      for (int i = 0; i < 300; ++i) {
        std::unique_ptr<Transaction> txn(t.Begin());
        keys.push_back(Key("c", i));
        ASSERT_TRUE(txn->Put(keys.back(), "v").ok());
        keys.push_back(Key("d", i));
        ASSERT_TRUE(txn->Delete(keys.back()).ok());
        ASSERT_TRUE(txn->Put(keys.back(), "v").ok());
        ASSERT_TRUE(txn->Commit().ok());
      }
    }
    // The DB's own non-transactional writes.
    for (int i = 0; i < 100; ++i) {
      keys.push_back(Key("p", i));
      ASSERT_TRUE(t.db()->Put(WriteOptions(), keys.back(), "v").ok());
    }
    rocksdb::WriteBatch b;
    for (int i = 0; i < 100; ++i) {
      keys.push_back(Key("w", i));
      ASSERT_TRUE(b.Put(keys.back(), "v").ok());
    }
    ASSERT_TRUE(t.db()->Write(WriteOptions(), &b).ok());
    const int lost = CountLost(&t, keys);
    const LiveKeyStats st = t.Stats();
    if (control) {
      EXPECT_GT(lost, 500) << "the control must lose the unindexed commits";
    } else {
      EXPECT_EQ(lost, 0);
      EXPECT_EQ(st.unseen_write_detections, 0u);
      EXPECT_EQ(st.unverified_reads, 0u);
      // Absent keys: from the index alone.
      const uint64_t before = st.short_circuited;
      std::string v;
      for (int i = 0; i < 200; ++i) EXPECT_TRUE(t.db()->Get(ReadOptions(), Key("absent", i), &v).IsNotFound());
      EXPECT_GE(t.Stats().short_circuited - before, 190u);
    }
    t.Close();
  }
}

// Rollback, savepoints and failed commits index nothing; deletes by a
// commit are erased.
TEST_P(LiveKeyDBTransactions, RollbackAndSavepointsIndexNothing) {
  TxnDb t;
  ASSERT_TRUE(TxnDb::Open(GetParam(), TestDir("rollback"), &t).ok());
  const uint64_t inserts0 = Diag(t.Stats(), "index_inserts");
  {
    std::unique_ptr<Transaction> txn(t.Begin());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(txn->Put(Key("r", i), "v").ok());
    ASSERT_TRUE(txn->Rollback().ok());
  }
  EXPECT_EQ(Diag(t.Stats(), "index_inserts"), inserts0) << "a rollback indexes nothing";
  {
    std::unique_ptr<Transaction> txn(t.Begin());
    ASSERT_TRUE(txn->Put("kept", "v").ok());
    txn->SetSavePoint();
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(txn->Put(Key("s", i), "v").ok());
    ASSERT_TRUE(txn->RollbackToSavePoint().ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(Diag(t.Stats(), "index_inserts"), inserts0 + 1) << "only what was committed";
  std::string v;
  EXPECT_TRUE(t.db()->Get(ReadOptions(), "kept", &v).ok());
  {
    std::unique_ptr<Transaction> txn(t.Begin());
    ASSERT_TRUE(txn->Delete("kept").ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  ASSERT_TRUE(LiveKeyDB::FromTransactionDB(t.db())->WaitForDeferredChecks(10000));
  EXPECT_EQ(t.Stats().column_families[0].entries, 0u) << "the deleted key is erased";
  t.Close();
}

// Reads inside a transaction: its own writes come from its batch, absent
// keys from the index, and GetForUpdate keeps its isolation. Negative
// control: a GetForUpdate that asks the index alone misses the key the
// transaction wrote itself.
TEST_P(LiveKeyDBTransactions, ReadsInsideATransaction) {
  TxnDb t;
  ASSERT_TRUE(TxnDb::Open(GetParam(), TestDir("reads"), &t).ok());
  ASSERT_TRUE(t.db()->Put(WriteOptions(), "committed", "c").ok());
  ASSERT_TRUE(t.db()->Put(WriteOptions(), "doomed", "c").ok());
  std::unique_ptr<Transaction> txn(t.Begin());
  ASSERT_TRUE(txn->Put("mine", "m").ok());
  ASSERT_TRUE(txn->Delete("doomed").ok());
  std::string v;
  const uint64_t sc0 = t.Stats().short_circuited;
  ASSERT_TRUE(txn->Get(ReadOptions(), "mine", &v).ok());
  EXPECT_EQ(v, "m");
  ASSERT_TRUE(txn->GetForUpdate(ReadOptions(), "mine", &v).ok());
  EXPECT_EQ(v, "m");
  ASSERT_TRUE(txn->Get(ReadOptions(), "committed", &v).ok());
  EXPECT_EQ(v, "c");
  EXPECT_TRUE(txn->Get(ReadOptions(), "doomed", &v).IsNotFound());
  EXPECT_TRUE(txn->GetForUpdate(ReadOptions(), "absent", &v).IsNotFound());
  rocksdb::PinnableSlice ps;
  EXPECT_TRUE(txn->GetForUpdate(ReadOptions(), t.db()->DefaultColumnFamily(), "absent2", &ps).IsNotFound());
  std::vector<std::string> vals;
  const std::vector<Status> st =
      txn->MultiGet(ReadOptions(), {rocksdb::Slice("mine"), rocksdb::Slice("absent3"), rocksdb::Slice("committed"),
                                    rocksdb::Slice("doomed")},
                    &vals);
  ASSERT_EQ(st.size(), 4u);
  EXPECT_TRUE(st[0].ok());
  EXPECT_EQ(vals[0], "m");
  EXPECT_TRUE(st[1].IsNotFound());
  EXPECT_TRUE(st[2].ok());
  EXPECT_EQ(vals[2], "c");
  EXPECT_TRUE(st[3].IsNotFound());
  EXPECT_GE(t.Stats().short_circuited - sc0, 3u) << "absent, absent2, absent3 from the index alone";
  if (GetParam() == Kind::kPessimistic) {
    // GetForUpdate took its lock even though the index answered.
    std::unique_ptr<Transaction> other(t.Begin());
    other->SetLockTimeout(50);
    EXPECT_TRUE(other->Put("absent", "x").IsTimedOut()) << "the lock of GetForUpdate(absent) is held";
    other->Rollback().PermitUncheckedError();
  }
  if (dlcbf::internal::kLiveKeyHooks) {  // (the control needs the DLCBF_TESTING build)
    FaultScope f(LiveKeyFault::kTxnReadIgnoresOwnBatch);
    EXPECT_TRUE(txn->GetForUpdate(ReadOptions(), "mine", &v).IsNotFound())
        << "negative control: asking the index alone misses the transaction's own write";
  } else {
    std::printf("  negative control SKIPPED: needs the DLCBF_TESTING build (fault hooks exist only there)\n");
  }
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_TRUE(t.db()->Get(ReadOptions(), "mine", &v).ok());
  txn.reset();
  t.Close();
}

// A read-modify-write commits like a Put of a key known to be live: no
// liveness read, no deferred check (rep.h, LiveHint).
TEST_P(LiveKeyDBTransactions, ReadModifyWriteNeedsNoCheck) {
  {
    TxnDb t;
    ASSERT_TRUE(TxnDb::Open(GetParam(), TestDir("rmw"), &t).ok());
    LiveKeyDB* live = LiveKeyDB::FromTransactionDB(t.db());
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(t.db()->Put(WriteOptions(), Key("rmw", i), "0").ok());
    ASSERT_TRUE(live->WaitForDeferredChecks(10000));
    const LiveKeyStats before = t.Stats();
    for (int i = 0; i < 50; ++i) {
      std::unique_ptr<Transaction> txn(t.Begin());
      std::string v;
      ASSERT_TRUE(txn->GetForUpdate(ReadOptions(), Key("rmw", i), &v).ok());
      ASSERT_TRUE(txn->Put(Key("rmw", i), v + "1").ok());
      ASSERT_TRUE(txn->Commit().ok());
    }
    const LiveKeyStats after = t.Stats();
    EXPECT_EQ(Diag(after, "deferred_checks"), Diag(before, "deferred_checks")) << "no check for a key the transaction read live";
    EXPECT_EQ(Diag(after, "liveness_reads"), Diag(before, "liveness_reads"));
    EXPECT_EQ(Diag(after, "known_writes") - Diag(before, "known_writes"), 50u);
    EXPECT_EQ(Diag(after, "index_inserts"), Diag(before, "index_inserts"));

    t.Close();
  }
}

// What a stale hint would cost. k and j share one true fingerprint of the
// index. A transaction reads k live; another writer deletes k (erasing
// one copy of the fingerprint, which j's copy keeps "contained"); the
// transaction then writes k again. Trusting the read would add no copy for
// k, and deleting j later would lose k. The stripe's stamp changed with
// the delete, so the commit reads k's liveness and inserts. Negative
// control: a hint whose stamp always matches loses k.
TEST_P(LiveKeyDBTransactions, StaleReadHintNeverSkipsAnInsert) {
  LiveKeyIndexOptions io;
  io.expected_keys = 64;
  io.auto_rebuild_drift = 0;
  io.defer_liveness_checks = false;  // deletes erase at once
  io.checkpoint_interval_seconds = 0;
  // Two keys of one true fingerprint, found with a filter of the index's
  // geometry and seed.
  dlcbf::DenseDLeftOptions d;
  ASSERT_TRUE(dlcbf::live_key::LiveKeyIndex::DenseOptions(io, io.expected_keys, &d).ok());
  std::unique_ptr<dlcbf::DenseDLeftFilter> probe;
  ASSERT_TRUE(dlcbf::DenseDLeftFilter::Create(d, &probe).ok());
  auto fp = [&](const std::string& key) {
    const auto f = probe->FingerprintOfHash(dlcbf::internal::HashKey(key.data(), key.size(), io.seed));
    return std::make_pair(f.bucket, f.remainder);
  };
  const std::string k = "k";
  std::string j;
  for (int i = 0; i < 10000000 && j.empty(); ++i) {
    if (fp(Key("j", i)) == fp(k)) j = Key("j", i);
  }
  ASSERT_FALSE(j.empty()) << "no colliding key found";
  for (bool control : {false, true}) {
    if (control && !dlcbf::internal::kLiveKeyHooks) GTEST_SKIP() << "negative control: needs the DLCBF_TESTING build (fault hooks exist only there)";
    SCOPED_TRACE(control ? "negative control: stale hints trusted" : "stamps checked");
    rocksdb::Options o;
    o.create_if_missing = true;
    TxnDb t;
    t.kind = GetParam();
    const std::string dir = TestDir(control ? "stale_nc" : "stale");
    if (GetParam() == Kind::kPessimistic) {
      ASSERT_TRUE(LiveKeyDB::OpenTransactionDB(o, rocksdb::TransactionDBOptions(), io, dir, &t.pess).ok());
    } else {
      ASSERT_TRUE(LiveKeyDB::OpenOptimisticTransactionDB(o, io, dir, &t.occ).ok());
    }
    ASSERT_TRUE(t.db()->Put(WriteOptions(), k, "1").ok());
    ASSERT_TRUE(t.db()->Put(WriteOptions(), j, "1").ok());
    std::unique_ptr<FaultScope> f(control ? new FaultScope(LiveKeyFault::kStaleLiveHint) : nullptr);
    std::unique_ptr<Transaction> txn(t.Begin());
    std::string v;
    ASSERT_TRUE(txn->Get(ReadOptions(), k, &v).ok());  // live: a hint
    ASSERT_TRUE(t.db()->Delete(WriteOptions(), k).ok());
    ASSERT_TRUE(txn->Put(k, "again").ok());
    ASSERT_TRUE(txn->Commit().ok());
    txn.reset();
    f.reset();
    ASSERT_TRUE(t.db()->Delete(WriteOptions(), j).ok());
    const bool lost = t.db()->Get(ReadOptions(), k, &v).IsNotFound();
    EXPECT_TRUE(t.db()->GetRootDB()->Get(ReadOptions(), k, &v).ok());
    EXPECT_EQ(lost, control) << (control ? "the control must lose k" : "k lost");
    t.Close();
  }
}

// The TransactionDB's own Put takes the key's lock before LiveKeyDB's
// stripe: a Put waiting for a transaction's lock must not keep that
// transaction's commit waiting (which would end only by the Put's lock
// timeout).
TEST(LiveKeyDBTransactionsLocks, WriteWaitingForALockDoesNotBlockTheCommit) {
  TxnDb t;
  rocksdb::TransactionDBOptions tdo;
  tdo.default_lock_timeout = 20000;  // a deadlock would last this long
  ASSERT_TRUE(TxnDb::Open(Kind::kPessimistic, TestDir("locks"), &t, tdo).ok());
  std::unique_ptr<Transaction> txn(t.Begin());
  std::string v;
  ASSERT_TRUE(txn->GetForUpdate(ReadOptions(), "k", &v).IsNotFound());
  ASSERT_TRUE(txn->Put("k", "from-txn").ok());
  std::atomic<bool> put_done{false};
  Status put_status;
  std::thread writer([&] {
    put_status = t.db()->Put(WriteOptions(), "k", "from-put");
    put_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the Put waits for the lock
  EXPECT_FALSE(put_done.load());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(txn->Commit().ok());
  const double commit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  writer.join();
  EXPECT_TRUE(put_status.ok()) << put_status.ToString();
  EXPECT_LT(commit_s, 10.0) << "the commit waited for the Put's lock timeout";
  ASSERT_TRUE(t.db()->Get(ReadOptions(), "k", &v).ok());
  EXPECT_EQ(v, "from-put");
  txn.reset();
  t.Close();
}

// The TransactionDB's own writes from several threads into two families:
// each key lands in the family it names and is found there. (RocksDB's
// Transaction::RebuildFromWriteBatch looks families up through a handle
// DBImpl shares with its write thread: concurrent Writes put entries into
// the other family, where the index never counted them.)
TEST(LiveKeyDBTransactionsConcurrency, ConcurrentDbWritesLandInTheirFamily) {
  const std::string dir = TestDir("families");
  rocksdb::Options o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfds{
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o)},
      {"cf1", rocksdb::ColumnFamilyOptions(o)}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::TransactionDB* db = nullptr;
  ASSERT_TRUE(LiveKeyDB::OpenTransactionDB(rocksdb::DBOptions(o), rocksdb::TransactionDBOptions(), IndexOptions(),
                                           dir, cfds, &handles, &db)
                  .ok());
  constexpr int kThreads = 4, kPer = 6000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) {
        const int fam = (i + t) % 2;
        const std::string k = Key(("f" + std::to_string(fam) + "t" + std::to_string(t) + "_").c_str(), i);
        if (i % 3 == 0) {
          rocksdb::WriteBatch b;
          ASSERT_TRUE(b.Put(handles[fam], k, "v").ok());
          ASSERT_TRUE(db->Write(WriteOptions(), &b).ok());
        } else {
          ASSERT_TRUE(db->Put(WriteOptions(), handles[fam], k, "v").ok());
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  rocksdb::DB* root = db->GetRootDB();
  int misplaced = 0, lost = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPer; ++i) {
      const int fam = (i + t) % 2;
      const std::string k = Key(("f" + std::to_string(fam) + "t" + std::to_string(t) + "_").c_str(), i);
      std::string v;
      if (!root->Get(ReadOptions(), handles[fam], k, &v).ok()) ++misplaced;
      if (db->Get(ReadOptions(), handles[fam], k, &v).IsNotFound()) ++lost;
    }
  }
  EXPECT_EQ(misplaced, 0) << "keys written into the other family";
  EXPECT_EQ(lost, 0);
  for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  delete db;
}

// ---- the TransactionDB's own writes, against RocksDB's --------------------------------

// A pessimistic TransactionDB in `dir`: LiveKeyDB's, or RocksDB's own (the
// control: what the same calls must do).
Status OpenPessimistic(bool live, const std::string& dir, const rocksdb::TransactionDBOptions& tdo,
                       rocksdb::TransactionDB** db) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.merge_operator = std::make_shared<dlcbf::testing_util::AppendOperator>();
  if (live) return LiveKeyDB::OpenTransactionDB(o, tdo, IndexOptions(), dir, db);
  return rocksdb::TransactionDB::Open(o, tdo, dir, db);
}

// Aborts the process if not disarmed (destroyed) within `seconds`: a
// deadlocked writer fails the suite instead of hanging it.
class Watchdog {
 public:
  Watchdog(double seconds, std::string what)
      : what_(std::move(what)), thread_([this, seconds] {
          std::unique_lock<std::mutex> l(mu_);
          if (!cv_.wait_for(l, std::chrono::duration<double>(seconds), [this] { return disarmed_; })) {
            std::fprintf(stderr, "FATAL: %s did not finish within %.0f s (a deadlock?): aborting\n", what_.c_str(),
                         seconds);
            std::fflush(stdout);
            std::fflush(stderr);
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(mu_);
      disarmed_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

struct WritersOutcome {
  uint64_t ok = 0, timed_out = 0, other = 0;
  bool in_time = false;  // every write returned before the deadline
  std::string first_error;
};

constexpr int kOppositeKeys = 8;

// Two threads write batches of the same kOppositeKeys keys, one in
// ascending key order, the other descending, `rounds` batches each.
// RocksDB's own Write locks a batch's keys sorted: the two never wait for
// each other in a cycle, so with no transaction holding a lock every write
// succeeds, whatever default_lock_timeout says. Past `deadline_s` the
// writers stop after their current write; a writer still stuck 20 s later
// (a deadlock without a timeout) aborts the process (Watchdog).
WritersOutcome OppositeOrderWriters(rocksdb::TransactionDB* db, int rounds, double deadline_s) {
  WritersOutcome out;
  std::mutex mu;
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  Watchdog dog(deadline_s + 20, "two writers of batches in opposite key orders");
  std::vector<std::thread> ws;
  for (int w = 0; w < 2; ++w) {
    ws.emplace_back([&, w] {
      for (int r = 0; r < rounds && !stop.load(); ++r) {
        rocksdb::WriteBatch b;
        for (int i = 0; i < kOppositeKeys; ++i) {
          const int k = w == 0 ? i : kOppositeKeys - 1 - i;
          b.Put(Key("oo", k), std::to_string(w) + ":" + std::to_string(r)).PermitUncheckedError();
        }
        const Status s = db->Write(WriteOptions(), &b);
        std::lock_guard<std::mutex> l(mu);
        if (s.ok()) {
          ++out.ok;
        } else {
          ++(s.IsTimedOut() ? out.timed_out : out.other);
          if (out.first_error.empty()) out.first_error = s.ToString();
        }
      }
      done++;
    });
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  while (done.load() < 2 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  for (auto& t : ws) t.join();  // (the watchdog ends a writer that never returns)
  std::lock_guard<std::mutex> l(mu);
  out.in_time = out.ok + out.timed_out + out.other == 2u * static_cast<uint64_t>(rounds);
  return out;
}

// Two threads writing the same keys in opposite orders through the
// TransactionDB's Write: every write succeeds, in bounded time, with
// default_lock_timeout = -1 (wait forever: a lock-order cycle would hang)
// and with the default timeouts (a cycle would time out), as with
// RocksDB's own TransactionDB (the control). Each batch is atomic: the
// keys end with one batch's values, all found through the index.
TEST(LiveKeyDBTransactionsLocks, DbWritesInOppositeKeyOrdersNeverDeadlock) {
  constexpr int kRounds = 1000;
  for (bool live : {false, true}) {
    for (int64_t timeout : {int64_t{-1}, rocksdb::TransactionDBOptions().default_lock_timeout}) {
      const std::string what = std::string(live ? "LiveKeyDB's" : "RocksDB's own (control)") +
                                " TransactionDB, default_lock_timeout = " + std::to_string(timeout);
      SCOPED_TRACE(what);
      rocksdb::TransactionDBOptions tdo;
      tdo.default_lock_timeout = timeout;
      rocksdb::TransactionDB* db = nullptr;
      ASSERT_TRUE(OpenPessimistic(live, TestDir(std::string("opposite_") + (live ? "live" : "own") +
                                                (timeout < 0 ? "_forever" : "_default")),
                                  tdo, &db)
                      .ok());
      const WritersOutcome o = OppositeOrderWriters(db, kRounds, 30.0);
      std::printf("%s: ok=%llu timed_out=%llu other=%llu of %d%s\n", what.c_str(),
                  static_cast<unsigned long long>(o.ok), static_cast<unsigned long long>(o.timed_out),
                  static_cast<unsigned long long>(o.other), 2 * kRounds, o.in_time ? "" : " (deadline passed)");
      EXPECT_TRUE(o.in_time) << "the writers did not finish within 30 s";
      EXPECT_EQ(o.ok, 2u * kRounds) << o.first_error;
      EXPECT_EQ(o.timed_out, 0u);
      EXPECT_EQ(o.other, 0u);
      std::string first, v;
      for (int i = 0; i < kOppositeKeys; ++i) {
        ASSERT_TRUE(db->Get(ReadOptions(), Key("oo", i), &v).ok()) << Key("oo", i);
        if (i == 0) first = v;
        EXPECT_EQ(v, first) << "one batch's values";
      }
      delete db;
    }
  }
}

// A non-transactional write waits for a transaction's lock as long as
// default_lock_timeout says, as RocksDB's own: a negative value waits
// forever (well past transaction_lock_timeout, which
// TransactionOptions::lock_timeout = -1 would mean), a positive one gives
// up after it. Both the batch Write and the single-key Put.
TEST(LiveKeyDBTransactionsLocks, DbWriteWaitsAsLongAsDefaultLockTimeoutSays) {
  for (bool live : {false, true}) {
    for (int64_t timeout : {int64_t{-1}, int64_t{100}}) {
      const std::string what = std::string(live ? "LiveKeyDB's" : "RocksDB's own (control)") +
                                " TransactionDB, default_lock_timeout = " + std::to_string(timeout);
      SCOPED_TRACE(what);
      rocksdb::TransactionDBOptions tdo;
      tdo.transaction_lock_timeout = 200;
      tdo.default_lock_timeout = timeout;
      rocksdb::TransactionDB* db = nullptr;
      ASSERT_TRUE(OpenPessimistic(live, TestDir(std::string("timeout_") + (live ? "live" : "own") +
                                                (timeout < 0 ? "_forever" : "_short")),
                                  tdo, &db)
                      .ok());
      Watchdog dog(60, what + ": writers waiting for a held lock");
      std::unique_ptr<Transaction> txn(db->BeginTransaction(WriteOptions()));
      ASSERT_TRUE(txn->Put("held", "txn").ok());
      Status write_status, put_status;
      std::thread writer([&] {
        rocksdb::WriteBatch b;
        b.Put("free", "w").PermitUncheckedError();
        b.Put("held", "w").PermitUncheckedError();
        write_status = db->Write(WriteOptions(), &b);
      });
      std::thread putter([&] { put_status = db->Put(WriteOptions(), "held", "p"); });
      std::this_thread::sleep_for(std::chrono::milliseconds(600));  // 3x transaction_lock_timeout
      EXPECT_TRUE(txn->Commit().ok());
      writer.join();
      putter.join();
      std::printf("%s: Write %s, Put %s\n", what.c_str(), write_status.ToString().c_str(),
                  put_status.ToString().c_str());
      std::string v;
      if (timeout < 0) {
        EXPECT_TRUE(write_status.ok()) << write_status.ToString();
        EXPECT_TRUE(put_status.ok()) << put_status.ToString();
        EXPECT_TRUE(db->Get(ReadOptions(), "free", &v).ok());
      } else {
        EXPECT_TRUE(write_status.IsTimedOut()) << write_status.ToString();
        EXPECT_TRUE(put_status.IsTimedOut()) << put_status.ToString();
        EXPECT_TRUE(db->Get(ReadOptions(), "free", &v).IsNotFound()) << "a failed batch writes nothing";
      }
      ASSERT_TRUE(db->Get(ReadOptions(), "held", &v).ok());
      txn.reset();
      delete db;
    }
  }
}

// The batch is replayed sorted by key; the entries of one key keep their
// order (Merges in order, a Delete then a Put), as RocksDB's own Write
// applies them.
TEST(LiveKeyDBTransactionsLocks, DbWriteKeepsEachKeysOrder) {
  for (bool live : {false, true}) {
    SCOPED_TRACE(live ? "LiveKeyDB's TransactionDB" : "RocksDB's own (control)");
    rocksdb::TransactionDB* db = nullptr;
    ASSERT_TRUE(OpenPessimistic(live, TestDir(live ? "order_live" : "order_own"), rocksdb::TransactionDBOptions(), &db)
                    .ok());
    ASSERT_TRUE(db->Put(WriteOptions(), "a", "a1").ok());
    ASSERT_TRUE(db->Put(WriteOptions(), "b", "b1").ok());
    rocksdb::WriteBatch b;
    ASSERT_TRUE(b.Merge("m", "1").ok());
    ASSERT_TRUE(b.Put("z", "z").ok());
    ASSERT_TRUE(b.Merge("m", "2").ok());
    ASSERT_TRUE(b.Delete("a").ok());
    ASSERT_TRUE(b.PutLogData("blob").ok());
    ASSERT_TRUE(b.Put("b", "b2").ok());
    ASSERT_TRUE(b.Merge("m", "3").ok());
    ASSERT_TRUE(b.Put("a", "a2").ok());
    ASSERT_TRUE(b.Delete("b").ok());
    ASSERT_TRUE(db->Write(WriteOptions(), &b).ok());
    std::string v;
    ASSERT_TRUE(db->Get(ReadOptions(), "m", &v).ok());
    EXPECT_EQ(v, "1,2,3");
    ASSERT_TRUE(db->Get(ReadOptions(), "a", &v).ok());
    EXPECT_EQ(v, "a2");
    EXPECT_TRUE(db->Get(ReadOptions(), "b", &v).IsNotFound());
    ASSERT_TRUE(db->Get(ReadOptions(), "z", &v).ok());
    EXPECT_EQ(v, "z");
    delete db;
  }
}

// A range deletion on a TransactionDB is made through Write(wo,
// {skip_concurrency_control = true}, batch) (transaction_db.h): it succeeds
// as with RocksDB's own, and the index stays exact: keys outside the range
// found, inside NotFound, a Put into the range afterwards (or later in the
// same batch) found, never NotFound for a key the DB holds, and no write
// LiveKeyDB did not account for. With concurrency control both refuse it
// alike.
TEST(LiveKeyDBTransactionsWrite, RangeDeletionWithoutConcurrencyControl) {
  constexpr int kKeys = 100;
  std::vector<Status> refused[2];
  for (bool live : {false, true}) {
    SCOPED_TRACE(live ? "LiveKeyDB's TransactionDB" : "RocksDB's own (control)");
    rocksdb::TransactionDB* db = nullptr;
    ASSERT_TRUE(OpenPessimistic(live, TestDir(live ? "range_live" : "range_own"), rocksdb::TransactionDBOptions(), &db)
                    .ok());
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(db->Put(WriteOptions(), Key("r", i), "v").ok());
    rocksdb::TransactionDBWriteOptimizations skip_cc;
    skip_cc.skip_concurrency_control = true;
    rocksdb::WriteBatch b;
    ASSERT_TRUE(b.DeleteRange(Key("r", 20), Key("r", 50)).ok());
    const Status s = db->Write(WriteOptions(), skip_cc, &b);
    ASSERT_TRUE(s.ok()) << s.ToString();
    // A range deletion and a Put into it, one batch; duplicate-key check
    // skipped too.
    rocksdb::TransactionDBWriteOptimizations both = skip_cc;
    both.skip_duplicate_key_check = true;
    rocksdb::WriteBatch b2;
    ASSERT_TRUE(b2.DeleteRange(Key("r", 80), Key("r", 90)).ok());
    ASSERT_TRUE(b2.Put(Key("r", 85), "again").ok());
    ASSERT_TRUE(db->Write(WriteOptions(), both, &b2).ok());
    ASSERT_TRUE(db->Put(WriteOptions(), Key("r", 30), "back").ok());
    // With concurrency control: refused by both (the same status).
    rocksdb::WriteBatch b3;
    ASSERT_TRUE(b3.DeleteRange(Key("r", 60), Key("r", 70)).ok());
    refused[live].push_back(db->Write(WriteOptions(), rocksdb::TransactionDBWriteOptimizations(), &b3));
    refused[live].push_back(db->Write(WriteOptions(), &b3));

    std::unique_ptr<Transaction> txn(db->BeginTransaction(WriteOptions()));
    rocksdb::DB* root = db->GetRootDB();
    int expected_live = 0, wrong = 0, lost = 0;
    for (int i = 0; i < kKeys; ++i) {
      const bool in_range = (i >= 20 && i < 50 && i != 30) || (i >= 80 && i < 90 && i != 85);
      const std::string k = Key("r", i);
      std::string v;
      expected_live += in_range ? 0 : 1;
      const bool held = root->Get(ReadOptions(), k, &v).ok();
      if (held == in_range) ++wrong;
      if (held && (db->Get(ReadOptions(), k, &v).IsNotFound() || txn->Get(ReadOptions(), k, &v).IsNotFound())) {
        ++lost;
      }
      if (!held && (db->Get(ReadOptions(), k, &v).ok() || txn->Get(ReadOptions(), k, &v).ok())) ++wrong;
    }
    txn->Rollback().PermitUncheckedError();
    txn.reset();
    EXPECT_EQ(wrong, 0) << "keys inside the ranges NotFound, outside (and the Puts after) found";
    EXPECT_EQ(lost, 0) << "keys the DB holds answered NotFound";
    if (live) {
      LiveKeyDB* l = LiveKeyDB::FromTransactionDB(db);
      ASSERT_TRUE(l->WaitForDeferredChecks(10000));
      const LiveKeyStats st = l->GetLiveKeyStats();
      EXPECT_EQ(st.unseen_write_detections, 0u) << "the ledger counted the optimized writes";
      EXPECT_EQ(st.unverified_reads, 0u);
      EXPECT_EQ(st.column_families[0].entries, static_cast<uint64_t>(expected_live))
          << "the range deletions erased their keys";
    }
    delete db;
  }
  ASSERT_EQ(refused[0].size(), refused[1].size());
  for (size_t i = 0; i < refused[0].size(); ++i) {
    EXPECT_FALSE(refused[1][i].ok());
    EXPECT_EQ(refused[1][i].code(), refused[0][i].code())
        << "LiveKeyDB: " << refused[1][i].ToString() << ", RocksDB: " << refused[0][i].ToString();
  }
}

// Without concurrency control a write takes no key lock, as RocksDB's own:
// it does not wait for a transaction holding the key's lock, and that
// transaction's commit (which waits for LiveKeyDB's stripes) still goes
// through.
TEST(LiveKeyDBTransactionsWrite, WithoutConcurrencyControlTakesNoKeyLock) {
  for (bool live : {false, true}) {
    SCOPED_TRACE(live ? "LiveKeyDB's TransactionDB" : "RocksDB's own (control)");
    rocksdb::TransactionDBOptions tdo;
    tdo.default_lock_timeout = -1;  // a wait for the key lock would never end
    rocksdb::TransactionDB* db = nullptr;
    ASSERT_TRUE(OpenPessimistic(live, TestDir(live ? "nolock_live" : "nolock_own"), tdo, &db).ok());
    Watchdog dog(60, "a write without concurrency control beside a transaction");
    std::unique_ptr<Transaction> txn(db->BeginTransaction(WriteOptions()));
    ASSERT_TRUE(txn->Put("k", "txn").ok());
    rocksdb::TransactionDBWriteOptimizations skip_cc;
    skip_cc.skip_concurrency_control = true;
    rocksdb::WriteBatch b;
    ASSERT_TRUE(b.Put("k", "write").ok());
    ASSERT_TRUE(b.Put("other", "write").ok());
    ASSERT_TRUE(db->Write(WriteOptions(), skip_cc, &b).ok());
    ASSERT_TRUE(txn->Commit().ok());
    std::string v;
    ASSERT_TRUE(db->Get(ReadOptions(), "k", &v).ok());
    EXPECT_EQ(v, "txn");
    EXPECT_TRUE(db->Get(ReadOptions(), "other", &v).ok());
    txn.reset();
    delete db;
  }
}

// ---- two-phase commit across a crash ------------------------------------------------

constexpr int kTwoPhaseTxns = 40;

// The child of PreparedTransactionsSurviveSigkill, run as this binary with
// DLCBF_TXN_TEST_DIR set (exec'd: a fork of a threaded process may not
// start threads under TSan): prepares named transactions (each with a
// commit-time batch), commits half, and kills itself.
TEST(LiveKeyDBTransactionsChild, DISABLED_PrepareThenDie) {
  const char* dir = std::getenv("DLCBF_TXN_TEST_DIR");
  ASSERT_NE(dir, nullptr);
  TxnDb t;
  ASSERT_TRUE(TxnDb::Open(Kind::kPessimistic, dir, &t).ok());
  for (int i = 0; i < kTwoPhaseTxns; ++i) {
    WriteOptions wo;
    wo.sync = true;
    Transaction* txn = t.pess->BeginTransaction(wo, rocksdb::TransactionOptions());
    ASSERT_TRUE(txn->SetName("t" + std::to_string(i)).ok());
    for (int j = 0; j < 5; ++j) ASSERT_TRUE(txn->Put(Key("x", i * 5 + j), "v").ok());
    ASSERT_TRUE(txn->GetCommitTimeWriteBatch()->Put(Key("ct", i), "v").ok());
    ASSERT_TRUE(txn->Prepare().ok());
    if (i % 2 == 0) {
      ASSERT_TRUE(txn->Commit().ok());
    }
  }
  raise(SIGKILL);
}

// The parent reopens: the half the child left prepared comes back
// prepared, is committed through the wrappers, and every key of both
// halves is found. Negative control: the same with commits not indexed.
TEST(LiveKeyDBTransactionsTwoPhase, PreparedTransactionsSurviveSigkill) {
  for (bool control : {false, true}) {
    if (control && !dlcbf::internal::kLiveKeyHooks) GTEST_SKIP() << "negative control: needs the DLCBF_TESTING build (fault hooks exist only there)";
    SCOPED_TRACE(control ? "negative control" : "indexed");
    const std::string dir = TestDir(control ? "2pc_nc" : "2pc");
    constexpr int kTxns = kTwoPhaseTxns;
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("DLCBF_TXN_TEST_DIR", dir.c_str(), 1);
      execl("/proc/self/exe", "live_key_db_transactions_test", "--gtest_also_run_disabled_tests",
            "--gtest_filter=LiveKeyDBTransactionsChild.DISABLED_PrepareThenDie", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the child must die by SIGKILL after preparing (exit " << WEXITSTATUS(status) << ")";
    std::unique_ptr<FaultScope> f(control ? new FaultScope(LiveKeyFault::kCommitUnindexed) : nullptr);
    TxnDb t;
    ASSERT_TRUE(TxnDb::Open(Kind::kPessimistic, dir, &t).ok());
    // The index is built in the background after a crash: wait until it
    // serves, so the commits below must index their keys themselves (a
    // build scanning after them would count the keys anyway).
    for (int i = 0; i < 6000 && !t.Stats().column_families[0].serving; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(t.Stats().column_families[0].serving);
    std::vector<Transaction*> prepared;
    t.pess->GetAllPreparedTransactions(&prepared);
    ASSERT_EQ(prepared.size(), static_cast<size_t>(kTxns / 2));
    for (Transaction* p : prepared) {
      EXPECT_EQ(p->GetState(), Transaction::PREPARED);
      EXPECT_EQ(t.pess->GetTransactionByName(p->GetName()), p) << "one wrapper per transaction";
      // A commit-time batch lives in memory only until the commit: the
      // crash lost the child's; the recovered transaction gets a new one.
      const int i = std::stoi(p->GetName().substr(1));
      ASSERT_TRUE(p->GetCommitTimeWriteBatch()->Put(Key("ct", i), "v").ok());
      ASSERT_TRUE(p->Commit().ok());
      EXPECT_EQ(p->GetState(), Transaction::COMMITTED);
      delete p;
    }
    std::vector<std::string> keys;
    for (int i = 0; i < kTxns * 5; ++i) keys.push_back(Key("x", i));
    for (int i = 0; i < kTxns; ++i) keys.push_back(Key("ct", i));
    rocksdb::DB* root = t.db()->GetRootDB();
    int in_db = 0;
    std::string v;
    for (const std::string& k : keys) in_db += root->Get(ReadOptions(), k, &v).ok() ? 1 : 0;
    EXPECT_EQ(in_db, kTxns * 6) << "RocksDB holds every committed key";
    const int lost = CountLost(&t, keys);
    if (control) {
      EXPECT_GT(lost, 0) << "the control's recovered commits are not indexed";
    } else {
      EXPECT_EQ(lost, 0);
    }
    t.Close();
  }
}

// ---- the concurrency oracle -----------------------------------------------------------

// Writers run transactions on a shared key space: GetForUpdate, Put,
// Delete, savepoints, rollbacks and conflicts (busy, timed out), plus the
// DB's own Puts. A key enters the oracle's "must be found" set when a
// commit that wrote it (and no later delete of it: keys are only ever
// inserted under the "ins" prefix) returned OK; a reader thread checks
// those keys through the DB and through its own transactions while the
// writers run. Negative control: commits not indexed must be caught.
int RunOracle(Kind kind, const std::string& dir, bool control, double seconds) {
  TxnDb t;
  EXPECT_TRUE(TxnDb::Open(kind, dir, &t).ok());
  std::unique_ptr<FaultScope> f(control ? new FaultScope(LiveKeyFault::kCommitUnindexed) : nullptr);
  constexpr int kWriters = 3;
  std::atomic<bool> stop{false};
  std::atomic<int> lost{0};
  std::mutex seen_mu;
  std::vector<std::string> committed;  // must be found
  std::atomic<uint64_t> commits{0}, rollbacks{0}, conflicts{0};
  std::vector<std::thread> ws;
  for (int w = 0; w < kWriters; ++w) {
    ws.emplace_back([&, w] {
      std::mt19937 rng(1234 + w);
      int next = 0;
      while (!stop.load()) {
        std::unique_ptr<Transaction> txn(t.Begin());
        std::vector<std::string> mine;
        std::string v;
        Status s;
        // Contended keys: read-modify-write, delete, conflicts.
        const std::string hot = Key("hot", static_cast<int>(rng() % 32));
        s = txn->GetForUpdate(ReadOptions(), hot, &v);
        if (s.ok() || s.IsNotFound()) s = (rng() % 3 == 0) ? txn->Delete(hot) : txn->Put(hot, "h");
        // Fresh keys, only ever inserted.
        const int n = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < n && s.ok(); ++i) {
          mine.push_back(Key(("ins" + std::to_string(w) + "_").c_str(), next++));
          s = txn->GetForUpdate(ReadOptions(), mine.back(), &v);
          if (s.IsNotFound()) s = txn->Put(mine.back(), "v");
        }
        if (s.ok() && rng() % 5 == 0) {
          txn->SetSavePoint();
          s = txn->Put(Key("sp", static_cast<int>(rng() % 1000)), "v");
          if (s.ok()) s = txn->RollbackToSavePoint();
        }
        if (!s.ok() || rng() % 8 == 0) {
          txn->Rollback().PermitUncheckedError();
          rollbacks++;
          if (!s.ok()) conflicts++;
          continue;
        }
        s = txn->Commit();
        if (!s.ok()) {
          conflicts++;
          continue;
        }
        commits++;
        if (rng() % 4 == 0) {  // the DB's own write
          mine.push_back(Key(("ins" + std::to_string(w) + "_").c_str(), next++));
          if (!t.db()->Put(WriteOptions(), mine.back(), "p").ok()) mine.pop_back();
        }
        std::lock_guard<std::mutex> l(seen_mu);
        for (auto& k : mine) committed.push_back(std::move(k));
      }
    });
  }
  std::thread reader([&] {
    std::mt19937 rng(99);
    while (!stop.load()) {
      std::vector<std::string> sample;
      {
        std::lock_guard<std::mutex> l(seen_mu);
        for (int i = 0; i < 32 && !committed.empty(); ++i) sample.push_back(committed[rng() % committed.size()]);
      }
      std::unique_ptr<Transaction> txn(t.Begin());
      for (const std::string& k : sample) {
        std::string v;
        if (t.db()->Get(ReadOptions(), k, &v).IsNotFound()) lost++;
        if (txn->Get(ReadOptions(), k, &v).IsNotFound()) lost++;
      }
      txn->Rollback().PermitUncheckedError();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  stop = true;
  for (auto& th : ws) th.join();
  reader.join();
  f.reset();
  std::vector<std::string> all;
  {
    std::lock_guard<std::mutex> l(seen_mu);
    all = committed;
  }
  const int final_lost = CountLost(&t, all);
  std::printf("oracle %s%s: commits=%llu rollbacks=%llu conflicts=%llu keys=%zu lost_during=%d lost_after=%d\n",
              kind == Kind::kPessimistic ? "TransactionDB" : "OptimisticTransactionDB",
              control ? " (negative control)" : "", static_cast<unsigned long long>(commits.load()),
              static_cast<unsigned long long>(rollbacks.load()), static_cast<unsigned long long>(conflicts.load()),
              all.size(), lost.load(), final_lost);
  EXPECT_GT(commits.load(), 50u);
  EXPECT_GT(conflicts.load() + rollbacks.load(), 0u);
  t.Close();
  return lost.load() + final_lost;
}

TEST_P(LiveKeyDBTransactions, ConcurrentOracleNoCommittedKeyIsEverNotFound) {
  EXPECT_EQ(RunOracle(GetParam(), TestDir("oracle"), /*control=*/false, 3.0), 0);
}

TEST_P(LiveKeyDBTransactions, ConcurrentOracleNegativeControlCatchesUnindexedCommits) {
  if (!dlcbf::internal::kLiveKeyHooks) GTEST_SKIP() << "needs the DLCBF_TESTING build (fault hooks exist only there)";
  EXPECT_GT(RunOracle(GetParam(), TestDir("oracle_nc"), /*control=*/true, 1.0), 0);
}

}  // namespace
