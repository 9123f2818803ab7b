// LiveKeyIndexOptions::Validate and LiveKeyStats::ToString.
#include "filter_policy/rocksdb/live_key_db/rep.h"
#include "filter_policy/rocksdb/common/status_conversion.h"

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
#include <sstream>

namespace dlcbf {

// ---------------------------------------------------------------------------
// Options and stats
// ---------------------------------------------------------------------------
rocksdb::Status LiveKeyIndexOptions::Validate() const {
  if (expected_keys == 0 || expected_keys > kMaxExpectedKeys) {
    return rocksdb::Status::InvalidArgument("expected_keys must be in [1, 2^40]");
  }
  if (!(sizing_load > 0.0 && sizing_load <= 1.0)) {
    return rocksdb::Status::InvalidArgument("sizing_load must be in (0, 1]");
  }
  if (kernel != ElasticKernel::kDense && kernel != ElasticKernel::kFast) {
    return rocksdb::Status::InvalidArgument("kernel must be kDense or kFast");
  }
  if (kernel == ElasticKernel::kDense) {
    DenseDLeftOptions d;
    const Status s = DenseDLeftOptions::ForBitsPerKey(expected_keys, bits_per_key, &d);
    if (!s.ok()) return rocksdb::Status::InvalidArgument("bits_per_key: " + s.message());
  }
  if (abf_counter_bits < 1 || abf_counter_bits > 8) {
    return rocksdb::Status::InvalidArgument("abf_counter_bits must be in [1, 8]");
  }
  if (!(auto_rebuild_drift == 0.0 || (auto_rebuild_drift > 1.0 && std::isfinite(auto_rebuild_drift)))) {
    return rocksdb::Status::InvalidArgument("auto_rebuild_drift must be 0 (off) or a finite value > 1");
  }
  if (!(rebuild_at_capacity > 0.0 && rebuild_at_capacity <= 1.0)) {
    return rocksdb::Status::InvalidArgument("rebuild_at_capacity must be in (0, 1]");
  }
  if (!(rebuild_headroom >= 1.0 && rebuild_headroom <= 1000.0)) {
    return rocksdb::Status::InvalidArgument("rebuild_headroom must be in [1, 1000]");
  }
  if (lock_stripes == 0 || lock_stripes > (1u << 20) || (lock_stripes & (lock_stripes - 1)) != 0) {
    return rocksdb::Status::InvalidArgument("lock_stripes must be a power of two in [1, 2^20]");
  }
  if (index_file_name.empty() || index_file_name.find('/') != std::string::npos ||
      index_file_name == "." || index_file_name == "..") {
    return rocksdb::Status::InvalidArgument("index_file_name must be a plain file name (no '/')");
  }
  if (max_deferring_writers > (1u << 20)) {
    return rocksdb::Status::InvalidArgument("max_deferring_writers must be in [0, 2^20]");
  }
  if (!(unchecked_copy_budget >= 0.0 && unchecked_copy_budget <= 1.0)) {
    return rocksdb::Status::InvalidArgument("unchecked_copy_budget must be in [0, 1]");
  }
  if (max_pending_checks == 0 || max_pending_checks > (1u << 24)) {
    return rocksdb::Status::InvalidArgument("max_pending_checks must be in [1, 2^24]");
  }
  if (!(checkpoint_interval_seconds >= 0.0 && std::isfinite(checkpoint_interval_seconds))) {
    return rocksdb::Status::InvalidArgument("checkpoint_interval_seconds must be a finite value >= 0");
  }
  if (rebuild_scan_threads == 0 || rebuild_scan_threads > 64) {
    return rocksdb::Status::InvalidArgument("rebuild_scan_threads must be in [1, 64]");
  }
  if (rebuild_progress_interval == 0) {
    return rocksdb::Status::InvalidArgument("rebuild_progress_interval must be >= 1");
  }
  if (live_range_lengths.size() > static_cast<size_t>(live_key::kMaxRangeLengths)) {
    return rocksdb::Status::InvalidArgument("live_range_lengths: at most " +
                                            std::to_string(live_key::kMaxRangeLengths) + " lengths");
  }
  for (size_t i = 0; i < live_range_lengths.size(); ++i) {
    const uint32_t L = live_range_lengths[i];
    if (L < 1 || L > live_key::kMaxRangeLength) {
      return rocksdb::Status::InvalidArgument("live_range_lengths: each length must be in [1, " +
                                              std::to_string(live_key::kMaxRangeLength) + "], got " +
                                              std::to_string(L));
    }
    if (i > 0 && L <= live_range_lengths[i - 1]) {
      return rocksdb::Status::InvalidArgument("live_range_lengths must be strictly increasing");
    }
  }
  return rocksdb::Status::OK();
}

bool LiveKeyStats::GetDiagnostic(const std::string& name, uint64_t* value) const {
  for (const auto& d : diagnostics) {
    if (d.first == name) {
      *value = d.second;
      return true;
    }
  }
  return false;
}

std::string LiveKeyStats::ToString() const {
  std::ostringstream o;
  o << "LiveKeyDB: lookups=" << lookups << " short_circuited=" << short_circuited
    << " dead_prefix_seeks=" << dead_prefix_seeks << " moved_seeks=" << moved_seeks
    << " bypassed_reads=" << bypassed_reads << " queue_full_fallbacks=" << queue_full_fallbacks
    << " busy_sync_reads=" << busy_sync_reads << " unverified_reads=" << unverified_reads
    << " unseen_write_detections=" << unseen_write_detections << " trust_recoveries=" << trust_recoveries
    << " indexes_trusted=" << (indexes_trusted ? 1 : 0) << " delete_range_limit_hits=" << delete_range_limit_hits
    << " rebuilds=" << rebuilds << " auto_rebuilds=" << auto_rebuilds << " failed_rebuilds=" << failed_rebuilds
    << " index_migrations=" << index_migrations << " checkpoints=" << checkpoints
    << " checkpoint_failures=" << checkpoint_failures << " index_file_loads=" << index_file_loads
    << " index_file_rejections=" << index_file_rejections << " index_bytes=" << index_bytes
    << " cache_charged_bytes=" << cache_charged_bytes << " cache_charge_failures=" << cache_charge_failures;
  if (!diagnostics.empty()) {
    o << "\n  diagnostics:";
    for (const auto& d : diagnostics) o << " " << d.first << "=" << d.second;
  }
  if (!last_rejection.empty()) o << " last_rejection=\"" << last_rejection << "\"";
  for (const LiveKeyCfStats& c : column_families) {
    o << "\n  cf " << c.id << " '" << c.name << "': ";
    if (!c.indexed) {
      o << "not indexed (" << c.bypass_reason << ")";
      continue;
    }
    char fpr[32];
    std::snprintf(fpr, sizeof(fpr), "%.3g", c.predicted_fpr);
    if (!c.serving) {
      o << (c.build_error.empty() ? "building (" + std::to_string(c.build_keys_scanned) + " keys scanned; reads bypass) "
                                  : "build failed (" + c.build_error + "; reads bypass) ");
    }
    o << "mode=" << c.mode << " entries=" << c.entries << " unchecked_copies=" << c.unchecked_copies
      << " sized_for=" << c.sized_for
      << " drift=" << c.drift << " bytes=" << c.bytes << " predicted_fpr=" << fpr
      << " loaded_from_file=" << (c.loaded_from_file ? 1 : 0) << " rebuilds=" << c.rebuilds;
    if (c.rebuilds > 0) {
      o << " last_rebuild=\"" << c.last_rebuild_reason << "\" (" << c.last_rebuild_seconds
        << " s, " << c.last_rebuild_keys << " keys, " << c.last_rebuild_scan_parts << " scan parts, "
        << c.last_rebuild_deltas << " deltas, pause "
        << c.last_rebuild_pause_micros << " us)";
    }
    if (c.rebuild_in_progress) o << " rebuilding";
  }
  return o.str();
}


}  // namespace dlcbf
