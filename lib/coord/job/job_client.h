// The coordinator client, compiled into the interposer.
//
// The job's side of the control plane. It links only libc, libdl and
// pthreads (no libstdc++: built with -fno-exceptions -fno-rtti and no
// standard-library types beyond std::atomic), and it never blocks or slows a
// CUDA call:
//
// - client_start() (at CUDA initialisation) registers with a short bounded
//   timeout (200 ms), then hands the socket to a background thread and
//   returns. It always returns; without a coordinator the job runs on the
//   limits it was started with.
// - The background thread owns the socket. It notices the coordinator going
//   away (the socket closes), keeps the last limits it had, and reconnects
//   and re-registers when a coordinator appears again (it tries every 100 ms
//   at first, backing off to 500 ms, so a restart is found well within 2 s).
//   Every 50 ms it copies the LocalCounters into the telemetry page.
// - mem_limit(), paused() read the coordinator's limits page directly: a
//   limit change is visible to the next allocation, with no IPC.
//
// The client reads no environment: the interposer reads the job's
// variables once (interpose/settings.cc) and hands them over in JobIdentity.
//
// When the coordinator goes away, the job keeps its last compute limits
// too (an opportunistic job never runs wild against a production job).
// When the coordinator goes away while the job is paused, the job resumes:
// nobody is left to resume it, and no call may block on a dead coordinator.
// fork(): the child starts unregistered, with the parent's current limits
// as its own, and no background thread; client_start() may be called again
// in the child.
#pragma once

#include <atomic>
#include <cstdint>

#include "coord/contract/control_block.h"

namespace gpushare::coord::job {

struct DeviceIdentity {
  unsigned char uuid[16];               ///< as cuDeviceGetUuid gives it
  std::uint64_t mem_total_bytes;        ///< physical capacity
};

struct JobIdentity {
  const char* name = nullptr;         ///< GPUSHARE_JOB; null or empty: the process name
  Qos qos = kQosProduction;           ///< GPUSHARE_QOS
  const char* socket_path = nullptr;  ///< GPUSHARE_SOCKET; null or empty: the default path
  /// GPUSHARE_TREE: the job's tree file (lib/interpose/tree.cc), whose
  /// descriptor proves to the coordinator that this process is part of the
  /// job; null or empty: none (the process is a job of its own).
  const char* tree_path = nullptr;
  /// GPUSHARE_COMPUTE: the job's static compute cap, enforced by the
  /// interposer even without a coordinator; kNoLimit: none.
  std::uint64_t compute_cap_ppm = kNoLimit;
  /// Receives one log line (no newline); null: stderr, when `debug`.
  void (*log)(const char* line) = nullptr;
  bool debug = false;  ///< GPUSHARE_DEBUG: log even without a log function
  int device_count = 0;
  DeviceIdentity devices[kMaxDevices] = {};
};

/// One device's compute limits as the job sees them (control_block.h).
struct ComputeView {
  std::uint64_t launch_budget = kNoLimit;
  std::uint64_t launch_window_ns = 0;
  std::uint64_t max_queued = kNoLimit;
  std::uint64_t compute_cap_ppm = kNoLimit;
  /// Yield slots to wait for (layout 4); kept, like the limits, when the
  /// coordinator goes away (yield.h bounds a mark nobody clears).
  std::uint64_t yield_mask = 0;
};

/// Counters owned and updated by the interposer on its hot paths
/// (process-local atomics, relaxed increments); the client thread copies them
/// into the telemetry page.
struct LocalCounters {
  std::atomic<std::uint64_t> mem_used_bytes[kMaxDevices];
  std::atomic<std::uint64_t> launches;
  std::atomic<std::uint64_t> blocks_launched;
  std::atomic<std::uint64_t> kernels_completed;
  std::atomic<std::uint64_t> iterations;
  std::atomic<std::uint64_t> last_iteration_ns;
  std::atomic<std::uint64_t> gpu_busy_ns;
  std::atomic<std::uint64_t> throttle_wait_ns;
  /// Why launches wait (layout 6, control_block.h "Hold reasons"): the
  /// reason now and since when, waits so far per reason, the learned cost.
  std::atomic<std::uint64_t> hold_reason;
  std::atomic<std::uint64_t> hold_since_ns;
  std::atomic<std::uint64_t> held_ns[kHoldReasons];
  std::atomic<std::uint64_t> launch_cost_ns;
  /// When set, the launch count to publish (the interposer counts launches
  /// per thread, without a locked instruction); else `launches`.
  std::uint64_t (*launches_total)();
  /// Elastic memory, per device: where the job's managed-backed
  /// memory is, and a production allocation waiting for room (0: none).
  std::atomic<std::uint64_t> device_resident_bytes[kMaxDevices];
  std::atomic<std::uint64_t> host_resident_bytes[kMaxDevices];
  std::atomic<std::uint64_t> mem_request_bytes[kMaxDevices];
  /// Bumped (release) when a production allocation starts waiting for room.
  std::atomic<std::uint64_t> mem_request_seq[kMaxDevices];
  /// When set, called by the client thread every tick while registered,
  /// before the counters are copied: the interposer moves memory toward its
  /// device-resident targets there (spill.cc).
  void (*memory_tick)();
  /// Suspend and resume (layout 4; lib/interpose/suspend.h): the state
  /// (kSuspend*), what a suspend cannot move (kBlocks*), and the bytes a
  /// suspend moved to the host per device.
  std::atomic<std::uint64_t> suspend_state;
  std::atomic<std::uint64_t> suspend_blockers;
  std::atomic<std::uint64_t> suspended_bytes[kMaxDevices];
  /// When set, called by the client thread when it stops while the job's
  /// memory is away: brings it back before launches held on the
  /// coordinator's page are woken.
  void (*before_retire)();
  /// When set: whether the job's memory is not all where its program left
  /// it (a suspend under way, in force, or being undone). When the
  /// coordinator goes away then, launches stay held on its page while
  /// memory_tick brings the memory back, and the client registers with a
  /// new coordinator meanwhile (client.cc).
  bool (*memory_away)();
};

/// What the launch path reads, exposed so that launch_gated() inlines: the
/// coordinator's limits page while registered (null otherwise), and the
/// throttle flag kept while unregistered.
struct LaunchGate {
  std::atomic<const LimitsPage*> page;
  std::atomic<std::uint32_t> fallback_throttle;
};
extern LaunchGate g_launch_gate;

/// The owner of the job's memory limits: the limit each device starts with
/// (GPUSHARE_MEM_LIMIT, resolved against the device; kNoLimit = none) is
/// stored here once, before the interposer publishes its devices, and the
/// limit in force (mem_limit) is the coordinator's while registered, else
/// the last one it set, else the start limit. `limits` holds `count`
/// entries, one per device index.
void set_start_limits(const std::uint64_t* limits, int count);
/// The limit the job started with on a device (kNoLimit: none or a bad index).
std::uint64_t start_mem_limit(int device);

/// Registers (bounded: 200 ms at most) and starts the background thread.
/// Returns quickly, always. The identity is copied; `counters` must outlive
/// the process (a static). A second call while running does nothing.
void client_start(const JobIdentity& job, LocalCounters* counters);

/// Stops the background thread and closes the socket (the coordinator then
/// forgets the job). Keeps the current limits. For tests and orderly exits;
/// process exit needs no call.
void client_stop();

/// The memory limit in bytes for a device (an index into
/// JobIdentity::devices): the coordinator's while registered, else the last
/// one it set, else the requested one. kNoLimit for none or a bad index.
/// Lock-free loads only; called on every allocation.
std::uint64_t mem_limit(int device);

/// The most managed bytes the job may keep on a device while registered
/// (control_block.h, layout 3); kNoLimit when there is no target or no
/// coordinator.
std::uint64_t device_resident_target(int device);

/// The wait the coordinator said no room is coming for (mem_request_seq's
/// number; control_block.h), or 0 while unregistered.
std::uint64_t mem_refused_seq(int device);

/// Whether the coordinator asks the job to be suspended (layout 4); false
/// while unregistered.
bool suspend_requested();

/// Wakes the background thread now (control_block.h, "Wake-ups"): it
/// publishes the counters, tells the coordinator of a new room request,
/// and runs the memory work. One write(2); a no-op while no thread runs.
void wake_client();

/// Whether kernel launches must wait. One pointer and one flag load.
bool paused();

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

/// A device's compute limits: the coordinator's while registered, else the
/// last ones it set, else the job's own GPUSHARE_COMPUTE cap.
void compute_limits(int device, ComputeView* out);

/// Blocks the calling thread while the job is paused (futex wait on the
/// shared page; also returns when the coordinator goes away).
void wait_while_paused();

/// Whether the coordinator currently classes the job as opportunistic.
bool opportunistic();

/// The coordinator's id for this job while registered; 0 otherwise.
std::uint64_t job_id();

/// Registrations completed so far (1 after the first, 2 after a
/// re-registration with a restarted coordinator, ...).
std::uint64_t registrations();

}  // namespace gpushare::coord::job
