// The coordinator client, compiled into the interposer.
//
// The job's side of the control plane. It links only libc, libdl and
// pthreads (no libstdc++: built with -fno-exceptions -fno-rtti and no
// standard-library types beyond std::atomic), and it never blocks or slows a
// CUDA call:
//
// - client_start() (at CUDA initialisation) registers with a short bounded
//   timeout (200 ms; up to 10 s for a coordinator the job was launched
//   for, so that a loaded machine does not leave it uncoordinated), then
//   hands the socket to a background thread and returns. It always
//   returns; without a coordinator the job runs on the limits it was
//   started with. A registration that comes later says so once.
// - The background thread owns the socket. It notices the coordinator going
//   away (the socket closes), keeps the last limits it had, and reconnects
//   and re-registers when a coordinator appears again (it tries every 100 ms
//   at first, backing off to 500 ms, so a restart is found well within 2 s).
//   Every 10 ms it copies the LocalCounters into the telemetry page.
// - The limits themselves (mem_limit(), paused(), compute_limits()...) are
//   read through their owner, limits.h: from the coordinator's limits page
//   directly while registered, so a limit change is visible to the next
//   allocation, with no IPC.
//
// The client reads no environment: the interposer reads the job's
// variables once (interpose/core/settings.cc) and hands them over in JobIdentity.
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
#include "coord/job/limits.h"

namespace gpushare::coord::job {

struct DeviceIdentity {
  unsigned char uuid[16];               ///< as cuDeviceGetUuid gives it
  std::uint64_t mem_total_bytes;        ///< physical capacity
};

struct JobIdentity {
  const char* name = nullptr;         ///< GPUSHARE_JOB; null or empty: the process name
  Qos qos = kQosProduction;           ///< GPUSHARE_QOS
  const char* socket_path = nullptr;  ///< GPUSHARE_SOCKET; null or empty: the default path
  /// GPUSHARE_TREE: the job's tree file (lib/interpose/memory/tree.cc), whose
  /// descriptor proves to the coordinator that this process is part of the
  /// job; null or empty: none (the process is a job of its own).
  const char* tree_path = nullptr;
  /// GPUSHARE_COMPUTE: the job's static compute cap, enforced by the
  /// interposer even without a coordinator; kNoLimit: none.
  std::uint64_t compute_cap_ppm = kNoLimit;
  /// Receives one log line (no newline); null: stderr, when `debug`.
  void (*log)(const char* line) = nullptr;
  /// Receives the few lines the user must see whatever the log level (a
  /// slow coordinator, a late registration); null: `log`.
  void (*warn)(const char* line) = nullptr;
  /// GPUSHARE_LAUNCHED_FOR: gpushare-run started or found the coordinator
  /// for this job, so a slow answer means a loaded machine, not an absent
  /// coordinator: client_start waits for it (up to 10 s) rather than 200 ms.
  bool coordinator_expected = false;
  bool debug = false;  ///< GPUSHARE_DEBUG: log even without a log function
  int device_count = 0;
  DeviceIdentity devices[kMaxDevices] = {};
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
};

/// Registers and starts the background thread. Bounded: a coordinator
/// that does not answer in 200 ms is left to the thread, which takes the
/// answer to this same request when it comes (so the coordinator gives the
/// job one id); a coordinator the job was launched for is waited for up to
/// 10 s first, with a warning after the first 200 ms. Returns, always.
/// The identity is copied; `counters` must outlive the process (a static).
/// A second call while running does nothing.
void client_start(const JobIdentity& job, LocalCounters* counters);

/// Stops the background thread and closes the socket (the coordinator then
/// forgets the job). Keeps the current limits. For tests and orderly exits;
/// process exit needs no call.
void client_stop();

/// Wakes the background thread now (control_block.h, "Wake-ups"): it
/// publishes the counters, tells the coordinator of a new room request,
/// and runs the memory work. One write(2); a no-op while no thread runs.
void wake_client();

/// The coordinator's id for this job while registered; 0 otherwise.
std::uint64_t job_id();

/// Registrations completed so far (1 after the first, 2 after a
/// re-registration with a restarted coordinator, ...).
std::uint64_t registrations();

}  // namespace gpushare::coord::job
