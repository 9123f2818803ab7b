// LiveKeyDB's read sections and memory reclamation (EpochDomain): lock-free
// readers, writers wait for readers before freeing; plus the per-thread
// statistics counters that share its slots. Internal to
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

namespace dlcbf {
namespace live_key {

// ---------------------------------------------------------------------------
// Epochs: lock-free readers, writers wait for readers before freeing.
// ---------------------------------------------------------------------------
enum Counter : uint32_t {
  kLookups,
  kShortCircuited,
  kBypassed,
  kWriteKeys,
  kLivenessReads,
  kIndexInserts,
  kIndexErases,
  kUndone,
  kRangeErased,
  kRangeLimitHits,
  kIngestedKeys,
  kNumCounters
};

constexpr uint32_t kSlots = 64;

struct alignas(64) Slot {
  std::atomic<uint64_t> active[2]{};
  std::atomic<uint64_t> counters[kNumCounters]{};
};

inline uint32_t ThreadIndex() {
  static std::atomic<uint32_t> next{0};
  thread_local const uint32_t index = next.fetch_add(1, std::memory_order_relaxed);
  return index;
}

class EpochDomain {
 public:
  EpochDomain() : slots_(new Slot[kSlots]()) {}

  Slot& MySlot() { return slots_[ThreadIndex() % kSlots]; }

  // Enter a read section; returns the parity to pass to Exit. Counting on
  // the parity of an epoch that is re-checked after the increment makes
  // the first flip after this point wait for us (see Synchronize).
  uint32_t Enter(Slot& s) {
    for (;;) {
      const uint64_t e = epoch_.load();
      const uint32_t p = static_cast<uint32_t>(e & 1);
      s.active[p].fetch_add(1);
      if (epoch_.load() == e) return p;
      s.active[p].fetch_sub(1, std::memory_order_release);
    }
  }
  void Exit(Slot& s, uint32_t p) { s.active[p].fetch_sub(1, std::memory_order_release); }

  // Returns once every read section that began before the call has ended.
  // Callers publish the replacement pointer (seq_cst) before calling.
  void Synchronize() {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t e = epoch_.fetch_add(1);
    const uint32_t old = static_cast<uint32_t>(e & 1);
    for (uint32_t i = 0; i < kSlots; ++i) {
      while (slots_[i].active[old].load() != 0) std::this_thread::yield();
    }
  }

  // Statistics: a plain load + store (no locked instruction). Exact while
  // no two threads share a slot (at most kSlots threads); otherwise an
  // increment can be lost, which only affects statistics.
  void Bump(Counter c, uint64_t n = 1) {
    std::atomic<uint64_t>& x = MySlot().counters[c];
    x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Sum(Counter c) const {
    uint64_t s = 0;
    for (uint32_t i = 0; i < kSlots; ++i) s += slots_[i].counters[c].load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> epoch_{0};
  std::mutex mu_;
};

class ReadSection {
 public:
  explicit ReadSection(EpochDomain* d) : d_(d), slot_(d->MySlot()), parity_(d->Enter(slot_)) {}
  ~ReadSection() { d_->Exit(slot_, parity_); }
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;

 private:
  EpochDomain* d_;
  Slot& slot_;
  uint32_t parity_;
};

}  // namespace live_key
}  // namespace dlcbf
