// Iteration scaling for slow tests.
//
// DLCBF_TEST_SCALE (a positive decimal, default 1) multiplies the iteration
// counts of the slow randomized / stress tests that include this header. The
// sanitizer suites (tools/run.sh asan|tsan) run with 0.25: every check still
// runs, on fewer random inputs. Values are clamped to [0.01, 100].
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace dlcbf {
namespace testing_util {

inline double TestScale() {
  static const double scale = [] {
    const char* e = std::getenv("DLCBF_TEST_SCALE");
    double v = e ? std::strtod(e, nullptr) : 1.0;
    if (!(v > 0)) v = 1.0;
    return std::min(100.0, std::max(0.01, v));
  }();
  return scale;
}

// n scaled, at least `min_n`.
inline uint64_t Scaled(uint64_t n, uint64_t min_n = 1) {
  return std::max<uint64_t>(min_n, static_cast<uint64_t>(static_cast<double>(n) * TestScale()));
}

}  // namespace testing_util
}  // namespace dlcbf
