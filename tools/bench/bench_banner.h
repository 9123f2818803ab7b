// The header lines the gflags benchmarks (peer_bench, live_key_bench,
// memtable_index_bench, recovery_bench, dense_gate_bench) and
// sst_filter_bench print about the machine (model, family, the SIMD flags
// the kernels choose paths by, load) and their own build (compiler,
// optimization, NDEBUG, -march features), with a loud warning for
// unoptimized or assert-enabled builds. One copy for all; filter_bench's
// Google Benchmark prints its own context.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <string>

namespace dlcbf {
namespace bench {

inline std::string CpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// "family F model M; flags: ..." from /proc/cpuinfo, with the flags the
// kernels choose paths by (a VM may hide the model name, not these).
inline std::string CpuSignature() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, family = "?", model = "?", flags;
  auto value = [](const std::string& l) { return l.substr(l.find(':') + 2); };
  while (std::getline(f, line)) {
    if (line.rfind("cpu family", 0) == 0 && family == "?") family = value(line);
    if (line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0 && model == "?") model = value(line);
    if (line.rfind("flags", 0) == 0 && flags.empty()) {
      const std::string all = " " + value(line) + " ";
      for (const char* want : {"popcnt", "bmi2", "avx2", "avx512f", "avx512bw", "avx512vl"}) {
        if (all.find(std::string(" ") + want + " ") == std::string::npos) continue;
        flags += std::string(flags.empty() ? "" : " ") + want;
      }
      if (flags.empty()) flags = "none of popcnt bmi2 avx2 avx512*";
    }
  }
  return "family " + family + " model " + model + "; flags: " + flags;
}

inline std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// "# machine: ...", "# cpu: ..." and "# ours: ..." lines, then the warning
// when timings are not representative.
inline void PrintBuildBanner() {
  std::printf("# machine: %s, %ld hardware threads; load average at start: %s\n", CpuModel().c_str(),
              sysconf(_SC_NPROCESSORS_ONLN), LoadAvg().c_str());
  std::printf("# cpu: %s\n", CpuSignature().c_str());
  std::printf("# ours: g++ %s, optimize=%s, NDEBUG=%s, -march: AVX2=%s AVX512F=%s\n", __VERSION__,
#ifdef __OPTIMIZE__
              "yes",
#else
              "NO",
#endif
#ifdef NDEBUG
              "yes",
#else
              "NO",
#endif
#ifdef __AVX2__
              "yes",
#else
              "no (portable build)",
#endif
#ifdef __AVX512F__
              "yes"
#else
              "no"
#endif
  );
#if !defined(NDEBUG) || !defined(__OPTIMIZE__)
  std::printf("#\n# ********************************************************************\n");
  std::printf("# WARNING: built without NDEBUG and/or optimization: timings are NOT\n");
  std::printf("# representative. Use a Release build (tools/run.sh build).\n");
  std::printf("# ********************************************************************\n#\n");
#endif
}

}  // namespace bench
}  // namespace dlcbf
