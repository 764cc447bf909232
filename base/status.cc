#include "base/status.h"

namespace crawld {

std::string_view Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid_argument";
    case Code::kNotFound:
      return "not_found";
    case Code::kIOError:
      return "io_error";
    case Code::kCorruption:
      return "corruption";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kTimeout:
      return "timeout";
    case Code::kResourceExhausted:
      return "resource_exhausted";
    case Code::kFailedPrecondition:
      return "failed_precondition";
    case Code::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace crawld
