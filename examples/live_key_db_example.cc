// live_key_db_example: LiveKeyDB, a RocksDB DB whose Gets of absent and
// deleted keys are answered by an in-memory index of the live keys,
// without touching the memtables or the SST files.
//
// It opens a new DB, writes two keys, deletes one, reads a present, an
// absent and a deleted key, prints the index statistics, closes (which
// saves the index), reopens (which loads it) and reads the same keys again.
//
//   live_key_db_example [db_dir]
//
// db_dir must not exist (default: a new directory under the system's
// temporary directory); it is removed at the end. Exits 1 on any result
// other than the expected one.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "dlcbf/rocksdb/live_key_db.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"

namespace {

int failures = 0;

// A failed call ends the program; an unexpected answer is counted.
void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "FAILED: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}
void Expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "UNEXPECTED: %s\n", what);
    ++failures;
  }
}

// Reads the three keys: apple is present, plum was never written, pear was
// deleted.
void ReadBack(dlcbf::LiveKeyDB* db) {
  std::string value;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), "apple", &value);
  Expect(s.ok() && value == "red", "apple: OK, \"red\"");
  s = db->Get(rocksdb::ReadOptions(), "plum", &value);
  Expect(s.IsNotFound(), "plum (never written): NotFound");
  s = db->Get(rocksdb::ReadOptions(), "pear", &value);
  Expect(s.IsNotFound(), "pear (deleted): NotFound");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1]
               : (std::filesystem::temp_directory_path() /
                  ("live_key_db_example-" + std::to_string(getpid())))
                     .string();

  // [readme-snippet:livekey]
  rocksdb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;            // a new DB
  dlcbf::LiveKeyIndexOptions index_options;
  index_options.expected_keys = 1'000'000;   // live keys per column family

  dlcbf::LiveKeyDB* db = nullptr;
  Check(dlcbf::LiveKeyDB::Open(options, index_options, path, &db), "Open");
  Check(db->Put(rocksdb::WriteOptions(), "apple", "red"), "Put apple");
  Check(db->Put(rocksdb::WriteOptions(), "pear", "green"), "Put pear");
  Check(db->Delete(rocksdb::WriteOptions(), "pear"), "Delete pear");

  std::string value;
  rocksdb::Status absent = db->Get(rocksdb::ReadOptions(), "plum", &value);   // NotFound, from the index alone
  rocksdb::Status deleted = db->Get(rocksdb::ReadOptions(), "pear", &value);  // NotFound
  std::printf("%s\n", db->GetLiveKeyStats().ToString().c_str());  // lookups, short-circuits, index mode, FPR
  Check(db->Close(), "Close");               // saves the index into the DB directory
  delete db;
  // [/readme-snippet]
  Expect(absent.IsNotFound(), "plum (never written) before Close: NotFound");
  Expect(deleted.IsNotFound(), "pear (deleted) before Close: NotFound");

  // Reopen: the index comes back from the file Close wrote, no scan.
  options.error_if_exists = false;
  db = nullptr;
  Check(dlcbf::LiveKeyDB::Open(options, index_options, path, &db), "reopen");
  const dlcbf::LiveKeyStats before = db->GetLiveKeyStats();
  ReadBack(db);
  const dlcbf::LiveKeyStats after = db->GetLiveKeyStats();
  std::printf("after reopen:\n%s\n", after.ToString().c_str());
  Expect(!after.column_families.empty() && after.column_families[0].loaded_from_file,
         "the reopened index was loaded from its file");
  // plum and pear: both answered by the index alone (pear's erase was
  // applied before Close saved the index).
  Expect(after.short_circuited - before.short_circuited == 2,
         "2 reads short-circuited by the index after reopen");
  Check(db->Close(), "Close after reopen");
  delete db;

  Check(rocksdb::DestroyDB(path, options), "DestroyDB");
  std::filesystem::remove_all(path);
  if (failures != 0) {
    std::fprintf(stderr, "live_key_db_example: %d unexpected result(s)\n", failures);
    return 1;
  }
  std::printf("live_key_db_example: every result as expected\n");
  return 0;
}
