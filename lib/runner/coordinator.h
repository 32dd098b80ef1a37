// gpushare-run's per-user coordinator, started like ssh-agent or tmux when
// none is reachable: detached (its own session, stdio on /dev/null), logging
// to a file beside its socket, and exiting by itself once its last job is
// gone (gpushare-ctl serve --idle-exit).
#pragma once

#include <string>

#include "common/result.h"

namespace gpushare {

struct CoordinatorPlan {
  std::string socket_path;
  bool start = false;   ///< no coordinator listens there, and we may start one
  std::string warning;  ///< why none will be started although none is reachable
};

/// Decides from the socket path (GPUSHARE_SOCKET or design.md's default)
/// and what listens there. A node-wide socket (/run/gpushare) is never
/// started by a user: without it the job still enforces its own limits.
Result<CoordinatorPlan> plan_coordinator();

/// Starts `ctl_path serve --idle-exit [--idle-grace GRACE]` on the plan's
/// socket, detached, and waits (at most `timeout_ms`) until it accepts
/// connections. An empty `idle_grace` keeps serve's default.
Status start_coordinator(const std::string& ctl_path, const CoordinatorPlan& plan,
                         const std::string& idle_grace, int timeout_ms);

}  // namespace gpushare
