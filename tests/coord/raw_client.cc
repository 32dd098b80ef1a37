// gpushare-coord-raw: sends its stdin, byte for byte, to the coordinator's
// socket and prints whatever comes back, for the protocol's robustness
// tests. Exit status: 0 when the coordinator closed the connection, 3 when
// it was still open after --timeout-ms (default 2000), 1 when connecting
// failed. --pass FILE sends a descriptor of FILE (opened read-only) with
// the first bytes, as a job passes its tree file (a forger's tool).
//
//   gpushare-coord-raw [--socket PATH] [--timeout-ms N] [--pass FILE] < request-bytes
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "coord/contract/fd_passing.h"

int main(int argc, char** argv) {
  const char* path = std::getenv("GPUSHARE_SOCKET");
  int timeout_ms = 2000;
  const char* pass = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--socket") == 0) path = argv[i + 1];
    if (std::strcmp(argv[i], "--timeout-ms") == 0) timeout_ms = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--pass") == 0) pass = argv[i + 1];
  }
  int passed = -1;
  if (pass != nullptr && (passed = open(pass, O_RDONLY | O_CLOEXEC)) < 0) {
    std::fprintf(stderr, "gpushare-coord-raw: error: %s: %s\n", pass, std::strerror(errno));
    return 1;
  }
  if (path == nullptr) {
    std::fprintf(stderr, "gpushare-coord-raw: error: no socket (--socket or GPUSHARE_SOCKET)\n");
    return 1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "gpushare-coord-raw: error: %s: %s\n", path, std::strerror(errno));
    return 1;
  }
  std::string input;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0;)
    input.append(buffer, n);
  // The coordinator may hang up before taking everything (an oversized
  // message): stop sending then, and read its answer.
  for (std::size_t sent = 0; sent < input.size();) {
    ssize_t n;
    if (passed >= 0) {
      n = gpushare::coord::send_with_fds(fd, input.data() + sent, input.size() - sent, &passed, 1,
                                         0);
      close(passed);
      passed = -1;
    } else {
      n = send(fd, input.data() + sent, input.size() - sent, MSG_NOSIGNAL);
    }
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return 3;
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return 0;
    std::fwrite(buffer, 1, static_cast<std::size_t>(n), stdout);
    std::fflush(stdout);
  }
}
