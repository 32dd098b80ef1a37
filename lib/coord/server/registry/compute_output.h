// What the compute controller tells the registry about a job: the policy
// that runs and each job's last measured figures and limits. Kept below the
// controller (compute/), which writes it, so that the registry, which stores
// it for ls and show, includes nothing above itself.
#pragma once

#include <cstdint>
#include <limits>

#include "coord/server/registry/control_block_owner.h"

namespace gpushare::coord::server {

enum class ComputePolicy { kNone, kGpushare, kTgs };

struct ComputeJobOutput {
  std::uint64_t id = 0;
  ComputeLimits limits;
  double speed_per_s = -1;  ///< iterations/s (or launches/s); < 0: not measured yet
  bool speed_in_iterations = false;
  double solo_speed_per_s = -1;  ///< production: its estimated speed alone
  double slowdown = std::numeric_limits<double>::quiet_NaN();  ///< NaN: not measured          ///<
                                                               ///< production: 1 - speed/solo
  double gpu_share = -1;  ///< measured GPU time / wall time (tracked launches)
  double launch_rate_per_s = -1;
};

}  // namespace gpushare::coord::server
