#include "common/kernel_trace.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

using gpushare::parse_kernel_trace;

namespace {

constexpr const char* kHeader = "launch_us,start_us,kernel_us,stream,kernel\n";
constexpr const char* kSyncsHeader = "call_us,return_us,call\n";

std::string error_of(const std::string& csv, const std::string& syncs = "",
                     const std::string& syncs_name = "") {
  auto parsed = parse_kernel_trace(csv, "t.csv", syncs, syncs_name);
  REQUIRE_FALSE(parsed.ok());
  return parsed.error().message;
}

}  // namespace

TEST_CASE("kernel trace: steps end at the synchronising calls", "[kernel-trace]") {
  std::string csv = std::string(kHeader) +
                    "0.0,5.0,1.5,7,void a<8, b>\n"
                    "10.0,12.0,2.0,7,k2\n"
                    "100.0,101.0,3.0,7,k3\n"
                    "130.5,131.0,4.0,7,k4\n";
  std::string syncs = std::string(kSyncsHeader) + "50.0,60.0,cudaDeviceSynchronize\n" +
                      "200.0,201.0,cudaDeviceSynchronize\n";
  auto parsed = parse_kernel_trace(csv, "t.csv", syncs, "t.syncs.csv");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->steps.size() == 2);  // nothing after the last call: no third step
  REQUIRE(parsed->steps[0].kernels.size() == 2);
  CHECK(parsed->steps[0].kernels[1].launch_offset_us == 10.0);
  CHECK(parsed->steps[0].kernels[0].kernel_us == 1.5);
  REQUIRE(parsed->steps[1].kernels.size() == 2);
  CHECK(parsed->steps[1].kernels[0].launch_offset_us == 0.0);  // from the step's first launch
  CHECK(parsed->steps[1].kernels[1].launch_offset_us == 30.5);
  CHECK(parsed->steps[1].kernels[1].kernel_us == 4.0);
}

TEST_CASE("kernel trace: without a syncs file the trace is one step", "[kernel-trace]") {
  std::string csv = std::string(kHeader) + "0,1,2,7,a\n\n5,6,7,7,b\n";
  auto parsed = parse_kernel_trace(csv, "t.csv", "", "");
  REQUIRE(parsed.ok());
  REQUIRE(parsed->steps.size() == 1);
  CHECK(parsed->steps[0].kernels.size() == 2);
}

TEST_CASE("kernel trace: bad input names file, line and column", "[kernel-trace]") {
  CHECK(error_of("") == "t.csv:1:1: empty file");
  CHECK(error_of("launch,start\n") ==
        "t.csv:1:1: expected the header 'launch_us,start_us,kernel_us,stream,kernel'");
  CHECK(error_of(std::string(kHeader) + "0,1,2,7,a\n1,2,x3,7,b\n") ==
        "t.csv:3:5: kernel_us: 'x3' is not a number");
  CHECK(error_of(std::string(kHeader) + "0,1,-2,7,a\n") ==
        "t.csv:2:5: kernel_us: '-2' is negative");
  CHECK(error_of(std::string(kHeader) + "0,1,2\n") == "t.csv:2:6: missing field 'stream'");
  CHECK(error_of(std::string(kHeader) + "5,6,1,7,a\n4,6,1,7,b\n") ==
        "t.csv:3:1: launch_us goes back in time (4.000000 after 5.000000)");
  CHECK(error_of(std::string(kHeader)) == "t.csv: no kernels");
  CHECK(error_of(std::string(kHeader) + "0,1,2,7,a\n", std::string(kSyncsHeader) + "5,,x\n",
                 "t.syncs.csv") == "t.syncs.csv:2:3: return_us: '' is not a number");
}

TEST_CASE("kernel trace: the shipped traces parse into three steps of hundreds of kernels",
          "[kernel-trace]") {
  for (const char* name : {"resnet50-32", "resnet50-128", "gpt2-8"}) {
    std::string base = std::string(GPUSHARE_SOURCE_DIR) + "/tests/data/kernel-traces/" + name;
    std::ifstream csv_file(base + ".csv"), syncs_file(base + ".syncs.csv");
    REQUIRE(csv_file);
    std::stringstream csv, syncs;
    csv << csv_file.rdbuf();
    syncs << syncs_file.rdbuf();
    auto parsed = parse_kernel_trace(csv.str(), base + ".csv", syncs.str(), base + ".syncs.csv");
    REQUIRE(parsed.ok());
    REQUIRE(parsed->steps.size() == 3);
    for (const auto& step : parsed->steps) {
      CHECK(step.kernels.size() >= 800);
      CHECK(step.kernels.size() <= 1000);
    }
  }
}

TEST_CASE("kernel trace: the syncs file sits beside the trace", "[kernel-trace]") {
  CHECK(gpushare::syncs_path_for("a/b.csv") == "a/b.syncs.csv");
  CHECK(gpushare::syncs_path_for("trace") == "trace.syncs.csv");
}
