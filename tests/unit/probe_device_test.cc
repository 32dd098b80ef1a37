#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "probe/device_report.h"

using namespace gpushare;
using namespace gpushare::probe;

namespace {

// The hardware as the test wants it; counts what the probe asked.
class FakeGpu final : public GpuApi {
 public:
  std::vector<DriverDevice> devices;
  bool nvml = true;
  bool simulator = false;
  std::string init_error;
  std::map<std::string, NvmlMemory> nvml_memory_by_uuid;
  std::uint64_t driver_used = 0;
  int driver_used_calls = 0;

  Status init() override {
    if (!init_error.empty()) return make_error(init_error);
    return {};
  }
  Result<int> device_count() override { return static_cast<int>(devices.size()); }
  Result<DriverDevice> device(int index) override { return devices.at(index); }
  Result<std::uint64_t> driver_used_bytes(int) override {
    ++driver_used_calls;
    return driver_used;
  }
  bool has_nvml() const override { return nvml; }
  Result<NvmlMemory> nvml_memory(const std::string& uuid) override {
    auto found = nvml_memory_by_uuid.find(uuid);
    if (found == nvml_memory_by_uuid.end()) return make_error("unknown UUID " + uuid);
    return found->second;
  }
  std::optional<SimStats> sim_stats(int index) override {
    if (!simulator) return std::nullopt;
    return SimStats{1000u + static_cast<unsigned>(index), 0, 5000000, 42};
  }
};

DriverDevice a100(std::uint8_t first_uuid_byte) {
  DriverDevice device;
  device.name = "NVIDIA A100-SXM4-40GB";
  device.uuid[0] = first_uuid_byte;
  device.uuid[15] = 0xff;
  device.mem_total_bytes = 40ull << 30;
  device.sms = 108;
  device.cc_major = 8;
  device.cc_minor = 0;
  return device;
}

}  // namespace

TEST_CASE("UUIDs print as NVML prints them", "[probe]") {
  std::array<std::uint8_t, 16> uuid{};
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<std::uint8_t>(0x10 * (i % 16) + i);
  CHECK(format_uuid(uuid) == "GPU-00112233-4455-6677-8899-aabbccddeeff");
}

TEST_CASE("one record per device, memory use from NVML", "[probe]") {
  FakeGpu gpu;
  gpu.devices = {a100(0xab), a100(0xcd)};
  gpu.nvml_memory_by_uuid[format_uuid(gpu.devices[0].uuid)] = {40ull << 30, 3ull << 30};
  gpu.nvml_memory_by_uuid[format_uuid(gpu.devices[1].uuid)] = {40ull << 30, 5ull << 30};
  auto records = probe_devices(gpu);
  REQUIRE(records);
  REQUIRE(records->size() == 2);
  const DeviceRecord& second = (*records)[1];
  CHECK(second.index == 1);
  CHECK(second.uuid == "GPU-cd000000-0000-0000-0000-0000000000ff");
  CHECK(second.mem_used_bytes == (5ull << 30));
  CHECK(second.mem_source == "nvml");
  CHECK(second.compute_capability == "8.0");
  CHECK_FALSE(second.simulated);
  CHECK(gpu.driver_used_calls == 0);  // no context was made for nothing

  nlohmann::ordered_json fields = device_fields(second);
  CHECK(
      fields.dump() ==
      R"({"index":1,"name":"NVIDIA A100-SXM4-40GB","uuid":"GPU-cd000000-0000-0000-0000-0000000000ff",)"
      R"("mem_total_bytes":42949672960,"mem_used_bytes":5368709120,"mem_source":"nvml","sms":108,)"
      R"("compute_capability":"8.0","simulated":false})");
}

TEST_CASE("without NVML the simulator's counters, then the driver, give memory use", "[probe]") {
  FakeGpu gpu;
  gpu.devices = {a100(1)};
  gpu.nvml = false;
  gpu.simulator = true;
  auto simulated = probe_devices(gpu);
  REQUIRE(simulated);
  CHECK((*simulated)[0].mem_source == "simulator");
  CHECK((*simulated)[0].mem_used_bytes == 1000);
  CHECK((*simulated)[0].simulated);
  CHECK(device_fields((*simulated)[0])["busy_ns"] == 5000000);
  CHECK(device_fields((*simulated)[0])["kernels"] == 42);

  gpu.simulator = false;
  gpu.driver_used = 777;
  auto driver = probe_devices(gpu);
  REQUIRE(driver);
  CHECK((*driver)[0].mem_source == "driver");
  CHECK((*driver)[0].mem_used_bytes == 777);
  CHECK(gpu.driver_used_calls == 1);
  CHECK_FALSE(device_fields((*driver)[0]).contains("busy_ns"));
}

TEST_CASE("an NVML that does not know the device falls back, a failing driver fails", "[probe]") {
  FakeGpu gpu;
  gpu.devices = {a100(2)};
  gpu.driver_used = 9;
  auto records = probe_devices(gpu);
  REQUIRE(records);
  CHECK((*records)[0].mem_source == "driver");

  gpu.init_error = "cuInit: CUDA_ERROR_NO_DEVICE";
  auto failed = probe_devices(gpu);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message == "cuInit: CUDA_ERROR_NO_DEVICE");
}

TEST_CASE("the simulator is found next to the installed program", "[probe]") {
  auto exists = [](const std::string& path) {
    return path == "/opt/gs/bin/../lib/gpushare/sim/libcuda.so.1";
  };
  auto found = locate_simulator("/opt/gs/bin/gpushare-probe", exists);
  REQUIRE(found);
  CHECK(*found == "/opt/gs/bin/../lib/gpushare/sim");
  auto missing = locate_simulator("/usr/bin/gpushare-probe", exists);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("the simulated GPU is not installed") == 0);
}
