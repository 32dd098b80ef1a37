#include "copy_steps.h"

#include <sys/mman.h>

#include <vector>

namespace gpushare::clients {
namespace {

// Anonymous memory, unmapped when it goes out of scope.
struct HostBuffer {
  void* address = MAP_FAILED;
  std::size_t bytes = 0;
  explicit HostBuffer(std::size_t size) : bytes(size == 0 ? 1 : size) {
    address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  ~HostBuffer() {
    if (address != MAP_FAILED) munmap(address, bytes);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
};

}  // namespace

bool run_copy(const Api& api, CUstream stream, CUdeviceptr device, std::size_t device_bytes,
              const std::string& direction, std::size_t bytes, bool async, CUresult* result) {
  if (direction == "dtod") {
    if (device_bytes / 2 < bytes) return false;
    *result = async ? api.cuMemcpyDtoDAsync_v2(device + bytes, device, bytes, stream)
                    : api.cuMemcpyDtoD_v2(device + bytes, device, bytes);
    return true;
  }
  if ((direction != "htod" && direction != "dtoh") || device_bytes < bytes) return false;
  HostBuffer host(bytes);
  if (host.address == MAP_FAILED) {
    *result = CUDA_ERROR_OUT_OF_MEMORY;
    return true;
  }
  if (direction == "htod") {
    *result = async ? api.cuMemcpyHtoDAsync_v2(device, host.address, bytes, stream)
                    : api.cuMemcpyHtoD_v2(device, host.address, bytes);
  } else {
    *result = async ? api.cuMemcpyDtoHAsync_v2(host.address, device, bytes, stream)
                    : api.cuMemcpyDtoH_v2(host.address, device, bytes);
  }
  // The host buffer goes away now: an asynchronous copy must have taken
  // its bytes (the simulator moves them when the call is made).
  return true;
}

CUresult run_copies(const Api& api, CUstream stream, CUdeviceptr device, std::size_t device_bytes,
                    unsigned long long count, std::size_t bytes, bool async) {
  if (device_bytes < bytes) return CUDA_ERROR_INVALID_VALUE;
  std::vector<unsigned char> host(bytes == 0 ? 1 : bytes, 0x5a);
  for (unsigned long long i = 0; i < count; ++i) {
    CUresult status = async ? api.cuMemcpyHtoDAsync_v2(device, host.data(), bytes, stream)
                            : api.cuMemcpyHtoD_v2(device, host.data(), bytes);
    if (status != CUDA_SUCCESS) return status;
  }
  return CUDA_SUCCESS;
}

}  // namespace gpushare::clients
