// The few NVML declarations the test client uses (the toolkit has no
// nvml.h), loaded with dlopen at run time as real tools do.
#pragma once

#include <dlfcn.h>

#include <string>

namespace gpushare::clients {

using NvmlDevice = struct NvmlDeviceOpaque*;

struct NvmlMemory {  ///< nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlProcessInfo {  ///< nvmlProcessInfo_t of the _v2/_v3 calls
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

struct NvmlUtilization {  ///< nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

struct Nvml {
  int (*init)();
  int (*shutdown)();
  int (*handle_by_index)(unsigned, NvmlDevice*);
  int (*memory_info)(NvmlDevice, NvmlMemory*);
  int (*running_processes)(NvmlDevice, unsigned*, NvmlProcessInfo*);
  int (*utilization)(NvmlDevice, NvmlUtilization*);
};

inline bool load_nvml(Nvml* nvml, std::string* error) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    *error = dlerror();
    return false;
  }
  struct {
    void** slot;
    const char* name;
  } entries[] = {
      {reinterpret_cast<void**>(&nvml->init), "nvmlInit_v2"},
      {reinterpret_cast<void**>(&nvml->shutdown), "nvmlShutdown"},
      {reinterpret_cast<void**>(&nvml->handle_by_index), "nvmlDeviceGetHandleByIndex_v2"},
      {reinterpret_cast<void**>(&nvml->memory_info), "nvmlDeviceGetMemoryInfo"},
      {reinterpret_cast<void**>(&nvml->running_processes),
       "nvmlDeviceGetComputeRunningProcesses_v3"},
      {reinterpret_cast<void**>(&nvml->utilization), "nvmlDeviceGetUtilizationRates"},
  };
  for (auto& entry : entries) {
    *entry.slot = dlsym(library, entry.name);
    if (*entry.slot == nullptr) {
      *error = std::string("libnvidia-ml.so.1 has no ") + entry.name;
      return false;
    }
  }
  return true;
}

}  // namespace gpushare::clients
