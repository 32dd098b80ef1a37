// Device and host memory: cuMemAlloc, cuMemAllocPitch, cuMemFree, memory
// information, pinned host allocations and registrations.
//
// Sizes are charged exactly as requested (pitched allocations as pitch x
// height): no rounding to pages, so tests can reason in exact bytes.
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

constexpr std::size_t kPitchAlignment = 512;
constexpr unsigned kHostAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

CUresult allocate_device(CUdeviceptr* result, std::size_t bytes) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  DeferredWait wait;  // for an eviction the allocation causes, after unlocking
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  if (CUresult status = charge_device(ctx->device, bytes); status != CUDA_SUCCESS) return status;
  Allocation allocation{};
  allocation.kind = AllocKind::kDevice;
  allocation.ctx = ctx;
  allocation.device = ctx->device;
  allocation.charged_bytes = bytes;
  std::uintptr_t base = map_and_insert(allocation, bytes);
  if (base == 0) {
    uncharge_device(ctx->device, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *result = base;
  return CUDA_SUCCESS;
}

CUresult allocate_host(void** result, std::size_t bytes, unsigned flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr || bytes == 0 || (flags & ~kHostAllocFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Allocation allocation{};
  allocation.kind = AllocKind::kHost;
  allocation.ctx = ctx;
  allocation.device = ctx->device;
  allocation.host_flags = flags;
  std::uintptr_t base = map_and_insert(allocation, bytes);
  if (base == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *result = reinterpret_cast<void*>(base);
  return CUDA_SUCCESS;
}

}  // namespace

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* result, size_t bytes) {
  return allocate_device(result, bytes);
}

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* result, size_t* pitch, size_t width_bytes,
                                       size_t height, unsigned int element_bytes) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (pitch == nullptr || width_bytes == 0 || height == 0 ||
      (element_bytes != 4 && element_bytes != 8 && element_bytes != 16)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::size_t rounded = (width_bytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  std::size_t total = 0;
  if (rounded < width_bytes || __builtin_mul_overflow(rounded, height, &total)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult status = allocate_device(result, total);
  if (status == CUDA_SUCCESS) *pitch = rounded;
  return status;
}

// Whether `pointer` is what cuMemFree may free: the start of a device,
// managed or stream-ordered allocation. Under LocalLock.
static bool freeable(CUdeviceptr pointer) {
  const Allocation* allocation = find_allocation_at(pointer);
  return allocation != nullptr &&
         (allocation->kind == AllocKind::kDevice || allocation->kind == AllocKind::kManaged ||
          allocation->kind == AllocKind::kAsync);
}

// cuMemFree waits, as the driver's does, for the work queued in the
// context before it (the driver documents cuMemFree as synchronous; its
// stream-ordered cuMemFreeAsync is not, and returns at once): memory a
// program frees behind queued kernels stays in use until they ran. On an
// H100 a cudaFree behind ten queued matrix products returned after 213 ms.
// The memory of a free that waited is released only after the wait, so it
// shows in the device's usage (NVML) for as long as on a real GPU.
SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr pointer) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Context* ctx = nullptr;
  Ready queued;
  {
    LocalLock lock;
    if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
    // Freeing twice, or an address that is not the start of a device
    // allocation, is CUDA_ERROR_INVALID_VALUE, as with the real driver.
    if (!freeable(pointer)) return CUDA_ERROR_INVALID_VALUE;
    queued = ctx->all_ready;
  }
  if (CUresult status = wait_ready(ctx->device, queued); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  if (!context_alive(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!freeable(pointer)) return CUDA_ERROR_INVALID_VALUE;  // freed by another thread meanwhile
  free_allocation(find_allocation_at(pointer));
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  // What killed processes held is free on a real GPU as soon as they are
  // gone; here it is given back lazily, so before answering (at most once
  // a millisecond per process: it reads /proc for every process attached,
  // and an opportunistic job asks before each allocation).
  static std::int64_t last_reclaim_ns = 0;  // under LocalLock
  if (std::int64_t now = now_ns(); now - last_reclaim_ns >= 1'000'000) {
    reclaim_dead(shared.layout(), process_alive);
    last_reclaim_ns = now;
  }
  std::uint64_t used = device_used(shared.layout(), ctx->device);
  std::uint64_t total = shared.layout()->devices[ctx->device].memory_bytes;
  *total_bytes = total;
  *free_bytes = used < total ? total - used : 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr pointer) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  const Allocation* allocation = find_allocation(pointer);
  if (allocation == nullptr || allocation->kind == AllocKind::kHostRegistered) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (base != nullptr) *base = allocation->base;
  if (size != nullptr) *size = allocation->size;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void** result, size_t bytes) {
  return allocate_host(result, bytes, 0);
}

SIM_EXPORT CUresult cuMemHostAlloc(void** result, size_t bytes, unsigned int flags) {
  return allocate_host(result, bytes, flags);
}

SIM_EXPORT CUresult cuMemFreeHost(void* pointer) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Allocation* allocation = find_allocation_at(reinterpret_cast<std::uintptr_t>(pointer));
  if (allocation == nullptr || allocation->kind != AllocKind::kHost)
    return CUDA_ERROR_INVALID_VALUE;
  free_allocation(allocation);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostRegister_v2(void* pointer, size_t bytes, unsigned int flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (pointer == nullptr || bytes == 0 || (flags & ~kHostRegisterFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  std::uintptr_t base = reinterpret_cast<std::uintptr_t>(pointer);
  if (find_allocation(base) != nullptr || find_allocation(base + bytes - 1) != nullptr) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  Allocation allocation{};
  allocation.base = base;
  allocation.size = bytes;
  allocation.kind = AllocKind::kHostRegistered;
  allocation.ctx = ctx;
  allocation.device = ctx->device;
  allocation.host_flags = flags;
  return insert_allocation(allocation) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuMemHostRegister(void* pointer, size_t bytes, unsigned int flags) {
  return cuMemHostRegister_v2(pointer, bytes, flags);
}

SIM_EXPORT CUresult cuMemHostUnregister(void* pointer) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Allocation* allocation = find_allocation_at(reinterpret_cast<std::uintptr_t>(pointer));
  if (allocation == nullptr || allocation->kind != AllocKind::kHostRegistered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  free_allocation(allocation);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* result, void* pointer,
                                                 unsigned int flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  const Allocation* allocation = find_allocation(reinterpret_cast<std::uintptr_t>(pointer));
  if (allocation == nullptr ||
      (allocation->kind != AllocKind::kHost && allocation->kind != AllocKind::kHostRegistered)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Unified addressing: the device sees host memory at the same address.
  *result = reinterpret_cast<CUdeviceptr>(pointer);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostGetFlags(unsigned int* flags, void* pointer) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  const Allocation* allocation = find_allocation(reinterpret_cast<std::uintptr_t>(pointer));
  if (allocation == nullptr || allocation->kind != AllocKind::kHost)
    return CUDA_ERROR_INVALID_VALUE;
  *flags = allocation->host_flags;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                          CUdeviceptr pointer) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  const Allocation* allocation = find_allocation(pointer);
  if (allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool host =
      allocation->kind == AllocKind::kHost || allocation->kind == AllocKind::kHostRegistered;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(allocation->ctx);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = pointer;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!host && allocation->kind != AllocKind::kManaged) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(pointer);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned*>(data) = allocation->kind == AllocKind::kManaged;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = visible_device(allocation->device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = allocation->base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = allocation->size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<int*>(data) = 1;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}
