// The spill's batch planner (interpose/memory/spill_plan.h): which
// allocations move and the order of the driver calls, without a driver.
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "interpose/memory/spill_plan.h"
#include "vocab/job.h"

using namespace gpushare::interpose;
using gpushare::kNoLimit;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::vector<MigrationStep> plan(const std::vector<MigrationCandidate>& candidates,
                                const std::vector<std::size_t>& chosen, int streams) {
  std::vector<MigrationStep> steps(batch_steps(chosen.size()));
  std::size_t n = plan_batch(candidates.data(), chosen.data(), chosen.size(), streams, steps.data(),
                             steps.size());
  steps.resize(n);
  return steps;
}

}  // namespace

TEST_CASE("a spill takes the largest device-resident allocations until the target holds",
          "[interpose][spill]") {
  // Sorted largest first, as the spill tick collects them.
  std::vector<MigrationCandidate> c = {
      {512 * kMiB, false}, {256 * kMiB, true}, {256 * kMiB, false}, {64 * kMiB, false}};
  std::size_t chosen[4];
  // Resident: 512 + 256 + 64 = 832 MiB; target 100 MiB: 512 and 256 go.
  REQUIRE(choose_spill(c.data(), c.size(), 832 * kMiB, 100 * kMiB, chosen) == 2);
  CHECK(chosen[0] == 0);
  CHECK(chosen[1] == 2);  // the host-resident one is skipped
  // Already under the target: nothing.
  CHECK(choose_spill(c.data(), c.size(), 832 * kMiB, 900 * kMiB, chosen) == 0);
  // Target 0: every device-resident one.
  CHECK(choose_spill(c.data(), c.size(), 832 * kMiB, 0, chosen) == 3);
}

TEST_CASE("a restore brings back what fits under the target and in the room",
          "[interpose][spill]") {
  std::vector<MigrationCandidate> c = {
      {512 * kMiB, true}, {256 * kMiB, true}, {128 * kMiB, false}, {64 * kMiB, true}};
  std::size_t chosen[4];
  // No target, room for 400 MiB: 512 does not fit, 256 and 64 do.
  REQUIRE(choose_restore(c.data(), c.size(), 128 * kMiB, kNoLimit, 400 * kMiB, chosen) == 2);
  CHECK(chosen[0] == 1);
  CHECK(chosen[1] == 3);
  // Target 500 MiB with 128 resident: 256 fits (384), 64 too (448); 512 not.
  REQUIRE(choose_restore(c.data(), c.size(), 128 * kMiB, 500 * kMiB, kNoLimit, chosen) == 2);
  CHECK(chosen[0] == 1);
  // Plenty of both: all three host-resident ones.
  CHECK(choose_restore(c.data(), c.size(), 0, kNoLimit, kNoLimit, chosen) == 3);
}

TEST_CASE("a batch orders every migration after the legacy stream and waits only at the end",
          "[interpose][spill]") {
  std::vector<MigrationCandidate> c;
  std::vector<std::size_t> chosen;
  for (int i = 0; i < 10; ++i) {
    c.push_back({static_cast<std::uint64_t>(10 - i) * 100 * kMiB, false});
    chosen.push_back(static_cast<std::size_t>(i));
  }
  std::vector<MigrationStep> steps = plan(c, chosen, kMigrationStreams);
  REQUIRE(steps.size() == 1 + kMigrationStreams + 2 * c.size() + kMigrationStreams);
  // The event on the legacy stream first, then every stream waits for it.
  CHECK(steps[0].kind == StepKind::kRecordLegacy);
  bool waited[kMigrationStreams] = {};
  for (int s = 0; s < kMigrationStreams; ++s) {
    REQUIRE(steps[1 + s].kind == StepKind::kStreamWait);
    waited[steps[1 + s].stream] = true;
  }
  for (bool w : waited) CHECK(w);
  // Then advice and prefetch per allocation, in the chosen (largest-first)
  // order, no synchronisation among them; each allocation exactly once.
  std::uint64_t load[kMigrationStreams] = {};
  std::size_t next = 0;
  std::size_t first_sync = steps.size();
  for (std::size_t n = 1 + kMigrationStreams; n < steps.size(); ++n) {
    if (steps[n].kind == StepKind::kSynchronize) {
      first_sync = n < first_sync ? n : first_sync;
      continue;
    }
    REQUIRE(n < first_sync);  // nothing is issued after the first wait
    REQUIRE(steps[n].kind == StepKind::kAdvise);
    REQUIRE(steps[n + 1].kind == StepKind::kPrefetch);
    CHECK(steps[n].item == chosen[next]);
    CHECK(steps[n + 1].item == chosen[next]);
    CHECK(steps[n + 1].stream == steps[n].stream);
    REQUIRE(steps[n].stream >= 0);
    REQUIRE(steps[n].stream < kMigrationStreams);
    load[steps[n].stream] += c[steps[n].item].bytes;
    ++next;
    ++n;
  }
  CHECK(next == chosen.size());
  CHECK(steps.size() - first_sync == kMigrationStreams);  // one wait per stream, at the end
  // Largest first onto the least loaded stream (in 100 MiB): 10, 9, 8, 7
  // one each; 6 joins 7, 5 joins 8, 4 joins 9, 3 joins 10 (all 13); 2 and
  // 1 go to the first two: 15, 14, 13, 13 (one stream alone would hold 55).
  std::vector<std::uint64_t> loads(load, load + kMigrationStreams);
  std::sort(loads.begin(), loads.end());
  CHECK(loads == std::vector<std::uint64_t>{1300 * kMiB, 1300 * kMiB, 1400 * kMiB, 1500 * kMiB});
}

TEST_CASE("a batch without migration streams runs on the legacy stream and waits once",
          "[interpose][spill]") {
  std::vector<MigrationCandidate> c = {{300 * kMiB, false}, {200 * kMiB, false}};
  std::vector<MigrationStep> steps = plan(c, {0, 1}, 0);
  REQUIRE(steps.size() == 5);
  CHECK(steps[0].kind == StepKind::kAdvise);
  CHECK(steps[1].kind == StepKind::kPrefetch);
  CHECK(steps[2].kind == StepKind::kAdvise);
  CHECK(steps[3].kind == StepKind::kPrefetch);
  CHECK(steps[4].kind == StepKind::kSynchronize);
  for (const MigrationStep& step : steps) CHECK(step.stream == -1);
  // Too little room for the steps: nothing planned.
  std::vector<MigrationStep> small(3);
  std::size_t chosen[2] = {0, 1};
  CHECK(plan_batch(c.data(), chosen, 2, 2, small.data(), small.size()) == 0);
}
