// Helpers shared by the LiveKeyDB test suites (live_key_db_test.cc and
// live_key_db_oracle_test.cc): a merge operator and fresh test directories.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "rocksdb/merge_operator.h"
#include "rocksdb/slice.h"

namespace dlcbf {
namespace testing_util {

// Appends operands with ','; never fails.
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

// An empty directory <TEST_TMPDIR or /tmp>/<prefix>_<pid>_<name>.
inline std::string TestDir(const std::string& prefix, const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path p = std::filesystem::path(base ? base : "/tmp") /
                            (prefix + "_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

}  // namespace testing_util
}  // namespace dlcbf
