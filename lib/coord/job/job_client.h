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
//   Every 10 ms it copies the LocalCounters (local_counters.h) into the
//   telemetry page.
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
#include "coord/job/local_counters.h"
#include "vocab/job.h"

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

/// The coordinator's id for this job while registered; 0 otherwise.
std::uint64_t job_id();

/// Registrations completed so far (1 after the first, 2 after a
/// re-registration with a restarted coordinator, ...).
std::uint64_t registrations();

}  // namespace gpushare::coord::job
