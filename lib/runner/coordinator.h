// The one way a gpushare program starts a coordinator (gpushare-ctl serve,
// stdio on /dev/null, logging to a file beside its socket, waited for until
// its socket accepts connections):
// - gpushare-run's per-user coordinator, started like ssh-agent or tmux when
//   none is reachable: detached (its own session), exiting by itself once
//   its last job is gone (serve --idle-exit);
// - a private coordinator that a tool owns for one run (gpushare-probe
//   interference), in a private directory, stopped and removed by the tool.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace gpushare {

struct CoordinatorPlan {
  std::string socket_path;
  bool start = false;   ///< no coordinator listens there, and we may start one
  std::string warning;  ///< why none will be started although none is reachable
};

/// Decides from the socket path (GPUSHARE_SOCKET or docs/design.md's default)
/// and what listens there. A node-wide socket (/run/gpushare) is never
/// started by a user: without it the job still enforces its own limits.
Result<CoordinatorPlan> plan_coordinator();

/// Starts `ctl_path serve --idle-exit [--idle-grace GRACE]` on the plan's
/// socket, detached, and waits (at most `timeout_ms`) until it accepts
/// connections. An empty `idle_grace` keeps serve's default.
Status start_coordinator(const std::string& ctl_path, const CoordinatorPlan& plan,
                         const std::string& idle_grace, int timeout_ms);

/// A coordinator owned by the caller for one run: its socket in a fresh
/// private directory (mkdtemp under $XDG_RUNTIME_DIR or /tmp), stopped with
/// SIGTERM and its directory removed by stop() or the destructor.
class PrivateCoordinator {
 public:
  PrivateCoordinator() = default;
  PrivateCoordinator(const PrivateCoordinator&) = delete;
  PrivateCoordinator& operator=(const PrivateCoordinator&) = delete;
  ~PrivateCoordinator();

  /// Starts `ctl_path serve` and waits (at most 5 s) until it answers;
  /// `purpose` names the directory (gpushare-PURPOSE.XXXXXX).
  Status start(const std::string& ctl_path, const std::string& purpose);
  void stop();
  const std::string& socket() const { return socket_; }

 private:
  pid_t pid_ = -1;
  std::string directory_;
  std::string socket_;
};

}  // namespace gpushare
