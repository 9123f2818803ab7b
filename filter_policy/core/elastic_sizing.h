// ElasticFilter's kernel sizing: the kFast / kDense kernel options an
// ElasticOptions asks for, shared by option validation
// (elastic_options.cc) and the filter's construction (elastic_filter.cc).
// Internal to filter_policy/core/.
#pragma once

#include <algorithm>

#include "dlcbf/core/elastic_filter.h"

namespace dlcbf {
namespace elastic_detail {

// The kFast kernel's options after sizing (see ElasticOptions::fast). A
// sizing request out of range leaves the blocks as given; *why says why.
inline FastDLeftOptions SizedFast(const ElasticOptions& o, dlcbf::Status* why = nullptr) {
  FastDLeftOptions f = o.fast;
  f.thread_safe = o.thread_safe;
  if (o.expected_items > 0) {
    const double load = std::min(o.sizing_load, FastDLeftOptions::MaxLoad(f.subtables));
    dlcbf::Status s = FastDLeftOptions::ForLoad(o.expected_items, load, &f);
    if (why != nullptr) *why = s;
  }
  return f;
}

// The kDense kernel's options after sizing (see ElasticOptions::dense). A
// sizing request out of range leaves the blocks as given; *why says why.
inline DenseDLeftOptions SizedDense(const ElasticOptions& o, dlcbf::Status* why = nullptr) {
  DenseDLeftOptions d = o.dense;
  d.thread_safe = o.thread_safe;
  if (o.expected_items > 0) {
    const double load = std::min(o.sizing_load, DenseDLeftOptions::MaxLoad(d.remainder_bits));
    dlcbf::Status s = DenseDLeftOptions::ForLoad(o.expected_items, load, d.remainder_bits, &d);
    if (why != nullptr) *why = s;
  }
  return d;
}

}  // namespace elastic_detail
}  // namespace dlcbf
