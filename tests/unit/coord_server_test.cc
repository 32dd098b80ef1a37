// The coordinator's event loop against raw sockets: limits on connections,
// idle connections dropped, idle exit, and stopping.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>

#include "coord/server/server.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;
using namespace std::chrono_literals;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/gpushare-server-test.XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

int connect_to(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, path.c_str());
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

// Everything the peer sends until it closes, or "<open>" after `wait`.
std::string read_until_closed(int fd, std::chrono::milliseconds wait) {
  std::string received;
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return "<open>";
    char buffer[4096];
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return received;
    received.append(buffer, static_cast<std::size_t>(n));
  }
}

void send_line(int fd, const std::string& line) {
  REQUIRE(send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size()));
}

struct Running {
  std::unique_ptr<Server> server;
  std::future<gpushare::Result<StopReason>> result;
  int stop = eventfd(0, EFD_CLOEXEC);
  explicit Running(ServerOptions options) {
    options.stop_fd = stop;
    auto opened = Server::open(std::move(options));
    REQUIRE(opened.ok());
    server = std::move(*opened);
    result = std::async(std::launch::async, [this] { return server->run(); });
  }
  StopReason stop_now() {
    std::uint64_t one = 1;
    REQUIRE(write(stop, &one, sizeof one) == sizeof one);
    auto reason = result.get();
    REQUIRE(reason.ok());
    return *reason;
  }
  ~Running() {
    if (result.valid()) stop_now();
    close(stop);
  }
};

}  // namespace

TEST_CASE("connections beyond the limit are told the coordinator is busy", "[coord][server]") {
  TempDir dir;
  ServerOptions options;
  options.socket_path = dir.path + "/s.sock";
  options.max_connections = 3;
  Running running(options);
  int held[3];
  for (int& fd : held) {
    fd = connect_to(options.socket_path);
    send_line(fd, "{\"kind\":\"list\",\"version\":1}\n");
  }
  for (int fd : held) {  // each answered: all three are in
    char buffer[256];
    REQUIRE(recv(fd, buffer, sizeof buffer, 0) > 0);
  }
  int extra = connect_to(options.socket_path);
  std::string reply = read_until_closed(extra, 2000ms);
  CHECK_THAT(reply, Catch::Matchers::Contains("\"reason\":\"busy\""));
  close(extra);
  close(held[0]);
  // A freed slot is available again, once the coordinator has seen it go
  // (the close and a new connection may reach it in either order).
  int again = -1;
  std::string answer;
  auto deadline = std::chrono::steady_clock::now() + 2s;
  do {
    if (again >= 0) close(again);
    again = connect_to(options.socket_path);
    // Refused while the freed slot is not yet seen, the connection is told
    // "busy" and closed, which the send or the read may meet first (EPIPE,
    // ECONNRESET, end of file): that is a "busy" too, and the loop retries.
    const std::string list = "{\"kind\":\"list\",\"version\":1}\n";
    bool sent = send(again, list.data(), list.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(list.size());
    char buffer[256];
    ssize_t n = sent ? recv(again, buffer, sizeof buffer, 0) : -1;
    answer = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "busy (closed)";
  } while (answer.find("busy") != std::string::npos && std::chrono::steady_clock::now() < deadline);
  CHECK_THAT(answer, Catch::Matchers::StartsWith("{\"kind\":\"records\""));
  for (int fd : {held[1], held[2], again}) close(fd);
}

TEST_CASE("a connection that says nothing is dropped and one that asked stays", "[coord][server]") {
  TempDir dir;
  ServerOptions options;
  options.socket_path = dir.path + "/s.sock";
  options.first_message_timeout = 200ms;
  Running running(options);
  int silent = connect_to(options.socket_path);
  send_line(silent, "{\"kind\":\"li");  // never finished
  int talker = connect_to(options.socket_path);
  send_line(talker, "{\"kind\":\"list\",\"version\":1}\n");
  std::string reply = read_until_closed(silent, 2000ms);
  CHECK_THAT(reply, Catch::Matchers::Contains("no complete message in time"));
  CHECK(read_until_closed(talker, 500ms) == "<open>");
  close(silent);
  close(talker);
}

TEST_CASE("an idle coordinator exits after its grace period", "[coord][server]") {
  TempDir dir;
  ServerOptions options;
  options.socket_path = dir.path + "/s.sock";
  options.idle_exit = true;
  options.idle_grace = 100ms;
  auto start = std::chrono::steady_clock::now();
  auto server = Server::open(options);
  REQUIRE(server.ok());
  auto reason = (*server)->run();
  REQUIRE(reason.ok());
  CHECK(*reason == StopReason::kIdle);
  CHECK(std::chrono::steady_clock::now() - start >= 100ms);
}

TEST_CASE("the stop descriptor ends the loop and the socket goes", "[coord][server]") {
  TempDir dir;
  ServerOptions options;
  options.socket_path = dir.path + "/s.sock";
  {
    Running running(options);
    CHECK(running.stop_now() == StopReason::kStopRequested);
    running.server.reset();
  }
  CHECK(access(options.socket_path.c_str(), F_OK) != 0);
}
