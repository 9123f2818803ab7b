// dlcbf::Status::ToString (include/dlcbf/core/status.h): the one place that
// names the core's status codes.
#include "dlcbf/core/status.h"

namespace dlcbf {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: name = "Invalid argument: "; break;
    case Code::kCorruption: name = "Corruption: "; break;
    case Code::kMemoryLimit: name = "Memory limit: "; break;
    case Code::kNotSupported: name = "Not supported: "; break;
  }
  return name + msg_;
}

}  // namespace dlcbf
