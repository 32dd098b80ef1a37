// `gpushare-probe device`: what each GPU is and holds, from the CUDA driver
// and NVML (or their simulated twins), behind an interface so the logic is
// tested against a fake.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpushare::probe {

/// What the driver says about a device.
struct DriverDevice {
  std::string name;
  std::array<std::uint8_t, 16> uuid{};
  std::uint64_t mem_total_bytes = 0;
  int sms = 0;
  int cc_major = 0;
  int cc_minor = 0;
};

/// NVML's memory numbers for a device.
struct NvmlMemory {
  std::uint64_t total_bytes = 0;
  std::uint64_t used_bytes = 0;
};

/// The simulated driver's own counters (gpushare_sim_device_stats).
struct SimStats {
  std::uint64_t used_bytes = 0;
  std::uint64_t total_bytes = 0;
  std::uint64_t busy_ns = 0;
  std::uint64_t kernels = 0;
};

/// One process's memory on a device, as NVML lists it (it includes the
/// process's context).
struct ProcessMemory {
  int pid = 0;
  std::uint64_t used_bytes = 0;
};

/// The hardware (driver and NVML), as the probe needs it.
class GpuApi {
 public:
  virtual ~GpuApi() = default;
  virtual Status init() = 0;
  virtual Result<int> device_count() = 0;
  virtual Result<DriverDevice> device(int index) = 0;
  /// Used bytes by cuMemGetInfo in the device's primary context: the
  /// fallback when NVML is absent (it counts the probe's own context).
  virtual Result<std::uint64_t> driver_used_bytes(int index) = 0;
  virtual bool has_nvml() const = 0;
  virtual Result<NvmlMemory> nvml_memory(const std::string& uuid) = 0;
  /// Only the simulated driver has these.
  virtual std::optional<SimStats> sim_stats(int index) = 0;
  /// The compute processes on a device and their memory (NVML).
  virtual Result<std::vector<ProcessMemory>> nvml_processes(const std::string& uuid) {
    return make_error("no per-process memory for " + uuid + " (NVML is not loaded)");
  }
  /// The device's busy share over NVML's last sample period, 0..100.
  virtual Result<unsigned> nvml_utilisation(const std::string& uuid) {
    return make_error("no utilisation for " + uuid + " (NVML is not loaded)");
  }
  /// The memory of one bare context on the device: the probe creates its
  /// primary context and reads its own process's use from NVML.
  virtual Result<std::uint64_t> context_bytes(int index, const std::string& uuid) {
    (void)index;
    return make_error("cannot measure a context on " + uuid);
  }
};

/// One output record.
struct DeviceRecord {
  int index = 0;
  std::string name;
  std::string uuid;
  std::uint64_t mem_total_bytes = 0;
  std::uint64_t mem_used_bytes = 0;
  std::string mem_source;  ///< "nvml", "simulator" or "driver"
  int sms = 0;
  std::string compute_capability;
  bool simulated = false;
  std::uint64_t busy_ns = 0;  ///< simulated only
  std::uint64_t kernels = 0;  ///< simulated only
};

/// Asks the API about every device. Memory use comes from NVML when it is
/// there (all processes' use), else the simulator's counters, else the
/// driver's cuMemGetInfo.
Result<std::vector<DeviceRecord>> probe_devices(GpuApi& api);

/// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML prints UUIDs.
std::string format_uuid(const std::array<std::uint8_t, 16>& uuid);

/// {"index":..,"name":..,"uuid":..,"mem_total_bytes":..,...}; busy_ns and
/// kernels only for a simulated device.
nlohmann::ordered_json device_fields(const DeviceRecord& record);

/// The libraries to load: the names the loader resolves, or paths.
struct LibraryPaths {
  std::string cuda = "libcuda.so.1";
  std::string nvml = "libnvidia-ml.so.1";
};

/// The real thing: dlopen()s the driver and NVML (never linked, so the
/// probe runs where they are absent). A missing driver is an Error; a
/// missing NVML is not.
Result<std::unique_ptr<GpuApi>> open_system_gpu(const LibraryPaths& paths);

/// The installed simulator's directory relative to the executable:
/// EXE_DIR/../lib/gpushare/sim, then EXE_DIR/../LIBDIR/gpushare/sim.
Result<std::string> locate_simulator(const std::string& executable_path,
                                     const std::function<bool(const std::string&)>& exists);

}  // namespace gpushare::probe
