// The virtual GPU: what a job is told of a device's memory, the same from
// every API. total = min(limit, physical); used = what the job holds
// (its allocations and its contexts' own memory); free = total - used, but
// never more than is physically free (other jobs hold the rest) and never
// negative (accounting.h, virtual_view). Devices this process does not use
// through CUDA are shown as NVML reports them.
#include <cstring>

#include "coord/job/limits.h"
#include "interpose/core/log.h"
#include "interpose/driver/real_nvml.h"
#include "interpose/hooks/hooks.h"

using namespace gpushare::interpose;

namespace {

inline bool disabled() { return g_runtime.settings.disabled; }

MemoryView view_of(int device, std::uint64_t physical_total, std::uint64_t physical_free) {
  return virtual_view(effective_limit(device), physical_total, physical_free,
                      g_runtime.devices[device].budget.held());
}

// The virtual view of an NVML device, or false to report NVML's own numbers.
bool nvml_view(NvmlDevice device, std::uint64_t total, std::uint64_t free, MemoryView* view) {
  if (disabled()) return false;
  const RealNvml& nvml = real_nvml();
  char uuid[96];
  if (nvml.uuid_of == nullptr || nvml.uuid_of(device, uuid, sizeof uuid) != 0) return false;
  int index = device_of_uuid_string(uuid);
  if (index >= 0) {
    *view = view_of(index, total, free);
    return true;
  }
  // Before CUDA is initialised in this process the job still sees its limit
  // (the one it asked for, resolved by the limits' owner against this device).
  if (g_runtime.device_count.load(std::memory_order_acquire) < 0) {
    std::uint64_t limit = gpushare::coord::job::requested_mem_limit(total);
    if (limit == gpushare::kNoLimit) return false;
    *view = virtual_view(limit, total, free, 0);
    return true;
  }
  return false;
}

}  // namespace

CUresult gs_cuMemGetInfo_v2(size_t* free, size_t* total) {
  GS_REAL(cuMemGetInfo_v2);
  size_t physical_free = 0, physical_total = 0;
  CUresult result = real(&physical_free, &physical_total);
  if (result != CUDA_SUCCESS || disabled()) {
    if (free != nullptr) *free = physical_free;
    if (total != nullptr) *total = physical_total;
    return result;
  }
  int device = current_device();
  MemoryView view = device >= 0 ? view_of(device, physical_total, physical_free)
                                : MemoryView{physical_total, physical_free, 0, 0};
  if (free != nullptr) *free = view.free;
  if (total != nullptr) *total = view.total;
  return CUDA_SUCCESS;
}

CUresult gs_cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  GS_REAL(cuDeviceTotalMem_v2);
  CUresult result = real(bytes, device);
  if (result != CUDA_SUCCESS || disabled() || bytes == nullptr) return result;
  init_devices();
  if (device >= 0 && device < g_runtime.device_count.load(std::memory_order_acquire)) {
    std::uint64_t limit = effective_limit(device);
    if (limit < *bytes) *bytes = limit;
  }
  return result;
}

// NVML, reached by programs linked to libnvidia-ml and through our dlsym.
GS_EXPORT NvmlReturn nvmlDeviceGetMemoryInfo(NvmlDevice device, NvmlMemory* memory) {
  const RealNvml& nvml = real_nvml();
  if (nvml.memory_info == nullptr) return 3;  // NVML_ERROR_NOT_SUPPORTED
  NvmlReturn result = nvml.memory_info(device, memory);
  MemoryView view;
  if (result == 0 && memory != nullptr && nvml_view(device, memory->total, memory->free, &view)) {
    memory->total = view.total;
    memory->free = view.free;
    memory->used = view.used;
  }
  return result;
}

GS_EXPORT NvmlReturn nvmlDeviceGetMemoryInfo_v2(NvmlDevice device, NvmlMemoryV2* memory) {
  const RealNvml& nvml = real_nvml();
  if (nvml.memory_info_v2 == nullptr) return 3;  // NVML_ERROR_NOT_SUPPORTED
  NvmlReturn result = nvml.memory_info_v2(device, memory);
  MemoryView view;
  if (result == 0 && memory != nullptr && nvml_view(device, memory->total, memory->free, &view)) {
    memory->total = view.total;
    memory->free = view.free;
    memory->used = view.used;
    memory->reserved = view.reserved;
  }
  return result;
}
