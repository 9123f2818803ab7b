// LiveKeyDB's iterators: Seeks answered or moved from the live-region
// counts (live_region_counts.h) without touching the LSM, every other call
// RocksDB's own iterator.
//
//   - A Seek or SeekForPrev with prefix_same_as_start into a prefix that
//     holds no live key (live_prefix_counts): the iterator is invalid.
//   - A Seek whose target starts a run of range regions with no live key
//     (live_range_lengths): moved to the first region that may hold one
//     (Rep::PlanSeek: at each step, the coarsest length whose region of the
//     cursor is dead moves the cursor to that region's successor). RocksDB
//     then seeks there: the same first key, since no key in between is
//     live. Within prefix_same_as_start the cursor stays in the target's
//     prefix (RocksDB compares a found key's prefix with the Seek's).
//
// A region is dead for an iterator iff (Rep::PlanSeek):
//   - its family's counts exist, were built at or before the iterator's
//     sequence number S (LiveRegionCounts::built_at), and belong to the
//     index that was active when the iterator was made (CfState::serial,
//     read before S and before RocksDB's iterator: a swap since means the
//     new counts may not know what the iterator sees, e.g. files dropped
//     behind it);
//   - the iterator reads as the counts group: with prefix_same_as_start,
//     its SuperVersion runs the prefix extractor the counts group by
//     (SetOptions may install another: a shorter prefix would return keys
//     the counts never grouped with the target); in total order, it has
//     total_order_seek or runs no extractor (else RocksDB's prefix mode
//     may skip keys of other prefixes differently from another target);
//   - the slot's count is 0 and its last erase was at or before S;
//   - the index is trusted (the closed world) after the probes.
// Anything else: RocksDB's Seek of the target.
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "rocksdb/iterator.h"
#include "rocksdb/snapshot.h"

namespace dlcbf {

namespace {
// The most region moves of one Seek (each probes at most one region per
// range length); past them, RocksDB seeks from where the cursor is.
constexpr int kMaxSeekMoves = 256;
// The most consecutive moves past regions never erased from.
constexpr int kMaxEmptyMoves = 8;
}  // namespace

int LiveKeyDB::Rep::ExtractorIsOurs(CfState* cf, rocksdb::Iterator* it) {
  std::string v;
  if (!it->GetProperty("rocksdb.iterator.super-version-number", &v).ok() || v.empty()) return -1;
  const uint64_t sv = std::strtoull(v.c_str(), nullptr, 10);
  if (cf->prefix_checked_sv.load(std::memory_order_acquire) == sv + 1) return 1;
  // The options of the SuperVersion the iterator runs: read between two
  // equal SuperVersion numbers (SetOptions installs a new SuperVersion).
  uint64_t before = 0, after = 0;
  if (!base->GetIntProperty(cf->handle, "rocksdb.current-super-version-number", &before)) return -1;
  if (before != sv) return 0;  // (an older SuperVersion, not checked when current: not known)
  const rocksdb::Options o = base->GetOptions(cf->handle);
  if (!base->GetIntProperty(cf->handle, "rocksdb.current-super-version-number", &after)) return -1;
  if (after != before) return 0;
  const bool same = o.prefix_extractor == cf->prefix ||
                    (o.prefix_extractor != nullptr && cf->prefix != nullptr &&
                     o.prefix_extractor->GetId() == cf->prefix->GetId());
  if (same) cf->prefix_checked_sv.store(sv + 1, std::memory_order_release);
  return same ? 1 : -1;
}

LiveKeyDB::Rep::SeekPlan LiveKeyDB::Rep::PlanSeek(CfState* cf, const Slice& target, bool forward, SeekView* v,
                                                  rocksdb::Iterator* it, std::string* to) {
  const bool prefix = v->confined && cf->prefix->InDomain(target);
  const bool ranges = forward && (v->free || prefix) && cf->counts_ranges;
  if (!prefix && !ranges) return SeekPlan::kAsIs;
  bool foreign_extractor = v->extractor_ok < 0;  // (known from an earlier Seek)
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kPrefixIgnoresExtractor) foreign_extractor = false;
#endif
  if (foreign_extractor) return SeekPlan::kAsIs;
  uint64_t serial = v->serial;
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kPrefixIgnoresSerial) {
    serial = cf->serial.load(std::memory_order_seq_cst);
  }
#endif
  const uint64_t trust = TrustEpoch();  // (before the probes: IndexTrusted)
  SeekPlan plan = SeekPlan::kAsIs;
  bool dead_prefix = false;
  {
    ReadSection rs(&epochs);
    const LiveKeyIndex* idx = ServingIndex(cf);
    // (The index first, then the serial: a swap bumps the serial before it
    // publishes the new index.)
    const LiveRegionCounts* rc = nullptr;
    if (idx != nullptr && cf->serial.load(std::memory_order_seq_cst) == serial) rc = idx->region_counts();
    if (rc == nullptr || rc->built_at() > v->seq) return SeekPlan::kAsIs;
    uint64_t at = v->seq;
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kPrefixIgnoresErasedAt) at = ~uint64_t{0};
#endif
    if (prefix && !rc->MayHoldLive(PrefixRegion(cf, target), at)) {
      plan = SeekPlan::kDead;
      dead_prefix = true;
    } else if (ranges) {
      // The cursor: every key in [target, cursor) is dead at v->seq. (No
      // allocation unless a region is dead: a Seek into live keys probes
      // one region per length.)
      Slice cursor = target;
      std::string c, q;
      int empty_moves = 0;  // consecutive moves past regions never erased from
      for (int moves = 0; moves < kMaxSeekMoves && plan == SeekPlan::kAsIs;) {
        bool moved = false;
        for (uint32_t L : opt.live_range_lengths) {  // coarsest first
          bool erased = false;
          if (!rc->Dead(RangeRegion(cursor, L), at, &erased)) continue;  // a finer region may be dead
          // Regions never written (a zero-padded target below the first
          // key, lengths finer than the keys vary) hold no tombstones: a
          // run of them costs probes and saves nothing.
          empty_moves = erased ? 0 : empty_moves + 1;
          if (empty_moves > kMaxEmptyMoves) break;
          q.assign(L, '\0');
          live_key::RangeRegionBytes(cursor, L, &q[0]);
          if (!live_key::RegionSuccessor(&q)) {
            plan = SeekPlan::kDead;  // every key past the cursor is dead
          } else if (prefix && (!cf->prefix->InDomain(q) || cf->prefix->Transform(q) != cf->prefix->Transform(target))) {
            moves = kMaxSeekMoves;  // out of the target's prefix: RocksDB seeks from the cursor
          } else {
            c.swap(q);
            cursor = c;
            moved = true;
            ++moves;
          }
          break;
        }
        if (!moved) break;
      }
      if (plan == SeekPlan::kAsIs && !c.empty()) {
#ifdef DLCBF_TESTING
        // The negative control: one finest region further than the counts
        // allow (it may hold live keys).
        if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kSeekSkipsALiveRegion) {
          const uint32_t L = opt.live_range_lengths.back();
          q.assign(L, '\0');
          live_key::RangeRegionBytes(c, L, &q[0]);
          if (live_key::RegionSuccessor(&q)) c.swap(q);
        }
#endif
        to->swap(c);
        plan = SeekPlan::kMoved;
      }
    }
  }
  // The iterator's SuperVersion, asked once per iterator and only when a
  // region is dead (a Seek into live keys pays nothing for it).
  if (plan != SeekPlan::kAsIs && v->check_extractor) {
    if (v->extractor_ok == 0) v->extractor_ok = ExtractorIsOurs(cf, it);
    bool extractor_ok = v->extractor_ok > 0;
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kPrefixIgnoresExtractor) extractor_ok = true;
#endif
    if (!extractor_ok) plan = SeekPlan::kAsIs;
  }
  if (plan != SeekPlan::kAsIs && !IndexTrusted(trust)) plan = SeekPlan::kAsIs;
  if (plan != SeekPlan::kAsIs) epochs.Bump(dead_prefix ? kDeadPrefixSeeks : kMovedSeeks);
  return plan;
}

namespace {

// RocksDB's iterator, with Seek and SeekForPrev planned from the counts
// (Rep::PlanSeek). Every other call is forwarded, for each release's
// surface (columns(), Refresh(const Snapshot*) since 8.x, PrepareValue()
// since 9.x, Prepare(MultiScanArgs) since 10.x).
class LiveIterator : public rocksdb::Iterator {
 public:
  LiveIterator(LiveKeyDB::Rep* r, CfState* cf, rocksdb::Iterator* base, const LiveKeyDB::Rep::SeekView& v)
      : r_(r), cf_(cf), base_(base), v_(v) {}

  bool Valid() const override { return !dead_ && base_->Valid(); }
  void SeekToFirst() override {
    dead_ = false;
    base_->SeekToFirst();
  }
  void SeekToLast() override {
    dead_ = false;
    base_->SeekToLast();
  }
  void Seek(const rocksdb::Slice& target) override { Plan(target, true); }
  void SeekForPrev(const rocksdb::Slice& target) override { Plan(target, false); }
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
  // A failed refresh keeps reading at the old view: so does the plan.
  rocksdb::Status Refresh() override {
    const LiveKeyDB::Rep::SeekView old = v_;
    Retake(nullptr);
    rocksdb::Status s = base_->Refresh();
    if (!s.ok()) v_ = old;
    return s;
  }
#if ROCKSDB_MAJOR >= 8
  rocksdb::Status Refresh(const rocksdb::Snapshot* snapshot) override {
    const LiveKeyDB::Rep::SeekView old = v_;
    Retake(snapshot);
    rocksdb::Status s = base_->Refresh(snapshot);
    if (!s.ok()) v_ = old;
    return s;
  }
#endif
#if ROCKSDB_MAJOR >= 9
  bool PrepareValue() override { return dead_ ? false : base_->PrepareValue(); }
#endif
#if ROCKSDB_MAJOR >= 10
  // (A prepared iterator's Seeks must be the prepared ranges' starts, in
  // order: RocksDB's own from here on.)
  void Prepare(const rocksdb::MultiScanArgs& scan_opts) override {
    prepared_ = true;
    base_->Prepare(scan_opts);
  }
#endif

 private:
  void Plan(const rocksdb::Slice& target, bool forward) {
    std::string to;
    const LiveKeyDB::Rep::SeekPlan p =
        prepared_ ? LiveKeyDB::Rep::SeekPlan::kAsIs : r_->PlanSeek(cf_, target, forward, &v_, base_.get(), &to);
    dead_ = p == LiveKeyDB::Rep::SeekPlan::kDead;
    if (dead_) return;
    const rocksdb::Slice at = p == LiveKeyDB::Rep::SeekPlan::kMoved ? rocksdb::Slice(to) : target;
    if (forward) {
      base_->Seek(at);
    } else {
      base_->SeekForPrev(at);
    }
  }
  void Retake(const rocksdb::Snapshot* snapshot) {
    dead_ = false;
    v_.extractor_ok = 0;
    v_.serial = cf_->serial.load(std::memory_order_seq_cst);
    v_.seq = snapshot != nullptr ? snapshot->GetSequenceNumber() : r_->base->GetLatestSequenceNumber();
  }

  LiveKeyDB::Rep* r_;
  CfState* cf_;
  std::unique_ptr<rocksdb::Iterator> base_;
  LiveKeyDB::Rep::SeekView v_;
  bool dead_ = false;
  bool prepared_ = false;
};

}  // namespace

// The SeekView of an iterator of family `column_family` read with
// `options`, its serial and sequence number not yet taken; nullptr when its
// Seeks are RocksDB's own (the counts do not apply).
CfState* LiveKeyDB::Rep::IteratorView(const ReadOptions& options, ColumnFamilyHandle* column_family,
                                      SeekView* v) {
  // (table_filter may hide a tombstone and show an older version the
  // counts call dead; an auto-refreshing iterator changes SuperVersion, and
  // so maybe extractor, inside its Seek; total_order_seek with
  // prefix_same_as_start still stops at the moved cursor's prefix.)
  if (!CountsRegions() || options.auto_prefix_mode || options.tailing ||
      options.read_tier != rocksdb::kReadAllTier || options.timestamp != nullptr ||
      options.iter_start_ts != nullptr || options.ignore_range_deletions || options.table_filter ||
      (options.total_order_seek && options.prefix_same_as_start)) {
    return nullptr;
  }
#if ROCKSDB_MAJOR >= 10
  if (options.auto_refresh_iterator_with_snapshot) return nullptr;
#endif
  CfState* cf = nullptr;
  {
    ReadSection rs(&epochs);  // (a CfState lives until Close)
    const CfTable* t = table.load();
    cf = t != nullptr ? t->Find(column_family->GetID()) : nullptr;
  }
  if (cf == nullptr || !cf->indexed || cf->dropped || !cf->counts_regions()) return nullptr;
  v->confined = !options.total_order_seek && options.prefix_same_as_start && cf->prefix != nullptr;
  v->free = cf->counts_ranges && (options.total_order_seek || cf->prefix == nullptr);
  v->check_extractor = !options.total_order_seek;
  return v->confined || v->free ? cf : nullptr;
}

rocksdb::Iterator* LiveKeyDB::NewIterator(const ReadOptions& options, ColumnFamilyHandle* column_family) {
  if (column_family == nullptr) column_family = DefaultColumnFamily();
  Rep::SeekView v;
  CfState* cf = rep_->IteratorView(options, column_family, &v);
  if (cf == nullptr) return db_->NewIterator(options, column_family);
  // The serial, then the sequence number, then RocksDB's iterator (see the
  // file comment).
  v.serial = cf->serial.load(std::memory_order_seq_cst);
  v.seq = options.snapshot != nullptr ? options.snapshot->GetSequenceNumber() : rep_->base->GetLatestSequenceNumber();
  return new LiveIterator(rep_.get(), cf, db_->NewIterator(options, column_family), v);
}

// One consistent view of several families, as RocksDB's: each iterator
// wrapped as NewIterator's, every serial and then the sequence number read
// before RocksDB makes them (its implicit snapshot is at or past that
// number: a lower one only makes regions dead less often).
rocksdb::Status LiveKeyDB::NewIterators(const ReadOptions& options,
                                        const std::vector<ColumnFamilyHandle*>& column_families,
                                        std::vector<rocksdb::Iterator*>* iterators) {
  std::vector<Rep::SeekView> views(column_families.size());
  std::vector<CfState*> cfs(column_families.size());
  for (size_t i = 0; i < column_families.size(); ++i) {
    if (column_families[i] == nullptr) return db_->NewIterators(options, column_families, iterators);
    cfs[i] = rep_->IteratorView(options, column_families[i], &views[i]);
    if (cfs[i] != nullptr) views[i].serial = cfs[i]->serial.load(std::memory_order_seq_cst);
  }
  const uint64_t seq =
      options.snapshot != nullptr ? options.snapshot->GetSequenceNumber() : rep_->base->GetLatestSequenceNumber();
  rocksdb::Status s = db_->NewIterators(options, column_families, iterators);
  if (!s.ok()) return s;
  for (size_t i = 0; i < iterators->size() && i < cfs.size(); ++i) {
    if (cfs[i] == nullptr) continue;
    views[i].seq = seq;
    (*iterators)[i] = new LiveIterator(rep_.get(), cfs[i], (*iterators)[i], views[i]);
  }
  return s;
}

}  // namespace dlcbf
