// Test-only fault injection for DenseDLeftFilter's thread-safe readers,
// compiled only with DLCBF_TESTING (the test builds of the library); the
// shipped library has no hook and no check of one.
//
// A thread-safe reader answers "absent" only after re-reading the sequence
// numbers of its candidate stripes unchanged. The concurrency test in
// tests/dense_dleft_filter_test.cc must be able to catch a reader that
// skips that re-check; its negative control sets SkipNegativeRecheck and
// must see misses.
#pragma once

#ifndef DLCBF_TESTING
#error "dense_dleft_testing.h is for test builds (DLCBF_TESTING) only"
#endif

#include <atomic>
#include <cstdint>

namespace dlcbf {
namespace dense_testing {

inline std::atomic<bool> g_skip_negative_recheck{false};
inline std::atomic<uint32_t> g_reader_pause{0};
inline std::atomic<bool> g_force_portable{false};
inline std::atomic<bool> g_least_loaded_only{false};
inline std::atomic<bool> g_second_line_always{false};
inline std::atomic<bool> g_no_inline_probe{false};
inline std::atomic<int> g_forced_path{-1};
inline std::atomic<int> g_forced_pdep{-1};

// Process-wide switches; thread-safe.
inline void SetSkipNegativeRecheck(bool on) { g_skip_negative_recheck.store(on); }
inline bool SkipNegativeRecheck() { return g_skip_negative_recheck.load(std::memory_order_relaxed); }
// Filters created while this is on use the portable kernel instances (no
// POPCNT), so the suites check the path of CPUs without the instruction.
inline void SetForcePortable(bool on) { g_force_portable.store(on); }
inline bool ForcePortable() { return g_force_portable.load(std::memory_order_relaxed); }
// Filters created while this is on insert by the dlCBF's plain rule (the
// least-loaded candidate, ties to the left) instead of preferring the first
// candidate below kFirstChoiceSlots: the tests compare both rules' loads.
inline void SetLeastLoadedOnly(bool on) { g_least_loaded_only.store(on); }
inline bool LeastLoadedOnly() { return g_least_loaded_only.load(std::memory_order_relaxed); }
// Filters created while this is on request the second candidate's line on
// every insert (no second-line gate): benchmarks compare both.
inline void SetSecondLineAlways(bool on) { g_second_line_always.store(on); }
inline bool SecondLineAlways() { return g_second_line_always.load(std::memory_order_relaxed); }
// Filters created while this is >= 0 run the kernel instance set of that
// DenseSimdPath value (the caller checks that the CPU has it); -1: the
// CPU's choice.
inline void SetForcedPath(int path) { g_forced_path.store(path); }
inline int ForcedPath() { return g_forced_path.load(std::memory_order_relaxed); }
// Filters created while this is 0 or 1 select without or with PDEP (1 only
// where the CPU has BMI2); -1: internal::PdepIsFast decides.
inline void SetForcedPdep(int on) { g_forced_pdep.store(on); }
inline int ForcedPdep() { return g_forced_pdep.load(std::memory_order_relaxed); }
// Filters created while this is on run ContainsHash, InsertHash and
// EraseHash through the kernel instances even where the inline path
// applies: the tests compare both.
inline void SetNoInlineProbe(bool on) { g_no_inline_probe.store(on); }
inline bool NoInlineProbe() { return g_no_inline_probe.load(std::memory_order_relaxed); }
// Called under the writers' lock in each chunk of a chunked copy
// (SerializeInChunks, CopyChangedBlocks) with the chunk's first block
// (nullptr: none): a test can hold the copy inside a chunk.
inline std::atomic<void (*)(uint64_t)> g_chunk_locked_hook{nullptr};
inline void SetChunkLockedHook(void (*hook)(uint64_t)) { g_chunk_locked_hook.store(hook); }
inline void RunChunkLockedHook(uint64_t first_block) {
  if (void (*hook)(uint64_t) = g_chunk_locked_hook.load(std::memory_order_relaxed)) hook(first_block);
}
// Readers pause about `spins` relax instructions between candidate blocks
// (widens the window in which a concurrent move is seen half done).
inline void SetReaderPause(uint32_t spins) { g_reader_pause.store(spins); }
inline void ReaderPause() {
  const uint32_t n = g_reader_pause.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace dense_testing
}  // namespace dlcbf
