// OpResult: the outcome of a filter mutation (Insert / Erase), shared by
// every structure in dlcbf/core. A small enum rather than Status so
// the hot path never allocates.
#pragma once

#include <cstdint>

namespace dlcbf {

enum class OpResult : uint8_t {
  kOk = 0,
  kNotFound = 1,      // Erase: the key's fingerprint / counters are not there
  kOverflow = 2,      // Insert: no room (the filter is unchanged)
  kNotSupported = 3,  // Erase on a structure that cannot erase (no counters)
};

// "ok", "not found", "overflow", "not supported". Never null.
const char* ToString(OpResult r);

}  // namespace dlcbf
