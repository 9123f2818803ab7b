// LiveKeyDB checkpoints: the index file written while the DB runs
// (Checkpoint, after flushes and compactions, at most once per
// checkpoint_interval_seconds: background.cc) and, after a crash, the
// replay that brings a loaded checkpoint forward to the DB's state
// (ReplaySince, called by the Open-time build in rebuild.cc).
//
// Contract.
//   - A checkpoint holds every serving index at one sequence number S,
//     taken with every stripe held: each key live at S and not written
//     since has its copy (a dense table is copied in chunks after the
//     writers resume; the argument is at Checkpoint below), and every key
//     written since is past S, where ReplaySince reads. The file format,
//     its guards (DB identity, checksum, SST set, kernel, version) and the
//     load are the index file's (persistence.cc, FORMATS.md).
//   - Invariant: a file claims sequence number S only once every write up
//     to S is durable (MakeDurable, before the file is written): the WAL
//     synced, and every memtable that may hold a disableWAL write flushed.
//     So any crash recovers at least to S with every write up to S, and a
//     lost tail (disableWAL, an unsynced WAL at power loss,
//     manual_wal_flush) lies above S: its sequence numbers, reused by later
//     writes, are all above S, where ReplaySince reads. Before, a file
//     could count deletes the crash took back (loaded as exact: the keys
//     were live again and answered NotFound) or sit "ahead" of the DB until
//     reused sequence numbers passed it (tests
//     LiveKeyExactness.IndexFileNeverCountsALostTail, .RejectedFileIsRemoved).
//   - Open loads a file older than the DB as a checkpoint; ReplaySince then
//     counts every key visible in a memtable or in an SST file past S (or
//     zeroed and new to the checkpoint) once more. No key live now is
//     missed; keys written since S may be over-counted (false positives,
//     until the next rebuild). A replay that fails (a file compacted away
//     meanwhile, a read error) falls back to a full scan.
//   - Why SST files and memtables, not the WAL (GetUpdatesSince): after a
//     crash, RocksDB's recovery has already flushed or replayed the WAL
//     into them, and WAL files are deleted once flushed, so the WAL may no
//     longer hold the writes since S; the files past S always do (their
//     sequence numbers say which), and reading them needs no WAL retention
//     setting from the user.
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "rocksdb/metadata.h"
#include "rocksdb/sst_file_reader.h"

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace dlcbf {

// A checkpoint. Every stripe is held while the sequence number S, the SST
// set and the tables that are copied whole are taken, so those tables
// count every key live at S (pending checks' copies included:
// over-counts, false positives only) and no ingestion through LiveKeyDB
// can slip a file in between. The file is written after the writers
// resume.
//
// Dense-kernel tables are copied after the writers resume, in chunks of
// kCheckpointChunkBlocks blocks, the kernel's writer lock held around each
// chunk only (LiveKeyIndex::SerializeInChunks): the writers' pause is the
// stripes' short hold, not the table's copy (52.8 ms at a 300 MB index
// before). Invariant: a chunked image counts every key live at S that no
// write after S touched. The kernel counts every key live at every
// instant (its lock-free readers rely on that), so a key live throughout
// the copy has a copy at its fewest, and the image holds, per
// fingerprint, at least the fewest copies the kernel held during the copy
// (the argument: dense_dleft_serialize.cc). A key live at S and not
// written since is live throughout. A key written since S (the copy began
// after S was taken, with every stripe held: no write was in flight) is
// counted at Open by ReplaySince if it is live then: its newest entry is
// past S. So S is taken BEFORE the copy (test
// LiveKeyExactness.ChunkedCheckpointLosesNoKey, whose negative control
// takes S after it and loses the keys written in between). The copy holds
// rebuild_mu (tried, never waited for: a rebuild or a drop in progress
// sends the checkpoint back to the whole copy under the stripes), so no
// index it reads is swapped or freed meanwhile. A refused image (a
// relocation, a stash: LiveKeyIndex::SerializeInChunks) sends the whole
// checkpoint back to the copy under the stripes.
//
// No copy of the index in memory. A new base copied in chunks is streamed
// to <name>.tmp as each chunk is copied (StreamedIndexFile,
// persistence.cc): the fields known only at the end (entry counts, blob
// sizes, the images' item counts and checksums) are filled in after a
// read-back, and the file is renamed into place only after MakeDurable,
// as a file written from memory was. A crash before the rename leaves the
// last file (test LiveKeyExactness.StreamedBaseHoldsNoCopyOfTheIndex).
// The checkpoint holds one chunk (256 KiB) and the read-back buffer
// (1 MiB); a delta or a sparse base also the chunk's compact form (both
// at most 72 bytes per block: compact records, FORMATS.md), a delta the
// list of the chunk's changed blocks (8 bytes per block); a
// table copied whole under the stripes (fast kernel, an Env without
// RandomRWFile) its image (the diagnostic max_checkpoint_buffer_bytes).
//
// What changed, not the whole index. A dense index copied in chunks for a
// new base tracks its changed blocks from before that copy (a bit per
// block, set by every block write, cleared as a copy takes the block,
// both under the kernel's writer lock). While the file's base holds these
// very indexes (file_state: same families, same CfState::serial, written
// by this process, every index tracked) and its deltas stay under half
// the base, a checkpoint appends only the changed blocks, copied in
// chunks the same way (DenseDLeftFilter::CopyChangedBlocks). Base plus
// deltas then give, for every block, its content when the last copy
// passed it, ascending: a chunked image, so the invariant above holds for
// it. A delta costs 24-27 bytes per changed block at LiveKeyDB's fills
// (compact records: the zero words left out). A delta write that fails,
// a refused copy or a rebuild makes the next checkpoint a new base.
rocksdb::Status LiveKeyDB::Rep::Checkpoint() {
  rocksdb::Status s = CheckpointOnce(/*chunked=*/true);
  if (s.IsTryAgain()) s = CheckpointOnce(/*chunked=*/false);
  return s;
}

rocksdb::Status LiveKeyDB::Rep::CheckpointOnce(bool chunked, bool may_flush) {
  const std::vector<CfState*> fams = SavableFamilies();
  if (fams.empty()) return rocksdb::Status::OK();
  // (Before the trust check below: an unseen change after it removes the
  // file this checkpoint writes, KeepFileIfStillTrusted.)
  const uint64_t events = untrust_events.load(std::memory_order_acquire);
  world->WaitSettled(live_key::WorldWatch::kSettleAfter);  // (the flush that requested it, explained first)
  std::string identity;
  rocksdb::Status s = base->GetDbIdentity(identity);
  if (!s.ok()) return s;
  std::unique_lock<std::mutex> no_swaps(rebuild_mu, std::defer_lock);
  if (chunked && !no_swaps.try_lock()) chunked = false;
  // A delta (the changed blocks, appended to the file) when the file's
  // base holds these very indexes; else a new base (the whole file).
  bool delta = chunked && CanAppendDelta(fams);
  // Invariant: file_state.appendable only while every block changed since
  // the file's last segment has its bit set. A chunked copy clears the
  // bits of what it takes, and what it takes is saved only once the file
  // is written: until then (a refused copy, a failed MakeDurable or
  // write), no delta may follow (test
  // LiveKeyExactness.FailedCheckpointEndsTheDeltaChain). WriteCheckpointFile
  // sets it again.
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() != internal::LiveKeyFault::kDeltaChainSurvivesFailure)
#endif
    file_state.appendable = false;
  std::vector<SavedIndex> saved;
  std::vector<bool> saved_later;  // saved[i] is copied in chunks, after the stripes
  std::vector<uint64_t> ssts;
  std::vector<bool> in_chunks(fams.size(), false);
  // A base of an index with fewer entries than half its blocks is written
  // sparse (the blocks in use only: DenseDLeftFilter::ImageLayout): a
  // fresh index's first base is a few MB, not the whole table.
  std::vector<bool> sparse(fams.size(), false);
  bool tracked = chunked;  // every index of a new base tracks its changed blocks
  uint64_t seq = 0;
  // A new base copied in chunks is streamed to its file as it is copied
  // (StreamedIndexFile: no copy of an index in memory). An Env without
  // RandomRWFile gets the copy under the stripes instead.
  // A delta is streamed the same way, appended to the file.
  std::unique_ptr<StreamedIndexFile> out;
  if (chunked) {
    out.reset(new StreamedIndexFile);
    const rocksdb::Status os = delta ? out->OpenAppend(env, IndexPath()) : out->Open(env, dbname, opt.index_file_name);
    if (!os.ok()) {
      rocksdb::Info(log, "LiveKeyDB: the checkpoint copies with the writers paused: %s", os.ToString().c_str());
      out.reset();
      chunked = false;
      delta = false;
    }
  }
  // The blobs' memory for the tables copied under the stripes is
  // allocated and touched before the writers pause: that copy then only
  // copies (no page faults). (A delta's records are allocated as they
  // come.)
  std::vector<std::string> buffers(fams.size());
  {
    std::lock_guard<std::mutex> sl(swap_mu);
    for (size_t i = 0; i < fams.size(); ++i) {
      if (fams[i]->dropped || !fams[i]->owned) continue;
      // (An index with a stash is not saved: Serialize below skips it
      // without a copy.)
      in_chunks[i] = chunked && opt.kernel == ElasticKernel::kDense && !fams[i]->owned->has_stash();
      if (delta) continue;
      LiveKeyCfStats c;
      fams[i]->owned->Describe(&c);
      sparse[i] = in_chunks[i] && fams[i]->owned->entries() * 2 < c.bytes / 64;
      if (!in_chunks[i]) {
        buffers[i].resize(c.bytes + 4096);
        buffers[i].clear();  // (keeps the touched capacity)
      }
      // From before its copy begins: a block written after the copy took
      // it is in the next delta (the copy clears each block's bit as it
      // takes the block).
      // Deltas follow only a base whose every index tracks its changes:
      // a fast-kernel index (copied whole) has no changed-block copy.
      if (!in_chunks[i] || !fams[i]->owned->TrackChangedBlocks()) tracked = false;
    }
  }
  const auto p0 = std::chrono::steady_clock::now();
  {
    // Stripes first, then swap_mu: the order of Rebuild and
    // DropColumnFamily (the stripes alone already keep `owned` in place).
    AllStripesGuard all(this);
    std::lock_guard<std::mutex> sl(swap_mu);
    // Persistence respects trust (rep.h, TrustedUpTo): with every stripe
    // held no LiveKeyDB write is between its base write and its ledger
    // entry (an ingestion into unindexed families aside: then no
    // checkpoint this time).
    const uint64_t verified = ledger.verified();  // before the DB's number
    seq = base->GetLatestSequenceNumber();
    if (!TrustedUpTo(seq, verified)) {
      s = rocksdb::Status::Incomplete("LiveKeyDB: no checkpoint while the index does not account for the DB");
    }
    if (s.ok()) s = LiveSsts(&ssts, nullptr);
    for (size_t i = 0; i < fams.size(); ++i) {
      CfState* cf = fams[i];
      if (!s.ok() || cf->dropped || !cf->owned) continue;
      SavedIndex e{cf, sparse[i] ? LiveKeyIndex::kSparseCompactDenseKind : LiveKeyIndex::KindOf(opt.kernel),
                   cf->owned->sized_for(), cf->owned->entries(), std::move(buffers[i])};
      if (in_chunks[i] || cf->owned->Serialize(&e.blob, &e.kind)) {
        saved.push_back(std::move(e));
        saved_later.push_back(in_chunks[i]);
      }
    }
  }
  const uint64_t pause_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - p0).count());
  last_checkpoint_pause_us.store(pause_us, std::memory_order_relaxed);
  uint64_t prev = max_checkpoint_pause_us.load(std::memory_order_relaxed);
  while (pause_us > prev && !max_checkpoint_pause_us.compare_exchange_weak(prev, pause_us)) {
  }
  if (s.IsIncomplete()) {
    rocksdb::Info(log, "%s (sequence %" PRIu64 ")", s.ToString().c_str(), seq);
    return rocksdb::Status::OK();  // (the next one, once rebuilt; the file was removed when trust was lost)
  }
  if (!s.ok()) return s;
  if (chunked) {
    std::function<void(uint64_t)> between;
    uint64_t chunk_blocks = kCheckpointChunkBlocks;
#ifdef DLCBF_TESTING
    between = [](uint64_t blocks) { internal::RunLiveKeyCheckpointChunkHookForTesting(blocks); };
    if (internal::GetLiveKeyCheckpointChunkBlocksForTesting() != 0) {
      chunk_blocks = internal::GetLiveKeyCheckpointChunkBlocksForTesting();
    }
#endif
    const DenseDLeftFilter::ImageSink sink = [&out](std::string_view piece) {
      return out->Append(Slice(piece.data(), piece.size())).ok();
    };
    // The file's head or the segment's, then per index its head (its
    // entry count and blob size filled in at the end) and its image or
    // records as they are copied; a delta's body length at the end too.
    out->Append(delta ? DeltaHead(seq, ssts, saved.size()) : FileHead(seq, identity, ssts, saved.size()));
    for (size_t i = 0; i < saved.size(); ++i) {
      SavedIndex& e = saved[i];
      size_t entries_at = 0, size_at = 0;
      const uint64_t head_at = out->size();
      out->Append(delta ? DeltaIndexHead(e, 0, &size_at) : IndexHead(e, e.blob.size(), &entries_at, &size_at));
      if (!saved_later[i]) {  // (a base's table copied whole under the stripes)
        out->Append(e.blob);
        continue;
      }
      // rebuild_mu keeps e.cf->owned in place (no swap, no drop). A
      // delta's records are written compact (file version 6), each chunk
      // as it is copied.
      uint64_t copied = 0, next_block = 0;
      std::string compact;
      const DenseDLeftFilter::ImageSink compact_sink = [&sink, &compact, &next_block](std::string_view piece) {
        compact.clear();
        DenseDLeftFilter::CompactRecords(piece, &next_block, &compact);
        return sink(compact);
      };
      const uint64_t begin = out->size();
      const bool ok = delta ? e.cf->owned->CopyChangedBlocks(compact_sink, chunk_blocks, &copied, &between)
                            : e.cf->owned->SerializeInChunks(sink, &e.kind, &e.entries, chunk_blocks, &between,
                                                             LiveKeyIndex::IsSparseKind(e.kind));
      if (!out->status().ok()) return out->status();  // an I/O error
      if (!ok) return rocksdb::Status::TryAgain("LiveKeyDB: a chunked copy was refused");
      out->Late(head_at + size_at, out->size() - begin);
      if (!delta) {
        out->Late(head_at + entries_at, e.entries);
        out->LateImage(begin, out->size(), e.entries);
      }
    }
    if (delta) out->Late(kDeltaBodyAt, out->size() - kDeltaBodyAt - 8);
    const bool any_sparse = std::find(sparse.begin(), sparse.end(), true) != sparse.end();
    // (A delta also lists a chunk's changed blocks, 8 bytes each:
    // DenseDLeftFilter::CopyChangedBlocks.)
    NoteCheckpointBuffer((delta || any_sparse ? 2 * 72 : 64) * chunk_blocks + (delta ? 8 * chunk_blocks : 0) +
                         StreamedIndexFile::kReadBackBytes);
#ifdef DLCBF_TESTING
    if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kCheckpointSeqAfterCopy) {
      seq = base->GetLatestSequenceNumber();
      s = LiveSsts(&ssts, nullptr);
      if (!s.ok()) return s;
      out->Late(delta ? kDeltaSeqAt : kHeadSeqAt, seq);
    }
#endif
  }
  if (no_swaps.owns_lock()) no_swaps.unlock();
  if (saved.empty()) return rocksdb::Status::OK();  // keep the last good one
  s = MakeDurable(fams, may_flush);
  if (!s.ok()) return s;  // the last good one stays
  uint64_t held = 0;
  for (const SavedIndex& e : saved) held += e.blob.capacity();
  NoteCheckpointBuffer(held);
  s = WriteCheckpointFile(delta, tracked && saved.size() == fams.size(), seq, identity, ssts, saved, out.get());
  return s.ok() ? KeepFileIfStillTrusted(events) : s;
}

void LiveKeyDB::Rep::NoteCheckpointBuffer(uint64_t bytes) {
  uint64_t prev = max_checkpoint_buffer_bytes.load(std::memory_order_relaxed);
  while (bytes > prev && !max_checkpoint_buffer_bytes.compare_exchange_weak(prev, bytes)) {
  }
}

// Writes a checkpoint's file (a delta appended, or a new base) and keeps
// file_state: a new base copied in chunks with every index tracked may be
// followed by deltas; anything else, or any failure (the file may then no
// longer be the base plus deltas this process knows), may not.
rocksdb::Status LiveKeyDB::Rep::WriteCheckpointFile(bool delta, bool appendable, uint64_t seq,
                                                    const std::string& identity, const std::vector<uint64_t>& ssts,
                                                    const std::vector<SavedIndex>& saved,
                                                    StreamedIndexFile* streamed) {
  if (delta && saved.size() != file_state.indexes.size()) {
    // (Cannot happen: CanAppendDelta held rebuild_mu's families fixed.) A
    // delta missing a family would claim its sequence number for it too.
    file_state.appendable = false;
    return rocksdb::Status::Corruption("LiveKeyDB: a delta without every family of the base");
  }
  uint64_t bytes = 0;
  rocksdb::Status s = streamed ? streamed->Finish(&bytes)
                      : delta  ? AppendIndexDelta(seq, ssts, saved, &bytes)
                               : WriteIndexFile(seq, identity, ssts, saved, &bytes);
  if (s.ok() && streamed != nullptr) {
    rocksdb::Info(log, "LiveKeyDB: %s %zu index(es) as copied, %" PRIu64 " bytes, at sequence %" PRIu64,
                  delta ? "appended the changed blocks of" : "saved", saved.size(), bytes, seq);
  }
  IndexFileState& f = file_state;
  if (!s.ok()) {
    f.appendable = false;
    return s;
  }
  if (delta) {
    f.appendable = true;  // (CanAppendDelta held: the base is these indexes')
    f.delta_bytes += bytes;
    checkpoint_deltas.fetch_add(1);
  } else {
    f.appendable = appendable;
    f.base_bytes = bytes;
    f.whole_bytes = IndexBytes();
    f.delta_bytes = 0;
    f.indexes.clear();
    for (const SavedIndex& e : saved) f.indexes.emplace_back(e.cf->id, e.cf->serial.load(std::memory_order_relaxed));
  }
  checkpoints.fetch_add(1);
  checkpoint_bytes.fetch_add(bytes);
  last_checkpoint_bytes.store(bytes);
  last_checkpoint_seq.store(seq);
  return s;
}

// Called after the sequence number S a file will claim was taken. The WAL
// holds every WAL write up to S (RocksDB appends to it before it publishes
// a sequence number): FlushWAL(sync) makes them durable (and writes out a
// manual_wal_flush buffer). A disableWAL write is durable only in an SST
// file: when one was begun since the last flush made here (NoteWrite counts
// them before they write, so one with a sequence number <= S was counted
// before S was taken), every indexed family is flushed (`fams`, the
// families saved now, and the others alike), which writes out every
// memtable entry up to S. Cost: one WAL sync per checkpoint, and a flush
// only after disableWAL writes.
rocksdb::Status LiveKeyDB::Rep::MakeDurable([[maybe_unused]] const std::vector<CfState*>& fams, bool may_flush) {
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kCheckpointWithoutDurability) {
    return rocksdb::Status::OK();
  }
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kMakeDurableFails ||
      internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kDeltaChainSurvivesFailure) {
    return rocksdb::Status::IOError("LiveKeyDB test: MakeDurable fails");
  }
#endif
  // Finished first: a write that finishes after this read may have missed
  // the flush below, and is not counted as flushed.
  uint64_t done = nowal_done.load(std::memory_order_acquire);
  const uint64_t begun = nowal_writes.load(std::memory_order_acquire);
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kNoWalDurableAtBegin) done = begun;
#endif
  if (begun != nowal_durable && !may_flush) return rocksdb::Status::Incomplete("LiveKeyDB: a flush is needed");
  if (begun != nowal_durable) {
    // Every indexed family, not only those saved now: nowal_durable then
    // covers each disableWAL write, whichever family it went to (a family
    // whose index is still being built is saved by a later file, which
    // relies on this flush; test
    // LiveKeyExactness.NoWalWriteToAFamilyNotYetServing).
    std::vector<ColumnFamilyHandle*> hs;
    {
      std::lock_guard<std::mutex> l(cf_mu);
      for (auto& kv : cfs) {
        const CfState* cf = kv.second.get();
#ifdef DLCBF_TESTING
        if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kDurableFlushesSavedFamiliesOnly &&
            std::find(fams.begin(), fams.end(), cf) == fams.end()) {
          continue;
        }
#endif
        if (cf->indexed && !cf->dropped && cf->handle != nullptr) hs.push_back(cf->handle);
      }
    }
    rocksdb::FlushOptions fo;
    fo.wait = true;
    fo.allow_write_stall = true;
    rocksdb::Status s = hs.empty() ? rocksdb::Status::OK() : base->Flush(fo, hs);
    if (!s.ok()) return s;
    nowal_durable = done;
  }
  rocksdb::Status s = base->FlushWAL(/*sync=*/true);
  if (s.IsNotSupported()) s = base->FlushWAL(/*sync=*/false);  // (an Env without sync: process crashes only)
  return s;
}

// Brings a checkpoint taken at `seq` forward to `snap` without reading the
// DB: every key visible at `snap` in one of the family's memtables or in an
// SST file whose largest sequence number is past `seq` (or that is zeroed
// and new to the checkpoint) is counted once more, once however many of
// those sources hold it.
//
// Why no read is needed. A key live at `snap` was live at the checkpoint
// (the checkpoint counts it) or was last written after it; then its newest
// entry, a Put, Merge or entity past `seq`, is in a memtable or in a file
// past `seq`, and is visible there at `snap` (a source's iterator shows the
// newest entry it holds; Merge operands resolve without their base). So
// every key written since gets a copy. What is over-counted (false
// positives only, removed by the next rebuild): a key live at the
// checkpoint and written since (two copies), and a key visible in an older
// source but deleted in a newer one (a stale copy). Reading each key's
// state at `snap` (a MultiGet per 256 keys, the earlier design) removed
// only the second kind, at the cost of a point read per key; the keys now
// go to the index 1024 at a time (LiveKeyIndex::InsertBatch).
//
// Order: the memtable iterator first, then the file list. The iterator
// pins the memtables it reads, so a key that a flush moves to a file after
// the listing is still read from its memtable; one flushed before it is
// in a listed file. A listed file compacted away before it is opened fails
// the replay (a full scan decides instead).
//
// Cost: the keys written since the checkpoint (the files past it hold
// little else), not the DB.
rocksdb::Status LiveKeyDB::Rep::ReplaySince(CfState* cf, uint64_t seq, const rocksdb::Snapshot* snap,
                                           LiveKeyIndex* idx, uint64_t* keys) {
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kSkipCheckpointReplay) {
    return rocksdb::Status::OK();
  }
#endif
  ReadOptions at;
  at.snapshot = snap;
  ReadOptions mem = at;
  mem.read_tier = rocksdb::kMemtableTier;
  // Every memtable kind in key order: a hash memtable (a prefix extractor
  // with NewHashSkipListRepFactory or NewHashLinkListRepFactory) iterated
  // without total_order_seek follows prefix-seek rules, and SeekToFirst
  // yields nothing (test LiveKeyClosedWorld.HashMemtableReplayLosesNoKey).
  mem.total_order_seek = true;
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kReplayWithoutTotalOrder) {
    mem.total_order_seek = false;
  }
#endif
  std::unique_ptr<Iterator> mit(base->NewIterator(mem, cf->handle));
  mit->SeekToFirst();
  const bool memtable_keys = mit->Valid();
  std::vector<rocksdb::LiveFileMetaData> files, sources;
  base->GetLiveFilesMetaData(&files);
  for (const auto& f : files) {
    if (f.column_family_name != cf->name) continue;
    // Written after the checkpoint, or zeroed (sequence number 0) and new
    // to it: a zeroed file may hold keys of any age (persistence.cc).
    std::string name = f.name;
    while (!name.empty() && name[0] == '/') name.erase(0, 1);
    const uint64_t number = std::strtoull(name.c_str(), nullptr, 10);
    const bool zeroed_and_new =
        f.smallest_seqno == 0 &&
        !std::binary_search(cf->checkpoint_ssts.begin(), cf->checkpoint_ssts.end(), number);
    if (f.largest_seqno <= seq && !zeroed_and_new) continue;
    sources.push_back(f);
    sources.back().name = name;
    rocksdb::Info(log, "LiveKeyDB: checkpoint of '%s' at sequence %" PRIu64 ": reading %s (level %d, "
                  "sequence numbers %" PRIu64 "-%" PRIu64 "%s)", cf->name.c_str(), seq, name.c_str(), f.level,
                  static_cast<uint64_t>(f.smallest_seqno), static_cast<uint64_t>(f.largest_seqno),
                  zeroed_and_new ? ", zeroed and new to the checkpoint" : "");
  }
  // A key is counted once however many sources hold it; within one source
  // (sorted, one entry per key) it cannot repeat, so with a single source
  // nothing is remembered. (Not by hash: two keys of one 64-bit hash need
  // two copies.)
  const bool dedup = sources.size() + (memtable_keys ? 1 : 0) > 1;
  std::unordered_set<std::string> seen;
  std::vector<uint64_t> batch;
  std::vector<OpResult> results(1024);
  batch.reserve(1024);
  auto flush = [&]() -> rocksdb::Status {
    rocksdb::Status s = idx->InsertBatch(batch.data(), batch.size(), results.data());
    *keys += batch.size();
    batch.clear();
    cf->scanned.store(*keys, std::memory_order_relaxed);
    return s;
  };
  auto add = [&](const Slice& k) -> rocksdb::Status {
    if (dedup && !seen.insert(k.ToString()).second) return rocksdb::Status::OK();
    batch.push_back(Hash(k));
    return batch.size() == 1024 ? flush() : rocksdb::Status::OK();
  };
  const rocksdb::Options cf_opts = base->GetOptions(cf->handle);
  rocksdb::Status s;
  for (const auto& f : sources) {
    rocksdb::SstFileReader reader(cf_opts);
    s = reader.Open(f.db_path + "/" + f.name);
    if (!s.ok()) return s;  // (compacted away meanwhile: a full scan decides)
    ReadOptions fro = at;
    fro.fill_cache = false;
    fro.readahead_size = 2 << 20;
    std::unique_ptr<Iterator> fit(reader.NewIterator(fro));
    for (fit->SeekToFirst(); s.ok() && fit->Valid(); fit->Next()) {
      s = add(fit->key());
      // Close does not wait for a replay (it keeps the last file): the
      // build is aborted, as a scan is (recovery_bench's close figure).
      if (closing.load(std::memory_order_relaxed)) s = rocksdb::Status::Aborted("LiveKeyDB: closing");
    }
    if (s.ok()) s = fit->status();
    if (!s.ok()) return s;
  }
  for (; s.ok() && mit->Valid(); mit->Next()) {
    s = add(mit->key());
    if (closing.load(std::memory_order_relaxed)) s = rocksdb::Status::Aborted("LiveKeyDB: closing");
  }
  if (s.ok()) s = mit->status();
  if (s.ok() && !batch.empty()) s = flush();
  rocksdb::Info(log, "LiveKeyDB: brought the checkpoint of '%s' at sequence %" PRIu64 " forward: %" PRIu64
                " keys counted (%s)", cf->name.c_str(), seq, *keys, s.ToString().c_str());
  return s;
}

}  // namespace dlcbf
