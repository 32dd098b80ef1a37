#include "coord/server/line_buffer.h"

namespace gpushare::coord::server {

bool LineBuffer::append(std::string_view bytes) {
  if (overflowed_) return false;
  // Drop consumed lines before growing, so the buffer stays near one line.
  if (start_ > 0 && start_ == data_.size()) {
    data_.clear();
    start_ = 0;
  } else if (start_ > max_line_bytes_) {
    data_.erase(0, start_);
    start_ = 0;
  }
  data_.append(bytes);
  // Check every complete line in what is buffered, and the unfinished tail.
  std::size_t line_start = start_;
  for (;;) {
    std::size_t newline = data_.find('\n', line_start + (line_start == start_ ? scanned_ : 0));
    if (newline == std::string::npos) break;
    if (newline - line_start > max_line_bytes_) {
      overflowed_ = true;
      return false;
    }
    line_start = newline + 1;
  }
  if (data_.size() - line_start > max_line_bytes_) {
    overflowed_ = true;
    return false;
  }
  return true;
}

std::optional<std::string> LineBuffer::next_line() {
  if (overflowed_) return std::nullopt;
  std::size_t newline = data_.find('\n', start_ + scanned_);
  if (newline == std::string::npos) {
    scanned_ = data_.size() - start_;
    return std::nullopt;
  }
  std::string line = data_.substr(start_, newline - start_);
  start_ = newline + 1;
  scanned_ = 0;
  return line;
}

}  // namespace gpushare::coord::server
