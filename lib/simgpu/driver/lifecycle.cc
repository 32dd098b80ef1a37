// The driver's lifecycle: cuInit (configuration, the state file, this
// process's slot in it), the end of the process (its slot released), fork
// (the child may not use the parent's driver), and the gpushare_sim_*
// introspection entry points.
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "simgpu/driver/internal.h"

namespace gpushare::simgpu::driver {
namespace {

// The state starts at 0, not initialised (the zero-initialised g_driver).
constexpr int kReady = 1;
constexpr int kFailed = 2;
constexpr int kDeinitialised = 3;

constinit Driver g_driver;

void read_process_name(char* name, std::size_t bytes) {
  name[0] = '\0';
  int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t got = ::read(fd, name, bytes - 1);
  ::close(fd);
  if (got <= 0) return;
  name[got] = '\0';
  if (name[got - 1] == '\n') name[got - 1] = '\0';
}

CUresult fail_init(Driver& d, CUresult code, const char* message) {
  std::snprintf(d.init_message, sizeof d.init_message, "%s", message);
  log_message("error: %s", message);
  d.init_error = code;
  __atomic_store_n(&d.init_state, kFailed, __ATOMIC_RELEASE);
  return code;
}

// After fork() the child shares the parent's mappings but not its identity
// in the state file; like the real driver, it may not use what the parent
// initialised.
void on_fork_child() { __atomic_store_n(&g_driver.forked, 1, __ATOMIC_RELAXED); }

CUresult initialise(Driver& d) {
  char error[kMessageBytes];
  if (!load_config_from_environment(&d.config, error, sizeof error)) {
    return fail_init(d, CUDA_ERROR_NO_DEVICE, error);
  }
  if (!d.state.open(d.config, error, sizeof error)) {
    return fail_init(d, CUDA_ERROR_OPERATING_SYSTEM, error);
  }
  d.pid = static_cast<std::int32_t>(getpid());
  std::uint64_t start_ticks = process_start_ticks(d.pid);
  char name[32];
  read_process_name(name, sizeof name);
  if (!d.state.lock(error, sizeof error)) return fail_init(d, CUDA_ERROR_OPERATING_SYSTEM, error);
  StateLayout* layout = d.state.layout();
  reclaim_dead(layout, process_alive);
  bool mismatch = false;
  if (!config_matches(layout, d.config)) {
    // The first process to attach to an idle device describes it; while
    // others are attached, the device they see is the one that counts.
    if (live_process_count(layout) == 0) {
      reconfigure(layout, d.config);
    } else {
      mismatch = true;
    }
  }
  int physical_count = static_cast<int>(layout->header.device_count);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  d.device_count = parse_visible_devices(visible, physical_count, d.visible);
  d.slot = d.device_count > 0 ? attach_process(layout, d.pid, start_ticks, name) : -1;
  if (d.slot >= 0) publish_checkpoint_slot();
  d.state.unlock();
  if (d.device_count == 0) {
    std::snprintf(error, sizeof error,
                  "CUDA_VISIBLE_DEVICES='%.100s' shows none of the %d simulated devices", visible,
                  physical_count);
    return fail_init(d, CUDA_ERROR_NO_DEVICE, error);
  }
  if (mismatch) {
    log_message(
        "warning: GPUSHARE_SIM_* settings differ from those of the simulated GPU in use (%s); "
        "using the latter",
        d.config.state_path);
  }
  if (d.slot < 0) {
    std::snprintf(error, sizeof error, "%.400s: the simulated GPU already serves %d processes",
                  d.config.state_path, kMaxProcesses);
    return fail_init(d, CUDA_ERROR_OPERATING_SYSTEM, error);
  }
  pthread_atfork(nullptr, nullptr, on_fork_child);
  start_checkpoint_thread();
  __atomic_store_n(&d.init_state, kReady, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

// At exit (or dlclose), give the device back at once rather than waiting
// for another process to notice this one is gone.
__attribute__((destructor)) void on_unload() {
  Driver& d = g_driver;
  if (__atomic_load_n(&d.init_state, __ATOMIC_ACQUIRE) != kReady || d.forked) return;
  if (static_cast<std::int32_t>(getpid()) != d.pid) return;
  __atomic_store_n(&d.init_state, kDeinitialised, __ATOMIC_RELEASE);
  char error[kMessageBytes];
  if (d.state.lock(error, sizeof error)) {
    // An exit, not a crash: its communicators' other ranks go on without
    // it (a crash breaks them: collective.h).
    collective_leave(d.state.layout(), d.slot);
    detach_process(d.state.layout(), d.slot);
    d.state.unlock();
  }
}

}  // namespace

Driver& sim() { return g_driver; }

CUresult physical_device(CUdevice device, int* physical) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (device < 0 || device >= g_driver.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *physical = g_driver.visible[device];
  return CUDA_SUCCESS;
}

CUdevice visible_device(int physical) {
  for (int i = 0; i < g_driver.device_count; ++i) {
    if (g_driver.visible[i] == physical) return i;
  }
  return -1;
}

CUresult enter() {
  int state = __atomic_load_n(&g_driver.init_state, __ATOMIC_ACQUIRE);
  if (__builtin_expect(state == kReady && !g_driver.forked, 1)) return CUDA_SUCCESS;
  return state == kDeinitialised ? CUDA_ERROR_DEINITIALIZED : CUDA_ERROR_NOT_INITIALIZED;
}

void log_message(const char* format, ...) {
  char line[1024];
  int prefix = std::snprintf(line, sizeof line, "gpushare-sim[%d]: ", static_cast<int>(getpid()));
  va_list arguments;
  va_start(arguments, format);
  int body = std::vsnprintf(line + prefix, sizeof line - static_cast<std::size_t>(prefix) - 1,
                            format, arguments);
  va_end(arguments);
  std::size_t length =
      static_cast<std::size_t>(prefix) + (body < 0 ? 0 : static_cast<std::size_t>(body));
  if (length > sizeof line - 2) length = sizeof line - 2;
  line[length++] = '\n';
  ssize_t ignored = ::write(2, line, length);
  (void)ignored;
}

SharedLock::SharedLock() {
  char error[kMessageBytes];
  locked_ = sim().state.lock(error, sizeof error);
  if (!locked_) log_message("error: %s", error);
}

SharedLock::~SharedLock() {
  if (locked_) sim().state.unlock();
}

std::int64_t now_ns() { return monotonic_ns(); }

void sleep_until(std::int64_t deadline_ns) {
  timespec until;
  until.tv_sec = deadline_ns / 1000000000;
  until.tv_nsec = deadline_ns % 1000000000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
}

}  // namespace gpushare::simgpu::driver

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

SIM_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = sim();
  if (d.forked) return CUDA_ERROR_NOT_INITIALIZED;
  LocalLock lock;
  int state = __atomic_load_n(&d.init_state, __ATOMIC_ACQUIRE);
  if (state == 1) return CUDA_SUCCESS;
  if (state == 2) return d.init_error;
  if (state == 3) return CUDA_ERROR_DEINITIALIZED;
  return initialise(d);
}

SIM_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Answered before cuInit too, as the real driver does (the CUDA runtime
  // asks hundreds of cuGetProcAddress questions first, each checking the
  // version): read the one setting once and keep it.
  static int cached;
  int known = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (known == 0) {
    SimConfig config;
    char error[kMessageBytes];
    known = load_config_from_environment(&config, error, sizeof error) ? config.driver_version
                                                                       : kDefaultDriverVersion;
    __atomic_store_n(&cached, known, __ATOMIC_RELAXED);
  }
  *version = known;
  return CUDA_SUCCESS;
}

// Introspection for tests and gpushare-probe: not part of the CUDA API.

/// Device totals from the state file: used and total bytes (all processes),
/// kernel time run so far (settled up to now) and kernels ever launched.
/// Returns a CUresult.
SIM_EXPORT int gpushare_sim_device_stats(int device, unsigned long long* used_bytes,
                                         unsigned long long* total_bytes,
                                         unsigned long long* busy_ns, unsigned long long* kernels) {
  int physical = 0;
  if (CUresult status = physical_device(device, &physical); status != CUDA_SUCCESS) return status;
  LocalLock local;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  const DeviceState& state = shared.layout()->devices[physical];
  const SchedModel* model = settled_model(shared.layout(), physical);
  if (used_bytes != nullptr) *used_bytes = device_used(shared.layout(), physical);
  if (total_bytes != nullptr) *total_bytes = state.memory_bytes;
  if (busy_ns != nullptr) *busy_ns = model->busy_total_ns;
  if (kernels != nullptr) *kernels = model->kernels;
  return CUDA_SUCCESS;
}

/// Managed memory that process `pid` (0: this one) holds on a device: its
/// size and the part of it on the device (the rest is on the host).
/// Returns a CUresult.
SIM_EXPORT int gpushare_sim_managed_stats(int device, int pid, unsigned long long* total_bytes,
                                          unsigned long long* device_bytes) {
  int physical = 0;
  if (CUresult status = physical_device(device, &physical); status != CUDA_SUCCESS) return status;
  if (pid < 0) return CUDA_ERROR_INVALID_VALUE;
  LocalLock local;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  std::int32_t owner = pid == 0 ? sim().pid : pid;
  unsigned long long total = 0, resident = 0;
  const StateLayout* layout = shared.layout();
  for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
    const ManagedRecord& record = layout->managed[i];
    if (record.pid != owner || record.device != physical) continue;
    total += record.size_bytes;
    resident += record.resident_bytes;
  }
  if (total_bytes != nullptr) *total_bytes = total;
  if (device_bytes != nullptr) *device_bytes = resident;
  return CUDA_SUCCESS;
}

/// A lane of a device's copy path (0: to the device, 1: from it, 2: within
/// it): transfers, bytes and busy time reserved so far, and the end of the
/// last stretch still reserved (CLOCK_MONOTONIC nanoseconds, 0 if none).
/// Returns a CUresult.
SIM_EXPORT int gpushare_sim_link_stats(int device, int lane, unsigned long long* transfers,
                                       unsigned long long* bytes, unsigned long long* busy_ns,
                                       long long* busy_until_ns) {
  int physical = 0;
  if (CUresult status = physical_device(device, &physical); status != CUDA_SUCCESS) return status;
  if (lane < 0 || lane >= kLinkLanes) return CUDA_ERROR_INVALID_VALUE;
  LocalLock local;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  const LinkQueue& queue = shared.layout()->devices[physical].link.lanes[lane];
  if (transfers != nullptr) *transfers = queue.transfers;
  if (bytes != nullptr) *bytes = queue.bytes;
  if (busy_ns != nullptr) *busy_ns = static_cast<unsigned long long>(queue.busy_ns);
  if (busy_until_ns != nullptr) *busy_until_ns = link_busy_until(queue);
  return CUDA_SUCCESS;
}

/// The state file in use, or "" before cuInit.
SIM_EXPORT const char* gpushare_sim_state_path(void) { return sim().config.state_path; }

/// Why cuInit failed, or "".
SIM_EXPORT const char* gpushare_sim_last_error(void) { return sim().init_message; }
