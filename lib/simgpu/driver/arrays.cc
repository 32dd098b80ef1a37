// CUDA arrays: charged to their device like any allocation (width x height
// x depth x channels x element size), destroyed with their context. They
// hold no bytes: the simulator implements no array copies or textures.
#include "cudaapi/array_format.h"
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

using gpushare::cudaapi::array_format_bytes;

CUresult create(CUarray* result, const CUDA_ARRAY3D_DESCRIPTOR& descriptor) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  unsigned element = array_format_bytes(descriptor.Format);
  unsigned channels = descriptor.NumChannels;
  if (result == nullptr || element == 0 || (channels != 1 && channels != 2 && channels != 4) ||
      descriptor.Width == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::uint64_t bytes = 0;
  std::uint64_t height = descriptor.Height == 0 ? 1 : descriptor.Height;
  std::uint64_t depth = descriptor.Depth == 0 ? 1 : descriptor.Depth;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(descriptor.Width), height, &bytes) ||
      __builtin_mul_overflow(bytes, depth, &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(channels) * element, &bytes)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  DeferredWait wait;  // for an eviction the allocation causes, after unlocking
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  if (CUresult status = charge_device(ctx->device, bytes); status != CUDA_SUCCESS) return status;
  ArrayObject* array = sim().arrays.acquire();
  if (array == nullptr) {
    uncharge_device(ctx->device, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  array->ctx = ctx;
  array->device = ctx->device;
  array->bytes = bytes;
  array->descriptor = descriptor;
  array->magic = kArrayMagic;
  *result = reinterpret_cast<CUarray>(array);
  return CUDA_SUCCESS;
}

ArrayObject* lookup_array(CUarray handle) {
  ArrayObject* array = reinterpret_cast<ArrayObject*>(handle);
  if (array == nullptr || !sim().arrays.owns(array) || array->magic != kArrayMagic) return nullptr;
  return array;
}

void destroy(ArrayObject* array) {
  uncharge_device(array->device, array->bytes);
  sim().arrays.release(array);
}

}  // namespace

namespace gpushare::simgpu::driver {

void release_context_arrays(Context* ctx) {
  sim().arrays.for_each([&](ArrayObject* array) {
    if (array->magic == kArrayMagic && array->ctx == ctx) destroy(array);
  });
}

}  // namespace gpushare::simgpu::driver

SIM_EXPORT CUresult cuArrayCreate_v2(CUarray* result, const CUDA_ARRAY_DESCRIPTOR* descriptor) {
  if (descriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR full{};
  full.Width = descriptor->Width;
  full.Height = descriptor->Height;
  full.Format = descriptor->Format;
  full.NumChannels = descriptor->NumChannels;
  return create(result, full);
}

SIM_EXPORT CUresult cuArray3DCreate_v2(CUarray* result, const CUDA_ARRAY3D_DESCRIPTOR* descriptor) {
  if (descriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return create(result, *descriptor);
}

SIM_EXPORT CUresult cuArrayDestroy(CUarray handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  ArrayObject* array = lookup_array(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  destroy(array);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* descriptor, CUarray handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (descriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  ArrayObject* array = lookup_array(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  descriptor->Width = array->descriptor.Width;
  descriptor->Height = array->descriptor.Height;
  descriptor->Format = array->descriptor.Format;
  descriptor->NumChannels = array->descriptor.NumChannels;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* descriptor, CUarray handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (descriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  ArrayObject* array = lookup_array(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *descriptor = array->descriptor;
  return CUDA_SUCCESS;
}
