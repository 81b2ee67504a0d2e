// Status and StatusOr<T>: the error vocabulary of dplace.
//
// Everything that user input can break (files, formats, options, solver failures) returns a Status;
// broken invariants (bugs) use DPLACE_CHECK and abort. kInvalidInput maps to exit code 2 at the
// command line, every other error code to exit code 1.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace dplace {

enum class StatusCode { kOk, kInvalidInput, kNotFound, kInternal };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<context>: <message>" (e.g. the file name in front).
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidInput(std::string message) {
  return Status(StatusCode::kInvalidInput, std::move(message));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("StatusOr constructed from an OK status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "internal error: %s:%d: check failed: %s\n", file, line, condition);
  std::abort();
}

}  // namespace dplace

#define DPLACE_CHECK(condition) \
  ((condition) ? (void)0 : ::dplace::CheckFailed(__FILE__, __LINE__, #condition))

#define DPLACE_CONCAT_INNER(a, b) a##b
#define DPLACE_CONCAT(a, b) DPLACE_CONCAT_INNER(a, b)

// Evaluates a Status expression and returns it from the enclosing function when not OK.
#define DPLACE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::dplace::Status dplace_status_ = (expr);        \
    if (!dplace_status_.ok()) return dplace_status_; \
  } while (false)

// DPLACE_ASSIGN_OR_RETURN(auto x, StatusOrExpr): unwraps or returns the error.
#define DPLACE_ASSIGN_OR_RETURN(lhs, expr) \
  DPLACE_ASSIGN_OR_RETURN_IMPL(DPLACE_CONCAT(dplace_statusor_, __LINE__), lhs, expr)
#define DPLACE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
