// Devices: count, names, UUIDs, memory, attributes (an A100-like sm_80
// table with the SM count and memory from the state file), and the error
// strings.
#include <cstdio>
#include <cstring>

#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

constexpr char kDeviceName[] = "gpushare simulated GPU";

struct ErrorName {
  int code;
  const char* name;
  const char* text;
};
constexpr ErrorName kErrorNames[] = {
#include "cuda_errors.inc"
};

CUresult check_device(CUdevice device) {
  int physical = 0;
  return physical_device(device, &physical);
}

// The device's index in the state file; only after check_device succeeded.
int physical_of(CUdevice device) { return sim().visible[device]; }

// Values that do not depend on the device, for an A100 (sm_80).
struct Attribute {
  CUdevice_attribute attribute;
  int value;
};
constexpr Attribute kFixedAttributes[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1410000},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0},
    {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0},
    {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
    {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
    {CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1215000},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 41943040},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 167936},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 0},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 166912},
    {CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0},
    {CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
    {CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 31457280},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0},
    {CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0},
};

// By the device's index in the state file, as NVML numbers buses too.
int pci_bus(int physical) { return 0x10 + physical; }

}  // namespace

SIM_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= sim().device_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = sim().device_count;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<std::size_t>(length), "%s", kDeviceName);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint8_t bytes[16];
  device_uuid(physical_of(device), bytes);
  std::memcpy(uuid->bytes, bytes, sizeof bytes);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  return cuDeviceGetUuid(uuid, device);
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = sim().state.layout()->devices[physical_of(device)].memory_bytes;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                         CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (value == nullptr || attribute <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = static_cast<int>(sim().state.layout()->devices[physical_of(device)].sms);
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *value = pci_bus(physical_of(device));
      return CUDA_SUCCESS;
    default:
      break;
  }
  for (const Attribute& entry : kFixedAttributes) {
    if (entry.attribute == attribute) {
      *value = entry.value;
      return CUDA_SUCCESS;
    }
  }
  *value = 0;  // a capability this simulated device does not have
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *major = 8;
  *minor = 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetProperties(CUdevprop* properties, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (properties == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *properties = CUdevprop{1024,
                          {1024, 1024, 64},
                          {2147483647, 65535, 65535},
                          49152,
                          65536,
                          32,
                          2147483647,
                          65536,
                          1410000,
                          512};
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetPCIBusId(char* bus_id, int length, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (bus_id == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(bus_id, static_cast<std::size_t>(length), "0000:%02x:00.0",
                pci_bus(physical_of(device)));
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* device, const char* bus_id) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (device == nullptr || bus_id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  // Both "0000:10:00.0" and NVML's "00000000:10:00.0".
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (int i = 0; i < sim().device_count; ++i) {
    if (domain == 0 && slot == 0 && function == 0 &&
        static_cast<int>(bus) == pci_bus(physical_of(i))) {
      *device = i;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

SIM_EXPORT CUresult cuDeviceCanAccessPeer(int* can_access, CUdevice device, CUdevice peer) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (CUresult status = check_device(peer); status != CUDA_SUCCESS) return status;
  if (can_access == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *can_access = device != peer;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorName& entry : kErrorNames) {
    if (entry.code == static_cast<int>(error)) {
      *name = entry.name;
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorName& entry : kErrorNames) {
    if (entry.code == static_cast<int>(error)) {
      *text = entry.text;
      return CUDA_SUCCESS;
    }
  }
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}
