// Test helper: a kernel's options from its sizing call, as a value. The
// sizing calls return Status and write an out-parameter; tests that only
// need a valid geometry use these and fail loudly when the call refuses.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "dlcbf/core/dense_dleft_filter.h"
#include "dlcbf/core/dleft_counting_bloom_filter.h"
#include "dlcbf/core/fast_dleft_filter.h"

namespace dlcbf {
namespace testing_util {

inline FastDLeftOptions FastAt(uint64_t n, double load, uint32_t subtables = 2) {
  FastDLeftOptions o;
  o.subtables = subtables;
  const Status s = FastDLeftOptions::ForLoad(n, load, &o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o;
}

inline DLeftOptions DLeftAt(uint64_t n, double load, DLeftOptions o = DLeftOptions()) {
  const Status s = DLeftOptions::ForLoad(n, load, &o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o;
}

}  // namespace testing_util
}  // namespace dlcbf
