// LiveKeyDB's reads: Get, GetEntity, MultiGet (every overload) and
// KeyMayExist ask the index first (Rep::MayBeLive; MultiGet per key): a
// "no" is NotFound without touching RocksDB, anything else RocksDB's own
// read. The contract: include/dlcbf/rocksdb/live_key_db.h (its opening
// comment and "Reads"); iterators: live_iterator.cc.
#include "dlcbf/rocksdb/live_key_db.h"

#include <string>
#include <vector>

#include "dlcbf/internal/rocksdb_compat.h"
#include "filter_policy/rocksdb/live_key_db/rep.h"

namespace dlcbf {

#if DLCBF_ROCKSDB_DB_READS_FINAL
// RocksDB >= 9.0: every Get overload ends here; no timestamp = indexed read.
rocksdb::Status LiveKeyDB::Get(const ReadOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, PinnableSlice* value, std::string* timestamp) {
  if (timestamp == nullptr) {
    if (!rep_->MayBeLive(options, column_family, key)) {
      if (value != nullptr) value->Reset();
      return rocksdb::Status::NotFound();
    }
    return db_->Get(options, column_family, key, value, nullptr);
  }
  rep_->epochs.Bump(kBypassed);
  return db_->Get(options, column_family, key, value, timestamp);
}
#else
rocksdb::Status LiveKeyDB::Get(const ReadOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, PinnableSlice* value) {
  if (!rep_->MayBeLive(options, column_family, key)) {
    if (value != nullptr) value->Reset();
    return rocksdb::Status::NotFound();
  }
  return db_->Get(options, column_family, key, value);
}

rocksdb::Status LiveKeyDB::Get(const ReadOptions& options, ColumnFamilyHandle* column_family,
                      const Slice& key, PinnableSlice* value, std::string* timestamp) {
  rep_->epochs.Bump(kBypassed);
  return db_->Get(options, column_family, key, value, timestamp);
}
#endif

rocksdb::Status LiveKeyDB::GetEntity(const ReadOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, rocksdb::PinnableWideColumns* columns) {
  if (!rep_->MayBeLive(options, column_family, key)) {
    if (columns != nullptr) columns->Reset();
    return rocksdb::Status::NotFound();
  }
  return db_->GetEntity(options, column_family, key, columns);
}

namespace {

// maybe[i] for n keys of (possibly) different families; false = certainly
// absent. Families without an index answer "maybe".
void ProbeKeysUnchecked(EpochDomain* epochs, const std::atomic<const CfTable*>& table, uint64_t seed,
                        size_t n, ColumnFamilyHandle* const* cfs, const Slice* keys, bool* maybe,
                        uint64_t* indexed) {
  std::vector<uint64_t> hashes(n);
  for (size_t i = 0; i < n; ++i) hashes[i] = internal::HashKey(keys[i].data(), keys[i].size(), seed);
  *indexed = 0;
  ReadSection rs(epochs);
  const CfTable* t = table.load();
  size_t i = 0;
  while (i < n) {
    // Runs of the same family use the batched probe.
    size_t j = i + 1;
    while (j < n && cfs[j] == cfs[i]) ++j;
    const CfState* cf = (t != nullptr && cfs[i] != nullptr) ? t->Find(cfs[i]->GetID()) : nullptr;
    const LiveKeyIndex* idx = LiveKeyDB::Rep::ServingIndex(cf);
    if (idx == nullptr) {
      for (size_t k = i; k < j; ++k) maybe[k] = true;
    } else {
      idx->ContainsBatch(hashes.data() + i, j - i, maybe + i);
      *indexed += j - i;
    }
    i = j;
  }
}

// ProbeKeysUnchecked, and a "no" only for writes the index saw
// (Rep::IndexTrusted): else every key goes to RocksDB.
void ProbeKeys(LiveKeyDB::Rep* r, size_t n, ColumnFamilyHandle* const* cfs, const Slice* keys, bool* maybe,
               uint64_t* indexed) {
  const uint64_t trust = r->TrustEpoch();  // (before the probe: Rep::IndexTrusted)
  ProbeKeysUnchecked(&r->epochs, r->table, r->opt.seed, n, cfs, keys, maybe, indexed);
  bool any_no = false;
  for (size_t i = 0; i < n && !any_no; ++i) any_no = !maybe[i];
  if (any_no && !r->IndexTrusted(trust)) {
    r->epochs.Bump(kUnverifiedReads, *indexed);
    for (size_t i = 0; i < n; ++i) maybe[i] = true;
    *indexed = 0;
  }
}

}  // namespace

#if DLCBF_ROCKSDB_DB_READS_FINAL
void LiveKeyDB::MultiGet(const ReadOptions& options, const size_t num_keys,
                         ColumnFamilyHandle** column_families, const Slice* keys,
                         PinnableSlice* values, std::string* timestamps, rocksdb::Status* statuses,
                         const bool sorted_input) {
  if (timestamps == nullptr) {
    MultiGetIndexed(options, num_keys, column_families, keys, values, statuses, sorted_input);
    return;
  }
  rep_->epochs.Bump(kBypassed, num_keys);
  db_->MultiGet(options, num_keys, column_families, keys, values, timestamps, statuses,
                sorted_input);
}
#else
std::vector<rocksdb::Status> LiveKeyDB::MultiGet(const ReadOptions& options,
                                        const std::vector<ColumnFamilyHandle*>& column_family,
                                        const std::vector<Slice>& keys,
                                        std::vector<std::string>* values) {
  Rep& r = *rep_;
  const size_t n = keys.size();
  if (Rep::BypassRead(options) || column_family.size() != n || n == 0) {
    r.epochs.Bump(kBypassed, n);
    return db_->MultiGet(options, column_family, keys, values);
  }
  std::unique_ptr<bool[]> maybe(new bool[n]);
  uint64_t indexed = 0;
  ProbeKeys(&r, n, column_family.data(), keys.data(), maybe.get(),
            &indexed);
  std::vector<ColumnFamilyHandle*> sub_cf;
  std::vector<Slice> sub_keys;
  std::vector<size_t> where;
  for (size_t i = 0; i < n; ++i) {
    if (!maybe[i]) continue;
    sub_cf.push_back(column_family[i]);
    sub_keys.push_back(keys[i]);
    where.push_back(i);
  }
  r.epochs.Bump(kLookups, indexed);
  r.epochs.Bump(kShortCircuited, n - where.size());
  r.epochs.Bump(kBypassed, n - indexed);
  std::vector<rocksdb::Status> out(n, rocksdb::Status::NotFound());
  values->assign(n, std::string());
  if (where.empty()) return out;
  std::vector<std::string> sub_vals;
  std::vector<rocksdb::Status> sub = db_->MultiGet(options, sub_cf, sub_keys, &sub_vals);
  for (size_t j = 0; j < where.size(); ++j) {
    out[where[j]] = sub[j];
    if (j < sub_vals.size()) (*values)[where[j]] = std::move(sub_vals[j]);
  }
  return out;
}

std::vector<rocksdb::Status> LiveKeyDB::MultiGet(const ReadOptions& options,
                                        const std::vector<ColumnFamilyHandle*>& column_family,
                                        const std::vector<Slice>& keys,
                                        std::vector<std::string>* values,
                                        std::vector<std::string>* timestamps) {
  rep_->epochs.Bump(kBypassed, keys.size());
  return db_->MultiGet(options, column_family, keys, values, timestamps);
}

void LiveKeyDB::MultiGet(const ReadOptions& options, const size_t num_keys,
                         ColumnFamilyHandle** column_families, const Slice* keys,
                         PinnableSlice* values, rocksdb::Status* statuses, const bool sorted_input) {
  MultiGetIndexed(options, num_keys, column_families, keys, values, statuses, sorted_input);
}

void LiveKeyDB::MultiGet(const ReadOptions& options, ColumnFamilyHandle* column_family,
                         const size_t num_keys, const Slice* keys, PinnableSlice* values,
                         rocksdb::Status* statuses, const bool sorted_input) {
  std::vector<ColumnFamilyHandle*> cfs(num_keys, column_family);
  MultiGet(options, num_keys, cfs.data(), keys, values, statuses, sorted_input);
}
#endif  // DLCBF_ROCKSDB_DB_READS_FINAL

void LiveKeyDB::MultiGetIndexed(const ReadOptions& options, const size_t num_keys,
                                ColumnFamilyHandle** column_families, const Slice* keys,
                                PinnableSlice* values, rocksdb::Status* statuses, const bool sorted_input) {
  Rep& r = *rep_;
  if (Rep::BypassRead(options) || num_keys == 0) {
    r.epochs.Bump(kBypassed, num_keys);
    db_->MultiGet(options, num_keys, column_families, keys, values, statuses, sorted_input);
    return;
  }
  std::unique_ptr<bool[]> maybe(new bool[num_keys]);
  uint64_t indexed = 0;
  ProbeKeys(&r, num_keys, column_families, keys, maybe.get(),
            &indexed);
  std::vector<size_t> where;
  for (size_t i = 0; i < num_keys; ++i) {
    if (maybe[i]) where.push_back(i);
  }
  r.epochs.Bump(kLookups, indexed);
  r.epochs.Bump(kShortCircuited, num_keys - where.size());
  r.epochs.Bump(kBypassed, num_keys - indexed);
  if (where.size() == num_keys) {
    db_->MultiGet(options, num_keys, column_families, keys, values, statuses, sorted_input);
    return;
  }
  for (size_t i = 0; i < num_keys; ++i) {
    if (!maybe[i]) {
      values[i].Reset();
      statuses[i] = rocksdb::Status::NotFound();
    }
  }
  if (where.empty()) return;
  std::vector<ColumnFamilyHandle*> sub_cf;
  std::vector<Slice> sub_keys;
  for (size_t i : where) {
    sub_cf.push_back(column_families[i]);
    sub_keys.push_back(keys[i]);
  }
  std::vector<PinnableSlice> sub_vals(where.size());
  std::vector<rocksdb::Status> sub_st(where.size());
  db_->MultiGet(options, where.size(), sub_cf.data(), sub_keys.data(), sub_vals.data(),
                sub_st.data(), sorted_input);
  for (size_t j = 0; j < where.size(); ++j) {
    statuses[where[j]] = sub_st[j];
    values[where[j]].Reset();
    if (sub_st[j].ok()) values[where[j]].PinSelf(sub_vals[j]);
  }
}

bool LiveKeyDB::KeyMayExist(const ReadOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, std::string* value, bool* value_found) {
  return KeyMayExist(options, column_family, key, value, nullptr, value_found);
}

bool LiveKeyDB::KeyMayExist(const ReadOptions& options, ColumnFamilyHandle* column_family,
                            const Slice& key, std::string* value, std::string* timestamp,
                            bool* value_found) {
  // A read with a timestamp is one the index cannot serve: MayBeLive
  // counts it as bypassed (a null handle always bypasses).
  if (!rep_->MayBeLive(options, timestamp == nullptr ? column_family : nullptr, key)) {
    if (value_found != nullptr) *value_found = false;
    return false;
  }
  return db_->KeyMayExist(options, column_family, key, value, timestamp, value_found);
}

}  // namespace dlcbf
