#include "probe/device_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "vocab/uuid.h"

namespace gpushare::probe {

std::string format_uuid(const std::array<std::uint8_t, 16>& uuid) {
  char text[kUuidTextBytes];
  gpushare::format_uuid(uuid.data(), text);
  return text;
}

Result<std::vector<DeviceRecord>> probe_devices(GpuApi& api) {
  if (Status status = api.init(); !status) return status.error();
  Result<int> count = api.device_count();
  if (!count) return count.error();
  std::vector<DeviceRecord> records;
  for (int index = 0; index < *count; ++index) {
    Result<DriverDevice> device = api.device(index);
    if (!device) return device.error();
    DeviceRecord record;
    record.index = index;
    record.name = device->name;
    record.uuid = format_uuid(device->uuid);
    record.mem_total_bytes = device->mem_total_bytes;
    record.sms = device->sms;
    record.compute_capability =
        std::to_string(device->cc_major) + "." + std::to_string(device->cc_minor);
    std::optional<SimStats> stats = api.sim_stats(index);
    if (stats) {
      record.simulated = true;
      record.busy_ns = stats->busy_ns;
      record.kernels = stats->kernels;
    }
    // Who holds what: NVML sees every process; so does the simulator;
    // the driver alone only answers from inside a context of our own.
    Result<NvmlMemory> nvml =
        api.has_nvml() ? api.nvml_memory(record.uuid) : Result<NvmlMemory>(make_error("no NVML"));
    if (nvml) {
      record.mem_used_bytes = nvml->used_bytes;
      record.mem_source = "nvml";
    } else if (stats) {
      record.mem_used_bytes = stats->used_bytes;
      record.mem_source = "simulator";
    } else {
      Result<std::uint64_t> used = api.driver_used_bytes(index);
      if (!used) return used.error();
      record.mem_used_bytes = *used;
      record.mem_source = "driver";
    }
    records.push_back(std::move(record));
  }
  return records;
}

nlohmann::ordered_json device_fields(const DeviceRecord& record) {
  nlohmann::ordered_json fields = {
      {"index", record.index},
      {"name", record.name},
      {"uuid", record.uuid},
      {"mem_total_bytes", record.mem_total_bytes},
      {"mem_used_bytes", record.mem_used_bytes},
      {"mem_source", record.mem_source},
      {"sms", record.sms},
      {"compute_capability", record.compute_capability},
      {"simulated", record.simulated},
  };
  if (record.simulated) {
    fields["busy_ns"] = record.busy_ns;
    fields["kernels"] = record.kernels;
  }
  return fields;
}

Result<std::string> locate_simulator(const std::string& executable_path,
                                     const std::function<bool(const std::string&)>& exists) {
  std::string directory = executable_path.substr(0, executable_path.rfind('/') + 1);
  std::vector<std::string> candidates = {directory + "../lib/gpushare/sim",
                                         directory + "../" GPUSHARE_INSTALL_LIBDIR "/gpushare/sim"};
  for (const std::string& candidate : candidates) {
    if (exists(candidate + "/libcuda.so.1")) return candidate;
  }
  return make_error("the simulated GPU is not installed (looked for libcuda.so.1 in " +
                    candidates[0] + " and " + candidates[1] + ")");
}

}  // namespace gpushare::probe
