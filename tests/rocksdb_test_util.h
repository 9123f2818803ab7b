// RocksDB helpers shared by the test suites and the test tools
// (tools/crash_test, tools/stress, tools/bench): an order-sensitive merge
// operator, a logger that captures lines, fresh test directories, a whole
// file's bytes and LiveKeyDB's diagnostics by name (one copy of each).
#pragma once

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "dlcbf/rocksdb/live_key_db.h"

#include "rocksdb/env.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/slice.h"

namespace dlcbf {
namespace testing_util {

// value = existing + "," + operand: a non-commutative append, so a lost or
// reordered merge operand changes the result. Never fails.
class AppendOperator : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* out, rocksdb::Logger*) const override {
    out->clear();
    if (existing != nullptr) {
      out->assign(existing->data(), existing->size());
      out->push_back(',');
    }
    out->append(value.data(), value.size());
    return true;
  }
  const char* Name() const override { return "AppendOperator"; }
};

// Keeps every line logged to it (any level); All() joins them.
class CapturingLogger : public rocksdb::Logger {
 public:
  CapturingLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::DEBUG_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    // RocksDB never passes a null format, but with -fsanitize=undefined
    // GCC 12 sees a null path and -Wformat-truncation fails the build:
    // say so explicitly.
    if (format == nullptr) return;
    char buf[2048];
    if (std::vsnprintf(buf, sizeof(buf), format, ap) < 0) return;
    std::lock_guard<std::mutex> l(mu_);
    lines_.emplace_back(buf);
  }
  std::string All() {
    std::lock_guard<std::mutex> l(mu_);
    std::string s;
    for (const auto& x : lines_) s += x + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// An empty directory <TEST_TMPDIR or /tmp>/<prefix>_<pid>_<name>.
inline std::string TestDir(const std::string& prefix, const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path p = std::filesystem::path(base ? base : "/tmp") /
                            (prefix + "_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

// The whole file's bytes ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// LiveKeyStats' diagnostic `name` (LiveKeyStats::diagnostics); a name it
// does not report is a test's or tool's bug: it says so and aborts.
inline uint64_t Diag(const dlcbf::LiveKeyStats& st, const char* name) {
  uint64_t v = 0;
  if (!st.GetDiagnostic(name, &v)) {
    std::fprintf(stderr, "LiveKeyStats has no diagnostic '%s'\n", name);
    std::abort();
  }
  return v;
}

}  // namespace testing_util
}  // namespace dlcbf
