// dlcbf::Status: the outcome of a fallible core call (Create, Deserialize,
// Validate, sizing), so the core builds and links without RocksDB.
//
// What it is and why
//   The core layer (include/dlcbf/core/, include/dlcbf/model/) is a
//   standalone C++17 library: a program may use the counting filters with
//   no RocksDB at all, as it would use a cuckoo filter or a VQF. Its calls
//   that can fail return this small value type; the hot mutations return
//   OpResult (op_result.h), which never allocates. The RocksDB glue turns a
//   dlcbf::Status into a rocksdb::Status at its boundary
//   (filter_policy/rocksdb/common/status_conversion.h), code for code.
//
// Contract
//   - A default-constructed Status is OK. OK carries no message.
//   - The codes are a subset of rocksdb::Status's, with the same meaning:
//     kInvalidArgument (a bad option or argument; the message names the
//     field and its accepted range), kCorruption (serialized input that
//     does not parse; the message says why), kMemoryLimit (a table above
//     the configured or physical memory), kNotSupported.
//   - Never throws. Copyable and movable; thread-compatible (like any value).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace dlcbf {

class Status {
 public:
  enum class Code : uint8_t {
    kOk = 0,
    kInvalidArgument = 1,
    kCorruption = 2,
    kMemoryLimit = 3,
    kNotSupported = 4,
  };

  Status() = default;

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status MemoryLimit(std::string msg) { return Status(Code::kMemoryLimit, std::move(msg)); }
  static Status NotSupported(std::string msg) { return Status(Code::kNotSupported, std::move(msg)); }
  // "what: why", the two-part form (as rocksdb::Status joins its two messages).
  static Status InvalidArgument(const std::string& what, const std::string& why) { return InvalidArgument(what + ": " + why); }
  static Status Corruption(const std::string& what, const std::string& why) { return Corruption(what + ": " + why); }
  static Status MemoryLimit(const std::string& what, const std::string& why) { return MemoryLimit(what + ": " + why); }
  static Status NotSupported(const std::string& what, const std::string& why) { return NotSupported(what + ": " + why); }

  bool ok() const { return code_ == Code::kOk; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsMemoryLimit() const { return code_ == Code::kMemoryLimit; }
  bool IsNotSupported() const { return code_ == Code::kNotSupported; }

  Code code() const { return code_; }
  // The message alone ("" for OK).
  const std::string& message() const { return msg_; }
  // "OK", or "<Code name>: <message>" ("Invalid argument: remainder_bits ...").
  std::string ToString() const;

 private:
  Status(Code c, std::string msg) : code_(c), msg_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string msg_;
};

}  // namespace dlcbf
