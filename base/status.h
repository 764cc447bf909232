// base/status.h: the project's one error type and the Result<T> that carries
// a value or a Status across component boundaries.
//
// Modelled on LevelDB's include/leveldb/status.h (a cheap OK path, a small
// code enum, a message) and on std::expected / ada::result for returning a
// value or an error. We use our own small Result<T> rather than
// std::expected because the fuzz toolchain (clang) and g++ 12 disagree on
// <expected> under -std=c++20, and C++20 is what both accept.
//
// No exceptions cross a component boundary: components translate library
// errors (CURLcode, ares status, leveldb::Status) into a Status here.
#ifndef CRAWLD_BASE_STATUS_H_
#define CRAWLD_BASE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace crawld {

// Status is a value type; copying it copies the message. The OK status has
// an empty message and costs no allocation.
class Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kInvalidArgument,  // bad input from a user, a file or the network
    kNotFound,
    kIOError,      // filesystem or socket failure
    kCorruption,   // on-disk or on-wire data is inconsistent
    kUnavailable,  // a peer or a service did not answer (retryable)
    kTimeout,
    kResourceExhausted,  // a cap was hit (size, count, memory)
    kFailedPrecondition,
    kInternal,
  };

  Status() = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status NotFound(std::string msg) {
    return Status(Code::kNotFound, std::move(msg));
  }
  static Status IOError(std::string msg) {
    return Status(Code::kIOError, std::move(msg));
  }
  static Status Corruption(std::string msg) {
    return Status(Code::kCorruption, std::move(msg));
  }
  static Status Unavailable(std::string msg) {
    return Status(Code::kUnavailable, std::move(msg));
  }
  static Status Timeout(std::string msg) {
    return Status(Code::kTimeout, std::move(msg));
  }
  static Status ResourceExhausted(std::string msg) {
    return Status(Code::kResourceExhausted, std::move(msg));
  }
  static Status FailedPrecondition(std::string msg) {
    return Status(Code::kFailedPrecondition, std::move(msg));
  }
  static Status Internal(std::string msg) {
    return Status(Code::kInternal, std::move(msg));
  }

  [[nodiscard]] bool ok() const { return code_ == Code::kOk; }
  [[nodiscard]] Code code() const { return code_; }
  // The message without the code name; empty for OK.
  [[nodiscard]] const std::string& message() const { return message_; }
  // "OK" or "<CodeName>: <message>", for logs and error output.
  [[nodiscard]] std::string ToString() const;
  // Stable lower-case name of a code, e.g. "invalid_argument".
  static std::string_view CodeName(Code code);

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

// Result<T> holds either a T or a non-OK Status.
//
// REQUIRES: a Result is constructed from a non-OK Status only (an OK Status
// without a value is a programming error, asserted in debug builds).
// value() on an error Result, or status() details on a value, are asserted.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Status status)
      : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    assert(!std::get<1>(v_).ok());
  }

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok().
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The error, or an OK Status when a value is held.
  [[nodiscard]] Status status() const {
    return ok() ? Status::Ok() : std::get<1>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace crawld

#endif  // CRAWLD_BASE_STATUS_H_
