// What the parts of the memtable index share: sizing constants, the
// factory-wide state, and the rep's factory functions. Internal to
// filter_policy/rocksdb/memtable_index/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "dlcbf/rocksdb/memtable_index.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/status.h"

namespace dlcbf {
namespace memtable_index {

// The RocksDB names every part of the memtable index uses.
using rocksdb::Allocator;
using rocksdb::KeyHandle;
using rocksdb::Logger;
using rocksdb::MemTableRep;
using rocksdb::MemTableRepFactory;
using rocksdb::Slice;
using rocksdb::SliceTransform;

inline constexpr uint32_t kDefaultSubtables = 2;
inline constexpr uint32_t kDefaultCells = 3;
inline constexpr uint32_t kDefaultRemainderBits = 14;
inline constexpr double kDefaultGrowth = 4.0;
inline constexpr double kDefaultCap = 0.25;
inline constexpr double kSizingLoad = 0.75;
// The dense kernel's 8-bit class ("dense8") is sized at 85 % of its slots:
// 12.5 bits per entry (MemTableIndexOptions::dense_remainder_bits).
inline constexpr double kDense8SizingLoad = 0.85;
inline constexpr uint32_t kCounterBits = 1;
inline constexpr uint64_t kMaxEntries = uint64_t{1} << 32;
inline constexpr uint64_t kMaxBudget = uint64_t{1} << 34;
inline constexpr size_t kRecentSlots = 1024;  // dedupe cache per filter

// InvalidArgument("dlcbf_index: <field>", why).
rocksdb::Status Invalid(const std::string& field, const std::string& why);

// The ElasticFilter options of an index filter sized for `entries` (rep.cc;
// tools/bench/memtable_index_bench uses them to time the filter alone).
ElasticOptions IndexFilterOptions(const MemTableIndexOptions& o, uint64_t entries);

class IndexedRep;

// Shared by a factory and every rep it created (reps may outlive the
// factory object).
struct FactoryState {
  std::mutex mu;
  std::unordered_set<IndexedRep*> live;
  MemTableIndexStats folded;  // counters of destroyed reps
  uint64_t created = 0;
  uint64_t bypassed = 0;
};

// into += s, counters only.
void AddCounters(MemTableIndexStats* into, const MemTableIndexStats& s);

// A rep indexing `base` (rep.cc); registers itself in `state`.
rocksdb::MemTableRep* NewIndexedRep(std::unique_ptr<rocksdb::MemTableRep> base,
                                    bool identity_handles,
                                    const rocksdb::MemTableRep::KeyComparator& key_cmp,
                                    rocksdb::Allocator* allocator,
                                    const rocksdb::SliceTransform* transform,
                                    rocksdb::Logger* logger, uint32_t column_family_id,
                                    const MemTableIndexOptions& options,
                                    std::shared_ptr<FactoryState> state);
// Statistics of a live rep; the caller holds state->mu.
MemTableIndexStats RepStats(IndexedRep* rep);

}  // namespace memtable_index
}  // namespace dlcbf
