// dense_gate_bench: the dense kernel's insert with and without its
// second-line gate (filter_policy/core/dense_dleft_impl.h, SecondLineItems),
// in ONE process: rounds alternate the two variants on fresh filters, and
// each figure is a median over the rounds. The variant without the gate is
// the test switch dense_testing::SetSecondLineAlways, so this benchmark
// links the test build of the library (built with DLCBF_BUILD_TESTS).
//
// Per configuration (class r, key count n, fill = the share of n inserted
// into a filter sized for n at MaxLoad), one line:
//   DENSE_GATE n=<> fill=<> r=<> always=<ns/insert> gated=<ns/insert>
//     ratio=<median over rounds of gated / always>
// fill 0.25 is a filter below its gate for every insert (a filter sized for
// growth); fill 1.0 is peer_bench's fill to MaxLoad (the first ~25 % of it
// below the gate).
//
// Usage: dense_gate_bench [--n=100000,10000000] [--fill=0.25,1.0] [--rounds=11]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "dlcbf/core/dense_dleft_filter.h"
#include "filter_policy/testing/dense_dleft_testing.h"
#include "tools/bench/bench_banner.h"

DEFINE_string(n, "100000,10000000", "key counts, comma-separated");
DEFINE_string(fill, "0.25,1.0", "shares of n to insert, comma-separated");
DEFINE_int32(rounds, 11, "rounds per configuration (each runs both variants)");

namespace {
std::vector<double> List(const std::string& s) {
  std::vector<double> v;
  size_t p = 0;
  while (p <= s.size()) {
    const size_t q = std::min(s.find(',', p), s.size());
    if (q > p) v.push_back(std::strtod(s.substr(p, q - p).c_str(), nullptr));
    p = q + 1;
  }
  return v;
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
// ns per insert of keys[0..m) into a fresh filter for n keys at MaxLoad(r).
double InsertRound(uint32_t r, size_t n, const std::vector<uint64_t>& keys, size_t m, bool always) {
  dlcbf::dense_testing::SetSecondLineAlways(always);
  dlcbf::DenseDLeftOptions o;
  std::unique_ptr<dlcbf::DenseDLeftFilter> f;
  dlcbf::Status s = dlcbf::DenseDLeftOptions::ForLoad(n, dlcbf::DenseDLeftOptions::MaxLoad(r), r, &o);
  if (s.ok()) s = dlcbf::DenseDLeftFilter::Create(o, &f);
  dlcbf::dense_testing::SetSecondLineAlways(false);
  if (!s.ok()) {
    std::fprintf(stderr, "dense_gate_bench: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < m; ++i) {
    if (f->InsertHash(keys[i]) != dlcbf::OpResult::kOk) {
      std::fprintf(stderr, "dense_gate_bench: insert %zu of %zu failed\n", i, m);
      std::exit(1);
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(m);
}
}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  dlcbf::bench::PrintBuildBanner();
  if (FLAGS_rounds < 1) {
    std::fprintf(stderr, "dense_gate_bench: --rounds must be >= 1\n");
    return 1;
  }
  for (double nd : List(FLAGS_n)) {
    const size_t n = static_cast<size_t>(nd);
    std::vector<uint64_t> keys(n);
    std::mt19937_64 rng(42);
    for (auto& k : keys) k = rng();
    for (double fill : List(FLAGS_fill)) {
      if (!(fill > 0 && fill <= 1)) {
        std::fprintf(stderr, "dense_gate_bench: --fill values must be in (0, 1]\n");
        return 1;
      }
      const size_t m = std::max<size_t>(1, static_cast<size_t>(static_cast<double>(n) * fill));
      for (uint32_t r : {8u, 16u}) {
        std::vector<double> always, gated, ratio;
        for (int i = 0; i < FLAGS_rounds; ++i) {
          // Alternate which variant goes first, so neither always runs on
          // the caches and page state the other left.
          const bool always_first = i % 2 == 0;
          const double a0 = InsertRound(r, n, keys, m, always_first);
          const double a1 = InsertRound(r, n, keys, m, !always_first);
          always.push_back(always_first ? a0 : a1);
          gated.push_back(always_first ? a1 : a0);
          ratio.push_back(gated.back() / always.back());
        }
        std::printf("DENSE_GATE n=%-9zu fill=%.2f r=%-2u always=%6.1f gated=%6.1f ratio=%.3f\n", n, fill, r,
                    Median(always), Median(gated), Median(ratio));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
