// LiveKeyDB index persistence: the index file (format version 4), its
// save at Close and the checks before it is trusted at Open. The byte
// layout: filter_policy/FORMATS.md, "LiveKeyDB index file".
// Versions 1-3 are never trusted, only rebuilt (the file is a derived
// cache): 3 held fast-kernel blobs without a kernel byte, 2
// DLeftCountingBloomFilter blobs, and 1 recorded only the SSTs that still
// carried the ingestion property (a compaction erases that property).
// Save (Close): pause background work (no compaction changes the file set
// after it is recorded), then write <name>.tmp, fsync, rename, directory
// fsync. Load (Open): only if the checksum, version, identity, seed and
// sequence number match AND every live SST that is not in the saved set has
// a smallest sequence number > 0. Why: the equal sequence number proves
// that no sequenced write happened since the save, so a new file whose keys
// all carry sequence numbers (a flush of the recovered WAL) holds only keys
// the index saw. An ingestion at the bottom level gets global seqno 0 and
// leaves the sequence number unchanged, and any compaction output that
// contains such keys keeps seqno 0 for them. A bottom-level compaction of
// our own keys (seqnos zeroed) between the save and the load is rejected
// too: a needless but safe rebuild.
// Checkpoints (checkpoint.cc) write the same file while the DB runs; a
// file older than the DB (sequence number below the DB's), or one that a
// file new to it with sequence number 0 follows, is then loaded as a
// checkpoint and brought forward by reading the keys of the files written
// since it and of those zeroed files. Every file claims only a sequence
// number up to which all writes were durable when it was written
// (checkpoint.cc, MakeDurable). A file ahead of the DB is rejected and
// removed, as is every file rejected whole. A loaded file stays after Open
// (a later crash brings it forward; Close and checkpoints replace it).
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
#include "dlcbf/internal/coding.h"

namespace dlcbf {

namespace {

void PutString32(std::string* dst, const Slice& s) {
  internal::PutFixed32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s.data(), s.size());
}
bool GetString32(internal::Decoder* d, std::string* out) {
  uint32_t n = 0;
  if (!d->Get32(&n) || n > d->remaining()) return false;
  out->assign(d->data(), n);
  return d->Skip(n);
}

std::string BaseName(const std::string& path) {
  const size_t p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

rocksdb::Status WriteFileAtomically(rocksdb::Env* env, const std::string& dir, const std::string& name,
                           const std::string& data) {
  const std::string final_name = dir + "/" + name;
  const std::string tmp = final_name + ".tmp";
  std::unique_ptr<rocksdb::WritableFile> f;
  rocksdb::Status s = env->NewWritableFile(tmp, &f, rocksdb::EnvOptions());
  if (s.ok()) s = f->Append(data);
  if (s.ok()) s = f->Sync();
  if (f) {
    rocksdb::Status c = f->Close();
    if (s.ok()) s = c;
  }
  if (s.ok()) s = env->RenameFile(tmp, final_name);
  if (!s.ok()) {
    env->DeleteFile(tmp).PermitUncheckedError();
    return s;
  }
  std::unique_ptr<rocksdb::Directory> d;
  s = env->NewDirectory(dir, &d);
  if (s.ok()) s = d->Fsync();
  return s;
}

}  // namespace

// The SST set: the numbers of every live SST file of the DB (all column
// families), sorted; with `smallest_seqno`, each file's smallest sequence
// number in the same order.
rocksdb::Status LiveKeyDB::Rep::LiveSsts(std::vector<uint64_t>* numbers,
                                std::vector<uint64_t>* smallest_seqno) {
  std::vector<rocksdb::LiveFileMetaData> files;
  base->GetLiveFilesMetaData(&files);
  std::vector<std::pair<uint64_t, uint64_t>> v;
  for (const auto& f : files) {
    uint64_t n = f.file_number;
    if (n == 0) n = std::strtoull(BaseName(f.name).c_str(), nullptr, 10);  // "/000123.sst"
    v.emplace_back(n, f.smallest_seqno);
  }
  std::sort(v.begin(), v.end());
  numbers->clear();
  if (smallest_seqno) smallest_seqno->clear();
  for (const auto& e : v) {
    numbers->push_back(e.first);
    if (smallest_seqno) smallest_seqno->push_back(e.second);
  }
  return rocksdb::Status::OK();
}

rocksdb::Status LiveKeyDB::Rep::WriteIndexFile(uint64_t seq, const std::string& identity,
                                               const std::vector<uint64_t>& ssts,
                                               const std::vector<SavedIndex>& saved) {
  std::string body;
  internal::PutFixed64(&body, kFileMagic);
  internal::PutFixed32(&body, kFileVersion);
  internal::PutFixed64(&body, seq);
  internal::PutFixed64(&body, opt.seed);
  PutString32(&body, identity);
  internal::PutFixed32(&body, static_cast<uint32_t>(ssts.size()));
  for (uint64_t n : ssts) internal::PutFixed64(&body, n);
  internal::PutFixed32(&body, static_cast<uint32_t>(saved.size()));
  for (const SavedIndex& e : saved) {
    internal::PutFixed32(&body, e.cf->id);
    PutString32(&body, e.cf->name);
    internal::PutFixed64(&body, e.sized_for);
    internal::PutFixed64(&body, e.entries);
    body.push_back(static_cast<char>(e.kind));
    internal::PutFixed64(&body, e.blob.size());
    body.append(e.blob);
  }
  internal::PutFixed64(&body, internal::HashKey(body.data(), body.size(), kFileChecksumSeed));
  rocksdb::Status s = WriteFileAtomically(env, dbname, opt.index_file_name, body);
  if (s.ok()) {
    rocksdb::Info(log, "LiveKeyDB: saved %zu index(es), %zu bytes, at sequence %" PRIu64, saved.size(),
                  body.size(), seq);
  }
  return s;
}

// The families whose index may be saved: indexed, live, complete. (Their
// `owned` index is read by the caller under swap_mu: a rebuild may swap it.)
std::vector<CfState*> LiveKeyDB::Rep::SavableFamilies() {
  std::vector<CfState*> fams;
  std::lock_guard<std::mutex> l(cf_mu);
  for (auto& kv : cfs) {
    // (Not an index still being built: its stand-in is incomplete.)
    if (kv.second->indexed && !kv.second->dropped && kv.second->serving.load(std::memory_order_acquire)) {
      fams.push_back(kv.second.get());
    }
  }
  return fams;
}

rocksdb::Status LiveKeyDB::Rep::Persist() {
  const std::vector<CfState*> fams = SavableFamilies();
  std::string identity;
  rocksdb::Status s = base->GetDbIdentity(identity);
  if (!s.ok()) return s;
  // The file claims the latest sequence number: every write up to it made
  // durable first (checkpoint.cc, MakeDurable), while background work
  // still runs (a flush needs it).
  const uint64_t seq = base->GetLatestSequenceNumber();
  s = MakeDurable(fams);
  if (!s.ok()) return s;  // the last checkpoint, if any, stays valid
  // No compaction may change the SST set after it is recorded (a
  // compaction at the bottom level zeroes sequence numbers, so its output
  // would be brought forward at the next Open: needless work). Resumed
  // before returning, whatever happens: RocksDB's own Close may still
  // have to flush (disableWAL data), and would wait for paused background
  // work forever (test LiveKeyExactness.CloseNeverHangs).
  s = base->PauseBackgroundWork();
  if (!s.ok()) return s;
  struct Resume {
    DB* db;
    ~Resume() { db->ContinueBackgroundWork().PermitUncheckedError(); }
  } resume{base};
  std::vector<uint64_t> ssts;
  s = LiveSsts(&ssts, nullptr);
  if (!s.ok()) return s;
  std::vector<SavedIndex> saved;
  uint32_t skipped = 0;
  std::lock_guard<std::mutex> sl(swap_mu);
  for (CfState* cf : fams) {
    if (!cf->owned) continue;
    SavedIndex e{cf, 0, cf->owned->sized_for(), cf->owned->entries(), std::string()};
    if (!cf->owned->Serialize(&e.blob, &e.kind)) {
      ++skipped;
      continue;
    }
    saved.push_back(std::move(e));
  }
  if (saved.empty()) {
    rocksdb::Info(log, "LiveKeyDB: no index to persist (%u past capacity)", skipped);
    // An older checkpoint would be brought forward at the next Open; with
    // nothing savable now, a full build is as good and never older.
    env->DeleteFile(IndexPath()).PermitUncheckedError();
    return rocksdb::Status::OK();
  }
  if (skipped > 0) rocksdb::Info(log, "LiveKeyDB: %u index(es) past capacity not persisted", skipped);
  return WriteIndexFile(seq, identity, ssts, saved);
}

void LiveKeyDB::Rep::LoadFromFile(std::vector<CfState*>* loaded) {
  const std::string path = IndexPath();
  // A file rejected whole is removed, so no later Open can load it (one
  // rejected as ahead of the DB would otherwise be loaded once the DB's
  // sequence number passed it, by writes it never counted).
  auto Reject = [&](const std::string& why) {
    this->Reject(why);
    rocksdb::Status ds = env->DeleteFile(path);
    if (!ds.ok()) rocksdb::Warn(log, "LiveKeyDB: could not remove the rejected index file: %s", ds.ToString().c_str());
  };
  if (!env->FileExists(path).ok()) {
    rocksdb::Info(log, "LiveKeyDB: no index file (first open, or the DB was not closed cleanly "
                  "last time); indexes will be rebuilt");
    return;
  }
  std::string data;
  rocksdb::Status s = rocksdb::ReadFileToString(env, path, &data);
  if (!s.ok()) return Reject("unreadable: " + s.ToString());
  if (data.size() < 8 + 4 + 8 + 8 + 4 + 4 + 4 + 8) return Reject("truncated");
  const size_t body = data.size() - 8;
  if (internal::HashKey(data.data(), body, kFileChecksumSeed) !=
      internal::DecodeFixed64(data.data() + body)) {
    return Reject("checksum mismatch (corrupt file)");
  }
  internal::Decoder d(data.data(), body);
  uint64_t magic = 0, seq = 0, seed = 0;
  uint32_t version = 0, n_ssts = 0, n = 0;
  std::string identity;
  if (!d.Get64(&magic) || magic != kFileMagic) return Reject("bad magic");
  if (!d.Get32(&version)) return Reject("truncated header");
  if (version == 1) {
    return Reject("format version 1 does not record the SST set, so keys added behind "
                  "LiveKeyDB's back (an ingestion at seqno 0) cannot be ruled out");
  }
  if (version == 2) {
    return Reject("format version 2 holds the previous index layout "
                  "(DLeftCountingBloomFilter); rebuilt");
  }
  if (version == 3) {
    return Reject("format version 3 records no index kernel (it held fast-kernel indexes); rebuilt");
  }
  if (version != kFileVersion) {
    return Reject("unsupported version " + std::to_string(version));
  }
  if (!d.Get64(&seq) || !d.Get64(&seed) || !GetString32(&d, &identity)) return Reject("truncated header");
  std::string db_identity;
  if (!base->GetDbIdentity(db_identity).ok() || db_identity != identity) {
    return Reject("written for another DB (identity differs)");
  }
  const uint64_t latest = base->GetLatestSequenceNumber();
  if (seq > latest) {
    return Reject("saved at sequence " + std::to_string(seq) + ", ahead of the DB at " +
                  std::to_string(latest) + " (a DB restored from an older copy?)");
  }
  // Older than the DB: a checkpoint, brought forward by reading the keys
  // written since (checkpoint.cc, ReplaySince). Equal: exact as it is (unless
  // an SST file below says otherwise).
  if (seed != opt.seed) return Reject("hash seed differs from index_options.seed");
  if (!d.Get32(&n_ssts) || n_ssts > d.remaining() / 8) return Reject("truncated SST list");
  std::vector<uint64_t> saved_ssts(n_ssts);
  for (uint64_t& f : saved_ssts) d.Get64(&f);
  std::sort(saved_ssts.begin(), saved_ssts.end());
  std::vector<uint64_t> now_ssts, now_smallest;
  s = LiveSsts(&now_ssts, &now_smallest);
  if (!s.ok()) return Reject("cannot list live SST files: " + s.ToString());
  bool checkpoint = seq < latest;
  for (size_t i = 0; i < now_ssts.size(); ++i) {
    // A file new to the index is harmless only if every key in it carries a
    // real sequence number (<= the verified one: written through LiveKeyDB
    // before the save, e.g. a flush of the recovered WAL). Sequence number 0
    // marks an ingestion at the bottom level, or a compaction output (at
    // the bottom level every compaction zeroes what no snapshot needs)
    // that may contain one: the file is read like the files written after
    // a checkpoint (checkpoint.cc, ReplaySince), so the index is brought
    // forward as from a checkpoint.
    if (now_smallest[i] == 0 &&
        !std::binary_search(saved_ssts.begin(), saved_ssts.end(), now_ssts[i])) {
      if (!checkpoint) {
        rocksdb::Info(log, "LiveKeyDB: SST file %" PRIu64 " is new to the index file and holds sequence "
                      "number 0: its keys are read before the index serves", now_ssts[i]);
      }
      checkpoint = true;
    }
  }
  if (!d.Get32(&n)) return Reject("truncated");
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t id = 0;
    std::string name;
    uint64_t sized_for = 0, entries = 0, len = 0;
    uint8_t kind = 0;
    if (!d.Get32(&id) || !GetString32(&d, &name) || !d.Get64(&sized_for) || !d.Get64(&entries) ||
        !d.Get8(&kind) || !d.Get64(&len) || len > d.remaining()) {
      return Reject("truncated entry");
    }
    const Slice blob(d.data(), static_cast<size_t>(len));
    d.Skip(static_cast<size_t>(len));
    CfState* cf = FindState(id);
    if (cf == nullptr || cf->dropped || cf->name != name) {
      this->Reject("entry for column family " + std::to_string(id) + " '" + name + "' has no match");
      continue;
    }
    if (!cf->indexed || cf->owned) continue;
    std::unique_ptr<LiveKeyIndex> idx;
    s = LiveKeyIndex::Load(blob, kind, opt, sized_for, entries, &epochs, &idx);
    if (!s.ok()) {
      this->Reject("index of '" + name + "': " + s.ToString());
      continue;
    }
    if (checkpoint) {
      cf->checkpoint_base = std::move(idx);
      cf->checkpoint_seq = seq;
      cf->checkpoint_ssts = saved_ssts;
    } else {
      std::lock_guard<std::mutex> sl(swap_mu);
      cf->owned = std::move(idx);
      cf->active.store(cf->owned.get());
    }
    {
      std::lock_guard<std::mutex> l(cf->info_mu);
      cf->loaded_from_file = true;
    }
    file_loads.fetch_add(1);
    loaded->push_back(cf);
    rocksdb::Info(log, "LiveKeyDB: loaded the index of '%s' (%" PRIu64 " entries) at sequence %" PRIu64 "%s",
                  name.c_str(), entries, seq,
                  checkpoint ? " (a checkpoint: the keys written since are read next)" : "");
    if (checkpoint) {
      std::string list;
      for (uint64_t f : saved_ssts) list += " " + std::to_string(f);
      rocksdb::Info(log, "LiveKeyDB: the checkpoint's SST set:%s", list.c_str());
    }
  }
  if (d.remaining() != 0) this->Reject("trailing bytes (entries loaded before were checksummed)");
}


}  // namespace dlcbf
