// Initialisation and contexts.
//
// cuInit is where an invalid setting stops the job (never run unlimited by
// mistake) and where the devices are enumerated.
//
// A context holds device memory of its own (hundreds of MiB on real GPUs)
// that no allocation hook sees, yet it counts against the job's limit. We
// measure it as the growth of this process's usage on the device, as NVML
// reports it, across the context's creation (the process's own usage, so
// other processes cannot disturb the measurement), charge it, and give it
// back when the context is destroyed. Destroying a context also frees every
// allocation made in it, so their charges go too.
//
// A context is refused, like an allocation, with CUDA_ERROR_OUT_OF_MEMORY
// when the limit cannot take it. Its size is known only once it exists, so
// the largest context measured on the device so far is reserved before the
// driver is called and swapped for the measured size after (the first one
// is never refused: nothing is known of it yet). Creating contexts in a loop
// therefore stops at the limit, where it once took the whole GPU.
#include <pthread.h>

#include "interpose/hooks/hooks.h"
#include "interpose/core/log.h"
#include "interpose/memory/spill.h"
#include "interpose/memory/vmm_backing.h"

using namespace gpushare::interpose;

namespace {

void release_record(const AllocationRecord& record) {
  if (record.device >= 0 && record.device < gpushare::kMaxDevices) {
    g_runtime.devices[record.device].budget.release(record.bytes);
  }
  spill_forget(record);
}

// Releases the charges of every allocation made in `context` (destroyed).
void release_context_allocations(std::uint64_t context) {
  if (context == 0) return;
  vmm_release_context(context);  // VMM memory outlives its context (vmm_backing.h)
  g_runtime.allocations.erase_context(context, &release_record);
  g_runtime.handles.erase_context(context, &release_record);
}

inline bool disabled() { return g_runtime.settings.disabled; }

bool valid_device(int device) {
  return device >= 0 && device < g_runtime.device_count.load(std::memory_order_acquire);
}

struct UsageProbe {
  int device;
  bool measured;
  std::uint64_t before;
};

UsageProbe usage_before(int device) {
  UsageProbe probe{device, false, 0};
  if (valid_device(device)) probe.measured = process_device_usage(device, &probe.before);
  return probe;
}

// Charges the growth since `probe` to the new context.
void charge_context(const UsageProbe& probe, CUcontext context) {
  if (!valid_device(probe.device)) return;
  std::uint64_t after = 0, overhead = 0;
  if (probe.measured && process_device_usage(probe.device, &after) && after > probe.before) {
    overhead = after - probe.before;
  }
  Device& state = g_runtime.devices[probe.device];
  state.budget.charge(overhead);
  std::uint64_t largest = state.largest_context.load(std::memory_order_relaxed);
  while (overhead > largest && !state.largest_context.compare_exchange_weak(
                                   largest, overhead, std::memory_order_relaxed)) {
  }
  std::uint64_t key = reinterpret_cast<std::uint64_t>(context);
  g_runtime.contexts.insert(key, AllocationRecord{overhead, probe.device, key});
  GS_DEBUG("context %p on device %d holds %llu bytes of its own", static_cast<void*>(context),
           probe.device, static_cast<unsigned long long>(overhead));
}

// Gives back a destroyed context's own memory and its allocations.
void release_context(CUcontext context) {
  std::uint64_t key = reinterpret_cast<std::uint64_t>(context);
  release_context_allocations(key);
  AllocationRecord record;
  if (g_runtime.contexts.erase(key, &record) && valid_device(record.device)) {
    g_runtime.devices[record.device].budget.release(record.bytes);
  }
}

// Reserves a new context's expected size on `device`; false (refuse with
// out-of-memory) when the limit cannot take it. `*reserved` is what to give
// back once the context is created or failed.
bool reserve_context(int device, std::uint64_t* reserved) {
  *reserved = 0;
  if (!valid_device(device)) return true;
  Device& state = g_runtime.devices[device];
  std::uint64_t expected = state.largest_context.load(std::memory_order_relaxed);
  if (expected == 0) return true;
  if (!state.budget.try_reserve(expected, effective_limit(device))) {
    GS_INFO(
        "context on device %d refused: it would take about %llu bytes, and the job holds "
        "%llu of %llu",
        device, static_cast<unsigned long long>(expected),
        static_cast<unsigned long long>(state.budget.held()),
        static_cast<unsigned long long>(effective_limit(device)));
    return false;
  }
  *reserved = expected;
  return true;
}

void unreserve_context(int device, std::uint64_t reserved) {
  if (reserved != 0) g_runtime.devices[device].budget.release(reserved);
}

class ContextLock {
 public:
  ContextLock() { pthread_mutex_lock(&g_runtime.context_mutex); }
  ~ContextLock() { pthread_mutex_unlock(&g_runtime.context_mutex); }
  ContextLock(const ContextLock&) = delete;
  ContextLock& operator=(const ContextLock&) = delete;
};

// Creates a context with `create` under the limit: reserve its expected
// size, measure what it took, charge that.
template <class Create>
CUresult create_context(CUdevice device, CUcontext* context, Create create) {
  init_devices();
  std::uint64_t reserved = 0;
  if (!reserve_context(device, &reserved)) return CUDA_ERROR_OUT_OF_MEMORY;
  UsageProbe probe = usage_before(device);
  CUresult result = create();
  // A context the device has no room for: ask for what it is expected to
  // take (unreserved when never measured) while opportunistic memory spills.
  result = wait_for_room(device, reserved != 0 ? 0 : kContextRoomGuess, result, create);
  unreserve_context(device, reserved);
  if (result == CUDA_SUCCESS && context != nullptr) charge_context(probe, *context);
  return result;
}

template <class Release>
CUresult release_primary(CUdevice device, Release release) {
  ContextLock lock;
  CUresult result = release();
  Device& state = g_runtime.devices[device];
  if (result == CUDA_SUCCESS && state.primary_retains > 0 && --state.primary_retains == 0) {
    release_context(reinterpret_cast<CUcontext>(state.primary_context));
    state.primary_context = 0;
  }
  return result;
}

template <class Reset>
CUresult reset_primary(CUdevice device, Reset reset) {
  ContextLock lock;
  CUresult result = reset();
  Device& state = g_runtime.devices[device];
  if (result == CUDA_SUCCESS && state.primary_context != 0) {
    // Every allocation of the primary context is gone, and the context with them.
    release_context(reinterpret_cast<CUcontext>(state.primary_context));
    state.primary_context = 0;
    state.primary_retains = 0;
  }
  return result;
}

}  // namespace

CUresult gs_cuInit(unsigned int flags) {
  if (g_runtime.settings.error[0] != '\0' && !disabled()) {
    GS_ERROR("%s; CUDA initialisation refused (see gpushare-run(1))", g_runtime.settings.error);
    return CUDA_ERROR_INVALID_VALUE;
  }
  GS_REAL(cuInit);
  CUresult result = real(flags);
  if (result == CUDA_SUCCESS && !disabled()) init_devices();
  return result;
}

CUresult gs_cuCtxCreate_v2(CUcontext* context, unsigned int flags, CUdevice device) {
  GS_REAL(cuCtxCreate_v2);
  if (disabled()) return real(context, flags, device);
  return create_context(device, context, [&] { return real(context, flags, device); });
}

CUresult gs_cuCtxCreate_v3(CUcontext* context, CUexecAffinityParam* params, int param_count,
                           unsigned int flags, CUdevice device) {
  GS_REAL(cuCtxCreate_v3);
  if (disabled()) return real(context, params, param_count, flags, device);
  return create_context(device, context,
                        [&] { return real(context, params, param_count, flags, device); });
}

CUresult gs_cuCtxCreate_v4(CUcontext* context, CUctxCreateParams* params, unsigned int flags,
                           CUdevice device) {
  GS_REAL(cuCtxCreate_v4);
  if (disabled()) return real(context, params, flags, device);
  return create_context(device, context, [&] { return real(context, params, flags, device); });
}

CUresult gs_cuCtxDestroy_v2(CUcontext context) {
  GS_REAL(cuCtxDestroy_v2);
  if (disabled()) return real(context);
  CUresult result = real(context);
  if (result == CUDA_SUCCESS) release_context(context);
  return result;
}

CUresult gs_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  GS_REAL(cuDevicePrimaryCtxRetain);
  if (disabled()) return real(context, device);
  init_devices();
  if (!valid_device(device)) return real(context, device);
  // The first retain creates the primary context; measure only that one.
  ContextLock lock;
  Device& state = g_runtime.devices[device];
  std::uint64_t reserved = 0;
  if (state.primary_retains == 0 && !reserve_context(device, &reserved)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  UsageProbe probe = state.primary_retains == 0 ? usage_before(device) : UsageProbe{-1, false, 0};
  CUresult result = real(context, device);
  unreserve_context(device, reserved);
  if (result != CUDA_SUCCESS) return result;
  if (state.primary_retains++ == 0) {
    state.primary_context = reinterpret_cast<std::uint64_t>(*context);
    charge_context(probe, *context);
  }
  return result;
}

CUresult gs_cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  GS_REAL(cuDevicePrimaryCtxRelease_v2);
  if (disabled() || !valid_device(device)) return real(device);
  return release_primary(device, [&] { return real(device); });
}

CUresult gs_cuDevicePrimaryCtxReset_v2(CUdevice device) {
  GS_REAL(cuDevicePrimaryCtxReset_v2);
  if (disabled() || !valid_device(device)) return real(device);
  return reset_primary(device, [&] { return real(device); });
}

// The legacy variants (CUDA 2.0 and 7.0 ABIs, same arguments): the same
// accounting, so that a context made or let go through them is charged
// and given back like any other.
CUresult gs_cuCtxCreate(CUcontext* context, unsigned int flags,
                        gpushare::interpose::legacy::Device device) {
  GS_REAL(cuCtxCreate);
  if (disabled()) return real(context, flags, device);
  return create_context(device, context, [&] { return real(context, flags, device); });
}

CUresult gs_cuCtxDestroy(CUcontext context) {
  GS_REAL(cuCtxDestroy);
  if (disabled()) return real(context);
  CUresult result = real(context);
  if (result == CUDA_SUCCESS) release_context(context);
  return result;
}

CUresult gs_cuDevicePrimaryCtxRelease(gpushare::interpose::legacy::Device device) {
  GS_REAL(cuDevicePrimaryCtxRelease);
  if (disabled() || !valid_device(device)) return real(device);
  return release_primary(device, [&] { return real(device); });
}

CUresult gs_cuDevicePrimaryCtxReset(gpushare::interpose::legacy::Device device) {
  GS_REAL(cuDevicePrimaryCtxReset);
  if (disabled() || !valid_device(device)) return real(device);
  return reset_primary(device, [&] { return real(device); });
}
