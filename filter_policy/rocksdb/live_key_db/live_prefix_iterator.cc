// LiveKeyDB's iterators: a Seek into a prefix that holds no live key
// answered from the live-prefix counts (live_prefix_counts.h) without
// touching the LSM, every other call RocksDB's own iterator.
//
// A prefix is dead for an iterator iff (Rep::PrefixDead):
//   - its family's counts exist, were built at or before the iterator's
//     sequence number S (LivePrefixCounts::built_at), and belong to the
//     index that was active when the iterator was made (CfState::serial,
//     read before S and before RocksDB's iterator: a swap since means the
//     new counts may not know what the iterator sees, e.g. files dropped
//     behind it);
//   - the iterator's SuperVersion runs the prefix extractor the counts
//     group by (SetOptions may install another: a shorter prefix would
//     return keys the counts never grouped with the target);
//   - the slot's count is 0 and its last erase was at or before S;
//   - the index is trusted (the closed world) at the Seek.
// Anything else: RocksDB's Seek.
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "rocksdb/iterator.h"
#include "rocksdb/snapshot.h"

namespace dlcbf {

bool LiveKeyDB::Rep::PrefixExtractorIsOurs(CfState* cf, rocksdb::Iterator* it) {
  std::string v;
  if (!it->GetProperty("rocksdb.iterator.super-version-number", &v).ok() || v.empty()) return false;
  const uint64_t sv = std::strtoull(v.c_str(), nullptr, 10);
  if (cf->prefix_checked_sv.load(std::memory_order_acquire) == sv + 1) return true;
  // The options of the SuperVersion the iterator runs: read between two
  // equal SuperVersion numbers (SetOptions installs a new SuperVersion).
  uint64_t before = 0, after = 0;
  if (!base->GetIntProperty(cf->handle, "rocksdb.current-super-version-number", &before) || before != sv) {
    return false;  // (an older SuperVersion: not known; RocksDB's Seek)
  }
  const rocksdb::Options o = base->GetOptions(cf->handle);
  if (!base->GetIntProperty(cf->handle, "rocksdb.current-super-version-number", &after) || after != before) {
    return false;
  }
  const bool same = o.prefix_extractor != nullptr && cf->prefix != nullptr &&
                    (o.prefix_extractor == cf->prefix || o.prefix_extractor->GetId() == cf->prefix->GetId());
  if (same) cf->prefix_checked_sv.store(sv + 1, std::memory_order_release);
  return same;
}

bool LiveKeyDB::Rep::PrefixDead(CfState* cf, uint64_t ph, uint64_t seq, uint64_t serial, rocksdb::Iterator* it,
                                int* extractor_ok) {
  if (ph == LivePrefixCounts::kNoPrefix) return false;
  if (*extractor_ok == 0) *extractor_ok = PrefixExtractorIsOurs(cf, it) ? 1 : -1;
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kPrefixIgnoresExtractor) *extractor_ok = 1;
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kPrefixIgnoresSerial) {
    serial = cf->serial.load(std::memory_order_seq_cst);
  }
#endif
  if (*extractor_ok < 0) return false;
  const uint64_t trust = TrustEpoch();  // (before the probe: IndexTrusted)
  bool dead = false;
  {
    ReadSection rs(&epochs);
    const LiveKeyIndex* idx = ServingIndex(cf);
    // (The index first, then the serial: a swap bumps the serial before it
    // publishes the new index.)
    if (idx != nullptr && cf->serial.load(std::memory_order_seq_cst) == serial) {
      const LivePrefixCounts* pc = idx->prefix_counts();
      uint64_t at = seq;
#ifdef DLCBF_TESTING
      if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kPrefixIgnoresErasedAt) at = ~uint64_t{0};
#endif
      dead = pc != nullptr && pc->built_at() <= seq && !pc->MayHoldLive(ph, at);
    }
  }
  if (dead && !IndexTrusted(trust)) dead = false;
  if (dead) epochs.Bump(kDeadPrefixSeeks);
  return dead;
}

namespace {

// RocksDB's iterator, with Seek and SeekForPrev into a dead prefix
// answered without it. Every other call is forwarded, for each release's
// surface (columns(), Refresh(const Snapshot*) since 8.x, PrepareValue()
// since 9.x, Prepare(MultiScanArgs) since 10.x).
class LivePrefixIterator : public rocksdb::Iterator {
 public:
  LivePrefixIterator(LiveKeyDB::Rep* r, CfState* cf, rocksdb::Iterator* base,
                     uint64_t seq, uint64_t serial)
      : r_(r), cf_(cf), base_(base), seq_(seq), serial_(serial) {}

  bool Valid() const override { return !dead_ && base_->Valid(); }
  void SeekToFirst() override {
    dead_ = false;
    base_->SeekToFirst();
  }
  void SeekToLast() override {
    dead_ = false;
    base_->SeekToLast();
  }
  void Seek(const rocksdb::Slice& target) override {
    dead_ = Dead(target);
    if (!dead_) base_->Seek(target);
  }
  void SeekForPrev(const rocksdb::Slice& target) override {
    dead_ = Dead(target);
    if (!dead_) base_->SeekForPrev(target);
  }
  // (On an invalid iterator, as RocksDB's: the caller's error; a dead one
  // stays invalid.)
  void Next() override {
    if (!dead_) base_->Next();
  }
  void Prev() override {
    if (!dead_) base_->Prev();
  }
  rocksdb::Slice key() const override { return base_->key(); }
  rocksdb::Slice value() const override { return base_->value(); }
  const rocksdb::WideColumns& columns() const override { return base_->columns(); }
  rocksdb::Slice timestamp() const override { return base_->timestamp(); }
  rocksdb::Status status() const override { return dead_ ? rocksdb::Status::OK() : base_->status(); }
  rocksdb::Status GetProperty(std::string name, std::string* prop) override {
    return base_->GetProperty(std::move(name), prop);
  }
  // The iterator reads the latest state from here on: the sequence
  // number, the serial and the SuperVersion check are taken again (before
  // RocksDB's refresh, as at creation).
  rocksdb::Status Refresh() override {
    Retake(nullptr);
    return base_->Refresh();
  }
#if ROCKSDB_MAJOR >= 8
  rocksdb::Status Refresh(const rocksdb::Snapshot* snapshot) override {
    Retake(snapshot);
    return base_->Refresh(snapshot);
  }
#endif
#if ROCKSDB_MAJOR >= 9
  bool PrepareValue() override { return dead_ ? false : base_->PrepareValue(); }
#endif
#if ROCKSDB_MAJOR >= 10
  void Prepare(const rocksdb::MultiScanArgs& scan_opts) override { base_->Prepare(scan_opts); }
#endif

 private:
  bool Dead(const rocksdb::Slice& target) {
    if (cf_->prefix == nullptr || !cf_->prefix->InDomain(target)) return false;
    return r_->PrefixDead(cf_, r_->PrefixOf(cf_, target), seq_, serial_, base_.get(), &extractor_ok_);
  }
  void Retake(const rocksdb::Snapshot* snapshot) {
    dead_ = false;
    extractor_ok_ = 0;
    serial_ = cf_->serial.load(std::memory_order_seq_cst);
    seq_ = snapshot != nullptr ? snapshot->GetSequenceNumber() : r_->base->GetLatestSequenceNumber();
  }

  LiveKeyDB::Rep* r_;
  CfState* cf_;
  std::unique_ptr<rocksdb::Iterator> base_;
  uint64_t seq_, serial_;
  bool dead_ = false;
  int extractor_ok_ = 0;
};

}  // namespace

rocksdb::Iterator* LiveKeyDB::NewIterator(const ReadOptions& options, ColumnFamilyHandle* column_family) {
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  CfState* cf = nullptr;
  if (rep_->opt.live_prefix_counts && options.prefix_same_as_start && !options.total_order_seek &&
      !options.auto_prefix_mode && !options.tailing && options.read_tier == rocksdb::kReadAllTier &&
      options.timestamp == nullptr && options.iter_start_ts == nullptr && !options.ignore_range_deletions) {
    ReadSection rs(&rep_->epochs);  // (a CfState lives until Close)
    const CfTable* t = rep_->table.load();
    cf = t != nullptr ? t->Find(column_family->GetID()) : nullptr;
  }
  if (cf == nullptr || !cf->indexed || cf->dropped || cf->prefix == nullptr) {
    return db_->NewIterator(options, column_family);
  }
  // The serial, then the sequence number, then RocksDB's iterator (see the
  // file comment).
  const uint64_t serial = cf->serial.load(std::memory_order_seq_cst);
  const uint64_t seq =
      options.snapshot != nullptr ? options.snapshot->GetSequenceNumber() : rep_->base->GetLatestSequenceNumber();
  return new LivePrefixIterator(rep_.get(), cf, db_->NewIterator(options, column_family), seq, serial);
}

}  // namespace dlcbf
