// The node coordinator's event loop (gpushare-ctl serve).
//
// One thread, one epoll set: the listening socket, every connection, a
// pidfd per registered job, the caller's stop descriptor and an idle timer.
// Nothing in the loop blocks: sockets are non-blocking, replies are queued
// and flushed as the peer reads, and a peer that sends a malformed,
// oversized or out-of-order message gets an error reply and is
// disconnected, while everyone else is served as before.
//
// A job is forgotten (and its memory counts as free) the moment its socket
// closes or its pidfd reports the process gone, whichever comes first: the
// kernel closes a killed process's sockets at once, and the pidfd also
// covers a socket inherited by a forked child.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "coord/server/registry/authorize.h"
#include "coord/server/memory/enforcement.h"
#include "coord/server/compute/compute_control.h"

namespace gpushare::coord::server {

struct ServerOptions {
  std::string socket_path;
  bool private_directory = false;  ///< see Listener::open
  Policy policy;
  /// Exit once no job has been registered for `idle_grace` (counted from
  /// the start, and from the last job leaving) and no job launched for this
  /// socket lives (launched_jobs.h).
  bool idle_exit = false;
  std::chrono::nanoseconds idle_grace = std::chrono::seconds(60);
  /// The loop ends when this descriptor becomes readable (a signalfd, an
  /// eventfd); -1 for none.
  int stop_fd = -1;
  /// At most this many connections (fewer when the descriptor limit is
  /// lower: each job holds two). A user other than root may hold a quarter
  /// of them as unregistered or control connections; a sixteenth is kept
  /// for root, and an eighth for job registrations (control requests are
  /// refused as "busy" once only that reserve is left). Beyond, a
  /// connection gets a "busy" error.
  std::size_t max_connections = 4096;
  /// Replies queued for peers that do not read them, in bytes: in all, and
  /// per user other than root. A connection that would pass either is
  /// dropped. Each connection also stops being read while more than
  /// 256 KiB of its replies wait, so one peer cannot make the coordinator
  /// encode replies without bound.
  std::size_t max_queued_bytes = 256u << 20;
  std::size_t max_queued_bytes_per_user = 64u << 20;
  /// A connection whose queued replies have not moved for this long is
  /// dropped (a reader that stopped reading).
  std::chrono::nanoseconds stalled_reader_timeout = std::chrono::seconds(10);
  /// A connection that has not sent a complete first message by then is
  /// dropped, so idle connections cannot pile up and lock others out.
  std::chrono::nanoseconds first_message_timeout = std::chrono::seconds(5);
  /// The memory loop's period (memory_loop.h): a safety net, since a room
  /// request and a process's end run the loop at once. At least 1 ms.
  std::chrono::nanoseconds memory_tick = std::chrono::milliseconds(25);
  /// The state file (decisions.h): read at start, so that jobs that
  /// register again get back what ctl set for them, and rewritten after
  /// each change. Empty: none.
  std::string state_path;
  /// Check jobs' usage from the coordinator's own view (NVML) and act on
  /// those over their limit (enforcement.h). Without NVML, nothing is
  /// checked (a note says so).
  bool enforce = true;
  ViolationAction violation_action = ViolationAction::kWarn;
  /// The compute loop's policy (compute_control.h), ticking every
  /// kComputeTickNs on the event loop.
  ComputePolicy compute_policy = ComputePolicy::kGpushare;
  /// Let the opportunistic jobs beside a gang's rank that waits use its
  /// wait (compute_loop.h); off by default: bench/share/results.md.
  bool gang_harvest = false;
  /// Pause an opportunistic job whose memory is mostly on the host while
  /// production runs, every compute tick (memory/host_pause.h).
  bool host_pause = true;
  /// Use the driver's process checkpoint (migrate.h): migrate, and a
  /// suspend that frees everything. Off: migrate is refused, suspend moves
  /// memory only.
  bool checkpoint = true;
  /// Move an opportunistic job to an idle GPU when production uses its GPU
  /// (migrate.h, MigrationPolicy). Off by default.
  bool migration_policy = false;
  /// Serve the node's metrics over HTTP at /metrics on this "HOST:PORT"
  /// (metrics_http.h); empty: not at all.
  std::string metrics_listen;
  /// Log sinks, one line each, no newline. Unset: silent.
  std::function<void(const std::string&)> note;
  std::function<void(const std::string&)> warning;
};

enum class StopReason { kStopRequested, kIdle };

class Server {
 public:
  /// Takes the socket (see listener.h); fails if a coordinator is running.
  static Result<std::unique_ptr<Server>> open(ServerOptions options);
  ~Server();

  /// Serves until stopped. Only a broken event loop returns an Error.
  Result<StopReason> run();

  const std::string& socket_path() const;
  /// The connection limit in force (ServerOptions::max_connections, lowered
  /// to fit the descriptor limit).
  std::size_t max_connections() const;
  /// The address the metrics endpoint listens on ("HOST:PORT"), or empty.
  std::string metrics_address() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpushare::coord::server
