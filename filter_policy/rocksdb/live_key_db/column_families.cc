// LiveKeyDB's column-family calls: creation (an empty index), import (an
// index built by a scan before the handle is published), drop (the index
// retired after a grace period) and handle release (kept until Close).
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dlcbf {

// A family created by import: indexed by a scan before the handle is
// published (nobody else has it yet).
rocksdb::Status LiveKeyDB::Rep::RegisterImported(ColumnFamilyHandle* h) {
  CfState* cf = nullptr;
  {
    std::lock_guard<std::mutex> l(cf_mu);
    cf = AddFamily(h);
  }
  rocksdb::Status s;
  if (cf->indexed) {
    s = Rebuild(cf, "imported column family", /*automatic=*/false);
    if (!s.ok()) {
      cf->indexed = false;
      cf->bypass_reason = "index build after import failed: " + s.ToString();
    }
  }
  std::lock_guard<std::mutex> l(cf_mu);
  PublishTableLocked();
  return s;
}

rocksdb::Status LiveKeyDB::CreateColumnFamilyWithImport(const rocksdb::ColumnFamilyOptions& options,
                                               const std::string& column_family_name,
                                               const rocksdb::ImportColumnFamilyOptions& import_options,
                                               const rocksdb::ExportImportFilesMetaData& metadata,
                                               ColumnFamilyHandle** handle) {
  rocksdb::Status s = db_->CreateColumnFamilyWithImport(options, column_family_name, import_options,
                                               metadata, handle);
  if (!s.ok()) return s;
  return rep_->RegisterImported(*handle);
}

#if DLCBF_ROCKSDB_AT_LEAST(8, 4)
rocksdb::Status LiveKeyDB::CreateColumnFamilyWithImport(
    const rocksdb::ColumnFamilyOptions& options, const std::string& column_family_name,
    const rocksdb::ImportColumnFamilyOptions& import_options,
    const std::vector<const rocksdb::ExportImportFilesMetaData*>& metadatas, ColumnFamilyHandle** handle) {
  rocksdb::Status s = db_->CreateColumnFamilyWithImport(options, column_family_name, import_options,
                                                        metadatas, handle);
  if (!s.ok()) return s;
  return rep_->RegisterImported(*handle);
}
#endif

rocksdb::Status LiveKeyDB::CreateColumnFamily(const rocksdb::ColumnFamilyOptions& options,
                                     const std::string& column_family_name,
                                     ColumnFamilyHandle** handle) {
  rocksdb::Status s = db_->CreateColumnFamily(options, column_family_name, handle);
  if (!s.ok()) return s;
  return rep_->RegisterNew({*handle});
}

rocksdb::Status LiveKeyDB::CreateColumnFamilies(const rocksdb::ColumnFamilyOptions& options,
                                       const std::vector<std::string>& column_family_names,
                                       std::vector<ColumnFamilyHandle*>* handles) {
  rocksdb::Status s = db_->CreateColumnFamilies(options, column_family_names, handles);
  rocksdb::Status r = rep_->RegisterNew(*handles);  // those created before a failure too
  return s.ok() ? r : s;
}

rocksdb::Status LiveKeyDB::CreateColumnFamilies(const std::vector<ColumnFamilyDescriptor>& column_families,
                                       std::vector<ColumnFamilyHandle*>* handles) {
  rocksdb::Status s = db_->CreateColumnFamilies(column_families, handles);
  rocksdb::Status r = rep_->RegisterNew(*handles);
  return s.ok() ? r : s;
}

rocksdb::Status LiveKeyDB::DropColumnFamily(ColumnFamilyHandle* column_family) {
  Rep& r = *rep_;
  CfState* cf = column_family != nullptr ? r.FindState(column_family->GetID()) : nullptr;
  if (cf == nullptr || cf->dropped) return db_->DropColumnFamily(column_family);
  std::unique_ptr<LiveKeyIndex> retired;
  rocksdb::Status s;
  {
    std::lock_guard<std::mutex> rl(r.rebuild_mu);
    r.LockAll();
    s = db_->DropColumnFamily(column_family);
    if (s.ok()) {
      std::lock_guard<std::mutex> sl(r.swap_mu);
      cf->dropped = true;
      retired = std::move(cf->owned);
      cf->active.store(nullptr);
    }
    r.UnlockAll();
  }
  if (s.ok()) {
    std::lock_guard<std::mutex> l(r.cf_mu);
    r.PublishTableLocked();  // waits for readers of the old table
  }
  if (retired) {
    r.epochs.Synchronize();
    retired.reset();
  }
  return s;
}

rocksdb::Status LiveKeyDB::DropColumnFamilies(const std::vector<ColumnFamilyHandle*>& column_families) {
  for (ColumnFamilyHandle* h : column_families) {
    rocksdb::Status s = DropColumnFamily(h);
    if (!s.ok()) return s;
  }
  return rocksdb::Status::OK();
}

rocksdb::Status LiveKeyDB::DestroyColumnFamilyHandle(ColumnFamilyHandle* column_family) {
  Rep& r = *rep_;
  if (column_family != nullptr && !r.closed) {
    std::lock_guard<std::mutex> l(r.cf_mu);
    auto it = r.cfs.find(column_family->GetID());
    if (it != r.cfs.end() && it->second->handle == column_family) {
      it->second->handle_released = true;  // destroyed at Close
      return rocksdb::Status::OK();
    }
  }
  return db_->DestroyColumnFamilyHandle(column_family);
}

}  // namespace dlcbf
