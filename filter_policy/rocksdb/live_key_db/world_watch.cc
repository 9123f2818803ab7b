// LiveKeyDB's world watch: the table-file accounting behind the
// closed-world fail-safe. The design note is in world_watch.h.
#include "filter_policy/rocksdb/live_key_db/world_watch.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>
#include <utility>

#include "dlcbf/internal/hash.h"
#include "rocksdb/db.h"

#ifdef DLCBF_TESTING
#include "filter_policy/testing/live_key_db_testing.h"
#endif

namespace dlcbf {
namespace live_key {

namespace {
thread_local const WorldWatch* t_own_ingestion = nullptr;

bool IsManifest(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return path.compare(slash == std::string::npos ? 0 : slash + 1, 9, "MANIFEST-") == 0;
}

uint64_t NumberOf(const rocksdb::LiveFileMetaData& f) {
  return f.file_number != 0 ? f.file_number : WorldWatch::FileNumber(f.name);
}
}  // namespace

constexpr std::chrono::milliseconds WorldWatch::kSettleAfter;

WorldWatch::OwnIngestion::OwnIngestion(const WorldWatch* w) : prev_(t_own_ingestion) { t_own_ingestion = w; }
WorldWatch::OwnIngestion::~OwnIngestion() { t_own_ingestion = prev_; }

uint64_t WorldWatch::FileNumber(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const char* p = path.c_str() + (slash == std::string::npos ? 0 : slash + 1);
  if (*p < '0' || *p > '9') return 0;
  return std::strtoull(p, nullptr, 10);
}

uint64_t WorldWatch::Signature(const std::vector<rocksdb::LiveFileMetaData>& files) {
  std::vector<std::pair<uint64_t, int>> v;
  v.reserve(files.size());
  for (const auto& f : files) v.emplace_back(NumberOf(f), f.level);
  std::sort(v.begin(), v.end());
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ v.size();
  for (const auto& e : v) {
    uint64_t x[2] = {e.first, static_cast<uint64_t>(static_cast<int64_t>(e.second))};
    h = internal::HashKey(reinterpret_cast<const char*>(x), sizeof(x), h);
  }
  return h;
}

WorldWatch::~WorldWatch() { Detach(); }

bool WorldWatch::Attach(Hooks hooks, rocksdb::DB* db) {
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  {
    std::lock_guard<std::mutex> h(hooks_mu_);
    hooks_ = std::move(hooks);
  }
  std::string pending;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!Arm(files, db)) return false;
    pending.swap(unseen_before_armed_);
  }
  if (!pending.empty()) ReportUnseen(pending);  // (the Rep treats it like any other)
  return true;
}

bool WorldWatch::Arm(const std::vector<rocksdb::LiveFileMetaData>& files, rocksdb::DB* db) {
  for (const auto& f : files) live_[NumberOf(f)] = LiveFile{f.column_family_name, f.level, true};
  before_last_edit_ = Signature(files);
  db_ = db;
  stop_ = false;
  // (No exception leaves LiveKeyDB: a thread that cannot start fails Open.)
  try {
    reconciler_ = std::thread([this] { ReconcileLoop(); });
  } catch (const std::system_error&) {
    db_ = nullptr;
    return false;
  }
  armed_ = true;
  return true;
}

void WorldWatch::ReportFilterChange(const std::string& why) {
  {
    // (Also before Attach: the hold keeps reads off the index, and its
    // report waits for Attach in ReportUnseen.)
    std::lock_guard<std::mutex> l(mu_);
    if (!filter_holds_.empty()) {
      // (One report is enough: the newest hold waits for these jobs too.)
      filter_holds_.back().waiting.insert(compacting_.begin(), compacting_.end());
      filter_holds_.back().flushes.insert(flushing_.begin(), flushing_.end());
    } else {
      filter_holds_.push_back(FilterHold{why, compacting_, flushing_});
      holds_.fetch_add(1, std::memory_order_seq_cst);
    }
  }
  {
    // The index file goes before the job installs its result: a crash
    // after the install must not bring a checkpoint past it.
    std::lock_guard<std::mutex> h(hooks_mu_);
    if (hooks_.on_suspect) hooks_.on_suspect();
  }
  DrainFilterHolds();
}

void WorldWatch::DrainFilterHolds() {
  std::vector<std::string> ready;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = filter_holds_.begin(); it != filter_holds_.end();) {
      for (auto w = it->waiting.begin(); w != it->waiting.end();) {
        w = compacting_.count(*w) != 0 ? std::next(w) : it->waiting.erase(w);
      }
      for (auto f = it->flushes.begin(); f != it->flushes.end();) {
        f = flushing_.count(*f) != 0 ? std::next(f) : it->flushes.erase(f);
      }
      if (it->waiting.empty() && it->flushes.empty()) {
        ready.push_back(std::move(it->why));
        it = filter_holds_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const std::string& why : ready) {
    ReportUnseen(why);  // (the indexes untrusted first, then the hold goes)
    holds_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

void WorldWatch::ReportUnseen(const std::string& why) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!armed_) {
      if (unseen_before_armed_.empty()) unseen_before_armed_ = why;
      return;
    }
  }
  std::lock_guard<std::mutex> h(hooks_mu_);
  if (hooks_.on_unseen) hooks_.on_unseen(why);
}

void WorldWatch::Detach() {
  std::thread t;
  {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = false;
    stop_ = true;
    db_ = nullptr;
    t = std::move(reconciler_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
  std::lock_guard<std::mutex> h(hooks_mu_);
  hooks_ = Hooks();
}

bool WorldWatch::RemovedByCompaction(uint64_t file_number) {
  std::lock_guard<std::mutex> l(mu_);
  return since_open_.count(file_number) != 0;
}

void WorldWatch::StopRemembering() {
  std::lock_guard<std::mutex> l(mu_);
  remembering_ = false;
  since_open_.clear();
}

bool WorldWatch::WaitSettled(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Settled()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

WorldWatch::Indexed WorldWatch::IndexedHook() {
  std::lock_guard<std::mutex> h(hooks_mu_);
  return hooks_.indexed;
}

void WorldWatch::AdoptFamily(const std::string& cf) {
  rocksdb::DB* db = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    db = db_;
  }
  if (db == nullptr) return;
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& f : files) {
      if (f.column_family_name == cf) live_[NumberOf(f)] = LiveFile{cf, f.level, true};
    }
    wake_ = true;
  }
  cv_.notify_all();
}

void WorldWatch::Flushed() {
  std::lock_guard<std::mutex> h(hooks_mu_);
  if (hooks_.on_flush) hooks_.on_flush();
}

void WorldWatch::Unseen(const std::vector<Change>& changes) {
  if (changes.empty()) return;
#ifdef DLCBF_TESTING
  if (internal::GetLiveKeyFaultForTesting() == internal::LiveKeyFault::kIgnoreTableFileChanges) return;
#endif
  std::lock_guard<std::mutex> h(hooks_mu_);
  for (const Change& c : changes) {
    if (hooks_.indexed && !hooks_.indexed(c.cf)) continue;  // (a family whose keys no index answers for)
    if (hooks_.on_unseen) hooks_.on_unseen(c.why);
    return;  // (one is enough: every index is rebuilt)
  }
}

void WorldWatch::NoteFileLocked(uint64_t n, const std::string& cf, int level) {
  auto it = live_.find(n);
  if (it == live_.end()) {
    live_.emplace(n, LiveFile{cf, level, true, ++notes_});
  } else {
    it->second.level = level;
    it->second.named = true;
  }
}

size_t WorldWatch::ExplainLocked(const std::vector<rocksdb::LiveFileMetaData>& files, uint64_t notes_before,
                                 const Indexed& indexed, std::vector<Change>* unseen) {
  std::unordered_set<uint64_t> now;
  size_t unnamed = 0;
  for (const auto& f : files) {
    const uint64_t n = NumberOf(f);
    now.insert(n);
    auto it = live_.find(n);
    if (it == live_.end()) {
      it = live_.emplace(n, LiveFile{f.column_family_name, f.level, false}).first;
    }
    it->second.level = f.level;  // (a trivial move or a refit: the same keys)
    it->second.noted = 0;        // (a list shows it)
    if (created_.erase(n) != 0) it->second.named = true;
    if (it->second.named) continue;
    // Appeared. Its flush or compaction names it (OnTableFileCreated),
    // an ingestion in its event (after RocksDB installed it); until then
    // it is not explained. A file of a family no index answers for (an
    // import: no event names its files; AdoptFamily once LiveKeyDB indexes
    // it) is taken as it is.
    if (!indexed || !indexed(f.column_family_name)) {
      it->second.named = true;
    } else {
      ++unnamed;
    }
  }
  for (auto it = live_.begin(); it != live_.end();) {
    if (now.count(it->first) != 0) {
      ++it;
      continue;
    }
    const uint64_t n = it->first;
    if (it->second.noted > notes_before) {
      // Named by an event after `files` was read: `files` may be from
      // before its install, so its absence proves nothing. Looked at again
      // (counted as not yet explained: the edit does not settle on it).
      ++unnamed;
      ++it;
      continue;
    }
    if (compacting_.count(n) == 0 && compacted_.erase(n) == 0) {
      unseen->push_back(Change{it->second.cf, "table file " + std::to_string(n) + " of '" + it->second.cf +
                                                  "' was removed without a compaction (DeleteFilesInRange, "
                                                  "DeleteFile): older versions of its keys may be visible again"});
    }
    it = live_.erase(it);
  }
  return unnamed;
}

// Every event that changes the picture wakes it; while an edit is not
// settled it also looks every millisecond (the install follows the sync
// at once; an edit that changes nothing settles after kSettleAfter).
void WorldWatch::ReconcileLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    const bool pending = settled_.load() != edits_.load();
    if (pending) {
      cv_.wait_for(l, std::chrono::milliseconds(1), [&] { return stop_ || wake_; });
    } else {
      cv_.wait(l, [&] { return stop_ || wake_; });
    }
    wake_ = false;
    if (stop_ || settled_.load() == edits_.load()) continue;
    const uint64_t g = edits_.load();
    const uint64_t notes = notes_;  // (before the list is read)
    rocksdb::DB* db = db_;
    l.unlock();
    const Indexed indexed = IndexedHook();
    std::vector<rocksdb::LiveFileMetaData> files;
    db->GetLiveFilesMetaData(&files);
#ifdef DLCBF_TESTING
    internal::RunLiveKeyWorldHookForTesting(internal::LiveKeyWorldPoint::kReconcilerListed);
#endif
    std::vector<Change> unseen;
    l.lock();
    if (stop_) break;
    if (edits_.load() != g) continue;  // an edit was written meanwhile: the list may be from before it
    const bool installed = Signature(files) != before_last_edit_ ||
                           std::chrono::steady_clock::now() - last_edit_at_ >= kSettleAfter;
    const size_t unnamed = ExplainLocked(files, notes, indexed, &unseen);
    if (!unseen.empty()) {
      // Reported before the edit settles: readers go from "not settled"
      // to "not trusted" with no moment in between.
      l.unlock();
      Unseen(unseen);
      l.lock();
    }
    if (installed && unnamed == 0 && edits_.load() == g) settled_.store(g);
  }
}

void WorldWatch::OnFileSyncFinish(const rocksdb::FileOperationInfo& info) {
  if (!IsManifest(info.path)) return;
  rocksdb::DB* db = nullptr;
  uint64_t notes = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!armed_) return;
    db = db_;
    notes = notes_;  // (before the list is read)
  }
  // Edit g is written, not installed; every edit before it is installed
  // (world_watch.h). The DB mutex is free here (RocksDB syncs the MANIFEST
  // with it released).
  const Indexed indexed = IndexedHook();
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  std::vector<Change> unseen;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!armed_) return;
    ExplainLocked(files, notes, indexed, &unseen);
    before_last_edit_ = Signature(files);
    last_edit_at_ = std::chrono::steady_clock::now();
    edits_.fetch_add(1);  // (before the install: readers stop trusting now)
    wake_ = true;
  }
  cv_.notify_all();
#ifdef DLCBF_TESTING
  internal::RunLiveKeyWorldHookForTesting(internal::LiveKeyWorldPoint::kEditCounted);
#endif
  Unseen(unseen);
}

void WorldWatch::OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo& info) {
  std::lock_guard<std::mutex> l(mu_);
  flushing_.insert(info.job_id);
}

void WorldWatch::OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo& info) {
  {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t n = info.file_number != 0 ? info.file_number : FileNumber(info.file_path);
    if (n != 0) NoteFileLocked(n, info.cf_name, 0);
    flushing_.erase(info.job_id);
    wake_ = true;
  }
  cv_.notify_all();
#ifdef DLCBF_TESTING
  internal::RunLiveKeyWorldHookForTesting(internal::LiveKeyWorldPoint::kFlushNoted);
#endif
  DrainFilterHolds();
  Flushed();
}

void WorldWatch::ExpectFamilyDrop(const std::string& cf) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& kv : live_) {
    if (kv.second.cf == cf) compacted_.insert(kv.first);
  }
}

void WorldWatch::FamilyDropDone(const std::string& cf, bool ok) {
  if (ok) return;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& kv : live_) {
    if (kv.second.cf == cf) compacted_.erase(kv.first);
  }
}

void WorldWatch::OnCompactionBegin(rocksdb::DB*, const rocksdb::CompactionJobInfo& ci) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& f : ci.input_file_infos) {
    compacting_.insert(f.file_number);
    if (remembering_) since_open_.insert(f.file_number);
  }
}

void WorldWatch::OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& ci) {
  {
    std::lock_guard<std::mutex> l(mu_);
    std::unordered_set<uint64_t> outputs;
    for (const auto& f : ci.output_file_infos) outputs.insert(f.file_number);
    for (const auto& f : ci.input_file_infos) {
      compacting_.erase(f.file_number);
      // Its inputs leave the DB (a trivial move's file is its own output);
      // a failed compaction leaves them where they were.
      if (ci.status.ok() && outputs.count(f.file_number) == 0 && live_.count(f.file_number) != 0) {
        compacted_.insert(f.file_number);
      }
    }
    if (ci.status.ok()) {
      for (const auto& f : ci.output_file_infos) NoteFileLocked(f.file_number, ci.cf_name, f.level);
    }
    wake_ = true;
  }
  cv_.notify_all();
  DrainFilterHolds();
  Flushed();
}

void WorldWatch::OnExternalFileIngested(rocksdb::DB*, const rocksdb::ExternalFileIngestionInfo& info) {
  const bool own = t_own_ingestion == this;
  bool armed = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    armed = armed_;
  }
  // A foreign file is reported before it is named: until it is named its
  // edit cannot settle, so readers go from "not settled" to "not trusted"
  // with no moment in between.
  if (armed && !own) {
    Unseen({Change{info.cf_name, "a file ingested past LiveKeyDB (" + info.internal_file_path + " into '" +
                                     info.cf_name + "', global sequence number " +
                                     std::to_string(info.global_seqno) + ")"}});
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t n = FileNumber(info.internal_file_path);
    if (n != 0) NoteFileLocked(n, info.cf_name, -1);  // (its level: the reconciler's next look)
    wake_ = true;
  }
  cv_.notify_all();
}

// A flush's or compaction's output (CompactFiles reports no compaction
// events in 7.8.3): named before it is installed.
void WorldWatch::OnTableFileCreated(const rocksdb::TableFileCreationInfo& info) {
  if (!info.status.ok()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t n = FileNumber(info.file_path);
    if (n == 0) return;
    auto it = live_.find(n);
    if (it == live_.end()) {
      created_.insert(n);  // (live once installed: ExplainLocked)
    } else {
      it->second.named = true;
    }
    wake_ = true;
  }
  cv_.notify_all();
}

void WorldWatch::ExpectCompaction(const std::vector<uint64_t>& inputs) {
  std::lock_guard<std::mutex> l(mu_);
  for (uint64_t n : inputs) {
    compacting_.insert(n);
    if (remembering_) since_open_.insert(n);
  }
}

void WorldWatch::CompactionDone(const std::vector<uint64_t>& inputs, bool ok) {
  {
    std::lock_guard<std::mutex> l(mu_);
    for (uint64_t n : inputs) {
      compacting_.erase(n);
      if (ok && live_.count(n) != 0) compacted_.insert(n);
    }
    wake_ = true;
  }
  cv_.notify_all();
  DrainFilterHolds();
}

void WorldWatch::OnTableFileDeleted(const rocksdb::TableFileDeletionInfo& info) {
  const uint64_t n = FileNumber(info.file_path);
  std::vector<Change> unseen;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = live_.find(n);
    if (it == live_.end()) {  // gone already (the reconciler saw it), or never live
      compacted_.erase(n);
      created_.erase(n);
      return;
    }
    const std::string cf = it->second.cf;
    live_.erase(it);
    if (compacted_.erase(n) != 0 || compacting_.count(n) != 0) return;  // a compaction's input
    if (!armed_) return;
    unseen.push_back(Change{cf, "table file " + info.file_path + " of '" + cf +
                                    "' was removed without a compaction (DeleteFilesInRange, DeleteFile): older "
                                    "versions of its keys may be visible again"});
  }
  Unseen(unseen);
}

}  // namespace live_key
}  // namespace dlcbf
