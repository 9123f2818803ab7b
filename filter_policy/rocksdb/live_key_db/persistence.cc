// LiveKeyDB index persistence: the index file (format version 6: a base,
// then delta segments of compact records; 5: 72-byte records; 4: a base
// alone), its save at Close and the checks
// before it is trusted at Open (the load itself: index_load.cc). The byte layout: filter_policy/FORMATS.md,
// "LiveKeyDB index file".
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
// Deltas: a checkpoint (or Close) whose indexes are the base's appends
// their changed blocks as a segment (AppendIndexDelta; checkpoint.cc says
// when). Load applies the segments in order and stops at the first torn
// or corrupt one: the prefix is a complete, older checkpoint (test
// LiveKeyExactness.TornDeltaLosesNoKey cuts a delta at every field).
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
#include "dlcbf/internal/memory.h"

namespace dlcbf {

namespace {

void PutString32(std::string* dst, const Slice& s) {
  internal::PutFixed32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s.data(), s.size());
}

std::string BaseName(const std::string& path) {
  const size_t p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

// Appends `pieces` to `f` (opened with status `s`), then the XXH3
// (kFileChecksumSeed) of all of them, syncs and closes it. `*bytes`: what
// was appended. The pieces are written as they lie (no copy in memory).
rocksdb::Status AppendChecksummed(rocksdb::Status s, std::unique_ptr<rocksdb::WritableFile> f,
                                  const std::vector<Slice>& pieces, uint64_t* bytes) {
  internal::StreamHash sum(kFileChecksumSeed);
  uint64_t n = 0;
  for (const Slice& p : pieces) {
    if (!s.ok()) break;
    sum.Update(p.data(), p.size());
    s = f->Append(p);
    n += p.size();
  }
  std::string trailer;
  internal::PutFixed64(&trailer, sum.Digest());
  if (s.ok()) s = f->Append(trailer);
  if (s.ok()) s = f->Sync();
  if (f) {
    rocksdb::Status c = f->Close();
    if (s.ok()) s = c;
  }
  *bytes = n + trailer.size();
  return s;
}

// Writes `pieces`, then the XXH3 (kFileChecksumSeed) of all of them, to
// dir/name through name.tmp: fsync, rename, directory fsync. The pieces are
// written as they are (no copy of the file in memory).
rocksdb::Status WriteFileAtomically(rocksdb::Env* env, const std::string& dir, const std::string& name,
                                    const std::vector<Slice>& pieces, uint64_t* bytes) {
  const std::string final_name = dir + "/" + name;
  const std::string tmp = final_name + ".tmp";
  std::unique_ptr<rocksdb::WritableFile> f;
  uint64_t n = 0;
  rocksdb::Status s = env->NewWritableFile(tmp, &f, rocksdb::EnvOptions());
  s = AppendChecksummed(s, std::move(f), pieces, &n);
  if (s.ok()) s = env->RenameFile(tmp, final_name);
  if (!s.ok()) {
    env->DeleteFile(tmp).PermitUncheckedError();
    return s;
  }
  if (bytes != nullptr) *bytes = n;
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

// The file (FORMATS.md, "LiveKeyDB index file"): the head, then each
// index's head and blob, then the checksum of all of it: the base. Delta
// segments (AppendIndexDelta) follow it.
std::string LiveKeyDB::Rep::FileHead(uint64_t seq, const std::string& identity, const std::vector<uint64_t>& ssts,
                                     size_t indexes) const {
  std::string head;
  internal::PutFixed64(&head, kFileMagic);
  internal::PutFixed32(&head, kFileVersion);
  internal::PutFixed64(&head, seq);  // at kHeadSeqAt
  internal::PutFixed64(&head, opt.seed);
  PutString32(&head, identity);
  internal::PutFixed32(&head, static_cast<uint32_t>(ssts.size()));
  for (uint64_t n : ssts) internal::PutFixed64(&head, n);
  internal::PutFixed32(&head, static_cast<uint32_t>(indexes));
  return head;
}

std::string LiveKeyDB::Rep::IndexHead(const SavedIndex& e, uint64_t blob_bytes, size_t* entries_at,
                                      size_t* size_at) {
  std::string h;
  internal::PutFixed32(&h, e.cf->id);
  PutString32(&h, e.cf->name);
  internal::PutFixed64(&h, e.sized_for);
  if (entries_at != nullptr) *entries_at = h.size();
  internal::PutFixed64(&h, e.entries);
  h.push_back(static_cast<char>(e.kind));
  if (size_at != nullptr) *size_at = h.size();
  internal::PutFixed64(&h, blob_bytes);
  return h;
}

rocksdb::Status LiveKeyDB::Rep::WriteIndexFile(uint64_t seq, const std::string& identity,
                                               const std::vector<uint64_t>& ssts,
                                               const std::vector<SavedIndex>& saved, uint64_t* bytes) {
  // The heads first (the Slices point into them), each blob written from
  // where it lies.
  std::vector<std::string> heads{FileHead(seq, identity, ssts, saved.size())};
  for (const SavedIndex& e : saved) heads.push_back(IndexHead(e, e.blob.size()));
  std::vector<Slice> pieces{heads[0]};
  for (size_t i = 0; i < saved.size(); ++i) {
    pieces.emplace_back(heads[1 + i]);
    pieces.emplace_back(saved[i].blob);
  }
  uint64_t n = 0;
  rocksdb::Status s = WriteFileAtomically(env, dbname, opt.index_file_name, pieces, &n);
  if (s.ok()) {
    if (bytes != nullptr) *bytes = n;
    rocksdb::Info(log, "LiveKeyDB: saved %zu index(es), %" PRIu64 " bytes, at sequence %" PRIu64, saved.size(), n,
                  seq);
  }
  return s;
}

rocksdb::Status LiveKeyDB::Rep::StreamedIndexFile::Open(rocksdb::Env* env, const std::string& dir,
                                                        const std::string& name) {
  env_ = env;
  dir_ = dir;
  final_ = dir + "/" + name;
  tmp_ = final_ + ".tmp";
  // Created empty first: a RandomRWFile opens an existing file only, and
  // never truncates it.
  std::unique_ptr<rocksdb::WritableFile> created;
  status_ = env_->NewWritableFile(tmp_, &created, rocksdb::EnvOptions());
  if (status_.ok()) status_ = created->Close();
  if (status_.ok()) status_ = env_->NewRandomRWFile(tmp_, &f_, rocksdb::EnvOptions());
  if (!status_.ok()) {
    f_.reset();
    env_->DeleteFile(tmp_).PermitUncheckedError();
  }
  return status_;
}

rocksdb::Status LiveKeyDB::Rep::StreamedIndexFile::OpenAppend(rocksdb::Env* env, const std::string& path) {
  env_ = env;
  final_ = path;
  status_ = env_->GetFileSize(path, &origin_);
  if (status_.ok()) status_ = env_->NewRandomRWFile(path, &f_, rocksdb::EnvOptions());
  if (!status_.ok()) f_.reset();
  return status_;
}

rocksdb::Status LiveKeyDB::Rep::StreamedIndexFile::Append(const Slice& piece) {
  if (status_.ok()) status_ = f_->Write(origin_ + size_, piece);
  written_.Update(piece.data(), piece.size());
  size_ += piece.size();
  return status_;
}

void LiveKeyDB::Rep::StreamedIndexFile::Late(uint64_t at, uint64_t value) { fields_.push_back({at, value, -1}); }

void LiveKeyDB::Rep::StreamedIndexFile::LateImage(uint64_t begin, uint64_t end, uint64_t items) {
  Late(begin + DenseDLeftFilter::kImageItemsOffset, items);
  fields_.push_back({end - 8, 0, static_cast<int>(images_.size())});
  images_.emplace_back(begin, end);
}

// The read-back: the file in pieces that never cross a field or an
// image's bounds, so each piece is either one field (written now, its
// value as known) or plain bytes; each piece goes to the file's checksum
// and to the checksum of the image it lies in. An image's checksum field
// comes after all of its other bytes, so its value is known when reached.
// The bytes read back (a field's as first written) must hash as those
// appended did: the checksums then vouch for what was produced, not for
// whatever a read returned.
rocksdb::Status LiveKeyDB::Rep::StreamedIndexFile::Finish(uint64_t* bytes) {
  rocksdb::Status s = status_;
  if (!s.ok()) return s;
  std::stable_sort(fields_.begin(), fields_.end(), [](const Field& a, const Field& b) { return a.at < b.at; });
  std::vector<uint64_t> stops{size_};
  for (const Field& f : fields_) {
    if (f.at + 8 > size_) return rocksdb::Status::Corruption("LiveKeyDB: a late field past the file's end");
    stops.push_back(f.at);
    stops.push_back(f.at + 8);
  }
  for (const auto& im : images_) {
    stops.push_back(im.first);
    stops.push_back(im.second);
  }
  std::sort(stops.begin(), stops.end());
  std::vector<internal::StreamHash> image_sums(images_.size(),
                                               internal::StreamHash(DenseDLeftFilter::kImageChecksumSeed));
  internal::StreamHash sum(kFileChecksumSeed), read_back(0);
  std::unique_ptr<char[]> scratch(new char[kReadBackBytes]);
  size_t next_field = 0, next_stop = 0;
  for (uint64_t off = 0; s.ok() && off < size_;) {
    while (stops[next_stop] <= off) ++next_stop;
    Slice piece;
    char value[8];
    if (next_field < fields_.size() && fields_[next_field].at == off) {
      // (Two fields at one offset: the later Late wins.)
      while (next_field + 1 < fields_.size() && fields_[next_field + 1].at == off) ++next_field;
      const Field& w = fields_[next_field++];
      Slice first;
      s = f_->Read(origin_ + off, 8, &first, scratch.get());
      if (s.ok() && first.size() != 8) s = rocksdb::Status::IOError("LiveKeyDB: short read back of " + tmp_);
      if (s.ok()) read_back.Update(first.data(), 8);
      internal::EncodeFixed64(value, w.image >= 0 ? image_sums[w.image].Digest() : w.value);
      piece = Slice(value, 8);
      if (s.ok()) s = f_->Write(origin_ + off, piece);
    } else {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(stops[next_stop] - off, kReadBackBytes));
      s = f_->Read(origin_ + off, n, &piece, scratch.get());
      if (s.ok() && piece.size() != n) s = rocksdb::Status::IOError("LiveKeyDB: short read back of " + tmp_);
      if (s.ok()) read_back.Update(piece.data(), piece.size());
    }
    if (!s.ok()) break;
    sum.Update(piece.data(), piece.size());
    for (size_t i = 0; i < images_.size(); ++i) {
      if (off >= images_[i].first && off + piece.size() <= images_[i].second - 8) {
        image_sums[i].Update(piece.data(), piece.size());
      }
    }
    off += piece.size();
  }
  if (s.ok() && next_field != fields_.size()) s = rocksdb::Status::Corruption("LiveKeyDB: a late field was not written");
  if (s.ok() && read_back.Digest() != written_.Digest()) {
    s = rocksdb::Status::Corruption("LiveKeyDB: " + tmp_ + " does not read back as written");
  }
  std::string trailer;
  internal::PutFixed64(&trailer, sum.Digest());
  if (s.ok()) s = f_->Write(origin_ + size_, trailer);
  if (s.ok()) s = f_->Sync();
  if (s.ok()) s = f_->Close();
  if (s.ok() && tmp_.empty()) {  // an appended segment: in place once synced
    f_.reset();
    *bytes = size_ + trailer.size();
    return s;
  }
  if (s.ok()) s = env_->RenameFile(tmp_, final_);
  if (!s.ok()) return s;  // (the destructor removes the .tmp)
  f_.reset();
  *bytes = size_ + trailer.size();
  std::unique_ptr<rocksdb::Directory> d;
  s = env_->NewDirectory(dir_, &d);
  if (s.ok()) s = d->Fsync();
  return s;
}

// Unfinished: a base's .tmp is removed; an appended segment is cut off
// (left, it would be a torn segment: ignored, as is all after it).
LiveKeyDB::Rep::StreamedIndexFile::~StreamedIndexFile() {
  if (f_ == nullptr) return;
  f_->Close().PermitUncheckedError();
  if (!tmp_.empty()) {
    env_->DeleteFile(tmp_).PermitUncheckedError();
    return;
  }
  std::unique_ptr<rocksdb::WritableFile> w;
  if (env_->ReopenWritableFile(final_, &w, rocksdb::EnvOptions()).ok()) {
    w->Truncate(origin_).PermitUncheckedError();
    w->Close().PermitUncheckedError();
  }
}

// A delta segment (FORMATS.md): the changed-block records of each index of
// the base, appended to the file and synced. A crash in the middle leaves
// a torn segment, which the load ignores with everything after it (the
// segments before it still describe a complete, older checkpoint).
std::string LiveKeyDB::Rep::DeltaHead(uint64_t seq, const std::vector<uint64_t>& ssts, size_t indexes,
                                      uint64_t body) {
  std::string h;
  internal::PutFixed64(&h, kDeltaMagic);
  internal::PutFixed64(&h, body);  // at kDeltaBodyAt: the bytes after these 16, before the checksum
  internal::PutFixed64(&h, seq);   // at kDeltaSeqAt
  internal::PutFixed32(&h, static_cast<uint32_t>(ssts.size()));
  for (uint64_t n : ssts) internal::PutFixed64(&h, n);
  internal::PutFixed32(&h, static_cast<uint32_t>(indexes));
  return h;
}

std::string LiveKeyDB::Rep::DeltaIndexHead(const SavedIndex& e, uint64_t records_bytes, size_t* size_at) {
  std::string h;
  internal::PutFixed32(&h, e.cf->id);
  internal::PutFixed64(&h, e.entries);
  if (size_at != nullptr) *size_at = h.size();
  internal::PutFixed64(&h, records_bytes);
  return h;
}

rocksdb::Status LiveKeyDB::Rep::AppendIndexDelta(uint64_t seq, const std::vector<uint64_t>& ssts,
                                                 const std::vector<SavedIndex>& deltas, uint64_t* bytes) {
  std::vector<std::string> heads(1 + deltas.size());
  uint64_t body = DeltaHead(seq, ssts, deltas.size()).size() - 16;
  for (size_t i = 0; i < deltas.size(); ++i) {
    heads[1 + i] = DeltaIndexHead(deltas[i], deltas[i].blob.size());
    body += heads[1 + i].size() + deltas[i].blob.size();
  }
  heads[0] = DeltaHead(seq, ssts, deltas.size(), body);
  std::vector<Slice> pieces{heads[0]};
  for (size_t i = 0; i < deltas.size(); ++i) {
    pieces.emplace_back(heads[1 + i]);
    pieces.emplace_back(deltas[i].blob);
  }
  std::unique_ptr<rocksdb::WritableFile> f;
  uint64_t n = 0;
  rocksdb::Status s = env->ReopenWritableFile(IndexPath(), &f, rocksdb::EnvOptions());
  s = AppendChecksummed(s, std::move(f), pieces, &n);
  if (s.ok()) {
    *bytes = n;
    rocksdb::Info(log, "LiveKeyDB: appended the changed blocks of %zu index(es), %" PRIu64
                  " bytes, at sequence %" PRIu64, deltas.size(), *bytes, seq);
  }
  return s;
}

bool LiveKeyDB::Rep::CanAppendDelta(const std::vector<CfState*>& fams) {
  const IndexFileState& f = file_state;
  if (!f.appendable || opt.kernel != ElasticKernel::kDense ||
      f.delta_bytes * 2 > std::max(f.base_bytes, f.whole_bytes) ||
      fams.size() != f.indexes.size()) {
    return false;
  }
  for (size_t i = 0; i < fams.size(); ++i) {
    // (A delta must hold every family of the base: the file's sequence
    // number becomes the delta's for all of them. An index with a stash
    // cannot be copied.)
    if (fams[i]->id != f.indexes[i].first || fams[i]->dropped || !fams[i]->owned ||
        fams[i]->owned->has_stash() || fams[i]->serial.load(std::memory_order_relaxed) != f.indexes[i].second) {
      return false;
    }
  }
  return true;
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

// Persistence respects trust (rep.h, TrustedUpTo): an index that does not
// account for the DB's state is not saved, and the file it would have
// replaced goes too (it may be a checkpoint from before the change that
// made the index untrusted). The next Open then builds from a scan (tests
// LiveKeyClosedWorld.CloseAfterBaseWrites*).
rocksdb::Status LiveKeyDB::Rep::Persist() {
  const uint64_t events = untrust_events.load(std::memory_order_acquire);
  const uint64_t verified = ledger.verified();  // before the DB's number
  // The file claims the latest sequence number: every write up to it made
  // durable first (checkpoint.cc, MakeDurable), while background work
  // still runs (a flush needs it).
  const uint64_t seq = base->GetLatestSequenceNumber();
  if (!TrustedUpTo(seq, verified)) {
    rocksdb::Warn(log, "LiveKeyDB: the index is not saved at Close: it does not account for the DB's state "
                  "(%s; sequence %" PRIu64 ", LiveKeyDB's writes account for %" PRIu64 "); the next Open rebuilds it",
                  untrusted.load() ? "a change LiveKeyDB did not see, not yet rebuilt" : "writes it did not see",
                  seq, verified);
    env->DeleteFile(IndexPath()).PermitUncheckedError();
    return rocksdb::Status::OK();
  }
  // Close aborted the build of every index (a checkpoint being brought
  // forward after a crash, a scan): no exact index to save. The file stays
  // as it is, a checkpoint the next Open brings forward again (or
  // rejects), and nothing is waited for: no WAL made durable, no
  // background work paused (a crash-Open's compactions held Close 2.5 s at
  // 5.2M keys; recovery_bench, close_right_after_open). With some indexes
  // built, those are saved below (the others are left to the next Open's
  // scan: SavableFamilies).
  bool building = false, built = false;
  {
    std::lock_guard<std::mutex> l(cf_mu);
    for (auto& kv : cfs) {
      if (!kv.second->indexed || kv.second->dropped) continue;
      if (kv.second->serving.load()) {
        built = true;
      } else {
        building = true;
      }
    }
  }
  if (building && !built) {
    rocksdb::Info(log, "LiveKeyDB: no index to persist (Close aborted its build); the index file stays");
    return rocksdb::Status::OK();
  }
  rocksdb::Status s = PersistAt(seq);
  return s.ok() ? KeepFileIfStillTrusted(events) : s;
}

rocksdb::Status LiveKeyDB::Rep::KeepFileIfStillTrusted(uint64_t events) {
  // (Every change that can make the file wrong moves untrust_events: an
  // unseen change found, a compaction filter's decision as it is made.)
  if (untrust_events.load(std::memory_order_acquire) == events && !untrusted.load(std::memory_order_acquire)) {
    return rocksdb::Status::OK();
  }
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kSaveUntrustedIndex) {
    return rocksdb::Status::OK();
  }
#endif
  env->DeleteFile(IndexPath()).PermitUncheckedError();
  file_state.appendable = false;
  return rocksdb::Status::Incomplete("LiveKeyDB: a change LiveKeyDB cannot account for came while the index "
                                     "file was written; the file is removed");
}

rocksdb::Status LiveKeyDB::Rep::PersistAt(uint64_t seq) {
  const std::vector<CfState*> fams = SavableFamilies();
  std::string identity;
  rocksdb::Status s = base->GetDbIdentity(identity);
  if (!s.ok()) return s;
  s = MakeDurable(fams);
  if (!s.ok()) return s;  // the last checkpoint, if any, stays valid
  // No compaction may change the SST set after it is recorded: the next
  // Open explains a listed file that is gone only by a compaction it saw
  // (LoadFromFile; else the file is rejected, a needless rebuild), and a
  // compaction at the bottom level zeroes sequence numbers, so its output
  // would be brought forward (needless work). (A compaction already
  // scheduled may still run between the resume below and RocksDB's own
  // Close: then the next Open rebuilds. Turning automatic compactions off
  // with SetOptions is no way out: it writes an OPTIONS file the caller
  // would reopen with, and a MANIFEST edit.) Resumed
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
  {
    // When the file's base holds these very indexes, Close appends what
    // changed since the last checkpoint (a delta), as a checkpoint would.
    std::lock_guard<std::mutex> rl(rebuild_mu);  // no swap while they are read
    if (CanAppendDelta(fams)) {
      bool copied_all = true;
      for (CfState* cf : fams) {
        SavedIndex e{cf, 0, cf->owned->sized_for(), cf->owned->entries(), std::string()};
        uint64_t copied = 0, next_block = 0;
        const DenseDLeftFilter::ImageSink append = [&e, &next_block](std::string_view piece) {
          DenseDLeftFilter::CompactRecords(piece, &next_block, &e.blob);  // (file version 6)
          return true;
        };
        if (!cf->owned->CopyChangedBlocks(append, kCheckpointChunkBlocks, &copied, nullptr)) {
          copied_all = false;
          break;
        }
        saved.push_back(std::move(e));
      }
      if (copied_all) {
        uint64_t bytes = 0;
        s = AppendIndexDelta(seq, ssts, saved, &bytes);
        if (s.ok()) {
          file_state.delta_bytes += bytes;
          return s;
        }
        rocksdb::Warn(log, "LiveKeyDB: appending to the index file failed (%s): writing it whole",
                      s.ToString().c_str());
      }
      file_state.appendable = false;
      saved.clear();
    }
  }
  file_state.appendable = false;  // (a Close writes the base whole below)
  // Dense indexes without a stash: written as a checkpoint writes a base
  // (streamed as copied, sparse while lightly filled), not copied whole
  // into memory first (after an Open from a checkpoint of a 300 MB index
  // holding 2.2M keys, Close wrote 300 MB in 2 s; recovery_bench
  // --expected_keys=200000000). The SST set stays as recorded
  // (background work is paused); a disableWAL write begun since
  // MakeDurable above (it would need a flush) sends it below, as does
  // anything else, or a refused copy.
  bool streamable = opt.kernel == ElasticKernel::kDense;
  {
    std::lock_guard<std::mutex> sl(swap_mu);
    for (CfState* cf : fams) {
      if (!cf->owned || cf->owned->has_stash()) streamable = false;
    }
  }
  if (streamable && !fams.empty()) {
    const uint64_t written = checkpoints.load();
    const rocksdb::Status cs = CheckpointOnce(/*chunked=*/true, /*may_flush=*/false);
    if (cs.ok() && checkpoints.load() != written) return cs;
    if (!cs.ok() && !cs.IsTryAgain() && !cs.IsIncomplete()) {
      rocksdb::Warn(log, "LiveKeyDB: streaming the index at Close failed (%s): writing it whole",
                    cs.ToString().c_str());
    }
  }
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

}  // namespace dlcbf
