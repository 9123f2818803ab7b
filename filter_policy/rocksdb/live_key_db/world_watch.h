// LiveKeyDB's world watch: the EventListener that accounts for every table
// file that appears in or disappears from the DB, so that a change which
// moves no sequence number (an ingestion at global sequence number 0, a
// file dropped by DeleteFilesInRange over older versions of its keys) is
// detected like a write LiveKeyDB never saw. It also tells the Rep that a
// flush or compaction completed (a checkpoint may be due). Internal to
// filter_policy/rocksdb/live_key_db/.
//
// Design note
//   The sequence-number ledger (seq_ledger.h) proves that every sequenced
//   write is LiveKeyDB's. Two kinds of change make keys visible without a
//   sequence number: a table file that appears (an ingestion at the bottom
//   level takes global sequence number 0) and a table file that disappears
//   while older versions of its keys stay below it (DeleteFilesInRange(s),
//   DeleteFile: a file of Deletes goes, the Puts under it are live again).
//   Both are version edits, and RocksDB writes every version edit to the
//   MANIFEST and syncs it before it installs the new version.
//
//   Edits are serialized. VersionSet::ProcessManifestWrites writes and
//   syncs a group of edits with the DB mutex released, locks it, installs
//   the versions, and only then lets the next group write (7.8.3 and
//   11.8.1, db/version_set.cc). So when the MANIFEST sync of edit g is
//   reported (OnFileSyncFinish, on the writing thread), every edit before
//   g is installed and g is not: the DB's file list read there is the
//   state just before g.
//
//   Protocol. At that report the watch reads the file list (the DB mutex
//   is free there), explains what changed since it last looked, records
//   the list's signature (file numbers and levels) as "before g", and
//   counts g as written (edits_). Readers trust the index only while every
//   written edit is settled (Settled(): two atomic loads): g is counted
//   before it is installed, so no read sees g's effect as settled. The
//   reconciler (a thread of the watch, woken by every report and event)
//   settles g once a file list read after g's report differs from "before
//   g" (g is installed: only an edit changes the list, and g is the last)
//   and every change in it is explained; an edit that changes no file or
//   level (a column family created, WAL bookkeeping) is settled 1 s after
//   its report (kSettleAfter: its install follows the sync at once). A
//   file an event named after a list was read is not judged by that list
//   (the list may predate the file's install, which the event follows):
//   looked at again, unsettled until then (test
//   LiveKeyClosedWorld.StaleFileListIsNoUnseenChange).
//   Explained:
//     appears:    a flush or compaction output (keys already counted: a
//                 flush holds sequenced writes, a compaction moves entries;
//                 named by OnTableFileCreated before it is installed) or an
//                 ingestion made by LiveKeyDB (OwnIngestion marks the
//                 thread; RocksDB notifies on the ingesting thread before
//                 IngestExternalFile returns); a file that appeared is
//                 waited for until its event names it;
//     disappears: an input of a compaction (recorded at OnCompactionBegin,
//                 before the compaction installs anything, or by
//                 LiveKeyDB::CompactFiles, which RocksDB reports no events
//                 for; a trivial move's file is its own output); a file
//                 that goes before anything named it is not explained;
//     either:     a file of a family no index answers for.
//   Anything else calls the Rep's on_unseen: every index is bypassed and
//   rebuilt (Rep::MarkUntrusted, RecoverTrust), and the index file is
//   removed (a checkpoint cannot replay a removal). A file's deletion
//   (OnTableFileDeleted, which RocksDB delays while an iterator or a read
//   still holds the old version) is explained the same way if the
//   reconciler has not seen it go yet.
//   Open. Until the index file is loaded, every compaction input seen
//   since DB::Open is remembered (RemovedByCompaction): a file that the
//   index file lists and the DB no longer holds is explained only by one.
//
//   Cost: for every MANIFEST sync (a flush, a compaction, an ingestion),
//   the DB's file list read twice and hashed; reads bypass the index from
//   the sync until the reconciler settles the edit (for a flush or a
//   compaction, until RocksDB reports it completed). Asking RocksDB for
//   file I/O reports (ShouldBeNotifiedOnFileIO) adds two clock reads and a
//   virtual call to each of RocksDB's file operations.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rocksdb/listener.h"
#include "rocksdb/metadata.h"

namespace dlcbf {
namespace live_key {

class WorldWatch : public rocksdb::EventListener {
 public:
  // What the watch tells the Rep; each may be empty. Called on RocksDB's
  // threads (a background job's, or the caller's for an ingestion or a
  // DeleteFilesInRange), never with the watch's state lock held.
  struct Hooks {
    std::function<void()> on_flush;                          // a flush or compaction completed
    std::function<void(const std::string& why)> on_unseen;   // a change LiveKeyDB cannot account for
    std::function<bool(const std::string& cf)> indexed;      // does this family's index matter?
    std::function<void()> on_suspect;  // a change may come (a filter's decision): the index file must go
  };

  const char* Name() const override { return "dlcbf.LiveKeyDB.WorldWatch"; }

  ~WorldWatch() override;

  // Arms the watch with `db`'s live table files (it reads the list from
  // `db` from here on, and starts the reconciler); from here on a change
  // it cannot explain goes to hooks.on_unseen. Returns false if the
  // reconciler cannot start (then nothing is armed).
  bool Attach(Hooks hooks, rocksdb::DB* db);
  // No hook runs and `db` is not read after Detach returns.
  void Detach();

  // True while every version edit RocksDB wrote since Attach is explained
  // (the protocol above). Readers call it before trusting an index's "no".
  bool Settled() const {
    return holds_.load(std::memory_order_seq_cst) == 0 &&
           settled_.load(std::memory_order_seq_cst) == edits_.load(std::memory_order_seq_cst);
  }
  // Settled() within `timeout` (polled every millisecond)? For checkpoints,
  // which are requested right after a flush or compaction, before the
  // reconciler has settled its edit.
  bool WaitSettled(std::chrono::milliseconds timeout) const;

  // Was `file_number` an input of a compaction since DB::Open? Remembered
  // until StopRemembering (the index file's load is done).
  bool RemovedByCompaction(uint64_t file_number);
  void StopRemembering();

  // `cf` is about to be dropped: its files leave the DB explained (undone
  // by FamilyDropDone(cf, false) if the drop fails).
  void ExpectFamilyDrop(const std::string& cf);
  void FamilyDropDone(const std::string& cf, bool ok);

  // The files `cf` holds now are explained (a family LiveKeyDB registers
  // after an import: no event names its files; its index is built by a
  // scan of them).
  void AdoptFamily(const std::string& cf);

  // A change LiveKeyDB cannot account for, found elsewhere (the
  // compaction-filter guard): reported at once, or at Attach if the watch
  // is not armed yet.
  void ReportUnseen(const std::string& why);

  // A compaction filter's decision that may uncover older versions
  // (compaction_filter_guard.h), made while its compaction runs: readers
  // stop trusting at once (Settled() is false), and `why` goes to on_unseen
  // once every compaction running now has finished (installed or failed),
  // so that the rebuild's scans see its result.
  void ReportFilterChange(const std::string& why);

  // A compaction LiveKeyDB runs for the caller (CompactFiles, which reports
  // no compaction events): its inputs leave the DB explained.
  void ExpectCompaction(const std::vector<uint64_t>& inputs);
  void CompactionDone(const std::vector<uint64_t>& inputs, bool ok);

  // Marks the calling thread as running an ingestion LiveKeyDB makes
  // (its files are explained) for the scope's life.
  class OwnIngestion {
   public:
    explicit OwnIngestion(const WorldWatch* w);
    ~OwnIngestion();
    OwnIngestion(const OwnIngestion&) = delete;
    OwnIngestion& operator=(const OwnIngestion&) = delete;

   private:
    const WorldWatch* prev_;
  };

  // The table file number in a path ("/db/000123.sst" -> 123), 0 if none.
  static uint64_t FileNumber(const std::string& path);

  void OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo& info) override;
  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo& info) override;
  void OnCompactionBegin(rocksdb::DB*, const rocksdb::CompactionJobInfo& ci) override;
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& ci) override;
  void OnExternalFileIngested(rocksdb::DB*, const rocksdb::ExternalFileIngestionInfo& info) override;
  void OnTableFileCreated(const rocksdb::TableFileCreationInfo& info) override;
  void OnTableFileDeleted(const rocksdb::TableFileDeletionInfo& info) override;
  bool ShouldBeNotifiedOnFileIO() override { return true; }
  void OnFileSyncFinish(const rocksdb::FileOperationInfo& info) override;

  static constexpr std::chrono::milliseconds kSettleAfter{1000};

 private:
  struct Change {
    std::string cf, why;
  };
  void Flushed();
  void Unseen(const std::vector<Change>& changes);
  // Explains the DB's file list against live_ (mu_ held): removals become
  // `*unseen` or are forgotten; returns how many files appeared that no
  // event named yet.
  using Indexed = std::function<bool(const std::string& cf)>;
  // `notes_before`: notes_ read before `files` was (a file an event named
  // after that may be missing from `files` only because the list predates
  // its install: not judged by it).
  size_t ExplainLocked(const std::vector<rocksdb::LiveFileMetaData>& files, uint64_t notes_before,
                       const Indexed& indexed, std::vector<Change>* unseen);
  // An event names file n as installed in `cf` at `level` (mu_ held).
  void NoteFileLocked(uint64_t n, const std::string& cf, int level);
  Indexed IndexedHook();
  static uint64_t Signature(const std::vector<rocksdb::LiveFileMetaData>& files);
  bool Arm(const std::vector<rocksdb::LiveFileMetaData>& files, rocksdb::DB* db);  // mu_ held
  void ReconcileLoop();
  // Reports the filter changes whose compactions have all finished.
  void DrainFilterHolds();

  std::mutex hooks_mu_;  // held while a hook runs, and by Attach/Detach
  Hooks hooks_;

  std::mutex mu_;  // everything below
  bool armed_ = false;
  std::string unseen_before_armed_;  // ReportUnseen before Attach
  struct FilterHold {
    std::string why;
    std::unordered_set<uint64_t> waiting;  // inputs of the compactions running at the report
    std::unordered_set<int> flushes;       // flushes running at the report (their filters run too)
  };
  std::unordered_set<int> flushing_;  // job ids of running flushes
  std::vector<FilterHold> filter_holds_;
  std::atomic<uint64_t> holds_{0};  // holds not yet reported (for Settled())
  bool remembering_ = true;
  rocksdb::DB* db_ = nullptr;
  std::condition_variable cv_;  // the reconciler's
  bool wake_ = false, stop_ = false;
  std::thread reconciler_;
  // Version edits written (MANIFEST syncs since Attach) and settled.
  std::atomic<uint64_t> edits_{0}, settled_{0};
  uint64_t before_last_edit_ = 0;  // the file list's signature at the last edit's sync
  std::chrono::steady_clock::time_point last_edit_at_{};
  struct LiveFile {
    std::string cf;
    int level;
    bool named;  // an event (or the list the watch was armed with) explains it
    // notes_ when an event put it here before any list showed it; 0 once
    // a list has.
    uint64_t noted = 0;
  };
  uint64_t notes_ = 0;  // files events put in live_ (NoteFileLocked)
  std::unordered_map<uint64_t, LiveFile> live_;     // file number -> where
  std::unordered_set<uint64_t> created_;            // flush/compaction outputs not yet seen installed
  std::unordered_set<uint64_t> compacting_;         // inputs of running compactions
  std::unordered_set<uint64_t> compacted_;          // inputs of completed ones, until deleted
  std::unordered_set<uint64_t> since_open_;         // every compaction input since DB::Open
};

}  // namespace live_key
}  // namespace dlcbf
