#pragma once
// A small std::expected-style result: a value or an Error. C++20 has no std::expected, and module
// borders must not throw, so every fallible function that crosses one returns Result<T>.
#include <string>
#include <utility>
#include <variant>

namespace kgpu {

struct Error {
  // Machine-readable category, so callers can map errors (e.g. to gRPC status codes) without
  // parsing text.
  enum class Code { InvalidArgument, NotFound, FailedPrecondition, Unavailable, Internal };
  Code code = Code::Internal;
  std::string message;

  static Error invalid(std::string m) { return {Code::InvalidArgument, std::move(m)}; }
  static Error not_found(std::string m) { return {Code::NotFound, std::move(m)}; }
  static Error precondition(std::string m) { return {Code::FailedPrecondition, std::move(m)}; }
  static Error unavailable(std::string m) { return {Code::Unavailable, std::move(m)}; }
  static Error internal(std::string m) { return {Code::Internal, std::move(m)}; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Result of an operation that yields nothing but may fail.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace kgpu
