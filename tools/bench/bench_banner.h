// The header lines every benchmark prints about the machine and its own
// build (compiler, optimization, NDEBUG, -march features), with a loud
// warning for unoptimized or assert-enabled builds. One copy for all.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
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

inline std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// "# machine: ..." and "# ours: ..." lines, then the warning when timings
// are not representative.
inline void PrintBuildBanner() {
  std::printf("# machine: %s, %ld hardware threads; load average at start: %s\n", CpuModel().c_str(),
              sysconf(_SC_NPROCESSORS_ONLN), LoadAvg().c_str());
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
