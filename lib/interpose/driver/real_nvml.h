// The few NVML declarations the interposer needs (the toolkit ships no
// nvml.h), and the real NVML, loaded at run time when first needed.
#pragma once

#include <cstdint>

namespace gpushare::interpose {

using NvmlDevice = struct NvmlDeviceOpaque*;
using NvmlReturn = int;  ///< nvmlReturn_t; 0 is NVML_SUCCESS

struct NvmlMemory {  ///< nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlMemoryV2 {  ///< nvmlMemory_v2_t
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlProcessInfo {  ///< nvmlProcessInfo_t, as returned by the _v3 calls
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

struct RealNvml {
  void* library;
  NvmlReturn (*init)();
  NvmlReturn (*handle_by_uuid)(const char*, NvmlDevice*);
  NvmlReturn (*uuid_of)(NvmlDevice, char*, unsigned int);
  NvmlReturn (*running_processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*);
  NvmlReturn (*memory_info)(NvmlDevice, NvmlMemory*);
  NvmlReturn (*memory_info_v2)(NvmlDevice, NvmlMemoryV2*);
  bool initialised;  ///< our own nvmlInit succeeded (for process usage queries)
};

/// The real NVML, loaded once; its pointers are null where it is absent.
const RealNvml& real_nvml();

}  // namespace gpushare::interpose

// Our NVML wrappers (hooks_info.cc), exported under NVML's own names.
extern "C" __attribute__((visibility("default"))) gpushare::interpose::NvmlReturn
nvmlDeviceGetMemoryInfo(gpushare::interpose::NvmlDevice, gpushare::interpose::NvmlMemory*);
extern "C" __attribute__((visibility("default"))) gpushare::interpose::NvmlReturn
nvmlDeviceGetMemoryInfo_v2(gpushare::interpose::NvmlDevice, gpushare::interpose::NvmlMemoryV2*);
