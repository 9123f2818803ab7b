// LiveKeyDB's compaction-filter guard: every compaction filter of a family
// runs inside a wrapper that reports the decisions which can make older
// versions of keys visible again, before the compaction installs its
// output. Internal to filter_policy/rocksdb/live_key_db/.
//
// Design note
//   A compaction filter sees Puts and Merge operands, never tombstones.
//   kRemove of a value turns it into a tombstone (RocksDB's
//   CompactionIterator), so nothing below it surfaces; kChangeValue and
//   kKeep change no key's liveness. Two decisions can uncover older
//   versions of a key that lie in levels the compaction does not read:
//     kRemoveAndSkipUntil  drops the entry and every entry up to skip_until
//                          unread, tombstones included;
//     kPurge               turns the entry into a SingleDelete, which
//                          cancels one Put and lets an older one show.
//   For either, the guard tells the world watch (world_watch.h,
//   ReportFilterChange) while the compaction runs: reads bypass the
//   indexes from then on, and once every compaction running at that moment
//   has installed its result (or failed), the indexes are rebuilt
//   (Rep::MarkUntrusted) by scans that see that result. The
//   cost of such a filter is a rebuild of every index per compaction that
//   uses the decision; the cost of the guard itself one virtual call per
//   filtered entry.
//   Wrapping: a family's compaction_filter (a shared, caller-owned object)
//   or compaction_filter_factory is replaced, at Open and at
//   CreateColumnFamily, by a factory whose filters forward every call to
//   the caller's (RocksDB prefers compaction_filter when both are set;
//   so does the guard). Each virtual of the release's CompactionFilter is
//   forwarded (FilterV3 from 8.0, FilterV4 and SupportsFilterV4 from
//   11.8), so the caller's filter runs exactly as it would unwrapped.
#pragma once

#include <memory>

#include "rocksdb/options.h"

namespace dlcbf {
namespace live_key {

class WorldWatch;

// Wraps `options`' compaction filter or factory (if any) in the guard.
void GuardCompactionFilters(rocksdb::ColumnFamilyOptions* options, const std::shared_ptr<WorldWatch>& watch);

}  // namespace live_key
}  // namespace dlcbf
