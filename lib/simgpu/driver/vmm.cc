// Virtual memory management: physical allocations (cuMemCreate) mapped
// into reserved address ranges (cuMemAddressReserve, cuMemMap) and made
// accessible (cuMemSetAccess).
//
// A physical allocation is a memfd charged to its device at creation; a
// mapping is mmap(MAP_SHARED | MAP_FIXED) of it over the reservation, so
// two mappings of one handle alias the same bytes, and the range stays
// PROT_NONE until cuMemSetAccess, so touching it too early faults as on a
// GPU. The charge goes when the handle is released and no longer mapped.
#include <sys/mman.h>
#include <unistd.h>

#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

constexpr std::size_t kGranularity = 2u << 20;

VmmHandle* lookup_handle(CUmemGenericAllocationHandle handle) {
  VmmHandle* vmm = reinterpret_cast<VmmHandle*>(static_cast<std::uintptr_t>(handle));
  if (vmm == nullptr || !sim().vmm_handles.owns(vmm) || vmm->magic != kVmmMagic) return nullptr;
  return vmm;
}

void destroy_if_unused(VmmHandle* vmm) {
  if (vmm->references > 0 || vmm->mappings > 0) return;
  uncharge_device(vmm->device, vmm->size_bytes);
  ::close(vmm->memfd);
  sim().vmm_handles.release(vmm);
}

bool valid_device_location(const CUmemLocation& location) {
  return location.type == CU_MEM_LOCATION_TYPE_DEVICE && location.id >= 0 &&
         location.id < sim().device_count;
}

// The state-file index of a validated device location.
int physical_of(const CUmemLocation& location) { return sim().visible[location.id]; }

bool overlaps_allocation(std::uintptr_t base, std::size_t size) {
  const Driver& d = sim();
  for (std::size_t i = 0; i < d.allocation_count; ++i) {
    const Allocation& allocation = d.allocations[i];
    if (allocation.base < base + size && base < allocation.base + allocation.size) return true;
  }
  return false;
}

// The mappings exactly covering [base, base + size), in order; false if
// the range is not made of whole mappings.
template <class F>
bool each_mapping(std::uintptr_t base, std::size_t size, F f) {
  std::size_t covered = 0;
  while (covered < size) {
    Allocation* mapping = find_allocation_at(base + covered);
    if (mapping == nullptr || mapping->kind != AllocKind::kVmmMapping) return false;
    covered += mapping->size;
  }
  if (covered != size) return false;
  covered = 0;
  while (covered < size) {
    Allocation* mapping = find_allocation_at(base + covered);
    covered += mapping->size;
    f(mapping);
  }
  return true;
}

}  // namespace

namespace gpushare::simgpu::driver {

void unmap_vmm(Allocation* mapping) {
  // Back to a reserved, inaccessible range.
  mmap(reinterpret_cast<void*>(mapping->base), mapping->size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  VmmHandle* vmm = mapping->vmm;
  erase_allocation(mapping);
  if (vmm != nullptr && vmm->magic == kVmmMagic) {
    --vmm->mappings;
    destroy_if_unused(vmm);
  }
}

}  // namespace gpushare::simgpu::driver

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                  const CUmemAllocationProp* properties,
                                                  CUmemAllocationGranularity_flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (granularity == nullptr || properties == nullptr ||
      properties->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      !valid_device_location(properties->location)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                const CUmemAllocationProp* properties, unsigned long long flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr || properties == nullptr || flags != 0 || size == 0 ||
      size % kGranularity != 0 || properties->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      !valid_device_location(properties->location)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int device = physical_of(properties->location);
  DeferredWait wait;  // for an eviction the allocation causes, after unlocking
  LocalLock lock;
  if (CUresult status = charge_device(device, size); status != CUDA_SUCCESS) return status;
  int memfd = memfd_create("gpushare-sim-vmm", MFD_CLOEXEC);
  VmmHandle* vmm = nullptr;
  if (memfd >= 0 && ftruncate(memfd, static_cast<off_t>(size)) == 0) {
    vmm = sim().vmm_handles.acquire();
  }
  if (vmm == nullptr) {
    if (memfd >= 0) ::close(memfd);
    uncharge_device(device, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  vmm->device = device;
  vmm->size_bytes = size;
  vmm->memfd = memfd;
  vmm->references = 1;
  vmm->magic = kVmmMagic;
  *handle = reinterpret_cast<std::uintptr_t>(vmm);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  VmmHandle* vmm = lookup_handle(handle);
  if (vmm == nullptr || vmm->references == 0) return CUDA_ERROR_INVALID_VALUE;
  --vmm->references;
  destroy_if_unused(vmm);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* result, size_t size, size_t alignment,
                                        CUdeviceptr hint, unsigned long long flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (alignment == 0) alignment = kGranularity;
  if (result == nullptr || flags != 0 || size == 0 || size % kGranularity != 0 ||
      (alignment & (alignment - 1)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LocalLock lock;
  Driver& d = sim();
  if (d.reservation_count == d.reservation_capacity) {
    std::size_t grown = d.reservation_capacity == 0 ? 16 : d.reservation_capacity * 2;
    void* memory = std::realloc(d.reservations, grown * sizeof(Reservation));
    if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    d.reservations = static_cast<Reservation*>(memory);
    d.reservation_capacity = grown;
  }
  std::size_t span = size + alignment;
  void* memory = mmap(reinterpret_cast<void*>(hint), span, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::uintptr_t start = reinterpret_cast<std::uintptr_t>(memory);
  std::uintptr_t aligned = (start + alignment - 1) & ~(static_cast<std::uintptr_t>(alignment) - 1);
  if (aligned > start) munmap(memory, aligned - start);
  std::uintptr_t end = start + span;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  d.reservations[d.reservation_count++] = Reservation{aligned, size};
  *result = aligned;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr pointer, size_t size) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Driver& d = sim();
  for (std::size_t i = 0; i < d.reservation_count; ++i) {
    Reservation& reservation = d.reservations[i];
    if (reservation.base != pointer || reservation.size != size) continue;
    if (overlaps_allocation(pointer, size)) return CUDA_ERROR_INVALID_VALUE;  // still mapped
    munmap(reinterpret_cast<void*>(pointer), size);
    reservation = d.reservations[--d.reservation_count];
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr pointer, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (flags != 0 || size == 0 || pointer % kGranularity != 0 || size % kGranularity != 0 ||
      offset % kGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LocalLock lock;
  VmmHandle* vmm = lookup_handle(handle);
  if (vmm == nullptr || vmm->references == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (offset > vmm->size_bytes || size > vmm->size_bytes - offset) return CUDA_ERROR_INVALID_VALUE;
  if (find_reservation(pointer, size) == nullptr || overlaps_allocation(pointer, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* mapped = mmap(reinterpret_cast<void*>(pointer), size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                      vmm->memfd, static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation mapping{};
  mapping.base = pointer;
  mapping.size = size;
  mapping.kind = AllocKind::kVmmMapping;
  mapping.device = vmm->device;
  mapping.vmm = vmm;
  if (!insert_allocation(mapping)) {
    mmap(mapped, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ++vmm->mappings;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr pointer, size_t size) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  // Validate the whole range first, then unmap mapping by mapping (each
  // unmap_vmm shifts the registry, so look each one up afresh).
  if (!each_mapping(pointer, size, [](Allocation*) {})) return CUDA_ERROR_INVALID_VALUE;
  std::size_t covered = 0;
  while (covered < size) {
    Allocation* mapping = find_allocation_at(pointer + covered);
    covered += mapping->size;
    unmap_vmm(mapping);
  }
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr pointer, size_t size,
                                   const CUmemAccessDesc* descriptors, size_t count) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (descriptors == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  int protection = PROT_NONE;
  for (std::size_t i = 0; i < count; ++i) {
    if (!valid_device_location(descriptors[i].location)) return CUDA_ERROR_INVALID_DEVICE;
    switch (descriptors[i].flags) {
      case CU_MEM_ACCESS_FLAGS_PROT_NONE:
        break;
      case CU_MEM_ACCESS_FLAGS_PROT_READ:
        protection |= PROT_READ;
        break;
      case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
        protection |= PROT_READ | PROT_WRITE;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  LocalLock lock;
  bool ok = each_mapping(pointer, size, [&](Allocation* mapping) {
    mprotect(reinterpret_cast<void*>(mapping->base), mapping->size, protection);
    mapping->accessible = (protection & PROT_WRITE) != 0;
  });
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                                void* address) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Allocation* mapping = find_allocation(reinterpret_cast<std::uintptr_t>(address));
  if (mapping == nullptr || mapping->kind != AllocKind::kVmmMapping || mapping->vmm == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  ++mapping->vmm->references;
  *handle = reinterpret_cast<std::uintptr_t>(mapping->vmm);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* properties,
                                                           CUmemGenericAllocationHandle handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (properties == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  VmmHandle* vmm = lookup_handle(handle);
  if (vmm == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memset(properties, 0, sizeof *properties);
  properties->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties->location.id = visible_device(vmm->device);
  return CUDA_SUCCESS;
}
