// What the interposer keeps for the job's client thread, and the call that
// has it published now. The interposer counts on its hot paths (relaxed
// process-local atomics); the client thread (job_client.h) copies the
// counters into the telemetry page every 10 ms, and at once when woken.
// Its own header, at the bottom of lib/coord/job, so that the client's
// helpers (wakeup.h, memory_telemetry.h) and the interposer reach the
// counters without the client's API above them. Job side only: libc, no
// libstdc++.
#pragma once

#include <atomic>
#include <cstdint>

#include "coord/contract/control_block.h"
#include "vocab/job.h"

namespace gpushare::coord::job {

/// Counters owned and updated by the interposer on its hot paths
/// (process-local atomics, relaxed increments); the client thread copies them
/// into the telemetry page.
struct LocalCounters {
  std::atomic<std::uint64_t> mem_used_bytes[kMaxDevices];
  /// Contexts held per device (layout 9, control_block.h "The GPUs a
  /// process uses"): counted when created or first retained, until gone.
  std::atomic<std::uint64_t> contexts[kMaxDevices];
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
  /// The part of mem_used_bytes a waiting production allocation holds
  /// reserved (layout 6): what the coordinator's refusal would free.
  std::atomic<std::uint64_t> mem_waiting_bytes[kMaxDevices];
  /// Bumped (release) when a production allocation starts waiting for room.
  std::atomic<std::uint64_t> mem_request_seq[kMaxDevices];
  /// When set, called by the client thread every tick while registered,
  /// before the counters are copied: the interposer starts its memory work
  /// there (spill, suspend), which runs on a thread of its own
  /// (interpose/memory/memory_worker.h), so the call returns at once.
  void (*memory_tick)();
  /// Suspend and resume (layout 4; lib/interpose/memory/suspend.h): the state
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
  /// new coordinator meanwhile (job_client.cc).
  bool (*memory_away)();
  /// Layout 6 (control_block.h, "Migrations and the driver's view"): the
  /// batch under way (kMigration*, when it began, its bytes per device),
  /// and the bytes per device the driver evicted by itself, which
  /// memory_telemetry.h moves from the device-resident count to the host's
  /// when it publishes them.
  std::atomic<std::uint64_t> migration;
  std::atomic<std::uint64_t> migration_started_ns;
  std::atomic<std::uint64_t> migrating_bytes[kMaxDevices];
  std::atomic<std::uint64_t> evicted_bytes[kMaxDevices];
  /// Layout 10 (control_block.h, "Collectives"): per device, the summed
  /// spans of the collective kernels whose events finished, and their count.
  std::atomic<std::uint64_t> collective_ns[kMaxDevices];
  std::atomic<std::uint64_t> collectives[kMaxDevices];
};

/// Wakes the client's background thread now (defined in job_client.cc) (control_block.h, "Wake-ups"): it
/// publishes the counters, tells the coordinator of a new room request,
/// and runs the memory work. One write(2); a no-op while no thread runs.
void wake_client();

}  // namespace gpushare::coord::job
