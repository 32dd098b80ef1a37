#include "interpose/compute/throttle.h"

#include <pthread.h>
#include <time.h>

#include <cstring>

#include "coord/job/job_client.h"
#include "coord/job/yield.h"
#include "interpose/core/runtime.h"
#include "interpose/core/log.h"
#include "interpose/compute/throttle_logic.h"

namespace gpushare::interpose {
namespace {

constexpr int kRing = 64;
// The longest one yield wait lasts before the limits are read again.
constexpr std::uint64_t kYieldWaitNs = 10'000'000;

// One device's gate. The ring holds the tracked launches not yet seen to
// finish: `count` slots from `head` on.
struct DeviceGate {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  ThrottleState state;
  CUcontext context = nullptr;  ///< where the events live
  bool ready = false;           ///< events made
  bool failed = false;          ///< events could not be made: launches are not tracked
  std::uint64_t kernel_ns = 0;  ///< GPU time of a tracked launch, smoothed (the yield's fit)
  int head = 0;
  int count = 0;
  bool timed[kRing] = {};
  CUevent start[kRing] = {};
  CUevent end[kRing] = {};
};

constinit DeviceGate g_gates[kMaxDevices];

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

ThrottleLimits read_limits(int device) {
  coord::ComputeView view;
  coord::compute_limits(device, &view);
  ThrottleLimits limits;
  limits.launch_budget = view.launch_budget;
  limits.launch_window_ns = view.launch_window_ns;
  limits.max_queued = view.max_queued;
  limits.compute_cap_ppm = view.compute_cap_ppm;
  limits.yield_mask = view.yield_mask;
  return limits;
}

// Makes the ring's events in the current context, once. False when this
// launch cannot be tracked (another context, or no events).
bool ensure_events(DeviceGate& gate) {
  const RealDriver& real = g_runtime.real;
  CUcontext context = reinterpret_cast<CUcontext>(current_context());
  if (gate.ready) return context == gate.context;
  if (gate.failed || context == nullptr || real.real_cuEventCreate == nullptr ||
      real.real_cuEventQuery == nullptr || real.real_cuEventRecord == nullptr) {
    return false;
  }
  // Blocking sync: waiting on the oldest launch sleeps in the driver.
  // Timing stays enabled: a compute cap needs the elapsed time.
  for (int i = 0; i < kRing; ++i) {
    if (real.real_cuEventCreate(&gate.start[i], CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS ||
        real.real_cuEventCreate(&gate.end[i], CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS) {
      GS_WARN(
          "cannot create events to track throttled launches; the queued-work bound and "
          "compute cap are not enforced");
      gate.failed = true;
      return false;
    }
  }
  gate.context = context;
  gate.ready = true;
  return true;
}

CUresult record(CUevent event, CUstream stream, bool per_thread) {
  const RealDriver& real = g_runtime.real;
  if (per_thread && real.real_cuEventRecord_ptsz != nullptr) {
    return real.real_cuEventRecord_ptsz(event, stream);
  }
  return real.real_cuEventRecord(event, stream);
}

// Retires finished launches from the ring's head; with `wait_oldest`,
// first waits for the oldest to finish.
void reap(DeviceGate& gate, bool wait_oldest) {
  const RealDriver& real = g_runtime.real;
  while (gate.count > 0) {
    int slot = gate.head;
    if (wait_oldest) {
      if (real.real_cuEventSynchronize != nullptr) real.real_cuEventSynchronize(gate.end[slot]);
      wait_oldest = false;
    } else if (real.real_cuEventQuery(gate.end[slot]) == CUDA_ERROR_NOT_READY) {
      return;
    }
    std::uint64_t gpu_ns = 0;
    float ms = 0;
    if (gate.timed[slot] && real.real_cuEventElapsedTime != nullptr &&
        real.real_cuEventElapsedTime(&ms, gate.start[slot], gate.end[slot]) == CUDA_SUCCESS &&
        ms > 0) {
      gpu_ns = static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
    }
    throttle_finished(&gate.state, gpu_ns);
    // The measured time includes waiting behind other contexts: the
    // estimate follows a shorter one at once and a longer one slowly.
    if (gpu_ns > 0) {
      gate.kernel_ns = gate.kernel_ns == 0 || gpu_ns < gate.kernel_ns
                           ? gpu_ns
                           : gate.kernel_ns + (gpu_ns - gate.kernel_ns) / 8;
    }
    if (gpu_ns > 0) g_counters.gpu_busy_ns.fetch_add(gpu_ns, std::memory_order_relaxed);
    gate.head = (gate.head + 1) % kRing;
    --gate.count;
  }
}

// Waits until the limits let a launch go (the mutex held, except while
// sleeping). Returns the limits in force when it may.
ThrottleLimits wait_for_turn(DeviceGate& gate, int device) {
  ThrottleLimits limits = read_limits(device);
  std::uint64_t waited = 0;
  while (limits.any()) {
    reap(gate, false);
    std::uint64_t now = now_ns();
    ThrottleDecision decision = throttle_decide(&gate.state, limits, now);
    if (decision.wait == ThrottleWait::kNone) {
      const std::atomic<std::uint32_t>* busy = coord::yield_busy_word(limits.yield_mask, now);
      std::uint64_t gap_sleep =
          busy == nullptr ? coord::yield_gap_sleep(limits.yield_mask, now, gate.kernel_ns) : 0;
      if (busy == nullptr && gap_sleep == 0) break;
      pthread_mutex_unlock(&gate.mutex);
      if (busy != nullptr) {
        coord::yield_wait(busy, kYieldWaitNs);
      } else {
        timespec pause{0, static_cast<long>(gap_sleep)};
        nanosleep(&pause, nullptr);
      }
      pthread_mutex_lock(&gate.mutex);
    } else if (decision.wait == ThrottleWait::kOldest) {
      if (gate.count == 0) break;  // nothing tracked to wait for
      reap(gate, true);
    } else {
      pthread_mutex_unlock(&gate.mutex);
      timespec pause{0, static_cast<long>(decision.sleep_ns)};
      nanosleep(&pause, nullptr);
      pthread_mutex_lock(&gate.mutex);
    }
    waited += now_ns() - now;
    limits = read_limits(device);  // live: a raise or a cut counts at once
  }
  if (waited > 0) g_counters.throttle_wait_ns.fetch_add(waited, std::memory_order_relaxed);
  return limits;
}

}  // namespace

LaunchTicket throttle_gate(CUstream stream, bool per_thread) {
  if (coord::paused()) coord::wait_while_paused();
  LaunchTicket ticket;
  int device = current_device();
  if (device < 0) return ticket;
  DeviceGate& gate = g_gates[device];
  pthread_mutex_lock(&gate.mutex);
  ThrottleLimits limits = wait_for_turn(gate, device);
  if (!limits.any()) {
    throttle_reset(&gate.state);
    pthread_mutex_unlock(&gate.mutex);
    return ticket;
  }
  throttle_launched(&gate.state, limits, false);
  ticket.device = device;
  ticket.stream = stream;
  ticket.per_thread = per_thread;
  if (ensure_events(gate)) {
    if (gate.count == kRing) reap(gate, true);  // the ring is the last bound
    int slot = (gate.head + gate.count) % kRing;
    ticket.slot = slot;
    // Every tracked launch is timed: a cap needs its GPU time, and ctl
    // shows the share an opportunistic job obtained.
    ticket.timed = record(gate.start[slot], stream, per_thread) == CUDA_SUCCESS;
  }
  return ticket;  // the mutex stays held until throttle_after
}

void throttle_after(LaunchTicket* ticket, CUresult result) {
  if (ticket->device < 0) return;
  DeviceGate& gate = g_gates[ticket->device];
  if (ticket->slot >= 0 && result == CUDA_SUCCESS &&
      record(gate.end[ticket->slot], ticket->stream, ticket->per_thread) == CUDA_SUCCESS) {
    gate.timed[ticket->slot] = ticket->timed;
    ++gate.count;
    ++gate.state.queued;
  }
  pthread_mutex_unlock(&gate.mutex);
}

void throttle_reap_all() {
  for (DeviceGate& gate : g_gates) {
    if (!gate.ready) continue;
    if (pthread_mutex_trylock(&gate.mutex) != 0) continue;  // a launcher is at work
    reap(gate, false);
    pthread_mutex_unlock(&gate.mutex);
  }
}

void throttle_after_fork() {
  for (DeviceGate& gate : g_gates) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    std::memcpy(&gate.mutex, &fresh, sizeof fresh);
    gate.state = ThrottleState{};
    gate.context = nullptr;
    gate.ready = false;
    gate.failed = false;
    gate.head = gate.count = 0;
  }
}

}  // namespace gpushare::interpose
