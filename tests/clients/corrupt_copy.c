// libgpushare-test-corrupt-copy.so: preloaded into a driver-API program, it
// hands back every device-to-host copy (cuMemcpyDtoH_v2) with its first
// byte inverted, as if the device memory had changed under the program.
// For the workload's checksum-mismatch test (e2e/sim/settings.sh): a
// workload that verifies its data must notice and exit 1.
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>

typedef CUresult (*CopyOut)(void*, CUdeviceptr, size_t);

CUresult cuMemcpyDtoH_v2(void* host, CUdeviceptr device, size_t bytes) {
  CopyOut real = (CopyOut)dlsym(RTLD_NEXT, "cuMemcpyDtoH_v2");
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult result = real(host, device, bytes);
  if (result == CUDA_SUCCESS && bytes > 0) ((unsigned char*)host)[0] ^= 0xffu;
  return result;
}
