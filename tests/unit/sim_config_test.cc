#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "simgpu/config.h"

using gpushare::simgpu::load_config;
using gpushare::simgpu::SimConfig;

namespace {

using Environment = std::map<std::string, std::string>;

const char* lookup(const char* name, void* context) {
  auto* environment = static_cast<Environment*>(context);
  auto found = environment->find(name);
  return found == environment->end() ? nullptr : found->second.c_str();
}

struct Loaded {
  bool ok;
  SimConfig config;
  std::string error;
};

Loaded load(Environment environment) {
  Loaded loaded{};
  char error[512];
  loaded.ok = load_config(lookup, &environment, &loaded.config, error, sizeof error);
  loaded.error = error;
  return loaded;
}

}  // namespace

TEST_CASE("the simulator's defaults describe one 16 GiB, 108-SM device", "[sim]") {
  Loaded loaded = load({{"GPUSHARE_SIM_STATE", "/tmp/x"}});
  REQUIRE(loaded.ok);
  CHECK(std::string(loaded.config.state_path) == "/tmp/x");
  CHECK(loaded.config.device_count == 1);
  CHECK(loaded.config.devices[0].memory_bytes == (16ull << 30));
  CHECK(loaded.config.devices[0].ctx_overhead_bytes == (524ull << 20));  // an H100's context
  CHECK(loaded.config.devices[0].sms == 108);
  CHECK(loaded.config.driver_version == 13000);
  CHECK(loaded.config.default_kernel_ns == 1000000);
  CHECK(loaded.config.managed_slowdown_milli == 4000);
  CHECK(loaded.config.max_pending == 1024);
  CHECK(loaded.config.sched_policy == 0);  // time slices
  CHECK(loaded.config.timeslice_ns == 2000000);
  CHECK(loaded.config.switch_ns == 151000);
  CHECK(loaded.config.cold_ns == 250000);  // fitted to the H100's pairs (docs/simulated-gpu.md)
}

TEST_CASE("the scheduling policy slice and switch cost are read from the environment", "[sim]") {
  Loaded loaded = load({{"GPUSHARE_SIM_SCHED", "fifo"},
                        {"GPUSHARE_SIM_TIMESLICE", "0.5"},
                        {"GPUSHARE_SIM_SWITCH_US", "0"},
                        {"GPUSHARE_SIM_SWITCH_COLD_US", "40"}});
  REQUIRE(loaded.ok);
  CHECK(loaded.config.cold_ns == 40000);
  CHECK(loaded.config.sched_policy == 1);
  CHECK(loaded.config.timeslice_ns == 500000);
  CHECK(loaded.config.switch_ns == 0);
  Loaded sliced = load({{"GPUSHARE_SIM_SCHED", "timeslice"}, {"GPUSHARE_SIM_TIMESLICE", "20"}});
  REQUIRE(sliced.ok);
  CHECK(sliced.config.sched_policy == 0);
  CHECK(sliced.config.timeslice_ns == 20000000);
}

TEST_CASE("without GPUSHARE_SIM_STATE the state file is per user, in a private directory",
          "[sim]") {
  Loaded loaded = load({});
  REQUIRE(loaded.ok);
  std::string path = loaded.config.state_path;
  CHECK(path.find("/gpushare-sim." + std::to_string(getuid()) + "/state") != std::string::npos);
  CHECK(loaded.config.state_in_private_directory);
  Loaded explicit_path = load({{"GPUSHARE_SIM_STATE", "/somewhere/state"}});
  REQUIRE(explicit_path.ok);
  CHECK_FALSE(explicit_path.config.state_in_private_directory);
}

TEST_CASE("per-device lists repeat their last value", "[sim]") {
  Loaded loaded = load({{"GPUSHARE_SIM_DEVICES", "3"},
                        {"GPUSHARE_SIM_MEMORY", "8GiB,4GiB"},
                        {"GPUSHARE_SIM_SMS", "80"},
                        {"GPUSHARE_SIM_CTX_OVERHEAD", "0"}});
  REQUIRE(loaded.ok);
  CHECK(loaded.config.device_count == 3);
  CHECK(loaded.config.devices[0].memory_bytes == (8ull << 30));
  CHECK(loaded.config.devices[1].memory_bytes == (4ull << 30));
  CHECK(loaded.config.devices[2].memory_bytes == (4ull << 30));
  CHECK(loaded.config.devices[2].sms == 80);
  CHECK(loaded.config.devices[1].ctx_overhead_bytes == 0);
}

TEST_CASE("fractional settings are exact", "[sim]") {
  Loaded loaded = load({{"GPUSHARE_SIM_MANAGED_SLOWDOWN", "2.5"},
                        {"GPUSHARE_SIM_MIGRATE_BANDWIDTH", "1.5GiB"},
                        {"GPUSHARE_SIM_MEMORY", "1.5GiB"}});
  REQUIRE(loaded.ok);
  CHECK(loaded.config.managed_slowdown_milli == 2500);
  CHECK(loaded.config.migrate_bytes_per_s == 1610612736ull);
  CHECK(loaded.config.devices[0].memory_bytes == 1610612736ull);
}

TEST_CASE("bad settings are refused with the variable and the value", "[sim]") {
  struct Case {
    Environment environment;
    std::string message;
  } cases[] = {
      {{{"GPUSHARE_SIM_MEMORY", "12XB"}}, "GPUSHARE_SIM_MEMORY: '12XB' has an unknown unit"},
      {{{"GPUSHARE_SIM_MEMORY", "50%"}}, "GPUSHARE_SIM_MEMORY: '50%' is a percentage"},
      {{{"GPUSHARE_SIM_MEMORY", "1KiB"}}, "GPUSHARE_SIM_MEMORY: '1KiB' is out of range"},
      {{{"GPUSHARE_SIM_DEVICES", "0"}}, "GPUSHARE_SIM_DEVICES: '0' is out of range (1 to 8)"},
      {{{"GPUSHARE_SIM_DEVICES", "9"}}, "GPUSHARE_SIM_DEVICES: '9' is out of range (1 to 8)"},
      {{{"GPUSHARE_SIM_DEVICES", "two"}}, "GPUSHARE_SIM_DEVICES: 'two' is not a number"},
      {{{"GPUSHARE_SIM_SMS", "1.5"}}, "GPUSHARE_SIM_SMS: '1.5' is not a whole number"},
      {{{"GPUSHARE_SIM_STATE", ""}}, "GPUSHARE_SIM_STATE: '' is empty"},
      {{{"GPUSHARE_SIM_MEMORY", "1GiB"}, {"GPUSHARE_SIM_CTX_OVERHEAD", "1GiB"}},
       "GPUSHARE_SIM_CTX_OVERHEAD: 1073741824 bytes leaves nothing of device 0"},
      {{{"GPUSHARE_SIM_MANAGED_SLOWDOWN", "-1"}},
       "GPUSHARE_SIM_MANAGED_SLOWDOWN: '-1' is negative"},
      {{{"GPUSHARE_SIM_MAX_PENDING", "0"}}, "GPUSHARE_SIM_MAX_PENDING: '0' is out of range"},
      {{{"GPUSHARE_SIM_SCHED", "rr"}}, "GPUSHARE_SIM_SCHED: 'rr' is neither"},
      {{{"GPUSHARE_SIM_TIMESLICE", "0"}}, "GPUSHARE_SIM_TIMESLICE: '0' is out of range"},
      {{{"GPUSHARE_SIM_TIMESLICE", "2ms"}}, "GPUSHARE_SIM_TIMESLICE: '2ms' is not a number"},
      {{{"GPUSHARE_SIM_TIMESLICE", "5000"}}, "GPUSHARE_SIM_TIMESLICE: '5000' is out of range"},
      {{{"GPUSHARE_SIM_SWITCH_US", "-3"}}, "GPUSHARE_SIM_SWITCH_US: '-3' is negative"},
  };
  for (const Case& c : cases) {
    Loaded loaded = load(c.environment);
    INFO(c.message);
    CHECK_FALSE(loaded.ok);
    CHECK(loaded.error.rfind(c.message, 0) == 0);
  }
}

TEST_CASE("the copy path defaults to an H100's 51 GB/s with 5 us per transfer", "[sim]") {
  Loaded loaded = load({});
  REQUIRE(loaded.ok);
  CHECK(loaded.config.link_bytes_per_s == 51'000'000'000ull);
  CHECK(loaded.config.link_latency_ns == 5000);
  CHECK(loaded.config.local_bytes_per_s == 800'000'000'000ull);
  CHECK(loaded.config.migrate_bytes_per_s == 0);  // migrations at the link's speed
  CHECK(loaded.config.evict);
}

TEST_CASE("the copy path's settings are read exactly", "[sim]") {
  Loaded loaded = load({{"GPUSHARE_SIM_PCIE_GBPS", "12.5"},
                        {"GPUSHARE_SIM_PCIE_LATENCY_US", "0"},
                        {"GPUSHARE_SIM_DTOD_GBPS", "0.001"},
                        {"GPUSHARE_SIM_EVICT", "off"}});
  REQUIRE(loaded.ok);
  CHECK(loaded.config.link_bytes_per_s == 12'500'000'000ull);
  CHECK(loaded.config.link_latency_ns == 0);
  CHECK(loaded.config.local_bytes_per_s == 1'000'000ull);
  CHECK_FALSE(loaded.config.evict);
}

TEST_CASE("bad copy-path settings are refused with the variable and the value", "[sim]") {
  struct Case {
    Environment environment;
    std::string message;
  } cases[] = {
      {{{"GPUSHARE_SIM_PCIE_GBPS", "0"}}, "GPUSHARE_SIM_PCIE_GBPS: '0' is out of range"},
      {{{"GPUSHARE_SIM_PCIE_GBPS", "fast"}}, "GPUSHARE_SIM_PCIE_GBPS: 'fast'"},
      {{{"GPUSHARE_SIM_PCIE_GBPS", "100001"}}, "GPUSHARE_SIM_PCIE_GBPS: '100001' is out of range"},
      {{{"GPUSHARE_SIM_DTOD_GBPS", "-1"}}, "GPUSHARE_SIM_DTOD_GBPS: '-1'"},
      {{{"GPUSHARE_SIM_PCIE_LATENCY_US", "1000001"}},
       "GPUSHARE_SIM_PCIE_LATENCY_US: '1000001' is out of range"},
      {{{"GPUSHARE_SIM_EVICT", "yes"}}, "GPUSHARE_SIM_EVICT: 'yes' is neither 'on' nor 'off'"},
  };
  for (const Case& c : cases) {
    Loaded loaded = load(c.environment);
    INFO(c.message);
    CHECK_FALSE(loaded.ok);
    CHECK(loaded.error.find(c.message) == 0);
  }
}
