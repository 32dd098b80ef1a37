#include <catch2/catch.hpp>

#include "coord/server/registry/hold_track.h"

using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

HoldSample at(std::uint64_t ms, std::uint64_t launches, std::uint64_t gpu_ms,
              std::uint64_t gap_wait_ms = 0, std::uint64_t cost_ns = 1'400'000) {
  HoldSample s;
  s.now_ns = ms * kMs;
  s.launches = launches;
  s.gpu_busy_ns = gpu_ms * kMs;
  s.held_ns[kHoldProductionBusy] = gap_wait_ms * kMs;
  s.launch_cost_ns = cost_ns;
  return s;
}

}  // namespace

TEST_CASE("the hold window is the last second of samples", "[coord][hold]") {
  HoldTrack track;
  CHECK(track.window().span_ns == 0);  // one sample or none: no window
  for (std::uint64_t ms = 0; ms <= 3000; ms += 25) track.add(at(ms, ms, ms / 4, ms / 2));
  HoldWindow w = track.window();
  CHECK(w.span_ns >= 1000 * kMs);
  CHECK(w.span_ns <= 1025 * kMs);
  CHECK(w.gpu_ns == w.span_ns / 4);
  CHECK(w.held_ns[kHoldProductionBusy] == w.span_ns / 2);
  CHECK(w.held_total_ns == w.span_ns / 2);
  CHECK(w.launches == w.span_ns / kMs);
}

TEST_CASE("a held job says why, a running one that it runs", "[coord][hold]") {
  HoldTrack track;
  // Waiting for production's gaps 80% of the time.
  for (std::uint64_t ms = 0; ms <= 1000; ms += 25) track.add(at(ms, ms / 10, ms / 10, ms * 8 / 10));
  std::uint64_t now = 1000 * kMs;
  CHECK(hold_word(false, false, track.last(), track.window(), now, 100) == "waiting-for-gap");
  // The coordinator's pauses come first.
  CHECK(hold_word(true, true, track.last(), track.window(), now, 100) == "paused-operator");
  CHECK(hold_word(false, true, track.last(), track.window(), now, 100) == "paused-memory");

  // Held as much while its cost per launch is not learned: learning.
  HoldTrack unlearned;
  for (std::uint64_t ms = 0; ms <= 1000; ms += 25) {
    unlearned.add(at(ms, ms / 10, ms / 10, ms * 8 / 10, 0));
  }
  CHECK(hold_word(false, false, unlearned.last(), unlearned.window(), now, 100) == "learning");

  // Waits under half the window: running; no launch at all: idle.
  HoldTrack running;
  for (std::uint64_t ms = 0; ms <= 1000; ms += 25) running.add(at(ms, ms, ms / 2, ms / 5));
  CHECK(hold_word(false, false, running.last(), running.window(), now, 1000) == "running");
  HoldTrack idle;
  for (std::uint64_t ms = 0; ms <= 1000; ms += 25) idle.add(at(ms, 7, 0));
  CHECK(hold_word(false, false, idle.last(), idle.window(), now, 7) == "idle");
  // Before any window: idle until it has launched.
  CHECK(hold_word(false, false, HoldSample{}, HoldWindow{}, now, 0) == "idle");
  CHECK(hold_word(false, false, HoldSample{}, HoldWindow{}, now, 3) == "running");
}

TEST_CASE("a wait that has lasted names its reason at once", "[coord][hold]") {
  HoldTrack track;
  for (std::uint64_t ms = 0; ms <= 1000; ms += 25) track.add(at(ms, ms, ms / 2));
  HoldSample last = track.last();
  last.hold_reason = kHoldComputeCap;
  last.hold_since_ns = 900 * kMs;
  CHECK(hold_word(false, false, last, track.window(), 1000 * kMs, 1000) == "running");  // 100 ms
  CHECK(hold_word(false, false, last, track.window(), 1200 * kMs, 1000) == "compute-cap");
  last.hold_reason = kHoldLaunchBudget;
  CHECK(hold_word(false, false, last, track.window(), 1200 * kMs, 1000) == "launch-budget");
  // Its own queued work holding it is the job running.
  last.hold_reason = kHoldOwnWork;
  CHECK(hold_word(false, false, last, track.window(), 1200 * kMs, 1000) == "running");
}
