// The coordinator client's state machine and background thread.
//
// States, as seen by the hot path (mem_limit, paused: limits.h, which owns
// every limit the job reads):
//   unregistered  g_launch_gate.page is null; limits come from the owner's
//                 fallbacks, which hold the start limits, or after a
//                 coordinator went away, the last limits it had set.
//   registered    g_launch_gate.page points at the coordinator's read-only limits
//                 page; every read goes straight to shared memory.
// The background thread is the only writer of `page`. It publishes a page
// with a release store after checking it, and retires one by first copying
// its limits into the fallback, then storing null. A retired limits page is
// never unmapped: a thread on the hot path may have loaded the pointer an
// instant before and still be reading it (4 KiB per coordinator restart).
//
// The thread: connect, register (reply plus three memfds by SCM_RIGHTS), then
// poll the socket with a 10 ms timeout, copying the counters into the
// telemetry page and beating on the job's yield page (yield_beat: its
// followers tell a live deep queue from a dead or stopped job) on every
// tick. End of file or an error on the socket means
// the coordinator is gone: retire the page, wake paused launchers, and retry
// the connection every 100 ms, backing off to 500 ms (5 s after the
// coordinator refused the registration, so a refusing coordinator is not
// flooded).
//
// A coordinator that goes away while the job's memory is away (a suspend
// under way, in force or being undone: the launches are held on its page)
// leaves its page held: launches stay on it while the thread goes on
// ticking (memory_tick sees no request on a held page, so it brings the
// memory back), registered or not. A new coordinator is registered with at
// once, so that it lists the job (resuming) and counts its memory; its page
// is published, and the held launches woken, once the memory is back.
//
// No libstdc++: only libc and pthreads, no allocation, no exceptions.
#include "coord/job/job_client.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "coord/contract/socket_path.h"
#include "coord/job/client_state.h"
#include "coord/job/limits.h"
#include "coord/job/memory_telemetry.h"
#include "coord/job/wakeup.h"
#include "coord/job/wire.h"
#include "coord/job/yield.h"

namespace gpushare::coord::job {
namespace client_detail {

// ---- the registered state --------------------------------------------------

void copy_telemetry(TelemetryPage* page) {
  LocalCounters* c = g_config.counters;
  if (c != nullptr) {
    for (int i = 0; i < g_config.device_count; ++i) {
      // The sequence first (acquire), published last (release): a reader
      // that sees a wait's number sees the bytes it waits with.
      std::uint64_t request_seq = c->mem_request_seq[i].load(std::memory_order_acquire);
      page->devices[i].mem_used_bytes.store(c->mem_used_bytes[i].load(std::memory_order_relaxed),
                                            std::memory_order_relaxed);
      copy_residency(*c, i, page);  // memory_telemetry.h: the driver's evictions applied
      page->mem_request_bytes[i].store(c->mem_request_bytes[i].load(std::memory_order_relaxed),
                                       std::memory_order_relaxed);
      page->devices[i].mem_waiting_bytes.store(
          c->mem_waiting_bytes[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
      page->devices[i].contexts.store(c->contexts[i].load(std::memory_order_relaxed),
                                      std::memory_order_relaxed);
      page->suspended_bytes[i].store(c->suspended_bytes[i].load(std::memory_order_relaxed),
                                     std::memory_order_relaxed);
      page->mem_request_seq[i].store(request_seq, std::memory_order_release);
    }
    copy_migration(*c, page);
    page->suspend_state.store(c->suspend_state.load(std::memory_order_relaxed),
                              std::memory_order_relaxed);
    page->suspend_blockers.store(c->suspend_blockers.load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
    std::uint64_t launches = c->launches_total != nullptr
                                 ? c->launches_total()
                                 : c->launches.load(std::memory_order_relaxed);
    page->launches.store(launches, std::memory_order_relaxed);
    page->blocks_launched.store(c->blocks_launched.load(std::memory_order_relaxed),
                                std::memory_order_relaxed);
    page->kernels_completed.store(c->kernels_completed.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
    page->iterations.store(c->iterations.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
    page->last_iteration_ns.store(c->last_iteration_ns.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
    page->gpu_busy_ns.store(c->gpu_busy_ns.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
    page->throttle_wait_ns.store(c->throttle_wait_ns.load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
    page->hold_reason.store(c->hold_reason.load(std::memory_order_relaxed));
    page->hold_since_ns.store(c->hold_since_ns.load(std::memory_order_relaxed));
    for (int i = 0; i < kHoldReasons; ++i) page->held_ns[i].store(c->held_ns[i].load());
    page->launch_cost_ns.store(c->launch_cost_ns.load(std::memory_order_relaxed));
    for (int i = 0; i < kMaxDevices; ++i) {  // layout 10: the collectives' spans
      page->collective_ns[i].store(c->collective_ns[i].load(std::memory_order_relaxed),
                                   std::memory_order_relaxed);
      page->collectives[i].store(c->collectives[i].load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
    }
  }
  page->heartbeat_ns.store(now_ns(), std::memory_order_release);
}

void publish(const Registration& registration) {
  copy_telemetry(registration.telemetry);
  g_state.telemetry = registration.telemetry;
  g_state.socket_fd.store(registration.fd + 1, std::memory_order_relaxed);
  g_state.last_job_id.store(registration.limits->job_id, std::memory_order_relaxed);
  g_state.registrations.fetch_add(1, std::memory_order_relaxed);
  bool held = g_state.held_page.load(std::memory_order_relaxed) != nullptr;
  if (held) {
    g_state.pending_page = registration.limits;  // release_held_page() publishes it
  } else {
    g_launch_gate.page.store(registration.limits, std::memory_order_release);
  }
  yield_reset_stream();
  yield_publish_own(registration.yield);
  forget_told();
  log_line("registered as job %llu with %s%s",
           static_cast<unsigned long long>(registration.limits->job_id), g_config.socket_path,
           held ? "; launches held until the job's memory is back" : "");
  if (g_state.registrations.load(std::memory_order_relaxed) == 1 &&
      g_state.first_attempt_over.load(std::memory_order_relaxed)) {
    warn_line(
        "registered late with the coordinator at %s, as job %llu, %llu ms after CUDA "
        "initialisation; until then the job ran on the limits it started with",
        g_config.socket_path, static_cast<unsigned long long>(registration.limits->job_id),
        static_cast<unsigned long long>((now_ns() - g_state.started_ns) / 1000000));
  }
}

// Lets launches held on a dead coordinator's page go once the job's memory
// is back: onto the new coordinator's page, or unregistered.
void release_held_page() {
  const LimitsPage* held = g_state.held_page.load(std::memory_order_relaxed);
  if (held == nullptr) return;
  LocalCounters* c = g_config.counters;
  if (c != nullptr && c->memory_away != nullptr && c->memory_away()) return;
  g_launch_gate.page.store(g_state.pending_page, std::memory_order_release);
  g_state.pending_page = nullptr;
  g_state.held_page.store(nullptr, std::memory_order_relaxed);
  futex(const_cast<std::atomic<std::uint32_t>*>(&held->paused), FUTEX_WAKE, INT32_MAX, nullptr);
  log_line("the job's memory is back; held launches go on");
}

// One tick of the memory work while a page is held (unregistered).
void tick_held() {
  LocalCounters* c = g_config.counters;
  if (c != nullptr && c->memory_tick != nullptr) c->memory_tick();
  release_held_page();
}

// Back to the unregistered state, keeping the last limits. Wakes launches
// paused on the old page: no coordinator is left to resume them.
void retire(bool close_socket, bool stopping) {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_relaxed);
  LocalCounters* c = g_config.counters;
  // A registration whose page was never published goes with its socket.
  g_state.pending_page = nullptr;
  bool away = page != nullptr && c != nullptr && c->memory_away != nullptr && c->memory_away();
  if (away && !stopping) {
    // Launches stay held on this page while the memory comes back.
    if (g_state.held_page.load(std::memory_order_relaxed) != page) {
      keep_page_limits(page, g_config.device_count);
      g_state.held_page.store(page, std::memory_order_relaxed);
      log_line("coordinator went away while the job's memory was away; bringing it back");
    }
    page = nullptr;
  } else if (away && c->before_retire != nullptr) {
    c->before_retire();  // stopping: nobody will tick again
  }
  if (page != nullptr) {
    g_state.held_page.store(nullptr, std::memory_order_relaxed);
    keep_page_limits(page, g_config.device_count);
    g_launch_gate.page.store(nullptr, std::memory_order_release);
    futex(const_cast<std::atomic<std::uint32_t>*>(&page->paused), FUTEX_WAKE, INT32_MAX, nullptr);
  }
  // The job's own yield page stays marked (opportunistic jobs keep
  // following it on their last masks) until a new registration replaces it.
  if (g_state.telemetry != nullptr) {
    munmap(g_state.telemetry, kControlPageBytes);
    g_state.telemetry = nullptr;
  }
  int fd = g_state.socket_fd.exchange(0, std::memory_order_relaxed) - 1;
  if (close_socket && fd >= 0) close(fd);
}

// Waits up to `ms` for a stop request; true when asked to stop. While a
// page is held, the memory work goes on every tick meanwhile.
bool wait_for_stop(int ms) {
  pollfd p{g_state.wake_fd.load(std::memory_order_relaxed) - 1, POLLIN, 0};
  std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(ms) * 1000000ull;
  for (;;) {
    bool held = g_state.held_page.load(std::memory_order_relaxed) != nullptr;
    if (held) tick_held();
    int step = remaining_ms(deadline);
    if (held && step > kTelemetryPeriodMs) step = kTelemetryPeriodMs;
    int ready = poll(&p, 1, step);
    if (ready > 0) return true;
    if (now_ns() >= deadline) return false;
  }
}

// Serves a registered connection until it ends. True when asked to stop.
// The memory work and the copy run every tick, and at once when woken: by
// a line from the coordinator (a target changed) or by the job's own
// wake-up (an allocation waits for room: the coordinator is told).
bool serve(int fd) {
  pollfd fds[3] = {{fd, POLLIN, 0},
                   {g_state.wake_fd.load(std::memory_order_relaxed) - 1, POLLIN, 0},
                   {wakeup_fd(), POLLIN, 0}};
  std::uint64_t next_copy = now_ns();
  for (;;) {
    int ready = poll(fds, fds[2].fd >= 0 ? 3 : 2, remaining_ms(next_copy));
    if (ready < 0 && errno != EINTR) return false;
    if (fds[1].revents != 0) return true;
    bool now = false;
    if (fds[0].revents != 0) {
      // After the reply the coordinator sends yield pages and wake-ups
      // (layouts 4 and 5); anything else is ignored. Notice the end.
      if (!yield_receive(fd)) {
        log_line("coordinator went away; keeping the last limits");
        return false;
      }
      now = true;
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      wakeup_drain();
      now = true;
    }
    if (now || now_ns() >= next_copy) {
      if (g_config.counters != nullptr && g_config.counters->memory_tick != nullptr) {
        g_config.counters->memory_tick();
      }
      release_held_page();
      copy_telemetry(g_state.telemetry);
      yield_beat();
      tell_room_requests(fd, g_config.counters, g_config.device_count, now_ns());
      next_copy = now_ns() + kTelemetryPeriodMs * 1000000ull;
    }
  }
}

// Stopping unregistered with a page held: the memory comes back now, and
// the launches go.
void stop_holding() {
  const LimitsPage* held = g_state.held_page.load(std::memory_order_relaxed);
  if (held == nullptr) return;
  LocalCounters* c = g_config.counters;
  if (c != nullptr && c->before_retire != nullptr) c->before_retire();
  g_launch_gate.page.store(nullptr, std::memory_order_release);
  g_state.held_page.store(nullptr, std::memory_order_relaxed);
  futex(const_cast<std::atomic<std::uint32_t>*>(&held->paused), FUTEX_WAKE, INT32_MAX, nullptr);
}

// client_start's request, still unanswered: waits for its answer (or a
// stop request) and registers with it, so that a slow coordinator gives the
// job one id, not one per attempt. True when asked to stop; `*fd` is the
// registration's descriptor, or -1 to try again.
bool finish_first(int* fd) {
  pollfd fds[2] = {{*fd, POLLIN, 0},
                   {g_state.wake_fd.load(std::memory_order_relaxed) - 1, POLLIN, 0}};
  int ready = poll(fds, 2, kPendingAnswerMs);
  if (ready > 0 && fds[1].revents != 0) {
    close(*fd);
    *fd = -1;
    return true;
  }
  Registration registration;
  Outcome outcome =
      ready > 0 ? finish_register(*fd, kThreadRegisterTimeoutMs, &registration) : Outcome::kPending;
  if (outcome == Outcome::kRegistered) {
    publish(registration);
    *fd = registration.fd;
    return false;
  }
  if (outcome == Outcome::kPending) close(*fd);
  log_line("no answer to the first registration; trying again");
  *fd = -1;
  return false;
}

void* client_thread(void* first_fd) {
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(first_fd));
  int retry_ms = kRetryFirstMs;
  if (fd >= 0 && g_state.first_pending && finish_first(&fd)) return nullptr;
  for (;;) {
    if (fd >= 0) {
      bool stop = serve(fd);
      retire(true, stop);
      fd = -1;
      if (stop) return nullptr;
      retry_ms = kRetryFirstMs;
      continue;
    }
    Registration registration;
    Outcome outcome = try_register(kThreadRegisterTimeoutMs, &registration);
    if (outcome == Outcome::kRegistered) {
      publish(registration);
      fd = registration.fd;
      continue;
    }
    int wait_ms = outcome == Outcome::kRefused ? kRetryRefusedMs : retry_ms;
    if (wait_for_stop(wait_ms)) {
      stop_holding();
      return nullptr;
    }
    retry_ms = retry_ms * 2 > kRetryMaxMs ? kRetryMaxMs : retry_ms * 2;
  }
}

// In a forked child: no thread, no socket of its own; keep the parent's
// current limits and start unregistered.
void after_fork_in_child() {
  if (g_state.running.load(std::memory_order_relaxed) == 0) return;
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_relaxed);
  if (page != nullptr) {
    keep_page_limits(page, g_config.device_count);
    g_launch_gate.page.store(nullptr, std::memory_order_release);
  }
  g_state.held_page.store(nullptr, std::memory_order_relaxed);
  g_state.pending_page = nullptr;
  g_state.first_pending = false;
  g_own_yield.store(nullptr, std::memory_order_relaxed);  // the parent's mark, not ours
  // The telemetry mapping is the parent's; leave it (unmapping is harmless
  // either way, and nothing in the child writes to it).
  g_state.telemetry = nullptr;
  int fd = g_state.socket_fd.exchange(0, std::memory_order_relaxed) - 1;
  if (fd >= 0) close(fd);
  int wake = g_state.wake_fd.exchange(0, std::memory_order_relaxed) - 1;
  if (wake >= 0) close(wake);
  wakeup_close();
  g_state.running.store(0, std::memory_order_relaxed);
}

void copy_text(char* out, std::size_t size, const char* text) {
  snprintf(out, size, "%s", text != nullptr ? text : "");
}

void read_process_name(char* out, std::size_t size) {
  copy_text(out, size, "job");
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char name[64];
  ssize_t n = read(fd, name, sizeof name - 1);
  close(fd);
  if (n <= 0) return;
  name[n] = '\0';
  char* newline = strchr(name, '\n');
  if (newline != nullptr) *newline = '\0';
  if (name[0] != '\0') copy_text(out, size, name);
}

void configure(const JobIdentity& job, LocalCounters* counters) {
  g_config.debug = job.debug;
  g_config.log = job.log;
  g_config.warn = job.warn;
  g_config.coordinator_expected = job.coordinator_expected;
  g_config.counters = counters;
  g_state.last_job_id.store(0, std::memory_order_relaxed);

  if (job.name != nullptr && *job.name != '\0') {
    copy_text(g_config.name, sizeof g_config.name, job.name);
  } else {
    read_process_name(g_config.name, sizeof g_config.name);
  }
  copy_text(g_config.qos, sizeof g_config.qos, qos_name(job.qos));

  // An empty path (too long for a unix socket address) means "no coordinator".
  g_config.socket_path[0] = '\0';
  if (job.socket_path != nullptr && *job.socket_path != '\0') {
    if (strlen(job.socket_path) < sizeof(sockaddr_un{}.sun_path)) {
      copy_text(g_config.socket_path, sizeof g_config.socket_path, job.socket_path);
    }
  } else if (!default_socket_path(g_config.socket_path, sizeof g_config.socket_path)) {
    g_config.socket_path[0] = '\0';
  }
  g_config.private_directory[0] = '\0';
  if (g_config.socket_path[0] != '\0' && in_per_user_directory(g_config.socket_path) &&
      !socket_directory(g_config.socket_path, g_config.private_directory,
                        sizeof g_config.private_directory)) {
    g_config.private_directory[0] = '\0';
    g_config.socket_path[0] = '\0';  // cannot be checked: do not use it
  }

  g_config.tree_path[0] = '\0';
  if (job.tree_path != nullptr && strlen(job.tree_path) < sizeof g_config.tree_path) {
    copy_text(g_config.tree_path, sizeof g_config.tree_path, job.tree_path);
  }

  g_config.compute_cap_ppm = job.compute_cap_ppm;
  int count = job.device_count < 0 ? 0 : job.device_count;
  g_config.device_count = count > kMaxDevices ? kMaxDevices : count;
  for (int i = 0; i < g_config.device_count; ++i) {
    memcpy(g_config.uuids[i], job.devices[i].uuid, 16);
    g_config.mem_total_bytes[i] = job.devices[i].mem_total_bytes;
  }
  start_own_limits(job.qos, g_config.compute_cap_ppm, g_config.device_count);
}

// client_start's attempt: 200 ms for an answer, 10 s for a coordinator
// the job was launched for (a slow answer then means a loaded machine).
// Returns the registration's descriptor, or one still waiting for its
// answer (first_pending), or -1.
int attempt_first_registration() {
  g_state.started_ns = now_ns();
  g_state.first_pending = false;
  g_state.first_attempt_over.store(false, std::memory_order_relaxed);
  Registration registration;
  int fd = -1;
  std::uint64_t deadline = g_state.started_ns + kRegisterTimeoutMs * 1000000ull;
  Outcome outcome = begin_register(kRegisterTimeoutMs, &fd);
  if (outcome == Outcome::kPending) {
    outcome = finish_register(fd, remaining_ms(deadline), &registration);
  }
  if (outcome == Outcome::kPending && g_config.coordinator_expected) {
    warn_line(
        "the coordinator at %s has not answered in %d ms; waiting up to %d s for it, so "
        "that this job is coordinated from its first launch",
        g_config.socket_path, kRegisterTimeoutMs, kExpectedRegisterTimeoutMs / 1000);
    outcome = finish_register(fd, kExpectedRegisterTimeoutMs, &registration);
  }
  if (outcome == Outcome::kRegistered) publish(registration);
  g_state.first_attempt_over.store(true, std::memory_order_relaxed);
  if (outcome == Outcome::kRegistered) return registration.fd;
  log_line("no coordinator at %s yet; running on the limits given at start", g_config.socket_path);
  if (outcome != Outcome::kPending) return -1;
  g_state.first_pending = true;  // the thread takes the answer when it comes
  return fd;
}

}  // namespace client_detail

using namespace client_detail;

void client_start(const JobIdentity& job, LocalCounters* counters) {
  int expected = 0;
  if (!g_state.running.compare_exchange_strong(expected, 1)) return;
  if (!g_state.atfork_installed.exchange(true)) {
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
  }
  configure(job, counters);

  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0 || g_config.socket_path[0] == '\0') {
    log_line("cannot start the coordinator client; running on the limits given at start");
    if (wake >= 0) close(wake);
    g_state.running.store(0);
    return;
  }
  g_state.wake_fd.store(wake + 1, std::memory_order_relaxed);
  if (!wakeup_open()) log_line("no wake-up descriptor; room requests wait for the next tick");

  // One bounded attempt now, so that a coordinator's limits hold from the
  // first allocation; the thread keeps trying if this one fails.
  int first_fd = attempt_first_registration();

  // The thread takes no signals meant for the application.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int error = pthread_create(&g_state.thread, nullptr, client_thread,
                             reinterpret_cast<void*>(static_cast<intptr_t>(first_fd)));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (error != 0) {
    log_line("cannot start the coordinator thread: %s", strerror(error));
    if (g_state.first_pending && first_fd >= 0) close(first_fd);
    g_state.first_pending = false;
    retire(true, true);
    close(wake);
    wakeup_close();
    g_state.wake_fd.store(0);
    g_state.running.store(0);
  }
}

void client_stop() {
  if (g_state.running.load() == 0) return;
  int wake = g_state.wake_fd.load(std::memory_order_relaxed) - 1;
  std::uint64_t one = 1;
  if (write(wake, &one, sizeof one) != sizeof one) return;
  pthread_join(g_state.thread, nullptr);
  close(wake);
  wakeup_close();
  g_state.wake_fd.store(0);
  g_state.running.store(0);
}

std::uint64_t job_id() {
  const LimitsPage* page = g_launch_gate.page.load(std::memory_order_acquire);
  return page != nullptr ? page->job_id : 0;
}

std::uint64_t registrations() { return g_state.registrations.load(std::memory_order_relaxed); }

}  // namespace gpushare::coord::job
