// LiveKeyDB's statistics and memory accounting: GetLiveKeyStats, the DB
// properties LiveKeyDB adds ("dlcbf.livekey.*"), the indexes' bytes and
// their charge to LiveKeyIndexOptions::charge_cache. Contract:
// include/dlcbf/rocksdb/live_key_db.h.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "dlcbf/rocksdb/live_key_db.h"
#include "filter_policy/rocksdb/live_key_db/rep.h"

namespace dlcbf {

uint64_t LiveKeyDB::Rep::IndexBytes() {
  std::vector<const CfState*> fams;
  {
    std::lock_guard<std::mutex> l(cf_mu);
    for (auto& kv : cfs) fams.push_back(kv.second.get());
  }
  uint64_t total = 0;
  std::lock_guard<std::mutex> sl(swap_mu);
  for (const CfState* cf : fams) {
    if (cf->dropped || !cf->indexed || !cf->owned) continue;
    LiveKeyCfStats c;
    cf->owned->Describe(&c);
    total += c.bytes;
  }
  return total;
}

void LiveKeyDB::Rep::UpdateCacheCharge(uint64_t extra) {
  if (!opt.charge_cache) return;
  const uint64_t want = IndexBytes() + extra;
  std::lock_guard<std::mutex> l(charge_mu);
  if (!charge) charge.reset(new CacheCharge(opt.charge_cache));
  const rocksdb::Status s = charge->Set(want);
  charged_bytes.store(charge->charged(), std::memory_order_relaxed);
  if (!s.ok()) {
    charge_failures.fetch_add(1);
    rocksdb::Warn(log, "LiveKeyDB: the cache refused a charge of %" PRIu64 " index bytes (%s); %" PRIu64
                  " stay charged", want, s.ToString().c_str(), charge->charged());
  }
}

bool LiveKeyDB::GetIntProperty(ColumnFamilyHandle* column_family, const Slice& property, uint64_t* value) {
  if (property == Slice("dlcbf.livekey.index-bytes")) {
    if (value == nullptr) return false;
    *value = rep_->IndexBytes();
    return true;
  }
  return db_->GetIntProperty(column_family, property, value);
}

bool LiveKeyDB::GetProperty(ColumnFamilyHandle* column_family, const Slice& property, std::string* value) {
  if (property == Slice("dlcbf.livekey.index-bytes")) {
    if (value == nullptr) return false;
    *value = std::to_string(rep_->IndexBytes());
    return true;
  }
  const bool state = property == Slice("dlcbf.livekey.state");
  if (!state && property != Slice("dlcbf.livekey.stats")) {
    return db_->GetProperty(column_family, property, value);
  }
  if (value == nullptr) return false;
  const LiveKeyStats st = GetLiveKeyStats();
  if (!state) {
    *value = st.ToString();
    return true;
  }
  const uint32_t id = column_family != nullptr ? column_family->GetID() : 0;
  for (const LiveKeyCfStats& c : st.column_families) {
    if (c.id != id || !c.indexed) continue;
    *value = c.serving             ? "ready"
             : !c.build_error.empty() ? "failed: " + c.build_error
                                      : "building " + std::to_string(c.build_keys_scanned);
    return true;
  }
  return false;  // not an indexed family
}

LiveKeyStats LiveKeyDB::GetLiveKeyStats() const {
  Rep& r = *rep_;
  LiveKeyStats st;
  st.lookups = r.epochs.Sum(kLookups);
  st.short_circuited = r.epochs.Sum(kShortCircuited);
  st.dead_prefix_seeks = r.epochs.Sum(kDeadPrefixSeeks);
  st.moved_seeks = r.epochs.Sum(kMovedSeeks);
  st.bypassed_reads = r.epochs.Sum(kBypassed);
  st.queue_full_fallbacks = r.epochs.Sum(kQueueFullFallbacks);
  st.busy_sync_reads = r.epochs.Sum(kBusySyncReads);
  st.unverified_reads = r.epochs.Sum(kUnverifiedReads);
  st.unseen_write_detections = r.unseen_write_detections.load();
  st.trust_recoveries = r.trust_recoveries.load();
  st.indexes_trusted = !r.untrusted.load();
  st.index_migrations = r.epochs.Sum(kIndexMigrations);
  st.delete_range_limit_hits = r.epochs.Sum(kRangeLimitHits);
  st.rebuilds = r.rebuilds.load();
  st.auto_rebuilds = r.auto_rebuilds.load();
  st.failed_rebuilds = r.failed_rebuilds.load();
  st.index_file_loads = r.file_loads.load();
  st.checkpoints = r.checkpoints.load();
  st.checkpoint_failures = r.checkpoint_failures.load();
  st.index_file_rejections = r.file_rejections.load();
  st.cache_charged_bytes = r.charged_bytes.load();
  st.cache_charge_failures = r.charge_failures.load();
  {
    std::lock_guard<std::mutex> l(r.reject_mu);
    st.last_rejection = r.last_rejection;
  }
  st.diagnostics = {
      {"write_keys", r.epochs.Sum(kWriteKeys)},
      {"liveness_reads", r.epochs.Sum(kLivenessReads)},
      {"index_inserts", r.epochs.Sum(kIndexInserts)},
      {"index_erases", r.epochs.Sum(kIndexErases)},
      {"undone_inserts", r.epochs.Sum(kUndone)},
      {"deferred_checks", r.epochs.Sum(kDeferredChecks)},
      {"check_erases", r.epochs.Sum(kCheckErases)},
      {"checks_dropped", r.epochs.Sum(kChecksDropped)},
      {"check_snapshots", r.epochs.Sum(kCheckSnapshots)},
      {"pending_checks", r.pending_checks.load()},
      {"known_writes", r.epochs.Sum(kKnownWrites)},
      {"unchecked_copies", r.epochs.Sum(kUncheckedCopies)},
      {"unchecked_budget_rebuilds", r.epochs.Sum(kUncheckedBudgetRebuilds)},
      {"check_multigets", r.epochs.Sum(kCheckReads)},
      {"delete_range_erased", r.epochs.Sum(kRangeErased)},
      {"ingested_keys", r.epochs.Sum(kIngestedKeys)},
      {"checkpoint_deltas", r.checkpoint_deltas.load()},
      {"checkpoint_bytes", r.checkpoint_bytes.load()},
      {"last_checkpoint_bytes", r.last_checkpoint_bytes.load()},
      {"max_checkpoint_buffer_bytes", r.max_checkpoint_buffer_bytes.load()},
      {"last_checkpoint_pause_micros", r.last_checkpoint_pause_us.load()},
      {"max_checkpoint_pause_micros", r.max_checkpoint_pause_us.load()},
      {"last_checkpoint_seq", r.last_checkpoint_seq.load()},
      {"checkpoint_replays", r.checkpoint_replays.load()},
      {"checkpoint_replayed_keys", r.checkpoint_replayed_keys.load()},
  };
  std::vector<const CfState*> fams;
  {
    std::lock_guard<std::mutex> l(r.cf_mu);
    for (auto& kv : r.cfs) fams.push_back(kv.second.get());
  }
  // swap_mu keeps every `owned` index alive and in place while described.
  std::lock_guard<std::mutex> sl(r.swap_mu);
  for (const CfState* cf : fams) {
    if (cf->dropped) continue;
    LiveKeyCfStats c;
    c.id = cf->id;
    c.name = cf->name;
    c.indexed = cf->indexed;
    c.bypass_reason = cf->bypass_reason;
    if (cf->indexed && cf->owned) cf->owned->Describe(&c);
    c.rebuild_in_progress = cf->rebuild_running.load();
    c.serving = cf->indexed && cf->serving.load(std::memory_order_acquire);
    c.build_keys_scanned = cf->scanned.load(std::memory_order_relaxed);
    if (cf->indexed && !c.serving) c.mode = "building";
    {
      std::lock_guard<std::mutex> il(cf->info_mu);
      c.build_error = cf->build_error;
      c.loaded_from_file = cf->loaded_from_file;
      c.rebuilds = cf->rebuilds;
      c.last_rebuild_reason = cf->last_reason;
      c.last_rebuild_seconds = cf->last_seconds;
      c.last_rebuild_keys = cf->last_keys;
      c.last_rebuild_scan_parts = cf->last_scan_parts;
      c.last_rebuild_deltas = cf->last_deltas;
      c.last_rebuild_pause_micros = cf->last_pause_micros;
    }
    st.index_bytes += c.bytes;
    st.column_families.push_back(std::move(c));
  }
  return st;
}

}  // namespace dlcbf
