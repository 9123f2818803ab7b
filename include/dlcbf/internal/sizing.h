// Shared helpers of the sizing calls (ForLoad / ForBitsPerKey / ForFpr) of
// every dlCBF's options: the number format of their InvalidArgument
// messages and the one formula that turns a target FPR into a fingerprint
// space. Internal: never installed.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dlcbf {
namespace internal {

// "%.6g": the form every sizing error prints its numbers in.
inline std::string SizingNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", x);
  return buf;
}

// The smallest fingerprint space S (distinct values a stored fingerprint can
// take, all d choices together) with 1 - (1 - 1/S)^n <= fpr, i.e.
// S >= 1 / (1 - (1 - fpr)^(1/n)). Precondition: 0 < fpr < 1, n >= 1.
inline double FingerprintSpaceForFpr(uint64_t n, double fpr) {
  return 1.0 / -std::expm1(std::log1p(-fpr) / static_cast<double>(n));
}

}  // namespace internal
}  // namespace dlcbf
