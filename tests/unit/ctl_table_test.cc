#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "coord/ctl/table.h"

using nlohmann::ordered_json;

namespace {

// The cells of the table's second line (the first job), split on runs of
// spaces; cells with a space in them ("12.5 it/s") come out as two words.
std::vector<std::string> words(const std::string& table, int line) {
  std::istringstream lines(table);
  std::string text;
  for (int i = 0; i <= line; ++i) std::getline(lines, text);
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

ordered_json job(const char* unit, double slowdown_pct) {
  return ordered_json{{"kind", "job"},
                      {"id", 1},
                      {"name", "train"},
                      {"pid", 10},
                      {"uid", 0},
                      {"qos", "production"},
                      {"device", "GPU-00010203-0405"},
                      {"mem_used_bytes", 1u << 30},
                      {"mem_limit_bytes", nullptr},
                      {"launches", 800},
                      {"state", "running"},
                      {"speed_per_s", 82.952},
                      {"speed_unit", unit},
                      {"solo_speed_per_s", 32.001},
                      {"slowdown_pct", slowdown_pct},
                      {"launch_budget_per_s", 500},
                      {"max_queued", 2},
                      {"gpu_share_pct", 37.5},
                      {"gpu_share_limit_pct", nullptr},
                      {"compute_cap_pct", nullptr}};
}

}  // namespace

TEST_CASE("the job table's header names each column with its unit", "[ctl][table]") {
  std::string table = gpushare::ctl::job_table({});
  CHECK(table ==
        "ID  NAME  PID  UID  QOS  DEVICE  MEM-USED  MEM-LIMIT  LAUNCHES  SPEED  SOLO-SPEED  "
        "SLOWDOWN  LAUNCH-BUDGET  MAX-QUEUED  GPU-TIME  GPU-TIME-LIMIT  GPU-TIME-CAP  GPU-LAST-S  "
        "WAITED-FOR  HOLD  STATE\n");
}

TEST_CASE("speeds carry their unit, iterations or launches", "[ctl][table]") {
  std::vector<std::string> cells = words(gpushare::ctl::job_table({job("iterations", 2.5)}), 1);
  REQUIRE(cells.size() == 25);  // GPU-LAST-S, WAITED-FOR, HOLD: "-" where the record has none
  CHECK(cells[9] == "82.952");
  CHECK(cells[10] == "it/s");
  CHECK(cells[11] == "32.001");
  CHECK(cells[12] == "it/s");
  CHECK(cells[13] == "2.5%");
  CHECK(cells[14] == "500");
  CHECK(cells[15] == "launches/s");
  CHECK(cells[16] == "2");
  CHECK(cells[17] == "kernels");
  CHECK(cells[18] == "37.5%");
  cells = words(gpushare::ctl::job_table({job("launches", 2.5)}), 1);
  CHECK(cells[10] == "launches/s");
  CHECK(cells[12] == "launches/s");
}

TEST_CASE("a slowdown is never negative in the table", "[ctl][table]") {
  std::vector<std::string> cells =
      words(gpushare::ctl::job_table({job("iterations", -159.215)}), 1);
  CHECK(cells[13] == "0%");
}

TEST_CASE("the state names why a job waits unless an operator alone paused it", "[ctl][table]") {
  auto state_of = [](ordered_json reasons) {
    ordered_json j = job("iterations", 2.5);
    j["state"] = "paused";
    if (!reasons.is_null()) j["pause_reasons"] = reasons;
    std::string table = gpushare::ctl::job_table({j});
    std::string line = table.substr(table.find('\n') + 1);
    return line.substr(line.find("paused"));
  };
  CHECK(state_of(nullptr) == "paused\n");
  CHECK(state_of({"operator"}) == "paused\n");
  CHECK(state_of({"memory"}) == "paused (memory)\n");
  CHECK(state_of({"operator", "memory"}) == "paused (operator, memory)\n");
}

TEST_CASE("a job on several GPUs shows how many more its ranks use", "[ctl][table]") {
  ordered_json record = job("iterations", 0);
  record["ranks"] = ordered_json::array({{{"pid", 11}, {"gpus", {"GPU-00010203-0405"}}},
                                         {{"pid", 12}, {"gpus", {"GPU-0a0b0c0d-0e0f"}}},
                                         {{"pid", 13}, {"gpus", {"GPU-1a1b1c1d-1e1f"}}}});
  CHECK_THAT(gpushare::ctl::job_table({record}), Catch::Contains("GPU-00010203+2"));
  CHECK_THAT(gpushare::ctl::job_table({job("iterations", 0)}), !Catch::Contains("GPU-00010203+"));
}

TEST_CASE("a job on several GPUs names the rank the others wait for", "[ctl][table]") {
  ordered_json record = job("iterations", 0);
  record["ranks"] = ordered_json::array({{{"pid", 11}, {"gpus", {"GPU-00010203-0405"}}},
                                         {{"pid", 12}, {"gpus", {"GPU-0a0b0c0d-0e0f"}}}});
  record["waited_for_pid"] = 12;
  std::vector<std::string> cells = words(gpushare::ctl::job_table({record}), 1);
  REQUIRE(cells.size() == 25);
  CHECK(cells[22] == "12");  // WAITED-FOR, after GPU-LAST-S
  CHECK(gpushare::ctl::state_cell(record) == "running (waits for pid 12)");
  // Unknown (null, absent, or not a pid): a dash, and the state alone.
  for (ordered_json value : {ordered_json(nullptr), ordered_json("12; rm -rf"), ordered_json(1.5)}) {
    record["waited_for_pid"] = value;
    CHECK(words(gpushare::ctl::job_table({record}), 1)[22] == "-");
    CHECK(gpushare::ctl::state_cell(record) == "running");
  }
  record.erase("waited_for_pid");
  CHECK(gpushare::ctl::state_cell(record) == "running");
}

TEST_CASE("an opportunistic job using a waiting rank's wait says whose", "[ctl][table]") {
  ordered_json record = job("iterations", 0);
  record["qos"] = "opportunistic";
  record["uses_wait_of_pid"] = 12;
  CHECK(gpushare::ctl::state_cell(record) == "running (uses pid 12's wait)");
  for (ordered_json value : {ordered_json(nullptr), ordered_json("12; rm -rf"), ordered_json(1.5)}) {
    record["uses_wait_of_pid"] = value;
    CHECK(gpushare::ctl::state_cell(record) == "running");
  }
}
