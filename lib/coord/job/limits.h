// The owner of a job's limits, compiled into the interposer: every limit
// the job enforces is read here, and nowhere else.
//
// - Memory: the limit the job asked for (GPUSHARE_MEM_LIMIT, parsed once by
//   the interposer's settings.cc and handed over at load), resolved once
//   per device into the start limit when CUDA enumerates the devices; the
//   limit in force (mem_limit) is the coordinator's while registered, else
//   the last one it set, else the start limit.
// - The resident target of an opportunistic job's managed memory and the
//   coordinator's "no room coming" verdicts (registered only).
// - Compute: the coordinator's limits while registered, else the last ones
//   it set, else the job's own cap (GPUSHARE_COMPUTE).
// - Pauses and the suspend request (registered only: a dead coordinator
//   pauses nobody).
// - The class the coordinator gives the job, and whether a coordinator is
//   there at all (registered()).
//
// While registered every read goes to the coordinator's limits page (shared
// memory the job maps read-only); unregistered, to the fallbacks kept here,
// which the client (job_client.cc) fills from the page it retires, through
// the calls client_state.h declares for it. The interposer reads every
// limit and the class here, never the page itself. Lock-free
// loads only: called on every allocation and on the launch path. Job side
// only: libc, no libstdc++.
#pragma once

#include <atomic>
#include <cstdint>

#include "coord/contract/compute_limits.h"
#include "coord/contract/control_block.h"
#include "vocab/size.h"

namespace gpushare::coord::job {

/// What the launch path reads, exposed so that launch_gated() inlines: the
/// coordinator's limits page while registered (null otherwise), and the
/// throttle flag kept while unregistered. The client thread is the only
/// writer of `page`.
struct LaunchGate {
  std::atomic<const LimitsPage*> page;
  std::atomic<std::uint32_t> fallback_throttle;
};
extern LaunchGate g_launch_gate;

/// The memory limit the job asked for, as the interposer parsed it once
/// (null: none). Called once at load, before any device is known.
void request_mem_limit(const SizeSpec* spec);
/// The asked-for limit resolved against a device of `capacity_bytes`
/// (a percentage needs it); kNoLimit when none was asked for.
std::uint64_t requested_mem_limit(std::uint64_t capacity_bytes);
/// The start limit of each device (kNoLimit = none), stored once before the
/// interposer publishes its devices, so that no allocation passes unlimited
/// in between. `limits` holds `count` entries, one per device index.
void set_start_limits(const std::uint64_t* limits, int count);
/// Resolves the asked-for limit once per device (`capacities` in device
/// order) and stores the results as the start limits.
void start_limits_from_capacities(const std::uint64_t* capacities, int count);
/// The limit the job started with on a device (kNoLimit: none or a bad index).
std::uint64_t start_mem_limit(int device);

/// The memory limit in bytes for a device: the coordinator's while
/// registered, else the last one it set, else the start limit. kNoLimit for
/// none or a bad index.
std::uint64_t mem_limit(int device);

/// The most managed bytes the job may keep on a device while registered
/// (control_block.h, layout 3); kNoLimit when there is no target or no
/// coordinator.
std::uint64_t device_resident_target(int device);

/// The wait the coordinator said no room is coming for (mem_request_seq's
/// number; control_block.h), or 0 while unregistered.
std::uint64_t mem_refused_seq(int device);

/// A device's compute limits (coord/contract/compute_limits.h): the
/// coordinator's while registered, else the last ones it set, else the
/// job's own GPUSHARE_COMPUTE cap. The yield mask is kept, like the limits,
/// when the coordinator goes away (yield.h bounds a mark nobody clears).
ComputeLimits compute_limits(int device);

/// Whether a launch must take the slow path: paused, or a compute limit in
/// force on some device. Two loads from one cache line of the limits page
/// (or one process-local load while unregistered).
inline bool launch_gated() {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  if (page != nullptr) {
    return (page->paused.load(std::memory_order_relaxed) |
            page->throttle.load(std::memory_order_relaxed)) != 0;
  }
  return g_launch_gate.fallback_throttle.load(std::memory_order_relaxed) != 0;
}

/// Whether kernel launches must wait. One pointer and one flag load.
bool paused();

/// Blocks the calling thread while the job is paused (futex wait on the
/// shared page; also returns when the coordinator goes away).
void wait_while_paused();

/// Whether the coordinator asks the job to be suspended (layout 4); false
/// while unregistered.
bool suspend_requested();

/// Whether the job is registered with a coordinator now (its limits page
/// is in force). One load.
bool registered();

/// The job's class: the coordinator's while registered, else the last one
/// it set, else the class the job was started with (GPUSHARE_QOS).
Qos qos();

/// Why launches wait now (kPause* bits, control_block.h); 0 while
/// unregistered or running.
std::uint32_t pause_reasons();

}  // namespace gpushare::coord::job
