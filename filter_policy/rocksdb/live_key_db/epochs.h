// LiveKeyDB's statistics counters and its read sections / grace periods,
// both on the shared primitives of filter_policy/rocksdb/common/. Internal to
// filter_policy/rocksdb/live_key_db/.
#pragma once

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

#include "filter_policy/rocksdb/common/reader_sections.h"
#include "filter_policy/rocksdb/common/striped_counters.h"

namespace dlcbf {
namespace live_key {

enum Counter : uint32_t {
  kLookups,
  kShortCircuited,
  kBypassed,
  kWriteKeys,
  kLivenessReads,
  kIndexInserts,
  kIndexErases,
  kUndone,
  kDeferredChecks,
  kCheckErases,
  kChecksDropped,
  kCheckSnapshots,
  kRangeErased,
  kRangeLimitHits,
  kIngestedKeys,
  kKnownWrites,
  kIndexMigrations,
  kQueueFullFallbacks,
  kBusySyncReads,
  kUncheckedCopies,
  kUncheckedBudgetRebuilds,
  kCheckReads,
  kUnverifiedReads,
  kDeadPrefixSeeks,
  kMovedSeeks,
  kNumCounters
};

// LiveKeyDB's use of the shared reclamation primitive and striped counters
// (common/reader_sections.h, common/striped_counters.h): readers of the
// column-family table and the indexes enter a ReadSection; whoever retires
// one of them publishes the replacement and calls Synchronize() before
// freeing it. Bump/Sum are the statistics.
class EpochDomain {
 public:
  // Returns once every read section that began before the call has ended.
  // Callers publish the replacement pointer before calling.
  void Synchronize() { reclaim::Synchronize(); }

  void Bump(Counter c, uint64_t n = 1) { counters_.Add(c, n); }
  void Prefetch(Counter c) const { counters_.Prefetch(c); }
  uint64_t Sum(Counter c) const { return counters_.Sum(c); }

 private:
  StripedCounters<kNumCounters> counters_;
};

class ReadSection {
 public:
  explicit ReadSection(EpochDomain*) {}
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;

 private:
  reclaim::ReadSection section_;
};

}  // namespace live_key
}  // namespace dlcbf
