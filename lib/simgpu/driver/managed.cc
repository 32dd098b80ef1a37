// Managed (unified) memory with device residency.
//
// Each managed allocation has a record in the state file saying how many of
// its bytes are on the device; those count against the device's capacity,
// the rest live on the host. The model (documented in gpushare-workload(1)):
//   - cuMemAllocManaged places the bytes on the device as far as free
//     memory allows (CU_MEM_ATTACH_HOST: on the host);
//   - an allocation that does not fit (cuMemAlloc, cuMemCreate, a pool's
//     growth, an array, a context) first evicts managed bytes of any
//     process to the host (memory_state.cc says in which order) and waits
//     for the eviction on the copy path (transfer.cc);
//   - cuMemPrefetchAsync moves bytes between host and device in stream
//     order on the copy path; to the device it moves what fits after
//     evicting memory that does not prefer the device, never more;
//   - cuMemAdvise records a preferred location (which orders eviction),
//     accessed-by and read-mostly; advice moves no bytes by itself;
//   - cuMemRangeGetAttribute(s) answers that advice and the last location
//     a whole allocation was prefetched to, as the real driver does: what
//     was asked, never where the bytes are (an eviction changes nothing
//     there; NVML's per-process usage shows the bytes on the device);
//   - kernels do not migrate pages on access; instead a kernel runs longer
//     in proportion to the share of its context's managed bytes on the host
//     (launch.cc).
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

// The managed allocation holding [pointer, pointer + bytes), if any.
Allocation* managed_range(CUdeviceptr pointer, std::size_t bytes) {
  Allocation* allocation = find_allocation(pointer);
  if (allocation == nullptr || allocation->kind != AllocKind::kManaged) return nullptr;
  if (bytes > allocation->size - (pointer - allocation->base)) return nullptr;
  return allocation;
}

// CU_DEVICE_CPU / a host location means the host; else a device ordinal.
bool to_host(int device_or_cpu) { return device_or_cpu == CU_DEVICE_CPU; }

// An API device ordinal (or CU_DEVICE_CPU) as a state-file index (or CPU).
CUresult to_physical(int* device_or_cpu) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (to_host(*device_or_cpu)) return CUDA_SUCCESS;
  return physical_device(*device_or_cpu, device_or_cpu);
}

CUresult advise(CUdeviceptr pointer, size_t bytes, CUmem_advise advice, int device_or_cpu) {
  if (CUresult status = to_physical(&device_or_cpu); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Allocation* allocation = managed_range(pointer, bytes);
  if (allocation == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  ManagedRecord* record =
      managed_find(shared.layout(), allocation->managed_index, sim().pid, allocation->managed_id);
  if (record == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool on_this_device = !to_host(device_or_cpu) && device_or_cpu == record->device;
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
      record->flags |= kManagedReadMostly;
      break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
      record->flags &= ~kManagedReadMostly;
      break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
      record->flags &= ~(kManagedPreferDevice | kManagedPreferHost);
      if (to_host(device_or_cpu)) record->flags |= kManagedPreferHost;
      if (on_this_device) record->flags |= kManagedPreferDevice;
      break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      record->flags &= ~(kManagedPreferDevice | kManagedPreferHost);
      break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
      record->flags |= kManagedAccessedBy;
      break;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      record->flags &= ~kManagedAccessedBy;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

int location_to_device(const CUmemLocation& location, bool* ok) {
  *ok = true;
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return CU_DEVICE_CPU;
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return location.id;
    default:
      *ok = false;
      return CU_DEVICE_INVALID;
  }
}

CUresult prefetch(CUdeviceptr pointer, size_t bytes, int device_or_cpu, CUstream handle,
                  bool per_thread) {
  if (CUresult status = to_physical(&device_or_cpu); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Stream* stream = nullptr;
  if (CUresult status = resolve_stream(ctx, handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  Allocation* allocation = managed_range(pointer, bytes);
  if (allocation == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  StateLayout* layout = shared.layout();
  int index = allocation->managed_index;
  if (managed_find(layout, index, sim().pid, allocation->managed_id) == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // A record lives on one device; prefetching it to another device is
  // treated as keeping it where it is (the simulator has no peer moves).
  bool to_device = !to_host(device_or_cpu);
  int device = layout->managed[index].device;
  if (to_device && device_or_cpu != device) return CUDA_SUCCESS;
  // What the range attributes answer: the last location asked for, by a
  // prefetch of the whole allocation (a part says nothing of the whole).
  ManagedRecord& asked = layout->managed[index];
  if (pointer == allocation->base && bytes == allocation->size) {
    asked.flags &= ~(kManagedPrefetchedDevice | kManagedPrefetchedHost);
    asked.flags |= to_device ? kManagedPrefetchedDevice : kManagedPrefetchedHost;
  }
  // The migration starts when the stream's work before it is projected to
  // end (residency changes at once: the destination is taken, the source
  // freed for allocations that wait for the transfer); work after it on
  // the stream may not start before it ends.
  std::uint64_t evicted = 0;
  // A killed process's memory is free at once on a real GPU; here it is
  // given back lazily, so before a move to the device finds too little
  // room, the dead give theirs back.
  if (to_device && device_free(layout, device) < bytes) reclaim_dead(layout, process_alive);
  std::uint64_t moved = managed_migrate(layout, index, bytes, to_device, &evicted);
  std::int64_t start = projected_time(layout, ctx->device, stream_earliest(stream));
  std::int64_t end = start;
  if (evicted > 0) {  // other managed memory leaves first, on the other lane
    std::int64_t out = reserve_transfer(layout, device, kHostPlace, evicted, now_ns(), true);
    note_outbound(layout, device, evicted, out);
    if (out > end) end = out;
  }
  if (moved > 0) {
    std::int64_t done = to_device
                            ? reserve_transfer(layout, kHostPlace, device, moved, start, true)
                            : reserve_transfer(layout, device, kHostPlace, moved, start, true);
    if (!to_device) note_outbound(layout, device, moved, done);
    if (done > end) end = done;
  }
  stream_push(stream, Ready{0, end});
  return CUDA_SUCCESS;
}

// The API ordinal of state-file device `physical` (CUDA_VISIBLE_DEVICES
// may renumber); CU_DEVICE_INVALID when it is not visible.
int api_ordinal(int physical) {
  for (int i = 0; i < sim().device_count; ++i) {
    if (sim().visible[i] == physical) return i;
  }
  return CU_DEVICE_INVALID;
}

// One range attribute of a managed allocation's record (the range must lie
// in one allocation; the simulator keeps advice per allocation, so a part
// answers as the whole).
CUresult range_attribute(void* data, size_t size, CUmem_range_attribute attribute,
                         const ManagedRecord& record, int ordinal) {
  auto put_int = [&](int value) {
    if (size != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
    *static_cast<int*>(data) = value;
    return CUDA_SUCCESS;
  };
  auto put_type = [&](CUmemLocationType value) {
    if (size != sizeof(CUmemLocationType)) return CUDA_ERROR_INVALID_VALUE;
    *static_cast<CUmemLocationType*>(data) = value;
    return CUDA_SUCCESS;
  };
  bool prefer_device = (record.flags & kManagedPreferDevice) != 0;
  bool prefer_host = (record.flags & kManagedPreferHost) != 0;
  bool sent_device = (record.flags & kManagedPrefetchedDevice) != 0;
  bool sent_host = (record.flags & kManagedPrefetchedHost) != 0;
  int preferred = prefer_device ? ordinal : prefer_host ? CU_DEVICE_CPU : CU_DEVICE_INVALID;
  int last = sent_device ? ordinal : sent_host ? CU_DEVICE_CPU : CU_DEVICE_INVALID;
  auto type_of = [](int where) {
    return where == CU_DEVICE_CPU       ? CU_MEM_LOCATION_TYPE_HOST
           : where == CU_DEVICE_INVALID ? CU_MEM_LOCATION_TYPE_INVALID
                                        : CU_MEM_LOCATION_TYPE_DEVICE;
  };
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
      return put_int((record.flags & kManagedReadMostly) != 0 ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
      return put_int(preferred);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      return put_int(last);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
      return put_type(type_of(preferred));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
      return put_int(preferred == CU_DEVICE_CPU ? 0 : preferred);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
      return put_type(type_of(last));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
      return put_int(last == CU_DEVICE_CPU ? 0 : last);
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      if (size == 0 || size % sizeof(int) != 0) return CUDA_ERROR_INVALID_VALUE;
      int* out = static_cast<int*>(data);
      for (size_t i = 0; i < size / sizeof(int); ++i) out[i] = CU_DEVICE_INVALID;
      if ((record.flags & kManagedAccessedBy) != 0) out[0] = ordinal;
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// The attributes of [pointer, pointer + bytes) into data[i] (sizes[i]).
CUresult range_attributes(void** data, size_t* sizes, CUmem_range_attribute* attributes,
                          size_t count, CUdeviceptr pointer, size_t bytes) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (data == nullptr || sizes == nullptr || attributes == nullptr || count == 0 || bytes == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LocalLock lock;
  Allocation* allocation = managed_range(pointer, bytes);
  if (allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  const ManagedRecord* record =
      managed_find(shared.layout(), allocation->managed_index, sim().pid, allocation->managed_id);
  if (record == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int ordinal = api_ordinal(record->device);
  for (size_t i = 0; i < count; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult status = range_attribute(data[i], sizes[i], attributes[i], *record, ordinal);
    if (status != CUDA_SUCCESS) return status;
  }
  return CUDA_SUCCESS;
}

}  // namespace

SIM_EXPORT CUresult cuMemRangeGetAttribute(void* data, size_t size,
                                           CUmem_range_attribute attribute, CUdeviceptr pointer,
                                           size_t bytes) {
  return range_attributes(&data, &size, &attribute, 1, pointer, bytes);
}

SIM_EXPORT CUresult cuMemRangeGetAttributes(void** data, size_t* sizes,
                                            CUmem_range_attribute* attributes, size_t count,
                                            CUdeviceptr pointer, size_t bytes) {
  return range_attributes(data, sizes, attributes, count, pointer, bytes);
}

SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* result, size_t bytes, unsigned int flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr || bytes == 0 ||
      (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Driver& d = sim();
  void* memory = map_memory(bytes);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation allocation{};
  allocation.base = reinterpret_cast<std::uintptr_t>(memory);
  allocation.size = bytes;
  allocation.mapped_bytes = bytes;
  allocation.kind = AllocKind::kManaged;
  allocation.ctx = ctx;
  allocation.device = ctx->device;
  allocation.managed_id = ++d.next_id;
  {
    SharedLock shared;
    if (!shared.ok()) {
      unmap_memory(memory, bytes);
      return kStateUnavailable;
    }
    allocation.managed_index =
        managed_add(shared.layout(), d.slot, ctx->device, allocation.managed_id, bytes, 0,
                    ctx->serial, flags == CU_MEM_ATTACH_GLOBAL);
  }
  if (allocation.managed_index < 0 || !insert_allocation(allocation)) {
    if (allocation.managed_index >= 0) {
      SharedLock shared;
      if (shared.ok()) managed_remove(shared.layout(), allocation.managed_index);
    }
    unmap_memory(memory, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *result = allocation.base;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAdvise(CUdeviceptr pointer, size_t bytes, CUmem_advise advice,
                                CUdevice device) {
  return advise(pointer, bytes, advice, device);
}

SIM_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr pointer, size_t bytes, CUmem_advise advice,
                                   CUmemLocation location) {
  bool ok = false;
  int device = location_to_device(location, &ok);
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  return advise(pointer, bytes, advice, device);
}

SIM_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr pointer, size_t bytes, CUdevice device,
                                       CUstream stream) {
  return prefetch(pointer, bytes, device, stream, false);
}

SIM_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr pointer, size_t bytes, CUdevice device,
                                            CUstream stream) {
  return prefetch(pointer, bytes, device, stream, true);
}

SIM_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr pointer, size_t bytes, CUmemLocation location,
                                          unsigned int flags, CUstream stream) {
  bool ok = false;
  int device = location_to_device(location, &ok);
  if (!ok || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return prefetch(pointer, bytes, device, stream, false);
}

SIM_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr pointer, size_t bytes,
                                               CUmemLocation location, unsigned int flags,
                                               CUstream stream) {
  bool ok = false;
  int device = location_to_device(location, &ok);
  if (!ok || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return prefetch(pointer, bytes, device, stream, true);
}

static CUresult attach(CUstream handle, CUdeviceptr pointer, size_t bytes, unsigned flags,
                       bool per_thread) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Stream* stream = nullptr;
  if (CUresult status = resolve_stream(ctx, handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
      flags != CU_MEM_ATTACH_SINGLE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Stream association changes no residency in this model.
  return managed_range(pointer, bytes == 0 ? 1 : bytes) != nullptr ? CUDA_SUCCESS
                                                                   : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuStreamAttachMemAsync(CUstream stream, CUdeviceptr pointer, size_t bytes,
                                           unsigned int flags) {
  return attach(stream, pointer, bytes, flags, false);
}

SIM_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream stream, CUdeviceptr pointer, size_t bytes,
                                                unsigned int flags) {
  return attach(stream, pointer, bytes, flags, true);
}
