// Launch hooks: the hot path. Budget: at most 10 ns added per launch when
// the job is neither paused nor throttled (bench/interpose). before_launch()
// is one relaxed increment of a process-local counter and two relaxed loads
// of one cache line of the shared limits page (paused, throttle), and the
// yield mark (coord/job/yield.h: a pointer load and, while registered, one
// load of the job's busy word, a store only at an iteration's first
// launch); then a call through a pointer resolved at load time. No syscall, lock, getenv,
// IPC or NVML there. Only a gated launch takes the slow path (throttle.h):
// it may wait, and is tracked with events. So does a collective's (NCCL's
// kernels: compute/collective.h), timed with two events; telling it costs
// the others one relaxed load of a process-wide count, which stays 0 in a
// process that never looked a collective kernel up.
#include <type_traits>

#include "coord/job/yield.h"
#include "interpose/hooks/hooks.h"
#include "interpose/compute/collective.h"
#include "interpose/compute/launch_queue.h"
#include "interpose/compute/throttle.h"

using namespace gpushare::interpose;

namespace {

struct KernelStream;

// Everything but the fast path, out of line: loading the driver, a thread's
// first launch, a disabled interposer, and the gate. It takes exactly the
// hook's arguments (the entry point, the stream's place and the stream
// kind are template arguments), so the hooks end in tail calls either way
// and the fast path saves no registers.
template <auto Entry, bool PerThread, class Stream, class... Args>
__attribute__((noinline)) CUresult slow_launch(Args... args) {
  if (!driver_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_runtime.real.*Entry;
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND;
  gpushare::coord::job::yield_mark_busy();
  bool gated = before_launch();
  bool collective = collective_function(Stream::function(args...));
  // The launch queue (launch_queue.h): a gated cuLaunchKernel is queued
  // when it can be, and while launches are queued every launch goes after
  // them, queued too or once they reached the driver.
  bool queue = gated && g_runtime.settings.launch_queue;
  if (queue || launch_queue_busy()) {
    if constexpr (std::is_same_v<Stream, KernelStream> && !PerThread) {
      if (!collective && launch_queue_push(args...)) return CUDA_SUCCESS;
    }
    if (CUresult queued_error = launch_queue_drain(); queued_error != CUDA_SUCCESS) {
      return queued_error;
    }
  }
  if (!gated && !collective) return real(args...);
  CUstream stream = Stream::of(args...);
  LaunchTicket ticket;
  if (gated) ticket = throttle_gate(stream, PerThread);
  CollectiveTicket timing;
  if (collective) timing = collective_before(stream, PerThread);
  CUresult result = real(args...);
  if (collective) collective_after(timing, stream, PerThread, result);
  if (gated) throttle_after(&ticket, result);
  return result;
}

// Where each launch family passes its stream.
struct KernelStream {
  static CUstream of(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream stream, void**, void**) {
    return stream;
  }
  static const void* function(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**) {
    return f;
  }
};
struct CooperativeStream {
  static CUstream of(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream stream, void**) {
    return stream;
  }
  static const void* function(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**) {
    return f;
  }
};
struct ConfigStream {
  static CUstream of(const CUlaunchConfig* config, CUfunction, void**, void**) {
    return config != nullptr ? config->hStream : nullptr;
  }
  static const void* function(const CUlaunchConfig*, CUfunction f, void**, void**) { return f; }
};
struct GraphStream {
  static CUstream of(CUgraphExec, CUstream stream) { return stream; }
  // A collective captured in a graph is not timed (its kernel nodes would
  // have to be walked at each launch).
  static const void* function(CUgraphExec, CUstream) { return nullptr; }
};

// The fast path: the driver is loaded, the thread has its launch slot, the
// interposer is on, nothing gates the launch and it is no collective's.
// Counts the launch.
inline bool launch_fast_path(const void* function) {
  LaunchSlot* slot = t_launch_slot;
  if (slot == nullptr || g_runtime.settings.disabled || gpushare::coord::job::launch_gated() ||
      collective_function(function) || launch_queue_busy())
    return false;
  slot->count.store(slot->count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  gpushare::coord::job::yield_mark_busy();  // once per iteration a store, else one load
  return true;
}

}  // namespace

// The call to the real entry point: straight through, or the slow path.
#define GS_LAUNCH(symbol, per_thread, Stream, ...)                                    \
  if (__builtin_expect(g_runtime.driver_loaded.load(std::memory_order_acquire), 1)) { \
    auto real = g_runtime.real.real_##symbol;                                         \
    if (__builtin_expect(real != nullptr &&                                           \
                             launch_fast_path(Stream::function(__VA_ARGS__)),         \
                         1)) {                                                        \
      return real(__VA_ARGS__);                                                       \
    }                                                                                 \
  }                                                                                   \
  return slow_launch<&RealDriver::real_##symbol, per_thread, Stream>(__VA_ARGS__)

CUresult gs_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                           CUstream stream, void** params, void** extra) {
  GS_LAUNCH(cuLaunchKernel, false, KernelStream, f, gx, gy, gz, bx, by, bz, shared, stream, params,
            extra);
}

CUresult gs_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int shared, CUstream stream, void** params, void** extra) {
  GS_LAUNCH(cuLaunchKernel_ptsz, true, KernelStream, f, gx, gy, gz, bx, by, bz, shared, stream,
            params, extra);
}

CUresult gs_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                             void** extra) {
  GS_LAUNCH(cuLaunchKernelEx, false, ConfigStream, config, f, params, extra);
}

CUresult gs_cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                  void** extra) {
  GS_LAUNCH(cuLaunchKernelEx_ptsz, true, ConfigStream, config, f, params, extra);
}

CUresult gs_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                      unsigned int gz, unsigned int bx, unsigned int by,
                                      unsigned int bz, unsigned int shared, CUstream stream,
                                      void** params) {
  GS_LAUNCH(cuLaunchCooperativeKernel, false, CooperativeStream, f, gx, gy, gz, bx, by, bz, shared,
            stream, params);
}

CUresult gs_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                           unsigned int gz, unsigned int bx, unsigned int by,
                                           unsigned int bz, unsigned int shared, CUstream stream,
                                           void** params) {
  GS_LAUNCH(cuLaunchCooperativeKernel_ptsz, true, CooperativeStream, f, gx, gy, gz, bx, by, bz,
            shared, stream, params);
}

CUresult gs_cuGraphLaunch(CUgraphExec graph, CUstream stream) {
  GS_LAUNCH(cuGraphLaunch, false, GraphStream, graph, stream);
}

CUresult gs_cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream) {
  GS_LAUNCH(cuGraphLaunch_ptsz, true, GraphStream, graph, stream);
}

// Lookups: where the interposer learns which functions are collectives
// (compute/collective.h). Off the launch path: once per function.
CUresult gs_cuModuleGetFunction(CUfunction* result, CUmodule module, const char* name) {
  GS_REAL(cuModuleGetFunction);
  CUresult status = real(result, module, name);
  if (status == CUDA_SUCCESS && result != nullptr) learn_function(*result, name);
  return status;
}

CUresult gs_cuLibraryGetKernel(CUkernel* result, CUlibrary library, const char* name) {
  GS_REAL(cuLibraryGetKernel);
  CUresult status = real(result, library, name);
  if (status == CUDA_SUCCESS && result != nullptr) learn_function(*result, name);
  return status;
}

CUresult gs_cuKernelGetFunction(CUfunction* result, CUkernel kernel) {
  GS_REAL(cuKernelGetFunction);
  CUresult status = real(result, kernel);
  if (status == CUDA_SUCCESS && result != nullptr) learn_kernel_function(kernel, *result);
  return status;
}
