// OpResult: the outcome of a filter mutation (Insert / Erase), shared by
// every structure in dlcbf/core. A small enum rather than Status so
// the hot path never allocates.
#pragma once

#include <cstdint>

namespace dlcbf {

// [[nodiscard]]: an ignored kOverflow is a key the filter does not hold,
// so every call that returns an OpResult must look at it (or say why not
// with a cast to void).
enum class [[nodiscard]] OpResult : uint8_t {
  kOk = 0,
  kNotFound = 1,      // Erase: the key's fingerprint / counters are not there
  kOverflow = 2,      // Insert: no room (the filter is unchanged)
  kNotSupported = 3,  // Erase on a structure that cannot erase (no counters)
};

// "ok", "not found", "overflow", "not supported". Never null.
const char* ToString(OpResult r);

}  // namespace dlcbf
