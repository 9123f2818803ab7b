// live_key_transactions_example: a RocksDB TransactionDB whose commits are
// indexed by LiveKeyDB, so that a unique-key insert's GetForUpdate of a new
// key answers NotFound from the index, without reading the memtables or
// the SST files. The app changes its Open call and nothing else: the DB
// and its transactions are RocksDB's own types.
//
// It opens a new DB, inserts two keys with "insert if absent" transactions,
// tries a duplicate insert (refused: the key exists), and prints how many
// reads the index answered.
//
//   live_key_transactions_example [db_dir]
//
// db_dir must not exist (default: a new directory under the system's
// temporary directory); it is removed at the end. Exits 1 on any result
// other than the expected one.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "dlcbf/rocksdb/live_key_db.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/utilities/transaction_db.h"

namespace {

void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "FAILED: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// Inserts key -> value unless the key exists: the transaction locks the key
// (GetForUpdate), so two concurrent inserts of one key cannot both succeed.
rocksdb::Status InsertIfAbsent(rocksdb::TransactionDB* db, const std::string& key, const std::string& value) {
  std::unique_ptr<rocksdb::Transaction> txn(db->BeginTransaction(rocksdb::WriteOptions()));
  std::string existing;
  rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), key, &existing);
  if (s.ok()) return rocksdb::Status::Busy("exists");  // (rolled back when txn is deleted)
  if (!s.IsNotFound()) return s;
  s = txn->Put(key, value);
  return s.ok() ? txn->Commit() : s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1]
                                    : (std::filesystem::temp_directory_path() /
                                       ("live_key_transactions_example_" + std::to_string(::getpid())))
                                          .string();
  // [readme-snippet:livekey_txn]
  rocksdb::Options options;
  options.create_if_missing = true;
  dlcbf::LiveKeyIndexOptions index_options;
  index_options.expected_keys = 1'000'000;

  rocksdb::TransactionDB* db = nullptr;  // RocksDB's own type
  Check(dlcbf::LiveKeyDB::OpenTransactionDB(options, rocksdb::TransactionDBOptions(), index_options, path, &db),
        "OpenTransactionDB");
  Check(InsertIfAbsent(db, "user:alice", "1"), "insert alice");  // GetForUpdate: NotFound from the index
  Check(InsertIfAbsent(db, "user:bob", "2"), "insert bob");
  rocksdb::Status dup = InsertIfAbsent(db, "user:alice", "3");  // Busy: alice exists
  dlcbf::LiveKeyStats stats = dlcbf::LiveKeyDB::FromTransactionDB(db)->GetLiveKeyStats();
  std::printf("duplicate insert: %s; reads answered by the index alone: %llu\n", dup.ToString().c_str(),
              static_cast<unsigned long long>(stats.short_circuited));
  delete db;  // saves the index, as LiveKeyDB::Close
  // [/readme-snippet]
  std::filesystem::remove_all(path);
  if (!dup.IsBusy() || stats.short_circuited < 2) {
    std::fprintf(stderr, "UNEXPECTED: duplicate %s, short-circuited %llu (expected Busy, >= 2)\n",
                 dup.ToString().c_str(), static_cast<unsigned long long>(stats.short_circuited));
    return 1;
  }
  std::printf("live_key_transactions_example: all results as expected\n");
  return 0;
}
