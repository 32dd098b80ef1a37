// gpushare-ctl serve: runs the node coordinator until SIGTERM or SIGINT (or,
// with --idle-exit, until no job has been registered for the grace period).
//
// Once listening it prints one record on stdout,
//   {"kind":"coordinator","version":1,"socket":"...","pid":N}
// so that whoever started it (gpushare-run, a test, a unit file) can wait
// for that line instead of polling the socket.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "common/units.h"
#include "coord/server/listener.h"
#include "coord/server/server.h"
#include "ctl.h"

namespace gpushare::ctl {
namespace {

namespace diag = gpushare::diag;

// Log lines carry a UTC timestamp: a coordinator runs for days.
std::string stamped(const std::string& message) {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc;
  gmtime_r(&now.tv_sec, &utc);
  char stamp[40];
  std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", now.tv_nsec / 1000000);
  return std::string(stamp) + " " + message;
}

struct Signals {
  int fd = -1;
  ~Signals() {
    if (fd >= 0) close(fd);
  }
};

// SIGTERM and SIGINT arrive on a descriptor the event loop watches; SIGPIPE
// (a peer gone mid-reply) and SIGHUP (a closed terminal) are ignored.
bool take_signals(Signals& signals) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  if (sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) return false;
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signals.fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  return signals.fd >= 0;
}

// Appends to the log without following a link at its name (one planted there
// would make a coordinator, root's included, write wherever it points), and
// only to a regular file.
Result<std::FILE*> open_log(const std::string& path) {
  int fd =
      open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) {
    return make_error(
        "cannot open log file '" + path +
        "': " + (errno == ELOOP ? std::string("it is a symbolic link") : std::strerror(errno)));
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return make_error("log file '" + path + "' is not a regular file");
  }
  std::FILE* log = fdopen(fd, "a");
  if (log == nullptr) {
    close(fd);
    return make_error("cannot open log file '" + path + "': " + std::strerror(errno));
  }
  std::setvbuf(log, nullptr, _IOLBF, 0);
  return log;
}

}  // namespace

int serve(const CtlOptions& options) {
  coord::ServerOptions server;
  server.socket_path = socket_path(options, &server.private_directory);
  if (server.socket_path.empty()) {
    diag::error("the default socket path is too long; give --socket PATH");
    return exit_status::kFailure;
  }

  // Check every option before taking the socket.
  if (!options.admin_group.empty()) {
    group* entry = getgrnam(options.admin_group.c_str());
    if (entry == nullptr) {
      diag::error("--admin-group: no group '" + options.admin_group + "'");
      diag::usage_hint();
      return exit_status::kUsage;
    }
    server.policy.admin_gid = entry->gr_gid;
    server.policy.admin_group_name = options.admin_group;
  }
  Result<std::chrono::nanoseconds> grace = parse_duration(options.idle_grace);
  if (!grace) {
    diag::error("--idle-grace: " + grace.error().message);
    diag::usage_hint();
    return exit_status::kUsage;
  }
  Result<coord::ViolationAction> action = coord::parse_violation_action(options.on_violation);
  if (!action) {
    diag::error("--on-violation: " + action.error().message);
    diag::usage_hint();
    return exit_status::kUsage;
  }
  server.violation_action = *action;
  server.idle_exit = options.idle_exit;
  server.compute_policy = *coord::parse_compute_policy(options.compute_policy);  // checked by main
  server.state_path = server.socket_path + ".state";
  server.idle_grace = *grace;

  // The socket's directory first: the log usually lives beside the socket
  // (gpushare-run puts it there), and a per-user directory must be checked
  // as ours before anything is created in it.
  if (Status ready = coord::prepare_socket_directory(server.socket_path, server.private_directory);
      !ready) {
    diag::error(ready.error().message);
    return exit_status::kFailure;
  }
  // Log to the file from here on, so that its failures are still seen.
  std::FILE* log = nullptr;
  if (!options.log_file.empty()) {
    Result<std::FILE*> opened = open_log(options.log_file);
    if (!opened) {
      diag::error(opened.error().message);
      return exit_status::kFailure;
    }
    log = *opened;
    diag::set_stream(log);
  }
  diag::set_verbosity(diag::Verbosity::kVerbose);
  server.note = [](const std::string& line) { diag::note(stamped(line)); };
  server.warning = [](const std::string& line) { diag::warning(stamped(line)); };

  Signals signals;
  if (!take_signals(signals)) {
    diag::error(std::string("cannot take signals: ") + std::strerror(errno));
    return exit_status::kFailure;
  }
  server.stop_fd = signals.fd;

  Result<std::unique_ptr<coord::Server>> coordinator = coord::Server::open(std::move(server));
  if (!coordinator) {
    diag::error(coordinator.error().message);
    return exit_status::kFailure;
  }
  const std::string& path = (*coordinator)->socket_path();
  diag::note(stamped("coordinator " + std::to_string(getpid()) + " listening on " + path));
  nlohmann::ordered_json ready = {{"socket", path}, {"pid", getpid()}};
  JsonLinesWriter(std::cout).write("coordinator", 1, ready);

  Result<coord::StopReason> stopped = (*coordinator)->run();
  if (!stopped) {
    diag::error(stopped.error().message);
    return exit_status::kFailure;
  }
  if (*stopped == coord::StopReason::kIdle) {
    diag::note(stamped("no jobs for " + options.idle_grace + "; exiting"));
  } else {
    signalfd_siginfo info{};
    ssize_t n = read(signals.fd, &info, sizeof info);
    const char* name = n == sizeof info ? sigabbrev_np(static_cast<int>(info.ssi_signo)) : nullptr;
    diag::note(stamped(std::string("stopping on SIG") + (name != nullptr ? name : "TERM")));
  }
  coordinator->reset();  // closes every connection and removes the socket
  if (log != nullptr) {
    diag::set_stream(nullptr);
    std::fclose(log);
  }
  return exit_status::kSuccess;
}

}  // namespace gpushare::ctl
