// gpushare-coord-flood: a hostile co-tenant of the coordinator, for the
// control plane's attack tests. It opens connections and holds them until
// its stdin ends, then prints what it did as one JSON line:
//
//   gpushare-coord-flood [--socket PATH] connections N
//       opens up to N connections (non-blocking connects: it stops early
//       when the listener's backlog is full or it runs out of descriptors)
//   gpushare-coord-flood [--socket PATH] unread N [REQUESTS]
//       opens N connections and on each sends up to REQUESTS (default
//       100000) `ls` requests without ever reading a reply, for as long as
//       the coordinator keeps reading them
//
//   {"kind":"flood","opened":K,"backlog_full":B,"out_of_descriptors":D,
//    "requests_sent":R,"closed_by_peer":C}
//
// `closed_by_peer` counts, at the end, the connections the coordinator has
// hung up on. Exit status 0, or 1 when not even one connection opened.
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Report {
  int opened = 0;
  bool backlog_full = false;
  bool out_of_descriptors = false;
  long long requests_sent = 0;
  int closed_by_peer = 0;
};

int open_connection(const char* path, Report& report) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE) report.out_of_descriptors = true;
    return -1;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno == EAGAIN) report.backlog_full = true;
    close(fd);
    return -1;
  }
  ++report.opened;
  return fd;
}

// Keeps sending `ls` requests on every connection, `count` each, as long as
// the coordinator keeps reading them: it stops when every connection is
// done or none has taken a request for half a second (the coordinator has
// stopped reading). Partial writes are completed, so requests stay whole.
void send_requests(const std::vector<int>& fds, long long count, Report& report) {
  static const char kRequest[] = "{\"kind\":\"list\",\"version\":1}\n";
  constexpr std::size_t kSize = sizeof kRequest - 1;
  std::vector<long long> sent(fds.size(), 0);
  std::vector<std::size_t> partial(fds.size(), 0);  // bytes of the current request sent
  std::vector<pollfd> waiting;
  for (;;) {
    waiting.clear();
    for (std::size_t i = 0; i < fds.size(); ++i) {
      while (sent[i] < count) {
        ssize_t n =
            send(fds[i], kRequest + partial[i], kSize - partial[i], MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) break;
        partial[i] += static_cast<std::size_t>(n);
        if (partial[i] == kSize) {
          partial[i] = 0;
          ++sent[i];
          ++report.requests_sent;
        }
      }
      if (sent[i] < count) waiting.push_back({fds[i], POLLOUT, 0});
    }
    if (waiting.empty() || poll(waiting.data(), waiting.size(), 500) <= 0) return;
  }
}

bool closed_by_peer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR)) return true;
  // Readable: replies or an error line, then maybe end of file. Drain.
  char buffer[65536];
  for (;;) {
    ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = std::getenv("GPUSHARE_SOCKET");
  int i = 1;
  if (i + 1 < argc && std::strcmp(argv[i], "--socket") == 0) {
    path = argv[i + 1];
    i += 2;
  }
  if (path == nullptr || i + 1 >= argc) {
    std::fprintf(stderr, "usage: gpushare-coord-flood [--socket PATH] connections|unread N [R]\n");
    return 2;
  }
  std::string mode = argv[i];
  int count = std::atoi(argv[i + 1]);
  long long requests = i + 2 < argc ? std::atoll(argv[i + 2]) : 100000;
  if (mode != "connections" && mode != "unread") {
    std::fprintf(stderr, "gpushare-coord-flood: error: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  // As many descriptors as the hard limit allows: the attacker's own limit
  // must not be what stops it.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }

  Report report;
  std::vector<int> fds;
  for (int n = 0; n < count; ++n) {
    int fd = open_connection(path, report);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  if (mode == "unread") send_requests(fds, requests, report);
  std::fprintf(stderr, "gpushare-coord-flood: holding %d connections until stdin ends\n",
               report.opened);
  std::fprintf(stdout, "{\"kind\":\"flood-holding\",\"opened\":%d}\n", report.opened);
  std::fflush(stdout);
  char ignored[256];
  while (read(STDIN_FILENO, ignored, sizeof ignored) > 0) {
  }
  for (int fd : fds) report.closed_by_peer += closed_by_peer(fd) ? 1 : 0;
  std::printf(
      "{\"kind\":\"flood\",\"opened\":%d,\"backlog_full\":%s,\"out_of_descriptors\":%s,"
      "\"requests_sent\":%lld,\"closed_by_peer\":%d}\n",
      report.opened, report.backlog_full ? "true" : "false",
      report.out_of_descriptors ? "true" : "false", report.requests_sent, report.closed_by_peer);
  for (int fd : fds) close(fd);
  return report.opened > 0 ? 0 : 1;
}
