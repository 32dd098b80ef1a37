#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "coord/job/limits.h"
#include "interpose/core/settings.h"

using gpushare::kNoLimit;
using gpushare::kQosOpportunistic;
using gpushare::kQosProduction;
using gpushare::interpose::LogLevel;
using gpushare::interpose::read_settings;
using gpushare::interpose::Settings;

namespace {

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

Settings settings_from(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  Settings settings;
  read_settings(&fake_getenv, &settings);
  return settings;
}

// The limit on a device of `total` bytes once the settings' request is
// handed to its owner, as the interposer does at load.
std::uint64_t mem_limit_for(const Settings& settings, std::uint64_t total) {
  gpushare::coord::job::request_mem_limit(settings.has_mem_limit ? &settings.mem_limit : nullptr);
  std::uint64_t limit = gpushare::coord::job::requested_mem_limit(total);
  gpushare::coord::job::request_mem_limit(nullptr);
  return limit;
}

}  // namespace

TEST_CASE("no settings: production, no limit, errors only", "[interpose]") {
  Settings s = settings_from({});
  CHECK(s.error[0] == '\0');
  CHECK_FALSE(s.disabled);
  CHECK(s.qos == kQosProduction);
  CHECK(s.log_level == LogLevel::kError);
  CHECK(mem_limit_for(s, 16ull << 30) == kNoLimit);
  CHECK(std::string(s.job_name).empty());  // the coordinator client names it after the process
}

TEST_CASE("limits in bytes, units and percentages of each device", "[interpose]") {
  CHECK(mem_limit_for(settings_from({{"GPUSHARE_MEM_LIMIT", "2147483648"}}), 16ull << 30) ==
        2ull << 30);
  CHECK(mem_limit_for(settings_from({{"GPUSHARE_MEM_LIMIT", "2GiB"}}), 16ull << 30) == 2ull << 30);
  Settings half = settings_from({{"GPUSHARE_MEM_LIMIT", "50%"}});
  CHECK(mem_limit_for(half, 16ull << 30) == 8ull << 30);
  CHECK(mem_limit_for(half, 80ull << 30) == 40ull << 30);
  // Parsed once, above zero on the spec: a small percentage is a limit.
  Settings small = settings_from({{"GPUSHARE_MEM_LIMIT", "0.5%"}});
  CHECK(small.error[0] == '\0');
  CHECK(mem_limit_for(small, 16ull << 30) == (16ull << 30) / 200);
}

TEST_CASE("every other setting is read", "[interpose]") {
  Settings s = settings_from({{"GPUSHARE_QOS", "opportunistic"},
                              {"GPUSHARE_LOG", "debug"},
                              {"GPUSHARE_JOB", "train-1"},
                              {"GPUSHARE_SOCKET", "/run/x.sock"},
                              {"GPUSHARE_DISABLE", "1"}});
  CHECK(s.error[0] == '\0');
  CHECK(s.qos == kQosOpportunistic);
  CHECK(s.log_level == LogLevel::kDebug);
  CHECK(std::string(s.job_name) == "train-1");
  CHECK(std::string(s.socket_path) == "/run/x.sock");
  CHECK(s.disabled);
  CHECK_FALSE(settings_from({{"GPUSHARE_DISABLE", "0"}}).disabled);
}

TEST_CASE("invalid settings are errors naming the variable and value", "[interpose]") {
  auto error_of = [](std::map<std::string, std::string> env) {
    return std::string(settings_from(std::move(env)).error);
  };
  CHECK_THAT(error_of({{"GPUSHARE_MEM_LIMIT", "8XB"}}),
             Catch::Contains("invalid GPUSHARE_MEM_LIMIT: '8XB'") && Catch::Contains("unknown unit"));
  CHECK_THAT(error_of({{"GPUSHARE_MEM_LIMIT", ""}}), Catch::Contains("empty"));
  CHECK_THAT(error_of({{"GPUSHARE_MEM_LIMIT", "-1"}}), Catch::Contains("negative"));
  CHECK_THAT(error_of({{"GPUSHARE_MEM_LIMIT", "0"}}), Catch::Contains("must be above 0"));
  CHECK_THAT(error_of({{"GPUSHARE_MEM_LIMIT", "150%"}}), Catch::Contains("more than 100%"));
  CHECK_THAT(error_of({{"GPUSHARE_MEM_LIMIT", "99999999999TiB"}}), Catch::Contains("64 bits"));
  CHECK_THAT(error_of({{"GPUSHARE_QOS", "best"}}), Catch::Contains("invalid GPUSHARE_QOS 'best'"));
  CHECK_THAT(error_of({{"GPUSHARE_LOG", "loud"}}), Catch::Contains("invalid GPUSHARE_LOG 'loud'"));
  CHECK_THAT(error_of({{"GPUSHARE_SOCKET", std::string(200, 'x')}}), Catch::Contains("longer"));
}

TEST_CASE("GPUSHARE_SPILL turns managed backing of opportunistic memory on and off",
          "[interpose]") {
  CHECK(settings_from({}).spill);
  CHECK(settings_from({{"GPUSHARE_SPILL", "on"}}).spill);
  Settings off = settings_from({{"GPUSHARE_SPILL", "off"}});
  CHECK_FALSE(off.spill);
  CHECK(off.error[0] == '\0');
  Settings bad = settings_from({{"GPUSHARE_SPILL", "maybe"}});
  CHECK(std::string(bad.error) == "invalid GPUSHARE_SPILL 'maybe': expected on or off");
}

TEST_CASE("GPUSHARE_SUSPENDABLE turns VMM backing of plain memory on and off", "[interpose]") {
  CHECK_FALSE(settings_from({}).suspendable);
  CHECK(settings_from({{"GPUSHARE_SUSPENDABLE", "on"}}).suspendable);
  CHECK_FALSE(settings_from({{"GPUSHARE_SUSPENDABLE", "off"}}).suspendable);
  Settings bad = settings_from({{"GPUSHARE_SUSPENDABLE", "yes"}});
  CHECK(std::string(bad.error) == "invalid GPUSHARE_SUSPENDABLE 'yes': expected on or off");
}

TEST_CASE("GPUSHARE_LAUNCH_QUEUE turns the launch queue on and off", "[interpose]") {
  CHECK_FALSE(settings_from({}).launch_queue);
  CHECK_FALSE(settings_from({{"GPUSHARE_LAUNCH_QUEUE", ""}}).launch_queue);
  CHECK(settings_from({{"GPUSHARE_LAUNCH_QUEUE", "on"}}).launch_queue);
  CHECK_FALSE(settings_from({{"GPUSHARE_LAUNCH_QUEUE", "off"}}).launch_queue);
  Settings bad = settings_from({{"GPUSHARE_LAUNCH_QUEUE", "ON"}});
  CHECK(std::string(bad.error) == "invalid GPUSHARE_LAUNCH_QUEUE 'ON': expected on or off");
  CHECK_FALSE(bad.launch_queue);
}

TEST_CASE("GPUSHARE_COMPUTE_TRACE names the compute trace, bounded in length", "[interpose]") {
  CHECK(settings_from({}).compute_trace_path[0] == '\0');
  Settings on = settings_from({{"GPUSHARE_COMPUTE_TRACE", "/tmp/evidence/compute-trace-%p.jsonl"}});
  CHECK(std::string(on.compute_trace_path) == "/tmp/evidence/compute-trace-%p.jsonl");
  CHECK(on.error[0] == '\0');
  Settings long_path = settings_from({{"GPUSHARE_COMPUTE_TRACE", std::string(300, 'a').c_str()}});
  CHECK(std::string(long_path.error) == "GPUSHARE_COMPUTE_TRACE is longer than 255 bytes");
}
