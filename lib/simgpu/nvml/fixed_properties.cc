// The simulated device's fixed properties, as NVML reports them: PCI
// location, serial number, compute mode, clocks, power, temperature,
// performance state, persistence and MIG mode. Nothing here is measured;
// the values are plausible constants for a data-centre GPU of the
// Ampere generation (the compute capability the driver reports), chosen
// so monitors and sharing tools that read them see a sane device, and
// power draw follows utilisation so that it is not flat.
//
// PCI location: device i sits at 00000000:(0x10 + i):00.0, the address
// nvmlDeviceGetHandleByPciBusId (nvml.cc) resolves.
#include <cstdio>
#include <cstring>

#include "simgpu/nvml/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::nvml;

namespace {

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

constexpr unsigned kPciDeviceId = 0x20B010DE;  // device 0x20B0, vendor NVIDIA
constexpr unsigned kPciSubSystemId = 0x134F10DE;
constexpr unsigned kGraphicsClockMhz = 1410;
constexpr unsigned kMemoryClockMhz = 1215;
constexpr unsigned kVideoClockMhz = 1275;
constexpr unsigned kIdlePowerMw = 60'000;
constexpr unsigned kPowerLimitMw = 400'000;
constexpr unsigned kMinPowerLimitMw = 100'000;
constexpr unsigned kTemperatureC = 40;
constexpr int NVML_CLOCK_GRAPHICS = 0;
constexpr int NVML_CLOCK_SM = 1;
constexpr int NVML_CLOCK_MEM = 2;
constexpr int NVML_CLOCK_VIDEO = 3;
constexpr int NVML_TEMPERATURE_GPU = 0;
constexpr int NVML_COMPUTEMODE_DEFAULT = 0;
constexpr int NVML_BRAND_TESLA = 2;
constexpr unsigned NVML_DEVICE_ARCH_AMPERE = 7;
constexpr unsigned NVML_DEVICE_MIG_DISABLE = 0;

nvmlReturn_t pci_info(void* handle, nvmlPciInfo_t* pci, bool legacy_bus_id) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlPciInfo_t info{};
  info.domain = 0;
  info.bus = 0x10u + static_cast<unsigned>(device);
  info.device = 0;
  info.pciDeviceId = kPciDeviceId;
  info.pciSubSystemId = kPciSubSystemId;
  std::snprintf(info.busIdLegacy, sizeof info.busIdLegacy, "%04x:%02x:%02x.0", info.domain,
                info.bus, info.device);
  // Before _v3 the bus id had a 4-digit domain; since, 8 digits.
  std::snprintf(info.busId, sizeof info.busId,
                legacy_bus_id ? "%04x:%02x:%02x.0" : "%08x:%02x:%02x.0", info.domain, info.bus,
                info.device);
  *pci = info;
  return NVML_SUCCESS;
}

nvmlReturn_t clock_of(int type, unsigned* mhz) {
  if (mhz == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      *mhz = kGraphicsClockMhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
      *mhz = kMemoryClockMhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_VIDEO:
      *mhz = kVideoClockMhz;
      return NVML_SUCCESS;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

// Writes one unsigned value after the usual checks.
nvmlReturn_t device_value(void* handle, unsigned* out, unsigned value) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = value;
  return NVML_SUCCESS;
}

void format_serial(int device, char* text, std::size_t bytes) {
  std::snprintf(text, bytes, "1320%09d", device);
}

}  // namespace

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(void* handle, nvmlPciInfo_t* pci) {
  return pci_info(handle, pci, false);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(void* handle, nvmlPciInfo_t* pci) {
  return pci_info(handle, pci, true);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(void* handle, nvmlPciInfo_t* pci) {
  return pci_info(handle, pci, true);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(void* handle, char* serial, unsigned int length) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  char text[32];
  format_serial(device, text, sizeof text);
  return copy_string(text, serial, length);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char* serial, void** handle) {
  if (g_nvml.references == 0) return NVML_ERROR_UNINITIALIZED;
  if (serial == nullptr || handle == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < g_nvml.device_count; ++i) {
    char text[32];
    format_serial(i, text, sizeof text);
    if (std::strcmp(text, serial) == 0) {
      *handle = &g_nvml.devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(void* handle, int* mode) {
  return device_value(handle, reinterpret_cast<unsigned*>(mode), NVML_COMPUTEMODE_DEFAULT);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(void* handle, int* brand) {
  return device_value(handle, reinterpret_cast<unsigned*>(brand), NVML_BRAND_TESLA);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(void* handle, unsigned int* architecture) {
  return device_value(handle, architecture, NVML_DEVICE_ARCH_AMPERE);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(void* handle, int* mode) {
  return device_value(handle, reinterpret_cast<unsigned*>(mode), 1);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(void* handle, int* state) {
  return device_value(handle, reinterpret_cast<unsigned*>(state), 0);  // P0
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(void* handle, int sensor, unsigned int* celsius) {
  if (sensor != NVML_TEMPERATURE_GPU) {
    int device = 0;
    nvmlReturn_t status = check(handle, &device);
    return status != NVML_SUCCESS ? status : NVML_ERROR_INVALID_ARGUMENT;
  }
  return device_value(handle, celsius, kTemperatureC);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(void* handle, unsigned int* value) {
  return device_value(handle, value, 4);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(void* handle, unsigned int* value) {
  return device_value(handle, value, 4);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(void* handle, unsigned int* value) {
  return device_value(handle, value, 16);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(void* handle, unsigned int* value) {
  return device_value(handle, value, 16);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(void* handle, int type, unsigned int* mhz) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  return clock_of(type, mhz);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(void* handle, int type, unsigned int* mhz) {
  return nvmlDeviceGetClockInfo(handle, type, mhz);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(void* handle, int type, unsigned int* mhz) {
  return nvmlDeviceGetClockInfo(handle, type, mhz);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(void* handle, int type,
                                                               unsigned int* mhz) {
  return nvmlDeviceGetClockInfo(handle, type, mhz);
}
// Every clock id (current, application target, default, customer boost)
// reads the same fixed clock.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetClock(void* handle, int type, int, unsigned int* mhz) {
  return nvmlDeviceGetClockInfo(handle, type, mhz);
}

// Idle power plus a share proportional to the last window's utilisation.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(void* handle, unsigned int* milliwatts) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!lock_state()) return NVML_ERROR_UNKNOWN;
  std::int64_t now = monotonic_ns();
  unsigned percent = busy_percent(device, now - g_nvml.config.util_window_ns, now, -1);
  unlock_state();
  *milliwatts = kIdlePowerMw + (kPowerLimitMw - kIdlePowerMw) * percent / 100;
  return NVML_SUCCESS;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(void* handle, unsigned int* limit) {
  return device_value(handle, limit, kPowerLimitMw);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(void* handle,
                                                                  unsigned int* limit) {
  return device_value(handle, limit, kPowerLimitMw);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(void* handle, unsigned int* limit) {
  return device_value(handle, limit, kPowerLimitMw);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(void* handle,
                                                                      unsigned int* min_limit,
                                                                      unsigned int* max_limit) {
  if (min_limit == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t status = device_value(handle, max_limit, kPowerLimitMw);
      status != NVML_SUCCESS) {
    return status;
  }
  *min_limit = kMinPowerLimitMw;
  return NVML_SUCCESS;
}

// MIG is off and cannot be turned on: no MIG devices, no pending change.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(void* handle, unsigned int* current,
                                              unsigned int* pending) {
  if (pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t status = device_value(handle, current, NVML_DEVICE_MIG_DISABLE);
      status != NVML_SUCCESS) {
    return status;
  }
  *pending = NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(void* handle, unsigned int* is_mig) {
  return device_value(handle, is_mig, 0);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(void* handle, unsigned int* count) {
  return device_value(handle, count, 0);
}
