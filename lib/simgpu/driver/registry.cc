// The process's memory: every allocation the driver handed out, sorted by
// address, so copies and frees can be checked against what really exists;
// and the charges that make the device's capacity shared between processes.
//
// Device memory is anonymous mmap(MAP_NORESERVE) memory: copies move real
// bytes, and a multi-gigabyte allocation costs nothing until touched.
#include <sys/mman.h>

#include <cstdlib>

#include "simgpu/driver/internal.h"

namespace gpushare::simgpu::driver {
namespace {

// Index of the first allocation whose base is greater than `address`.
std::size_t upper_bound(std::uintptr_t address) {
  const Driver& d = sim();
  std::size_t low = 0, high = d.allocation_count;
  while (low < high) {
    std::size_t middle = low + (high - low) / 2;
    if (d.allocations[middle].base <= address) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

bool grow(void** array, std::size_t* capacity, std::size_t element_bytes) {
  std::size_t grown = *capacity == 0 ? 64 : *capacity * 2;
  void* memory = std::realloc(*array, grown * element_bytes);
  if (memory == nullptr) return false;
  *array = memory;
  *capacity = grown;
  return true;
}

}  // namespace

Allocation* find_allocation(std::uintptr_t address) {
  std::size_t index = upper_bound(address);
  if (index == 0) return nullptr;
  Allocation* allocation = &sim().allocations[index - 1];
  return address - allocation->base < allocation->size ? allocation : nullptr;
}

Allocation* find_allocation_at(std::uintptr_t base) {
  Allocation* allocation = find_allocation(base);
  return allocation != nullptr && allocation->base == base ? allocation : nullptr;
}

bool insert_allocation(const Allocation& allocation) {
  Driver& d = sim();
  if (d.allocation_count == d.allocation_capacity) {
    void* array = d.allocations;
    if (!grow(&array, &d.allocation_capacity, sizeof(Allocation))) return false;
    d.allocations = static_cast<Allocation*>(array);
  }
  std::size_t index = upper_bound(allocation.base);
  std::memmove(&d.allocations[index + 1], &d.allocations[index],
               (d.allocation_count - index) * sizeof(Allocation));
  d.allocations[index] = allocation;
  ++d.allocation_count;
  return true;
}

void erase_allocation(Allocation* allocation) {
  Driver& d = sim();
  std::size_t index = static_cast<std::size_t>(allocation - d.allocations);
  std::memmove(&d.allocations[index], &d.allocations[index + 1],
               (d.allocation_count - index - 1) * sizeof(Allocation));
  --d.allocation_count;
}

bool device_range_ok(std::uintptr_t address, std::size_t bytes) {
  const Allocation* allocation = find_allocation(address);
  if (allocation == nullptr) return false;
  if (allocation->kind == AllocKind::kVmmMapping && !allocation->accessible) return false;
  return bytes <= allocation->size - (address - allocation->base);
}

void* map_memory(std::size_t bytes) {
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return memory == MAP_FAILED ? nullptr : memory;
}

void unmap_memory(void* address, std::size_t bytes) {
  if (address != nullptr && bytes > 0) munmap(address, bytes);
}

std::uintptr_t map_and_insert(Allocation allocation, std::size_t bytes) {
  void* memory = map_memory(bytes);
  allocation.base = reinterpret_cast<std::uintptr_t>(memory);
  allocation.size = bytes;
  allocation.mapped_bytes = bytes;
  if (memory == nullptr || !insert_allocation(allocation)) {
    unmap_memory(memory, bytes);
    return 0;
  }
  return allocation.base;
}

namespace {

// Charges `bytes`; an allocation that evicts managed memory, or that needs
// bytes still on their way to the host, waits for that transfer to end
// (through the caller's DeferredWait).
bool charge_and_wait(StateLayout* layout, int device, std::uint64_t bytes) {
  std::uint64_t free_before = device_free(layout, device);
  std::uint64_t evicted = 0;
  if (!charge(layout, sim().slot, device, bytes, &evicted)) return false;
  std::int64_t now = now_ns();
  const DeviceState& state = layout->devices[device];
  std::uint64_t outbound = state.outbound_end_ns > now ? state.outbound_bytes : 0;
  if (outbound > 0 && bytes > (free_before > outbound ? free_before - outbound : 0)) {
    defer_wait_until(state.outbound_end_ns);
  }
  if (evicted > 0) {
    std::int64_t end = reserve_transfer(layout, device, kHostPlace, evicted, now, true);
    note_outbound(layout, device, evicted, end);
    defer_wait_until(end);
  }
  return true;
}

}  // namespace

CUresult charge_device(int device, std::uint64_t bytes) {
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  if (charge_and_wait(shared.layout(), device, bytes)) return CUDA_SUCCESS;
  // Before refusing, give back what dead processes still hold.
  if (reclaim_dead(shared.layout(), process_alive) > 0 &&
      charge_and_wait(shared.layout(), device, bytes)) {
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

void uncharge_device(int device, std::uint64_t bytes) {
  SharedLock shared;
  if (shared.ok()) uncharge(shared.layout(), sim().slot, device, bytes);
}

void free_allocation(Allocation* allocation) {
  switch (allocation->kind) {
    case AllocKind::kDevice:
      uncharge_device(allocation->device, allocation->charged_bytes);
      break;
    case AllocKind::kAsync:
      // The bytes stay reserved (and charged) in the pool until trimmed.
      if (allocation->pool != nullptr && allocation->pool->magic == kPoolMagic) {
        MemPool* pool = allocation->pool;
        pool->used_bytes -=
            allocation->size < pool->used_bytes ? allocation->size : pool->used_bytes;
        pool->cached_bytes += allocation->size;
      } else {
        uncharge_device(allocation->device, allocation->size);
      }
      break;
    case AllocKind::kManaged: {
      SharedLock shared;
      if (shared.ok() && managed_find(shared.layout(), allocation->managed_index, sim().pid,
                                      allocation->managed_id) != nullptr) {
        managed_remove(shared.layout(), allocation->managed_index);
      }
      break;
    }
    case AllocKind::kVmmMapping:
      unmap_vmm(allocation);
      return;  // unmap_vmm erases the record itself
    case AllocKind::kHost:
    case AllocKind::kHostRegistered:
      break;
  }
  unmap_memory(reinterpret_cast<void*>(allocation->base), allocation->mapped_bytes);
  erase_allocation(allocation);
}

void release_context_memory(Context* ctx) {
  Driver& d = sim();
  for (std::size_t i = d.allocation_count; i-- > 0;) {
    Allocation* allocation = &d.allocations[i];
    if (allocation->ctx == ctx && allocation->kind != AllocKind::kVmmMapping) {
      free_allocation(allocation);
    }
  }
  release_context_arrays(ctx);
}

Reservation* find_reservation(std::uintptr_t address, std::size_t bytes) {
  Driver& d = sim();
  for (std::size_t i = 0; i < d.reservation_count; ++i) {
    Reservation& reservation = d.reservations[i];
    if (address >= reservation.base && address - reservation.base < reservation.size &&
        bytes <= reservation.size - (address - reservation.base)) {
      return &reservation;
    }
  }
  return nullptr;
}

}  // namespace gpushare::simgpu::driver
