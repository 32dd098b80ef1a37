// Algorithm 1's rules at their edges: each boundary is where the placer
// and the replay's antman policy must agree (both call these).
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>

#include "place/antman_rules.h"

using namespace gpushare::place::antman;

TEST_CASE("antman rules: quota admits up to the quota and no further", "[place][replay]") {
  CHECK(within_quota(6, 2, 8));
  CHECK_FALSE(within_quota(7, 2, 8));
  CHECK(within_quota(0, 0, 0));
  CHECK_FALSE(within_quota(0, 1, 0));
}

TEST_CASE("antman rules: a job queued exactly the threshold converts", "[place][replay]") {
  CHECK(queued_too_long(100, 100.0));
  CHECK_FALSE(queued_too_long(99.5, 100.0));
  CHECK_FALSE(queued_too_long(1e9, std::nullopt));
  CHECK(auto_class(true, false) == gpushare::kQosProduction);
  CHECK(auto_class(true, true) == gpushare::kQosOpportunistic);
  CHECK(auto_class(false, false) == gpushare::kQosOpportunistic);
}

TEST_CASE("antman rules: a GPU at M takes no opportunistic job", "[place][replay]") {
  CHECK(takes_opportunistic(0.79, 0.8));
  CHECK_FALSE(takes_opportunistic(0.8, 0.8));
}

TEST_CASE("antman rules: memory fits exactly and opportunistic memory spills", "[place][replay]") {
  CHECK(memory_fits<std::uint64_t>(16, 16));
  CHECK_FALSE(memory_fits<std::uint64_t>(15, 16));
  // 10 used of 16, 6 of it opportunistic: a production job can have 12.
  CHECK(production_memory<std::uint64_t>(16, 10, 6) == 12);
  // Opportunistic figures above what is used (stale) pin nothing.
  CHECK(production_memory<std::uint64_t>(16, 4, 6) == 16);
  // More pinned than the GPU has: nothing, not a wrapped-around figure.
  CHECK(production_memory<std::uint64_t>(16, 20, 0) == 0);
  CHECK(production_memory(16.0, 3.5, 3.5) == 16.0);
}

TEST_CASE("antman rules: reservations and upgrades", "[place][replay]") {
  CHECK(may_reserve({true, false}, true));
  CHECK_FALSE(may_reserve({true, true}, true));
  CHECK(may_reserve({true, true}, false));
  CHECK_FALSE(may_reserve({false, false}, false));
  CHECK(better_reservation(3, 2));
  CHECK_FALSE(better_reservation(2, 2));  // ties go to the node seen first
  CHECK(may_upgrade(true, false, true));
  CHECK_FALSE(may_upgrade(false, false, true));
  CHECK_FALSE(may_upgrade(true, true, true));
  CHECK_FALSE(may_upgrade(true, false, false));
}
