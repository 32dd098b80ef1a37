// gpushare-ctl's side of the protocol: one connection to the coordinator,
// requests in, records out. Every wait is bounded.
#pragma once

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "coord/contract/protocol.h"

namespace gpushare::coord::ctl {

class CtlConnection {
 public:
  /// Connects to the coordinator at `socket_path`, within `timeout` (a
  /// stopped coordinator with a full backlog must not hang the caller). The
  /// error says whether nobody is there, a dead coordinator left its
  /// socket, access failed, or the listener is not to be trusted (it runs
  /// as another user, or its per-user directory is not private).
  static Result<CtlConnection> connect(
      const std::string& socket_path, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  CtlConnection(CtlConnection&& other) noexcept;
  CtlConnection& operator=(CtlConnection&&) = delete;
  CtlConnection(const CtlConnection&) = delete;
  ~CtlConnection();

  /// Sends a request and waits (up to `timeout`) for its reply: the
  /// records, or an Error with the coordinator's reason.
  Result<std::vector<nlohmann::ordered_json>> request(
      const Request& request, std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  CtlConnection(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  std::string pending_;  // bytes after the last reply line
};

}  // namespace gpushare::coord::ctl
