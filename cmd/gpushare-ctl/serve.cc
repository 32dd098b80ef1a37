// gpushare-ctl serve: runs the node coordinator until SIGTERM or SIGINT (or,
// with --idle-exit, until no job has been registered for the grace period).
//
// Once listening it prints one record on stdout,
//   {"kind":"coordinator","version":1,"socket":"...","pid":N}
// (with "metrics_address":"HOST:PORT" when --metrics-listen is given)
// so that whoever started it (gpushare-run, a test, a unit file) can wait
// for that line instead of polling the socket.
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "common/log_file.h"
#include "common/units.h"
#include "coord/server/listener.h"
#include "coord/server/metrics_http.h"
#include "coord/server/server.h"
#include "coord/server/stop_signals.h"
#include "ctl.h"

namespace gpushare::ctl {
namespace {

namespace diag = gpushare::diag;

// Why serve() stops before running: the message and the exit status.
struct Refusal {
  std::string message;
  int status = exit_status::kFailure;
};

int refuse(const Refusal& refusal) {
  diag::error(refusal.message);
  if (refusal.status == exit_status::kUsage) diag::usage_hint();
  return refusal.status;
}

// Checks every option, before the socket is taken, into `server`.
std::optional<Refusal> check_options(const CtlOptions& options, coord::server::ServerOptions& server) {
  server.socket_path = socket_path(options, &server.private_directory);
  if (server.socket_path.empty()) {
    return Refusal{"the default socket path is too long; give --socket PATH"};
  }
  if (!options.admin_group.empty()) {
    group* entry = getgrnam(options.admin_group.c_str());
    if (entry == nullptr) {
      return Refusal{"--admin-group: no group '" + options.admin_group + "'", exit_status::kUsage};
    }
    server.policy.admin_gid = entry->gr_gid;
    server.policy.admin_group_name = options.admin_group;
  }
  Result<std::chrono::nanoseconds> grace = parse_duration(options.idle_grace);
  if (!grace) return Refusal{"--idle-grace: " + grace.error().message, exit_status::kUsage};
  Result<coord::server::ViolationAction> action = coord::server::parse_violation_action(options.on_violation);
  if (!action) return Refusal{"--on-violation: " + action.error().message, exit_status::kUsage};
  server.violation_action = *action;
  server.idle_exit = options.idle_exit;
  server.compute_policy = *coord::server::parse_compute_policy(options.compute_policy);  // checked by main
  server.host_pause = options.host_pause == "on";
  server.gang_harvest = options.gang_harvest == "on";
  server.checkpoint = options.checkpoint == "on";
  server.migration_policy = options.migration_policy == "on";
  if (!options.metrics_listen.empty()) {
    if (Status valid = coord::server::check_listen_address(options.metrics_listen); !valid) {
      return Refusal{"--metrics-listen: " + valid.error().message, exit_status::kUsage};
    }
    server.metrics_listen = options.metrics_listen;
  }
  server.state_path = server.socket_path + ".state";
  server.idle_grace = *grace;
  Result<std::chrono::nanoseconds> memory_tick = parse_duration(options.memory_tick);
  if (!memory_tick) {
    return Refusal{"--memory-tick: " + memory_tick.error().message, exit_status::kUsage};
  }
  if (*memory_tick < std::chrono::milliseconds(1) || *memory_tick > std::chrono::hours(1)) {
    return Refusal{"--memory-tick: '" + options.memory_tick + "' is outside 1ms to 1h",
                   exit_status::kUsage};
  }
  server.memory_tick = *memory_tick;
  return std::nullopt;
}

// The socket's directory first: the log usually lives beside the socket
// (gpushare-run puts it there), and a per-user directory must be checked as
// ours before anything is created in it. Then diagnostics go to the log
// file, so that later failures are still seen.
std::optional<Refusal> prepare_directory_and_log(const CtlOptions& options,
                                                 const coord::server::ServerOptions& server,
                                                 std::FILE** log) {
  if (Status ready = coord::server::prepare_socket_directory(server.socket_path, server.private_directory);
      !ready) {
    return Refusal{ready.error().message};
  }
  if (!options.log_file.empty()) {
    Result<std::FILE*> opened = open_log_file(options.log_file);
    if (!opened) return Refusal{opened.error().message};
    *log = *opened;
    diag::set_stream(*log);
  }
  diag::set_verbosity(diag::Verbosity::kVerbose);
  return std::nullopt;
}

// The one stdout record: whoever started us waits for it.
void announce(const std::string& path, const std::string& metrics_address) {
  diag::note(utc_stamped("coordinator " + std::to_string(getpid()) + " listening on " + path));
  nlohmann::ordered_json ready = {{"socket", path}, {"pid", getpid()}};
  if (!metrics_address.empty()) ready["metrics_address"] = metrics_address;
  JsonLinesWriter(std::cout).write("coordinator", 1, ready);
}

void note_stop(coord::server::StopReason reason, const CtlOptions& options, coord::server::StopSignals& signals) {
  if (reason == coord::server::StopReason::kIdle) {
    diag::note(utc_stamped("no jobs for " + options.idle_grace + "; exiting"));
    return;
  }
  diag::note(utc_stamped(std::string("stopping on SIG") + signals.received_name()));
}

void close_log(std::FILE* log) {
  if (log == nullptr) return;
  diag::set_stream(nullptr);
  std::fclose(log);
}

}  // namespace

int serve(const CtlOptions& options) {
  coord::server::ServerOptions server;
  if (std::optional<Refusal> refused = check_options(options, server)) return refuse(*refused);
  std::FILE* log = nullptr;
  if (std::optional<Refusal> refused = prepare_directory_and_log(options, server, &log)) {
    return refuse(*refused);
  }
  server.note = [](const std::string& line) { diag::note(utc_stamped(line)); };
  server.warning = [](const std::string& line) { diag::warning(utc_stamped(line)); };

  coord::server::StopSignals signals;
  if (Status taken = signals.take(); !taken) return refuse({taken.error().message});
  server.stop_fd = signals.fd();

  Result<std::unique_ptr<coord::server::Server>> coordinator = coord::server::Server::open(std::move(server));
  if (!coordinator) return refuse({coordinator.error().message});
  announce((*coordinator)->socket_path(), (*coordinator)->metrics_address());

  Result<coord::server::StopReason> stopped = (*coordinator)->run();
  if (!stopped) return refuse({stopped.error().message});
  note_stop(*stopped, options, signals);
  coordinator->reset();  // closes every connection and removes the socket
  close_log(log);
  return exit_status::kSuccess;
}

}  // namespace gpushare::ctl
