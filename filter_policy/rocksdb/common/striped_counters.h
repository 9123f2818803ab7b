// The one striped statistics counter of the RocksDB glue: N event counters,
// one cache line of them per stripe, a thread adding to the stripe of its
// reader slot (reader_sections.h). A stripe belongs to one thread unless
// more than kStripes threads are active, so a relaxed load + store (no
// locked instruction) is exact in the common case; threads that share a
// stripe may lose increments (statistics only, never a data race).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "filter_policy/rocksdb/common/reader_sections.h"

namespace dlcbf {

template <size_t kCounters, size_t kStripes = 64>
class StripedCounters {
  static_assert((kStripes & (kStripes - 1)) == 0, "kStripes must be a power of two");

 public:
  StripedCounters() {
    for (auto& s : stripes_) {
      for (auto& c : s.c) c.store(0, std::memory_order_relaxed);
    }
  }
  void Add(size_t counter, uint64_t n = 1) { Add(reclaim::MySlot(), counter, n); }
  // With the caller's slot already at hand (saves the TLS access).
  void Add(const reclaim::ReaderSlot* slot, size_t counter, uint64_t n = 1) {
    std::atomic<uint64_t>& a = stripes_[slot->ordinal & (kStripes - 1)].c[counter];
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Starts loading the line this thread's Add(counter) will write.
  void Prefetch(size_t counter) const {
    __builtin_prefetch(&stripes_[reclaim::MySlot()->ordinal & (kStripes - 1)].c[counter], 1);
  }
  uint64_t Sum(size_t counter) const {
    uint64_t sum = 0;
    for (const auto& s : stripes_) sum += s.c[counter].load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(64) Stripe {
    std::atomic<uint64_t> c[kCounters];
  };
  Stripe stripes_[kStripes];
};

}  // namespace dlcbf
