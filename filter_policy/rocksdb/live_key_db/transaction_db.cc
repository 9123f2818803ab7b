// LiveKeyDB's transaction DBs: the TransactionDB (TxnDB) and the
// OptimisticTransactionDB (OccDB) that LiveKeyDB::OpenTransactionDB and
// OpenOptimisticTransactionDB return, each over the LiveKeyDB whose base is
// RocksDB's own transaction DB. They wrap every transaction RocksDB hands
// out (IndexedTransaction, transactions.cc) and the pessimistic one runs
// its non-transactional writes as a transaction of one batch whose keys
// are locked in RocksDB's own order (BatchIntoTransaction), or, without
// concurrency control, through LiveKeyDB's indexed batch path. Also here:
// the write policies refused at Open, and the registry behind
// LiveKeyDB::FromTransactionDB. The design note is in transactions.cc;
// what the two files share, in transactions_internal.h.
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "filter_policy/rocksdb/live_key_db/transactions_internal.h"

#include <algorithm>
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
// Collect() reads the batch and refuses what it cannot replay before any
// lock is taken; Replay() then writes the entries in the order RocksDB's
// own TransactionDB::Write locks a batch's keys (PessimisticTransaction::
// LockBatch: by column family id, then key bytes), so that two such
// writes never wait for each other in a cycle. The sort is stable: the
// entries of one key (several Merges, a Delete then a Put) keep their
// order, and the order of different keys does not matter in one atomic
// batch. (RocksDB locks all the keys first and then writes the batch as it
// is; replaying it sorted takes the same locks in the same order, and
// yields the same state once written.)
class BatchIntoTransaction : public WriteBatch::Handler {
 public:
  explicit BatchIntoTransaction(LiveKeyDB::Rep* r) : r_(r) {}
  rocksdb::Status Collect(const WriteBatch* b) {
    entries_.clear();
    blobs_.clear();
    entries_.reserve(b->Count());
    rocksdb::Status s = b->Iterate(this);
    if (s.ok() && !std::is_sorted(entries_.begin(), entries_.end(), Before)) {
      std::stable_sort(entries_.begin(), entries_.end(), Before);
    }
    return s;
  }
  rocksdb::Status Replay(Transaction* t) const {
    // (A log blob's place among the keys is not kept: it goes to the WAL
    // with the batch, and no reader sees it between two keys.)
    for (const Slice& blob : blobs_) t->PutLogData(blob);
    for (const Entry& e : entries_) {
      rocksdb::Status s;
      switch (e.op) {
        case Op::kPut:
          s = t->Put(e.h, e.key, e.value);
          break;
        case Op::kDelete:
          s = t->Delete(e.h, e.key);
          break;
        case Op::kSingleDelete:
          s = t->SingleDelete(e.h, e.key);
          break;
        case Op::kMerge:
          s = t->Merge(e.h, e.key, e.value);
          break;
      }
      if (!s.ok()) return s;
    }
    return rocksdb::Status::OK();
  }

  rocksdb::Status PutCF(uint32_t cf, const Slice& k, const Slice& v) override { return Add(Op::kPut, cf, k, v); }
  rocksdb::Status DeleteCF(uint32_t cf, const Slice& k) override { return Add(Op::kDelete, cf, k, Slice()); }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const Slice& k) override {
    return Add(Op::kSingleDelete, cf, k, Slice());
  }
  rocksdb::Status MergeCF(uint32_t cf, const Slice& k, const Slice& v) override { return Add(Op::kMerge, cf, k, v); }
  void LogData(const Slice& blob) override { blobs_.push_back(blob); }
  // Everything else (range deletions, entities, blob indexes, markers):
  // the Handler's default, an error, as RocksDB's own TransactionDB::Write
  // returns for them. (PutEntity of the DB: RocksDB >= 9.3, below.)

 private:
  enum class Op : uint8_t { kPut, kDelete, kSingleDelete, kMerge };
  // Slices into the batch, which outlives the replay.
  struct Entry {
    Op op;
    uint32_t cf;
    ColumnFamilyHandle* h;
    Slice key, value;
  };
  static bool Before(const Entry& a, const Entry& b) {
    return a.cf != b.cf ? a.cf < b.cf : a.key.compare(b.key) < 0;  // (memcmp: std::string's order)
  }
  rocksdb::Status Add(Op op, uint32_t cf, const Slice& k, const Slice& v) {
    ColumnFamilyHandle* h = Handle(cf);
    if (h == nullptr) return Unknown(cf);
    entries_.push_back(Entry{op, cf, h, k, v});
    return rocksdb::Status::OK();
  }
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
  LiveKeyDB::Rep* r_;
  std::vector<Entry> entries_;
  std::vector<Slice> blobs_;
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
  // A non-transactional write's transaction, as RocksDB's own
  // (PessimisticTransactionDB::BeginInternalTransaction): default options,
  // then SetLockTimeout(default_lock_timeout), where a negative value waits
  // forever. (TransactionOptions::lock_timeout = -1 would instead mean
  // transaction_lock_timeout.)
  Transaction* BeginInternal(const WriteOptions& wo) {
    Transaction* t = BeginTransaction(wo, rocksdb::TransactionOptions(), nullptr);
    if (t != nullptr) t->SetLockTimeout(lock_timeout_);
    return t;
  }
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
    std::unique_ptr<Transaction> t(BeginInternal(wo));
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
  // As RocksDB's own (WriteCommittedTxnDB::Write): without concurrency
  // control the batch is written as it is, no key locked; otherwise its
  // keys are locked, whatever TransactionDBOptions::
  // skip_concurrency_control says (the optimizations override it: the
  // header). A batch without concurrency control (a range
  // deletion is made this way: transaction_db.h) goes through LiveKeyDB's
  // indexed batch path (write_batch.cc: its range deletions keep the index
  // exact), and reaches RocksDB's TransactionDB through this same overload,
  // the optimizations as given (skip_duplicate_key_check included). It
  // takes no key lock, so holding LiveKeyDB's stripes meanwhile is safe
  // (the lock order of transactions.cc's design note).
  rocksdb::Status Write(const WriteOptions& wo, const rocksdb::TransactionDBWriteOptimizations& optimizations,
                        WriteBatch* updates) override {
    if (updates == nullptr) return rocksdb::Status::InvalidArgument("updates must not be null");
    if (!optimizations.skip_concurrency_control) return LockedWrite(wo, updates);
    LiveKeyDB::Rep* r = RepOf(live_);
    const auto noted = r->NoteWrite(wo);  // (as LiveKeyDB::Write)
    // Rep::LedgerWrite, with RocksDB's optimized Write: the ledger adds
    // the batch's count only once RocksDB wrote it (seq_ledger.h).
    auto write = [&] {
      r->ledger.Begin();
      const uint64_t n = updates->Count();
      rocksdb::Status w = inner_->Write(wo, optimizations, updates);
      r->ledger.End(w.ok() ? n : 0);
      return w;
    };
    const WriteBatch* const batches[1] = {updates};
    return r->IndexedWrite(batches, 1, /*prepare_markers=*/false, LiveKeyDB::Rep::WriteFn(write));
  }
  rocksdb::Status Write(const WriteOptions& wo, WriteBatch* updates) override {
    if (updates == nullptr) return rocksdb::Status::InvalidArgument("updates must not be null");
    // Without concurrency control RocksDB's Write takes no key lock:
    // LiveKeyDB's own batch path is safe (and its Write is RocksDB's).
    if (skip_cc_) return live_->Write(wo, updates);
    return LockedWrite(wo, updates);
  }

 private:
  // A batch's write with its keys locked: a transaction of one batch, the
  // keys locked in the order RocksDB's own Write locks them
  // (BatchIntoTransaction), then the indexed commit.
  rocksdb::Status LockedWrite(const WriteOptions& wo, WriteBatch* updates) {
    // Not Transaction::RebuildFromWriteBatch: it finds each entry's family
    // through DBImpl::GetColumnFamilyHandle, one shared handle that only
    // the write thread (or the DB mutex holder) may use; concurrent Writes
    // then put entries into the wrong family, unindexed there.
    BatchIntoTransaction into(RepOf(live_));
    rocksdb::Status s = into.Collect(updates);  // (refusals before any lock)
    if (!s.ok()) return s;
    std::unique_ptr<Transaction> t(BeginInternal(wo));
    if (t == nullptr) return rocksdb::Status::Aborted("LiveKeyDB: could not begin a transaction for Write");
    t->DisableIndexing();  // (as RocksDB's own Write: nothing reads it)
    s = into.Replay(t.get());  // the keys' locks, in RocksDB's order
    if (s.ok()) {
      s = t->Commit();
    } else {
      t->Rollback().PermitUncheckedError();
    }
    return s;
  }

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
      db_options, index_options, column_families, handles,
      [&](const rocksdb::DBOptions& opts, const std::vector<ColumnFamilyDescriptor>& cfds, DB** base) {
        rocksdb::Status o = TransactionDB::Open(opts, txn_db_options, path, cfds, handles, &inner);
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
      db_options, index_options, column_families, handles,
      [&](const rocksdb::DBOptions& opts, const std::vector<ColumnFamilyDescriptor>& cfds, DB** base) {
        rocksdb::Status o = OptimisticTransactionDB::Open(opts, occ_options, path, cfds, handles, &inner);
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
