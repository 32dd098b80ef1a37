// Stream-ordered allocation: a job is charged what its memory pools hold.
//
// A pool keeps freed memory for reuse: with release threshold max it keeps
// all of it, with the default 0 until the next synchronisation. Charging
// requests and giving them back at cuMemFreeAsync therefore let one pool
// per chunk hold any amount. The charge of a pool is
// instead what the driver says it reserves (CU_MEMPOOL_ATTR_RESERVED_MEM_
// CURRENT), on the pool's own device, which need not be the current
// context's: a pool on device 1 used from device 0 holds device 1 memory.
//
// An allocation, under one lock for all pools (allocation is not the launch
// path): settle the pool (its charge := what it reserves now), reserve the
// growth the request can cause (the request less what the pool caches), on
// refusal settle every pool once (caches trimmed at a synchronisation give
// their charge back) and try again, call the driver, and settle the
// difference between the growth reserved and the growth seen. A pool that
// grows by more than was reserved (driver rounding) is charged what it
// took. A free settles its pool after the driver took it back.
//
// A pool's device is known from cuMemPoolCreate, or found among the
// devices' default and current pools. An allocation from a pool we cannot
// place is charged per request on the current device, as before. When a
// pool is destroyed with live allocations, the driver frees them at their
// own free: they become per-request charges, and the cache's charge goes.
//
// What a pool reserves after a synchronisation trimmed it is seen at the
// pool's next allocation or free, or at any refusal: until then the job is
// charged more than it holds, never less.
//
// An opportunistic job's allocations from a pool that is not exportable (a
// device's own pools, or one created without IPC handle types) are not the
// pool's at all: they are managed memory that can spill (spill_async.cc),
// charged per request; their cuMemFreeAsync waits for its stream there.
#include <pthread.h>

#include "interpose/hooks/hooks.h"
#include "interpose/core/log.h"
#include "interpose/memory/pools.h"
#include "interpose/driver/real_dlsym.h"

using namespace gpushare::interpose;

namespace {

// Pools we place: pool -> (bytes charged = what it reserved, device).
constinit AllocationTable g_pools;
// Allocations from pools: pointer -> (bytes, device, context, pool in
// `link`; link 0 = charged per request).
constinit AllocationTable g_pool_allocations;
pthread_mutex_t g_pool_mutex = PTHREAD_MUTEX_INITIALIZER;

struct PoolDriver {
  PFN_cuMemPoolGetAttribute_v11020 get_attribute = nullptr;
  PFN_cuDeviceGetMemPool_v11020 device_pool = nullptr;
  PFN_cuDeviceGetDefaultMemPool_v11020 default_pool = nullptr;
};
PoolDriver g_driver;
pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

void resolve_pool_driver() {
  void* libcuda = g_runtime.libcuda;
  g_driver.get_attribute = reinterpret_cast<PFN_cuMemPoolGetAttribute_v11020>(
      real_dlsym(libcuda, "cuMemPoolGetAttribute"));
  g_driver.device_pool =
      reinterpret_cast<PFN_cuDeviceGetMemPool_v11020>(real_dlsym(libcuda, "cuDeviceGetMemPool"));
  g_driver.default_pool = reinterpret_cast<PFN_cuDeviceGetDefaultMemPool_v11020>(
      real_dlsym(libcuda, "cuDeviceGetDefaultMemPool"));
}

const PoolDriver& pool_driver() {
  pthread_once(&g_driver_once, &resolve_pool_driver);
  return g_driver;
}

void forget_after_fork() {
  g_pools.clear();
  g_pool_allocations.clear();
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  __builtin_memcpy(&g_pool_mutex, &fresh, sizeof fresh);
}

__attribute__((constructor)) void register_fork_handler() {
  pthread_atfork(nullptr, nullptr, &forget_after_fork);
}

inline bool disabled() { return g_runtime.settings.disabled; }

bool valid_device(int device) {
  return device >= 0 && device < g_runtime.device_count.load(std::memory_order_acquire);
}

class PoolLock {
 public:
  PoolLock() { pthread_mutex_lock(&g_pool_mutex); }
  ~PoolLock() { pthread_mutex_unlock(&g_pool_mutex); }
  PoolLock(const PoolLock&) = delete;
  PoolLock& operator=(const PoolLock&) = delete;
};

std::uint64_t key_of(CUmemoryPool pool) { return reinterpret_cast<std::uint64_t>(pool); }

bool pool_attribute(CUmemoryPool pool, CUmemPool_attribute attribute, std::uint64_t* value) {
  const PoolDriver& driver = pool_driver();
  cuuint64_t number = 0;
  if (driver.get_attribute == nullptr ||
      driver.get_attribute(pool, attribute, &number) != CUDA_SUCCESS) {
    return false;
  }
  *value = number;
  return true;
}

// The device of a pool we have not placed yet: a device's default or
// current pool. Records it (charged nothing yet). -1 when not found.
int learn_pool_locked(CUmemoryPool pool) {
  const PoolDriver& driver = pool_driver();
  int count = g_runtime.device_count.load(std::memory_order_acquire);
  for (int device = 0; device < count; ++device) {
    CUmemoryPool found = nullptr;
    bool match = (driver.default_pool != nullptr &&
                  driver.default_pool(&found, device) == CUDA_SUCCESS && found == pool) ||
                 (driver.device_pool != nullptr &&
                  driver.device_pool(&found, device) == CUDA_SUCCESS && found == pool);
    if (match) {
      AllocationRecord record{0, device, 0};
      record.spillable = 1;  // a device's own pool is never exportable
      g_pools.insert(key_of(pool), record);
      return device;
    }
  }
  return -1;
}

// Sets a pool's charge to what it reserves now; *reserved and *used are
// the driver's figures. A pool the driver no longer knows gives its charge
// back and is forgotten (false).
bool settle_locked(CUmemoryPool pool, std::uint64_t* reserved, std::uint64_t* used) {
  AllocationRecord record{0, -1, 0};
  if (!g_pools.find(key_of(pool), &record)) return false;
  DeviceBudget& budget = g_runtime.devices[record.device].budget;
  if (!pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, reserved) ||
      !pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, used)) {
    budget.release(record.bytes);
    g_pools.erase(key_of(pool), &record);
    return false;
  }
  if (*reserved < record.bytes) budget.release(record.bytes - *reserved);
  if (*reserved > record.bytes) budget.charge(*reserved - record.bytes);
  record.bytes = *reserved;
  g_pools.insert(key_of(pool), record);
  return true;
}

void settle_all_locked() {
  std::uint64_t keys[256];
  std::size_t count = g_pools.keys(keys, 256);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t reserved = 0, used = 0;
    settle_locked(reinterpret_cast<CUmemoryPool>(keys[i]), &reserved, &used);
  }
}

bool reserve_growth_locked(int device, std::uint64_t growth) {
  DeviceBudget& budget = g_runtime.devices[device].budget;
  if (budget.try_reserve(growth, effective_limit(device))) return true;
  settle_all_locked();
  if (budget.try_reserve(growth, effective_limit(device))) return true;
  GS_INFO(
      "pool allocation refused on device %d: it may grow the pool by %llu bytes, and the job "
      "holds %llu of %llu",
      device, static_cast<unsigned long long>(growth),
      static_cast<unsigned long long>(budget.held()),
      static_cast<unsigned long long>(effective_limit(device)));
  return false;
}

// An allocation from a pool we cannot place: charged per request.
template <class Allocate>
CUresult allocate_per_request(std::uint64_t bytes, Allocate allocate, CUdeviceptr* pointer) {
  int device = current_device();
  if (!valid_device(device)) return allocate();
  DeviceBudget& budget = g_runtime.devices[device].budget;
  if (!budget.try_reserve(bytes, effective_limit(device))) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult result = wait_for_room(device, bytes, 0, allocate(), allocate);
  if (result != CUDA_SUCCESS) {
    budget.release(bytes);
    return result;
  }
  g_pool_allocations.insert(*pointer, AllocationRecord{bytes, device, current_context()});
  return result;
}

template <class Allocate>
CUresult allocate_from(CUmemoryPool pool, std::uint64_t bytes, CUdeviceptr* pointer,
                       Allocate allocate) {
  if (pointer == nullptr) return allocate();
  PoolLock lock;
  AllocationRecord record{0, -1, 0};
  int device = g_pools.find(key_of(pool), &record) ? record.device : learn_pool_locked(pool);
  std::uint64_t reserved = 0, used = 0;
  if (!valid_device(device) || !settle_locked(pool, &reserved, &used)) {
    return allocate_per_request(bytes, allocate, pointer);
  }
  std::uint64_t cached = reserved > used ? reserved - used : 0;
  std::uint64_t growth = bytes > cached ? bytes - cached : 0;
  if (!reserve_growth_locked(device, growth)) return CUDA_ERROR_OUT_OF_MEMORY;
  // The reserved growth is now part of the pool's charge; the settle after
  // the driver's answer gives back what the pool did not take, or charges
  // what it took beyond.
  g_pools.find(key_of(pool), &record);
  record.bytes += growth;
  g_pools.insert(key_of(pool), record);
  // A production job's allocation the device cannot hold while it is
  // within its limit waits for opportunistic memory to spill (spill.h); the
  // reserved growth tells the coordinator. Other pool calls of the process
  // wait meanwhile (the lock).
  CUresult result = wait_for_room(device, growth, 0, allocate(), allocate);
  if (result == CUDA_SUCCESS) {
    AllocationRecord allocation{bytes, device, current_context()};
    allocation.link = key_of(pool);
    g_pool_allocations.insert(*pointer, allocation);
  }
  settle_locked(pool, &reserved, &used);
  return result;
}

// Whether an allocation from `pool` may be managed memory instead (the pool
// is not exportable: a device's default pool, or one created without IPC
// handle types); its device in *device.
bool pool_may_spill(CUmemoryPool pool, int* device) {
  PoolLock lock;
  AllocationRecord record{0, -1, 0};
  if (!g_pools.find(key_of(pool), &record)) {
    record.device = learn_pool_locked(pool);
    record.spillable = record.device >= 0 ? 1 : 0;
  }
  *device = record.device;
  return record.spillable != 0 && valid_device(record.device);
}

// An opportunistic job's stream-ordered allocation from `pool`, backed by
// managed memory on the pool's device (spill_async.cc) when the pool may
// be. False when it stays the pool's.
bool spillable_pool_allocation(const char* api, CUdeviceptr* pointer, std::uint64_t bytes,
                               CUmemoryPool pool, CUstream stream, bool per_thread,
                               CUresult* result) {
  int device = -1;
  if (pointer == nullptr || bytes == 0 || pool == nullptr || !managed_backing() ||
      !pool_may_spill(pool, &device)) {
    return false;
  }
  *result = allocate_spillable_async(api, pointer, bytes, device, stream, per_thread);
  return true;
}

CUresult allocate_async(const char* api, CUdeviceptr* pointer, std::uint64_t bytes,
                        CUresult (*call)(CUdeviceptr*, size_t, CUstream), CUstream stream,
                        bool per_thread) {
  int device = current_device();
  const PoolDriver& driver = pool_driver();
  CUmemoryPool pool = nullptr;
  if (!valid_device(device) || driver.device_pool == nullptr ||
      driver.device_pool(&pool, device) != CUDA_SUCCESS) {
    PoolLock lock;
    return allocate_per_request(
        bytes, [&] { return call(pointer, bytes, stream); }, pointer);
  }
  CUresult spilled = CUDA_SUCCESS;
  if (spillable_pool_allocation(api, pointer, bytes, pool, stream, per_thread, &spilled))
    return spilled;
  return allocate_from(pool, bytes, pointer, [&] { return call(pointer, bytes, stream); });
}

}  // namespace

namespace gpushare::interpose {

bool pool_take(std::uint64_t pointer, AllocationRecord* record) {
  return g_pool_allocations.erase(pointer, record);
}

void pool_after_free(std::uint64_t pointer, const AllocationRecord& record, bool freed) {
  if (!freed) {
    g_pool_allocations.insert(pointer, record);
    return;
  }
  if (record.link == 0) {
    if (valid_device(record.device)) g_runtime.devices[record.device].budget.release(record.bytes);
    return;
  }
  PoolLock lock;
  std::uint64_t reserved = 0, used = 0;
  settle_locked(reinterpret_cast<CUmemoryPool>(record.link), &reserved, &used);
}

}  // namespace gpushare::interpose

CUresult gs_cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  GS_REAL(cuMemAllocAsync);
  if (disabled()) return real(dptr, bytesize, stream);
  return allocate_async("cuMemAllocAsync", dptr, bytesize, real, stream, false);
}

CUresult gs_cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  GS_REAL(cuMemAllocAsync_ptsz);
  if (disabled()) return real(dptr, bytesize, stream);
  return allocate_async("cuMemAllocAsync_ptsz", dptr, bytesize, real, stream, true);
}

CUresult gs_cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                    CUstream stream) {
  GS_REAL(cuMemAllocFromPoolAsync);
  if (disabled()) return real(dptr, bytesize, pool, stream);
  if (g_runtime.device_count.load(std::memory_order_acquire) < 0) init_devices();
  CUresult spilled = CUDA_SUCCESS;
  if (spillable_pool_allocation("cuMemAllocFromPoolAsync", dptr, bytesize, pool, stream, false,
                                &spilled)) {
    return spilled;
  }
  return allocate_from(pool, bytesize, dptr, [&] { return real(dptr, bytesize, pool, stream); });
}

CUresult gs_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream stream) {
  GS_REAL(cuMemAllocFromPoolAsync_ptsz);
  if (disabled()) return real(dptr, bytesize, pool, stream);
  if (g_runtime.device_count.load(std::memory_order_acquire) < 0) init_devices();
  CUresult spilled = CUDA_SUCCESS;
  if (spillable_pool_allocation("cuMemAllocFromPoolAsync_ptsz", dptr, bytesize, pool, stream, true,
                                &spilled)) {
    return spilled;
  }
  return allocate_from(pool, bytesize, dptr, [&] { return real(dptr, bytesize, pool, stream); });
}

namespace {

// A stream-ordered free, whichever variant: a pool's allocation goes back
// to its pool's charge; anything else is an ordinary allocation freed
// stream-ordered.
template <typename Free>
CUresult free_async(CUdeviceptr dptr, CUstream stream, bool per_thread, Free free_it) {
  if (disabled()) return free_it();
  CUresult deferred = CUDA_SUCCESS;
  if (free_spillable_async(dptr, stream, per_thread, &deferred)) return deferred;
  AllocationRecord record{0, -1, 0};
  if (!pool_take(dptr, &record)) return free_charged(dptr, free_it);
  CUresult result = free_it();
  pool_after_free(dptr, record, result == CUDA_SUCCESS);
  return result;
}

}  // namespace

CUresult gs_cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  GS_REAL(cuMemFreeAsync);
  return free_async(dptr, stream, false, [&] { return real(dptr, stream); });
}

CUresult gs_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  GS_REAL(cuMemFreeAsync_ptsz);
  return free_async(dptr, stream, true, [&] { return real(dptr, stream); });
}

CUresult gs_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  GS_REAL(cuMemPoolCreate);
  CUresult result = real(pool, props);
  if (result != CUDA_SUCCESS || disabled() || pool == nullptr || props == nullptr ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return result;
  }
  if (g_runtime.device_count.load(std::memory_order_acquire) < 0) init_devices();
  if (valid_device(props->location.id)) {
    PoolLock lock;
    AllocationRecord record{0, props->location.id, 0};
    // An exportable pool's memory must stay the pool's (IPC handles).
    record.spillable = props->handleTypes == CU_MEM_HANDLE_TYPE_NONE ? 1 : 0;
    g_pools.insert(key_of(*pool), record);
  }
  return result;
}

CUresult gs_cuMemPoolDestroy(CUmemoryPool pool) {
  GS_REAL(cuMemPoolDestroy);
  if (disabled()) return real(pool);
  PoolLock lock;
  CUresult result = real(pool);
  AllocationRecord record{0, -1, 0};
  if (result != CUDA_SUCCESS || !g_pools.erase(key_of(pool), &record)) return result;
  // Its live allocations are freed at their own free: charge them per
  // request from now on; the rest of the pool's charge (its cache) goes.
  std::uint64_t live = g_pool_allocations.relink(key_of(pool), 0);
  if (record.bytes > live) g_runtime.devices[record.device].budget.release(record.bytes - live);
  if (live > record.bytes) g_runtime.devices[record.device].budget.charge(live - record.bytes);
  return result;
}

CUresult gs_cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  GS_REAL(cuMemPoolTrimTo);
  CUresult result = real(pool, keep);
  if (result == CUDA_SUCCESS && !disabled()) {
    PoolLock lock;
    std::uint64_t reserved = 0, used = 0;
    settle_locked(pool, &reserved, &used);
  }
  return result;
}

namespace gpushare::interpose {

// Suspend (memory/suspend.h): pool memory stays on the device, so a job
// whose pools hold any cannot be suspended.
bool pools_hold_memory() {
  if (g_pool_allocations.size() != 0) return true;
  std::uint64_t keys[256];
  std::size_t count = g_pools.keys(keys, 256);
  for (std::size_t i = 0; i < count; ++i) {
    AllocationRecord record;
    if (g_pools.find(keys[i], &record) && record.bytes != 0) return true;
  }
  return false;
}

}  // namespace gpushare::interpose
