// Errors are values: a fallible function returns Result<T>, holding either
// its value or an Error whose message names what was wrong. Only the
// programs in cmd/ print errors (through diag.h); lib/ never prints or exits.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpushare {

/// What went wrong, as one human-readable sentence (no "error:" prefix).
struct Error {
  std::string message;
};

/// Makes an Error; reads better at a return site than a brace initialiser.
inline Error make_error(std::string message) { return Error{std::move(message)}; }

/// Either a value or an Error. Small and cheap; no exceptions.
template <class T>
class Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

/// Success or an Error, for functions with nothing to return.
template <>
class Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT: implicit

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

using Status = Result<void>;

}  // namespace gpushare
