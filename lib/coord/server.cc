#include "coord/server.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <variant>
#include <vector>

#include "common/units.h"
#include "coord/line_buffer.h"
#include "coord/listener.h"
#include "coord/protocol.h"
#include "coord/registry.h"

namespace gpushare::coord {
namespace {

// epoll tags: fixed ones below kFirstConnection; a connection's socket is
// key*2, its job's pidfd key*2+1.
constexpr std::uint64_t kTagListen = 1;
constexpr std::uint64_t kTagStop = 2;
constexpr std::uint64_t kTagIdle = 3;
constexpr std::uint64_t kTagSweep = 4;
constexpr std::uint64_t kFirstConnection = 16;

constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::size_t kMaxReadPerEvent = 64 * 1024;  // fairness between peers
constexpr std::size_t kMaxQueuedReply = 64 * 1024 * 1024;

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

Error os_error(const std::string& what) { return make_error(what + ": " + std::strerror(errno)); }

Caller peer_credentials(int fd) {
  Caller caller;
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
    caller.pid = credentials.pid;
    caller.uid = credentials.uid;
    caller.gid = credentials.gid;
  } else {
    caller.uid = static_cast<uid_t>(-1);  // unknown: nobody's jobs
  }
  gid_t groups[256];
  length = sizeof groups;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &length) == 0) {
    caller.groups.assign(groups, groups + length / sizeof(gid_t));
  }
  return caller;
}

std::string describe_limits(const Job& job) {
  std::string text;
  for (std::size_t i = 0; i < job.devices.size(); ++i) {
    std::uint64_t limit = job.block->mem_limit(static_cast<int>(i));
    text +=
        (i == 0 ? "" : ", ") + (limit == kNoLimit ? std::string("no limit") : format_size(limit));
  }
  return job.devices.empty() ? "no devices" : "limit " + text;
}

}  // namespace

struct Server::Impl {
  enum class Role { kNew, kJob, kControl };
  struct Connection {
    int fd = -1;
    Caller peer;
    LineBuffer in{kMaxMessageBytes};
    std::string out;
    Role role = Role::kNew;
    std::uint64_t job_id = 0;
    int pidfd = -1;
    bool want_write = false;
    std::uint64_t accepted_ns = 0;
  };

  ServerOptions options;
  Listener listener;
  Registry registry;
  int epoll_fd = -1;
  int idle_fd = -1;
  int sweep_fd = -1;
  std::unordered_map<std::uint64_t, Connection> connections;
  std::unordered_map<uid_t, std::size_t> connections_per_uid;
  std::uint64_t next_key = kFirstConnection;

  Impl(ServerOptions o, Listener l)
      : options(std::move(o)), listener(std::move(l)), registry(options.policy) {}
  ~Impl() {
    for (auto& [key, connection] : connections) close_fds(connection);
    if (idle_fd >= 0) close(idle_fd);
    if (sweep_fd >= 0) close(sweep_fd);
    if (epoll_fd >= 0) close(epoll_fd);
  }

  void note(const std::string& line) const {
    if (options.note) options.note(line);
  }
  void warning(const std::string& line) const {
    if (options.warning) options.warning(line);
  }

  Status watch(int fd, std::uint64_t tag, std::uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) return os_error("epoll_ctl");
    return {};
  }

  Status setup() {
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0) return os_error("epoll_create1");
    if (Status ok = watch(listener.fd(), kTagListen, EPOLLIN); !ok) return ok;
    if (options.stop_fd >= 0) {
      if (Status ok = watch(options.stop_fd, kTagStop, EPOLLIN); !ok) return ok;
    }
    sweep_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (sweep_fd < 0) return os_error("timerfd_create");
    // Sweep often enough to honour the first-message timeout within half of it.
    std::int64_t period = std::clamp<std::int64_t>(options.first_message_timeout.count() / 2,
                                                   1'000'000, 1'000'000'000);
    timespec interval{period / 1000000000, period % 1000000000};
    itimerspec sweeping{interval, interval};
    timerfd_settime(sweep_fd, 0, &sweeping, nullptr);
    if (Status ok = watch(sweep_fd, kTagSweep, EPOLLIN); !ok) return ok;
    if (options.idle_exit) {
      idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
      if (idle_fd < 0) return os_error("timerfd_create");
      if (Status ok = watch(idle_fd, kTagIdle, EPOLLIN); !ok) return ok;
      arm_idle_timer();
    }
    return {};
  }

  // Starts the grace period when no job is registered, stops it otherwise.
  void arm_idle_timer() {
    if (idle_fd < 0) return;
    itimerspec spec{};
    if (registry.size() == 0) {
      auto ns = std::max<std::int64_t>(options.idle_grace.count(), 1);
      spec.it_value.tv_sec = ns / 1000000000;
      spec.it_value.tv_nsec = ns % 1000000000;
    }
    timerfd_settime(idle_fd, 0, &spec, nullptr);
  }

  void close_fds(Connection& c) {
    if (c.pidfd >= 0) close(c.pidfd);
    if (c.fd >= 0) close(c.fd);
    c.pidfd = c.fd = -1;
  }

  // Forgets a connection, and its job if it registered one.
  void drop(std::uint64_t key, const std::string& why) {
    auto it = connections.find(key);
    if (it == connections.end()) return;
    Connection& c = it->second;
    if (c.role == Role::kJob) {
      if (const Job* job = registry.find(c.job_id)) {
        note("job " + std::to_string(job->id) + " '" + job->name + "' (pid " +
             std::to_string(job->pid) + ") " + why);
      }
      registry.remove(c.job_id);
      arm_idle_timer();
    }
    close_fds(c);  // closing removes the descriptors from the epoll set
    if (--connections_per_uid[c.peer.uid] == 0) connections_per_uid.erase(c.peer.uid);
    connections.erase(it);
  }

  // Queues a reply and writes what the socket takes now.
  bool reply(std::uint64_t key, Connection& c, const std::string& line) {
    if (c.out.size() + line.size() > kMaxQueuedReply) {
      warning("connection from pid " + std::to_string(c.peer.pid) +
              " does not read its replies; closed");
      drop(key, "stopped reading");
      return false;
    }
    c.out += line;
    return flush(key, c);
  }

  bool flush(std::uint64_t key, Connection& c) {
    while (!c.out.empty()) {
      ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      drop(key, "disconnected");
      return false;
    }
    bool want = !c.out.empty();
    if (want != c.want_write) {
      epoll_event event{};
      event.events = EPOLLIN | (want ? EPOLLOUT : 0u);
      event.data.u64 = key * 2;
      epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &event);
      c.want_write = want;
    }
    return true;
  }

  // A protocol violation: say why, then hang up. The reply is small and the
  // socket buffer empty enough in practice; what does not fit is dropped.
  void reject(std::uint64_t key, Connection& c, const std::string& message) {
    warning("connection from pid " + std::to_string(c.peer.pid) + " uid " +
            std::to_string(c.peer.uid) + ": " + message + "; closed");
    std::string line = encode_error(message, "bad-request");
    ssize_t ignored = send(c.fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
    drop(key, "sent a bad message and was disconnected");
  }

  void accept_all() {
    for (;;) {
      int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) warning(std::string("accept: ") + std::strerror(errno));
        return;
      }
      Caller peer = peer_credentials(fd);
      // No user but root may hold more than a quarter of the connections.
      std::size_t per_user_cap = peer.uid == 0
                                     ? options.max_connections
                                     : std::max<std::size_t>(options.max_connections / 4, 1);
      if (connections.size() >= options.max_connections ||
          connections_per_uid[peer.uid] >= per_user_cap) {
        warning("refused a connection from pid " + std::to_string(peer.pid) + " uid " +
                std::to_string(peer.uid) + ": too many connections");
        std::string line = encode_error("too many connections", "busy");
        ssize_t ignored = send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)ignored;
        close(fd);
        if (connections_per_uid[peer.uid] == 0) connections_per_uid.erase(peer.uid);
        continue;
      }
      std::uint64_t key = next_key++;
      Connection& c = connections[key];
      c.fd = fd;
      c.peer = std::move(peer);
      c.accepted_ns = now_ns();
      ++connections_per_uid[c.peer.uid];
      if (!watch(fd, key * 2, EPOLLIN)) drop(key, "could not be watched");
    }
  }

  void on_readable(std::uint64_t key) {
    std::size_t total = 0;
    char buffer[kReadChunk];
    while (total < kMaxReadPerEvent) {
      auto it = connections.find(key);
      if (it == connections.end()) return;
      Connection& c = it->second;
      ssize_t n = recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        drop(key, n == 0 ? "disconnected" : "lost its connection");
        return;
      }
      total += static_cast<std::size_t>(n);
      if (!c.in.append(std::string_view(buffer, static_cast<std::size_t>(n)))) {
        reject(key, c, "message longer than " + std::to_string(kMaxMessageBytes) + " bytes");
        return;
      }
      while (std::optional<std::string> line = c.in.next_line()) {
        if (!handle_line(key, c, *line)) return;  // the connection is gone
      }
    }
  }

  // Returns false when the connection was dropped.
  // Drops connections that have not said what they are in time.
  void sweep() {
    std::uint64_t expirations;
    ssize_t ignored = read(sweep_fd, &expirations, sizeof expirations);
    (void)ignored;
    std::uint64_t now = now_ns();
    std::vector<std::uint64_t> late;
    for (const auto& [key, c] : connections) {
      auto timeout = static_cast<std::uint64_t>(options.first_message_timeout.count());
      if (c.role == Role::kNew && now - c.accepted_ns > timeout) late.push_back(key);
    }
    for (std::uint64_t key : late) {
      reject(key, connections.at(key), "no complete message in time after connecting");
    }
  }

  bool handle_line(std::uint64_t key, Connection& c, const std::string& line) {
    Result<Request> request = parse_request(line);
    if (!request) {
      reject(key, c, request.error().message);
      return false;
    }
    if (auto* registration = std::get_if<RegisterRequest>(&*request)) {
      if (c.role != Role::kNew) {
        reject(key, c, "out of order: 'register' must be the first message of a connection");
        return false;
      }
      return register_job(key, c, *registration);
    }
    if (c.role == Role::kJob) {
      reject(key, c, "out of order: a registered job sends no further messages");
      return false;
    }
    c.role = Role::kControl;
    std::string answer_line;
    try {
      answer_line = answer(c, *request);
    } catch (const std::exception& e) {
      // A bug must cost one request, not the coordinator every job relies on.
      warning(std::string("internal error answering a request: ") + e.what());
      answer_line = encode_error(std::string("internal error: ") + e.what(), kReasonInternal);
    }
    return reply(key, c, answer_line);
  }

  bool register_job(std::uint64_t key, Connection& c, const RegisterRequest& request) {
    Result<Job*> added = registry.add(request, c.peer);
    if (!added) {
      warning("cannot register a job for pid " + std::to_string(c.peer.pid) + ": " +
              added.error().message);
      return reply(key, c, encode_error(added.error().message, kReasonInternal));
    }
    Job& job = **added;
    c.role = Role::kJob;
    c.job_id = job.id;
    arm_idle_timer();

    // The reply carries both memfds; the job keeps them mapped, so our
    // copies of the descriptors can go at once.
    std::string line = encode_registered(job.id);
    iovec io{line.data(), line.size()};
    int fds[2] = {job.block->limits_fd(), job.block->telemetry_fd()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof fds);
    std::memcpy(CMSG_DATA(header), fds, sizeof fds);
    ssize_t sent = sendmsg(c.fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    job.block->close_descriptors();
    if (sent != static_cast<ssize_t>(line.size())) {
      drop(key, "could not be sent its control block");
      return false;
    }
    note("job " + std::to_string(job.id) + " '" + job.name + "' registered: pid " +
         std::to_string(job.pid) + ", uid " + std::to_string(job.uid) + ", " +
         qos_name(job.block->qos()) + ", " + describe_limits(job));

    // Watch the process itself too: its socket may live on in a child.
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, job.pid, 0));
    if (pidfd >= 0) {
      c.pidfd = pidfd;
      if (!watch(pidfd, key * 2 + 1, EPOLLIN)) {
        close(pidfd);
        c.pidfd = -1;
      }
    } else if (errno == ESRCH) {
      drop(key, "exited");
      return false;
    }
    return true;
  }

  std::string answer(const Connection& c, const Request& request) {
    std::uint64_t now = now_ns();
    std::string reason;
    Result<JobView> result = make_error("unreachable");
    if (std::holds_alternative<ListRequest>(request)) return encode_jobs(registry.list(now));
    if (std::holds_alternative<NodeRequest>(request)) return encode_node(registry.node(now));
    std::string action;
    if (const auto* show = std::get_if<ShowRequest>(&request)) {
      result = registry.show(show->job, now, &reason);
    } else if (const auto* set = std::get_if<SetRequest>(&request)) {
      result = registry.set(*set, c.peer, now, &reason);
      action = "set" + std::string(set->mem_limit ? " mem-limit=" + *set->mem_limit : "") +
               (set->qos ? std::string(" qos=") + qos_name(*set->qos) : "") +
               (set->name ? " name=" + *set->name : "");
    } else if (const auto* pause = std::get_if<PauseRequest>(&request)) {
      result = registry.pause(*pause, c.peer, now, &reason);
      action = pause->pause ? "pause" : "resume";
    }
    if (!result) {
      if (!action.empty()) {
        note("uid " + std::to_string(c.peer.uid) + " " + action + ": " + result.error().message);
      }
      return encode_error(result.error().message, reason);
    }
    if (!action.empty()) {
      note("uid " + std::to_string(c.peer.uid) + " " + action + " on job " +
           std::to_string(result->id) + " '" + result->name + "'");
    }
    return encode_jobs({*result});
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::open(ServerOptions options) {
  Result<Listener> listener = Listener::open(options.socket_path, options.private_directory);
  if (!listener) return listener.error();
  auto impl = std::make_unique<Impl>(std::move(options), std::move(*listener));
  if (Status ok = impl->setup(); !ok) return ok.error();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

const std::string& Server::socket_path() const { return impl_->listener.path(); }
std::size_t Server::job_count() const { return impl_->registry.size(); }

Result<StopReason> Server::run() {
  Impl& s = *impl_;
  epoll_event events[64];
  for (;;) {
    int n = epoll_wait(s.epoll_fd, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      std::uint64_t tag = events[i].data.u64;
      if (tag == kTagListen) {
        s.accept_all();
      } else if (tag == kTagStop) {
        return StopReason::kStopRequested;
      } else if (tag == kTagSweep) {
        s.sweep();
      } else if (tag == kTagIdle) {
        std::uint64_t expirations;
        ssize_t ignored = read(s.idle_fd, &expirations, sizeof expirations);
        (void)ignored;
        if (s.registry.size() == 0) return StopReason::kIdle;
      } else if (tag % 2 == 1) {
        s.drop(tag / 2, "exited");
      } else {
        std::uint64_t key = tag / 2;
        auto it = s.connections.find(key);
        if (it == s.connections.end()) continue;  // dropped earlier in this batch
        if (events[i].events & EPOLLOUT) {
          if (!s.flush(key, it->second)) continue;
        }
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) s.on_readable(key);
      }
    }
  }
}

}  // namespace gpushare::coord
