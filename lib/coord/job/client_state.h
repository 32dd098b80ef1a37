// The job side's internal state (client.cc) shared with its registration
// (registration.cc). Job side only: libc and pthreads, no libstdc++.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "coord/job/job_client.h"
#include "coord/job/yield.h"

namespace gpushare::coord::job::client_detail {

constexpr int kRegisterTimeoutMs = 200;         // in client_start, on the CUDA init path
constexpr int kThreadRegisterTimeoutMs = 2000;  // in the background thread
constexpr int kTelemetryPeriodMs = 10;
constexpr int kRetryFirstMs = 100;
constexpr int kRetryMaxMs = 500;
constexpr int kRetryRefusedMs = 5000;
constexpr int kPausedRecheckMs = 100;  // wait_while_paused's safety net
constexpr std::size_t kMaxReplyBytes = 4096;

// What client_start was given; written before the thread starts, read-only
// afterwards.
struct Config {
  char socket_path[128];
  // The socket's per-user directory (empty when the path was given or is
  // node-wide): checked before each connection, since another user may
  // create it first.
  char private_directory[128];
  char name[kMaxJobNameBytes + 1];
  char qos[16];
  char tree_path[256];  // empty: none
  int device_count;
  unsigned char uuids[kMaxDevices][16];
  std::uint64_t mem_total_bytes[kMaxDevices];
  std::uint64_t start_limit_bytes[kMaxDevices];
  std::uint64_t compute_cap_ppm;  // GPUSHARE_COMPUTE; kNoLimit for none
  void (*log)(const char*);
  bool debug;
  LocalCounters* counters;
};

struct State {
  // Stored inverted (~limit), so that the zero-initialised state reads as
  // kNoLimit before client_start.
  std::atomic<std::uint64_t> fallback_limit_inverted[kMaxDevices];
  std::atomic<std::uint32_t> fallback_qos;
  // The compute limits kept while unregistered, stored like the memory
  // limits (inverted, so zero reads as kNoLimit), and whether any is set.
  std::atomic<std::uint64_t> fallback_budget_inverted[kMaxDevices];
  std::atomic<std::uint64_t> fallback_window_ns[kMaxDevices];
  std::atomic<std::uint64_t> fallback_queued_inverted[kMaxDevices];
  std::atomic<std::uint64_t> fallback_cap_inverted[kMaxDevices];
  std::atomic<std::uint64_t> fallback_yield_mask[kMaxDevices];
  std::atomic<std::uint64_t> last_job_id;
  std::atomic<std::uint64_t> registrations;
  std::atomic<int> running;
  std::atomic<int> socket_fd;  // +1, so that 0 means none (zero-initialised)
  std::atomic<int> wake_fd;    // +1, likewise
  std::atomic<bool> atfork_installed;
  pthread_t thread;
  TelemetryPage* telemetry;  // the background thread's only
  // A dead coordinator's page that still holds launches (its `paused` set)
  // while the job's memory comes back, and the page of the coordinator
  // the job registered with meanwhile, published once it is back (null:
  // none). Written by the background thread only.
  std::atomic<const LimitsPage*> held_page;
  const LimitsPage* pending_page;
};

extern Config g_config;

extern State g_state;

enum class Outcome { kRegistered, kUnreachable, kRefused };

struct Registration {
  int fd = -1;
  const LimitsPage* limits = nullptr;
  TelemetryPage* telemetry = nullptr;
  YieldPage* yield = nullptr;  // layout 4: the job's own yield page
};

void log_line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::uint64_t now_ns();
int remaining_ms(std::uint64_t deadline_ns);
/// The memory limit kept for `device` while unregistered (client.cc).
std::uint64_t fallback_limit(int device);

/// Connects, registers (bounded by `timeout_ms`) and maps the pages the
/// coordinator sends (registration.cc).
Outcome try_register(int timeout_ms, Registration* out);

}  // namespace gpushare::coord::job::client_detail
