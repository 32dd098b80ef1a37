// The owner of a job's limits (lib/coord/job/limits.h) while no coordinator
// is there: the asked-for limit resolved once per device into the start
// limits, which the limit in force falls back to. The state is
// process-global; each case runs in a process of its own.
#include <catch2/catch.hpp>
#include <memory>

#include "coord/job/limits.h"
#include "vocab/size.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::job;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

SizeSpec spec_of(const char* text) {
  SizeSpec spec;
  std::string_view unit;
  REQUIRE(parse_size_spec(text, &spec, &unit) == SizeError::kNone);
  return spec;
}

}  // namespace

TEST_CASE("limits: a percentage is resolved once per device into its start limit", "[limits]") {
  SizeSpec half = spec_of("50%");
  request_mem_limit(&half);
  std::uint64_t capacities[2] = {16 * kGiB, 80 * kGiB};
  start_limits_from_capacities(capacities, 2);
  CHECK(start_mem_limit(0) == 8 * kGiB);
  CHECK(start_mem_limit(1) == 40 * kGiB);
  // Unregistered, the limit in force is the start limit.
  CHECK(mem_limit(0) == 8 * kGiB);
  CHECK(mem_limit(1) == 40 * kGiB);
  // Devices beyond those enumerated, and bad indices, have none.
  CHECK(mem_limit(2) == kNoLimit);
  CHECK(mem_limit(-1) == kNoLimit);
  CHECK(start_mem_limit(kMaxDevices) == kNoLimit);
  // Before any device is known (NVML's view), the request resolves per capacity.
  CHECK(requested_mem_limit(4 * kGiB) == 2 * kGiB);
}

TEST_CASE("limits: without a request every device is unlimited", "[limits]") {
  request_mem_limit(nullptr);
  std::uint64_t capacities[1] = {16 * kGiB};
  start_limits_from_capacities(capacities, 1);
  CHECK(requested_mem_limit(16 * kGiB) == kNoLimit);
  CHECK(start_mem_limit(0) == kNoLimit);
  CHECK(mem_limit(0) == kNoLimit);
}

TEST_CASE("limits: unregistered, nothing is paused, targeted or refused", "[limits]") {
  CHECK_FALSE(paused());
  CHECK_FALSE(launch_gated());
  CHECK_FALSE(suspend_requested());
  CHECK(device_resident_target(0) == kNoLimit);
  CHECK(mem_refused_seq(0) == 0);
  ComputeLimits view = compute_limits(0);
  CHECK(view.launch_budget == kNoLimit);
  CHECK(view.compute_cap_ppm == kNoLimit);
  CHECK(view.yield_mask == 0);
  CHECK(view == ComputeLimits{});
  CHECK_FALSE(view.any());
}

TEST_CASE("compute limits: what the coordinator stores is what the job loads", "[limits]") {
  auto page = std::make_unique<LimitsPage>();
  DeviceLimits& device = page->devices[0];
  ComputeLimits none;
  store_compute_limits(device, none);
  store_yield_mask(device, 0);
  CHECK(load_compute_limits(device) == none);

  ComputeLimits set;
  set.launch_budget = 7;
  set.launch_window_ns = 50'000'000;
  set.max_queued = 3;
  set.compute_cap_ppm = 300'000;
  set.yield_mask = 5;  // not stored with the limits: it has its own writer
  store_compute_limits(device, set);
  ComputeLimits loaded = load_compute_limits(device);
  CHECK(loaded.launch_budget == 7);
  CHECK(loaded.launch_window_ns == 50'000'000);
  CHECK(loaded.max_queued == 3);
  CHECK(loaded.compute_cap_ppm == 300'000);
  CHECK(loaded.yield_mask == 0);
  store_yield_mask(device, 5);
  CHECK(load_compute_limits(device) == set);
  device.yield_share_ppm.store(333'333);  // layout 7: the job's part of a gap
  CHECK(load_compute_limits(device).yield_share_ppm == 333'333);
  device.yield_share_ppm.store(0);  // 0 reads as all of it
  CHECK(load_compute_limits(device).yield_share_ppm == kNoLimit);
  device.yield_turn.store(yield_turn_word(2, 3));  // layout 8: the third of three turns
  CHECK(load_compute_limits(device).yield_turn == 2);
  CHECK(load_compute_limits(device).yield_turns == 3);
  device.yield_turn.store((std::uint64_t{3} << 32) | 3);  // an index past the count: no turns
  CHECK(load_compute_limits(device).yield_turns == 0);
  CHECK(yield_turn_word(0, 1) == 0);  // one job alone takes no turns
  device.yield_turn.store(0);
  CHECK(set.any());
  ComputeLimits yield_only;
  yield_only.yield_mask = 1;
  CHECK(yield_only.any());
}
