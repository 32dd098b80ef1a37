// The interposer's process-wide state and its access to the real driver.
//
// Everything lives in one constant-initialised object (no constructors run
// at load, no libstdc++), filled in three lazy steps:
//   1. settings: read from the environment once, when the library loads;
//   2. the real driver: dlopen("libcuda.so.1") and resolve every wrapped
//      entry point, at the first call through any hook (the CUDA runtime
//      resolves entry points before cuInit, so this cannot wait for cuInit);
//   3. the devices (count, UUIDs, capacities, limits): after the real cuInit
//      succeeds.
// Hot paths test one pointer or one flag and go on.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <cstdint>

#include "coord/job/limits.h"
#include "coord/job/local_counters.h"
#include "interpose/core/accounting.h"
#include "interpose/driver/legacy_types.h"
#include "interpose/core/settings.h"

#define GS_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpushare::interpose {

/// The real driver's entry points: one slot per wrapped variant, plus the
/// few we call without wrapping.
struct RealDriver {
#define GS_HOOK(symbol, type) type real_##symbol = nullptr;
#include "interpose/driver/hooks.def"
#undef GS_HOOK
  PFN_cuCtxGetDevice_v2000 real_cuCtxGetDevice = nullptr;
  PFN_cuCtxGetCurrent_v4000 real_cuCtxGetCurrent = nullptr;
  PFN_cuDeviceGetCount_v2000 real_cuDeviceGetCount = nullptr;
  PFN_cuDeviceGet_v2000 real_cuDeviceGet = nullptr;
  PFN_cuDeviceGetUuid_v11040 real_cuDeviceGetUuid_v2 = nullptr;
  // The compute actuator's events (throttle.cc).
  PFN_cuEventCreate_v2000 real_cuEventCreate = nullptr;
  PFN_cuEventDestroy_v4000 real_cuEventDestroy_v2 = nullptr;
  // (cuEventRecord, _ptsz and cuEventQuery are wrapped: hooks.def.)
  PFN_cuEventElapsedTime_v2000 real_cuEventElapsedTime = nullptr;
  // Collectives' names (compute/collective.h; CUDA 12.3 and later).
  PFN_cuFuncGetName_v12030 real_cuFuncGetName = nullptr;
  // Elastic memory (spill.cc).
  PFN_cuMemAdvise_v8000 real_cuMemAdvise = nullptr;
  PFN_cuCtxSetCurrent_v4000 real_cuCtxSetCurrent = nullptr;
  PFN_cuStreamCreate_v2000 real_cuStreamCreate = nullptr;        // migration streams
  // (cuMemPrefetchAsync, cuStreamWaitEvent and cuStreamDestroy_v2 are wrapped.)
  // The launch queue (compute/launch_queue.h; CUDA 12.4 and later).
  PFN_cuFuncGetParamInfo_v12040 real_cuFuncGetParamInfo = nullptr;
  PFN_cuKernelGetParamInfo_v12040 real_cuKernelGetParamInfo = nullptr;
  PFN_cuStreamIsCapturing_v10000 real_cuStreamIsCapturing = nullptr;
  // Suspend and resume (vmm_backing.cc, suspend.cc).
  PFN_cuMemGetAllocationGranularity_v10020 real_cuMemGetAllocationGranularity = nullptr;
  PFN_cuMemAddressReserve_v10020 real_cuMemAddressReserve = nullptr;
  PFN_cuMemAddressFree_v10020 real_cuMemAddressFree = nullptr;
  PFN_cuMemSetAccess_v10020 real_cuMemSetAccess = nullptr;
};

struct Device {
  CUuuid uuid{};
  std::uint64_t physical_total = 0;
  DeviceBudget budget;
  int primary_retains = 0;  ///< guarded by Runtime::context_mutex
  std::uint64_t primary_context = 0;
  /// The largest context measured on this device: what a new context is
  /// expected to take when checked against the limit before it is created.
  std::atomic<std::uint64_t> largest_context{0};
};

struct Runtime {
  Settings settings;
  RealDriver real;
  void* libcuda = nullptr;
  std::atomic<bool> driver_loaded{false};
  std::atomic<int> device_count{-1};  ///< -1 until cuInit succeeded
  Device devices[kMaxDevices];
  AllocationTable allocations;  ///< device pointers: plain, pitch, managed, async
  AllocationTable handles;      ///< VMM handles and arrays
  AllocationTable contexts;     ///< ordinary contexts -> their own memory
  pthread_mutex_t context_mutex = PTHREAD_MUTEX_INITIALIZER;
};

extern Runtime g_runtime;

/// Step 2 (startup.cc): loads the real driver once. False if it cannot be loaded.
bool ensure_driver_loaded();
inline bool driver_ready() {
  return g_runtime.driver_loaded.load(std::memory_order_acquire) || ensure_driver_loaded();
}

/// Step 3 (startup.cc), after a successful real cuInit: devices, capacities,
/// limits.
void init_devices();

/// The device index of the calling thread's current context, or -1.
int current_device();
/// The calling thread's current context, or 0.
std::uint64_t current_context();

/// The limit in force on a device, the one function every hook asks: the
/// job side owns it (coord/job/limits.h, coord::job::mem_limit: the
/// coordinator's when it set one, else the job's start limit). Lock-free
/// loads only.
inline std::uint64_t effective_limit(int device) { return coord::job::mem_limit(device); }

/// The telemetry counters the coordinator client copies into the job's
/// telemetry page (process-local; relaxed increments).
extern coord::job::LocalCounters g_counters;

/// Launches are counted per thread, in a slot of its own, by a plain load
/// and store (no locked instruction, which costs more than the rest of the
/// launch path together); the sum over slots is the job's launch count. A
/// thread takes a slot at its first launch; past kLaunchSlots threads,
/// launches are counted with an atomic increment in `g_counters.launches`.
struct alignas(64) LaunchSlot {
  std::atomic<std::uint64_t> count;
};
inline constexpr int kLaunchSlots = 256;
extern __thread LaunchSlot* t_launch_slot __attribute__((tls_model("initial-exec")));
/// Takes a slot for the calling thread (nullptr when none is left).
LaunchSlot* claim_launch_slot();
/// Launches so far, summed over every thread.
std::uint64_t launches_total();
/// Zeroes every launch count (a forked child starts over).
void reset_launch_counts();

inline void count_launch() {
  LaunchSlot* slot = t_launch_slot;
  if (__builtin_expect(slot == nullptr, 0)) slot = claim_launch_slot();
  if (__builtin_expect(slot == nullptr, 0)) {
    g_counters.launches.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Only this thread writes the slot; the client thread reads it.
  slot->count.store(slot->count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/// The launch path: counts the launch and says whether it must go through
/// the gate (paused, or compute limits in force: see throttle.h). A thread-
/// local load, a plain increment and three loads when not gated.
inline bool before_launch() {
  if (g_runtime.settings.disabled) return false;
  count_launch();
  return coord::job::launch_gated();
}

/// This process's device memory as the driver's NVML sees it (contexts
/// included), or false where NVML cannot tell.
bool process_device_usage(int device, std::uint64_t* bytes);

/// Maps an NVML UUID string ("GPU-xxxxxxxx-xxxx-...") to a device index,
/// -1 when it is not one of this process's CUDA devices.
int device_of_uuid_string(const char* text);

/// Writes a device UUID as NVML text ("GPU-xxxxxxxx-...").
void format_uuid(const CUuuid& uuid, char* text);

}  // namespace gpushare::interpose
