// LiveKeyDB's index file read at Open: LoadFromFile checks a file (format,
// checksum, identity, seed, the SST set: persistence.cc says what makes it
// trusted), applies its delta segments in order and brings a checkpoint
// forward. The save side and the format's comment: persistence.cc; the
// byte layout: filter_policy/FORMATS.md, "LiveKeyDB index file".
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

bool GetString32(internal::Decoder* d, std::string* out) {
  uint32_t n = 0;
  if (!d->Get32(&n) || n > d->remaining()) return false;
  out->assign(d->data(), n);
  return d->Skip(n);
}

// The file in one buffer of its size, read 4 MiB at a time in place
// (rocksdb::ReadFileToString reads 8 KiB at a time into a growing string:
// 1.4 s for a 300 MB index file on the 2-vCPU VM, recovery_bench
// --expected_keys=200000000).
// The index file's bytes, read whole into memory mapped for them
// (internal::AllocateZeroedTable: 2 MiB pages where the kernel gives them).
// Not a std::string: its zero-fill faults every 4 KiB page in first, and
// on a VM whose page faults are slow that costs ten times the read (a
// 97 MB file: 0.39-0.41 s into a std::string, 0.016-0.035 s into huge
// pages; 2-vCPU Zen 5 VM, 2026-11-28).
class FileBytes {
 public:
  FileBytes() = default;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes() { internal::FreeTable(p_, capacity_); }
  bool Allocate(size_t n) {
    p_ = static_cast<char*>(internal::AllocateZeroedTable(n));
    capacity_ = n;
    size_ = 0;
    return p_ != nullptr;
  }
  char* buffer() { return p_; }
  const char* data() const { return p_; }
  size_t size() const { return size_; }
  void set_size(size_t n) { size_ = n; }

 private:
  char* p_ = nullptr;
  size_t capacity_ = 0, size_ = 0;
};

rocksdb::Status ReadWholeFile(rocksdb::Env* env, const std::string& path, FileBytes* data) {
  uint64_t size = 0;
  rocksdb::Status s = env->GetFileSize(path, &size);
  std::unique_ptr<rocksdb::SequentialFile> f;
  if (s.ok()) s = env->NewSequentialFile(path, &f, rocksdb::EnvOptions());
  if (!s.ok()) return s;
  if (size > internal::PhysicalMemoryBytes() || !data->Allocate(static_cast<size_t>(size))) {
    return rocksdb::Status::MemoryLimit("LiveKeyDB: the index file (" + std::to_string(size) +
                                        " bytes) does not fit in memory");
  }
  constexpr size_t kPiece = 4 << 20;
  size_t at = 0;
  while (at < size) {
    const size_t want = std::min<size_t>(kPiece, static_cast<size_t>(size) - at);
    Slice got;
    s = f->Read(want, &got, data->buffer() + at);
    if (!s.ok()) return s;
    if (got.size() == 0) break;  // (shorter than its size said: what was read is checked as any file)
    if (got.data() != data->buffer() + at) std::memmove(data->buffer() + at, got.data(), got.size());
    at += got.size();
  }
  data->set_size(at);
  return rocksdb::Status::OK();
}


}  // namespace

void LiveKeyDB::Rep::LoadFromFile(std::vector<CfState*>* loaded, bool deferred) {
  const std::string path = IndexPath();
  // (The compactions since Open are remembered for this load only.)
  struct StopRemembering {
    live_key::WorldWatch* w;
    ~StopRemembering() {
      if (w != nullptr) w->StopRemembering();
    }
  } stop_remembering{world.get()};
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
  const auto t_read = std::chrono::steady_clock::now();
  FileBytes data;
  rocksdb::Status s = ReadWholeFile(env, path, &data);
  if (!s.ok()) return Reject("unreadable: " + s.ToString());
  rocksdb::Info(log, "LiveKeyDB: read the index file, %zu bytes, in %.3f s", data.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count());
  if (data.size() < 8 + 4 + 8 + 8 + 4 + 4 + 4 + 8) return Reject("truncated");
  // The base: header, SST set, entries, checksum (version 4: the whole
  // file; 5: then the delta segments).
  internal::Decoder d(data.data(), data.size());
  uint64_t magic = 0, seq = 0, seed = 0;
  uint32_t version = 0, n_ssts = 0, n = 0;
  std::string identity;
  if (!d.Get64(&magic) || magic != kFileMagic) {
    return Reject(internal::HashKey(data.data(), data.size() - 8, kFileChecksumSeed) !=
                          internal::DecodeFixed64(data.data() + data.size() - 8)
                      ? "checksum mismatch (corrupt file)"
                      : "bad magic");
  }
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
  if (version != kFileVersion && version != kFileVersionWith72ByteRecords && version != kFileVersionWithoutDeltas) {
    return Reject("unsupported version " + std::to_string(version));
  }
  struct Entry {
    uint32_t id;
    std::string name;
    uint64_t sized_for, entries;
    uint8_t kind;
    Slice blob;
    std::vector<Slice> patches;  // changed-block records of each delta, in order (in `data`)
  };
  std::vector<Entry> entries;
  std::vector<uint64_t> saved_ssts;
  bool parsed = d.Get64(&seq) && d.Get64(&seed) && GetString32(&d, &identity) && d.Get32(&n_ssts) &&
                n_ssts <= d.remaining() / 8;
  if (parsed) {
    saved_ssts.resize(n_ssts);
    for (uint64_t& f : saved_ssts) d.Get64(&f);
    parsed = d.Get32(&n);
  }
  for (uint32_t i = 0; parsed && i < n; ++i) {
    Entry e{0, std::string(), 0, 0, 0, Slice(), {}};
    uint64_t len = 0;
    parsed = d.Get32(&e.id) && GetString32(&d, &e.name) && d.Get64(&e.sized_for) && d.Get64(&e.entries) &&
             d.Get8(&e.kind) && d.Get64(&len) && len <= d.remaining();
    if (parsed) {
      e.blob = Slice(d.data(), static_cast<size_t>(len));
      d.Skip(static_cast<size_t>(len));
      entries.push_back(std::move(e));
    }
  }
  const size_t base_end = data.size() - d.remaining();
  if (!parsed || d.remaining() < 8) {
    return Reject(internal::HashKey(data.data(), data.size() - 8, kFileChecksumSeed) !=
                          internal::DecodeFixed64(data.data() + data.size() - 8)
                      ? "checksum mismatch (corrupt file)"
                      : "truncated entry");
  }
  if (internal::HashKey(data.data(), base_end, kFileChecksumSeed) != internal::DecodeFixed64(d.data())) {
    return Reject("checksum mismatch (corrupt file)");
  }
  d.Skip(8);
  if (version == kFileVersionWithoutDeltas && d.remaining() != 0) {
    return Reject("trailing bytes after a version 4 file");
  }
  // The delta segments, in order, each checksummed. The first that is
  // torn (a crash while it was appended) or corrupt ends the file: the
  // segments before it describe a complete, older checkpoint, and the
  // keys written since are read back as from any checkpoint.
  uint32_t segments = 0;
  while (d.remaining() > 0) {
    const char* seg = d.data();
    uint64_t dmagic = 0, body = 0;
    const bool whole = d.remaining() >= 16 && d.Get64(&dmagic) && dmagic == kDeltaMagic && d.Get64(&body) &&
                       body <= d.remaining() && d.remaining() - body >= 8 &&
                       internal::HashKey(seg, 16 + body, kFileChecksumSeed) ==
                           internal::DecodeFixed64(seg + 16 + body);
    if (!whole) {
#ifdef DLCBF_TESTING
      // The negative control of LiveKeyExactness.TornDeltaLosesNoKey: the
      // torn segment's sequence number (if its bytes are there) is taken.
      if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kTornDeltaKeepsItsSeq &&
          dmagic == kDeltaMagic && static_cast<size_t>(data.data() + data.size() - seg) >= 24) {
        seq = internal::DecodeFixed64(seg + 16);
      }
#endif
      rocksdb::Warn(log, "LiveKeyDB: the index file's delta segment %u is torn or corrupt (%zu bytes "
                    "left): it and what follows are ignored; the checkpoint before it is loaded",
                    segments + 1, static_cast<size_t>(data.data() + data.size() - seg));
      break;
    }
    internal::Decoder b(seg + 16, static_cast<size_t>(body));
    uint64_t dseq = 0;
    uint32_t dn_ssts = 0, dn = 0;
    std::vector<uint64_t> dssts;
    bool ok = b.Get64(&dseq) && b.Get32(&dn_ssts) && dn_ssts <= b.remaining() / 8;
    if (ok) {
      dssts.resize(dn_ssts);
      for (uint64_t& f : dssts) b.Get64(&f);
      ok = b.Get32(&dn);
    }
    std::vector<std::pair<size_t, Slice>> adds;
    for (uint32_t i = 0; ok && i < dn; ++i) {
      uint32_t id = 0;
      uint64_t count = 0, len = 0;
      ok = b.Get32(&id) && b.Get64(&count) && b.Get64(&len) && len <= b.remaining();
      size_t at = entries.size();
      for (size_t k = 0; ok && k < entries.size(); ++k) {
        if (entries[k].id == id) at = k;
      }
      ok = ok && at < entries.size();
      if (ok) {
        adds.emplace_back(at, Slice(b.data(), static_cast<size_t>(len)));
        entries[at].entries = count;
        b.Skip(static_cast<size_t>(len));
      }
    }
    // Every family of the base, once: the segment's sequence number is
    // then true of each.
    std::vector<bool> listed(entries.size(), false);
    for (const auto& a : adds) {
      if (listed[a.first]) ok = false;
      listed[a.first] = true;
    }
    ok = ok && adds.size() == entries.size();
    if (!ok || b.remaining() != 0) return Reject("a checksummed delta segment does not parse");
    for (const auto& a : adds) {
      if (!a.second.empty()) entries[a.first].patches.push_back(a.second);  // (version 6: compact records)
    }
    seq = dseq;
    saved_ssts = std::move(dssts);
    d.Skip(static_cast<size_t>(body) + 8);
    ++segments;
  }
  if (segments > 0) {
    rocksdb::Info(log, "LiveKeyDB: the index file holds a base and %u delta segment(s); sequence %" PRIu64,
                  segments, seq);
  }
  std::string db_identity;
  if (!base->GetDbIdentity(db_identity).ok() || db_identity != identity) {
    return Reject("written for another DB (identity differs)");
  }
  // (Deferred: the DB as Open recovered it. A file ahead of that, e.g. a
  // DB restored from an older copy or a lost WAL tail, claims writes the
  // DB does not hold; writes since Open would otherwise pass it and the
  // replay, which reads only past the file, would miss what it counted
  // wrongly.)
  const uint64_t latest = deferred ? open_seq : base->GetLatestSequenceNumber();
  if (seq > latest) {
    return Reject("saved at sequence " + std::to_string(seq) + ", ahead of the DB at " +
                  std::to_string(latest) + " (a DB restored from an older copy?)");
  }
  // Older than the DB: a checkpoint, brought forward by reading the keys
  // written since (checkpoint.cc, ReplaySince). Equal: exact as it is (unless
  // an SST file below says otherwise).
  if (seed != opt.seed) return Reject("hash seed differs from index_options.seed");
  std::sort(saved_ssts.begin(), saved_ssts.end());
  std::vector<uint64_t> now_ssts, now_smallest;
  s = LiveSsts(&now_ssts, &now_smallest);
  if (!s.ok()) return Reject("cannot list live SST files: " + s.ToString());
  bool checkpoint = seq < latest;
  // The closed world (world_watch.h): a file the index file lists that the
  // DB no longer holds is explained only by a compaction since Open, or,
  // for a checkpoint, by one before the crash. A saved index (equal
  // sequence numbers) whose file went otherwise (DeleteFilesInRange by
  // another program while LiveKeyDB was closed) may miss keys the drop
  // uncovered, which no replay reads: rebuilt (test
  // LiveKeyClosedWorld.FilesDroppedWhileClosedAreNotTrusted).
  bool check_removed = !checkpoint;
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kIgnoreTableFileChanges) check_removed = false;
#endif
  if (check_removed) {
    for (uint64_t f : saved_ssts) {
      if (!std::binary_search(now_ssts.begin(), now_ssts.end(), f) && !world->RemovedByCompaction(f)) {
        return Reject("SST file " + std::to_string(f) + " it lists is gone and no compaction since Open removed it "
                      "(DeleteFilesInRange or a file deleted while LiveKeyDB was closed?)");
      }
    }
  }
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
  for (Entry& e : entries) {
    const uint32_t id = e.id;
    const std::string& name = e.name;
    const uint64_t sized_for = e.sized_for;
    uint64_t entries_count = e.entries;
    CfState* cf = FindState(id);
    if (cf == nullptr || cf->dropped || cf->name != name) {
      this->Reject("entry for column family " + std::to_string(id) + " '" + name + "' has no match");
      continue;
    }
    // Deferred (read by the first background build, not by Open): every
    // family not serving has a stand-in that took the writes since Open,
    // so the file is a checkpoint whatever its sequence number, brought
    // forward by the build over those writes too (they are past it).
    if (!cf->indexed || (deferred ? cf->dropped || cf->serving.load(std::memory_order_acquire) : cf->owned != nullptr)) {
      continue;
    }
    // A sparse base or deltas: the dense table built in place from the
    // records (its cost follows the file, not the table); else the image.
    const auto t_load = std::chrono::steady_clock::now();
    std::unique_ptr<LiveKeyIndex> idx;
    const bool sparse = LiveKeyIndex::IsSparseKind(e.kind);
    if (sparse || !e.patches.empty()) {
      if (!sparse && e.kind != LiveKeyIndex::KindOf(ElasticKernel::kDense)) {
        s = rocksdb::Status::Corruption("delta segments on a kernel that writes none");
      } else {
        s = LiveKeyIndex::LoadDense(e.blob, e.kind, e.patches, /*compact_runs=*/version != kFileVersionWith72ByteRecords,
                                    opt, sized_for, &entries_count, &epochs, &idx);
      }
    } else {
      s = LiveKeyIndex::Load(e.blob, e.kind, opt, sized_for, entries_count, &epochs, &idx);
    }
    if (!s.ok()) {
      this->Reject("index of '" + name + "': " + s.ToString());
      continue;
    }
    if (checkpoint || deferred) {
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
    rocksdb::Info(log, "LiveKeyDB: loaded the index of '%s' (%" PRIu64 " entries) at sequence %" PRIu64
                  " in %.3f s%s",
                  name.c_str(), entries_count, seq,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count(),
                  checkpoint || deferred ? " (a checkpoint: the keys written since are read next)" : "");
    if (checkpoint) {
      std::string list;
      for (uint64_t f : saved_ssts) list += " " + std::to_string(f);
      rocksdb::Info(log, "LiveKeyDB: the checkpoint's SST set:%s", list.c_str());
    }
  }
}


}  // namespace dlcbf
