#include "interpose/core/runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "interpose/driver/real_nvml.h"
#include "vocab/uuid.h"

namespace gpushare::interpose {

constinit Runtime g_runtime;
constinit coord::job::LocalCounters g_counters{};
__thread LaunchSlot* t_launch_slot __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
LaunchSlot g_launch_slots[kLaunchSlots];
std::atomic<int> g_launch_slots_taken{0};
}  // namespace

LaunchSlot* claim_launch_slot() {
  int index = g_launch_slots_taken.fetch_add(1, std::memory_order_relaxed);
  if (index >= kLaunchSlots) {
    g_launch_slots_taken.store(kLaunchSlots, std::memory_order_relaxed);
    return nullptr;
  }
  t_launch_slot = &g_launch_slots[index];
  return t_launch_slot;
}

std::uint64_t launches_total() {
  int taken = g_launch_slots_taken.load(std::memory_order_relaxed);
  if (taken > kLaunchSlots) taken = kLaunchSlots;
  std::uint64_t total = g_counters.launches.load(std::memory_order_relaxed);
  for (int i = 0; i < taken; ++i) total += g_launch_slots[i].count.load(std::memory_order_relaxed);
  return total;
}

void reset_launch_counts() {
  g_counters.launches.store(0, std::memory_order_relaxed);
  for (LaunchSlot& slot : g_launch_slots) slot.count.store(0, std::memory_order_relaxed);
}

void format_uuid(const CUuuid& uuid, char* text) {
  gpushare::format_uuid(reinterpret_cast<const unsigned char*>(uuid.bytes), text);
}

int current_device() {
  const Runtime& rt = g_runtime;
  if (rt.device_count.load(std::memory_order_acquire) < 0) init_devices();
  CUdevice device = -1;
  if (rt.real.real_cuCtxGetDevice == nullptr ||
      rt.real.real_cuCtxGetDevice(&device) != CUDA_SUCCESS) {
    return -1;
  }
  int count = rt.device_count.load(std::memory_order_acquire);
  return device >= 0 && device < count ? device : -1;
}

std::uint64_t current_context() {
  CUcontext context = nullptr;
  if (g_runtime.real.real_cuCtxGetCurrent == nullptr ||
      g_runtime.real.real_cuCtxGetCurrent(&context) != CUDA_SUCCESS) {
    return 0;
  }
  return reinterpret_cast<std::uint64_t>(context);
}

bool process_device_usage(int device, std::uint64_t* bytes) {
  const RealNvml& nvml = real_nvml();
  if (nvml.running_processes == nullptr || nvml.handle_by_uuid == nullptr || nvml.init == nullptr) {
    return false;
  }
  // nvmlInit is reference counted; one extra reference for our queries.
  static std::atomic<int> initialised{0};
  if (initialised.load(std::memory_order_acquire) == 0) {
    initialised.store(nvml.init() == 0 ? 1 : -1, std::memory_order_release);
  }
  if (initialised.load(std::memory_order_acquire) != 1) return false;
  // Which GPU the ordinal is now: a restore onto another GPU (the driver's
  // process checkpoint, gpushare-ctl migrate) moves the process's ordinals,
  // so the UUID read at start may name the GPU it left.
  CUuuid current = g_runtime.devices[device].uuid;
  CUdevice ordinal = 0;
  const RealDriver& real = g_runtime.real;
  if (real.real_cuDeviceGet != nullptr && real.real_cuDeviceGetUuid_v2 != nullptr &&
      real.real_cuDeviceGet(&ordinal, device) == CUDA_SUCCESS) {
    real.real_cuDeviceGetUuid_v2(&current, ordinal);
  }
  char uuid[kUuidTextBytes];
  format_uuid(current, uuid);
  NvmlDevice handle = nullptr;
  if (nvml.handle_by_uuid(uuid, &handle) != 0) return false;
  NvmlProcessInfo processes[64];
  unsigned int count = 64;
  if (nvml.running_processes(handle, &count, processes) != 0) return false;
  unsigned int self = static_cast<unsigned int>(getpid());
  *bytes = 0;
  for (unsigned int i = 0; i < count && i < 64; ++i) {
    if (processes[i].pid == self) *bytes = processes[i].used_gpu_memory;
  }
  return true;
}

int device_of_uuid_string(const char* text) {
  int count = g_runtime.device_count.load(std::memory_order_acquire);
  for (int index = 0; index < count; ++index) {
    char uuid[kUuidTextBytes];
    format_uuid(g_runtime.devices[index].uuid, uuid);
    if (strcasecmp(uuid, text) == 0) return index;
  }
  return -1;
}

}  // namespace gpushare::interpose
