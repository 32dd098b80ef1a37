// The coordinator's own pause of an opportunistic job whose memory is on
// the host while production runs.
//
// An opportunistic job that spilled for production keeps computing on its
// managed memory, now mostly on the host: every kernel faults pages over
// the host link and evicts others to make room. A real GPU serves those
// faults on resources every context shares (the link, and the GPU's time:
// a context stalled on faults is not switched out until they are served),
// so production pays for them: 16% of its speed on an H100. The job itself
// gains little, its kernels running several times slower. So, as AntMan
// does, the coordinator pauses such a job's launches until its memory
// comes back or production stops; its memory stays where it is (the
// arbiter still moves it back when there is room), and its processes run
// on the CPU meanwhile, only their kernel launches wait.
//
// The decision, per opportunistic job, every compute tick:
//   pause   when some production job on one of its devices (one it uses) is active and,
//           on those devices, at least kPauseHostShare of its managed memory
//           is on the host;
//   resume  when no production job there is active, or less than
//           kResumeHostShare is on the host.
// The gap between the two shares, and production's activity being held
// for kProductionQuietNs after it was last seen active, keep the decision from
// flapping: a restore in progress, or production's own pauses between
// iterations, do not toggle it. A production job is "active" when its
// launch count moved within that time, or when it has launched work it
// has not synchronised with since (its launch count is past the count at
// its last iteration boundary): a job that queues many kernels and then
// waits for them launches nothing for seconds while the GPU runs its work.
//
// This pause is its own reason in the control block (kPauseHostMemory),
// beside the operator's: an operator's resume does not lift it, and its
// lifting does not resume a job an operator paused.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

/// Shares of an opportunistic job's managed memory on the host, in parts
/// per thousand: pause at or above kPauseHostShare, resume below
/// kResumeHostShare.
inline constexpr std::uint64_t kPauseHostShareMilli = 500;
inline constexpr std::uint64_t kResumeHostShareMilli = 250;
/// A production job counts as active this long after it was last seen so.
inline constexpr std::uint64_t kProductionQuietNs = 500'000'000;

/// What the decision sees of one opportunistic job, summed over the
/// devices where production is active (both 0 when there is none).
struct HostPauseInput {
  bool production_active = false;
  std::uint64_t device_resident_bytes = 0;
  std::uint64_t host_resident_bytes = 0;
};

/// Whether the job should be paused now, given whether it is (hysteresis).
bool host_pause_decide(const HostPauseInput& input, bool paused_now);

/// Production's activity per process, and the decision applied per job.
class HostPauser {
 public:
  explicit HostPauser(bool enabled) : enabled_(enabled) {}
  /// One tick: decides for every opportunistic job and sets or clears its
  /// pause (Registry::set_host_paused). Disabled: clears any it set.
  void tick(Registry& registry, std::uint64_t now_ns);

 private:
  struct Activity {
    std::uint64_t launches = 0;
    std::uint64_t active_ns = 0;  ///< when last seen launching or with work in flight; 0: never
  };
  bool enabled_;
  std::map<std::uint64_t, Activity> activity_;  ///< by process key
};

}  // namespace gpushare::coord::server
