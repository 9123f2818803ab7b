// The one memory-reclamation primitive of the RocksDB glue (memtable index,
// LiveKeyDB): lock-free readers announce themselves in a per-thread slot,
// and a writer that unpublished memory frees it only after every reader
// that may still hold it has left. Also the per-thread stripe index that
// StripedCounters uses.
//
// Protocol (an asymmetric Dekker handshake, as in Linux membarrier(2) and
// folly's asymmetricLightBarrier):
//   reader:  slot.seq = odd (relaxed store); light fence; read the shared
//            pointer and what it points to; slot.seq = even (release store)
//   writer:  publish the replacement pointer; heavy fence; snapshot every
//            slot that is odd; free once each of them has changed.
// The heavy fence makes "reader announced, then read the OLD pointer" and
// "writer published, then saw the reader's slot even" mutually exclusive,
// so a reader still inside old memory is always in the snapshot, and a
// reader seen leaving (release) has finished its reads (acquire).
//   - With membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): light fence =
//     compiler barrier, heavy fence = membarrier. A read section costs two
//     plain stores to a thread-local cache line.
//   - Without it (old kernels, seccomp; or, in the test builds only,
//     DLCBF_NO_MEMBARRIER=1 in the environment, which the suites use to run
//     this path): both fences are
//     full std::atomic_thread_fence(seq_cst). Correct, a little slower.
//   - Under ThreadSanitizer (which models neither fences nor membarrier)
//     the reader's store is a seq_cst exchange; TSan checks the
//     release/acquire hand-off of the slot.
// Slots live in a process-wide pool and are never freed (a writer may hold
// a pointer to a slot in its snapshot); a thread's slot returns to the pool
// at thread exit, when it is even, so a reused slot never looks "still
// inside" to an old snapshot. A thread that reads from a thread_local
// destructor after its slot was returned gets a fresh slot of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlcbf {
namespace reclaim {

struct alignas(64) ReaderSlot {
  std::atomic<uint64_t> seq{0};  // odd while inside; written by its thread only
  uint32_t depth = 0;            // nested sections; owner thread only
  uint32_t ordinal = 0;          // position in the pool: a stable stripe index
};

namespace detail {
extern thread_local ReaderSlot* t_slot;
extern bool g_light_fences;  // membarrier available: readers need no CPU fence
ReaderSlot* InitThreadSlot();
}  // namespace detail

// The calling thread's slot. One TLS access on the fast path.
inline ReaderSlot* MySlot() {
  ReaderSlot* s = detail::t_slot;
  return __builtin_expect(s != nullptr, 1) ? s : detail::InitThreadSlot();
}

// Sections nest: only the outermost Enter/Exit announce.
inline void Enter(ReaderSlot* s) {
  if (s->depth++ != 0) return;
  const uint64_t v = s->seq.load(std::memory_order_relaxed);
#if defined(__SANITIZE_THREAD__)
  s->seq.exchange(v + 1, std::memory_order_seq_cst);
#else
  s->seq.store(v + 1, std::memory_order_relaxed);
  if (detail::g_light_fences) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
#endif
}

inline void Exit(ReaderSlot* s) {
  if (--s->depth != 0) return;
  s->seq.store(s->seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// RAII read section (nests).
class ReadSection {
 public:
  ReadSection() : slot_(MySlot()) { Enter(slot_); }
  explicit ReadSection(ReaderSlot* slot) : slot_(slot) { Enter(slot_); }
  ~ReadSection() { Exit(slot_); }
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;

 private:
  ReaderSlot* slot_;
};

// Writer side. Start() after publishing the replacement (any atomic store);
// then Done() polls, Wait() blocks, until every reader that was inside a
// section at Start() has left. Reusable: Start() again for a new period.
class GracePeriod {
 public:
  void Start();
  bool Done();
  void Wait();

 private:
  std::vector<std::pair<const ReaderSlot*, uint64_t>> inside_;
};

// Returns once every read section that began before the call has ended.
inline void Synchronize() {
  GracePeriod g;
  g.Start();
  g.Wait();
}

// True if readers use the membarrier fast path (for tests and logs).
bool LightFences();

}  // namespace reclaim
}  // namespace dlcbf
