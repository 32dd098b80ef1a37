// The coordinator's state and its parts (server.h), shared by the files
// that implement it: server.cc (the event loop, connections, backpressure,
// timers) and server_requests.cc (what a connection asks: registering a
// job's process, passing yield pages, answering gpushare-ctl).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/units.h"
#include "coord/contract/protocol.h"
#include "coord/server/compute/compute_loop.h"
#include "coord/server/compute/free_share.h"
#include "coord/server/registry/decisions.h"
#include "coord/server/line_buffer.h"
#include "coord/server/listener.h"
#include "coord/server/memory/host_pause.h"
#include "coord/server/migrate.h"
#include "coord/server/memory/memory_loop.h"
#include "coord/server/metrics_http.h"
#include "coord/server/registry/registry.h"
#include "coord/server/server.h"
#include "coord/server/memory/suspend_requests.h"

namespace gpushare::coord::server {
namespace server_detail {
// epoll tags: fixed ones below kFirstConnection; a connection's socket is
// key*2, its job's pidfd key*2+1.
constexpr std::uint64_t kTagListen = 1;
constexpr std::uint64_t kTagStop = 2;
constexpr std::uint64_t kTagIdle = 3;
constexpr std::uint64_t kTagSweep = 4;
constexpr std::uint64_t kTagAcceptPause = 5;
constexpr std::uint64_t kTagCompute = 6;
constexpr std::uint64_t kTagMetrics = 7;
constexpr std::uint64_t kTagMemory = 8;
constexpr std::uint64_t kFirstConnection = 16;

constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::size_t kMaxReadPerEvent = 64 * 1024;  // fairness between peers
constexpr std::size_t kMaxQueuedReply = 64 * 1024 * 1024;
// A connection is not read (its requests not answered) while more than this
// of its replies wait: backpressure instead of an ever-growing queue.
constexpr std::size_t kBackpressureBytes = 256 * 1024;
// Descriptors kept for everything but connections (epoll, timers, the
// lock, the log, a spare, the job's memfds while registering).
constexpr std::size_t kReservedDescriptors = 64;
// How long accepting pauses when no descriptor is left even for the spare.
constexpr std::int64_t kAcceptPauseNs = 100'000'000;
// Repeated warnings of one kind: at most one line a second, with a count.
constexpr std::uint64_t kWarningIntervalNs = 1'000'000'000;

// One warning line a second at most for each kind of repeated event, so a
// flood cannot fill the disk through the log.
struct RateLimitedWarning {
  std::uint64_t last_ns = 0;
  std::uint64_t suppressed = 0;
  // Returns the line to log now (with the count of lines held back), or
  // nothing.
  std::optional<std::string> pass(std::uint64_t now, const std::string& line) {
    if (last_ns != 0 && now - last_ns < kWarningIntervalNs) {
      ++suppressed;
      return std::nullopt;
    }
    std::string out = line;
    if (suppressed > 0) out += " (and " + std::to_string(suppressed) + " more like it)";
    last_ns = now;
    suppressed = 0;
    return out;
  }
};

Caller peer_credentials(int fd);
// Raises the soft descriptor limit to the hard one (a coordinator serves
// hundreds of connections; the usual soft limit is 1024) and returns the
// connection limit that fits it: each job's process holds a socket and a
// pidfd, and each job its tree file (or a new connection the tree file it
// passed).
std::size_t fit_connections_to_descriptors(std::size_t wanted);
std::string describe_limits(const Job& job);
Error os_error(const std::string& what);

}  // namespace server_detail

struct Server::Impl {
  using RateLimitedWarning = server_detail::RateLimitedWarning;
  enum class Role { kNew, kJob, kControl };
  struct Connection {
    int fd = -1;
    Caller peer;
    LineBuffer in{kMaxMessageBytes};
    std::string out;
    Role role = Role::kNew;
    std::uint64_t process_key = 0;  // its registration, once a job (Registry::process)
    int pidfd = -1;
    int tree_fd = -1;  // the tree file a new connection passed, until it registers
    bool want_write = false;
    bool reading = true;  // false while its replies wait (backpressure)
    std::uint64_t accepted_ns = 0;
    std::uint64_t output_moved_ns = 0;  // when its queued replies last shrank
  };

  ServerOptions options;
  Listener listener;
  Registry registry;
  int epoll_fd = -1;
  int idle_fd = -1;
  int sweep_fd = -1;
  int compute_fd = -1;
  int memory_fd = -1;
  ComputeLoop compute{options.compute_policy, options.gang_harvest};
  HostPauser host_pause{options.host_pause};
  Checkpointer checkpointer{options.checkpoint};  // migrate, and suspend through the driver
  MigrationPolicy migration_policy{options.migration_policy};
  std::unordered_map<std::uint64_t, Connection> connections;
  // Unregistered and control connections per user (jobs are bounded by the
  // processes a user runs, and each costs the coordinator a pidfd too).
  std::unordered_map<uid_t, std::size_t> connections_per_uid;
  std::size_t non_job_connections = 0;
  std::unordered_map<uid_t, std::size_t> queued_per_uid;
  std::size_t queued_total = 0;
  std::uint64_t next_key = server_detail::kFirstConnection;
  int spare_fd = -1;         // closed to accept-and-refuse when out of descriptors
  int accept_pause_fd = -1;  // timer: accepting resumes when it fires
  bool accepting = true;
  RateLimitedWarning refused_warning, descriptors_warning, unread_warning, state_warning;
  std::unique_ptr<Enforcer> enforcer;  // null when not checking
  FreeShareMeter free_share;  // the free GPU time per job, from NVML when there is one
  std::unique_ptr<MetricsEndpoint> metrics;  // --metrics-listen: null when not serving

  Impl(ServerOptions o, Listener l)
      : options(std::move(o)), listener(std::move(l)), registry(options.policy) {
    compute.set_yield_sender([this](std::uint64_t process_key, int slot, int fd) {
      return send_yield_page(process_key, slot, fd);
    });
  }

  bool send_yield_page(std::uint64_t process_key, int slot, int fd);
  // The memory loop (memory_loop.h), due at once after a "room" line or a
  // process's end; run once per batch of events.
  bool memory_due = false;
  void memory_pass();
  void send_wake(std::uint64_t process_key);
  ~Impl();

  void note(const std::string& line) const;
  void warning(const std::string& line) const;
  void restore_decisions();
  void save_decisions_now();
  void limited_warning(RateLimitedWarning& kind, const std::string& line);
  std::size_t root_reserve() const;
  std::size_t job_reserve() const { return std::max<std::size_t>(options.max_connections / 8, 2); }

  Status watch(int fd, std::uint64_t tag, std::uint32_t events);
  Status setup();
  void arm_idle_timer();
  void close_fds(Connection& c);
  void drop(std::uint64_t key, const std::string& why);
  void count_non_job(uid_t uid, int change);
  void forget_queued(const Connection& c, std::size_t bytes);
  void update_interest(std::uint64_t key, Connection& c);
  bool reply(std::uint64_t key, Connection& c, const std::string& line);
  bool flush(std::uint64_t key, Connection& c);
  bool answer_buffered(std::uint64_t key);
  void reject(std::uint64_t key, Connection& c, const std::string& message);
  void refuse_without_descriptors();
  void pause_accepting();
  void resume_accepting();
  static void refuse(int fd, const std::string& why);
  void accept_all();
  void on_readable(std::uint64_t key);
  TreeProof tree_proof(Connection& c, const RegisterRequest& request);
  void start_enforcer();
  Status start_metrics();
  std::string metrics_text();
  void sweep();
  bool handle_line(std::uint64_t key, Connection& c, const std::string& line);
  bool register_job(std::uint64_t key, Connection& c, const RegisterRequest& request);
  static bool send_control_block(Connection& c, std::uint64_t job_id, ControlBlock& block);
  std::string answer(const Connection& c, const Request& request);
};

}  // namespace gpushare::coord::server
