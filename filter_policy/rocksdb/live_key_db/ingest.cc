// LiveKeyDB ingestion: the ingested files' keys enter the index before the
// files enter the DB, for one-call ingestion (IngestExternalFile(s)) and
// for two-phase ingestion (PrepareFileIngestion + CommitFileIngestionHandles,
// RocksDB >= 11.5). One indexer serves both.
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "rocksdb/metadata.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "rocksdb/sst_file_reader.h"

namespace dlcbf {

// ---------------------------------------------------------------------------
// The indexer: with every stripe held, counts each key of an ingested file
// into its family's index unless the key is live already. A key the index
// may hold is read (MultiGet, 256 at a time); the others are certainly not
// live and are counted at once. `added` records what was counted, so a
// failed ingestion can take it back.
// ---------------------------------------------------------------------------
struct LiveKeyDB::Rep::IngestIndexer {
  struct Added {
    CfState* cf;
    std::string key;
    uint64_t hash;
  };
  Rep* r;
  std::vector<Added> added;

  // Counts the keys `next` yields (next(&key) returns false at the end).
  template <class Next>
  rocksdb::Status AddKeys(CfState* cf, Next&& next) {
    if (cf->dropped) return rocksdb::Status::OK();
    std::vector<std::string> pending;  // keys the index may hold: read them
    auto flush_pending = [&]() -> rocksdb::Status {
      if (pending.empty()) return rocksdb::Status::OK();
      std::vector<ColumnFamilyHandle*> hs(pending.size(), cf->handle);
      std::vector<Slice> ks(pending.begin(), pending.end());
      std::vector<PinnableSlice> vals(ks.size());
      std::vector<rocksdb::Status> sts(ks.size());
      r->base->MultiGet(ReadOptions(), ks.size(), hs.data(), ks.data(), vals.data(), sts.data());
      r->epochs.Bump(kLivenessReads, ks.size());
      for (size_t i = 0; i < ks.size(); ++i) {
        if (sts[i].ok()) continue;  // live already: counted
        const uint64_t h = r->Hash(ks[i]);
        rocksdb::Status is = r->IndexInsert(cf, cf->active.load(), h, r->RegionsOf(cf, ks[i]));
        if (!is.ok()) return is;
        added.push_back(Added{cf, std::move(pending[i]), h});
      }
      pending.clear();
      return rocksdb::Status::OK();
    };
    Slice key;
    rocksdb::Status s;
    while (s.ok() && next(&key)) {
      r->epochs.Bump(kIngestedKeys);
      const uint64_t h = r->Hash(key);
      if (r->WriterContains(cf, cf->active.load(), h)) {
        pending.push_back(key.ToString());
        if (pending.size() >= 256) s = flush_pending();
      } else {
        s = r->IndexInsert(cf, cf->active.load(), h, r->RegionsOf(cf, key));
        if (s.ok()) added.push_back(Added{cf, key.ToString(), h});
      }
    }
    if (s.ok()) s = flush_pending();
    return s;
  }

  // Before the ingestion happened: take every count back.
  void UndoAll() {
    for (const Added& a : added) r->IndexErase(a.cf, a.cf->active.load(), a.hash, r->RegionsOf(a.cf, a.key));
    added.clear();
  }
  // After a failed ingestion (which may still have taken effect): keys
  // that are not live give their count back; the others keep it.
  void UndoNotLive() {
    for (const Added& a : added) {
      if (r->ReadLiveness(a.cf->handle, a.key) == Liveness::kNotLive) {
        r->IndexErase(a.cf, a.cf->active.load(), a.hash, r->RegionsOf(a.cf, a.key));
        r->epochs.Bump(kUndone);
      }
    }
    added.clear();
  }
};

namespace {

// What identifies an external file once RocksDB ingested it: its family,
// entry count and, for a file of one entry, its key (SstFileReader: its
// properties and a seek, no scan).
struct ExternalFileId {
  std::string cf, first;  // first: the key of a one-entry file
  uint64_t entries = 0;
};
rocksdb::Status IdentifyFiles(DB* base, const std::vector<rocksdb::IngestExternalFileArg>& args,
                              std::vector<ExternalFileId>* out) {
  for (const auto& a : args) {
    if (a.column_family == nullptr) continue;
    const rocksdb::Options cf_opts = base->GetOptions(a.column_family);
    for (const std::string& file : a.external_files) {
      rocksdb::SstFileReader reader(cf_opts);
      rocksdb::Status s = reader.Open(file);
      if (!s.ok()) return s;
      ExternalFileId id;
      id.cf = a.column_family->GetName();
      auto props = reader.GetTableProperties();
      id.entries = props ? props->num_entries : 0;
      if (id.entries == 1) {  // (a Delete is hidden from the iterator: then unmatched, a gap)
        std::unique_ptr<Iterator> it(reader.NewIterator(ReadOptions()));
        it->SeekToFirst();
        if (!it->Valid()) continue;
        id.first = it->key().ToString();
      }
      out->push_back(std::move(id));
    }
  }
  return rocksdb::Status::OK();
}

// How many global sequence numbers an ingestion consumed: those of the
// files it added, in (before, after], one number each (at most one per
// family ingested into: never more than it can have consumed). Why a file is recognized by
// its family and entry count: a file whose entries all carry one sequence
// number past `before` holds one batch's worth of one number, which only
// an ingestion gives several entries (every entry of a written batch has
// its own number); a file of one entry must also hold the external file's
// key. A file RocksDB already compacted away is not found: its number
// stays a gap to the ledger (seq_ledger.h), the safe side (the indexes
// are then rebuilt).
uint64_t IngestedSeqnos(DB* base, const std::vector<ExternalFileId>& ids, uint64_t before, uint64_t after) {
  if (after <= before || ids.empty()) return 0;
  std::vector<rocksdb::LiveFileMetaData> files;
  base->GetLiveFilesMetaData(&files);
  std::vector<uint64_t> seqs;
  for (const auto& f : files) {
    if (f.smallest_seqno != f.largest_seqno || f.smallest_seqno <= before || f.smallest_seqno > after) continue;
    for (const ExternalFileId& id : ids) {
      if (f.column_family_name == id.cf && f.num_entries == id.entries &&
          (id.entries > 1 || (f.smallestkey == id.first && f.largestkey == id.first))) {
        seqs.push_back(f.smallest_seqno);
        break;
      }
    }
  }
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  std::vector<std::string> fams;
  for (const ExternalFileId& id : ids) fams.push_back(id.cf);
  std::sort(fams.begin(), fams.end());
  fams.erase(std::unique(fams.begin(), fams.end()), fams.end());
  return std::min<uint64_t>(seqs.size(), std::min<uint64_t>(fams.size(), after - before));
}

// The point keys of one file (latest visible, as the ingestion will see
// them), handed to `fn` one at a time.
template <class Fn>
rocksdb::Status ForEachFileKey(const rocksdb::Options& cf_opts, const std::string& file, Fn&& fn) {
  rocksdb::SstFileReader reader(cf_opts);
  rocksdb::Status s = reader.Open(file);
  if (!s.ok()) return s;
  std::unique_ptr<Iterator> it(reader.NewIterator(ReadOptions()));
  bool first = true;
  s = fn([&](Slice* key) {
    // The key stays valid until the next call: move on only then.
    if (first) {
      it->SeekToFirst();
      first = false;
    } else {
      it->Next();
    }
    if (!it->Valid()) return false;
    *key = it->key();
    return true;
  });
  if (s.ok()) s = it->status();
  return s;
}

}  // namespace

rocksdb::Status LiveKeyDB::Rep::Ingest(const std::vector<rocksdb::IngestExternalFileArg>& args) {
  std::vector<std::pair<CfState*, const rocksdb::IngestExternalFileArg*>> work;
  for (const auto& a : args) {
    CfState* cf = Lookup(a.column_family);
    if (cf != nullptr) work.emplace_back(cf, &a);
  }
  // The sequence numbers it consumes (a global one per family whose files
  // need it) are read back from the files it added, for the ledger.
  std::vector<ExternalFileId> ids;
  if (!IdentifyFiles(base, args, &ids).ok()) ids.clear();  // (then: a gap, safe)
  if (work.empty()) {
    ledger.Begin();
    const uint64_t before = base->GetLatestSequenceNumber();
    live_key::WorldWatch::OwnIngestion own(world.get());  // (its files are explained: world_watch.h)
    rocksdb::Status s = base->IngestExternalFiles(args);
    ledger.End(s.ok() ? IngestedSeqnos(base, ids, before, base->GetLatestSequenceNumber()) : 0);
    return s;
  }

  AllStripesGuard all(this);
  IngestIndexer ix{this, {}};
  for (const auto& w : work) {
    CfState* cf = w.first;
    stripes.ForgetFamily(cf->id);
    const rocksdb::Options cf_opts = base->GetOptions(w.second->column_family);
    for (const std::string& file : w.second->external_files) {
      rocksdb::Status s = ForEachFileKey(cf_opts, file, [&](auto&& next) { return ix.AddKeys(cf, next); });
      if (!s.ok()) {
        ix.UndoAll();
        return s;
      }
    }
  }
  ledger.Begin();
  const uint64_t before = base->GetLatestSequenceNumber();
  live_key::WorldWatch::OwnIngestion own(world.get());
  rocksdb::Status s = base->IngestExternalFiles(args);
  ledger.End(s.ok() ? IngestedSeqnos(base, ids, before, base->GetLatestSequenceNumber()) : 0);
  if (!s.ok()) ix.UndoNotLive();
  return s;
}

#if DLCBF_ROCKSDB_AT_LEAST(11, 5)
// ---------------------------------------------------------------------------
// Two-phase ingestion. The handle LiveKeyDB returns wraps RocksDB's and
// carries the keys read at Prepare (the files may be moved into the DB
// then, so they cannot be read at Commit).
// ---------------------------------------------------------------------------
namespace {

// Registered in the Rep while it lives (Rep::ingest_handles), which is how
// a commit recognizes its own handles: no RTTI (in-tree RocksDB builds
// compile without it). RocksDB requires a handle not to outlive its DB.
class IndexedIngestionHandle : public rocksdb::FileIngestionHandle {
 public:
  IndexedIngestionHandle(LiveKeyDB::Rep* owner, std::unique_ptr<rocksdb::FileIngestionHandle> inner)
      : owner_(owner), inner_(std::move(inner)) {
    std::lock_guard<std::mutex> l(owner_->ingest_mu);
    owner_->ingest_handles.insert(static_cast<const rocksdb::FileIngestionHandle*>(this));
  }
  ~IndexedIngestionHandle() override {
    std::lock_guard<std::mutex> l(owner_->ingest_mu);
    owner_->ingest_handles.erase(static_cast<const rocksdb::FileIngestionHandle*>(this));
  }
  rocksdb::Status Abort() override { return inner_ ? inner_->Abort() : rocksdb::Status::OK(); }

  LiveKeyDB::Rep* const owner_;
  std::unique_ptr<rocksdb::FileIngestionHandle> inner_;
  // Per indexed family of the arguments: its id and the keys of its files.
  std::vector<std::pair<uint32_t, std::vector<std::string>>> keys_;
};

}  // namespace

rocksdb::Status LiveKeyDB::Rep::PrepareIngestion(const std::vector<rocksdb::IngestExternalFileArg>& args,
                                                 std::unique_ptr<rocksdb::FileIngestionHandle>* handle) {
  if (handle == nullptr) return rocksdb::Status::InvalidArgument("LiveKeyDB: null ingestion handle");
  std::vector<std::pair<uint32_t, std::vector<std::string>>> keys;
  for (const auto& a : args) {
    CfState* cf = Lookup(a.column_family);
    if (cf == nullptr) continue;
    keys.emplace_back(cf->id, std::vector<std::string>());
    const rocksdb::Options cf_opts = base->GetOptions(a.column_family);
    for (const std::string& file : a.external_files) {
      rocksdb::Status s = ForEachFileKey(cf_opts, file, [&](auto&& next) {
        Slice k;
        while (next(&k)) keys.back().second.push_back(k.ToString());
        return rocksdb::Status::OK();
      });
      if (!s.ok()) {
        handle->reset();
        return s;
      }
    }
  }
  std::unique_ptr<rocksdb::FileIngestionHandle> inner;
  rocksdb::Status s = base->PrepareFileIngestion(args, &inner);
  if (!s.ok()) {
    handle->reset();
    return s;
  }
  std::unique_ptr<IndexedIngestionHandle> h(new IndexedIngestionHandle(this, std::move(inner)));
  h->keys_ = std::move(keys);
  *handle = std::move(h);
  return s;
}

rocksdb::Status LiveKeyDB::Rep::CommitIngestion(std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> handles) {
  // Unwrap first: a handle this LiveKeyDB did not prepare carries keys the
  // index never saw, so the whole commit is refused (nothing committed).
  std::vector<IndexedIngestionHandle*> ours;
  for (const auto& h : handles) {
    bool mine;
    {
      std::lock_guard<std::mutex> l(ingest_mu);
      mine = h != nullptr && ingest_handles.count(static_cast<const void*>(h.get())) != 0;
    }
    auto* ih = mine ? static_cast<IndexedIngestionHandle*>(h.get()) : nullptr;
    if (ih == nullptr || !ih->inner_) {
      return rocksdb::Status::InvalidArgument(
          "LiveKeyDB: CommitFileIngestionHandles takes only handles from this LiveKeyDB's "
          "PrepareFileIngestion (a base-DB handle's keys are unknown to the index)");
    }
    ours.push_back(ih);
  }
  std::vector<std::unique_ptr<rocksdb::FileIngestionHandle>> inner;
  for (IndexedIngestionHandle* ih : ours) inner.push_back(std::move(ih->inner_));

  AllStripesGuard all(this);
  IngestIndexer ix{this, {}};
  for (IndexedIngestionHandle* ih : ours) {
    for (const auto& fk : ih->keys_) {
      CfState* cf = nullptr;
      {
        ReadSection rs(&epochs);
        const CfTable* t = table.load();
        cf = t ? t->Find(fk.first) : nullptr;
      }
      if (cf == nullptr || !cf->indexed) continue;  // dropped since Prepare
      stripes.ForgetFamily(cf->id);
      size_t i = 0;
      rocksdb::Status s = ix.AddKeys(cf, [&](Slice* k) {
        if (i == fk.second.size()) return false;
        *k = fk.second[i++];
        return true;
      });
      if (!s.ok()) {
        ix.UndoAll();
        return s;  // the prepared ingestions are rolled back with `inner`
      }
    }
  }
  ledger.Begin();  // (its sequence numbers: as IngestExternalFiles')
  live_key::WorldWatch::OwnIngestion own(world.get());
  rocksdb::Status s = base->CommitFileIngestionHandles(std::move(inner));
  ledger.End(0);  // (consumption unknown: a gap, the safe side)
  if (!s.ok()) ix.UndoNotLive();
  return s;
}
#endif  // DLCBF_ROCKSDB_AT_LEAST(11, 5)

}  // namespace dlcbf
