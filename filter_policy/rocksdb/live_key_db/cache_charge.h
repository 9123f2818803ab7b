// CacheCharge: a reservation of bytes in a rocksdb::Cache, so that memory
// LiveKeyDB holds outside the cache (its indexes) counts in the cache's
// usage and capacity, as RocksDB charges filter construction and
// memtables to a block cache. Internal to filter_policy/rocksdb/live_key_db/.
//
// The reservation is one pinned entry (no value) whose charge is the
// reserved size: Set() inserts an entry of the new size, then releases the
// old one, so the cache never counts less than the smaller of the two.
// Pinned entries are never evicted; with strict_capacity_limit an insert
// past the capacity fails and the old reservation stays (Set returns the
// cache's status). Thread-compatible: the caller serializes Set.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "rocksdb/cache.h"
#include "rocksdb/version.h"
#if ROCKSDB_MAJOR >= 8
#include "rocksdb/advanced_cache.h"
#endif

namespace dlcbf {
namespace live_key {

class CacheCharge {
 public:
  explicit CacheCharge(std::shared_ptr<rocksdb::Cache> cache) : cache_(std::move(cache)) {
    char b[48];
    std::snprintf(b, sizeof(b), "dlcbf.livekey.%p.", static_cast<void*>(this));
    prefix_ = b;
  }
  ~CacheCharge() { Release(); }
  CacheCharge(const CacheCharge&) = delete;
  CacheCharge& operator=(const CacheCharge&) = delete;

  rocksdb::Status Set(uint64_t bytes) {
    if (bytes == charged_) return rocksdb::Status::OK();
    rocksdb::Cache::Handle* h = nullptr;
    if (bytes > 0) {
      const std::string key = prefix_ + std::to_string(++serial_);
#if ROCKSDB_MAJOR >= 8
      static const rocksdb::Cache::CacheItemHelper kHelper(rocksdb::CacheEntryRole::kMisc);
      rocksdb::Status s = cache_->Insert(key, nullptr, &kHelper, static_cast<size_t>(bytes), &h);
#else
      rocksdb::Status s = cache_->Insert(key, nullptr, static_cast<size_t>(bytes), &NoDelete, &h);
#endif
      if (!s.ok()) return s;
    }
    Release();
    handle_ = h;
    charged_ = bytes;
    return rocksdb::Status::OK();
  }
  uint64_t charged() const { return charged_; }

 private:
#if ROCKSDB_MAJOR < 8
  static void NoDelete(const rocksdb::Slice&, void*) {}
#endif
  void Release() {
    if (handle_ != nullptr) cache_->Release(handle_, /*erase_if_last_ref=*/true);
    handle_ = nullptr;
    charged_ = 0;
  }

  std::shared_ptr<rocksdb::Cache> cache_;
  std::string prefix_;
  uint64_t serial_ = 0;
  rocksdb::Cache::Handle* handle_ = nullptr;
  uint64_t charged_ = 0;
};

}  // namespace live_key
}  // namespace dlcbf
