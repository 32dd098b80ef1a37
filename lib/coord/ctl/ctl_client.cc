#include "coord/ctl/ctl_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "coord/contract/socket_path.h"

namespace gpushare::coord::ctl {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

Result<CtlConnection> CtlConnection::connect(const std::string& socket_path,
                                             std::chrono::milliseconds timeout) {
  sockaddr_un address{};
  if (socket_path.size() >= sizeof address.sun_path) {
    return make_error("socket path '" + socket_path + "' is too long");
  }
  char why[256];
  if (!socket_directory_trusted(socket_path.c_str(), why, sizeof why)) {
    return make_error("refusing the coordinator socket " + socket_path + ": " + why);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  // A unix connect completes at once unless the listener's backlog is full
  // (EAGAIN: it is alive but not accepting, e.g. stopped); retry until the
  // deadline, backing off, rather than block without bound.
  Clock::time_point deadline = Clock::now() + timeout;
  int wait_ms = 1;
  for (;;) {
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) break;
    int error = errno;
    if (error == EINTR) continue;
    if (error == EAGAIN && remaining_ms(deadline) > 0) {
      poll(nullptr, 0, std::min(wait_ms, remaining_ms(deadline)));
      wait_ms = std::min(wait_ms * 2, 100);
      continue;
    }
    close(fd);
    if (error == ENOENT || error == ECONNREFUSED) {
      return make_error("no coordinator is running on " + socket_path +
                        (error == ECONNREFUSED ? " (a stale socket is left there)" : "") +
                        "; start one with 'gpushare-ctl serve'");
    }
    if (error == EAGAIN) {
      return make_error("the coordinator on " + socket_path + " accepts no connections (busy or " +
                        "stopped) after " + std::to_string(timeout.count()) + " ms");
    }
    return make_error("cannot connect to " + socket_path + ": " + std::strerror(error));
  }
  uid_t peer_uid = 0;
  if (!peer_is_trusted(fd, &peer_uid)) {
    close(fd);
    return make_error("refusing the coordinator on " + socket_path + ": it runs as uid " +
                      std::to_string(static_cast<int>(peer_uid)) + ", not as this user or root");
  }
  return CtlConnection(fd, socket_path);
}

CtlConnection::CtlConnection(CtlConnection&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), pending_(std::move(other.pending_)) {
  other.fd_ = -1;
}

CtlConnection::~CtlConnection() {
  if (fd_ >= 0) close(fd_);
}

Result<std::vector<nlohmann::ordered_json>> CtlConnection::request(
    const Request& request, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::string line = encode_request(request);
  for (std::size_t sent = 0; sent < line.size();) {
    ssize_t n = send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd_, POLLOUT, 0};
      int ready = poll(&p, 1, remaining_ms(deadline));
      if (ready == 0) return make_error("the coordinator on " + path_ + " did not answer in time");
      continue;
    }
    if (n <= 0) return make_error("the coordinator on " + path_ + " went away");
    sent += static_cast<std::size_t>(n);
  }
  std::string reply = std::move(pending_);
  pending_.clear();
  for (;;) {
    std::size_t newline = reply.find('\n');
    if (newline != std::string::npos) {
      pending_ = reply.substr(newline + 1);
      reply.resize(newline);
      return decode_records(reply);
    }
    if (reply.size() > kMaxReplyBytes) {
      return make_error("the coordinator's reply is longer than " + std::to_string(kMaxReplyBytes) +
                        " bytes");
    }
    pollfd p{fd_, POLLIN, 0};
    int ready = poll(&p, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return make_error("the coordinator on " + path_ + " did not answer in time");
    char buffer[65536];
    ssize_t n = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && errno == EAGAIN) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("the coordinator on " + path_ + " went away");
    reply.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace gpushare::coord::ctl
