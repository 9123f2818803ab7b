// LiveKeyDB's copy of a user key held while a deferred check waits
// (PendingCheck, checker.h) or a key state is known (KnownKey, stripes.h):
// the bytes inline up to kInline, on the heap beyond. Internal to
// filter_policy/rocksdb/live_key_db/.
//
// Why not std::string: its inline buffer holds 15 bytes, so a typical
// 16-24 byte key costs a malloc on the writer's thread and a free on the
// checker's; glibc then moves the chunk between the two threads' arenas
// (live_key_bench uniform_1t, perf: about 7 % of the writer's time in
// malloc, unlink_chunk and malloc_consolidate for 16-byte keys).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>

#include "rocksdb/slice.h"

namespace dlcbf {
namespace live_key {

class SmallKey {
 public:
  // Keys up to this many bytes are held without an allocation.
  static constexpr size_t kInline = 40;

  SmallKey() = default;
  SmallKey(const SmallKey&) = delete;
  SmallKey& operator=(const SmallKey&) = delete;
  SmallKey(SmallKey&& o) noexcept { *this = std::move(o); }
  SmallKey& operator=(SmallKey&& o) noexcept {
    if (this == &o) return *this;
    size_ = o.size_;
    heap_ = std::move(o.heap_);
    if (heap_ == nullptr) std::memcpy(inline_, o.inline_, size_);
    o.size_ = 0;
    return *this;
  }

  void assign(const rocksdb::Slice& key) {
    if (key.size() <= kInline) {
      heap_.reset();
      if (key.size() > 0) std::memcpy(inline_, key.data(), key.size());
    } else {
      std::unique_ptr<char[]> h(new char[key.size()]);  // size_ unchanged until it holds the key
      std::memcpy(h.get(), key.data(), key.size());
      heap_ = std::move(h);
    }
    size_ = key.size();
  }
  rocksdb::Slice slice() const { return rocksdb::Slice(heap_ != nullptr ? heap_.get() : inline_, size_); }
  bool operator==(const rocksdb::Slice& key) const { return slice() == key; }

 private:
  size_t size_ = 0;
  std::unique_ptr<char[]> heap_;  // null while the key is inline
  char inline_[kInline];
};

}  // namespace live_key
}  // namespace dlcbf
