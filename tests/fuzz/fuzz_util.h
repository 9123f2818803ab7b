// Helpers shared by the libFuzzer targets in fuzz/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dlcbf/internal/coding.h"
#include "dlcbf/internal/hash.h"

namespace dlcbf {
namespace fuzz {

// Every serialized form in this project (dlCBF, CBF, ABF, SST filter
// block) ends in an 8-byte XXH3-64 (seed 0) of all preceding bytes. Random
// bytes almost never carry a valid checksum, so the targets also feed each
// input with its last 8 bytes replaced by the correct checksum: that sends
// the fuzzer past the checksum into the semantic checks and the probing
// code.
inline std::string WithValidChecksum(const uint8_t* data, size_t size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  if (s.size() < 8) return s;
  const size_t body = s.size() - 8;
  std::string sum;
  internal::PutFixed64(&sum, internal::HashKey(s.data(), body, 0));
  s.replace(body, 8, sum);
  return s;
}

// Consumes the fuzzer input from the front.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  size_t remaining() const { return n_; }
  uint8_t Byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint32_t U16() { return Byte() | (uint32_t{Byte()} << 8); }
  // An integer in [lo, hi].
  uint32_t Range(uint32_t lo, uint32_t hi) {
    uint32_t span = hi - lo + 1;
    uint32_t v = span <= 256 ? Byte() : U16();
    return lo + v % span;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

[[noreturn]] inline void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "FUZZ INVARIANT VIOLATED: %s %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace fuzz
}  // namespace dlcbf
