// Memory limits on every allocation family. Each allocator reserves its
// bytes on the device's budget before calling the driver and gives them
// back if the driver fails (accounting.h); over the limit the call returns
// exactly CUDA_ERROR_OUT_OF_MEMORY, which frameworks handle (PyTorch frees
// its cache and retries). Frees give back what was charged; a free of
// memory we never saw passes through.
//
// What is charged:
//   cuMemAlloc, cuMemAllocManaged  the requested bytes, on the current
//     context's device;
//   cuMemAllocPitch  pitch x height (reserved as width rounded up to 512
//     bytes x height, then settled to what the driver chose);
//   arrays           width x height x depth x channels x element size,
//     summed over the levels of a mipmapped array;
//   VMM and pools    hooks_vmm.cc and hooks_pool.cc.
// The legacy 32-bit-size variants (cuMemAlloc, cuMemGetInfo... as CUDA 2.0
// had them) are wrapped too, at the end of this file.
#include <cstring>

#include "cudaapi/array_format.h"
#include "interpose/hooks/hooks.h"
#include "interpose/core/log.h"
#include "interpose/memory/pools.h"
#include "interpose/memory/residency.h"
#include "interpose/memory/spill.h"
#include "interpose/memory/suspend.h"
#include "interpose/memory/vmm_backing.h"

using namespace gpushare::interpose;

namespace {

inline bool disabled() { return g_runtime.settings.disabled; }

bool valid_device(int device) {
  return device >= 0 && device < g_runtime.device_count.load(std::memory_order_acquire);
}

// Reserves, allocates, records; rolls back on failure. `allocate` calls the
// driver; `key_of` names the new allocation afterwards.
// `placed_on_host` (spillable allocations only, spill.h): set by `allocate`
// when the memory starts on the host.
template <class Allocate, class Key>
CUresult charge_and_allocate(const char* api, int device, std::uint64_t bytes, bool with_context,
                             AllocationTable& table, Allocate allocate, Key key_of,
                             const bool* placed_on_host = nullptr) {
  bool spillable = placed_on_host != nullptr;
  if (!valid_device(device)) return allocate();  // no device known: the driver decides
  DeviceBudget& budget = g_runtime.devices[device].budget;
  std::uint64_t limit = spillable ? spillable_limit(device) : effective_limit(device);
  if (!budget.try_reserve(bytes, limit)) {
    GS_INFO("%s(%llu bytes) refused on device %d: holds %llu of %llu bytes", api,
            static_cast<unsigned long long>(bytes), device,
            static_cast<unsigned long long>(budget.held()), static_cast<unsigned long long>(limit));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult result = allocate();
  // Within its limit but the device is full: opportunistic jobs may hold
  // the room; the reserved bytes tell the coordinator, and the allocation
  // is retried while they spill (spill.h).
  if (!spillable) result = wait_for_room(device, bytes, 0, result, allocate);
  if (result != CUDA_SUCCESS) {
    budget.release(bytes);
    return result;
  }
  AllocationRecord record{bytes, device, with_context ? current_context() : 0};
  record.spillable = spillable ? 1 : 0;
  record.on_host = spillable && *placed_on_host ? 1 : 0;
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
    notice_freed(record.bytes);
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

// A plain allocation of a suspendable job (vmm_backing.h): `bytes` rounded
// up to the granularity, charged so, and recorded with its handle.
CUresult allocate_suspendable(const char* api, CUdeviceptr* dptr, std::uint64_t bytes, int device) {
  std::uint64_t rounded = vmm_rounded(bytes, device), handle = 0;
  if (rounded == 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult result = charge_and_allocate(
      api, device, rounded, true, g_runtime.allocations,
      [&] { return allocate_vmm_backed(dptr, rounded, device, &handle); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
  AllocationRecord record;
  if (result == CUDA_SUCCESS && g_runtime.allocations.find(*dptr, &record)) {
    record.vmm_backed = 1;
    record.link = handle;
    g_runtime.allocations.replace(*dptr, record);
  }
  return result;
}

}  // namespace

CUresult gs_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  GS_REAL(cuMemAlloc_v2);
  if (disabled()) return real(dptr, bytesize);
  hold_while_suspended();  // no new device memory while suspended
  if (int device = current_device();
      valid_device(device) && dptr != nullptr && bytesize > 0 && managed_backing()) {
    bool on_host = false;
    return charge_and_allocate(
        "cuMemAlloc_v2", device, bytesize, true, g_runtime.allocations,
        [&] { return allocate_managed_backed(dptr, bytesize, device, &on_host); },
        [&] { return static_cast<std::uint64_t>(*dptr); }, &on_host);
  }
  if (int device = current_device();
      valid_device(device) && dptr != nullptr && bytesize > 0 && vmm_backing()) {
    return allocate_suspendable("cuMemAlloc_v2", dptr, bytesize, device);
  }
  return charge_and_allocate(
      "cuMemAlloc_v2", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize); }, [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  GS_REAL(cuMemAllocManaged);
  if (disabled()) return real(dptr, bytesize, flags);
  hold_while_suspended();  // no new device memory while suspended
  // An opportunistic job's own managed memory is what its plain memory is
  // made of: recorded spillable (counted device- or host-resident), the
  // spill and a suspend move it by prefetch like the interposer's own. Its
  // advice starts at its device; the program may change it. Memory attached
  // to the host only (CU_MEM_ATTACH_HOST) is left as the program asked.
  if (int device = current_device(); valid_device(device) && dptr != nullptr && bytesize > 0 &&
                                     flags == CU_MEM_ATTACH_GLOBAL && managed_backing()) {
    bool on_host = false;
    return charge_and_allocate(
        "cuMemAllocManaged", device, bytesize, true, g_runtime.allocations,
        [&] { return allocate_managed_backed(dptr, bytesize, device, &on_host); },
        [&] { return static_cast<std::uint64_t>(*dptr); }, &on_host);
  }
  CUresult result = charge_and_allocate(
      "cuMemAllocManaged", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize, flags); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
  // A production job's own managed memory (or an opportunistic one's with
  // the spill off): counted where the driver says it is, and moved by
  // prefetch in a suspend (residency.h).
  if (result == CUDA_SUCCESS && flags == CU_MEM_ATTACH_GLOBAL && valid_device(current_device()) &&
      !managed_backing()) {
    count_program_managed(static_cast<std::uint64_t>(*dptr));
  }
  return result;
}

CUresult gs_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                               unsigned int element_size) {
  GS_REAL(cuMemAllocPitch_v2);
  if (disabled()) return real(dptr, pitch, width, height, element_size);
  hold_while_suspended();  // no new device memory while suspended
  int device = current_device();
  if (valid_device(device) && dptr != nullptr && pitch != nullptr && width > 0 && height > 0 &&
      (element_size == 4 || element_size == 8 || element_size == 16) && managed_backing()) {
    // Managed memory has no pitched form: the pitch is the width rounded up
    // to 512 bytes, as the charge below estimates it.
    std::size_t chosen = (width + 511) & ~static_cast<std::size_t>(511);
    bool on_host = false;
    CUresult result = charge_and_allocate(
        "cuMemAllocPitch_v2", device, static_cast<std::uint64_t>(chosen) * height, true,
        g_runtime.allocations,
        [&] { return allocate_managed_backed(dptr, chosen * height, device, &on_host); },
        [&] { return static_cast<std::uint64_t>(*dptr); }, &on_host);
    if (result == CUDA_SUCCESS) *pitch = chosen;
    return result;
  }
  if (valid_device(device) && dptr != nullptr && pitch != nullptr && width > 0 && height > 0 &&
      (element_size == 4 || element_size == 8 || element_size == 16) && vmm_backing()) {
    // As for managed memory: the width rounded up to 512 bytes.
    std::size_t chosen = (width + 511) & ~static_cast<std::size_t>(511);
    CUresult result = allocate_suspendable("cuMemAllocPitch_v2", dptr,
                                           static_cast<std::uint64_t>(chosen) * height, device);
    if (result == CUDA_SUCCESS) *pitch = chosen;
    return result;
  }
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
  AllocationRecord record{0, -1, 0};
  if (pool_take(dptr, &record)) {  // cuMemFree of a stream-ordered allocation
    CUresult result = real(dptr);
    pool_after_free(dptr, record, result == CUDA_SUCCESS);
    return result;
  }
  if (CUresult result; free_vmm_backed(dptr, &result)) return result;
  return free_charged(dptr, [&] { return real(dptr); });
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
                                   const CUDA_ARRAY3D_DESCRIPTOR* descriptor, unsigned int levels) {
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

// The legacy entry points (CUDA 2.0/3.0: 32-bit device addresses and
// sizes), which cuGetProcAddress hands out below version 3020 and old
// binaries link by name: wrapped with their own signatures, charged and
// freed like their successors, and shown the virtual GPU (clamped to what
// 32 bits can say).
namespace legacy = gpushare::interpose::legacy;

CUresult gs_cuMemAlloc(legacy::DevicePointer* dptr, unsigned int bytesize) {
  GS_REAL(cuMemAlloc);
  if (disabled() || dptr == nullptr) return real(dptr, bytesize);
  return charge_and_allocate(
      "cuMemAlloc", current_device(), bytesize, true, g_runtime.allocations,
      [&] { return real(dptr, bytesize); }, [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemAllocPitch(legacy::DevicePointer* dptr, unsigned int* pitch, unsigned int width,
                            unsigned int height, unsigned int element_size) {
  GS_REAL(cuMemAllocPitch);
  if (disabled() || dptr == nullptr || pitch == nullptr) {
    return real(dptr, pitch, width, height, element_size);
  }
  // As the _v2 wrapper first reserves: the width rounded up to 512 bytes.
  std::uint64_t bytes = ((static_cast<std::uint64_t>(width) + 511) & ~511ull) * height;
  return charge_and_allocate(
      "cuMemAllocPitch", current_device(), bytes, true, g_runtime.allocations,
      [&] { return real(dptr, pitch, width, height, element_size); },
      [&] { return static_cast<std::uint64_t>(*dptr); });
}

CUresult gs_cuMemFree(legacy::DevicePointer dptr) {
  GS_REAL(cuMemFree);
  if (disabled()) return real(dptr);
  return free_charged(dptr, [&] { return real(dptr); });
}

namespace {
unsigned int clamp32(std::size_t value) {
  return value > 0xffffffffu ? 0xffffffffu : static_cast<unsigned int>(value);
}
}  // namespace

CUresult gs_cuMemGetInfo(unsigned int* free, unsigned int* total) {
  GS_REAL(cuMemGetInfo);
  if (disabled()) return real(free, total);
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::size_t free64 = 0, total64 = 0;
  CUresult result = gs_cuMemGetInfo_v2(&free64, &total64);
  if (result == CUDA_SUCCESS) {
    *free = clamp32(free64);
    *total = clamp32(total64);
  }
  return result;
}

CUresult gs_cuDeviceTotalMem(unsigned int* bytes, legacy::Device device) {
  GS_REAL(cuDeviceTotalMem);
  if (disabled()) return real(bytes, device);
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::size_t total = 0;
  CUresult result = gs_cuDeviceTotalMem_v2(&total, device);
  if (result == CUDA_SUCCESS) *bytes = clamp32(total);
  return result;
}

CUresult gs_cuArrayCreate(CUarray* array, const legacy::ArrayDescriptor* descriptor) {
  GS_REAL(cuArrayCreate);
  if (disabled() || descriptor == nullptr || array == nullptr) return real(array, descriptor);
  std::uint64_t bytes = array_bytes(descriptor->Width, descriptor->Height, 1, descriptor->Format,
                                    descriptor->NumChannels, 1);
  return charge_and_allocate(
      "cuArrayCreate", current_device(), bytes, true, g_runtime.handles,
      [&] { return real(array, descriptor); },
      [&] { return reinterpret_cast<std::uint64_t>(*array); });
}

CUresult gs_cuArray3DCreate(CUarray* array, const legacy::Array3DDescriptor* descriptor) {
  GS_REAL(cuArray3DCreate);
  if (disabled() || descriptor == nullptr || array == nullptr) return real(array, descriptor);
  std::uint64_t bytes = array_bytes(descriptor->Width, descriptor->Height, descriptor->Depth,
                                    descriptor->Format, descriptor->NumChannels, 1);
  return charge_and_allocate(
      "cuArray3DCreate", current_device(), bytes, true, g_runtime.handles,
      [&] { return real(array, descriptor); },
      [&] { return reinterpret_cast<std::uint64_t>(*array); });
}
