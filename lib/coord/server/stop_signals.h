// How a coordinator is told to stop: SIGTERM and SIGINT arrive on a
// descriptor its event loop watches (signalfd) instead of interrupting it;
// SIGPIPE (a peer gone mid-reply) and SIGHUP (a closed terminal) are
// ignored.
#pragma once

#include "common/result.h"

namespace gpushare::coord::server {

class StopSignals {
 public:
  StopSignals() = default;
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals();

  /// Blocks SIGTERM and SIGINT for the process and opens the descriptor.
  Status take();
  /// The descriptor to watch (ServerOptions::stop_fd); -1 before take().
  int fd() const { return fd_; }
  /// The signal that arrived ("TERM", "INT"), read from the descriptor;
  /// "TERM" when none can be read.
  const char* received_name();

 private:
  int fd_ = -1;
};

}  // namespace gpushare::coord::server
