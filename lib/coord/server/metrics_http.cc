// The /metrics endpoint (metrics_http.h): accept, read a request head,
// answer once, close; every step non-blocking and bounded.
#include "coord/server/metrics_http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <unordered_map>

#include "common/clock.h"

namespace gpushare::coord::server {
namespace {

constexpr std::uint64_t kTagListen = 0;
constexpr std::uint64_t kTagTimer = 1;
constexpr std::uint64_t kFirstConnection = 2;
// Per call of on_ready(): at most this many events, and this many accepts
// per readable listener, so a connect flood shares the loop with the jobs.
constexpr int kMaxEvents = 32;
constexpr int kMaxAcceptsPerEvent = 32;
// Deadlines are checked this often while connections are open.
constexpr long kCheckIntervalNs = 100'000'000;

Error os_error(const std::string& what) { return make_error(what + ": " + std::strerror(errno)); }

struct HostPort {
  std::string host;
  std::string port;
};

Result<HostPort> split_address(const std::string& address) {
  std::string host, port;
  if (!address.empty() && address.front() == '[') {
    std::size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return make_error("'" + address + "': expected [IPV6]:PORT");
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    std::size_t colon = address.rfind(':');
    if (colon == std::string::npos) return make_error("'" + address + "': expected HOST:PORT");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (host.empty()) {
    return make_error("'" + address +
                      "': no host (give one: 127.0.0.1 for this machine only, 0.0.0.0 for all "
                      "interfaces)");
  }
  bool digits = !port.empty() && port.size() <= 5 &&
                std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoul(port) > 65535) {
    return make_error("'" + address + "': the port must be a number from 0 to 65535");
  }
  return HostPort{host, port};
}

Result<addrinfo*> resolve(const std::string& address) {
  Result<HostPort> parts = split_address(address);
  if (!parts) return parts.error();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int status = getaddrinfo(parts->host.c_str(), parts->port.c_str(), &hints, &found);
  if (status != 0) {
    return make_error("'" + address + "': " + gai_strerror(status));
  }
  return found;
}

std::string describe(const sockaddr_storage& bound) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (bound.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(bound);
    inet_ntop(AF_INET, &v4.sin_addr, host, sizeof host);
    port = ntohs(v4.sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(bound);
  inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof host);
  port = ntohs(v6.sin6_port);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

std::string http_response(const char* status, const std::string& content_type,
                          const std::string& body, bool with_body) {
  std::string out = std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n\r\n";
  if (with_body) out += body;
  return out;
}

std::string plain(const char* status, const std::string& text) {
  return http_response(status, "text/plain; charset=utf-8", text + "\n", true);
}

}  // namespace

Status check_listen_address(const std::string& address) {
  Result<HostPort> parts = split_address(address);
  if (!parts) return parts.error();
  return {};
}

struct MetricsEndpoint::Impl {
  struct Connection {
    int fd = -1;
    std::string in;
    std::string out;
    std::size_t sent = 0;
    bool answering = false;
    std::uint64_t deadline_ns = 0;
  };

  MetricsLimits limits;
  Render render;
  int epoll_fd = -1;
  int listen_fd = -1;
  int timer_fd = -1;
  bool timer_armed = false;
  std::string address;
  std::unordered_map<std::uint64_t, Connection> connections;
  std::uint64_t next_key = kFirstConnection;

  ~Impl() {
    for (auto& [key, c] : connections) close(c.fd);
    for (int fd : {listen_fd, timer_fd, epoll_fd}) {
      if (fd >= 0) close(fd);
    }
  }

  Status watch(int fd, std::uint64_t tag, std::uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) return os_error("epoll_ctl");
    return {};
  }

  void arm_timer(bool on) {
    if (on == timer_armed) return;
    timer_armed = on;
    itimerspec spec{};
    if (on) spec.it_interval = spec.it_value = timespec{0, kCheckIntervalNs};
    timerfd_settime(timer_fd, 0, &spec, nullptr);
  }

  void drop(std::uint64_t key) {
    auto it = connections.find(key);
    if (it == connections.end()) return;
    close(it->second.fd);  // leaves the epoll set with it
    connections.erase(it);
    if (connections.empty()) arm_timer(false);
  }

  // Refused at the door: a short answer if the socket takes it, then close.
  static void refuse(int fd) {
    std::string busy = plain("503 Service Unavailable", "too many connections");
    ssize_t ignored = send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
    close(fd);
  }

  void accept_some() {
    for (int i = 0; i < kMaxAcceptsPerEvent; ++i) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;  // EAGAIN, or out of descriptors: tried again next round
      if (connections.size() >= limits.max_connections) {
        refuse(fd);
        continue;
      }
      std::uint64_t key = next_key++;
      Connection& c = connections[key];
      c.fd = fd;
      c.deadline_ns = monotonic_ns() + static_cast<std::uint64_t>(limits.deadline.count());
      if (!watch(fd, key, EPOLLIN)) {
        drop(key);
        continue;
      }
      arm_timer(true);
    }
  }

  // The answer to a complete request head.
  std::string answer(const std::string& head) {
    std::size_t line_end = head.find_first_of("\r\n");
    std::string line = head.substr(0, line_end);
    std::size_t first = line.find(' ');
    std::size_t second = first == std::string::npos ? first : line.find(' ', first + 1);
    if (second == std::string::npos || line.compare(second + 1, 5, "HTTP/") != 0) {
      return plain("400 Bad Request", "expected 'GET /metrics HTTP/1.1'");
    }
    std::string method = line.substr(0, first);
    std::string target = line.substr(first + 1, second - first - 1);
    target = target.substr(0, target.find('?'));  // Prometheus may add parameters
    if (method != "GET" && method != "HEAD") {
      return plain("405 Method Not Allowed", "only GET and HEAD");
    }
    if (target != "/metrics") return plain("404 Not Found", "the metrics are at /metrics");
    return http_response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render(),
                         method == "GET");
  }

  void start_answer(std::uint64_t key, Connection& c, std::string response) {
    c.answering = true;
    c.in.clear();
    c.out = std::move(response);
    epoll_event event{};
    event.events = EPOLLOUT;
    event.data.u64 = key;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &event);
    write_some(key, c);
  }

  void write_some(std::uint64_t key, Connection& c) {
    while (c.sent < c.out.size()) {
      ssize_t n =
          send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;  // the deadline bounds a reader that stalls
      break;
    }
    drop(key);  // all sent, or the peer is gone
  }

  void read_some(std::uint64_t key, Connection& c) {
    char buffer[4096];
    std::size_t room = limits.max_request_bytes + 1 - c.in.size();
    ssize_t n = recv(c.fd, buffer, std::min(sizeof buffer, room), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      drop(key);
      return;
    }
    c.in.append(buffer, static_cast<std::size_t>(n));
    std::size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) end = c.in.find("\n\n");
    if (end != std::string::npos && end <= limits.max_request_bytes) {
      start_answer(key, c, answer(c.in.substr(0, end)));
    } else if (c.in.size() > limits.max_request_bytes) {
      start_answer(
          key, c,
          plain("431 Request Header Fields Too Large",
                "request longer than " + std::to_string(limits.max_request_bytes) + " bytes"));
    }
  }

  void expire() {
    std::uint64_t expirations;
    ssize_t ignored = read(timer_fd, &expirations, sizeof expirations);
    (void)ignored;
    std::uint64_t now = monotonic_ns();
    std::vector<std::uint64_t> late;
    for (const auto& [key, c] : connections) {
      if (now >= c.deadline_ns) late.push_back(key);
    }
    for (std::uint64_t key : late) drop(key);
  }
};

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MetricsEndpoint::~MetricsEndpoint() = default;

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::open(const std::string& address,
                                                               MetricsLimits limits,
                                                               Render render) {
  Result<addrinfo*> found = resolve(address);
  if (!found) return found.error();
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  impl->render = std::move(render);
  std::string failure = "no address";
  for (addrinfo* a = *found; a != nullptr && impl->listen_fd < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      failure = std::strerror(errno);
      continue;
    }
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      failure = std::strerror(errno);
      close(fd);
      continue;
    }
    impl->listen_fd = fd;
  }
  freeaddrinfo(*found);
  if (impl->listen_fd < 0) {
    return make_error("--metrics-listen: cannot listen on " + address + ": " + failure);
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&bound), &length);
  impl->address = describe(bound);
  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (impl->epoll_fd < 0) return os_error("epoll_create1");
  impl->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (impl->timer_fd < 0) return os_error("timerfd_create");
  if (Status ok = impl->watch(impl->listen_fd, kTagListen, EPOLLIN); !ok) return ok.error();
  if (Status ok = impl->watch(impl->timer_fd, kTagTimer, EPOLLIN); !ok) return ok.error();
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(impl)));
}

int MetricsEndpoint::fd() const { return impl_->epoll_fd; }
const std::string& MetricsEndpoint::address() const { return impl_->address; }
std::size_t MetricsEndpoint::connections() const { return impl_->connections.size(); }

void MetricsEndpoint::on_ready() {
  Impl& s = *impl_;
  epoll_event events[kMaxEvents];
  int n = epoll_wait(s.epoll_fd, events, kMaxEvents, 0);
  for (int i = 0; i < n; ++i) {
    std::uint64_t tag = events[i].data.u64;
    if (tag == kTagListen) {
      s.accept_some();
      continue;
    }
    if (tag == kTagTimer) {
      s.expire();
      continue;
    }
    auto it = s.connections.find(tag);
    if (it == s.connections.end()) continue;  // dropped earlier in this batch
    if (it->second.answering) {
      s.write_some(tag, it->second);
    } else {
      s.read_some(tag, it->second);
    }
  }
}

}  // namespace gpushare::coord::server
