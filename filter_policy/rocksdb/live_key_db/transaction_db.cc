// LiveKeyDB's transaction DBs: the TransactionDB (TxnDB) and the
// OptimisticTransactionDB (OccDB) that LiveKeyDB::OpenTransactionDB and
// OpenOptimisticTransactionDB return, each over the LiveKeyDB whose base is
// RocksDB's own transaction DB. They wrap every transaction RocksDB hands
// out (IndexedTransaction, transactions.cc) and the pessimistic one runs
// its non-transactional writes as a transaction of one batch
// (BatchIntoTransaction). Also here: the write policies refused at Open,
// and the registry behind LiveKeyDB::FromTransactionDB. The design note is
// in transactions.cc; what the two files share, in transactions_internal.h.
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "filter_policy/rocksdb/live_key_db/transactions_internal.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/transaction_db.h"

namespace dlcbf {

using rocksdb::OptimisticTransactionDB;
using rocksdb::Transaction;
using rocksdb::TransactionDB;

namespace {

using live_key::RepOf;
using live_key::TxnHost;
using live_key::Wrappers;

// The DBs OpenTransactionDB / OpenOptimisticTransactionDB returned, for
// FromTransactionDB (no RTTI needed).
std::mutex g_registry_mu;
std::unordered_map<const DB*, LiveKeyDB*>& Registry() {
  static auto* r = new std::unordered_map<const DB*, LiveKeyDB*>();
  return *r;
}

void Register(const DB* outer, LiveKeyDB* live) {
  std::lock_guard<std::mutex> l(g_registry_mu);
  Registry()[outer] = live;
}
void Unregister(const DB* outer) {
  std::lock_guard<std::mutex> l(g_registry_mu);
  Registry().erase(outer);
}

// A batch's entries as a transaction's writes (each takes its key's lock),
// the family of each entry by its id among the handles LiveKeyDB keeps.
class BatchIntoTransaction : public WriteBatch::Handler {
 public:
  BatchIntoTransaction(Transaction* t, LiveKeyDB::Rep* r) : t_(t), r_(r) {}
  rocksdb::Status PutCF(uint32_t cf, const Slice& k, const Slice& v) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h ? t_->Put(h, k, v) : Unknown(cf);
  }
  rocksdb::Status DeleteCF(uint32_t cf, const Slice& k) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h ? t_->Delete(h, k) : Unknown(cf);
  }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const Slice& k) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h ? t_->SingleDelete(h, k) : Unknown(cf);
  }
  rocksdb::Status MergeCF(uint32_t cf, const Slice& k, const Slice& v) override {
    ColumnFamilyHandle* h = Handle(cf);
    return h ? t_->Merge(h, k, v) : Unknown(cf);
  }
  void LogData(const Slice& blob) override { t_->PutLogData(blob); }
  // Everything else (range deletions, entities, blob indexes, markers):
  // the Handler's default, an error, as RocksDB's own TransactionDB::Write
  // returns for them. (PutEntity of the DB: RocksDB >= 9.3, below.)

 private:
  ColumnFamilyHandle* Handle(uint32_t id) {
    if (id == last_id_ && last_ != nullptr) return last_;
    CfState* cf = r_->FindState(id);
    last_id_ = id;
    last_ = (cf != nullptr && !cf->dropped) ? cf->handle : nullptr;
    return last_;
  }
  static rocksdb::Status Unknown(uint32_t id) {
    return rocksdb::Status::InvalidArgument("LiveKeyDB: a batch names column family " + std::to_string(id) +
                                            ", which this DB did not open");
  }
  Transaction* t_;
  LiveKeyDB::Rep* r_;
  uint32_t last_id_ = 0;
  ColumnFamilyHandle* last_ = nullptr;
};

// ---------------------------------------------------------------------------
// The pessimistic TransactionDB.
// ---------------------------------------------------------------------------
class TxnDB : public TransactionDB, public TxnHost {
 public:
  TxnDB(LiveKeyDB* live, TransactionDB* inner, const rocksdb::TransactionDBOptions& o)
      : TransactionDB(live), live_(live), inner_(inner), skip_cc_(o.skip_concurrency_control),
        lock_timeout_(o.default_lock_timeout), db_options_(live->GetDBOptions()) {
    Register(this, live_);
  }
  ~TxnDB() override {
    Unregister(this);
    wrappers_.DropOrphans([&](Transaction* t) {
      const std::string name = t->GetName();
      return !name.empty() && inner_->GetTransactionByName(name) == t;
    });
  }

  LiveKeyDB* live() override { return live_; }
  const rocksdb::DBOptions& db_options() const override { return db_options_; }
  void Forget(Transaction* inner) override { wrappers_.Forget(inner); }

  Transaction* BeginTransaction(const WriteOptions& wo, const rocksdb::TransactionOptions& options,
                                Transaction* old_txn) override {
    rocksdb::TransactionOptions to = options;
    // A commit that bypasses the memtable (RocksDB >= 9.10, experimental)
    // ingests the transaction's index, latest update per key, with
    // sequence numbers LiveKeyDB cannot account: such commits are made
    // through the memtable instead (the contract, "Transactions").
#if DLCBF_ROCKSDB_AT_LEAST(9, 10)
    to.commit_bypass_memtable = false;
#endif
#if DLCBF_ROCKSDB_AT_LEAST(10, 4)
    to.large_txn_commit_optimize_threshold = 0;
    to.large_txn_commit_optimize_byte_threshold = 0;
#endif
    Transaction* in = inner_->BeginTransaction(wo, to, Wrappers::InnerOf(old_txn));
    return wrappers_.Begun(this, old_txn, in);
  }
  Transaction* GetTransactionByName(const rocksdb::TransactionName& name) override {
    return wrappers_.Wrap(this, inner_->GetTransactionByName(name));
  }
  void GetAllPreparedTransactions(std::vector<Transaction*>* trans) override {
    inner_->GetAllPreparedTransactions(trans);
    for (Transaction*& t : *trans) t = wrappers_.Wrap(this, t);
  }
  std::unordered_multimap<uint32_t, rocksdb::KeyLockInfo> GetLockStatusData() override { return inner_->GetLockStatusData(); }
  std::vector<rocksdb::DeadlockPath> GetDeadlockInfoBuffer() override { return inner_->GetDeadlockInfoBuffer(); }
  void SetDeadlockInfoBufferSize(uint32_t n) override { inner_->SetDeadlockInfoBufferSize(n); }
  std::pair<rocksdb::Status, std::shared_ptr<const rocksdb::Snapshot>> CreateTimestampedSnapshot(
      rocksdb::TxnTimestamp ts) override {
    return inner_->CreateTimestampedSnapshot(ts);
  }
  std::shared_ptr<const rocksdb::Snapshot> GetTimestampedSnapshot(rocksdb::TxnTimestamp ts) const override {
    return inner_->GetTimestampedSnapshot(ts);
  }
  void ReleaseTimestampedSnapshotsOlderThan(rocksdb::TxnTimestamp ts) override {
    inner_->ReleaseTimestampedSnapshotsOlderThan(ts);
  }
  rocksdb::Status GetTimestampedSnapshots(rocksdb::TxnTimestamp lb, rocksdb::TxnTimestamp ub,
                                 std::vector<std::shared_ptr<const rocksdb::Snapshot>>& out) const override {
    return inner_->GetTimestampedSnapshots(lb, ub, out);
  }

  // ---- non-transactional writes: a transaction of one batch -------------------
  using TransactionDB::Put;
  rocksdb::Status Put(const WriteOptions& wo, ColumnFamilyHandle* cf, const Slice& k, const Slice& v) override {
    WriteBatch b;
    rocksdb::Status s = b.Put(cf, k, v);
    return s.ok() ? Write(wo, &b) : s;
  }
  using TransactionDB::Delete;
  rocksdb::Status Delete(const WriteOptions& wo, ColumnFamilyHandle* cf, const Slice& k) override {
    WriteBatch b;
    rocksdb::Status s = b.Delete(cf, k);
    return s.ok() ? Write(wo, &b) : s;
  }
  using TransactionDB::SingleDelete;
  rocksdb::Status SingleDelete(const WriteOptions& wo, ColumnFamilyHandle* cf, const Slice& k) override {
    WriteBatch b;
    rocksdb::Status s = b.SingleDelete(cf, k);
    return s.ok() ? Write(wo, &b) : s;
  }
  using TransactionDB::Merge;
  rocksdb::Status Merge(const WriteOptions& wo, ColumnFamilyHandle* cf, const Slice& k, const Slice& v) override {
    WriteBatch b;
    rocksdb::Status s = b.Merge(cf, k, v);
    return s.ok() ? Write(wo, &b) : s;
  }
  using TransactionDB::PutEntity;
  rocksdb::Status PutEntity(const WriteOptions& wo, ColumnFamilyHandle* cf, const Slice& k,
                            const rocksdb::WideColumns& columns) override {
#if DLCBF_ROCKSDB_AT_LEAST(9, 3)
    if (skip_cc_) return live_->PutEntity(wo, cf, k, columns);
    rocksdb::TransactionOptions to;
    to.lock_timeout = lock_timeout_;
    std::unique_ptr<Transaction> t(BeginTransaction(wo, to, nullptr));
    if (t == nullptr) return rocksdb::Status::Aborted("LiveKeyDB: could not begin a transaction for PutEntity");
    rocksdb::Status s = t->PutEntity(cf, k, columns);
    if (s.ok()) {
      s = t->Commit();
    } else {
      t->Rollback().PermitUncheckedError();
    }
    return s;
#else
    // (A transaction has no PutEntity before RocksDB 9.3; RocksDB's own
    // TransactionDB refuses it too.)
    WriteBatch b;
    rocksdb::Status s = b.PutEntity(cf, k, columns);
    return s.ok() ? Write(wo, &b) : s;
#endif
  }
  using TransactionDB::Write;
  rocksdb::Status Write(const WriteOptions& wo, const rocksdb::TransactionDBWriteOptimizations&,
               WriteBatch* updates) override {
    return Write(wo, updates);
  }
  rocksdb::Status Write(const WriteOptions& wo, WriteBatch* updates) override {
    if (updates == nullptr) return rocksdb::Status::InvalidArgument("updates must not be null");
    // Without concurrency control RocksDB's Write takes no key lock:
    // LiveKeyDB's own batch path is safe (and its Write is RocksDB's).
    if (skip_cc_) return live_->Write(wo, updates);
    rocksdb::TransactionOptions to;
    to.lock_timeout = lock_timeout_;
    std::unique_ptr<Transaction> t(BeginTransaction(wo, to, nullptr));
    if (t == nullptr) return rocksdb::Status::Aborted("LiveKeyDB: could not begin a transaction for Write");
    t->DisableIndexing();  // (as RocksDB's own Write: nothing reads it)
    // Not Transaction::RebuildFromWriteBatch: it finds each entry's family
    // through DBImpl::GetColumnFamilyHandle, one shared handle that only
    // the write thread (or the DB mutex holder) may use; concurrent Writes
    // then put entries into the wrong family, unindexed there.
    BatchIntoTransaction into(t.get(), RepOf(live_));
    rocksdb::Status s = updates->Iterate(&into);
    if (s.ok()) {
      s = t->Commit();
    } else {
      t->Rollback().PermitUncheckedError();
    }
    return s;
  }

 private:
  LiveKeyDB* live_;
  TransactionDB* inner_;  // owned by live_ (its base)
  const bool skip_cc_;
  const int64_t lock_timeout_;
  const rocksdb::DBOptions db_options_;
  Wrappers wrappers_;
};

// ---------------------------------------------------------------------------
// The OptimisticTransactionDB. Its non-transactional writes are the DB's
// (RocksDB's too): StackableDB forwards them to the LiveKeyDB.
// ---------------------------------------------------------------------------
class OccDB : public OptimisticTransactionDB, public TxnHost {
 public:
  OccDB(LiveKeyDB* live, OptimisticTransactionDB* inner)
#if ROCKSDB_MAJOR >= 11
      : OptimisticTransactionDB(std::unique_ptr<DB>(live)),
#else
      : OptimisticTransactionDB(live),
#endif
        live_(live), inner_(inner), db_options_(live->GetDBOptions()) {
    Register(this, live_);
  }
  ~OccDB() override { Unregister(this); }

  LiveKeyDB* live() override { return live_; }
  const rocksdb::DBOptions& db_options() const override { return db_options_; }
  void Forget(Transaction* inner) override { wrappers_.Forget(inner); }

  Transaction* BeginTransaction(const WriteOptions& wo, const rocksdb::OptimisticTransactionOptions& to,
                                Transaction* old_txn) override {
    Transaction* in = inner_->BeginTransaction(wo, to, Wrappers::InnerOf(old_txn));
    return wrappers_.Begun(this, old_txn, in);
  }

 private:
  LiveKeyDB* live_;
  OptimisticTransactionDB* inner_;  // owned by live_ (its base)
  const rocksdb::DBOptions db_options_;
  Wrappers wrappers_;
};

const char* PolicyName(rocksdb::TxnDBWritePolicy p) {
  switch (p) {
    case rocksdb::WRITE_COMMITTED:
      return "WRITE_COMMITTED";
    case rocksdb::WRITE_PREPARED:
      return "WRITE_PREPARED";
    case rocksdb::WRITE_UNPREPARED:
      return "WRITE_UNPREPARED";
  }
  return "unknown";
}

}  // namespace

rocksdb::Status LiveKeyDB::OpenTransactionDB(const rocksdb::Options& options,
                                             const rocksdb::TransactionDBOptions& txn_db_options,
                                             const LiveKeyIndexOptions& index_options, const std::string& path,
                                             TransactionDB** dbptr) {
  if (dbptr == nullptr) return rocksdb::Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  std::vector<ColumnFamilyDescriptor> cfds{
      ColumnFamilyDescriptor(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options))};
  std::vector<ColumnFamilyHandle*> handles;
  TransactionDB* db = nullptr;
  rocksdb::Status s = OpenTransactionDB(rocksdb::DBOptions(options), txn_db_options, index_options, path, cfds, &handles, &db);
  if (!s.ok()) return s;
  for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  *dbptr = db;
  return s;
}

rocksdb::Status LiveKeyDB::OpenTransactionDB(const rocksdb::DBOptions& db_options,
                                             const rocksdb::TransactionDBOptions& txn_db_options,
                                             const LiveKeyIndexOptions& index_options, const std::string& path,
                                             const std::vector<ColumnFamilyDescriptor>& column_families,
                                             std::vector<ColumnFamilyHandle*>* handles, TransactionDB** dbptr) {
  if (dbptr == nullptr) return rocksdb::Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  if (handles == nullptr) return rocksdb::Status::InvalidArgument("handles must not be null");
  if (txn_db_options.write_policy != rocksdb::WRITE_COMMITTED) {
    return rocksdb::Status::InvalidArgument(std::string("LiveKeyDB: TransactionDBOptions::write_policy = ") +
                                   PolicyName(txn_db_options.write_policy) +
                                   " is not supported (it writes uncommitted data into the DB); use "
                                   "WRITE_COMMITTED");
  }
  TransactionDB* inner = nullptr;
  LiveKeyDB* live = nullptr;
  rocksdb::Status s = OpenWith(
      db_options, index_options, handles,
      [&](const rocksdb::DBOptions& opts, DB** base) {
        rocksdb::Status o = TransactionDB::Open(opts, txn_db_options, path, column_families, handles, &inner);
        *base = inner;
        return o;
      },
      &live);
  if (!s.ok()) return s;
  *dbptr = new TxnDB(live, inner, txn_db_options);
  return s;
}

rocksdb::Status LiveKeyDB::OpenOptimisticTransactionDB(const rocksdb::Options& options,
                                                       const LiveKeyIndexOptions& index_options,
                                                       const std::string& path, OptimisticTransactionDB** dbptr) {
  if (dbptr == nullptr) return rocksdb::Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  std::vector<ColumnFamilyDescriptor> cfds{
      ColumnFamilyDescriptor(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options))};
  std::vector<ColumnFamilyHandle*> handles;
  OptimisticTransactionDB* db = nullptr;
  rocksdb::Status s = OpenOptimisticTransactionDB(rocksdb::DBOptions(options), rocksdb::OptimisticTransactionDBOptions(),
                                         index_options, path, cfds, &handles, &db);
  if (!s.ok()) return s;
  for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  *dbptr = db;
  return s;
}

rocksdb::Status LiveKeyDB::OpenOptimisticTransactionDB(
    const rocksdb::DBOptions& db_options, const rocksdb::OptimisticTransactionDBOptions& occ_options,
    const LiveKeyIndexOptions& index_options, const std::string& path,
    const std::vector<ColumnFamilyDescriptor>& column_families, std::vector<ColumnFamilyHandle*>* handles,
    OptimisticTransactionDB** dbptr) {
  if (dbptr == nullptr) return rocksdb::Status::InvalidArgument("dbptr must not be null");
  *dbptr = nullptr;
  if (handles == nullptr) return rocksdb::Status::InvalidArgument("handles must not be null");
  OptimisticTransactionDB* inner = nullptr;
  LiveKeyDB* live = nullptr;
  rocksdb::Status s = OpenWith(
      db_options, index_options, handles,
      [&](const rocksdb::DBOptions& opts, DB** base) {
        rocksdb::Status o = OptimisticTransactionDB::Open(opts, occ_options, path, column_families, handles, &inner);
        *base = inner;
        return o;
      },
      &live);
  if (!s.ok()) return s;
  *dbptr = new OccDB(live, inner);
  return s;
}

LiveKeyDB* LiveKeyDB::FromTransactionDB(const DB* db) {
  std::lock_guard<std::mutex> l(g_registry_mu);
  auto it = Registry().find(db);
  return it == Registry().end() ? nullptr : it->second;
}

}  // namespace dlcbf
