// The interposer's start-up and fork wiring: reads the settings when the
// library loads, loads the real driver at the first CUDA call, enumerates
// devices after a successful cuInit (limits, the job's process tree, the
// coordinator client), and forgets the parent's CUDA state in a forked
// child. It sits above the state it wires (core/) and the parts it starts
// (memory/, compute/), so nothing below includes it.
#include <dlfcn.h>
#include <pthread.h>

#include <cstdlib>
#include <cstring>

#include "coord/job/job_client.h"
#include "coord/job/limits.h"
#include "interpose/compute/launch_queue.h"
#include "interpose/compute/throttle.h"
#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "interpose/driver/real_dlsym.h"
#include "interpose/memory/memory_worker.h"
#include "interpose/memory/suspend.h"
#include "interpose/memory/tree.h"
#include "interpose/memory/vmm_backing.h"
#include "vocab/uuid.h"

namespace gpushare::interpose {
namespace {

pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;
pthread_mutex_t g_devices_mutex = PTHREAD_MUTEX_INITIALIZER;

void log_coordinator_line(const char* line) { GS_DEBUG("coord: %s", line); }
// Printed at any GPUSHARE_LOG level, like say_when_unregistered's line.
void warn_coordinator_line(const char* line) { log_message(LogLevel::kWarning, "%s", line); }

// A job launched for a coordinator (GPUSHARE_LAUNCHED_FOR, as gpushare-run
// and the Slurm hooks set it) that cannot reach one runs on its starting
// limits alone: say so once, naming what its class goes without, since
// nothing else would show it (the client thread goes on trying, silently).
// Printed at any GPUSHARE_LOG level: it is the one line the user must see.
void say_when_unregistered(const Settings& settings) {
  static std::atomic<bool> said{false};
  if (!settings.launched_for_coordinator || coord::job::registered() || said.exchange(true)) {
    return;
  }
  if (settings.qos == kQosOpportunistic) {
    log_message(
        LogLevel::kWarning,
        "no coordinator answers at %s: this opportunistic job is not throttled for production "
        "jobs and does not move its memory to the host for them until one does; it keeps only "
        "the limits it started with",
        settings.socket_path[0] != '\0' ? settings.socket_path : "the default socket");
  } else {
    log_message(LogLevel::kWarning,
                "no coordinator answers at %s: this production job is not protected (opportunistic "
                "jobs beside it are neither throttled nor made to spill for it) until one does; it "
                "keeps only the limits it started with",
                settings.socket_path[0] != '\0' ? settings.socket_path : "the default socket");
  }
}

// Registers with the node coordinator (bounded; never fails the job): from
// then on the coordinator's limits and pause apply.
void start_coordinator_client(int count) {
  const Settings& settings = g_runtime.settings;
  coord::job::JobIdentity job;
  job.name = settings.job_name[0] != '\0' ? settings.job_name : nullptr;
  job.qos = settings.qos;
  job.socket_path = settings.socket_path[0] != '\0' ? settings.socket_path : nullptr;
  job.compute_cap_ppm = settings.compute_cap_ppm;
  job.tree_path = joined_tree_path();
  job.log = &log_coordinator_line;
  job.warn = &warn_coordinator_line;
  job.coordinator_expected = settings.launched_for_coordinator;
  job.debug = settings.debug_client;
  job.device_count = count;
  for (int index = 0; index < count; ++index) {
    const Device& device = g_runtime.devices[index];
    std::memcpy(job.devices[index].uuid, device.uuid.bytes, 16);
    job.devices[index].mem_total_bytes = device.physical_total;
  }
  g_counters.launches_total = &launches_total;
  g_counters.memory_tick = &memory_tick;  // memory_worker.h: suspend, resume, else spill
  g_counters.before_retire = &suspend_before_retire;
  g_counters.memory_away = &suspend_memory_away;
  coord::job::client_start(job, &g_counters);
  say_when_unregistered(settings);
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
#include "interpose/driver/hooks.def"
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
  real.real_cuEventElapsedTime =
      reinterpret_cast<PFN_cuEventElapsedTime_v2000>(real_dlsym(rt.libcuda, "cuEventElapsedTime"));
  real.real_cuMemAdvise =
      reinterpret_cast<PFN_cuMemAdvise_v8000>(real_dlsym(rt.libcuda, "cuMemAdvise"));
  real.real_cuCtxSetCurrent =
      reinterpret_cast<PFN_cuCtxSetCurrent_v4000>(real_dlsym(rt.libcuda, "cuCtxSetCurrent"));
  real.real_cuStreamCreate =
      reinterpret_cast<PFN_cuStreamCreate_v2000>(real_dlsym(rt.libcuda, "cuStreamCreate"));
  real.real_cuFuncGetName =
      reinterpret_cast<PFN_cuFuncGetName_v12030>(real_dlsym(rt.libcuda, "cuFuncGetName"));
  real.real_cuFuncGetParamInfo = reinterpret_cast<PFN_cuFuncGetParamInfo_v12040>(
      real_dlsym(rt.libcuda, "cuFuncGetParamInfo"));
  real.real_cuKernelGetParamInfo = reinterpret_cast<PFN_cuKernelGetParamInfo_v12040>(
      real_dlsym(rt.libcuda, "cuKernelGetParamInfo"));
  real.real_cuStreamIsCapturing = reinterpret_cast<PFN_cuStreamIsCapturing_v10000>(
      real_dlsym(rt.libcuda, "cuStreamIsCapturing"));
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
  std::uint64_t capacities[kMaxDevices];
  for (int index = 0; index < count; ++index) {
    Device& device = rt.devices[index];
    CUdevice handle = 0;
    size_t total = 0;
    if (real.real_cuDeviceGet != nullptr) real.real_cuDeviceGet(&handle, index);
    if (real.real_cuDeviceGetUuid_v2 != nullptr) real.real_cuDeviceGetUuid_v2(&device.uuid, handle);
    if (real.real_cuDeviceTotalMem_v2 != nullptr) real.real_cuDeviceTotalMem_v2(&total, handle);
    device.physical_total = total;
    capacities[index] = total;
  }
  for (int index = 0; index < count; ++index) {
    rt.devices[index].budget.set_mirror(&g_counters.mem_used_bytes[index]);
  }
  join_process_tree(count);  // one budget for the job's processes
  // The job side owns the limits; they are in place before any hook can see
  // the devices, so no allocation passes unlimited in between.
  coord::job::start_limits_from_capacities(capacities, count);
  for (int index = 0; index < count; ++index) {
    char uuid[kUuidTextBytes];
    format_uuid(rt.devices[index].uuid, uuid);
    std::uint64_t limit = coord::job::start_mem_limit(index);
    std::uint64_t total = capacities[index];
    if (limit == kNoLimit) {
      GS_DEBUG("device %d %s: %llu bytes, no limit", index, uuid,
               static_cast<unsigned long long>(total));
    } else {
      GS_DEBUG("device %d %s: %llu bytes, limit %llu bytes", index, uuid,
               static_cast<unsigned long long>(total), static_cast<unsigned long long>(limit));
    }
  }
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
  for (auto& contexts : g_counters.contexts) contexts.store(0, std::memory_order_relaxed);
  reset_launch_counts();
  throttle_after_fork();
  launch_queue_after_fork();
  rt.device_count.store(-1, std::memory_order_relaxed);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&rt.context_mutex, &fresh, sizeof fresh);
  std::memcpy(&g_devices_mutex, &fresh, sizeof fresh);
}

const char* environment_value(const char* name) { return std::getenv(name); }

// Step 1: settings, once, when the library loads.
__attribute__((constructor)) void read_settings_at_load() {
  read_settings(&environment_value, &g_runtime.settings);
  const Settings& settings = g_runtime.settings;
  // Parsed once; from here on the owner of the job's limits holds it.
  if (settings.error[0] == '\0') {
    coord::job::request_mem_limit(settings.has_mem_limit ? &settings.mem_limit : nullptr);
  }
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

}  // namespace gpushare::interpose
