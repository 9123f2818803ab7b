// The slot pool, the heavy fence and grace periods of reader_sections.h.
#include "filter_policy/rocksdb/common/reader_sections.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

namespace dlcbf {
namespace reclaim {
namespace detail {

thread_local ReaderSlot* t_slot = nullptr;
bool g_light_fences = false;

namespace {

struct Pool {
  std::mutex mu;
  std::deque<ReaderSlot> slots;  // stable addresses; never shrinks
  std::vector<ReaderSlot*> free;
  bool membarrier = false;
};

Pool& ThePool() {
  static Pool* p = [] {
    Pool* pool = new Pool();  // outlives every thread exit
    const long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0);
#ifdef DLCBF_TESTING
    // Test builds: DLCBF_NO_MEMBARRIER=1 forces the full-fence path (the
    // suites run both). The shipped library reads no environment.
    const char* off = std::getenv("DLCBF_NO_MEMBARRIER");
    const bool forced_off = off != nullptr && off[0] == '1';
#else
    const bool forced_off = false;
#endif
    pool->membarrier =
        !forced_off && cmds >= 0 &&
        (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
    g_light_fences = pool->membarrier;  // published by the static's guard
    return pool;
  }();
  return *p;
}

ReaderSlot* Acquire() {
  Pool& p = ThePool();
  std::lock_guard<std::mutex> l(p.mu);
  if (!p.free.empty()) {
    ReaderSlot* s = p.free.back();
    p.free.pop_back();
    return s;
  }
  p.slots.emplace_back();
  p.slots.back().ordinal = static_cast<uint32_t>(p.slots.size() - 1);
  return &p.slots.back();
}

// Marks the slot of a thread whose owner is gone: such a thread gets a
// fresh slot that is never returned (rare: reads from TLS destructors).
ReaderSlot g_exited_marker;

struct SlotOwner {
  ReaderSlot* slot = Acquire();
  ~SlotOwner() {
    // The thread is not inside a section (sections are scoped), so the
    // slot is even: safe to hand to another thread.
    Pool& p = ThePool();
    {
      std::lock_guard<std::mutex> l(p.mu);
      p.free.push_back(slot);
    }
    t_slot = &g_exited_marker;
  }
};

}  // namespace

ReaderSlot* InitThreadSlot() {
  if (t_slot == &g_exited_marker) {
    t_slot = Acquire();  // kept for the rest of the thread's life
    return t_slot;
  }
  thread_local SlotOwner owner;
  t_slot = owner.slot;
  return t_slot;
}

}  // namespace detail

namespace {
#if defined(__SANITIZE_THREAD__)
std::atomic<uint64_t> g_tsan_fence{0};
#endif

void HeavyFence(bool membarrier) {
#if defined(__SANITIZE_THREAD__)
  (void)membarrier;
  g_tsan_fence.fetch_add(1, std::memory_order_seq_cst);
#else
  if (membarrier && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}
}  // namespace

void GracePeriod::Start() {
  detail::Pool& p = detail::ThePool();
  // Readers take the light path only if the registration succeeded, after
  // which the command has no failure mode (membarrier(2): EINVAL and EPERM
  // are for unsupported or unregistered commands).
  HeavyFence(p.membarrier);
  inside_.clear();
  std::lock_guard<std::mutex> l(p.mu);
  for (const ReaderSlot& s : p.slots) {
    const uint64_t v = s.seq.load(std::memory_order_acquire);
    if (v & 1) inside_.emplace_back(&s, v);
  }
}

bool GracePeriod::Done() {
  size_t keep = 0;
  for (const auto& e : inside_) {
    if (e.first->seq.load(std::memory_order_acquire) == e.second) inside_[keep++] = e;
  }
  inside_.resize(keep);
  return inside_.empty();
}

void GracePeriod::Wait() {
  while (!Done()) std::this_thread::yield();
}

bool LightFences() {
  (void)detail::ThePool();
  return detail::g_light_fences;
}

}  // namespace reclaim
}  // namespace dlcbf
