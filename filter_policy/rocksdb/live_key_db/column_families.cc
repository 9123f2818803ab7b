// LiveKeyDB's column families: the Rep's family table (AddFamily: which
// families are indexed and why not; FindState) and the calls on families:
// creation (an empty index), import (an index built by a scan before the
// handle is published), drop (the index retired after a grace period) and
// handle release (kept until Close).
#include "filter_policy/rocksdb/live_key_db/compaction_filter_guard.h"
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dlcbf {

// cf_mu held; no index yet.
CfState* LiveKeyDB::Rep::AddFamily(ColumnFamilyHandle* h) {
  std::unique_ptr<CfState> st(new CfState);
  st->id = h->GetID();
  st->name = h->GetName();
  st->handle = st->id == 0 ? base->DefaultColumnFamily() : h;
  st->cmp = h->GetComparator();
  if (st->cmp == nullptr) {
    st->bypass_reason = "no comparator";
  } else if (st->cmp->timestamp_size() > 0) {
    st->bypass_reason = "user-defined timestamps";
  } else if (st->cmp->CanKeysWithDifferentByteContentsBeEqual() && !opt.trust_comparator) {
    st->bypass_reason = std::string("comparator ") + st->cmp->Name() +
                        " may consider different bytes equal (see trust_comparator)";
  } else {
    st->indexed = true;
  }
  if (st->indexed && opt.live_prefix_counts) {
    rocksdb::ColumnFamilyDescriptor d;
    if (h->GetDescriptor(&d).ok()) st->prefix = d.options.prefix_extractor;
  }
  st->counts_ranges = st->indexed && !opt.live_range_lengths.empty() && st->cmp == rocksdb::BytewiseComparator();
  CfState* raw = st.get();
  cfs[st->id] = std::move(st);
  return raw;
}
rocksdb::Status LiveKeyDB::Rep::CreateEmptyIndex(CfState* cf, bool empty_family) {
  std::unique_ptr<LiveKeyIndex> idx;
  rocksdb::Status s = LiveKeyIndex::Create(opt, opt.expected_keys, &epochs, &idx);
  if (!s.ok()) return s;
  // (A new family's counts are exact from its first key; Open's stand-in
  // never serves: the build brings its own.)
  if (empty_family && cf->counts_regions()) idx->AttachRegionCounts();
  std::lock_guard<std::mutex> sl(swap_mu);
  cf->owned = std::move(idx);
  cf->active.store(cf->owned.get());
  return s;
}
// Registers freshly created (empty) families.
rocksdb::Status LiveKeyDB::Rep::RegisterNew(const std::vector<ColumnFamilyHandle*>& handles) {
  std::lock_guard<std::mutex> l(cf_mu);
  rocksdb::Status result;
  for (ColumnFamilyHandle* h : handles) {
    if (h == nullptr) continue;
    CfState* cf = AddFamily(h);
    if (cf->indexed) {
      rocksdb::Status s = CreateEmptyIndex(cf, /*empty_family=*/true);
      if (!s.ok()) {  // leave it unindexed rather than fail the creation
        cf->indexed = false;
        cf->bypass_reason = "index creation failed: " + s.ToString();
        if (result.ok()) result = s;
      }
    }
  }
  PublishTableLocked();
  return result;
}

CfState* LiveKeyDB::Rep::FindState(uint32_t id) {
  std::lock_guard<std::mutex> l(cf_mu);
  auto it = cfs.find(id);
  return it == cfs.end() ? nullptr : it->second.get();
}

// A family created by import: indexed by a scan before the handle is
// published (nobody else has it yet).
rocksdb::Status LiveKeyDB::Rep::RegisterImported(ColumnFamilyHandle* h) {
  CfState* cf = nullptr;
  {
    std::lock_guard<std::mutex> l(cf_mu);
    cf = AddFamily(h);
  }
  if (world) world->AdoptFamily(cf->name);  // (no event names an import's files: world_watch.h)
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
  // (An import may move the DB's sequence number past the files' own: a
  // gap to the ledger, which then has the indexes rebuilt; seq_ledger.h.)
  rep_->ledger.Begin();
  rocksdb::ColumnFamilyOptions o = options;
  live_key::GuardCompactionFilters(&o, rep_->world);
  rocksdb::Status s = db_->CreateColumnFamilyWithImport(o, column_family_name, import_options,
                                               metadata, handle);
  rep_->ledger.End(0);  // (consumption unknown: a gap, the safe side)
  if (!s.ok()) return s;
  return rep_->RegisterImported(*handle);
}

#if DLCBF_ROCKSDB_AT_LEAST(8, 4)
rocksdb::Status LiveKeyDB::CreateColumnFamilyWithImport(
    const rocksdb::ColumnFamilyOptions& options, const std::string& column_family_name,
    const rocksdb::ImportColumnFamilyOptions& import_options,
    const std::vector<const rocksdb::ExportImportFilesMetaData*>& metadatas, ColumnFamilyHandle** handle) {
  rep_->ledger.Begin();
  rocksdb::ColumnFamilyOptions o = options;
  live_key::GuardCompactionFilters(&o, rep_->world);
  rocksdb::Status s = db_->CreateColumnFamilyWithImport(o, column_family_name, import_options,
                                                        metadatas, handle);
  rep_->ledger.End(0);  // (consumption unknown: a gap, the safe side)
  if (!s.ok()) return s;
  return rep_->RegisterImported(*handle);
}
#endif

rocksdb::Status LiveKeyDB::CreateColumnFamily(const rocksdb::ColumnFamilyOptions& options,
                                     const std::string& column_family_name,
                                     ColumnFamilyHandle** handle) {
  rocksdb::ColumnFamilyOptions o = options;
  live_key::GuardCompactionFilters(&o, rep_->world);
  rocksdb::Status s = db_->CreateColumnFamily(o, column_family_name, handle);
  if (!s.ok()) return s;
  return rep_->RegisterNew({*handle});
}

rocksdb::Status LiveKeyDB::CreateColumnFamilies(const rocksdb::ColumnFamilyOptions& options,
                                       const std::vector<std::string>& column_family_names,
                                       std::vector<ColumnFamilyHandle*>* handles) {
  rocksdb::ColumnFamilyOptions o = options;
  live_key::GuardCompactionFilters(&o, rep_->world);
  rocksdb::Status s = db_->CreateColumnFamilies(o, column_family_names, handles);
  rocksdb::Status r = rep_->RegisterNew(*handles);  // those created before a failure too
  return s.ok() ? r : s;
}

rocksdb::Status LiveKeyDB::CreateColumnFamilies(const std::vector<ColumnFamilyDescriptor>& column_families,
                                       std::vector<ColumnFamilyHandle*>* handles) {
  std::vector<ColumnFamilyDescriptor> cfds = column_families;
  for (ColumnFamilyDescriptor& d : cfds) live_key::GuardCompactionFilters(&d.options, rep_->world);
  rocksdb::Status s = db_->CreateColumnFamilies(cfds, handles);
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
    r.world->ExpectFamilyDrop(cf->name);  // (its files leave explained)
    s = db_->DropColumnFamily(column_family);
    r.world->FamilyDropDone(cf->name, s.ok());
    if (s.ok()) {
      r.stripes.ForgetFamily(cf->id);  // its records (stripes.h) would hold slots until Close
      std::lock_guard<std::mutex> cl(r.cf_mu);  // (read under it by the world watch's hook; before swap_mu)
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
    r.UpdateCacheCharge();
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
