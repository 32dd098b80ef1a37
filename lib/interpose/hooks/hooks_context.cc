// Initialisation and contexts.
//
// cuInit is where an invalid setting stops the job (never run unlimited by
// mistake) and where the devices are enumerated.
//
// A context holds device memory of its own (hundreds of MiB on real GPUs:
// 518-524 MiB on an H100) that no allocation hook sees, yet it counts
// against the job's limit. We measure it as the growth of this process's
// usage on the device, as NVML reports it, across the context's creation
// (the process's own usage, so other processes cannot disturb the
// measurement), charge it, and give it back when the context is destroyed.
// Destroying a context also frees every allocation made in it, so their
// charges go too.
//
// A context is refused, like an allocation, with CUDA_ERROR_OUT_OF_MEMORY
// when the limit cannot take it, in every process of the job: the limit
// spans the job's process tree (tree.cc), and so does what a context is
// expected to cost. Its size is known only once it exists, so the largest
// context measured by any process of the job on that device is reserved
// before the driver is called and swapped for the measured size after.
// The job's first context is measured alone: the process about to create
// it takes the tree file's lock, and every other process of the job that
// would create an unmeasured context waits for the measurement instead of
// creating one beside it (so N children starting at once cannot each slip
// an unreserved context past the limit). That first context is never
// refused (nothing is known of it yet) but it is charged.
//
// Every creation (cuCtxCreate in all its versions, the primary context's
// first retain) that the driver refuses for want of room waits, for a
// production job, while opportunistic memory spills, exactly as an
// allocation does (spill.h).
#include <pthread.h>

#include "interpose/hooks/hooks.h"
#include "interpose/core/log.h"
#include "interpose/memory/spill.h"
#include "interpose/memory/tree.h"
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

// Charges the growth since `probe` to the new context, and tells the job's
// other processes what a context costs. `reserved` bytes are already the
// job's (the context's reservation): only the difference is charged or given
// back, in one step, so the job's sum never dips below what it holds while
// another process of the job reserves its own context.
void charge_context(const UsageProbe& probe, CUcontext context, std::uint64_t reserved) {
  if (!valid_device(probe.device)) return;
  std::uint64_t after = 0, overhead = 0;
  if (probe.measured && process_device_usage(probe.device, &after) && after > probe.before) {
    overhead = after - probe.before;
  }
  Device& state = g_runtime.devices[probe.device];
  if (overhead >= reserved) {
    state.budget.charge(overhead - reserved);
  } else {
    state.budget.release(reserved - overhead);
  }
  std::uint64_t largest = state.largest_context.load(std::memory_order_relaxed);
  while (overhead > largest && !state.largest_context.compare_exchange_weak(
                                   largest, overhead, std::memory_order_relaxed)) {
  }
  note_tree_context_bytes(probe.device, overhead);
  std::uint64_t key = reinterpret_cast<std::uint64_t>(context);
  g_runtime.contexts.insert(key, AllocationRecord{overhead, probe.device, key});
  // The coordinator counts the process on this device while it holds a
  // context here (control_block.h, "The GPUs a process uses").
  g_counters.contexts[probe.device].fetch_add(1, std::memory_order_relaxed);
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
    g_counters.contexts[record.device].fetch_sub(1, std::memory_order_relaxed);
  }
}

// What a new context on `device` is expected to take: the largest any
// process of the job measured there.
std::uint64_t expected_context(int device) {
  std::uint64_t local = g_runtime.devices[device].largest_context.load(std::memory_order_relaxed);
  std::uint64_t job = tree_context_bytes(device);
  return local > job ? local : job;
}

// A context's reservation: the bytes to give back once it is created or
// failed, and whether this process holds the job's measurement lock.
struct ContextReservation {
  std::uint64_t bytes = 0;
  bool measuring = false;
};

// Reserves a new context's expected size on `device`; false (refuse with
// out-of-memory) when the limit cannot take it. With nothing measured yet,
// takes the job's measurement lock and looks again: another process may
// have measured while this one waited.
bool reserve_context(int device, ContextReservation* reservation) {
  *reservation = ContextReservation{};
  if (!valid_device(device)) return true;
  std::uint64_t expected = expected_context(device);
  if (expected == 0 && lock_tree_measurement()) {
    expected = expected_context(device);
    if (expected == 0) {
      reservation->measuring = true;
      return true;
    }
    unlock_tree_measurement();
  }
  if (expected == 0) return true;
  Device& state = g_runtime.devices[device];
  if (!state.budget.try_reserve(expected, effective_limit(device))) {
    GS_INFO(
        "context on device %d refused: it would take about %llu bytes, and the job holds "
        "%llu of %llu",
        device, static_cast<unsigned long long>(expected),
        static_cast<unsigned long long>(state.budget.held()),
        static_cast<unsigned long long>(effective_limit(device)));
    return false;
  }
  reservation->bytes = expected;
  return true;
}

// Once the context is created (or failed): turns the reservation into the
// measured charge (or gives it back), then lets the job's other processes
// see the measurement.
void settle_context(int device, const ContextReservation& reservation, const UsageProbe& probe,
                    CUresult result, CUcontext created) {
  if (result == CUDA_SUCCESS && created != nullptr) {
    charge_context(probe, created, reservation.bytes);
  } else if (reservation.bytes != 0) {
    g_runtime.devices[device].budget.release(reservation.bytes);
  }
  if (reservation.measuring) unlock_tree_measurement();
}

// Calls `create` for a context reserved as `reservation`: when the driver
// has no room, waits for a production job while opportunistic memory
// spills, asking for what the context is expected to take (a guess when
// never measured; the reserved bytes are already the job's).
template <class Create>
CUresult create_waiting_for_room(CUdevice device, const ContextReservation& reservation,
                                 Create create) {
  CUresult result = create();
  return wait_for_room(device, reservation.bytes, reservation.bytes != 0 ? 0 : kContextRoomGuess,
                       result, create);
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
  ContextReservation reservation;
  if (!reserve_context(device, &reservation)) return CUDA_ERROR_OUT_OF_MEMORY;
  UsageProbe probe = usage_before(device);
  CUresult result = create_waiting_for_room(device, reservation, create);
  settle_context(device, reservation, probe, result,
                 result == CUDA_SUCCESS && context != nullptr ? *context : nullptr);
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
  if (state.primary_retains > 0) {
    CUresult result = real(context, device);
    if (result == CUDA_SUCCESS) ++state.primary_retains;
    return result;
  }
  ContextReservation reservation;
  if (!reserve_context(device, &reservation)) return CUDA_ERROR_OUT_OF_MEMORY;
  UsageProbe probe = usage_before(device);
  CUresult result =
      create_waiting_for_room(device, reservation, [&] { return real(context, device); });
  if (result == CUDA_SUCCESS) {
    state.primary_retains = 1;
    state.primary_context = reinterpret_cast<std::uint64_t>(*context);
  }
  settle_context(device, reservation, probe, result, result == CUDA_SUCCESS ? *context : nullptr);
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
