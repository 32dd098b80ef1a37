// Copies and memsets. They move real bytes (device memory is host memory
// here). Copies take time on the device's copy path (link.h, transfer.cc):
// GPUSHARE_SIM_PCIE_LATENCY_US plus bytes at GPUSHARE_SIM_PCIE_GBPS over the
// host link, or at GPUSHARE_SIM_DTOD_GBPS within one device. Memsets run
// on the device and take no simulated time.
//
// Ordering: a synchronous copy first waits for the work it is ordered
// after (the legacy default stream, which itself waits for the blocking
// streams; or the per-thread default stream in a _ptds call), as the real
// driver does, then takes the earliest free stretch of its lanes and
// returns when the stretch ends. An asynchronous copy reserves its stretch
// at once, starting no earlier than the projected end of its stream's
// earlier work, and its stream's later work waits for the stretch's end
// (the stream's "not before" time, as for a migration). The bytes move when
// the call is made: kernels compute nothing, so no interleaving with them
// can be observed, and the host buffer of an asynchronous copy may be
// reused at once, as after a staged copy from pageable memory.
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

enum class Side { kHost, kDevice, kAny, kChecked /* validated by an earlier call */ };

CUresult check_side(std::uintptr_t address, std::size_t bytes, Side side) {
  if (bytes == 0 || side == Side::kChecked) return CUDA_SUCCESS;
  switch (side) {
    case Side::kHost:
      return address != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case Side::kDevice:
      return device_range_ok(address, bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case Side::kAny: {
      // Unified addressing: a known allocation must hold the whole range;
      // anything else is pageable host memory.
      if (address == 0) return CUDA_ERROR_INVALID_VALUE;
      if (find_allocation(address) == nullptr) return CUDA_SUCCESS;
      return device_range_ok(address, bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case Side::kChecked:
      return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

// Where the bytes at `address` live: the device of a device, pool, VMM or
// managed allocation (managed memory counts as its device's, wherever its
// pages are), else the host (pinned, registered or pageable memory).
int place_of(std::uintptr_t address) {
  const Allocation* allocation = find_allocation(address);
  if (allocation == nullptr || allocation->kind == AllocKind::kHost ||
      allocation->kind == AllocKind::kHostRegistered) {
    return kHostPlace;
  }
  return allocation->device;
}

// What a synchronous copy still has to do once validated: wait for the
// work before it on its stream (on `device`'s scheduler model), then move
// `bytes` from one place to another on the copy path.
struct SyncPoint {
  bool needed;
  int device;
  Ready ready;
  int from;
  int to;
  std::size_t bytes;
};

// Waits for the stream's earlier work and reserves the transfer; returns
// its end (0 when nothing is waited for) in *end.
CUresult start_sync(const SyncPoint& point, std::int64_t* end) {
  *end = 0;
  if (!point.needed) return CUDA_SUCCESS;
  if (CUresult status = wait_ready(point.device, point.ready); status != CUDA_SUCCESS) {
    return status;
  }
  if (point.bytes == 0) return CUDA_SUCCESS;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  *end = reserve_transfer(shared.layout(), point.from, point.to, point.bytes, 0, false);
  return CUDA_SUCCESS;
}

// An asynchronous copy's stretch on the copy path, after the stream's
// earlier work; the stream's later work waits for its end.
CUresult schedule_async(Stream* stream, int from, int to, std::size_t bytes) {
  if (bytes == 0) return CUDA_SUCCESS;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  int device = stream->ctx->device;
  std::int64_t earliest = projected_time(shared.layout(), device, stream_earliest(stream));
  std::int64_t end = reserve_transfer(shared.layout(), from, to, bytes, earliest, false);
  stream_push(stream, Ready{0, end});
  return CUDA_SUCCESS;
}

// Validates under the lock; an asynchronous copy of `transfer` bytes is
// scheduled here, a synchronous one is described in *wait_until (memsets
// and second checks pass transfer 0: nothing to move on the copy path).
CUresult prepare(std::uintptr_t destination, Side destination_side, std::uintptr_t source,
                 Side source_side, std::size_t bytes, CUstream handle, bool async, bool per_thread,
                 std::size_t transfer, SyncPoint* wait_until) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  if (CUresult status = check_side(destination, bytes, destination_side); status != CUDA_SUCCESS) {
    return status;
  }
  if (CUresult status = check_side(source, bytes, source_side); status != CUDA_SUCCESS) {
    return status;
  }
  Stream* stream = nullptr;
  if (CUresult status = resolve_stream(ctx, async ? handle : nullptr, per_thread, &stream);
      status != CUDA_SUCCESS) {
    return status;
  }
  int from = transfer > 0 ? place_of(source) : kHostPlace;
  int to = transfer > 0 ? place_of(destination) : kHostPlace;
  *wait_until = SyncPoint{!async, ctx->device, stream_earliest(stream), from, to, transfer};
  return async ? schedule_async(stream, from, to, transfer) : CUDA_SUCCESS;
}

CUresult copy(std::uintptr_t destination, Side destination_side, std::uintptr_t source,
              Side source_side, std::size_t bytes, CUstream stream, bool async, bool per_thread) {
  SyncPoint wait_until{};
  if (CUresult status = prepare(destination, destination_side, source, source_side, bytes, stream,
                                async, per_thread, bytes, &wait_until);
      status != CUDA_SUCCESS) {
    return status;
  }
  std::int64_t end = 0;
  if (CUresult status = start_sync(wait_until, &end); status != CUDA_SUCCESS) return status;
  if (bytes > 0) {
    std::memmove(reinterpret_cast<void*>(destination), reinterpret_cast<const void*>(source),
                 bytes);
  }
  wait_transfer(end);
  return CUDA_SUCCESS;
}

std::uintptr_t host(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); }

// Memsets of 1-, 2- or 4-byte elements over `height` rows of `width`
// elements, `pitch` bytes apart (pitch = width * size for the 1D forms).
CUresult memset_rows(CUdeviceptr destination, std::size_t pitch, unsigned value,
                     unsigned element_bytes, std::size_t width, std::size_t height, CUstream stream,
                     bool async, bool per_thread) {
  if (destination % element_bytes != 0 || (height > 1 && pitch % element_bytes != 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::size_t row_bytes = width * element_bytes;
  if (height > 1 && pitch < row_bytes) return CUDA_ERROR_INVALID_VALUE;
  std::size_t span = width == 0 || height == 0 ? 0 : pitch * (height - 1) + row_bytes;
  SyncPoint wait_until{};
  if (CUresult status = prepare(destination, Side::kDevice, host(&value), Side::kHost, span, stream,
                                async, per_thread, 0, &wait_until);
      status != CUDA_SUCCESS) {
    return status;
  }
  std::int64_t end = 0;
  if (CUresult status = start_sync(wait_until, &end); status != CUDA_SUCCESS) return status;
  for (std::size_t row = 0; row < height && width > 0; ++row) {
    unsigned char* start = reinterpret_cast<unsigned char*>(destination + row * pitch);
    if (element_bytes == 1) {
      std::memset(start, static_cast<int>(value & 0xff), width);
    } else if (element_bytes == 2) {
      std::uint16_t element = static_cast<std::uint16_t>(value);
      for (std::size_t i = 0; i < width; ++i) std::memcpy(start + 2 * i, &element, 2);
    } else {
      std::uint32_t element = value;
      for (std::size_t i = 0; i < width; ++i) std::memcpy(start + 4 * i, &element, 4);
    }
  }
  return CUDA_SUCCESS;
}

CUresult copy_2d(const CUDA_MEMCPY2D* copy, CUstream stream, bool async, bool per_thread) {
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (copy->srcMemoryType == CU_MEMORYTYPE_ARRAY || copy->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
    return CUDA_ERROR_NOT_SUPPORTED;  // the simulator has no CUDA arrays
  }
  std::size_t width = copy->WidthInBytes, height = copy->Height;
  if (height > 1 && (copy->srcPitch < width || copy->dstPitch < width)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto address = [](CUmemorytype type, const void* host_pointer, CUdeviceptr device) {
    return type == CU_MEMORYTYPE_HOST ? host(host_pointer) : static_cast<std::uintptr_t>(device);
  };
  auto side = [](CUmemorytype type) {
    return type == CU_MEMORYTYPE_HOST ? Side::kHost
                                      : (type == CU_MEMORYTYPE_DEVICE ? Side::kDevice : Side::kAny);
  };
  std::uintptr_t source = address(copy->srcMemoryType, copy->srcHost, copy->srcDevice) +
                          copy->srcY * copy->srcPitch + copy->srcXInBytes;
  std::uintptr_t destination = address(copy->dstMemoryType, copy->dstHost, copy->dstDevice) +
                               copy->dstY * copy->dstPitch + copy->dstXInBytes;
  std::size_t source_span = height == 0 || width == 0 ? 0 : copy->srcPitch * (height - 1) + width;
  std::size_t destination_span =
      height == 0 || width == 0 ? 0 : copy->dstPitch * (height - 1) + width;
  // The source is checked first (nothing scheduled), then the destination
  // (the transfer of width x height bytes scheduled or described).
  SyncPoint ignored{};
  if (CUresult status = prepare(source, side(copy->srcMemoryType), source, Side::kAny, source_span,
                                stream, true, per_thread, 0, &ignored);
      status != CUDA_SUCCESS) {
    return status;
  }
  SyncPoint wait_until{};
  if (CUresult status =
          prepare(destination, side(copy->dstMemoryType), source, Side::kChecked, destination_span,
                  stream, async, per_thread, width * height, &wait_until);
      status != CUDA_SUCCESS) {
    return status;
  }
  std::int64_t end = 0;
  if (CUresult status = start_sync(wait_until, &end); status != CUDA_SUCCESS) return status;
  for (std::size_t row = 0; row < height && width > 0; ++row) {
    std::memmove(reinterpret_cast<void*>(destination + row * copy->dstPitch),
                 reinterpret_cast<const void*>(source + row * copy->srcPitch), width);
  }
  wait_transfer(end);
  return CUDA_SUCCESS;
}

}  // namespace

// 1D copies: every ABI variant of the same four directions.
#define SIM_COPY_SYNC(name, per_thread, dst_type, dst_side, src_type, src_side, dst_expr,   \
                      src_expr)                                                             \
  SIM_EXPORT CUresult name(dst_type dst, src_type src, size_t bytes) {                      \
    return copy(dst_expr, dst_side, src_expr, src_side, bytes, nullptr, false, per_thread); \
  }
#define SIM_COPY_ASYNC(name, per_thread, dst_type, dst_side, src_type, src_side, dst_expr, \
                       src_expr)                                                           \
  SIM_EXPORT CUresult name(dst_type dst, src_type src, size_t bytes, CUstream stream) {    \
    return copy(dst_expr, dst_side, src_expr, src_side, bytes, stream, true, per_thread);  \
  }

SIM_COPY_SYNC(cuMemcpyHtoD_v2, false, CUdeviceptr, Side::kDevice, const void*, Side::kHost, dst,
              host(src))
SIM_COPY_SYNC(cuMemcpyHtoD_v2_ptds, true, CUdeviceptr, Side::kDevice, const void*, Side::kHost, dst,
              host(src))
SIM_COPY_SYNC(cuMemcpyDtoH_v2, false, void*, Side::kHost, CUdeviceptr, Side::kDevice, host(dst),
              src)
SIM_COPY_SYNC(cuMemcpyDtoH_v2_ptds, true, void*, Side::kHost, CUdeviceptr, Side::kDevice, host(dst),
              src)
SIM_COPY_SYNC(cuMemcpyDtoD_v2, false, CUdeviceptr, Side::kDevice, CUdeviceptr, Side::kDevice, dst,
              src)
SIM_COPY_SYNC(cuMemcpyDtoD_v2_ptds, true, CUdeviceptr, Side::kDevice, CUdeviceptr, Side::kDevice,
              dst, src)
SIM_COPY_SYNC(cuMemcpy, false, CUdeviceptr, Side::kAny, CUdeviceptr, Side::kAny, dst, src)
SIM_COPY_SYNC(cuMemcpy_ptds, true, CUdeviceptr, Side::kAny, CUdeviceptr, Side::kAny, dst, src)

SIM_COPY_ASYNC(cuMemcpyHtoDAsync_v2, false, CUdeviceptr, Side::kDevice, const void*, Side::kHost,
               dst, host(src))
SIM_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, true, CUdeviceptr, Side::kDevice, const void*,
               Side::kHost, dst, host(src))
SIM_COPY_ASYNC(cuMemcpyDtoHAsync_v2, false, void*, Side::kHost, CUdeviceptr, Side::kDevice,
               host(dst), src)
SIM_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, true, void*, Side::kHost, CUdeviceptr, Side::kDevice,
               host(dst), src)
SIM_COPY_ASYNC(cuMemcpyDtoDAsync_v2, false, CUdeviceptr, Side::kDevice, CUdeviceptr, Side::kDevice,
               dst, src)
SIM_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, true, CUdeviceptr, Side::kDevice, CUdeviceptr,
               Side::kDevice, dst, src)
SIM_COPY_ASYNC(cuMemcpyAsync, false, CUdeviceptr, Side::kAny, CUdeviceptr, Side::kAny, dst, src)
SIM_COPY_ASYNC(cuMemcpyAsync_ptsz, true, CUdeviceptr, Side::kAny, CUdeviceptr, Side::kAny, dst, src)

static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                          size_t bytes, CUstream stream, bool async, bool per_thread) {
  {
    if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
    LocalLock lock;
    if (!context_alive(lookup_context(dst_ctx)) || !context_alive(lookup_context(src_ctx))) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
  }
  return copy(dst, Side::kDevice, src, Side::kDevice, bytes, stream, async, per_thread);
}

SIM_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                 CUcontext src_ctx, size_t bytes) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, nullptr, false, false);
}
SIM_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                      CUcontext src_ctx, size_t bytes) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, nullptr, false, true);
}
SIM_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                      CUcontext src_ctx, size_t bytes, CUstream stream) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, stream, true, false);
}
SIM_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                           CUcontext src_ctx, size_t bytes, CUstream stream) {
  return copy_peer(dst, dst_ctx, src, src_ctx, bytes, stream, true, true);
}

SIM_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* copy) {
  return copy_2d(copy, nullptr, false, false);
}
SIM_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* copy) {
  return copy_2d(copy, nullptr, false, true);
}
SIM_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* copy) {
  return copy_2d(copy, nullptr, false, false);
}
SIM_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* copy) {
  return copy_2d(copy, nullptr, false, true);
}
SIM_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* copy, CUstream stream) {
  return copy_2d(copy, stream, true, false);
}
SIM_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* copy, CUstream stream) {
  return copy_2d(copy, stream, true, true);
}

// Memsets: 1D and 2D, 8/16/32-bit, synchronous and asynchronous, each with
// its per-thread twin.
#define SIM_MEMSET(name, value_type, bytes_each, per_thread)                                   \
  SIM_EXPORT CUresult name(CUdeviceptr dst, value_type value, size_t count) {                  \
    return memset_rows(dst, count * (bytes_each), value, bytes_each, count, 1, nullptr, false, \
                       per_thread);                                                            \
  }
#define SIM_MEMSET_ASYNC(name, value_type, bytes_each, per_thread)                             \
  SIM_EXPORT CUresult name(CUdeviceptr dst, value_type value, size_t count, CUstream stream) { \
    return memset_rows(dst, count * (bytes_each), value, bytes_each, count, 1, stream, true,   \
                       per_thread);                                                            \
  }
#define SIM_MEMSET_2D(name, value_type, bytes_each, per_thread)                                   \
  SIM_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, value_type value, size_t width,         \
                           size_t height) {                                                       \
    return memset_rows(dst, pitch, value, bytes_each, width, height, nullptr, false, per_thread); \
  }
#define SIM_MEMSET_2D_ASYNC(name, value_type, bytes_each, per_thread)                           \
  SIM_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, value_type value, size_t width,       \
                           size_t height, CUstream stream) {                                    \
    return memset_rows(dst, pitch, value, bytes_each, width, height, stream, true, per_thread); \
  }

SIM_MEMSET(cuMemsetD8_v2, unsigned char, 1, false)
SIM_MEMSET(cuMemsetD8_v2_ptds, unsigned char, 1, true)
SIM_MEMSET(cuMemsetD16_v2, unsigned short, 2, false)
SIM_MEMSET(cuMemsetD16_v2_ptds, unsigned short, 2, true)
SIM_MEMSET(cuMemsetD32_v2, unsigned int, 4, false)
SIM_MEMSET(cuMemsetD32_v2_ptds, unsigned int, 4, true)
SIM_MEMSET_ASYNC(cuMemsetD8Async, unsigned char, 1, false)
SIM_MEMSET_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, true)
SIM_MEMSET_ASYNC(cuMemsetD16Async, unsigned short, 2, false)
SIM_MEMSET_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, true)
SIM_MEMSET_ASYNC(cuMemsetD32Async, unsigned int, 4, false)
SIM_MEMSET_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, true)
SIM_MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1, false)
SIM_MEMSET_2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, true)
SIM_MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2, false)
SIM_MEMSET_2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, true)
SIM_MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4, false)
SIM_MEMSET_2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, true)
SIM_MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, false)
SIM_MEMSET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, true)
SIM_MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, false)
SIM_MEMSET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, true)
SIM_MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, false)
SIM_MEMSET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, true)
