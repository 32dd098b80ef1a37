// The driver entry points the test client calls, bound one of three ways,
// as real programs bind them (see cuda-interposition.md, section 1):
//   direct    the symbols this program is linked against (-lcuda)
//   dlsym     dlopen("libcuda.so.1") and dlsym(handle, "cuMemAlloc_v2")
//   resolver  cuGetProcAddress_v2(base name, the version that introduced
//             the ABI the client calls, flags), as the CUDA runtime does;
//             with the per-thread flag, the _ptsz/_ptds twins
#pragma once

#define __CUDA_API_VERSION_INTERNAL 1  // every ABI variant under its own name
#include <cuda.h>

#include <string>

namespace gpushare::clients {

struct Api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceTotalMem_v2)(size_t*, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
  CUresult (*cuDevicePrimaryCtxReset_v2)(CUdevice);
  CUresult (*cuCtxCreate_v4)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice);
  CUresult (*cuCtxDestroy_v2)(CUcontext);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemGetInfo_v2)(size_t*, size_t*);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
  CUresult (*cuMemAllocPitch_v2)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemAllocManaged)(CUdeviceptr*, size_t, unsigned);
  CUresult (*cuMemAdvise_v2)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
  CUresult (*cuMemPrefetchAsync_v2)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
  CUresult (*cuMemAllocAsync)(CUdeviceptr*, size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  CUresult (*cuMemPoolCreate)(CUmemoryPool*, const CUmemPoolProps*);
  CUresult (*cuMemPoolDestroy)(CUmemoryPool);
  CUresult (*cuMemPoolTrimTo)(CUmemoryPool, size_t);
  CUresult (*cuMemGetAllocationGranularity)(size_t*, const CUmemAllocationProp*,
                                            CUmemAllocationGranularity_flags);
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                          unsigned long long);
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
  CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
  CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
  CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
  CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  CUresult (*cuMemAllocHost_v2)(void**, size_t);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8_v2)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync_v2)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  CUresult (*cuLaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**);
  CUresult (*cuLibraryLoadData)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                                CUlibraryOption*, void**, unsigned);
  CUresult (*cuLibraryGetKernel)(CUkernel*, CUlibrary, const char*);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamCreateWithPriority)(CUstream*, unsigned, int);
  CUresult (*cuStreamGetPriority)(CUstream, int*);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetProcAddress_v2)(const char*, void**, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult*);
};

enum class Binding { kDirect, kDlsym, kResolver };

/// Fills `api`; false with a message naming the first entry that failed.
bool bind_api(Binding binding, bool per_thread, Api* api, std::string* error);

/// "CUDA_ERROR_OUT_OF_MEMORY", or "CUresult(N)" when unknown. Uses the
/// library's own cuGetErrorName when bound, else a small built-in table.
std::string result_name(const Api& api, CUresult result);

}  // namespace gpushare::clients
