// LiveKeyDB::Write: a WriteBatch applied with an in-order overlay, so only
// each key's state before and after the batch decides its index update.
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlcbf {

// ---------------------------------------------------------------------------
// WriteBatch
// ---------------------------------------------------------------------------
namespace {

enum class OpKind : uint8_t { kPut, kMerge, kDelete, kSingleDelete, kRange };

struct BatchOp {
  OpKind kind;
  uint32_t cf;
  Slice key;
  Slice end;
};

class BatchCollector : public WriteBatch::Handler {
 public:
  std::vector<BatchOp>& ops;
  rocksdb::Status PutCF(uint32_t cf, const Slice& key, const Slice&) override { return Add(OpKind::kPut, cf, key); }
  rocksdb::Status PutEntityCF(uint32_t cf, const Slice& key, const Slice&) override {
    return Add(OpKind::kPut, cf, key);
  }
  rocksdb::Status PutBlobIndexCF(uint32_t cf, const Slice& key, const Slice&) override {
    return Add(OpKind::kPut, cf, key);
  }
#if DLCBF_ROCKSDB_AT_LEAST(9, 1)
  // A Put with a write time (tiered storage, RocksDB >= 9.1): a Put to the
  // index.
  rocksdb::Status TimedPutCF(uint32_t cf, const Slice& key, const Slice&, uint64_t) override {
    return Add(OpKind::kPut, cf, key);
  }
#endif
  rocksdb::Status MergeCF(uint32_t cf, const Slice& key, const Slice&) override {
    return Add(OpKind::kMerge, cf, key);
  }
  rocksdb::Status DeleteCF(uint32_t cf, const Slice& key) override { return Add(OpKind::kDelete, cf, key); }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const Slice& key) override {
    return Add(OpKind::kSingleDelete, cf, key);
  }
  rocksdb::Status DeleteRangeCF(uint32_t cf, const Slice& b, const Slice& e) override {
    ops.push_back(BatchOp{OpKind::kRange, cf, b, e});
    return rocksdb::Status::OK();
  }
  // A transaction's prepared batch carries its prepare markers
  // (transactions.cc); a batch handed to Write must not.
  BatchCollector(std::vector<BatchOp>* out, bool prepare_markers) : ops(*out), prepare_markers_(prepare_markers) {}
  void LogData(const Slice&) override {}
  rocksdb::Status MarkBeginPrepare(bool) override { return prepare_markers_ ? rocksdb::Status::OK() : Unsupported(); }
  rocksdb::Status MarkEndPrepare(const Slice&) override {
    return prepare_markers_ ? rocksdb::Status::OK() : Unsupported();
  }
  rocksdb::Status MarkNoop(bool) override { return rocksdb::Status::OK(); }
  rocksdb::Status MarkRollback(const Slice&) override { return Unsupported(); }
  rocksdb::Status MarkCommit(const Slice&) override { return Unsupported(); }
  rocksdb::Status MarkCommitWithTimestamp(const Slice&, const Slice&) override { return Unsupported(); }

 private:
  rocksdb::Status Add(OpKind k, uint32_t cf, const Slice& key) {
    ops.push_back(BatchOp{k, cf, key, Slice()});
    return rocksdb::Status::OK();
  }
  const bool prepare_markers_;
  static rocksdb::Status Unsupported() {
    return rocksdb::Status::NotSupported("LiveKeyDB: write batches with transaction markers");
  }
};

struct Overlay {
  CfState* cf;
  std::string key;
  uint64_t hash;
  bool l0_known = false;
  bool l0 = false;    // live before the batch
  bool cur = false;   // live after the ops seen so far
  bool keep = false;  // made dead by an untrusted SingleDelete
  bool put = false;   // the batch Put or Merged the key at some point
  uint32_t si = 0;    // its stripe
  Known known = Known::kUnknown;  // what its pending check knows (KnownKey)
};

// The vectors of one IndexedWrite, kept per thread so that a small batch
// (a transaction's commit, a single Put) allocates none of them. A nested
// call (none today) would get fresh ones.
struct WriteScratch {
  bool busy = false;
  std::vector<BatchOp> ops;
  std::vector<std::pair<uint32_t, CfState*>> fams;
  std::vector<uint64_t> hashes;
  std::vector<uint32_t> taken;
  std::vector<SharedSnapshot*> deferred;
  std::vector<size_t> need_read, inserted;
};
class ScratchScope {
 public:
  ScratchScope() {
    static thread_local WriteScratch tls;
    s_ = tls.busy ? &own_ : &tls;
    s_->busy = true;
    s_->ops.clear();
    s_->fams.clear();
    s_->hashes.clear();
    s_->taken.clear();
    s_->deferred.clear();
    s_->need_read.clear();
    s_->inserted.clear();
  }
  ~ScratchScope() { s_->busy = false; }
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;
  WriteScratch* operator->() { return s_; }

 private:
  WriteScratch own_;
  WriteScratch* s_;
};

}  // namespace

rocksdb::Status LiveKeyDB::Rep::WriteBatchImpl(const WriteOptions& wo, WriteBatch* batch) {
  auto write = [&] { return LedgerWrite(wo, batch); };
  const WriteBatch* const batches[1] = {batch};
  return IndexedWrite(batches, 1, /*prepare_markers=*/false, WriteFn(write));
}

namespace {
// A read of the key found it live and no LiveKeyDB write released its
// stripe since (rep.h, LiveHint). The stripe is held.
template <class Stripes>
bool HintMatches(const std::vector<LiveKeyDB::Rep::LiveHint>* hints, const Stripes& stripes, uint32_t cf,
                 uint64_t hash, uint32_t si, const std::string& key) {
  if (hints == nullptr) return false;
  for (const auto& h : *hints) {
    if (h.hash == hash && h.cf == cf && h.si == si && h.key == key) {
#ifdef DLCBF_TESTING
      if (h.stamp == ~uint64_t{0} &&
          internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kStaleLiveHint) {
        return true;
      }
#endif
      return stripes.ReleasedAt(si) == h.stamp && stripes.AllEpochBeforeRead() == h.epoch;
    }
  }
  return false;
}
}  // namespace

// The batches are read before `write` runs and never after it (a
// transaction's commit clears its batch): the overlay keeps its own copy
// of every key.
rocksdb::Status LiveKeyDB::Rep::IndexedWrite(const WriteBatch* const* batches, size_t num_batches,
                                             bool prepare_markers, WriteFn write, const std::vector<LiveHint>* hints) {
  WriterScope in_flight(this);
  ScratchScope sc;
  std::vector<BatchOp>& ops = sc->ops;
  BatchCollector col(&ops, prepare_markers);
  rocksdb::Status s;
  for (size_t b = 0; b < num_batches; ++b) {
    s = batches[b]->Iterate(&col);
    if (!s.ok()) return s;
  }

  // Indexed families of the batch (the table is read once; a batch names
  // few, so a list).
  std::vector<std::pair<uint32_t, CfState*>>& fams = sc->fams;
  auto fam = [&](uint32_t id) -> CfState* {
    for (const auto& f : fams) {
      if (f.first == id) return f.second;
    }
    return nullptr;
  };
  bool any = false, has_range = false;
  {
    ReadSection rs(&epochs);
    const CfTable* t = table.load();
    for (const BatchOp& op : ops) {
      bool seen = false;
      for (const auto& f : fams) seen = seen || f.first == op.cf;
      if (seen) continue;
      CfState* cf = t ? t->Find(op.cf) : nullptr;
      fams.emplace_back(op.cf, (cf != nullptr && cf->indexed) ? cf : nullptr);
    }
  }
  for (const BatchOp& op : ops) {
    if (fam(op.cf) == nullptr) continue;
    any = true;
    if (op.kind == OpKind::kRange) has_range = true;
  }
  if (!any) return write();

  // Each point key's hash, once.
  std::vector<uint64_t>& hashes = sc->hashes;
  hashes.assign(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::kRange && fam(ops[i].cf) != nullptr) hashes[i] = Hash(ops[i].key);
  }
  // Stripes: all of them for range deletions (the scan may meet any key).
  std::vector<uint32_t>& taken = sc->taken;
  if (has_range) {
    LockAll();
  } else {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (fam(ops[i].cf) != nullptr) taken.push_back(stripes.Of(ops[i].cf, hashes[i]));
    }
    std::sort(taken.begin(), taken.end());
    taken.erase(std::unique(taken.begin(), taken.end()), taken.end());
    for (uint32_t i : taken) stripes.Lock(i);
  }
  struct Unlocker {
    Rep* r;
    bool all;
    const std::vector<uint32_t>* t;
    ~Unlocker() {
      if (all) {
        r->UnlockAll();
      } else {
        for (size_t i = t->size(); i-- > 0;) r->UnlockStripe((*t)[i]);
      }
    }
  } unlocker{this, has_range, &taken};

  // The overlay, in batch order. Small batches (most transactions) find a
  // key by a scan; larger ones through a map.
  constexpr size_t kScanOverlay = 16;
  std::vector<Overlay> ov;
  std::unordered_map<std::string, size_t> pos;
  auto pos_key = [](uint32_t id, const Slice& key) {
    std::string k(reinterpret_cast<const char*>(&id), sizeof(id));
    k.append(key.data(), key.size());
    return k;
  };
  auto touch = [&](CfState* cf, const Slice& key, uint64_t hash) -> Overlay& {
    if (ov.size() < kScanOverlay) {
      for (Overlay& e : ov) {
        if (e.hash == hash && e.cf == cf && Slice(e.key) == key) return e;
      }
    } else {
      if (pos.empty()) {
        for (size_t i = 0; i < ov.size(); ++i) pos.emplace(pos_key(ov[i].cf->id, ov[i].key), i);
      }
      auto it = pos.find(pos_key(cf->id, key));
      if (it != pos.end()) return ov[it->second];
      pos.emplace(pos_key(cf->id, key), ov.size());
    }
    ov.push_back(Overlay{cf, key.ToString(), hash});
    ov.back().si = stripes.Of(cf->id, hash);
    return ov.back();
  };
  // A range deletion changes keys it does not name: what was known of the
  // family's keys is void (every stripe is held).
  if (has_range) {
    for (const auto& f : fams) {
      if (f.second != nullptr) stripes.ForgetFamily(f.second->id);
    }
  }
  uint64_t scan_budget = opt.delete_range_scan_limit;
  for (size_t op_i = 0; op_i < ops.size(); ++op_i) {
    const BatchOp& op = ops[op_i];
    CfState* cf = fam(op.cf);
    if (cf == nullptr || cf->dropped) continue;
    switch (op.kind) {
      case OpKind::kPut:
      case OpKind::kMerge: {
        Overlay& e = touch(cf, op.key, hashes[op_i]);
        e.cur = true;
        e.keep = false;
        e.put = true;
        break;
      }
      case OpKind::kDelete: {
        Overlay& e = touch(cf, op.key, hashes[op_i]);
        e.cur = false;
        e.keep = false;
        break;
      }
      case OpKind::kSingleDelete: {
        Overlay& e = touch(cf, op.key, hashes[op_i]);
        if (opt.trust_single_delete) {
          e.cur = false;
          e.keep = false;
        } else if (e.put) {
          // Untrusted, after a Put of this batch: RocksDB may resurrect an
          // older value ([Put k, Put k, SingleDelete k] brings the first
          // back at flush), so the key keeps an index entry, as the
          // single-key path's Put then SingleDelete does.
          e.cur = true;
          e.keep = false;
        } else {
          e.cur = false;
          e.keep = true;
        }
        break;
      }
      case OpKind::kRange: {
        const rocksdb::Comparator* cmp = cf->cmp;
        for (Overlay& e : ov) {
          if (e.cf == cf && cmp->Compare(e.key, op.key) >= 0 && cmp->Compare(e.key, op.end) < 0) {
            e.cur = false;
            e.keep = false;
          }
        }
        if (cmp->Compare(op.key, op.end) >= 0) break;
        // Live keys of the range before the batch: their count must go.
        if (scan_budget == 0) {
          epochs.Bump(kRangeLimitHits);
          break;
        }
        ReadOptions ro;
        ro.fill_cache = false;
        ro.total_order_seek = true;
        Slice upper = op.end;
        ro.iterate_upper_bound = &upper;
        std::unique_ptr<Iterator> it(base->NewIterator(ro, cf->handle));
        for (it->Seek(op.key); it->Valid(); it->Next()) {
          if (scan_budget == 0) {
            epochs.Bump(kRangeLimitHits);
            break;
          }
          --scan_budget;
          Overlay& e = touch(cf, it->key(), Hash(it->key()));
          if (!e.l0_known) {
            e.l0_known = true;
            e.l0 = true;  // visible before the batch
          }
          e.cur = false;
          e.keep = false;
        }
        if (!it->status().ok()) return it->status();  // nothing written yet
        break;
      }
    }
  }

  // State before the batch for the keys the index holds. Where a deferred
  // check can be queued (rep.h, "Writes without a read"), it decides later
  // and the batch acts as if the key were not live: a key live after the
  // batch gets a blind copy, a key the batch deletes keeps its copy until
  // its check. The others are read in one MultiGet.
  std::vector<SharedSnapshot*>& deferred = sc->deferred;
  deferred.assign(ov.size(), nullptr);
  auto release_deferred = [&] {
    for (SharedSnapshot*& d : deferred) {
      if (d != nullptr) ReleaseSnapshotRef(d);
      d = nullptr;
    }
  };
  std::vector<size_t>& need_read = sc->need_read;
  for (size_t i = 0; i < ov.size(); ++i) {
    Overlay& e = ov[i];
    epochs.Bump(kWriteKeys);
    if (e.l0_known) continue;
    e.known = stripes.State(e.si, e.cf->id, e.hash, e.key);
    if (e.known != Known::kUnknown) {  // a check is pending: no read, no check
      epochs.Bump(kKnownWrites);
      e.l0_known = true;
      e.l0 = e.known == Known::kLive;
      continue;
    }
    if (!WriterContains(e.cf, e.cf->active.load(), e.hash)) {
      e.l0_known = true;
      e.l0 = false;
    } else if (HintMatches(hints, stripes, e.cf->id, e.hash, e.si, e.key)) {  // live, its copy held (LiveHint)
      epochs.Bump(kKnownWrites);
      e.l0_known = true;
      e.l0 = true;
    } else if (!e.cur && e.keep) {
      e.l0_known = true;  // a kept entry never changes the index:
      e.l0 = false;       // its state before does not matter
    } else if ((deferred[i] = CheckSnapshot(stripes.Of(e.cf->id, e.hash))) != nullptr) {
      e.l0_known = true;
      e.l0 = false;
    } else {
      need_read.push_back(i);
    }
  }
  if (!need_read.empty()) {
    std::vector<ColumnFamilyHandle*> hs;
    std::vector<Slice> ks;
    for (size_t i : need_read) {
      hs.push_back(ov[i].cf->handle);
      ks.push_back(ov[i].key);
    }
    std::vector<PinnableSlice> vals(ks.size());
    std::vector<rocksdb::Status> sts(ks.size());
    base->MultiGet(ReadOptions(), ks.size(), hs.data(), ks.data(), vals.data(), sts.data());
    epochs.Bump(kLivenessReads, ks.size());
    for (size_t j = 0; j < need_read.size(); ++j) {
      Overlay& e = ov[need_read[j]];
      e.l0_known = true;
      e.l0 = sts[j].ok();  // unknown counts as not live: insert, never erase
    }
  }

  // Insert the keys that become live, write, erase the keys that stopped.
  std::vector<size_t>& inserted = sc->inserted;
  for (size_t i = 0; i < ov.size(); ++i) {
    Overlay& e = ov[i];
    if (!e.cur || e.l0) continue;
    s = IndexInsert(e.cf, e.cf->active.load(), e.hash, RegionsOf(e.cf, e.key));
    if (!s.ok()) {
      for (size_t j : inserted) IndexErase(ov[j].cf, ov[j].cf->active.load(), ov[j].hash, RegionsOf(ov[j].cf, ov[j].key));
      release_deferred();
      return s;
    }
    inserted.push_back(i);
  }
  s = write();
  if (s.ok()) {
    for (size_t i = 0; i < ov.size(); ++i) {
      Overlay& e = ov[i];
      if (deferred[i] != nullptr) {
        QueueCheck(e.cf, e.hash, deferred[i], e.key, e.si, e.cur ? Known::kLive : Known::kDead);
        deferred[i] = nullptr;
      } else if (!e.cur && e.l0 && !e.keep) {
        IndexErase(e.cf, e.cf->active.load(), e.hash, RegionsOf(e.cf, e.key));
        if (has_range) epochs.Bump(kRangeErased);
      }
      if (e.known != Known::kUnknown) {
        // A kept entry (untrusted SingleDelete) voids what was known.
        stripes.Set(e.si, e.cf->id, e.hash, e.key,
                    (e.cur || !e.keep) ? (e.cur ? Known::kLive : Known::kDead) : Known::kUnknown);
      }
    }
  } else {
    // As in Upsert: a key not live now gets its copy back (a failed write
    // cannot have made it not live); a key live (or unknown) now with a
    // blind copy keeps its check; a key the batch would have deleted keeps
    // its copy (the write may not have happened) and needs no check.
    for (size_t i : inserted) {
      Overlay& e = ov[i];
      if (ReadLiveness(e.cf->handle, e.key) == Liveness::kNotLive) {
        IndexErase(e.cf, e.cf->active.load(), e.hash, RegionsOf(e.cf, e.key));
        epochs.Bump(kUndone);
        if (deferred[i] != nullptr) ReleaseSnapshotRef(deferred[i]);
        deferred[i] = nullptr;
      } else if (deferred[i] != nullptr) {
        QueueCheck(e.cf, e.hash, deferred[i], e.key, e.si, Known::kUnknown);
        deferred[i] = nullptr;
      }
    }
    release_deferred();
  }
  return s;
}


}  // namespace dlcbf
