// VMM-backed plain allocations (the design is in vmm_backing.h).
#include "interpose/memory/vmm_backing.h"

#include <pthread.h>
#include <sys/mman.h>

#include "interpose/core/log.h"
#include "interpose/driver/real_dlsym.h"
#include "interpose/core/runtime.h"
#include "interpose/memory/spill.h"

namespace gpushare::interpose {

namespace {

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;

CUmemAllocationProp device_properties(int device) {
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = device;
  return properties;
}

}  // namespace

void resolve_suspend_entries(void* libcuda, RealDriver* real) {
  real->real_cuMemGetAllocationGranularity =
      reinterpret_cast<PFN_cuMemGetAllocationGranularity_v10020>(
          real_dlsym(libcuda, "cuMemGetAllocationGranularity"));
  real->real_cuMemAddressReserve =
      reinterpret_cast<PFN_cuMemAddressReserve_v10020>(real_dlsym(libcuda, "cuMemAddressReserve"));
  real->real_cuMemAddressFree =
      reinterpret_cast<PFN_cuMemAddressFree_v10020>(real_dlsym(libcuda, "cuMemAddressFree"));
  real->real_cuMemSetAccess =
      reinterpret_cast<PFN_cuMemSetAccess_v10020>(real_dlsym(libcuda, "cuMemSetAccess"));
}

bool vmm_backing() {
  const RealDriver& real = g_runtime.real;
  return g_runtime.settings.suspendable && real.real_cuMemGetAllocationGranularity != nullptr &&
         real.real_cuMemAddressReserve != nullptr && real.real_cuMemAddressFree != nullptr &&
         real.real_cuMemSetAccess != nullptr && real.real_cuMemCreate != nullptr &&
         real.real_cuMemMap != nullptr && real.real_cuMemUnmap != nullptr &&
         real.real_cuMemRelease != nullptr && real.real_cuMemcpyHtoD_v2 != nullptr &&
         real.real_cuMemcpyDtoH_v2 != nullptr && real.real_cuCtxSetCurrent != nullptr;
}

std::uint64_t vmm_rounded(std::uint64_t bytes, int device) {
  CUmemAllocationProp properties = device_properties(device);
  std::size_t granularity = 0;
  if (g_runtime.real.real_cuMemGetAllocationGranularity(
          &granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
      granularity == 0) {
    return 0;
  }
  if (bytes > UINT64_MAX - granularity) return 0;
  return (bytes + granularity - 1) / granularity * granularity;
}

CUresult vmm_map_physical(CUdeviceptr pointer, std::uint64_t bytes, int device,
                          std::uint64_t* handle) {
  RealDriver& real = g_runtime.real;
  CUmemAllocationProp properties = device_properties(device);
  CUmemGenericAllocationHandle physical = 0;
  CUresult result = real.real_cuMemCreate(&physical, bytes, &properties, 0);
  if (result != CUDA_SUCCESS) return result;
  result = real.real_cuMemMap(pointer, bytes, 0, physical, 0);
  if (result != CUDA_SUCCESS) {
    real.real_cuMemRelease(physical);
    return result;
  }
  CUmemAccessDesc access{};
  access.location = properties.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  result = real.real_cuMemSetAccess(pointer, bytes, &access, 1);
  if (result != CUDA_SUCCESS) {
    real.real_cuMemUnmap(pointer, bytes);
    real.real_cuMemRelease(physical);
    return result;
  }
  *handle = physical;
  return CUDA_SUCCESS;
}

CUresult vmm_release_physical(CUdeviceptr pointer, std::uint64_t bytes, std::uint64_t handle,
                              int device) {
  RealDriver& real = g_runtime.real;
  CUresult result = real.real_cuMemUnmap(pointer, bytes);
  if (result != CUDA_SUCCESS) return result;
  result = real.real_cuMemRelease(handle);
  if (result == CUDA_SUCCESS) return result;
  // Still held: map it back, so that nothing changes and no data is lost.
  CUmemAccessDesc access{};
  access.location = device_properties(device).location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (real.real_cuMemMap(pointer, bytes, 0, handle, 0) != CUDA_SUCCESS ||
      real.real_cuMemSetAccess(pointer, bytes, &access, 1) != CUDA_SUCCESS) {
    GS_ERROR("cannot map the allocation at 0x%llx back after a failed release",
             static_cast<unsigned long long>(pointer));
  }
  return result;
}

CUresult allocate_vmm_backed(CUdeviceptr* pointer, std::uint64_t rounded, int device,
                             std::uint64_t* handle) {
  RealDriver& real = g_runtime.real;
  CUdeviceptr range = 0;
  CUresult result = real.real_cuMemAddressReserve(&range, rounded, 0, 0, 0);
  if (result != CUDA_SUCCESS) return result;
  result = vmm_map_physical(range, rounded, device, handle);
  if (result != CUDA_SUCCESS) {
    real.real_cuMemAddressFree(range, rounded);
    return result;
  }
  *pointer = range;
  return CUDA_SUCCESS;
}

bool free_vmm_backed(CUdeviceptr pointer, CUresult* result) {
  AllocationRecord record{0, -1, 0};
  if (!g_runtime.allocations.find(pointer, &record) || record.vmm_backed == 0) return false;
  vmm_lock();
  // A suspend or resume of this allocation has finished (the lock); the
  // record says where it is now.
  if (!g_runtime.allocations.erase(pointer, &record)) {  // a racing free won
    vmm_unlock();
    *result = CUDA_ERROR_INVALID_VALUE;
    return true;
  }
  RealDriver& real = g_runtime.real;
  if (record.suspended != 0) {
    host_copy_free(reinterpret_cast<void*>(record.link), record.bytes);
    g_counters.suspended_bytes[record.device].fetch_sub(record.bytes, std::memory_order_relaxed);
    *result = CUDA_SUCCESS;
  } else {
    *result = vmm_release_physical(pointer, record.bytes, record.link, record.device);
  }
  if (*result == CUDA_SUCCESS) *result = real.real_cuMemAddressFree(pointer, record.bytes);
  if (*result != CUDA_SUCCESS) {
    g_runtime.allocations.insert(pointer, record);  // still allocated
  } else if (record.device >= 0 && record.device < kMaxDevices) {
    g_runtime.devices[record.device].budget.release(record.bytes);
  }
  vmm_unlock();
  return true;
}

void vmm_release_context(std::uint64_t context) {
  if (!g_runtime.settings.suspendable || context == 0) return;
  // Not the hot path (a context's end): a scratch copy of the table's keys.
  std::size_t capacity = g_runtime.allocations.size() + 1;
  void* scratch = host_copy_allocate(capacity * sizeof(std::uint64_t));
  if (scratch == nullptr) return;
  std::uint64_t* keys = static_cast<std::uint64_t*>(scratch);
  std::size_t count = g_runtime.allocations.keys(keys, capacity);
  for (std::size_t i = 0; i < count; ++i) {
    AllocationRecord record;
    if (!g_runtime.allocations.find(keys[i], &record) || record.context != context ||
        record.vmm_backed == 0) {
      continue;
    }
    CUresult result = CUDA_SUCCESS;
    free_vmm_backed(keys[i], &result);
    if (result != CUDA_SUCCESS) {
      GS_WARN("freeing the VMM-backed allocation at 0x%llx of a destroyed context: error %d",
              static_cast<unsigned long long>(keys[i]), static_cast<int>(result));
    }
  }
  host_copy_free(scratch, capacity * sizeof(std::uint64_t));
}

void vmm_lock() { pthread_mutex_lock(&g_mutex); }
void vmm_unlock() { pthread_mutex_unlock(&g_mutex); }

void* host_copy_allocate(std::uint64_t bytes) {
  // Populated at once: one bulk allocation instead of a fault per page.
  void* copy = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return copy == MAP_FAILED ? nullptr : copy;
}

void host_copy_free(void* copy, std::uint64_t bytes) {
  if (copy != nullptr) munmap(copy, bytes);
}

}  // namespace gpushare::interpose
