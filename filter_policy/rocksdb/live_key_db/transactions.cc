// LiveKeyDB's transaction routes: OpenTransactionDB and
// OpenOptimisticTransactionDB return RocksDB's own TransactionDB and
// OptimisticTransactionDB types with a LiveKeyDB between the transaction
// layer and the DB, so that every commit is indexed and reads of absent
// keys inside a transaction skip the LSM tree. The contract is in
// include/dlcbf/rocksdb/live_key_db.h ("Transactions").
//
// Design note
//   Layers, top down: our TransactionDB (TxnDB) or OptimisticTransactionDB
//   (OccDB), a StackableDB over the LiveKeyDB, whose base is RocksDB's own
//   transaction DB over DBImpl. RocksDB's transactions commit straight into
//   DBImpl (ROCKSDB_NOTES.md: WriteImpl, WriteWithCallback), past any
//   StackableDB, so each transaction RocksDB hands out is wrapped
//   (IndexedTransaction): every call is forwarded, and Commit goes through
//   Rep::IndexedWrite with the commit as its write. That is the exactness
//   argument of a WriteBatch through LiveKeyDB (write_batch.cc), unchanged:
//   the batches the commit writes are read before it (the prepared batch
//   and, after Prepare, the commit-time batch before it: RocksDB writes
//   commit-time batch + prepared batch as one batch), the keys that become
//   live are inserted under their stripes BEFORE the commit, the keys it
//   deletes are erased (or checked) after it succeeded. Nothing is indexed
//   at Put time, so Rollback and savepoints need nothing.
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
//   GetForUpdate time and the stripes only inside Commit, which waits for
//   no key lock. The TransactionDB's non-transactional writes are run as a
//   transaction of one batch (its Put/Delete/... calls take the locks, the
//   families named by the handles LiveKeyDB keeps: BatchIntoTransaction),
//   then the indexed commit, as RocksDB itself runs them; going through
//   LiveKeyDB::Write instead would hold stripes while RocksDB's Write waits
//   for a key lock that a committing transaction holds while it waits for
//   the stripe.
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

#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/transaction_db.h"
#include "rocksdb/utilities/write_batch_with_index.h"

namespace dlcbf {

using rocksdb::OptimisticTransactionDB;
using rocksdb::Transaction;
using rocksdb::TransactionDB;
using rocksdb::WriteBatchWithIndex;

class LiveKeyTransactions {
 public:
  static LiveKeyDB::Rep* RepOf(LiveKeyDB* db) { return db->rep_.get(); }
  static rocksdb::Status OpenWith(const rocksdb::DBOptions& db_options, const LiveKeyIndexOptions& index_options,
                         std::vector<ColumnFamilyHandle*>* handles,
                         const std::function<rocksdb::Status(const rocksdb::DBOptions&, DB**)>& open_base,
                         LiveKeyDB** dbptr) {
    return LiveKeyDB::OpenWith(db_options, index_options, handles, open_base, dbptr);
  }
};

namespace {

// The DBs OpenTransactionDB / OpenOptimisticTransactionDB returned, for
// FromTransactionDB (no RTTI needed).
std::mutex g_registry_mu;
std::unordered_map<const DB*, LiveKeyDB*>& Registry() {
  static auto* r = new std::unordered_map<const DB*, LiveKeyDB*>();
  return *r;
}

// What a transaction DB wrapper gives its transactions.
class TxnHost {
 public:
  virtual ~TxnHost() = default;
  virtual LiveKeyDB* live() = 0;
  virtual const rocksdb::DBOptions& db_options() const = 0;
  virtual void Forget(Transaction* inner) = 0;
};

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

// The wrappers a transaction DB handed out, by RocksDB's transaction.
class Wrappers {
 public:
  IndexedTransaction* Wrap(TxnHost* host, Transaction* inner) {
    if (inner == nullptr) return nullptr;
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_inner_.find(inner);
    if (it != by_inner_.end()) return it->second;
    IndexedTransaction* w = new IndexedTransaction(host, inner);
    by_inner_.emplace(inner, w);
    return w;
  }
  void Forget(Transaction* inner) {
    std::lock_guard<std::mutex> l(mu_);
    by_inner_.erase(inner);
  }
  // At the DB's deletion: RocksDB deletes the prepared transactions still
  // registered with it (`still_registered`); their wrappers go too.
  template <class Pred>
  void DropOrphans(Pred&& still_registered) {
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

 private:
  std::mutex mu_;
  std::unordered_map<Transaction*, IndexedTransaction*> by_inner_;
};

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
    auto* old = static_cast<IndexedTransaction*>(old_txn);
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
    Transaction* in = inner_->BeginTransaction(wo, to, old != nullptr ? old->inner() : nullptr);
    if (old != nullptr && in == old->inner()) {
      old->Restart();
      return old;
    }
    return wrappers_.Wrap(this, in);
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
    BatchIntoTransaction into(t.get(), LiveKeyTransactions::RepOf(live_));
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
    auto* old = static_cast<IndexedTransaction*>(old_txn);
    Transaction* in = inner_->BeginTransaction(wo, to, old != nullptr ? old->inner() : nullptr);
    if (old != nullptr && in == old->inner()) {
      old->Restart();
      return old;
    }
    return wrappers_.Wrap(this, in);
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
  rocksdb::Status s = LiveKeyTransactions::OpenWith(
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
  rocksdb::Status s = LiveKeyTransactions::OpenWith(
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
