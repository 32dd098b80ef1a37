// Why a job is held, and what GPU time it got: samples of a process's hold
// counters (control_block.h, "Hold reasons") over the last second, and the
// one word gpushare-ctl shows for them (gpushare-ctl(1), "Why a job is
// held"). The compute loop adds a sample per process every tick; ls and
// show read the window.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "coord/contract/control_block.h"

namespace gpushare::coord::server {

/// The window ls, show and the metrics report (shorter for a job that has
/// not run that long).
inline constexpr std::uint64_t kHoldWindowNs = 1'000'000'000;
/// A wait that has lasted this long names the reason by itself, whatever
/// the window says (a job held now, for a while, is held).
inline constexpr std::uint64_t kHoldNowNs = 250'000'000;

struct HoldSample {
  std::uint64_t now_ns = 0;
  std::uint64_t launches = 0;
  std::uint64_t gpu_busy_ns = 0;
  std::uint64_t held_ns[kHoldReasons] = {};
  std::uint64_t hold_reason = kHoldNone;  ///< at the sample
  std::uint64_t hold_since_ns = 0;
  std::uint64_t launch_cost_ns = 0;
};

/// The telemetry page's hold counters at `now_ns`.
HoldSample hold_sample(const TelemetryPage& telemetry, std::uint64_t now_ns);

/// What a job did over its last window: differences between the newest
/// sample and the oldest within kHoldWindowNs of it.
struct HoldWindow {
  std::uint64_t span_ns = 0;  ///< 0: fewer than two samples
  std::uint64_t launches = 0;
  std::uint64_t gpu_ns = 0;
  std::uint64_t held_ns[kHoldReasons] = {};
  std::uint64_t held_total_ns = 0;
};

class HoldTrack {
 public:
  void add(const HoldSample& sample);
  HoldWindow window() const;
  /// The newest sample (a zero one before any).
  const HoldSample& last() const;

 private:
  std::deque<HoldSample> samples_;
};

/// What gpushare-ctl says a job is doing, in one word: paused-operator,
/// paused-memory (the coordinator's pauses, first), then the job's own
/// word: waiting-for-gap (a followed production job is busy or due back),
/// compute-cap, launch-budget, learning (held while its cost per launch is
/// not learned yet), idle (no launch in the window), else running. A wait
/// that has lasted kHoldNowNs names the reason; otherwise the reason that
/// held the job longest, when waits took half the window or more.
std::string hold_word(bool paused_operator, bool paused_memory, const HoldSample& last,
                      const HoldWindow& window, std::uint64_t now_ns, std::uint64_t total_launches);

}  // namespace gpushare::coord::server
