// Virtual memory management: physical memory is charged until it is gone.
//
// cuMemCreate makes physical memory and a handle to it; cuMemMap maps it
// into a reserved range; cuMemRelease drops the handle. As in CUDA, the
// memory is freed only when the handle has been released *and* its last
// mapping unmapped, so releasing while mapped and keeping the mapping holds
// the memory with no handle left. Charging until cuMemRelease let a job
// hold any amount that way.
//
// So each handle we charged carries two counts, in the handle table:
// references (the creation plus every cuMemRetainAllocationHandle, less
// every cuMemRelease) and mappings (cuMemMap less cuMemUnmap). The charge
// goes when both reach zero, in whichever call brings the last one down.
// A second table maps each mapped address to its handle and size, because
// cuMemUnmap names only an address range, which may cover several
// mappings. Mappings of handles we never charged (host memory) are recorded
// too, so that the walk over a range is never cut short.
#include <pthread.h>

#include "interpose/hooks/hooks.h"
#include "interpose/core/log.h"
#include "interpose/memory/vmm_backing.h"

using namespace gpushare::interpose;

namespace {

// Handles we charged -> (bytes, device, references, mappings).
constinit AllocationTable g_handles;
// Mapped address -> (mapping size, handle in `link`).
constinit AllocationTable g_mappings;

inline bool disabled() { return g_runtime.settings.disabled; }

bool valid_device(int device) {
  return device >= 0 && device < g_runtime.device_count.load(std::memory_order_acquire);
}

void forget_after_fork() {
  g_handles.clear();
  g_mappings.clear();
}

__attribute__((constructor)) void register_fork_handler() {
  pthread_atfork(nullptr, nullptr, &forget_after_fork);
}

// Applies the deltas to a charged handle; gives its bytes back when it is gone.
void adjust_handle(std::uint64_t handle, int references, int mappings) {
  AllocationRecord record{0, -1, 0};
  bool gone = false;
  if (!g_handles.adjust(handle, references, mappings, &record, &gone) || !gone) return;
  if (valid_device(record.device)) g_runtime.devices[record.device].budget.release(record.bytes);
  GS_DEBUG("VMM handle %llx gone: %llu bytes back on device %d",
           static_cast<unsigned long long>(handle), static_cast<unsigned long long>(record.bytes),
           record.device);
}

std::atomic<bool> g_ipc_exported{false};

}  // namespace

namespace gpushare::interpose {
std::size_t program_vmm_mappings() { return g_handles.size() + g_mappings.size(); }
bool ipc_exported() { return g_ipc_exported.load(std::memory_order_relaxed); }
}  // namespace gpushare::interpose

// Exported memory is mapped by another process: a suspend cannot move it
// (suspend.h), so the job remembers that it exported any.
CUresult gs_cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr pointer) {
  GS_REAL(cuIpcGetMemHandle);
  CUresult result = real(handle, pointer);
  if (result == CUDA_SUCCESS) g_ipc_exported.store(true, std::memory_order_relaxed);
  return result;
}

CUresult gs_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                        const CUmemAllocationProp* prop, unsigned long long flags) {
  GS_REAL(cuMemCreate);
  if (disabled() || handle == nullptr || prop == nullptr ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return real(handle, size, prop, flags);  // host locations are not device memory
  }
  if (g_runtime.device_count.load(std::memory_order_acquire) < 0) init_devices();
  int device = prop->location.id;
  if (!valid_device(device)) return real(handle, size, prop, flags);
  DeviceBudget& budget = g_runtime.devices[device].budget;
  std::uint64_t limit = effective_limit(device);
  if (!budget.try_reserve(size, limit)) {
    GS_INFO("cuMemCreate(%llu bytes) refused on device %d: holds %llu of %llu bytes",
            static_cast<unsigned long long>(size), device,
            static_cast<unsigned long long>(budget.held()), static_cast<unsigned long long>(limit));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult result = real(handle, size, prop, flags);
  if (result != CUDA_SUCCESS) {
    budget.release(size);
    return result;
  }
  AllocationRecord record{size, device, 0};
  record.references = 1;
  if (!g_handles.insert(*handle, record)) {
    GS_WARN("cuMemCreate: cannot record a handle; its bytes stay charged");
  }
  return CUDA_SUCCESS;
}

CUresult gs_cuMemRelease(CUmemGenericAllocationHandle handle) {
  GS_REAL(cuMemRelease);
  CUresult result = real(handle);
  if (result == CUDA_SUCCESS && !disabled()) adjust_handle(handle, -1, 0);
  return result;
}

CUresult gs_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* address) {
  GS_REAL(cuMemRetainAllocationHandle);
  CUresult result = real(handle, address);
  if (result == CUDA_SUCCESS && !disabled() && handle != nullptr) {
    AllocationRecord record{0, -1, 0};
    bool gone = false;
    g_handles.adjust(*handle, 1, 0, &record, &gone);
  }
  return result;
}

CUresult gs_cuMemMap(CUdeviceptr pointer, size_t size, size_t offset,
                     CUmemGenericAllocationHandle handle, unsigned long long flags) {
  GS_REAL(cuMemMap);
  CUresult result = real(pointer, size, offset, handle, flags);
  if (result != CUDA_SUCCESS || disabled()) return result;
  AllocationRecord mapping{size, -1, 0};
  mapping.link = handle;
  if (!g_mappings.insert(pointer, mapping)) {
    GS_WARN("cuMemMap: cannot record a mapping; its memory stays charged");
    return result;
  }
  AllocationRecord record{0, -1, 0};
  bool gone = false;
  g_handles.adjust(handle, 0, 1, &record, &gone);
  return result;
}

CUresult gs_cuMemUnmap(CUdeviceptr pointer, size_t size) {
  GS_REAL(cuMemUnmap);
  CUresult result = real(pointer, size);
  if (result != CUDA_SUCCESS || disabled()) return result;
  // The range is made of whole mappings (the driver checked): walk them.
  std::uint64_t covered = 0;
  while (covered < size) {
    AllocationRecord mapping{0, -1, 0};
    if (!g_mappings.erase(pointer + covered, &mapping) || mapping.bytes == 0) break;
    covered += mapping.bytes;
    adjust_handle(mapping.link, 0, -1);
  }
  return result;
}
