// The simulated libnvidia-ml.so.1: NVML's view of the same state file the
// simulated driver uses, so both always agree: device count, names, UUIDs
// (as "GPU-xxxxxxxx-..."), memory (used = every process's charges and
// managed residency) and the processes holding the device with their
// memory. Utilisation is in utilisation.cc, the constant properties of the
// device (PCI, clocks, power, modes) in properties.cc, and every other
// entry point of NVML's API, not modelled, in unmodelled.cc.
//
// NVML only reads, except that it reclaims what dead processes left, as the
// driver does, so a SIGKILLed job's memory does not linger in its numbers.
// The toolkit has no nvml.h: the few types used are declared in internal.h
// and here, with their documented layouts.
#include <pthread.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "simgpu/nvml/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::nvml;

namespace gpushare::simgpu::nvml {

constinit Nvml g_nvml;

void log_error(const char* format, ...) {
  char line[1024];
  int prefix = std::snprintf(line, sizeof line,
                             "gpushare-sim-nvml[%d]: error: ", static_cast<int>(getpid()));
  va_list arguments;
  va_start(arguments, format);
  int body = std::vsnprintf(line + prefix, sizeof line - static_cast<std::size_t>(prefix) - 1,
                            format, arguments);
  va_end(arguments);
  std::size_t length =
      static_cast<std::size_t>(prefix) + (body > 0 ? static_cast<std::size_t>(body) : 0);
  if (length > sizeof line - 2) length = sizeof line - 2;
  line[length++] = '\n';
  ssize_t ignored = ::write(2, line, length);
  (void)ignored;
}

// The device behind a handle, or -1 (also when NVML is not initialised).
static int device_of(void* handle) {
  if (g_nvml.references == 0 || handle == nullptr) return -1;
  auto* device = static_cast<DeviceHandle*>(handle);
  if (device < &g_nvml.devices[0] || device >= &g_nvml.devices[g_nvml.device_count]) return -1;
  // From the address, never from the memory behind it, which a caller that
  // confuses a handle with an output pointer may have overwritten.
  return static_cast<int>(device - &g_nvml.devices[0]);
}

nvmlReturn_t check(void* handle, int* device) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  *device = device_of(handle);
  return *device < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

nvmlReturn_t copy_string(const char* value, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (std::strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value, std::strlen(value) + 1);
  return NVML_SUCCESS;
}

bool lock_state() {
  char error[kMessageBytes];
  if (!g_nvml.state.lock(error, sizeof error)) {
    log_error("%s", error);
    return false;
  }
  reclaim_dead(g_nvml.state.layout(), process_alive);
  return true;
}

}  // namespace gpushare::simgpu::nvml

namespace {

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned kMemoryV2Version = static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};

struct nvmlProcessInfo_v2_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

class Guard {
 public:
  Guard() { pthread_mutex_lock(&g_nvml.mutex); }
  ~Guard() { pthread_mutex_unlock(&g_nvml.mutex); }
};

nvmlReturn_t initialise() {
  Guard guard;
  if (g_nvml.references > 0) {
    ++g_nvml.references;
    return NVML_SUCCESS;
  }
  char error[kMessageBytes];
  if (!load_config_from_environment(&g_nvml.config, error, sizeof error)) {
    log_error("%s", error);
    return NVML_ERROR_UNKNOWN;
  }
  if (!g_nvml.state.open(g_nvml.config, error, sizeof error)) {
    log_error("%s", error);
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  g_nvml.device_count = static_cast<int>(g_nvml.state.layout()->header.device_count);
  g_nvml.references = 1;
  return NVML_SUCCESS;
}

struct MemoryNumbers {
  unsigned long long total;
  unsigned long long used;
};

nvmlReturn_t memory_numbers(int device, MemoryNumbers* numbers) {
  if (!lock_state()) return NVML_ERROR_UNKNOWN;
  StateLayout* layout = g_nvml.state.layout();
  numbers->total = layout->devices[device].memory_bytes;
  numbers->used = device_used(layout, device);
  if (numbers->used > numbers->total) numbers->used = numbers->total;
  g_nvml.state.unlock();
  return NVML_SUCCESS;
}

// Processes holding a context or memory on the device.
template <class Info>
nvmlReturn_t running_processes(void* handle, unsigned* count, Info* infos) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (count == nullptr || (*count > 0 && infos == nullptr)) return NVML_ERROR_INVALID_ARGUMENT;
  if (!lock_state()) return NVML_ERROR_UNKNOWN;
  StateLayout* layout = g_nvml.state.layout();
  unsigned found = 0;
  for (int i = 0; i < kMaxProcesses; ++i) {
    const ProcessSlot& slot = layout->processes[i];
    if (slot.pid == 0) continue;
    std::uint64_t used = process_used(layout, i, device);
    if (slot.contexts[device] == 0 && used == 0) continue;
    if (found < *count) {
      Info info{};
      info.pid = static_cast<unsigned>(slot.pid);
      info.usedGpuMemory = used;
      infos[found] = info;
    }
    ++found;
  }
  g_nvml.state.unlock();
  bool enough = found <= *count;
  *count = found;
  return enough ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

}  // namespace

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) { return initialise(); }
NVML_EXPORT nvmlReturn_t nvmlInit(void) { return initialise(); }
NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int) { return initialise(); }

NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  Guard guard;
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g_nvml.references == 0) g_nvml.state.close();
  return NVML_SUCCESS;
}

NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument Version Mismatch";
    default:
      return "Unknown Error";
  }
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  return copy_string("580.00 (gpushare simulated)", version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return copy_string("13.580.00", version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SimConfig config;
  char error[kMessageBytes];
  *version = load_config_from_environment(&config, error, sizeof error) ? config.driver_version
                                                                        : kDefaultDriverVersion;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name,
                                                  unsigned int length) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  if (name == nullptr || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (!lock_state()) return NVML_ERROR_UNKNOWN;
  nvmlReturn_t status = NVML_ERROR_NOT_FOUND;
  for (const ProcessSlot& slot : g_nvml.state.layout()->processes) {
    if (slot.pid != 0 && static_cast<unsigned>(slot.pid) == pid) {
      char copy[sizeof slot.name + 1];
      std::memcpy(copy, slot.name, sizeof slot.name);
      copy[sizeof slot.name] = '\0';
      status = copy_string(copy, name, length);
      break;
    }
  }
  g_nvml.state.unlock();
  return status;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(g_nvml.device_count);
  return NVML_SUCCESS;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return nvmlDeviceGetCount_v2(count);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= static_cast<unsigned>(g_nvml.device_count)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = &g_nvml.devices[index];
  return NVML_SUCCESS;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, void** device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < g_nvml.device_count; ++i) {
    char text[64];
    format_device_uuid(i, text, sizeof text);
    if (std::strcmp(text, uuid) == 0) {
      *device = &g_nvml.devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  if (bus_id == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (int i = 0; i < g_nvml.device_count; ++i) {
    if (domain == 0 && slot == 0 && function == 0 && bus == static_cast<unsigned>(0x10 + i)) {
      *device = &g_nvml.devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* bus_id, void** device) {
  return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(void* handle, unsigned int* index) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned>(device);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(void* handle, unsigned int* minor) {
  return nvmlDeviceGetIndex(handle, minor);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(void* handle, char* name, unsigned int length) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  return copy_string("gpushare simulated GPU", name, length);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(void* handle, char* uuid, unsigned int length) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  char text[64];
  format_device_uuid(device, text, sizeof text);
  return copy_string(text, uuid, length);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void* handle, int* major, int* minor) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *major = 8;
  *minor = 0;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(void* handle, unsigned int* cores) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (cores == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cores = g_nvml.state.layout()->devices[device].sms * 64;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(void* handle, nvmlMemory_t* memory) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  MemoryNumbers numbers{};
  if (nvmlReturn_t status = memory_numbers(device, &numbers); status != NVML_SUCCESS) return status;
  memory->total = numbers.total;
  memory->used = numbers.used;
  memory->free = numbers.total - numbers.used;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void* handle, nvmlMemory_v2_t* memory) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != kMemoryV2Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  MemoryNumbers numbers{};
  if (nvmlReturn_t status = memory_numbers(device, &numbers); status != NVML_SUCCESS) return status;
  memory->total = numbers.total;
  memory->reserved = 0;
  memory->used = numbers.used;
  memory->free = numbers.total - numbers.used;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(void* handle, unsigned int* count,
                                                              nvmlProcessInfo_v1_t* infos) {
  return running_processes(handle, count, infos);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(void* handle, unsigned int* count,
                                                                 nvmlProcessInfo_v2_t* infos) {
  return running_processes(handle, count, infos);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned int* count,
                                                                 nvmlProcessInfo_v2_t* infos) {
  return running_processes(handle, count, infos);
}

// No graphics or MPS work on a simulated GPU: every such list is empty.
static nvmlReturn_t no_processes(void* handle, unsigned int* count) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 0;
  return NVML_SUCCESS;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(void* handle, unsigned int* count,
                                                               void*) {
  return no_processes(handle, count);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(void* handle, unsigned int* count,
                                                                  void*) {
  return no_processes(handle, count);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(void* handle, unsigned int* count,
                                                                  void*) {
  return no_processes(handle, count);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(void* handle, unsigned int* count,
                                                                 void*) {
  return no_processes(handle, count);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(void* handle,
                                                                    unsigned int* count, void*) {
  return no_processes(handle, count);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(void* handle,
                                                                    unsigned int* count, void*) {
  return no_processes(handle, count);
}
