#include "runner/coordinator.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "coord/contract/socket_path.h"

namespace gpushare {
namespace {

long long now_ms() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// The grandchild: a new session, no terminal, stdio on /dev/null; it
// outlives gpushare-run (which execs the job) and its shell.
[[noreturn]] void exec_detached(const std::string& ctl_path, const CoordinatorPlan& plan,
                                const std::string& idle_grace, const std::string& log_path) {
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO) close(null);
  }
  const char* argv[] = {ctl_path.c_str(), "--socket",   plan.socket_path.c_str(), "serve",
                        "--idle-exit",    "--log-file", log_path.c_str(),         nullptr,
                        nullptr,          nullptr};
  if (!idle_grace.empty()) {
    argv[7] = "--idle-grace";
    argv[8] = idle_grace.c_str();
  }
  execv(ctl_path.c_str(), const_cast<char* const*>(argv));
  _exit(127);
}

}  // namespace

Result<CoordinatorPlan> plan_coordinator() {
  CoordinatorPlan plan;
  char path[256];
  coord::SocketSource source;
  if (!coord::default_socket_path(path, sizeof path, &source)) {
    return make_error("the coordinator socket path is too long for a unix socket");
  }
  plan.socket_path = path;
  // Another user may have created the per-user directory first (sudo and
  // cron run without XDG_RUNTIME_DIR): never start or trust a coordinator
  // there.
  char why[256];
  if (!coord::socket_directory_trusted(path, why, sizeof why)) {
    plan.warning = "refusing the coordinator socket " + plan.socket_path + ": " + why +
                   "; the job enforces its own limits only";
    return plan;
  }
  uid_t peer_uid = 0;
  coord::SocketProbe probe = coord::probe_socket(path, nullptr, &peer_uid);
  if (probe == coord::SocketProbe::kLive) {
    if (peer_uid != static_cast<uid_t>(-1) && !coord::trusted_uid(peer_uid)) {
      plan.warning = "refusing the coordinator on " + plan.socket_path + ": it runs as uid " +
                     std::to_string(peer_uid) +
                     ", not as this user or root; the job enforces its own limits only";
    }
    return plan;
  }
  if (source == coord::SocketSource::kNode) {
    plan.warning = "the node coordinator at " + plan.socket_path +
                   " is not running; the job enforces its own limits only";
    return plan;
  }
  if (probe == coord::SocketProbe::kNotSocket || probe == coord::SocketProbe::kError) {
    plan.warning = "cannot use the coordinator socket " + plan.socket_path + " (" +
                   coord::probe_name(probe) + "); the job enforces its own limits only";
    return plan;
  }
  plan.start = true;  // absent or stale: serve replaces a stale socket file
  return plan;
}

Status start_coordinator(const std::string& ctl_path, const CoordinatorPlan& plan,
                         const std::string& idle_grace, int timeout_ms) {
  char directory[256];
  if (!coord::socket_directory(plan.socket_path.c_str(), directory, sizeof directory)) {
    return make_error("the coordinator socket path is too long");
  }
  std::string log_path = std::string(directory) + "/coordinator.log";
  pid_t child = fork();
  if (child < 0)
    return make_error(std::string("cannot start a coordinator: ") + std::strerror(errno));
  if (child == 0) {
    // Fork again so the coordinator is not our child: gpushare-run execs the
    // job next, and the job should not inherit a child it never waits for.
    pid_t grandchild = fork();
    if (grandchild == 0) exec_detached(ctl_path, plan, idle_grace, log_path);
    _exit(grandchild < 0 ? 1 : 0);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  // Wait for the socket to accept connections, not for a fixed time.
  long long deadline = now_ms() + timeout_ms;
  for (;;) {
    if (coord::probe_socket(plan.socket_path.c_str()) == coord::SocketProbe::kLive) return {};
    if (now_ms() >= deadline) break;
    timespec pause{0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  return make_error("the coordinator started for " + plan.socket_path + " did not answer within " +
                    std::to_string(timeout_ms) + " ms (see " + log_path +
                    "); the job enforces its own limits only");
}

}  // namespace gpushare
