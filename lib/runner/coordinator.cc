#include "runner/coordinator.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "coord/contract/socket_path.h"

namespace gpushare {
namespace {

// Runs `ctl_path --socket SOCKET serve ARGS... --log-file LOG` in this
// (child) process with stdio on /dev/null, so nothing it says reaches the
// caller's output; its messages go to the log.
[[noreturn]] void exec_serve(const std::string& ctl_path, const std::string& socket_path,
                             const std::vector<std::string>& serve_args,
                             const std::string& log_path) {
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO) close(null);
  }
  std::vector<const char*> argv = {ctl_path.c_str(), "--socket", socket_path.c_str(), "serve"};
  for (const std::string& arg : serve_args) argv.push_back(arg.c_str());
  argv.push_back("--log-file");
  argv.push_back(log_path.c_str());
  argv.push_back(nullptr);
  execv(ctl_path.c_str(), const_cast<char* const*>(argv.data()));
  _exit(127);
}

// Waits, at most `timeout_ms`, until the socket accepts connections (not a
// fixed time); `child`, when positive, is the coordinator itself, whose
// early exit ends the wait at once.
Status wait_until_serving(const std::string& socket_path, int timeout_ms, pid_t child,
                          const std::string& log_path) {
  std::uint64_t deadline = monotonic_ns() + static_cast<std::uint64_t>(timeout_ms) * 1000000;
  for (;;) {
    if (coord::probe_socket(socket_path.c_str()) == coord::SocketProbe::kLive) return {};
    int status = 0;
    if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
      return make_error("the coordinator for " + socket_path + " exited at once (see " + log_path +
                        ")");
    }
    if (monotonic_ns() >= deadline) break;
    timespec pause{0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  return make_error("the coordinator started for " + socket_path + " did not answer within " +
                    std::to_string(timeout_ms) + " ms (see " + log_path + ")");
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
  std::vector<std::string> serve_args = {"--idle-exit"};
  if (!idle_grace.empty()) serve_args.insert(serve_args.end(), {"--idle-grace", idle_grace});
  pid_t child = fork();
  if (child < 0)
    return make_error(std::string("cannot start a coordinator: ") + std::strerror(errno));
  if (child == 0) {
    // Fork again so the coordinator is not our child: gpushare-run execs the
    // job next, and the job should not inherit a child it never waits for.
    // The grandchild has a session of its own and no terminal: it outlives
    // gpushare-run and its shell.
    pid_t grandchild = fork();
    if (grandchild == 0) {
      setsid();
      exec_serve(ctl_path, plan.socket_path, serve_args, log_path);
    }
    _exit(grandchild < 0 ? 1 : 0);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  auto serving = wait_until_serving(plan.socket_path, timeout_ms, -1, log_path);
  if (!serving) return make_error(serving.error().message + "; the job enforces its own limits only");
  return {};
}

PrivateCoordinator::~PrivateCoordinator() { stop(); }

Status PrivateCoordinator::start(const std::string& ctl_path, const std::string& purpose) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::string base = runtime != nullptr && *runtime != '\0' ? runtime : "/tmp";
  std::string pattern = base + "/gpushare-" + purpose + ".XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return make_error("cannot create a directory for a private coordinator in " + base + ": " +
                      std::strerror(errno));
  }
  directory_ = pattern;
  socket_ = directory_ + "/gpushare.sock";
  std::string log_path = directory_ + "/coordinator.log";
  pid_ = fork();
  if (pid_ < 0) return make_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);  // a terminal's ^C reaches the caller, which stops it
    exec_serve(ctl_path, socket_, {}, log_path);
  }
  auto serving = wait_until_serving(socket_, 5000, pid_, log_path);
  if (!serving) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != 0) pid_ = -1;  // gone already
  }
  return serving;
}

void PrivateCoordinator::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (!directory_.empty()) {
    // What serve leaves (its socket, lock, state file, log) lives in this
    // private directory, made by mkdtemp for it alone.
    if (DIR* dir = opendir(directory_.c_str()); dir != nullptr) {
      while (dirent* entry = readdir(dir)) {
        std::string leaf = entry->d_name;
        if (leaf != "." && leaf != "..") unlink((directory_ + "/" + leaf).c_str());
      }
      closedir(dir);
    }
    rmdir(directory_.c_str());
    directory_.clear();
  }
}

}  // namespace gpushare
