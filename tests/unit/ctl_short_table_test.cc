#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "coord/ctl/table.h"
#include "coord/ctl/top_view.h"

using nlohmann::ordered_json;
using namespace gpushare::ctl;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

ordered_json production(const std::string& name) {
  return ordered_json{{"kind", "job"},
                      {"id", 1},
                      {"name", name},
                      {"qos", "production"},
                      {"device", "GPU-5e2f1c3a-0405-0607-0809-0a0b0c0d0e0f"},
                      {"mem_used_bytes", 3ull << 30},
                      {"mem_limit_bytes", 8ull << 30},
                      {"state", "running"},
                      {"speed_per_s", 41.234},
                      {"speed_unit", "iterations"},
                      {"solo_speed_per_s", 42.0},
                      {"hold", "running"},
                      {"window_ns", 1000000000},
                      {"free_gpu_ns_last_window", 380000000},
                      {"free_share_ppm", nullptr},
                      {"mem_host_resident_bytes", 0},
                      {"devices",
                       {{{"uuid", "GPU-5e2f1c3a-0405-0607-0809-0a0b0c0d0e0f"},
                         {"mem_total_bytes", 16ull << 30},
                         {"mem_used_bytes", 3ull << 30},
                         {"host_resident_bytes", 0}}}}};
}

ordered_json opportunistic(const std::string& name) {
  ordered_json j = production(name);
  j["id"] = 2;
  j["qos"] = "opportunistic";
  j["mem_used_bytes"] = 512ull << 20;
  j["mem_limit_bytes"] = nullptr;
  j["speed_per_s"] = 1234.5;
  j["speed_unit"] = "launches";
  j["solo_speed_per_s"] = nullptr;
  j["hold"] = "waiting-for-gap";
  j["free_share_ppm"] = 623456;
  j["mem_host_resident_bytes"] = 256ull << 20;
  j["devices"][0]["mem_used_bytes"] = 512ull << 20;
  j["devices"][0]["host_resident_bytes"] = 256ull << 20;
  return j;
}

}  // namespace

TEST_CASE("the short table says each class's figure in words", "[ctl][table]") {
  std::vector<std::string> lines =
      lines_of(job_table_short({production("train"), opportunistic("sweep")}));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "ID  NAME   CLASS  GPU       MEMORY     SPEED          SOLO/FREE  HOLD"
                    "             STATE");
  CHECK(lines[1] == "1   train  prod   5e2f1c3a  3GiB/8GiB  41.2 it/s      98% solo   running"
                    "          running");
  CHECK(lines[2] == "2   sweep  opp    5e2f1c3a  512MiB/-   1234 launch/s  62% free   "
                    "waiting-for-gap  running");
}

TEST_CASE("the short table fits its width by shortening names", "[ctl][table]") {
  std::string long_name(120, 'n');
  ordered_json paused = opportunistic(long_name);
  paused["state"] = "paused";
  paused["pause_reasons"] = {"memory"};
  std::vector<std::string> lines = lines_of(job_table_short({production(long_name), paused}, 100));
  for (const std::string& line : lines) CHECK(display_width(line) <= 100);
  CHECK(lines[1].find("nnnnnnn~") != std::string::npos);  // said cut, not silently
  CHECK(lines[2].find("paused (memory)") != std::string::npos);
}

TEST_CASE("names from other users cannot drive the terminal", "[ctl][table]") {
  std::string table = job_table_short({production("evil\x1b]0;owned\x07\xc2\x9b" "2J")});
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find('\x07') == std::string::npos);
  CHECK(table.find("\xc2\x9b") == std::string::npos);  // C1 CSI
  CHECK(table.find("evil\\x1b") != std::string::npos);
  std::string wide = job_table({production("evil\x1b[2J")});
  CHECK(wide.find('\x1b') == std::string::npos);
}

TEST_CASE("an opportunistic job with nothing free, or no figure, says so", "[ctl][table]") {
  ordered_json nothing = opportunistic("o");
  nothing["free_share_ppm"] = nullptr;
  nothing["free_gpu_ns_last_window"] = 0;
  CHECK(solo_or_free_cell(nothing) == "none free");
  nothing["free_gpu_ns_last_window"] = 19000000;  // under 1/50 of the window
  CHECK(solo_or_free_cell(nothing) == "none free");
  nothing["free_gpu_ns_last_window"] = 400000000;  // free, but no figure
  CHECK(solo_or_free_cell(nothing) == "-");
  nothing["free_gpu_ns_last_window"] = nullptr;
  CHECK(solo_or_free_cell(nothing) == "-");
  CHECK(solo_or_free_cell(production("p")) == "98% solo");
}

TEST_CASE("sizes and numbers for narrow cells", "[ctl][table]") {
  CHECK(short_size(0) == "0B");
  CHECK(short_size(1536ull << 20) == "1.5GiB");
  CHECK(short_size(16ull << 30) == "16GiB");
  CHECK(short_size((1ull << 30) - 1) == "1023MiB");  // truncated, never rounded up
  CHECK(short_number(41.234) == "41.2");
  CHECK(short_number(3.049) == "3.05");
  CHECK(short_number(1234.5) == "1234");
  CHECK(fit("abcdef", 4) == "abc~");
  CHECK(fit("ab", 4) == "ab");
  CHECK(display_width("caf\xc3\xa9") == 4);
}

TEST_CASE("top draws each GPU with its jobs and the node's totals", "[ctl][top]") {
  TopFrame frame;
  frame.clock = "12:01:07";
  frame.interval = "1s";
  frame.width = 100;
  frame.height = 40;
  std::vector<std::string> lines = top_lines({production("train"), opportunistic("sweep")}, frame);
  REQUIRE(lines.size() == 8);
  CHECK(lines[0] == "gpushare-ctl top  12:01:07  every 1s  2 jobs on 1 GPU  q quits");
  CHECK(lines[2] ==
        "GPU 5e2f1c3a  memory 3.5GiB of 16GiB, 256MiB spilled to host  free GPU time 38%");
  CHECK(lines[3].rfind("  ID  NAME   CLASS  SPEED", 0) == 0);
  CHECK(lines[4].find("train  prod") != std::string::npos);
  CHECK(lines[4].find("98% solo") != std::string::npos);
  CHECK(lines[5].find("sweep  opp") != std::string::npos);
  CHECK(lines[5].find("62% free   waiting-for-gap") != std::string::npos);
  CHECK(lines[5].find("256MiB") != std::string::npos);
  CHECK(lines[7] ==
        "node: 2 jobs (1 production, 1 opportunistic), 0 paused; 3.5GiB used, 256MiB spilled "
        "to host");
  for (const std::string& line : lines) CHECK(display_width(line) <= 100);
}

TEST_CASE("top fits a small terminal and says what it left out", "[ctl][top]") {
  TopFrame frame;
  frame.width = 40;
  frame.height = 5;
  std::vector<std::string> lines = top_lines({production("train"), opportunistic("sweep")}, frame);
  REQUIRE(lines.size() == 5);
  CHECK(lines[4] == "... 4 more lines: enlarge the terminal");
  for (const std::string& line : lines) CHECK(display_width(line) <= 40);
}

TEST_CASE("top with no jobs says so", "[ctl][top]") {
  std::vector<std::string> lines = top_lines({}, TopFrame{});
  CHECK(lines[2] == "no jobs registered with the coordinator");
}
