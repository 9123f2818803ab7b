// The deep LSM the LiveKeyDB benchmarks (live_key_bench,
// live_key_txn_bench) measure on: its key scheme, options and load plan,
// one copy for both.
//
// Keys spread uniformly over the key space: 16 hex digits of a bijective
// mix of the id. Even ids are loaded keys (and new keys past num_keys), odd
// ids are never written. The load (auto compactions disabled, so the shape
// is fixed): the keys are split at random into batches, each written,
// flushed and moved with CompactFiles to its level (L4 50 %, L3 20 %, L2
// 12 %, L1 8 %), the last 10 % flushed as l0_files separate L0 files; then
// deleted_keys keys spread over every level are deleted and the tombstones
// flushed to one more L0 file. Every key overlaps every level, so a lookup
// that misses probes the memtable, every L0 file and every level.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dlcbf/internal/hash.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/table.h"

namespace dlcbf {
namespace bench {

inline void CheckOk(const rocksdb::Status& s, const char* tool, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s: %s\n", tool, what, s.ToString().c_str());
    std::exit(1);
  }
}

inline std::string KeyOf(uint64_t id) {
  char b[24];
  std::snprintf(b, sizeof(b), "%016" PRIx64, dlcbf::internal::Mix64(id + 0x5EED));
  return b;
}
inline std::string Loaded(uint64_t i) { return KeyOf(2 * i); }
inline std::string Missing(uint64_t i) { return KeyOf(2 * i + 1); }

inline rocksdb::Options DeepLsmOptions(const std::shared_ptr<const rocksdb::FilterPolicy>& policy,
                                       uint64_t cache_mb) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.disable_auto_compactions = true;
  o.level0_file_num_compaction_trigger = 1000;
  o.level0_slowdown_writes_trigger = 1000;
  o.level0_stop_writes_trigger = 1000;
  o.write_buffer_size = 512 << 20;  // flushes only when we ask
  o.max_write_buffer_number = 4;
  o.target_file_size_base = 32 << 20;
  o.num_levels = 7;
  rocksdb::BlockBasedTableOptions t;
  t.filter_policy = policy;
  t.block_cache = rocksdb::NewLRUCache(cache_mb << 20);
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

// " L0=13 L1=1 ..." for the default column family.
inline std::string Shape(rocksdb::DB* db) {
  rocksdb::ColumnFamilyMetaData md;
  db->GetColumnFamilyMetaData(&md);
  std::string s;
  for (const auto& l : md.levels) {
    if (l.files.empty()) continue;
    s += " L" + std::to_string(l.level) + "=" + std::to_string(l.files.size());
  }
  return s;
}

inline void FlushAndMove(rocksdb::DB* db, int level, const char* tool) {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  CheckOk(db->Flush(fo), tool, "flush");
  if (level <= 0) return;
  rocksdb::ColumnFamilyMetaData md;
  db->GetColumnFamilyMetaData(&md);
  std::vector<std::string> l0;
  for (const auto& f : md.levels[0].files) l0.push_back(f.name);
  CheckOk(db->CompactFiles(rocksdb::CompactionOptions(), l0, level), tool, "CompactFiles");
}

// Loads `ids` (a shuffled 0..n-1) as above; `progress` gets each level.
template <class Progress>
void LoadDeepLsm(rocksdb::DB* db, const std::vector<uint64_t>& ids, uint32_t l0_files, uint64_t deleted_keys,
                 uint32_t value_size, const char* tool, Progress&& progress) {
  struct Batch {
    double fraction;
    int level;
    uint32_t files;
  };
  const std::vector<Batch> plan = {{0.50, 4, 1}, {0.20, 3, 1}, {0.12, 2, 1}, {0.08, 1, 1}, {0.10, 0, l0_files}};
  const uint64_t num_keys = ids.size();
  const std::string value(value_size, 'v');
  rocksdb::WriteOptions wo;
  uint64_t pos = 0;
  for (size_t b = 0; b < plan.size(); ++b) {
    const uint64_t n =
        b + 1 == plan.size() ? num_keys - pos : static_cast<uint64_t>(plan[b].fraction * num_keys);
    const uint64_t per_file = (n + plan[b].files - 1) / plan[b].files;
    for (uint64_t i = 0; i < n; ++i) {
      CheckOk(db->Put(wo, Loaded(ids[pos + i]), value), tool, "load Put");
      if ((i + 1) % per_file == 0 && plan[b].level == 0) FlushAndMove(db, 0, tool);
    }
    pos += n;
    FlushAndMove(db, plan[b].level, tool);
    progress(plan[b].level, n);
  }
  // Recently deleted keys: spread over every level, tombstones flushed to L0.
  for (uint64_t i = 0; i < deleted_keys; ++i) {
    CheckOk(db->Delete(wo, Loaded(ids[i * (num_keys / deleted_keys)])), tool, "delete");
  }
  FlushAndMove(db, 0, tool);
}

}  // namespace bench
}  // namespace dlcbf
