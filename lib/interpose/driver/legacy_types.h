// The legacy (CUDA 2.0/3.0) entry points' types. cudaTypedefs.h declares
// them only for the driver's own build (__CUDA_API_VERSION_INTERNAL); they
// are the 32-bit-size ABI that the unversioned exports (cuMemAlloc,
// cuMemGetInfo...) still implement and cuGetProcAddress hands out below
// version 3020. Each is written exactly as cudaTypedefs.h has it.
#pragma once

#include <cuda.h>

namespace gpushare::interpose::legacy {

// cuda.h's CUdeviceptr_v1, CUdevice_v1 and CUDA_ARRAY*_DESCRIPTOR_v1, also
// internal-only there: a 32-bit device address and 32-bit extents.
using DevicePointer = unsigned int;
using Device = int;
struct ArrayDescriptor {
  unsigned int Width;
  unsigned int Height;
  CUarray_format Format;
  unsigned int NumChannels;
};
struct Array3DDescriptor {
  unsigned int Width;
  unsigned int Height;
  unsigned int Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
};

using PFN_cuMemAlloc_v2000 = CUresult(CUDAAPI*)(DevicePointer* dptr, unsigned int bytesize);
using PFN_cuMemAllocPitch_v2000 = CUresult(CUDAAPI*)(DevicePointer* dptr, unsigned int* pitch,
                                                     unsigned int width, unsigned int height,
                                                     unsigned int element_size);
using PFN_cuMemFree_v2000 = CUresult(CUDAAPI*)(DevicePointer dptr);
using PFN_cuMemGetInfo_v2000 = CUresult(CUDAAPI*)(unsigned int* free, unsigned int* total);
using PFN_cuDeviceTotalMem_v2000 = CUresult(CUDAAPI*)(unsigned int* bytes, Device device);
using PFN_cuArrayCreate_v2000 = CUresult(CUDAAPI*)(CUarray* array,
                                                   const ArrayDescriptor* descriptor);
using PFN_cuArray3DCreate_v2000 = CUresult(CUDAAPI*)(CUarray* array,
                                                     const Array3DDescriptor* descriptor);
using PFN_cuCtxCreate_v2000 = CUresult(CUDAAPI*)(CUcontext* context, unsigned int flags,
                                                 Device device);
using PFN_cuCtxDestroy_v2000 = CUresult(CUDAAPI*)(CUcontext context);
using PFN_cuDevicePrimaryCtxRelease_v7000 = CUresult(CUDAAPI*)(Device device);
using PFN_cuDevicePrimaryCtxReset_v7000 = CUresult(CUDAAPI*)(Device device);

}  // namespace gpushare::interpose::legacy
