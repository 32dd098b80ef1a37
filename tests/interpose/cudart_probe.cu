// A CUDA-runtime program, built by tests/e2e/interpose-cudart.sh with nvcc
// against static and shared cudart. The runtime cannot run on the simulated
// driver (its export tables end in an integrity check), so the test only
// asserts which entry points the interposer was asked for and answered.
#include <cstdio>

__global__ void touch(int* data) { data[threadIdx.x] = threadIdx.x; }

int main() {
  int* data = nullptr;
  cudaError_t error = cudaMalloc(&data, 1 << 20);
  if (error == cudaSuccess) {
    touch<<<1, 32>>>(data);
    error = cudaDeviceSynchronize();
  }
  std::printf("cudart result=%d (%s)\n", static_cast<int>(error), cudaGetErrorName(error));
  return 0;
}
