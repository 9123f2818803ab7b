// One spelling of rocksdb::DB::Open (and OpenForReadOnly) for every
// supported RocksDB: 7.x-10.x take DB**, 11.x only std::unique_ptr<DB>*.
// Used by LiveKeyDB, the tests and the tools. INTERNAL (never installed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/version.h"

namespace dlcbf {
namespace compat {

// rocksdb::DB::Open(options, path, dbptr); *dbptr owned by the caller.
inline rocksdb::Status OpenDB(const rocksdb::Options& options, const std::string& path,
                              rocksdb::DB** dbptr) {
#if ROCKSDB_MAJOR >= 11
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &db);
  *dbptr = db.release();
  return s;
#else
  return rocksdb::DB::Open(options, path, dbptr);
#endif
}

// The column-family form.
inline rocksdb::Status OpenDB(const rocksdb::DBOptions& db_options, const std::string& path,
                              const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
                              std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                              rocksdb::DB** dbptr) {
#if ROCKSDB_MAJOR >= 11
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::Status s = rocksdb::DB::Open(db_options, path, column_families, handles, &db);
  *dbptr = db.release();
  return s;
#else
  return rocksdb::DB::Open(db_options, path, column_families, handles, dbptr);
#endif
}

// rocksdb::DB::OpenForReadOnly, the column-family form.
inline rocksdb::Status OpenDBForReadOnly(const rocksdb::DBOptions& db_options, const std::string& path,
                                         const std::vector<rocksdb::ColumnFamilyDescriptor>& column_families,
                                         std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                                         rocksdb::DB** dbptr) {
#if ROCKSDB_MAJOR >= 11
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(db_options, path, column_families, handles, &db);
  *dbptr = db.release();
  return s;
#else
  return rocksdb::DB::OpenForReadOnly(db_options, path, column_families, handles, dbptr);
#endif
}

}  // namespace compat
}  // namespace dlcbf
