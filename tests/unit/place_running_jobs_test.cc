// The placer's table of running jobs against std::unordered_map: the same
// answers over a long random run of adds, finds and removals (which
// exercises growth, probe runs and the gap closing after a removal).
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <unordered_map>

#include "place/running_jobs.h"

using gpushare::place::RunningJobs;

TEST_CASE("running jobs: the same answers as a map", "[place][running_jobs]") {
  RunningJobs table;
  std::unordered_map<std::string, double> reference;
  std::mt19937 random(7);
  for (int step = 0; step < 200000; ++step) {
    // Ids from a pool, so finds hit and miss and removals find their job.
    std::string id = "job-" + std::to_string(random() % 5000);
    switch (random() % 4) {
      case 0:
      case 1: {
        double util = static_cast<double>(step);
        table[id] = RunningJobs::Running{{static_cast<std::uint32_t>(step)}, util};
        reference[id] = util;
        break;
      }
      case 2: {
        bool removed = table.erase(id);
        REQUIRE(removed == (reference.erase(id) == 1));
        break;
      }
      default: {
        RunningJobs::Running* found = table.find(id);
        auto it = reference.find(id);
        REQUIRE((found != nullptr) == (it != reference.end()));
        REQUIRE(table.contains(id) == (found != nullptr));
        if (found != nullptr) REQUIRE(found->util == it->second);
      }
    }
    REQUIRE(table.size() == reference.size());
  }
  // Everything left is still reachable, with its own value.
  for (const auto& [id, util] : reference) {
    RunningJobs::Running* found = table.find(id);
    REQUIRE(found != nullptr);
    CHECK(found->util == util);
    CHECK(found->gpus.size() == 1);
  }
}

TEST_CASE("running jobs: operator[] adds an empty job once", "[place][running_jobs]") {
  RunningJobs table;
  CHECK_FALSE(table.contains("a"));
  table["a"].gpus.push_back(1);
  table["a"].gpus.push_back(2);
  CHECK(table.size() == 1);
  CHECK(table.find("a")->gpus.size() == 2);
  CHECK(table.find("b") == nullptr);
  CHECK(table.erase("a"));
  CHECK_FALSE(table.erase("a"));
  CHECK(table.size() == 0);
}
