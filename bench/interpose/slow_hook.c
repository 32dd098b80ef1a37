// libgpushare-test-slow-hook.so: a stand-in interposer whose hooks cost a
// known time (a busy wait, then the driver's own entry point), for the test
// that the overhead bench sees a cost where there is one
// (e2e/bench/interpose-detects.sh): 2 us per cuLaunchKernel, 50 us per
// cuMemAlloc_v2 (the simulator's allocate+free varies by several us on a
// loaded machine, so its cost must stand well clear of that).
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <time.h>

enum { kLaunchDelayNs = 2000, kAllocDelayNs = 50000 };

static void busy_wait(long delay_ns) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < delay_ns);
}

typedef CUresult (*Launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**);
typedef CUresult (*Alloc)(CUdeviceptr*, size_t);

CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                        unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared,
                        CUstream stream, void** params, void** extra) {
  Launch real = (Launch)dlsym(RTLD_NEXT, "cuLaunchKernel");
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  busy_wait(kLaunchDelayNs);
  return real(function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared, stream, params,
              extra);
}

CUresult cuMemAlloc_v2(CUdeviceptr* pointer, size_t bytes) {
  Alloc real = (Alloc)dlsym(RTLD_NEXT, "cuMemAlloc_v2");
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  busy_wait(kAllocDelayNs);
  return real(pointer, bytes);
}
