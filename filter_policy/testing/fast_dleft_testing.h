// Test-only fault injection for FastDLeftFilter's thread-safe readers. Compiled only
// into the test builds of the library (DLCBF_TESTING); never installed.
//
// In the thread-safe mode a reader takes no lock: it answers "absent" only
// after re-reading the sequence number of the key's stripe and finding it
// unchanged (include/dlcbf/core/fast_dleft_filter.h, "Thread safety").
// Without that re-check a reader can miss a key that a writer is moving
// (a relocation between two candidate buckets, or a spare group moving to
// its buddy line). The concurrency test in tests/fast_dleft_filter_test.cc
// must be able to catch that; its negative control sets the fault below to
// prove it. Never set outside tests.
#pragma once

#ifndef DLCBF_TESTING
#error "fast_dleft_testing.h is for test builds (DLCBF_TESTING) only: shipped libraries carry no hooks"
#endif

#include <cstdint>

namespace dlcbf {
namespace internal {

enum class FastDLeftFault : int {
  kNone = 0,
  // Thread-safe readers return a negative answer without re-checking the
  // stripe's sequence number (the seqlock validation is skipped).
  kSkipNegativeRecheck = 1,
};

// Process-wide; thread-safe (an atomic). Affects every FastDLeftFilter.
void SetFastDLeftFaultForTesting(FastDLeftFault fault);
FastDLeftFault GetFastDLeftFaultForTesting();

// Test-only: thread-safe readers pause for about `spins` CPU relax
// instructions between loading the key's candidate buckets, which widens
// the window in which a concurrent relocation can be observed half done.
// Applies with or without the fault (0 = no pause, the default).
void SetFastDLeftReaderPauseForTesting(uint32_t spins);

}  // namespace internal
}  // namespace dlcbf
