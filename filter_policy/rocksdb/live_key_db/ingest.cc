// LiveKeyDB ingestion: the ingested files' keys enter the index before the
// files enter the DB.
#include "filter_policy/rocksdb/live_key_db/rep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>
#include "rocksdb/sst_file_reader.h"

namespace dlcbf {

// ---------------------------------------------------------------------------
// Ingestion
// ---------------------------------------------------------------------------
rocksdb::Status LiveKeyDB::Rep::Ingest(const std::vector<rocksdb::IngestExternalFileArg>& args) {
  std::vector<std::pair<CfState*, const rocksdb::IngestExternalFileArg*>> work;
  for (const auto& a : args) {
    CfState* cf = Lookup(a.column_family);
    if (cf != nullptr) work.emplace_back(cf, &a);
  }
  if (work.empty()) return base->IngestExternalFiles(args);

  LockAll();
  struct Unlock {
    Rep* r;
    ~Unlock() { r->UnlockAll(); }
  } unlock{this};
  struct Added {
    CfState* cf;
    std::string key;
    uint64_t hash;
  };
  std::vector<Added> added;
  auto undo_all = [&] {
    for (const Added& a : added) IndexErase(a.cf, a.cf->active.load(), a.hash);
  };
  for (const auto& w : work) {
    CfState* cf = w.first;
    if (cf->dropped) continue;
    const rocksdb::Options cf_opts = base->GetOptions(w.second->column_family);
    for (const std::string& file : w.second->external_files) {
      rocksdb::SstFileReader reader(cf_opts);
      rocksdb::Status s = reader.Open(file);
      if (!s.ok()) {
        undo_all();
        return s;
      }
      std::unique_ptr<Iterator> it(reader.NewIterator(ReadOptions()));
      std::vector<std::string> pending;  // keys the index may hold: read them
      auto flush_pending = [&]() -> rocksdb::Status {
        if (pending.empty()) return rocksdb::Status::OK();
        std::vector<ColumnFamilyHandle*> hs(pending.size(), cf->handle);
        std::vector<Slice> ks(pending.begin(), pending.end());
        std::vector<PinnableSlice> vals(ks.size());
        std::vector<rocksdb::Status> sts(ks.size());
        base->MultiGet(ReadOptions(), ks.size(), hs.data(), ks.data(), vals.data(), sts.data());
        epochs.Bump(kLivenessReads, ks.size());
        for (size_t i = 0; i < ks.size(); ++i) {
          if (sts[i].ok()) continue;  // live already: counted
          const uint64_t h = Hash(ks[i]);
          rocksdb::Status is = IndexInsert(cf, cf->active.load(), h);
          if (!is.ok()) return is;
          added.push_back(Added{cf, pending[i], h});
        }
        pending.clear();
        return rocksdb::Status::OK();
      };
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        epochs.Bump(kIngestedKeys);
        const uint64_t h = Hash(it->key());
        if (WriterContains(cf->active.load(), h)) {
          pending.push_back(it->key().ToString());
          if (pending.size() >= 256) s = flush_pending();
        } else {
          s = IndexInsert(cf, cf->active.load(), h);
          if (s.ok()) added.push_back(Added{cf, it->key().ToString(), h});
        }
        if (!s.ok()) break;
      }
      if (s.ok()) s = it->status();
      if (s.ok()) s = flush_pending();
      if (!s.ok()) {
        undo_all();
        return s;
      }
    }
  }
  rocksdb::Status s = base->IngestExternalFiles(args);
  if (!s.ok()) {
    for (const Added& a : added) {
      if (ReadLiveness(a.cf->handle, a.key) == Liveness::kNotLive) {
        IndexErase(a.cf, a.cf->active.load(), a.hash);
        epochs.Bump(kUndone);
      }
    }
  }
  return s;
}


}  // namespace dlcbf
