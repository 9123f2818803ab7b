// LiveKeyDB's transactions: the wrapper of each transaction RocksDB's
// transaction DBs hand out (IndexedTransaction), which indexes its commit
// and answers its reads of keys the index does not hold without the LSM
// tree, and the table of those wrappers (Wrappers). The transaction DBs
// themselves (TxnDB, OccDB), their Open and FromTransactionDB are in
// transaction_db.cc; what the two files share, in transactions_internal.h.
//
// Together they are LiveKeyDB's transaction routes: OpenTransactionDB and
// OpenOptimisticTransactionDB return RocksDB's own TransactionDB and
// OptimisticTransactionDB types with a LiveKeyDB between the transaction
// layer and the DB, so that every commit is indexed and reads of absent
// keys inside a transaction skip the LSM tree. The contract is in
// include/dlcbf/rocksdb/live_key_db.h ("Transactions").
//
// Design note (both files)
//   Layers, top down: our TransactionDB (TxnDB) or OptimisticTransactionDB
//   (OccDB; both in transaction_db.cc), a StackableDB over the LiveKeyDB,
//   whose base is RocksDB's own transaction DB over DBImpl. RocksDB's
//   transactions commit straight into DBImpl (ROCKSDB_NOTES.md: WriteImpl,
//   WriteWithCallback), past any StackableDB, so each transaction RocksDB
//   hands out is wrapped (IndexedTransaction): every call is forwarded, and
//   Commit goes through Rep::IndexedWrite with the commit as its write. That
//   is the exactness argument of a WriteBatch through LiveKeyDB
//   (write_batch.cc), unchanged: the batches the commit writes are read
//   before it (the prepared batch and, after Prepare, the commit-time batch
//   before it: RocksDB writes commit-time batch + prepared batch as one
//   batch), the keys that become live are inserted under their stripes
//   BEFORE the commit, the keys it deletes are erased (or checked) after it
//   succeeded. Nothing is indexed at Put time, so Rollback and savepoints
//   need nothing.
//
//   Sequence numbers (seq_ledger.h): the commit's write consumes one per
//   entry of what it writes (write-committed: the prepared batch's count,
//   plus the commit-time batch's after Prepare; Prepare writes the WAL only
//   and consumes none), accounted after the commit succeeded. The other
//   policies (write-prepared, write-unprepared) write uncommitted data into
//   the memtable and consume one number per batch: refused at Open.
//
//   Locks: RocksDB's key locks are always taken before LiveKeyDB's stripes,
//   never the other way round. A transaction takes its key locks at Put /
//   GetForUpdate time and the stripes only inside Commit, which waits for no
//   key lock. The TransactionDB's non-transactional writes are run as a
//   transaction of one batch (its Put/Delete/... calls take the locks, the
//   families named by the handles LiveKeyDB keeps: BatchIntoTransaction,
//   transaction_db.cc), then the indexed commit, as RocksDB itself runs
//   them; going through LiveKeyDB::Write instead would hold stripes while
//   RocksDB's Write waits for a key lock that a committing transaction holds
//   while it waits for the stripe. The batch is replayed sorted by (family
//   id, key bytes), stably: its keys are locked in the order RocksDB's own
//   Write locks them, so two such writes never deadlock, and its lock
//   timeout is default_lock_timeout, set as RocksDB sets it (negative: no
//   timeout). A write without concurrency control (TransactionDBOptions::
//   skip_concurrency_control, or Write's TransactionDBWriteOptimizations:
//   how a range deletion is made) takes no key lock: it goes through
//   LiveKeyDB's indexed batch path, stripes held, to RocksDB's Write with
//   the same optimizations.
//
//   Reads: a transaction's Get of a key its own batch does not hold and the
//   index does not hold is NotFound: the batch answers for what the
//   transaction wrote (GetFromBatch: found, deleted, or a merge to resolve
//   against the DB), the index for what is committed (Rep::MayBeLive, with
//   its bypass rules and the ledger's trust check). GetForUpdate first
//   takes the lock (or records the key, optimistic) exactly as RocksDB does
//   (its GetForUpdate with a null value, which validates and locks but
//   does not read), then reads as Get: RocksDB's own GetForUpdate is that
//   lock followed by Get (TransactionBaseImpl::GetForUpdate). A read that
//   RocksDB answered from the DB with the key live leaves a hint for the
//   commit (rep.h, LiveHint): the key's write then needs no check.
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "filter_policy/rocksdb/live_key_db/transactions_internal.h"

#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/write_batch_with_index.h"

namespace dlcbf {

using rocksdb::Transaction;
using rocksdb::WriteBatchWithIndex;

// LiveKeyDB's friend (live_key_db.h): the Rep, for the transactions here
// and, through RepOf, for transaction_db.cc.
class LiveKeyTransactions {
 public:
  static LiveKeyDB::Rep* RepOf(LiveKeyDB* db) { return db->rep_.get(); }
};

namespace live_key {

LiveKeyDB::Rep* RepOf(LiveKeyDB* db) { return LiveKeyTransactions::RepOf(db); }

class IndexedTransaction : public Transaction {
 public:
  IndexedTransaction(TxnHost* host, Transaction* inner) : host_(host), inner_(inner) { Mirror(); }
  ~IndexedTransaction() override {
    if (inner_ != nullptr) {
      host_->Forget(inner_);
      delete inner_;
    }
  }
  // The DB deletes `inner_` itself (a prepared transaction left at Close).
  void Orphan() { inner_ = nullptr; }
  Transaction* inner() const { return inner_; }
  // BeginTransaction reused `inner_` for a new transaction.
  void Restart() {
    id_ = 0;
    hints_.clear();
    Mirror();
  }

  // ---- commits: indexed ------------------------------------------------------
  rocksdb::Status Commit() override {
    LiveKeyDB::Rep* r = LiveKeyTransactions::RepOf(host_->live());
    const WriteBatch* parts[2];
    size_t num_parts = 0;
    uint64_t consumed = 0;
    // After Prepare, RocksDB writes the commit-time batch followed by the
    // prepared one, as one batch (WriteCommittedTxn::CommitInternal).
    if (inner_->GetState() == PREPARED) {
      const WriteBatch* ctwb = inner_->GetCommitTimeWriteBatch();
      parts[num_parts++] = ctwb;
      consumed += ctwb->Count();
    }
    const WriteBatch* wb = inner_->GetWriteBatch()->GetWriteBatch();
    parts[num_parts++] = wb;
    consumed += wb->Count();
    // A disableWAL commit is counted before it writes, as every LiveKeyDB
    // write is: a checkpoint then flushes before it claims it
    // (Rep::MakeDurable).
    const auto noted = r->NoteWrite(*inner_->GetWriteOptions());
    auto commit = [&] {
      r->ledger.Begin();
      rocksdb::Status c = inner_->Commit();
      r->ledger.End(c.ok() ? consumed : 0);
      return c;
    };
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kCommitUnindexed) {
      return Mirrored(commit());
    }
#endif
    rocksdb::Status s =
        r->IndexedWrite(parts, num_parts, /*prepare_markers=*/true, LiveKeyDB::Rep::WriteFn(commit), &hints_);
    hints_.clear();
    return Mirrored(s);
  }
  rocksdb::Status Prepare() override { return Mirrored(inner_->Prepare()); }
  rocksdb::Status Rollback() override {
    hints_.clear();
    return Mirrored(inner_->Rollback());
  }
  rocksdb::Status SetName(const rocksdb::TransactionName& name) override { return Mirrored(inner_->SetName(name)); }

  // ---- reads: the index first ---------------------------------------------------
  rocksdb::Status Get(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key, std::string* value) override {
    return ReadThrough(ro, cf, key, value, [&] { value->clear(); });
  }
  rocksdb::Status Get(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key, PinnableSlice* value) override {
    return ReadThrough(ro, cf, key, value, [&] { value->Reset(); });
  }
  rocksdb::Status Get(const ReadOptions& ro, const Slice& key, std::string* value) override {
    return Get(ro, Default(), key, value);
  }
  rocksdb::Status Get(const ReadOptions& ro, const Slice& key, PinnableSlice* value) override {
    return Get(ro, Default(), key, value);
  }
  rocksdb::Status GetForUpdate(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key, std::string* value,
                      bool exclusive, const bool do_validate) override {
    std::string* lock_only = nullptr;
    rocksdb::Status s = inner_->GetForUpdate(ro, cf, key, lock_only, exclusive, do_validate);
    if (!s.ok() || value == nullptr) return s;
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kTxnReadIgnoresOwnBatch &&
        !LiveKeyTransactions::RepOf(host_->live())->MayBeLive(ro, cf, key)) {
      value->clear();
      return rocksdb::Status::NotFound();
    }
#endif
    return Get(ro, cf, key, value);
  }
  rocksdb::Status GetForUpdate(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key, PinnableSlice* value,
                      bool exclusive, const bool do_validate) override {
    PinnableSlice* lock_only = nullptr;
    rocksdb::Status s = inner_->GetForUpdate(ro, cf, key, lock_only, exclusive, do_validate);
    if (!s.ok() || value == nullptr) return s;
    return Get(ro, cf, key, value);
  }
  rocksdb::Status GetForUpdate(const ReadOptions& ro, const Slice& key, std::string* value, bool exclusive,
                      const bool do_validate) override {
    return GetForUpdate(ro, Default(), key, value, exclusive, do_validate);
  }
  std::vector<rocksdb::Status> MultiGet(const ReadOptions& ro, const std::vector<ColumnFamilyHandle*>& cfs,
                               const std::vector<Slice>& keys, std::vector<std::string>* values) override {
    const size_t n = keys.size();
    std::vector<rocksdb::Status> out(n);
    values->resize(n);
    std::vector<size_t> rest;
    for (size_t i = 0; i < n; ++i) {
      if (Absent(ro, cfs[i], keys[i])) {
        (*values)[i].clear();
        out[i] = rocksdb::Status::NotFound();
      } else {
        rest.push_back(i);
      }
    }
    if (rest.size() == n) return inner_->MultiGet(ro, cfs, keys, values);
    if (rest.empty()) return out;
    std::vector<ColumnFamilyHandle*> sub_cfs;
    std::vector<Slice> sub_keys;
    for (size_t i : rest) {
      sub_cfs.push_back(cfs[i]);
      sub_keys.push_back(keys[i]);
    }
    std::vector<std::string> sub_values;
    std::vector<rocksdb::Status> sub = inner_->MultiGet(ro, sub_cfs, sub_keys, &sub_values);
    for (size_t j = 0; j < rest.size(); ++j) {
      out[rest[j]] = sub[j];
      (*values)[rest[j]] = std::move(sub_values[j]);
    }
    return out;
  }
  std::vector<rocksdb::Status> MultiGet(const ReadOptions& ro, const std::vector<Slice>& keys,
                               std::vector<std::string>* values) override {
    return MultiGet(ro, std::vector<ColumnFamilyHandle*>(keys.size(), Default()), keys, values);
  }
  void MultiGet(const ReadOptions& ro, ColumnFamilyHandle* cf, const size_t num_keys, const Slice* keys,
                PinnableSlice* values, rocksdb::Status* statuses, const bool sorted_input) override {
    std::vector<size_t> rest;
    for (size_t i = 0; i < num_keys; ++i) {
      if (Absent(ro, cf, keys[i])) {
        values[i].Reset();
        statuses[i] = rocksdb::Status::NotFound();
      } else {
        rest.push_back(i);
      }
    }
    if (rest.size() == num_keys) return inner_->MultiGet(ro, cf, num_keys, keys, values, statuses, sorted_input);
    if (rest.empty()) return;
    std::vector<Slice> sub_keys;
    for (size_t i : rest) sub_keys.push_back(keys[i]);
    std::vector<PinnableSlice> sub_values(rest.size());
    std::vector<rocksdb::Status> sub_statuses(rest.size());
    inner_->MultiGet(ro, cf, rest.size(), sub_keys.data(), sub_values.data(), sub_statuses.data(), sorted_input);
    for (size_t j = 0; j < rest.size(); ++j) {
      statuses[rest[j]] = sub_statuses[j];
      values[rest[j]] = std::move(sub_values[j]);
    }
  }

  // ---- forwarded --------------------------------------------------------------
  void SetSnapshot() override { inner_->SetSnapshot(); }
  void SetSnapshotOnNextOperation(std::shared_ptr<rocksdb::TransactionNotifier> notifier) override {
    inner_->SetSnapshotOnNextOperation(notifier);
  }
  const rocksdb::Snapshot* GetSnapshot() const override { return inner_->GetSnapshot(); }
  std::shared_ptr<const rocksdb::Snapshot> GetTimestampedSnapshot() const override {
    return inner_->GetTimestampedSnapshot();
  }
  void ClearSnapshot() override { inner_->ClearSnapshot(); }
  void SetSavePoint() override { inner_->SetSavePoint(); }
  rocksdb::Status RollbackToSavePoint() override { return inner_->RollbackToSavePoint(); }
  rocksdb::Status PopSavePoint() override { return inner_->PopSavePoint(); }
  rocksdb::Status GetRangeLock(ColumnFamilyHandle* cf, const rocksdb::Endpoint& a, const rocksdb::Endpoint& b) override {
    return inner_->GetRangeLock(cf, a, b);
  }
  std::vector<rocksdb::Status> MultiGetForUpdate(const ReadOptions& ro, const std::vector<ColumnFamilyHandle*>& cfs,
                                        const std::vector<Slice>& keys, std::vector<std::string>* values) override {
    return inner_->MultiGetForUpdate(ro, cfs, keys, values);
  }
  std::vector<rocksdb::Status> MultiGetForUpdate(const ReadOptions& ro, const std::vector<Slice>& keys,
                                        std::vector<std::string>* values) override {
    return inner_->MultiGetForUpdate(ro, keys, values);
  }
  rocksdb::Iterator* GetIterator(const ReadOptions& ro) override { return inner_->GetIterator(ro); }
  rocksdb::Iterator* GetIterator(const ReadOptions& ro, ColumnFamilyHandle* cf) override {
    return inner_->GetIterator(ro, cf);
  }
  rocksdb::Status Put(ColumnFamilyHandle* cf, const Slice& k, const Slice& v, const bool assume_tracked) override {
    return inner_->Put(cf, k, v, assume_tracked);
  }
  rocksdb::Status Put(const Slice& k, const Slice& v) override { return inner_->Put(k, v); }
  rocksdb::Status Put(ColumnFamilyHandle* cf, const rocksdb::SliceParts& k, const rocksdb::SliceParts& v,
             const bool assume_tracked) override {
    return inner_->Put(cf, k, v, assume_tracked);
  }
  rocksdb::Status Put(const rocksdb::SliceParts& k, const rocksdb::SliceParts& v) override { return inner_->Put(k, v); }
  rocksdb::Status Merge(ColumnFamilyHandle* cf, const Slice& k, const Slice& v, const bool assume_tracked) override {
    return inner_->Merge(cf, k, v, assume_tracked);
  }
  rocksdb::Status Merge(const Slice& k, const Slice& v) override { return inner_->Merge(k, v); }
  rocksdb::Status Delete(ColumnFamilyHandle* cf, const Slice& k, const bool assume_tracked) override {
    return inner_->Delete(cf, k, assume_tracked);
  }
  rocksdb::Status Delete(const Slice& k) override { return inner_->Delete(k); }
  rocksdb::Status Delete(ColumnFamilyHandle* cf, const rocksdb::SliceParts& k, const bool assume_tracked) override {
    return inner_->Delete(cf, k, assume_tracked);
  }
  rocksdb::Status Delete(const rocksdb::SliceParts& k) override { return inner_->Delete(k); }
  rocksdb::Status SingleDelete(ColumnFamilyHandle* cf, const Slice& k, const bool assume_tracked) override {
    return inner_->SingleDelete(cf, k, assume_tracked);
  }
  rocksdb::Status SingleDelete(const Slice& k) override { return inner_->SingleDelete(k); }
  rocksdb::Status SingleDelete(ColumnFamilyHandle* cf, const rocksdb::SliceParts& k, const bool assume_tracked) override {
    return inner_->SingleDelete(cf, k, assume_tracked);
  }
  rocksdb::Status SingleDelete(const rocksdb::SliceParts& k) override { return inner_->SingleDelete(k); }
  rocksdb::Status PutUntracked(ColumnFamilyHandle* cf, const Slice& k, const Slice& v) override {
    return inner_->PutUntracked(cf, k, v);
  }
  rocksdb::Status PutUntracked(const Slice& k, const Slice& v) override { return inner_->PutUntracked(k, v); }
  rocksdb::Status PutUntracked(ColumnFamilyHandle* cf, const rocksdb::SliceParts& k, const rocksdb::SliceParts& v) override {
    return inner_->PutUntracked(cf, k, v);
  }
  rocksdb::Status PutUntracked(const rocksdb::SliceParts& k, const rocksdb::SliceParts& v) override {
    return inner_->PutUntracked(k, v);
  }
  rocksdb::Status MergeUntracked(ColumnFamilyHandle* cf, const Slice& k, const Slice& v) override {
    return inner_->MergeUntracked(cf, k, v);
  }
  rocksdb::Status MergeUntracked(const Slice& k, const Slice& v) override { return inner_->MergeUntracked(k, v); }
  rocksdb::Status DeleteUntracked(ColumnFamilyHandle* cf, const Slice& k) override { return inner_->DeleteUntracked(cf, k); }
  rocksdb::Status DeleteUntracked(const Slice& k) override { return inner_->DeleteUntracked(k); }
  rocksdb::Status DeleteUntracked(ColumnFamilyHandle* cf, const rocksdb::SliceParts& k) override {
    return inner_->DeleteUntracked(cf, k);
  }
  rocksdb::Status DeleteUntracked(const rocksdb::SliceParts& k) override { return inner_->DeleteUntracked(k); }
  rocksdb::Status SingleDeleteUntracked(ColumnFamilyHandle* cf, const Slice& k) override {
    return inner_->SingleDeleteUntracked(cf, k);
  }
  rocksdb::Status SingleDeleteUntracked(const Slice& k) override { return inner_->SingleDeleteUntracked(k); }
  void PutLogData(const Slice& blob) override { inner_->PutLogData(blob); }
  void DisableIndexing() override { inner_->DisableIndexing(); }
  void EnableIndexing() override { inner_->EnableIndexing(); }
  uint64_t GetNumKeys() const override { return inner_->GetNumKeys(); }
  uint64_t GetNumPuts() const override { return inner_->GetNumPuts(); }
  uint64_t GetNumDeletes() const override { return inner_->GetNumDeletes(); }
  uint64_t GetNumMerges() const override { return inner_->GetNumMerges(); }
  uint64_t GetElapsedTime() const override { return inner_->GetElapsedTime(); }
  WriteBatchWithIndex* GetWriteBatch() override { return inner_->GetWriteBatch(); }
  void SetLockTimeout(int64_t timeout) override { inner_->SetLockTimeout(timeout); }
  WriteOptions* GetWriteOptions() override { return inner_->GetWriteOptions(); }
  void SetWriteOptions(const WriteOptions& wo) override { inner_->SetWriteOptions(wo); }
  void UndoGetForUpdate(ColumnFamilyHandle* cf, const Slice& k) override { inner_->UndoGetForUpdate(cf, k); }
  void UndoGetForUpdate(const Slice& k) override { inner_->UndoGetForUpdate(k); }
  rocksdb::Status RebuildFromWriteBatch(WriteBatch* src) override { return inner_->RebuildFromWriteBatch(src); }
  WriteBatch* GetCommitTimeWriteBatch() override { return inner_->GetCommitTimeWriteBatch(); }
  void SetLogNumber(uint64_t log) override {
    inner_->SetLogNumber(log);
    log_number_ = log;
  }
  uint64_t GetLogNumber() const override { return inner_->GetLogNumber(); }
  rocksdb::TransactionName GetName() const override { return inner_->GetName(); }
  rocksdb::TransactionID GetID() const override { return inner_->GetID(); }
  bool IsDeadlockDetect() const override { return inner_->IsDeadlockDetect(); }
  std::vector<rocksdb::TransactionID> GetWaitingTxns(uint32_t* cf_id, std::string* key) const override {
    return inner_->GetWaitingTxns(cf_id, key);
  }
  rocksdb::Status SetReadTimestampForValidation(rocksdb::TxnTimestamp ts) override {
    return inner_->SetReadTimestampForValidation(ts);
  }
  rocksdb::Status SetCommitTimestamp(rocksdb::TxnTimestamp ts) override { return inner_->SetCommitTimestamp(ts); }
  rocksdb::TxnTimestamp GetCommitTimestamp() const override { return inner_->GetCommitTimestamp(); }
#if DLCBF_ROCKSDB_AT_LEAST(8, 7)
  rocksdb::Status CollapseKey(const ReadOptions& ro, const Slice& key, ColumnFamilyHandle* cf) override {
    return inner_->CollapseKey(ro, key, cf);
  }
#endif
#if DLCBF_ROCKSDB_AT_LEAST(9, 1)
  rocksdb::Status GetForUpdate(const ReadOptions& ro, const Slice& key, PinnableSlice* value, bool exclusive,
                               const bool do_validate) override {
    return GetForUpdate(ro, Default(), key, value, exclusive, do_validate);
  }
#endif
#if DLCBF_ROCKSDB_AT_LEAST(9, 10) && !DLCBF_ROCKSDB_AT_LEAST(9, 11)
  bool GetCommitBypassMemTable() const override { return inner_->GetCommitBypassMemTable(); }
#endif
  // Wide columns (RocksDB >= 9.3). GetEntity uses the index as Get does.
#if DLCBF_ROCKSDB_AT_LEAST(9, 3)
  rocksdb::Status GetEntity(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key,
                            rocksdb::PinnableWideColumns* columns) override {
    if (Absent(ro, cf, key)) {
      columns->Reset();
      return rocksdb::Status::NotFound();
    }
    return inner_->GetEntity(ro, cf, key, columns);
  }
  void MultiGetEntity(const ReadOptions& ro, ColumnFamilyHandle* cf, size_t n, const Slice* keys,
                      rocksdb::PinnableWideColumns* results, rocksdb::Status* statuses, bool sorted_input) override {
    inner_->MultiGetEntity(ro, cf, n, keys, results, statuses, sorted_input);
  }
  rocksdb::Status PutEntity(ColumnFamilyHandle* cf, const Slice& k, const rocksdb::WideColumns& columns,
                            bool assume_tracked) override {
    return inner_->PutEntity(cf, k, columns, assume_tracked);
  }
  rocksdb::Status PutEntityUntracked(ColumnFamilyHandle* cf, const Slice& k,
                                     const rocksdb::WideColumns& columns) override {
    return inner_->PutEntityUntracked(cf, k, columns);
  }
  uint64_t GetNumPutEntities() const override { return inner_->GetNumPutEntities(); }
#endif
#if DLCBF_ROCKSDB_AT_LEAST(9, 4)
  rocksdb::Status GetEntityForUpdate(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key,
                                     rocksdb::PinnableWideColumns* columns, bool exclusive,
                                     bool do_validate) override {
    return inner_->GetEntityForUpdate(ro, cf, key, columns, exclusive, do_validate);
  }
#endif
#if DLCBF_ROCKSDB_AT_LEAST(9, 8)
  std::unique_ptr<rocksdb::AttributeGroupIterator> GetAttributeGroupIterator(
      const ReadOptions& ro, const std::vector<ColumnFamilyHandle*>& cfs) override {
    return inner_->GetAttributeGroupIterator(ro, cfs);
  }
#endif
#if DLCBF_ROCKSDB_AT_LEAST(9, 9)
  std::unique_ptr<rocksdb::Iterator> GetCoalescingIterator(const ReadOptions& ro,
                                                           const std::vector<ColumnFamilyHandle*>& cfs) override {
    return inner_->GetCoalescingIterator(ro, cfs);
  }
#endif
#if DLCBF_ROCKSDB_AT_LEAST(10, 7)
  void SetDeadlockTimeout(int64_t timeout_ms) override { inner_->SetDeadlockTimeout(timeout_ms); }
#endif

 private:
  // The state RocksDB's non-virtual accessors (GetState, GetId) read.
  void Mirror() {
    txn_state_.store(inner_->GetState());
    name_ = inner_->GetName();
    log_number_ = inner_->GetLogNumber();
    id_ = inner_->GetId();
  }
  rocksdb::Status Mirrored(rocksdb::Status s) {
    Mirror();
    return s;
  }
  ColumnFamilyHandle* Default() { return host_->live()->DefaultColumnFamily(); }

  enum class Where { kAbsent, kBatch, kDb };
  // kAbsent: the key is in no state this read could see: neither in the
  // transaction's batch nor in the index (Rep::MayBeLive, which also
  // applies the bypass rules and the ledger's trust check). kBatch: the
  // batch has an entry for it (found, or a merge to resolve: RocksDB
  // answers). kDb: RocksDB's committed state answers.
  Where Locate(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key) {
    if (cf == nullptr) return Where::kBatch;  // (RocksDB's answer, whatever it is)
    WriteBatchWithIndex* wbwi = inner_->GetWriteBatch();
    if (wbwi->GetWriteBatch()->Count() != 0) {
      std::string v;
      const rocksdb::Status in_batch = wbwi->GetFromBatch(cf, host_->db_options(), key, &v);
      if (!in_batch.IsNotFound()) return Where::kBatch;
      // NotFound: not in the batch, or deleted by it (then RocksDB answers
      // NotFound too, whatever the DB holds).
    }
    return LiveKeyTransactions::RepOf(host_->live())->MayBeLive(ro, cf, key) ? Where::kDb : Where::kAbsent;
  }
  bool Absent(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key) {
    return Locate(ro, cf, key) == Where::kAbsent;
  }

  // A read of the latest state: NotFound from the index, or RocksDB's
  // answer; a key RocksDB found live in the DB is remembered for the
  // commit (LiveHint, rep.h): its write then needs no check.
  template <class Value, class Clear>
  rocksdb::Status ReadThrough(const ReadOptions& ro, ColumnFamilyHandle* cf, const Slice& key, Value* value,
                              Clear&& clear) {
    const Where w = Locate(ro, cf, key);
    if (w == Where::kAbsent) {
      clear();
      return rocksdb::Status::NotFound();
    }
    LiveKeyDB::Rep* r = LiveKeyTransactions::RepOf(host_->live());
    const bool hint = w == Where::kDb && hints_.size() < kMaxHints && !LiveKeyDB::Rep::BypassRead(ro);
    LiveKeyDB::Rep::LiveHint h{};
    if (hint) {
      h.cf = cf->GetID();
      h.hash = r->Hash(key);
      h.si = r->stripes.Of(h.cf, h.hash);
      h.epoch = r->stripes.AllEpochBeforeRead();
      h.stamp = r->stripes.StampBeforeRead(h.si);
#ifdef DLCBF_TESTING
      if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kStaleLiveHint) h.stamp = ~uint64_t{0};
#endif
    }
    rocksdb::Status s = inner_->Get(ro, cf, key, value);
    if (hint && s.ok()) {
      h.key = key.ToString();
      hints_.push_back(std::move(h));
    }
    return s;
  }
  // Reads remembered per transaction (each a key and two numbers).
  static constexpr size_t kMaxHints = 64;
  std::vector<LiveKeyDB::Rep::LiveHint> hints_;

  TxnHost* host_;
  Transaction* inner_;
};

// ---- Wrappers -----------------------------------------------------------------
Transaction* Wrappers::Wrap(TxnHost* host, Transaction* inner) {
  if (inner == nullptr) return nullptr;
  std::lock_guard<std::mutex> l(mu_);
  auto it = by_inner_.find(inner);
  if (it != by_inner_.end()) return it->second;
  IndexedTransaction* w = new IndexedTransaction(host, inner);
  by_inner_.emplace(inner, w);
  return w;
}

Transaction* Wrappers::InnerOf(Transaction* old_txn) {
  auto* old = static_cast<IndexedTransaction*>(old_txn);
  return old != nullptr ? old->inner() : nullptr;
}

Transaction* Wrappers::Begun(TxnHost* host, Transaction* old_txn, Transaction* in) {
  auto* old = static_cast<IndexedTransaction*>(old_txn);
  if (old != nullptr && in == old->inner()) {
    old->Restart();
    return old;
  }
  return Wrap(host, in);
}

void Wrappers::Forget(Transaction* inner) {
  std::lock_guard<std::mutex> l(mu_);
  by_inner_.erase(inner);
}

void Wrappers::DropOrphans(const std::function<bool(Transaction*)>& still_registered) {
  std::vector<IndexedTransaction*> orphans;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = by_inner_.begin(); it != by_inner_.end();) {
      if (still_registered(it->first)) {
        orphans.push_back(it->second);
        it = by_inner_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (IndexedTransaction* w : orphans) {
    w->Orphan();
    delete w;
  }
}

}  // namespace live_key
}  // namespace dlcbf
