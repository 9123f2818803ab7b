// What LiveKeyDB's transaction DBs (transaction_db.cc) share with the
// transactions they hand out (transactions.cc): the host a wrapped
// transaction calls back into (TxnHost), the table of the wrappers by
// RocksDB's transaction (Wrappers), and the LiveKeyDB's state (RepOf).
// The design note is in transactions.cc. Internal to
// filter_policy/rocksdb/live_key_db/ (not installed).
#pragma once

#include <functional>
#include <mutex>
#include <unordered_map>

#include "dlcbf/rocksdb/live_key_db.h"
#include "rocksdb/utilities/transaction.h"

namespace dlcbf {
namespace live_key {

using rocksdb::Transaction;

// The LiveKeyDB's Rep (transactions.cc, through the friend
// LiveKeyTransactions).
LiveKeyDB::Rep* RepOf(LiveKeyDB* db);

// What a transaction DB wrapper gives its transactions.
class TxnHost {
 public:
  virtual ~TxnHost() = default;
  virtual LiveKeyDB* live() = 0;
  virtual const rocksdb::DBOptions& db_options() const = 0;
  virtual void Forget(Transaction* inner) = 0;
};

// The wrapper of one transaction RocksDB handed out (transactions.cc).
class IndexedTransaction;

// The wrappers a transaction DB handed out, by RocksDB's transaction.
// Defined in transactions.cc, beside IndexedTransaction.
class Wrappers {
 public:
  // The wrapper of `inner`, made at its first sight (nullptr for nullptr).
  Transaction* Wrap(TxnHost* host, Transaction* inner);
  // A transaction DB's BeginTransaction(..., old_txn): RocksDB's
  // transaction under `old_txn` (a wrapper this table handed out, or
  // nullptr) is the one RocksDB may reuse ...
  static Transaction* InnerOf(Transaction* old_txn);
  // ... and, once RocksDB's BeginTransaction returned `in`, what to return:
  // `old_txn`, restarted, when RocksDB reused its transaction, else the
  // wrapper of `in`.
  Transaction* Begun(TxnHost* host, Transaction* old_txn, Transaction* in);
  void Forget(Transaction* inner);
  // At the DB's deletion: RocksDB deletes the prepared transactions still
  // registered with it (`still_registered`); their wrappers go too.
  void DropOrphans(const std::function<bool(Transaction*)>& still_registered);

 private:
  std::mutex mu_;
  std::unordered_map<Transaction*, IndexedTransaction*> by_inner_;
};

}  // namespace live_key
}  // namespace dlcbf
