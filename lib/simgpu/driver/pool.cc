// Stream-ordered allocation and memory pools.
//
// A pool's reserved bytes are live allocations plus freed bytes it keeps
// for reuse; all of them are charged to the device, as a real pool's
// physical memory is. An allocation takes cached bytes first and charges
// only the rest. At a stream, event or context synchronisation, a pool
// holding more cached bytes than its release threshold (0 by default)
// gives the excess back, as CUDA documents; cuMemPoolTrimTo does so at once.
// (Bytes are pooled by count, not by address range: no fragmentation.)
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

MemPool* lookup_pool(CUmemoryPool handle) {
  MemPool* pool = reinterpret_cast<MemPool*>(handle);
  if (pool == nullptr || !sim().pools.owns(pool) || pool->magic != kPoolMagic) return nullptr;
  return pool;
}

MemPool* new_pool(int device, bool is_default) {
  MemPool* pool = sim().pools.acquire();
  if (pool == nullptr) return nullptr;
  pool->device = device;
  pool->is_default = is_default;
  pool->reuse[0] = pool->reuse[1] = pool->reuse[2] = 1;
  pool->magic = kPoolMagic;
  return pool;
}

void trim(MemPool* pool, std::uint64_t keep_bytes) {
  if (pool->cached_bytes <= keep_bytes) return;
  uncharge_device(pool->device, pool->cached_bytes - keep_bytes);
  pool->cached_bytes = keep_bytes;
}

CUresult allocate_from(CUdeviceptr* result, std::size_t bytes, MemPool* pool, CUstream handle,
                       bool per_thread) {
  if (result == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Stream* stream = nullptr;
  if (CUresult status = resolve_stream(ctx, handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t from_cache = bytes < pool->cached_bytes ? bytes : pool->cached_bytes;
  std::uint64_t fresh = bytes - from_cache;
  if (fresh > 0) {
    if (CUresult status = charge_device(pool->device, fresh); status != CUDA_SUCCESS) {
      // Under pressure, what other pools of the device cache goes first.
      sim().pools.for_each([&](MemPool* other) {
        if (other->magic == kPoolMagic && other != pool && other->device == pool->device) {
          trim(other, 0);
        }
      });
      if (CUresult retry = charge_device(pool->device, fresh); retry != CUDA_SUCCESS) return retry;
    }
  }
  Allocation allocation{};
  allocation.kind = AllocKind::kAsync;
  allocation.ctx = ctx;
  allocation.device = pool->device;
  allocation.pool = pool;
  std::uintptr_t base = map_and_insert(allocation, bytes);
  if (base == 0) {
    if (fresh > 0) uncharge_device(pool->device, fresh);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pool->cached_bytes -= from_cache;
  pool->used_bytes += bytes;
  if (pool->used_bytes > pool->used_high) pool->used_high = pool->used_bytes;
  std::uint64_t reserved = pool->used_bytes + pool->cached_bytes;
  if (reserved > pool->reserved_high) pool->reserved_high = reserved;
  *result = base;
  return CUDA_SUCCESS;
}

CUresult allocate_async(CUdeviceptr* result, size_t bytes, CUstream stream, bool per_thread) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  DeferredWait wait;  // for an eviction the allocation causes, after unlocking
  LocalLock lock;
  Context* ctx = current_context();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  MemPool* pool = sim().current_pool[ctx->device];
  if (pool == nullptr || pool->magic != kPoolMagic) pool = device_default_pool(ctx->device);
  return allocate_from(result, bytes, pool, stream, per_thread);
}

CUresult allocate_from_pool(CUdeviceptr* result, size_t bytes, CUmemoryPool handle, CUstream stream,
                            bool per_thread) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  DeferredWait wait;
  LocalLock lock;
  MemPool* pool = lookup_pool(handle);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocate_from(result, bytes, pool, stream, per_thread);
}

CUresult free_async(CUdeviceptr pointer, CUstream handle, bool per_thread) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Stream* stream = nullptr;
  if (CUresult status = resolve_stream(ctx, handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  Allocation* allocation = find_allocation_at(pointer);
  if (allocation == nullptr ||
      (allocation->kind != AllocKind::kAsync && allocation->kind != AllocKind::kDevice)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  free_allocation(allocation);
  return CUDA_SUCCESS;
}

}  // namespace

namespace gpushare::simgpu::driver {

MemPool* device_default_pool(int device) {
  Driver& d = sim();
  MemPool*& pool = d.default_pool[device];
  if (pool == nullptr) pool = new_pool(device, true);
  return pool;
}

void trim_pools_at_sync() {
  sim().pools.for_each([](MemPool* pool) {
    if (pool->magic == kPoolMagic) trim(pool, pool->release_threshold);
  });
}

}  // namespace gpushare::simgpu::driver

SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* result, size_t bytes, CUstream stream) {
  return allocate_async(result, bytes, stream, false);
}
SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* result, size_t bytes, CUstream stream) {
  return allocate_async(result, bytes, stream, true);
}
SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* result, size_t bytes, CUmemoryPool pool,
                                            CUstream stream) {
  return allocate_from_pool(result, bytes, pool, stream, false);
}
SIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* result, size_t bytes,
                                                 CUmemoryPool pool, CUstream stream) {
  return allocate_from_pool(result, bytes, pool, stream, true);
}
SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) {
  return free_async(pointer, stream, false);
}
SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr pointer, CUstream stream) {
  return free_async(pointer, stream, true);
}

SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* result, const CUmemPoolProps* properties) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr || properties == nullptr ||
      properties->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      properties->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int device = 0;
  if (CUresult status = physical_device(properties->location.id, &device); status != CUDA_SUCCESS) {
    return status;
  }
  LocalLock lock;
  MemPool* pool = new_pool(device, false);
  if (pool == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *result = reinterpret_cast<CUmemoryPool>(pool);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  MemPool* pool = lookup_pool(handle);
  if (pool == nullptr || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  // Live allocations keep their charge until freed; the cache goes now.
  trim(pool, 0);
  Driver& d = sim();
  for (std::size_t i = 0; i < d.allocation_count; ++i) {
    if (d.allocations[i].pool == pool) d.allocations[i].pool = nullptr;
  }
  if (d.current_pool[pool->device] == pool) d.current_pool[pool->device] = nullptr;
  d.pools.release(pool);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool handle, size_t keep_bytes) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  MemPool* pool = lookup_pool(handle);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  trim(pool, keep_bytes);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool handle, CUmemPool_attribute attribute,
                                          void* value) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  MemPool* pool = lookup_pool(handle);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t number = 0;
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse[attribute - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] =
          *static_cast<int*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      std::memcpy(&pool->release_threshold, value, sizeof number);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      // Only resetting to zero is allowed; it restarts the high-water mark.
      std::memcpy(&number, value, sizeof number);
      if (number != 0) return CUDA_ERROR_INVALID_VALUE;
      if (attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
        pool->used_high = pool->used_bytes;
      } else {
        pool->reserved_high = pool->used_bytes + pool->cached_bytes;
      }
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool handle, CUmemPool_attribute attribute,
                                          void* value) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  MemPool* pool = lookup_pool(handle);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t number = 0;
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) =
          pool->reuse[attribute - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      number = pool->release_threshold;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      number = pool->used_bytes + pool->cached_bytes;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      number = pool->reserved_high;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      number = pool->used_bytes;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      number = pool->used_high;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(value, &number, sizeof number);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* result, CUdevice device) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = physical_device(device, &device); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  MemPool* pool = device_default_pool(device);
  if (pool == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *result = reinterpret_cast<CUmemoryPool>(pool);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* result, CUdevice device) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = physical_device(device, &device); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  MemPool* pool = sim().current_pool[device];
  if (pool == nullptr || pool->magic != kPoolMagic) pool = device_default_pool(device);
  if (pool == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *result = reinterpret_cast<CUmemoryPool>(pool);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice device, CUmemoryPool handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (CUresult status = physical_device(device, &device); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  MemPool* pool = lookup_pool(handle);
  if (pool == nullptr || pool->device != device) return CUDA_ERROR_INVALID_VALUE;
  sim().current_pool[device] = pool;
  return CUDA_SUCCESS;
}
