// internal::PdepIsFast (include/dlcbf/internal/cpu.h): the one start-up
// measurement of PDEP against the portable select.
#include "dlcbf/internal/cpu.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "filter_policy/core/dense_dleft_block.h"

namespace dlcbf {
namespace internal {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
namespace {
// Nanoseconds for `n` selects in a latency chain, as in a probe: each
// select's result feeds the next word; w has at least 32 ones, so the
// j-th (j < 32) always exists. The sum leaves through *sink so the loop is
// not removed.
template <class SelectFn>
uint64_t TimeSelects(int n, uint64_t* sink, SelectFn select) {
  uint64_t x = 0x9E3779B97F4A7C15ULL, acc = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL + acc;
    const uint64_t w = x | 0x5555555555555555ULL;
    acc = static_cast<uint64_t>(select(w, static_cast<int>((x >> 59) & 31)));
  }
  *sink += acc;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}
__attribute__((target("bmi2"))) uint64_t TimePdep(int n, uint64_t* sink) {
  return TimeSelects(n, sink, [](uint64_t w, int j) { return dense_detail::Select64Pdep(w, j); });
}
uint64_t TimePortable(int n, uint64_t* sink) {
  return TimeSelects(n, sink, [](uint64_t w, int j) { return dense_detail::Select64Portable(w, j); });
}
}  // namespace
#endif

bool PdepIsFast() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool fast = [] {
    if (!__builtin_cpu_supports("bmi2")) return false;
    uint64_t sink = 0, best_pdep = UINT64_MAX, best_portable = UINT64_MAX;
    for (int round = 0; round < 5; ++round) {
      best_pdep = std::min(best_pdep, TimePdep(2048, &sink));
      best_portable = std::min(best_portable, TimePortable(2048, &sink));
    }
    volatile uint64_t keep = sink;
    (void)keep;
    return best_pdep <= best_portable;
  }();
  return fast;
#else
  return false;
#endif
}

}  // namespace internal
}  // namespace dlcbf
