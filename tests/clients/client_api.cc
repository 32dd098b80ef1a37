#include "client_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "cudaapi/proc_table.h"

namespace gpushare::clients {
namespace {

// Every entry point of Api, by its exported name.
// One entry point a line (clang-format does not settle on this macro).
// clang-format off
#define CLIENT_ENTRIES(X) \
  X(cuInit) \
  X(cuDriverGetVersion) \
  X(cuDeviceGet) \
  X(cuDeviceGetCount) \
  X(cuDeviceTotalMem_v2) \
  X(cuDeviceGetAttribute) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease_v2) \
  X(cuDevicePrimaryCtxReset_v2) \
  X(cuCtxCreate_v4) \
  X(cuCtxDestroy_v2) \
  X(cuCtxSetCurrent) \
  X(cuCtxSynchronize) \
  X(cuMemGetInfo_v2) \
  X(cuMemAlloc_v2) \
  X(cuMemAllocPitch_v2) \
  X(cuMemFree_v2) \
  X(cuMemAllocManaged) \
  X(cuMemAdvise_v2) \
  X(cuMemPrefetchAsync_v2) \
  X(cuMemAllocAsync) \
  X(cuMemFreeAsync) \
  X(cuMemAllocFromPoolAsync) \
  X(cuMemPoolCreate) \
  X(cuMemPoolDestroy) \
  X(cuMemPoolTrimTo) \
  X(cuMemGetAllocationGranularity) \
  X(cuMemCreate) \
  X(cuMemRelease) \
  X(cuMemAddressReserve) \
  X(cuMemAddressFree) \
  X(cuMemMap) \
  X(cuMemUnmap) \
  X(cuMemSetAccess) \
  X(cuMemAllocHost_v2) \
  X(cuMemFreeHost) \
  X(cuMemcpyHtoD_v2) \
  X(cuMemcpyDtoH_v2) \
  X(cuMemsetD8_v2) \
  X(cuModuleLoadData) \
  X(cuModuleGetFunction) \
  X(cuLaunchKernel) \
  X(cuLaunchKernelEx) \
  X(cuLaunchCooperativeKernel) \
  X(cuLibraryLoadData) \
  X(cuLibraryGetKernel) \
  X(cuStreamCreate) \
  X(cuStreamCreateWithPriority) \
  X(cuStreamGetPriority) \
  X(cuStreamQuery) \
  X(cuStreamSynchronize) \
  X(cuEventCreate) \
  X(cuEventRecord) \
  X(cuEventSynchronize) \
  X(cuEventElapsedTime) \
  X(cuGetErrorName) \
  X(cuGetProcAddress_v2) \
  X(cuMemcpyHtoDAsync_v2) \
  X(cuMemcpyDtoHAsync_v2) \
  X(cuMemcpyDtoD_v2) \
  X(cuMemcpyDtoDAsync_v2)
// clang-format on

struct Entry {
  const char* name;
  void** slot;
  void* direct;
};

// The (base name, version) whose resolution is exactly `symbol`.
const gpushare::cudaapi::ProcVariant* variant_of(const char* symbol) {
  std::size_t count = 0;
  const gpushare::cudaapi::ProcVariant* rows = gpushare::cudaapi::proc_variants(&count);
  for (std::size_t i = 0; i < count; ++i) {
    if (!rows[i].per_thread && std::strcmp(rows[i].symbol, symbol) == 0) return &rows[i];
  }
  return nullptr;
}

}  // namespace

bool bind_api(Binding binding, bool per_thread, Api* api, std::string* error) {
  *api = Api{};
#define CLIENT_ENTRY(name) \
  {#name, reinterpret_cast<void**>(&api->name), reinterpret_cast<void*>(&::name)},
  Entry entries[] = {CLIENT_ENTRIES(CLIENT_ENTRY)};
#undef CLIENT_ENTRY
  void* library = nullptr;
  if (binding == Binding::kDlsym) {
    library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      *error = std::string("dlopen libcuda.so.1: ") + dlerror();
      return false;
    }
  }
  for (const Entry& entry : entries) {
    void* address = nullptr;
    switch (binding) {
      case Binding::kDirect:
        address = entry.direct;
        break;
      case Binding::kDlsym:
        address = dlsym(library, entry.name);
        break;
      case Binding::kResolver: {
        const gpushare::cudaapi::ProcVariant* variant = variant_of(entry.name);
        if (variant == nullptr) {  // the resolver itself
          address = entry.direct;
          break;
        }
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult result =
            ::cuGetProcAddress_v2(variant->name, &address, variant->version,
                                  per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                             : CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                  &status);
        if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS) address = nullptr;
        break;
      }
    }
    if (address == nullptr) {
      *error = std::string("cannot bind ") + entry.name;
      return false;
    }
    *entry.slot = address;
  }
  return true;
}

std::string result_name(const Api& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName != nullptr && api.cuGetErrorName(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "CUresult(%d)", static_cast<int>(result));
  return buffer;
}

}  // namespace gpushare::clients
