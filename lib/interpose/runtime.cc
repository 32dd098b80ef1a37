#include "interpose/runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "coord/job/client.h"
#include "interpose/log.h"
#include "interpose/nvml.h"
#include "interpose/real_dlsym.h"
#include "interpose/spill.h"
#include "interpose/suspend.h"
#include "interpose/throttle.h"
#include "interpose/tree.h"
#include "vocab/uuid.h"
#include "interpose/vmm_backing.h"

namespace gpushare::interpose {

constinit Runtime g_runtime;
constinit coord::LocalCounters g_counters{};
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

namespace {

pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;
pthread_mutex_t g_devices_mutex = PTHREAD_MUTEX_INITIALIZER;

void log_coordinator_line(const char* line) { GS_DEBUG("coord: %s", line); }

// Registers with the node coordinator (bounded; never fails the job): from
// then on the coordinator's limits and pause apply.
void start_coordinator_client(int count) {
  const Settings& settings = g_runtime.settings;
  coord::JobIdentity job;
  job.name = settings.job_name[0] != '\0' ? settings.job_name : nullptr;
  job.qos = settings.qos;
  job.socket_path = settings.socket_path[0] != '\0' ? settings.socket_path : nullptr;
  job.compute_cap_ppm = settings.compute_cap_ppm;
  job.tree_path = joined_tree_path();
  job.log = &log_coordinator_line;
  job.debug = settings.debug_client;
  job.device_count = count;
  for (int index = 0; index < count; ++index) {
    const Device& device = g_runtime.devices[index];
    std::memcpy(job.devices[index].uuid, device.uuid.bytes, 16);
    job.devices[index].mem_total_bytes = device.physical_total;
    job.devices[index].start_limit_bytes = device.start_limit_bytes;
  }
  g_counters.launches_total = &launches_total;
  g_counters.memory_tick = &memory_tick;  // suspend.h: suspend, resume, else spill
  g_counters.before_retire = &suspend_before_retire;
  g_counters.memory_away = &suspend_memory_away;
  coord::client_start(job, &g_counters);
}

void format_uuid(const CUuuid& uuid, char* text) {
  gpushare::format_uuid(reinterpret_cast<const unsigned char*>(uuid.bytes), text);
}

void load_driver() {
  Runtime& rt = g_runtime;
  // The object the program itself gets from dlopen("libcuda.so.1"): the
  // simulated driver when LD_LIBRARY_PATH puts it first.
  rt.libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NODELETE);
  if (rt.libcuda == nullptr) {
    GS_ERROR("cannot load the CUDA driver libcuda.so.1: %s", dlerror());
    return;
  }
  RealDriver& real = rt.real;
#define GS_HOOK(symbol, type) \
  real.real_##symbol = reinterpret_cast<type>(real_dlsym(rt.libcuda, #symbol));
#include "interpose/hooks.def"
#undef GS_HOOK
  real.real_cuCtxGetDevice =
      reinterpret_cast<PFN_cuCtxGetDevice_v2000>(real_dlsym(rt.libcuda, "cuCtxGetDevice"));
  real.real_cuCtxGetCurrent =
      reinterpret_cast<PFN_cuCtxGetCurrent_v4000>(real_dlsym(rt.libcuda, "cuCtxGetCurrent"));
  real.real_cuDeviceGetCount =
      reinterpret_cast<PFN_cuDeviceGetCount_v2000>(real_dlsym(rt.libcuda, "cuDeviceGetCount"));
  real.real_cuDeviceGet =
      reinterpret_cast<PFN_cuDeviceGet_v2000>(real_dlsym(rt.libcuda, "cuDeviceGet"));
  real.real_cuDeviceGetUuid_v2 =
      reinterpret_cast<PFN_cuDeviceGetUuid_v11040>(real_dlsym(rt.libcuda, "cuDeviceGetUuid_v2"));
  real.real_cuEventCreate =
      reinterpret_cast<PFN_cuEventCreate_v2000>(real_dlsym(rt.libcuda, "cuEventCreate"));
  real.real_cuEventDestroy_v2 =
      reinterpret_cast<PFN_cuEventDestroy_v4000>(real_dlsym(rt.libcuda, "cuEventDestroy_v2"));
  real.real_cuEventRecord =
      reinterpret_cast<PFN_cuEventRecord_v2000>(real_dlsym(rt.libcuda, "cuEventRecord"));
  real.real_cuEventRecord_ptsz =
      reinterpret_cast<PFN_cuEventRecord_v7000_ptsz>(real_dlsym(rt.libcuda, "cuEventRecord_ptsz"));
  real.real_cuEventQuery =
      reinterpret_cast<PFN_cuEventQuery_v2000>(real_dlsym(rt.libcuda, "cuEventQuery"));
  real.real_cuEventElapsedTime =
      reinterpret_cast<PFN_cuEventElapsedTime_v2000>(real_dlsym(rt.libcuda, "cuEventElapsedTime"));
  real.real_cuMemAdvise =
      reinterpret_cast<PFN_cuMemAdvise_v8000>(real_dlsym(rt.libcuda, "cuMemAdvise"));
  real.real_cuMemPrefetchAsync =
      reinterpret_cast<PFN_cuMemPrefetchAsync_v8000>(real_dlsym(rt.libcuda, "cuMemPrefetchAsync"));
  real.real_cuCtxSetCurrent =
      reinterpret_cast<PFN_cuCtxSetCurrent_v4000>(real_dlsym(rt.libcuda, "cuCtxSetCurrent"));
  resolve_suspend_entries(rt.libcuda, &real);
  GS_DEBUG("loaded the CUDA driver; qos %s, job '%s'", qos_name(rt.settings.qos),
           rt.settings.job_name[0] != '\0' ? rt.settings.job_name : "(process name)");
  rt.driver_loaded.store(true, std::memory_order_release);
}

void enumerate_devices() {
  Runtime& rt = g_runtime;
  RealDriver& real = rt.real;
  int count = 0;
  // Before a successful cuInit this fails; stay unenumerated and try again later.
  if (real.real_cuDeviceGetCount == nullptr || real.real_cuDeviceGetCount(&count) != CUDA_SUCCESS) {
    return;
  }
  if (count > kMaxDevices) {
    GS_WARN("%d devices visible; limits apply to the first %d", count, kMaxDevices);
    count = kMaxDevices;
  }
  for (int index = 0; index < count; ++index) {
    Device& device = rt.devices[index];
    CUdevice handle = 0;
    size_t total = 0;
    if (real.real_cuDeviceGet != nullptr) real.real_cuDeviceGet(&handle, index);
    if (real.real_cuDeviceGetUuid_v2 != nullptr) real.real_cuDeviceGetUuid_v2(&device.uuid, handle);
    if (real.real_cuDeviceTotalMem_v2 != nullptr) real.real_cuDeviceTotalMem_v2(&total, handle);
    device.physical_total = total;
    device.start_limit_bytes = mem_limit_for(rt.settings, total);
    char uuid[kUuidTextBytes];
    format_uuid(device.uuid, uuid);
    if (device.start_limit_bytes == kNoLimit) {
      GS_DEBUG("device %d %s: %llu bytes, no limit", index, uuid,
               static_cast<unsigned long long>(total));
    } else {
      GS_DEBUG("device %d %s: %llu bytes, limit %llu bytes", index, uuid,
               static_cast<unsigned long long>(total),
               static_cast<unsigned long long>(device.start_limit_bytes));
    }
  }
  for (int index = 0; index < count; ++index) {
    rt.devices[index].budget.set_mirror(&g_counters.mem_used_bytes[index]);
  }
  join_process_tree(count);  // issue 18 (5): one budget for the job's processes
  rt.device_count.store(count, std::memory_order_release);
  start_coordinator_client(count);
}

void reset_after_fork() {
  // The child has no CUDA state of its parent (CUDA does not survive fork):
  // forget every charge and start over at its own first CUDA call.
  Runtime& rt = g_runtime;
  for (Device& device : rt.devices) {
    device.budget.reset();
    device.primary_retains = 0;
    device.primary_context = 0;
  }
  rt.allocations.clear();
  rt.handles.clear();
  rt.contexts.clear();
  g_counters.launches.store(0, std::memory_order_relaxed);
  for (LaunchSlot& slot : g_launch_slots) slot.count.store(0, std::memory_order_relaxed);
  throttle_after_fork();
  rt.device_count.store(-1, std::memory_order_relaxed);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&rt.context_mutex, &fresh, sizeof fresh);
  std::memcpy(&g_devices_mutex, &fresh, sizeof fresh);
}

const char* environment_value(const char* name) { return std::getenv(name); }

// Step 1: settings, once, when the library loads.
__attribute__((constructor)) void read_settings_at_load() {
  read_settings(&environment_value, &g_runtime.settings);
  pthread_atfork(nullptr, nullptr, &reset_after_fork);
}

}  // namespace

bool ensure_driver_loaded() {
  pthread_once(&g_driver_once, &load_driver);
  return g_runtime.driver_loaded.load(std::memory_order_acquire);
}

void init_devices() {
  if (g_runtime.device_count.load(std::memory_order_acquire) >= 0) return;
  pthread_mutex_lock(&g_devices_mutex);
  if (g_runtime.device_count.load(std::memory_order_acquire) < 0) enumerate_devices();
  pthread_mutex_unlock(&g_devices_mutex);
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

std::uint64_t effective_limit(int device) { return coord::mem_limit(device); }

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
  char uuid[kUuidTextBytes];
  format_uuid(g_runtime.devices[device].uuid, uuid);
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

namespace {
void release_record(const AllocationRecord& record) {
  if (record.device >= 0 && record.device < kMaxDevices) {
    g_runtime.devices[record.device].budget.release(record.bytes);
  }
  spill_forget(record);
}
}  // namespace

void release_context_allocations(std::uint64_t context) {
  if (context == 0) return;
  vmm_release_context(context);  // VMM memory outlives its context (vmm_backing.h)
  g_runtime.allocations.erase_context(context, &release_record);
  g_runtime.handles.erase_context(context, &release_record);
}

}  // namespace gpushare::interpose
