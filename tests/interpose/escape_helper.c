/* libgs-escape-helper.so: a library that reaches the CUDA driver on its
 * own, for tests/e2e/interpose/loader-escape.sh. It is
 * linked to libcuda.so.1 and loaded by gs-attack with RTLD_DEEPBIND (its
 * own dependencies, the driver among them, come before the preloaded
 * interposer) or with dlmopen(LM_ID_NEWLM) (a namespace of its own, where
 * LD_PRELOAD does not reach).
 *
 *   helper_direct     calls cuMemAlloc_v2 directly (cuda.h's cuMemAlloc)
 *   helper_resolver   binds as a statically linked CUDA runtime does:
 *                     dlopen + dlsym(cuGetProcAddress_v2) + the resolver
 *
 * Each initialises the driver it sees, makes device 0's primary context
 * current, then allocates `size` bytes up to `count` times, keeping them.
 * It returns the CUDA error that stopped it (0 when none) and the bytes it
 * got in *held. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

typedef CUresult (*AllocFunction)(CUdeviceptr*, size_t);

static int run(AllocFunction alloc, PFN_cuInit_v2000 init, PFN_cuDeviceGet_v2000 device_get,
               PFN_cuDevicePrimaryCtxRetain_v7000 retain, PFN_cuCtxSetCurrent_v4000 set_current,
               int count, unsigned long long size, unsigned long long* held) {
  CUdevice device = 0;
  CUcontext context = 0;
  CUresult result = init(0);
  if (result == CUDA_SUCCESS) result = device_get(&device, 0);
  if (result == CUDA_SUCCESS) result = retain(&context, device);
  if (result == CUDA_SUCCESS) result = set_current(context);
  *held = 0;
  for (int i = 0; i < count && result == CUDA_SUCCESS; ++i) {
    CUdeviceptr pointer = 0;
    result = alloc(&pointer, size);
    if (result == CUDA_SUCCESS) *held += size;
  }
  return (int)result;
}

/* Direct calls, through the PLT as any library linked with -lcuda makes
 * them (taking the functions' addresses instead would bind them as data,
 * which the audit module cannot see: gpushare-run(1), SECURITY). */
__attribute__((visibility("default"))) int helper_direct(int count, unsigned long long size,
                                                         unsigned long long* held) {
  CUdevice device = 0;
  CUcontext context = 0;
  CUresult result = cuInit(0);
  if (result == CUDA_SUCCESS) result = cuDeviceGet(&device, 0);
  if (result == CUDA_SUCCESS) result = cuDevicePrimaryCtxRetain(&context, device);
  if (result == CUDA_SUCCESS) result = cuCtxSetCurrent(context);
  *held = 0;
  for (int i = 0; i < count && result == CUDA_SUCCESS; ++i) {
    CUdeviceptr pointer = 0;
    result = cuMemAlloc(&pointer, size);
    if (result == CUDA_SUCCESS) *held += size;
  }
  return (int)result;
}

__attribute__((visibility("default"))) int helper_resolver(int count, unsigned long long size,
                                                           unsigned long long* held) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == 0) return -1;
  PFN_cuGetProcAddress_v12000 resolve =
      (PFN_cuGetProcAddress_v12000)dlsym(driver, "cuGetProcAddress_v2");
  if (resolve == 0) return -2;
  void* functions[5] = {0, 0, 0, 0, 0};
  const char* names[5] = {"cuMemAlloc", "cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
                          "cuCtxSetCurrent"};
  for (int i = 0; i < 5; ++i) {
    CUdriverProcAddressQueryResult status;
    if (resolve(names[i], &functions[i], 12000, 0, &status) != CUDA_SUCCESS || functions[i] == 0) {
      return -3;
    }
  }
  return run((AllocFunction)functions[0], (PFN_cuInit_v2000)functions[1],
             (PFN_cuDeviceGet_v2000)functions[2], (PFN_cuDevicePrimaryCtxRetain_v7000)functions[3],
             (PFN_cuCtxSetCurrent_v4000)functions[4], count, size, held);
}
