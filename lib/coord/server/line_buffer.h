// Splits a byte stream into lines of bounded length, for the coordinator's
// connections. Bytes arrive in arbitrary pieces; a line longer than the
// bound is an error as soon as the bound is passed, before its end arrives,
// so a peer cannot make the coordinator buffer more than `max_line_bytes`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpushare::coord::server {

class LineBuffer {
 public:
  explicit LineBuffer(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  /// Adds bytes. Returns false (and stays failed) once a line, newline
  /// excluded, is longer than the bound.
  bool append(std::string_view bytes);

  /// The next complete line without its newline (a trailing CR is kept), or
  /// nullopt when none is complete.
  std::optional<std::string> next_line();

  bool overflowed() const { return overflowed_; }
  /// Bytes held that are not yet a complete line.
  std::size_t pending() const { return data_.size() - start_; }

 private:
  std::size_t max_line_bytes_;
  std::string data_;
  std::size_t start_ = 0;    // where the next line begins
  std::size_t scanned_ = 0;  // bytes from start_ known to hold no newline
  bool overflowed_ = false;
};

}  // namespace gpushare::coord::server
