#include "coord/ctl_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "coord/client/socket_path.h"

namespace gpushare::coord {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

Result<CtlConnection> CtlConnection::connect(const std::string& socket_path) {
  sockaddr_un address{};
  if (socket_path.size() >= sizeof address.sun_path) {
    return make_error("socket path '" + socket_path + "' is too long");
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    int error = errno;
    close(fd);
    if (error == ENOENT || error == ECONNREFUSED) {
      return make_error("no coordinator is running on " + socket_path +
                        (error == ECONNREFUSED ? " (a stale socket is left there)" : "") +
                        "; start one with 'gpushare-ctl serve'");
    }
    return make_error("cannot connect to " + socket_path + ": " + std::strerror(error));
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
    ssize_t n = send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
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
    ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("the coordinator on " + path_ + " went away");
    reply.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace gpushare::coord
