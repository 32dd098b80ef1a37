#include "interpose/compute/collective.h"

#include <pthread.h>

#include "interpose/core/log.h"
#include "interpose/compute/event_record.h"
#include "interpose/core/runtime.h"

namespace gpushare::interpose {

constinit CollectiveSet g_collective_functions;

namespace {

// Pairs in flight per device: a job has a few collectives per step in
// flight at most; one that runs more ahead leaves the excess untimed.
constexpr int kRing = 16;

struct DeviceSpans {
  bool ready = false;
  bool failed = false;
  CUcontext context = nullptr;
  CUevent begin[kRing] = {};
  CUevent end[kRing] = {};
  int head = 0;   ///< the oldest pair in flight
  int count = 0;  ///< pairs in flight
};

constinit DeviceSpans g_spans[kMaxDevices];
constinit pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
// Known collective kernels (CUkernel handles), for cuKernelGetFunction.
constinit CollectiveSet g_collective_kernels;
constinit std::atomic<bool> g_timed{false};  ///< any pair ever recorded
constinit std::atomic<bool> g_full_reported{false};

bool ensure_events(DeviceSpans& d) {
  const RealDriver& real = g_runtime.real;
  CUcontext context = reinterpret_cast<CUcontext>(current_context());
  if (d.ready) return context == d.context;
  if (d.failed || context == nullptr || real.real_cuEventCreate == nullptr ||
      real.real_cuEventRecord == nullptr || real.real_cuEventQuery == nullptr ||
      real.real_cuEventElapsedTime == nullptr) {
    return false;
  }
  for (int i = 0; i < kRing; ++i) {
    if (real.real_cuEventCreate(&d.begin[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        real.real_cuEventCreate(&d.end[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      GS_WARN("cannot create events to time collective kernels; the coordinator will not "
              "know which rank the others wait for");
      d.failed = true;
      return false;
    }
  }
  d.context = context;
  d.ready = true;
  return true;
}

CUresult record(CUevent event, CUstream stream, bool per_thread) {
  return record_event(event, stream, per_thread);
}

// Retires the finished pairs at the ring's head, in order; never waits.
void reap_device(int device) {
  DeviceSpans& d = g_spans[device];
  const RealDriver& real = g_runtime.real;
  while (d.count > 0) {
    int at = d.head;
    if (real.real_cuEventQuery(d.end[at]) == CUDA_ERROR_NOT_READY) return;
    float ms = 0;
    if (real.real_cuEventElapsedTime(&ms, d.begin[at], d.end[at]) == CUDA_SUCCESS && ms >= 0) {
      g_counters.collective_ns[device].fetch_add(static_cast<std::uint64_t>(ms * 1e6),
                                                 std::memory_order_relaxed);
      g_counters.collectives[device].fetch_add(1, std::memory_order_relaxed);
    }
    d.head = (d.head + 1) % kRing;
    --d.count;
  }
}

}  // namespace

void learn_function(const void* handle, const char* name) {
  if (handle == nullptr) return;
  if (name == nullptr) {
    auto get_name = g_runtime.real.real_cuFuncGetName;
    if (get_name == nullptr ||
        get_name(&name, reinterpret_cast<CUfunction>(const_cast<void*>(handle))) !=
            CUDA_SUCCESS) {
      return;
    }
  }
  if (!is_collective_name(name)) return;
  // A CUkernel may be launched as a function too (cuLaunchKernel takes
  // either), so a kernel handle is learnt in both sets.
  bool stored = g_collective_functions.insert(handle) && g_collective_kernels.insert(handle);
  if (!stored && !g_full_reported.exchange(true)) {
    GS_WARN("too many collective kernels to time them all (%d)", CollectiveSet::kSlots);
  }
  GS_DEBUG("collective kernel %s: timed at each launch", name);
}

void learn_kernel_function(const void* kernel, const void* function) {
  if (kernel == nullptr || function == nullptr) return;
  if (g_collective_kernels.count() != 0 && g_collective_kernels.contains(kernel)) {
    g_collective_functions.insert(function);
    return;
  }
  learn_function(function, nullptr);  // a kernel looked up some other way
}

// The lock is held from the opening record to the closing one, so that
// each pair brackets its own launch when several threads launch collectives.
CollectiveTicket collective_before(CUstream stream, bool per_thread) {
  CollectiveTicket ticket;
  int device = current_device();
  if (device < 0 || device >= kMaxDevices) return ticket;
  pthread_mutex_lock(&g_mutex);
  ticket.device = device;
  DeviceSpans& d = g_spans[device];
  if (ensure_events(d)) {
    reap_device(device);
    int slot = (d.head + d.count) % kRing;
    if (d.count < kRing && record(d.begin[slot], stream, per_thread) == CUDA_SUCCESS) {
      ticket.slot = slot;
    }
  }
  return ticket;
}

void collective_after(const CollectiveTicket& ticket, CUstream stream, bool per_thread,
                      CUresult result) {
  if (ticket.device < 0) return;
  DeviceSpans& d = g_spans[ticket.device];
  if (ticket.slot >= 0 && result == CUDA_SUCCESS &&
      record(d.end[ticket.slot], stream, per_thread) == CUDA_SUCCESS) {
    ++d.count;
    g_timed.store(true, std::memory_order_relaxed);
  }
  pthread_mutex_unlock(&g_mutex);
}

void collective_reap() {
  if (!g_timed.load(std::memory_order_relaxed)) return;
  if (pthread_mutex_trylock(&g_mutex) != 0) return;  // another thread reaps
  for (int device = 0; device < kMaxDevices; ++device) {
    if (g_spans[device].count > 0) reap_device(device);
  }
  pthread_mutex_unlock(&g_mutex);
}

}  // namespace gpushare::interpose
