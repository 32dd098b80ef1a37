// The coordinator (server.h, server_impl.h): its event loop, timers,
// connections and their backpressure, and the helpers both halves share;
// what a connection asks is answered in server_requests.cc.
#include "coord/server/launched_jobs.h"
#include "coord/server/server_impl.h"

namespace gpushare::coord::server {

using namespace server_detail;

namespace server_detail {

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

// Raises the soft descriptor limit to the hard one (a coordinator serves
// hundreds of connections; the usual soft limit is 1024) and returns the
// connection limit that fits it: each job's process holds a socket and a
// pidfd, and each job its tree file (or a new connection the tree file it
// passed).
std::size_t fit_connections_to_descriptors(std::size_t wanted) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return wanted;
  if (files.rlim_cur < files.rlim_max) {
    rlimit raised = files;
    raised.rlim_cur = files.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) files = raised;
  }
  if (files.rlim_cur == RLIM_INFINITY) return wanted;
  std::size_t usable = files.rlim_cur > kReservedDescriptors * 2
                           ? static_cast<std::size_t>(files.rlim_cur) - kReservedDescriptors
                           : kReservedDescriptors;
  // Four per process at most: its socket, its pidfd, its yield page and
  // (for a job's first process) the job's tree file.
  return std::min(wanted, std::max<std::size_t>(usable / 4, 8));
}

std::string describe_limits(const Job& job) {
  std::string text;
  for (std::size_t i = 0; i < job.devices.size(); ++i) {
    std::uint64_t limit = job.devices[i].mem_limit_bytes;
    text +=
        (i == 0 ? "" : ", ") + (limit == kNoLimit ? std::string("no limit") : format_size(limit));
  }
  return job.devices.empty() ? "no devices" : "limit " + text;
}

Error os_error(const std::string& what) { return make_error(what + ": " + std::strerror(errno)); }

}  // namespace server_detail

Server::Impl::~Impl() {
  for (auto& [key, connection] : connections) close_fds(connection);
  if (idle_fd >= 0) close(idle_fd);
  if (sweep_fd >= 0) close(sweep_fd);
  if (compute_fd >= 0) close(compute_fd);
  if (memory_fd >= 0) close(memory_fd);
  if (spare_fd >= 0) close(spare_fd);
  if (accept_pause_fd >= 0) close(accept_pause_fd);
  if (epoll_fd >= 0) close(epoll_fd);
}

void Server::Impl::note(const std::string& line) const {
  if (options.note) options.note(line);
}

void Server::Impl::warning(const std::string& line) const {
  if (options.warning) options.warning(line);
}

// Loads an earlier coordinator's decisions for jobs still alive.
void Server::Impl::restore_decisions() {
  if (options.state_path.empty()) return;
  Result<std::vector<Decision>> loaded = load_decisions(options.state_path);
  if (!loaded) {
    warning(loaded.error().message + "; starting afresh");
    return;
  }
  std::vector<Decision> alive;
  for (Decision& decision : *loaded) {
    if (kill(decision.pid, 0) == 0 || errno == EPERM) alive.push_back(std::move(decision));
  }
  if (!alive.empty()) {
    note("remembering the decisions for " + std::to_string(alive.size()) +
         " job(s) of an earlier coordinator until they register again");
  }
  registry.remember(std::move(alive));
}

void Server::Impl::save_decisions_now() {
  if (options.state_path.empty()) return;
  if (Status saved = save_decisions(options.state_path, registry.decisions()); !saved) {
    limited_warning(state_warning, saved.error().message);
  }
}

void Server::Impl::limited_warning(RateLimitedWarning& kind, const std::string& line) {
  if (std::optional<std::string> out = kind.pass(monotonic_ns(), line)) warning(*out);
}

std::size_t Server::Impl::root_reserve() const {
  return std::max<std::size_t>(options.max_connections / 16, 2);
}

Status Server::Impl::watch(int fd, std::uint64_t tag, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = tag;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) return os_error("epoll_ctl");
  return {};
}

Status Server::Impl::setup() {
  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return os_error("epoll_create1");
  if (Status ok = watch(listener.fd(), kTagListen, EPOLLIN); !ok) return ok;
  if (options.stop_fd >= 0) {
    if (Status ok = watch(options.stop_fd, kTagStop, EPOLLIN); !ok) return ok;
  }
  sweep_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (sweep_fd < 0) return os_error("timerfd_create");
  // Sweep often enough to honour the first-message timeout within half of it.
  std::int64_t period =
      std::clamp<std::int64_t>(options.first_message_timeout.count() / 2, 1'000'000, 1'000'000'000);
  timespec interval{period / 1000000000, period % 1000000000};
  itimerspec sweeping{interval, interval};
  timerfd_settime(sweep_fd, 0, &sweeping, nullptr);
  if (Status ok = watch(sweep_fd, kTagSweep, EPOLLIN); !ok) return ok;
  start_enforcer();
  compute_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (compute_fd < 0) return os_error("timerfd_create");
  timespec tick{0, static_cast<long>(kComputeTickNs)};
  itimerspec ticking{tick, tick};
  timerfd_settime(compute_fd, 0, &ticking, nullptr);
  if (Status ok = watch(compute_fd, kTagCompute, EPOLLIN); !ok) return ok;
  memory_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (memory_fd < 0) return os_error("timerfd_create");
  std::int64_t memory_period = std::max<std::int64_t>(options.memory_tick.count(), 1'000'000);
  timespec memory_interval{memory_period / 1000000000, memory_period % 1000000000};
  itimerspec memory_ticking{memory_interval, memory_interval};
  timerfd_settime(memory_fd, 0, &memory_ticking, nullptr);
  if (Status ok = watch(memory_fd, kTagMemory, EPOLLIN); !ok) return ok;
  if (Status ok = start_metrics(); !ok) return ok;
  spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  accept_pause_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (accept_pause_fd < 0) return os_error("timerfd_create");
  if (Status ok = watch(accept_pause_fd, kTagAcceptPause, EPOLLIN); !ok) return ok;
  if (options.idle_exit) {
    idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (idle_fd < 0) return os_error("timerfd_create");
    if (Status ok = watch(idle_fd, kTagIdle, EPOLLIN); !ok) return ok;
    arm_idle_timer();
  }
  return {};
}

// Starts the grace period when no job is registered, stops it otherwise.
void Server::Impl::arm_idle_timer() {
  if (idle_fd < 0) return;
  itimerspec spec{};
  if (registry.size() == 0) {
    auto ns = std::max<std::int64_t>(options.idle_grace.count(), 1);
    spec.it_value.tv_sec = ns / 1000000000;
    spec.it_value.tv_nsec = ns % 1000000000;
  }
  timerfd_settime(idle_fd, 0, &spec, nullptr);
}

void Server::Impl::close_fds(Connection& c) {
  if (c.pidfd >= 0) close(c.pidfd);
  if (c.fd >= 0) close(c.fd);
  if (c.tree_fd >= 0) close(c.tree_fd);
  c.pidfd = c.fd = c.tree_fd = -1;
}

// Forgets a connection, and its job if it registered one.
void Server::Impl::drop(std::uint64_t key, const std::string& why) {
  auto it = connections.find(key);
  if (it == connections.end()) return;
  Connection& c = it->second;
  forget_queued(c, c.out.size());
  if (c.role != Role::kJob) count_non_job(c.peer.uid, -1);
  if (c.role == Role::kJob) {
    if (const Process* process = registry.process(c.process_key)) {
      const Job* job = registry.find(process->job_id);
      bool last = job != nullptr && job->processes.size() == 1;
      note("job " + std::to_string(process->job_id) + " '" + (job ? job->name : "") + "' (pid " +
           std::to_string(process->pid) + ") " + why +
           (last ? "" : "; the job's other processes go on"));
    }
    registry.remove(c.process_key);
    memory_due = true;  // its memory is room now: restore without waiting for a tick
    save_decisions_now();
    arm_idle_timer();
  }
  close_fds(c);  // closing removes the descriptors from the epoll set
  connections.erase(it);
}

void Server::Impl::count_non_job(uid_t uid, int change) {
  std::size_t& count = connections_per_uid[uid];
  count = change > 0 ? count + 1 : count - 1;
  non_job_connections = change > 0 ? non_job_connections + 1 : non_job_connections - 1;
  if (count == 0) connections_per_uid.erase(uid);
}

void Server::Impl::forget_queued(const Connection& c, std::size_t bytes) {
  if (bytes == 0) return;
  queued_total -= bytes;
  std::size_t& mine = queued_per_uid[c.peer.uid];
  mine -= bytes;
  if (mine == 0) queued_per_uid.erase(c.peer.uid);
}

// Which events a connection waits for: input unless held back, output
// while replies wait.
void Server::Impl::update_interest(std::uint64_t key, Connection& c) {
  epoll_event event{};
  event.events = (c.reading ? EPOLLIN : 0u) | (c.want_write ? EPOLLOUT : 0u);
  event.data.u64 = key * 2;
  epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &event);
}

// Queues a reply and writes what the socket takes now.
bool Server::Impl::reply(std::uint64_t key, Connection& c, const std::string& line) {
  std::size_t user_queued = queued_per_uid.count(c.peer.uid) ? queued_per_uid[c.peer.uid] : 0;
  bool over_user = c.peer.uid != 0 && user_queued + line.size() > options.max_queued_bytes_per_user;
  if (c.out.size() + line.size() > kMaxQueuedReply || over_user ||
      queued_total + line.size() > options.max_queued_bytes) {
    limited_warning(unread_warning, "connection from pid " + std::to_string(c.peer.pid) + " uid " +
                                        std::to_string(c.peer.uid) +
                                        " does not read its replies; closed");
    drop(key, "stopped reading");
    return false;
  }
  if (c.out.empty()) c.output_moved_ns = monotonic_ns();
  c.out += line;
  queued_total += line.size();
  queued_per_uid[c.peer.uid] += line.size();
  return flush(key, c);
}

bool Server::Impl::flush(std::uint64_t key, Connection& c) {
  while (!c.out.empty()) {
    ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out.erase(0, static_cast<std::size_t>(n));
      forget_queued(c, static_cast<std::size_t>(n));
      c.output_moved_ns = monotonic_ns();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    drop(key, "disconnected");
    return false;
  }
  bool want = !c.out.empty();
  bool read = c.out.size() <= kBackpressureBytes;
  if (want != c.want_write || read != c.reading) {
    bool resumed = read && !c.reading;
    c.want_write = want;
    c.reading = read;
    update_interest(key, c);
    // Requests that arrived before reading stopped are answered now.
    if (resumed) return answer_buffered(key);
  }
  return true;
}

// Answers the complete requests already read, while replies do not pile
// up. Returns false when the connection was dropped.
bool Server::Impl::answer_buffered(std::uint64_t key) {
  for (;;) {
    auto it = connections.find(key);
    if (it == connections.end()) return false;
    Connection& c = it->second;
    if (!c.reading) return true;
    std::optional<std::string> line = c.in.next_line();
    if (!line) return true;
    if (!handle_line(key, c, *line)) return false;
  }
}

// A protocol violation: say why, then hang up. The reply is small and the
// socket buffer empty enough in practice; what does not fit is dropped.
void Server::Impl::reject(std::uint64_t key, Connection& c, const std::string& message) {
  warning("connection from pid " + std::to_string(c.peer.pid) + " uid " +
          std::to_string(c.peer.uid) + ": " + message + "; closed");
  std::string line = encode_error(message, "bad-request");
  ssize_t ignored = send(c.fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)ignored;
  drop(key, "sent a bad message and was disconnected");
}

// Out of descriptors (EMFILE/ENFILE): the pending connection cannot be
// accepted, and a level-triggered listener would report it again at once.
// Close the spare descriptor, accept and refuse the peer, take the spare
// back; with no spare, stop watching the listener for a moment.
void Server::Impl::refuse_without_descriptors() {
  limited_warning(descriptors_warning,
                  "out of file descriptors: refusing connections until some close");
  if (spare_fd >= 0) {
    close(spare_fd);
    int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      refuse(fd, "too many connections");
      close(fd);
    }
    spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) return;
  }
  pause_accepting();
}

void Server::Impl::pause_accepting() {
  if (!accepting) return;
  accepting = false;
  epoll_event event{};
  event.data.u64 = kTagListen;
  epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listener.fd(), &event);
  itimerspec pause{{0, 0}, {kAcceptPauseNs / 1000000000, kAcceptPauseNs % 1000000000}};
  timerfd_settime(accept_pause_fd, 0, &pause, nullptr);
}

void Server::Impl::resume_accepting() {
  std::uint64_t expirations;
  ssize_t ignored = read(accept_pause_fd, &expirations, sizeof expirations);
  (void)ignored;
  if (spare_fd < 0) spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  accepting = true;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kTagListen;
  epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listener.fd(), &event);
}

void Server::Impl::refuse(int fd, const std::string& why) {
  std::string line = encode_error(why, "busy");
  ssize_t ignored = send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)ignored;
}

void Server::Impl::accept_all() {
  for (;;) {
    int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE) {
        refuse_without_descriptors();
        if (!accepting) return;
        continue;
      }
      if (errno != EAGAIN)
        limited_warning(refused_warning, std::string("accept: ") + std::strerror(errno));
      return;
    }
    Caller peer = peer_credentials(fd);
    // Root always finds a slot; other users leave root's reserve free and
    // each holds at most a quarter of the connections that are not jobs.
    bool root = peer.uid == 0;
    std::size_t per_user_cap = std::max<std::size_t>(options.max_connections / 4, 1);
    std::size_t mine = connections_per_uid.count(peer.uid) ? connections_per_uid[peer.uid] : 0;
    bool full = root ? connections.size() >= options.max_connections
                     : connections.size() + root_reserve() >= options.max_connections ||
                           mine >= per_user_cap;
    if (full) {
      limited_warning(refused_warning, "refused a connection from pid " + std::to_string(peer.pid) +
                                           " uid " + std::to_string(peer.uid) +
                                           ": too many connections");
      refuse(fd, "too many connections");
      close(fd);
      continue;
    }
    std::uint64_t key = next_key++;
    Connection& c = connections[key];
    c.fd = fd;
    c.peer = std::move(peer);
    c.accepted_ns = monotonic_ns();
    count_non_job(c.peer.uid, +1);
    if (!watch(fd, key * 2, EPOLLIN)) drop(key, "could not be watched");
  }
}

void Server::Impl::on_readable(std::uint64_t key) {
  std::size_t total = 0;
  char buffer[kReadChunk];
  while (total < kMaxReadPerEvent) {
    auto it = connections.find(key);
    if (it == connections.end()) return;
    Connection& c = it->second;
    if (!c.reading) return;  // its replies wait: leave its requests in the socket
    // A new connection may pass its job's tree file (tree_identity.h).
    ssize_t n = c.role == Role::kNew
                    ? receive_keeping_descriptor(c.fd, buffer, sizeof buffer, &c.tree_fd)
                    : recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
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
    if (!answer_buffered(key)) return;  // the connection is gone
  }
}

// Returns false when the connection was dropped.
// Drops connections that have not said what they are in time.
void Server::Impl::sweep() {
  std::uint64_t expirations;
  ssize_t ignored = read(sweep_fd, &expirations, sizeof expirations);
  (void)ignored;
  std::uint64_t now = monotonic_ns();
  if (enforcer) enforcer->check(registry, now);
  std::vector<std::uint64_t> late;
  std::vector<std::uint64_t> stalled;
  auto timeout = static_cast<std::uint64_t>(options.first_message_timeout.count());
  auto stall = static_cast<std::uint64_t>(options.stalled_reader_timeout.count());
  for (const auto& [key, c] : connections) {
    if (c.role == Role::kNew && now - c.accepted_ns > timeout) late.push_back(key);
    if (!c.out.empty() && now - c.output_moved_ns > stall) stalled.push_back(key);
  }
  for (std::uint64_t key : late) {
    reject(key, connections.at(key), "no complete message in time after connecting");
  }
  for (std::uint64_t key : stalled) {
    auto it = connections.find(key);
    if (it == connections.end()) continue;
    limited_warning(unread_warning, "connection from pid " + std::to_string(it->second.peer.pid) +
                                        " uid " + std::to_string(it->second.peer.uid) +
                                        " has not read its replies for " +
                                        std::to_string(stall / 1000000) + " ms" + "; closed");
    drop(key, "stopped reading");
  }
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::open(ServerOptions options) {
  Result<Listener> listener = Listener::open(options.socket_path, options.private_directory);
  if (!listener) return listener.error();
  options.max_connections = fit_connections_to_descriptors(options.max_connections);
  auto impl = std::make_unique<Impl>(std::move(options), std::move(*listener));
  if (Status ok = impl->setup(); !ok) return ok.error();
  impl->restore_decisions();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

const std::string& Server::socket_path() const { return impl_->listener.path(); }
std::size_t Server::max_connections() const { return impl_->options.max_connections; }
std::string Server::metrics_address() const {
  return impl_->metrics ? impl_->metrics->address() : std::string();
}

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
      } else if (tag == kTagAcceptPause) {
        s.resume_accepting();
      } else if (tag == kTagCompute) {
        std::uint64_t expirations;
        ssize_t ignored = read(s.compute_fd, &expirations, sizeof expirations);
        (void)ignored;
        s.compute.tick(s.registry, monotonic_ns());
        s.host_pause.tick(s.registry, monotonic_ns());  // opportunistic jobs on host memory
        if (std::optional<std::string> line = collect_checkpoint_work(s.registry, s.checkpointer)) {
          s.note(*line);  // a migration, or a suspend or resume through the driver, ended
          s.save_decisions_now();
        }
        if (std::optional<std::string> line =
                s.migration_policy.tick(s.registry, s.checkpointer, monotonic_ns())) {
          s.note(*line);
        }
        suspend_tick(s.registry, [&](const std::string& line) { s.note(line); });
      } else if (tag == kTagMemory) {
        std::uint64_t expirations;
        ssize_t ignored = read(s.memory_fd, &expirations, sizeof expirations);
        (void)ignored;
        s.memory_pass();  // opportunistic device residency
      } else if (tag == kTagMetrics) {
        s.metrics->on_ready();
      } else if (tag == kTagIdle) {
        std::uint64_t expirations;
        ssize_t ignored = read(s.idle_fd, &expirations, sizeof expirations);
        (void)ignored;
        if (s.registry.size() == 0) {
          // A job launched for us that has not registered yet keeps us.
          if (!launched_job_alive(s.listener.path(), geteuid())) return StopReason::kIdle;
          s.arm_idle_timer();
        }
      } else if (tag % 2 == 1) {
        s.drop(tag / 2, "exited");
      } else {
        std::uint64_t key = tag / 2;
        auto it = s.connections.find(key);
        if (it == s.connections.end()) continue;  // dropped earlier in this batch
        if (events[i].events & EPOLLOUT) {
          if (!s.flush(key, it->second)) continue;
        }
        it = s.connections.find(key);
        if (it == s.connections.end()) continue;
        if (!it->second.reading && (events[i].events & (EPOLLHUP | EPOLLERR))) {
          s.drop(key, "disconnected");  // not read while held back: end it here
        } else if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
          s.on_readable(key);
        }
      }
    }
    if (s.memory_due) s.memory_pass();
  }
}

}  // namespace gpushare::coord::server
