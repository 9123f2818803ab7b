// The one place the RocksDB glue turns the standalone core's types into
// RocksDB's: dlcbf::Status -> rocksdb::Status (code for code) and
// rocksdb::Slice -> std::string_view (the core's key type).
#pragma once

#include <string_view>

#include "dlcbf/core/status.h"
#include "rocksdb/slice.h"
#include "rocksdb/status.h"

namespace dlcbf {
namespace glue {

inline rocksdb::Status ToRocksStatus(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk: return rocksdb::Status::OK();
    case Status::Code::kInvalidArgument: return rocksdb::Status::InvalidArgument(s.message());
    case Status::Code::kCorruption: return rocksdb::Status::Corruption(s.message());
    case Status::Code::kMemoryLimit: return rocksdb::Status::MemoryLimit(s.message());
    case Status::Code::kNotSupported: return rocksdb::Status::NotSupported(s.message());
  }
  return rocksdb::Status::Corruption("unknown dlcbf::Status code: " + s.message());
}

inline std::string_view View(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

}  // namespace glue
}  // namespace dlcbf
