// The job side's internal state, shared by the client (job_client.cc), its
// registration (registration.cc) and the limits' owner (limits.cc), and
// defined beside this declaration (client_state.cc). The limits the job
// runs on while unregistered are not here: limits.cc owns them, and the
// calls through which the client sets them are declared at the end (the
// interposer sees limits.h only). Below the client and the owner in the
// room: it includes neither. Job side only: libc and pthreads, no
// libstdc++.
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "coord/contract/control_block.h"
#include "coord/job/clock.h"
#include "coord/job/local_counters.h"
#include "vocab/job.h"

namespace gpushare::coord::job::client_detail {

constexpr int kRegisterTimeoutMs = 200;         // in client_start, on the CUDA init path
// How long client_start waits for an answer from a coordinator the job was
// launched for (gpushare-run started or found it: GPUSHARE_LAUNCHED_FOR):
// a slow answer means a loaded machine, and a job that waits is
// coordinated from its first launch. Bounded, so that a wedged coordinator
// costs a job's start 10 s at most.
constexpr int kExpectedRegisterTimeoutMs = 10000;
constexpr int kThreadRegisterTimeoutMs = 2000;  // in the background thread
// How long the background thread waits for the answer to client_start's
// attempt before it gives up on it and tries again.
constexpr int kPendingAnswerMs = 30000;
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
  std::uint64_t compute_cap_ppm;  // GPUSHARE_COMPUTE; kNoLimit for none
  void (*log)(const char*);
  void (*warn)(const char*);  // lines the user must see; null: log
  bool coordinator_expected;  // JobIdentity::coordinator_expected
  bool debug;
  LocalCounters* counters;
};

struct State {
  std::atomic<std::uint64_t> last_job_id;
  std::atomic<std::uint64_t> registrations;
  std::atomic<int> running;
  std::atomic<int> socket_fd;  // +1, so that 0 means none (zero-initialised)
  std::atomic<int> wake_fd;    // +1, likewise
  std::atomic<bool> atfork_installed;
  // client_start's attempt is over (registered or not): a registration
  // after this is a late one, which the job says once.
  std::atomic<bool> first_attempt_over;
  std::uint64_t started_ns;  // when client_start began
  // The background thread starts with client_start's attempt still
  // waiting for its answer on the descriptor it is given.
  bool first_pending;
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

/// kPending: the request is sent and the connection open, but no answer
/// came before the deadline.
enum class Outcome { kRegistered, kUnreachable, kRefused, kPending };

struct Registration {
  int fd = -1;
  const LimitsPage* limits = nullptr;
  TelemetryPage* telemetry = nullptr;
  YieldPage* yield = nullptr;  // layout 4: the job's own yield page
};

void log_line(const char* format, ...) __attribute__((format(printf, 1, 2)));
/// A line the user must see (Config::warn), once per call.
void warn_line(const char* format, ...) __attribute__((format(printf, 1, 2)));
int remaining_ms(std::uint64_t deadline_ns);
long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout);

/// Connects, registers (bounded by `timeout_ms`) and maps the pages the
/// coordinator sends (registration.cc); a connection left without an
/// answer is closed.
Outcome try_register(int timeout_ms, Registration* out);
/// The first half: connects and sends the request (bounded by
/// `timeout_ms`); kPending with the connection in `*fd` on success.
Outcome begin_register(int timeout_ms, int* fd);
/// The second half: waits up to `timeout_ms` for the answer on `fd` and
/// maps the pages. kPending (the connection still open, nothing read) when
/// none came in time; otherwise `fd` is the registration's or closed.
Outcome finish_register(int fd, int timeout_ms, Registration* out);

// The client's side of the limits' owner (defined in limits.cc; called by
// job_client.cc and registration.cc): how the fallbacks are set and read.

/// At client_start: the class and compute cap the job was started with, on
/// `device_count` devices.
void start_own_limits(Qos qos, std::uint64_t compute_cap_ppm, int device_count);
/// Keeps a limits page's limits (memory, class, compute) as the fallbacks:
/// the job runs on them while no coordinator is there.
void keep_page_limits(const LimitsPage* page, int device_count);
/// What a registration asks with: the start limits and the limits in force
/// now (so a restarted coordinator keeps them), `count` entries each.
void registration_limits(std::uint64_t* start, std::uint64_t* now, int count);
/// The class in force while unregistered.
Qos fallback_qos();

}  // namespace gpushare::coord::job::client_detail
