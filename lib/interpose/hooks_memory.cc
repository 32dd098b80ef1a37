// Memory limits on every allocation family. Each allocator reserves its
// bytes on the device's budget before calling the driver and gives them
// back if the driver fails (accounting.h); over the limit the call returns
// exactly CUDA_ERROR_OUT_OF_MEMORY, which frameworks handle (PyTorch frees
// its cache and retries). Frees give back what was charged; a free of
// memory we never saw passes through.
//
// What is charged:
//   cuMemAlloc, cuMemAllocManaged, cuMemAllocAsync, cuMemAllocFromPoolAsync
//     the requested bytes, on the current context's device;
//   cuMemAllocPitch  pitch x height (reserved as width rounded up to 512
//     bytes x height, then settled to what the driver chose);
//   cuMemCreate      the requested bytes on the device of the allocation's
//     location (host locations are not device memory);
//   arrays           width x height x depth x channels x element size,
//     summed over the levels of a mipmapped array.
// Stream-ordered frees give their bytes back when enqueued.
#include <cstring>

#include "cudaapi/array_format.h"
#include "interpose/hooks.h"
#include "interpose/log.h"

using namespace gpushare::interpose;

namespace {

inline bool disabled() { return g_runtime.settings.disabled; }

bool valid_device(int device) {
  return device >= 0 && device < g_runtime.device_count.load(std::memory_order_acquire);
}

// Reserves, allocates, records; rolls back on failure. `allocate` calls the
// driver; `key_of` names the new allocation afterwards.
template <class Allocate, class Key>
CUresult charge_and_allocate(const char* api, int device, std::uint64_t bytes, bool with_context,
                             AllocationTable& table, Allocate allocate, Key key_of) {
  if (!valid_device(device)) return allocate();  // no device known: the driver decides
  DeviceBudget& budget = g_runtime.devices[device].budget;
  std::uint64_t limit = effective_limit(device);
  if (!budget.try_reserve(bytes, limit)) {
    GS_INFO("%s(%llu bytes) refused on device %d: holds %llu of %llu bytes", api,
            static_cast<unsigned long long>(bytes), device,
            static_cast<unsigned long long>(budget.held()), static_cast<unsigned long long>(limit));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult result = allocate();
  if (result != CUDA_SUCCESS) {
    budget.release(bytes);
    return result;
  }
  AllocationRecord record{bytes, device, with_context ? current_context() : 0};
  if (!table.insert(key_of(), record)) {
    GS_WARN("%s: cannot record an allocation; its bytes stay charged", api);
  }
  return CUDA_SUCCESS;
}

// Gives back the charge of `key` once the driver's free succeeded.
template <class Free>
CUresult release_and_free(AllocationTable& table, std::uint64_t key, Free free_it) {
  AllocationRecord record;
  if (!table.erase(key, &record)) return free_it();  // not ours: pass through
  CUresult result = free_it();
  if (result == CUDA_SUCCESS) {
    if (valid_device(record.device)) g_runtime.devices[record.device].budget.release(record.bytes);
  } else {
    table.insert(key, record);  // still allocated
  }
  return result;
}

// Packed, compressed and video formats have no per-channel size: charge the
// widest element so the estimate errs on the side of the limit.
std::uint64_t element_bytes(CUarray_format format) {
  unsigned bytes = gpushare::cudaapi::array_format_bytes(format);
  return bytes == 0 ? 16 : bytes;
}

std::uint64_t at_least_one(std::size_t extent) { return extent == 0 ? 1 : extent; }

std::uint64_t array_bytes(std::size_t width, std::size_t height, std::size_t depth,
                          CUarray_format format, unsigned channels, unsigned levels) {
  std::uint64_t total = 0;
  for (unsigned level = 0; level < (levels == 0 ? 1 : levels); ++level) {
    std::uint64_t w = at_least_one(width >> level), h = at_least_one(height >> level),
                  d = at_least_one(depth >> level);
    total += w * h * d * element_bytes(format) * (channels == 0 ? 1 : channels);
  }
  return total;
}

}  // namespace

CUresult gs_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  GS_REAL(cuMemAlloc_v2);
  if (disabled()) return real(dptr, bytesize);
  return charge_and_allocate(
      "cuMemAlloc_v2", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize); }, [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  GS_REAL(cuMemAllocManaged);
  if (disabled()) return real(dptr, bytesize, flags);
  return charge_and_allocate(
      "cuMemAllocManaged", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize, flags); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                               unsigned int element_size) {
  GS_REAL(cuMemAllocPitch_v2);
  if (disabled()) return real(dptr, pitch, width, height, element_size);
  int device = current_device();
  std::uint64_t estimate = ((static_cast<std::uint64_t>(width) + 511) & ~511ull) * height;
  CUresult result = charge_and_allocate(
      "cuMemAllocPitch_v2", device, estimate, true, g_runtime.allocations,
      [&] { return real(dptr, pitch, width, height, element_size); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
  if (result != CUDA_SUCCESS || !valid_device(device)) return result;
  // Settle the charge to the pitch the driver chose.
  std::uint64_t actual = static_cast<std::uint64_t>(*pitch) * height;
  DeviceBudget& budget = g_runtime.devices[device].budget;
  if (actual < estimate) {
    budget.release(estimate - actual);
  } else if (actual > estimate && !budget.try_reserve(actual - estimate, effective_limit(device))) {
    AllocationRecord record;
    g_runtime.allocations.erase(*dptr, &record);
    budget.release(estimate);
    g_runtime.real.real_cuMemFree_v2(*dptr);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  AllocationRecord record{actual, device, current_context()};
  g_runtime.allocations.insert(*dptr, record);
  return CUDA_SUCCESS;
}

CUresult gs_cuMemFree_v2(CUdeviceptr dptr) {
  GS_REAL(cuMemFree_v2);
  if (disabled()) return real(dptr);
  return release_and_free(g_runtime.allocations, dptr, [&] { return real(dptr); });
}

CUresult gs_cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  GS_REAL(cuMemAllocAsync);
  if (disabled()) return real(dptr, bytesize, stream);
  return charge_and_allocate(
      "cuMemAllocAsync", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize, stream); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  GS_REAL(cuMemAllocAsync_ptsz);
  if (disabled()) return real(dptr, bytesize, stream);
  return charge_and_allocate(
      "cuMemAllocAsync_ptsz", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize, stream); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                    CUstream stream) {
  GS_REAL(cuMemAllocFromPoolAsync);
  if (disabled()) return real(dptr, bytesize, pool, stream);
  return charge_and_allocate(
      "cuMemAllocFromPoolAsync", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize, pool, stream); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream stream) {
  GS_REAL(cuMemAllocFromPoolAsync_ptsz);
  if (disabled()) return real(dptr, bytesize, pool, stream);
  return charge_and_allocate(
      "cuMemAllocFromPoolAsync_ptsz", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize, pool, stream); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  GS_REAL(cuMemFreeAsync);
  if (disabled()) return real(dptr, stream);
  return release_and_free(g_runtime.allocations, dptr, [&] { return real(dptr, stream); });
}

CUresult gs_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  GS_REAL(cuMemFreeAsync_ptsz);
  if (disabled()) return real(dptr, stream);
  return release_and_free(g_runtime.allocations, dptr, [&] { return real(dptr, stream); });
}

CUresult gs_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                        const CUmemAllocationProp* prop, unsigned long long flags) {
  GS_REAL(cuMemCreate);
  if (disabled() || prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return real(handle, size, prop, flags);
  }
  if (g_runtime.device_count.load(std::memory_order_acquire) < 0) init_devices();
  return charge_and_allocate(
      "cuMemCreate", prop->location.id, size, false, g_runtime.handles,
      [&] { return real(handle, size, prop, flags); },
      [&] { return static_cast<std::uint64_t>(*handle); });
}

CUresult gs_cuMemRelease(CUmemGenericAllocationHandle handle) {
  GS_REAL(cuMemRelease);
  if (disabled()) return real(handle);
  return release_and_free(g_runtime.handles, handle, [&] { return real(handle); });
}

CUresult gs_cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* descriptor) {
  GS_REAL(cuArrayCreate_v2);
  if (disabled() || descriptor == nullptr) return real(array, descriptor);
  std::uint64_t bytes = array_bytes(descriptor->Width, descriptor->Height, 1, descriptor->Format,
                                    descriptor->NumChannels, 1);
  return charge_and_allocate(
      "cuArrayCreate_v2", current_device(), bytes, true, g_runtime.handles,
      [&] { return real(array, descriptor); },
      [&] { return reinterpret_cast<std::uint64_t>(*array); });
}

CUresult gs_cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* descriptor) {
  GS_REAL(cuArray3DCreate_v2);
  if (disabled() || descriptor == nullptr) return real(array, descriptor);
  std::uint64_t bytes = array_bytes(descriptor->Width, descriptor->Height, descriptor->Depth,
                                    descriptor->Format, descriptor->NumChannels, 1);
  return charge_and_allocate(
      "cuArray3DCreate_v2", current_device(), bytes, true, g_runtime.handles,
      [&] { return real(array, descriptor); },
      [&] { return reinterpret_cast<std::uint64_t>(*array); });
}

CUresult gs_cuArrayDestroy(CUarray array) {
  GS_REAL(cuArrayDestroy);
  if (disabled()) return real(array);
  return release_and_free(g_runtime.handles, reinterpret_cast<std::uint64_t>(array),
                          [&] { return real(array); });
}

CUresult gs_cuMipmappedArrayCreate(CUmipmappedArray* array,
                                   const CUDA_ARRAY3D_DESCRIPTOR* descriptor,
                                   unsigned int levels) {
  GS_REAL(cuMipmappedArrayCreate);
  if (disabled() || descriptor == nullptr) return real(array, descriptor, levels);
  std::uint64_t bytes = array_bytes(descriptor->Width, descriptor->Height, descriptor->Depth,
                                    descriptor->Format, descriptor->NumChannels, levels);
  return charge_and_allocate(
      "cuMipmappedArrayCreate", current_device(), bytes, true, g_runtime.handles,
      [&] { return real(array, descriptor, levels); },
      [&] { return reinterpret_cast<std::uint64_t>(*array); });
}

CUresult gs_cuMipmappedArrayDestroy(CUmipmappedArray array) {
  GS_REAL(cuMipmappedArrayDestroy);
  if (disabled()) return real(array);
  return release_and_free(g_runtime.handles, reinterpret_cast<std::uint64_t>(array),
                          [&] { return real(array); });
}
