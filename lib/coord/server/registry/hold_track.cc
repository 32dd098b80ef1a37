#include "coord/server/registry/hold_track.h"

namespace gpushare::coord::server {

HoldSample hold_sample(const TelemetryPage& t, std::uint64_t now_ns) {
  HoldSample s;
  s.now_ns = now_ns;
  s.launches = t.launches.load(std::memory_order_relaxed);
  s.gpu_busy_ns = t.gpu_busy_ns.load(std::memory_order_relaxed);
  for (int i = 0; i < kHoldReasons; ++i) s.held_ns[i] = t.held_ns[i].load(std::memory_order_relaxed);
  s.hold_reason = t.hold_reason.load(std::memory_order_relaxed);
  if (s.hold_reason >= static_cast<std::uint64_t>(kHoldReasons)) s.hold_reason = kHoldNone;
  s.hold_since_ns = t.hold_since_ns.load(std::memory_order_relaxed);
  s.launch_cost_ns = t.launch_cost_ns.load(std::memory_order_relaxed);
  return s;
}

void HoldTrack::add(const HoldSample& sample) {
  samples_.push_back(sample);
  // Keep one sample at or beyond the window's start, so that the window
  // spans it whole once the job has run that long.
  while (samples_.size() > 2 && sample.now_ns - samples_[1].now_ns >= kHoldWindowNs) {
    samples_.pop_front();
  }
}

const HoldSample& HoldTrack::last() const {
  static const HoldSample kNone;
  return samples_.empty() ? kNone : samples_.back();
}

HoldWindow HoldTrack::window() const {
  HoldWindow w;
  if (samples_.size() < 2) return w;
  const HoldSample& a = samples_.front();
  const HoldSample& b = samples_.back();
  // Counters only grow while one process lives; a smaller one is a new
  // page, counted from zero.
  auto delta = [](std::uint64_t from, std::uint64_t to) { return to >= from ? to - from : to; };
  w.span_ns = b.now_ns - a.now_ns;
  w.launches = delta(a.launches, b.launches);
  w.gpu_ns = delta(a.gpu_busy_ns, b.gpu_busy_ns);
  for (int i = 0; i < kHoldReasons; ++i) {
    w.held_ns[i] = delta(a.held_ns[i], b.held_ns[i]);
    if (i != static_cast<int>(kHoldNone)) w.held_total_ns += w.held_ns[i];
  }
  return w;
}

namespace {

// The job's own reason, in gpushare-ctl's words; own queued work is the
// job running (its work is on the GPU).
const char* word_of(std::uint64_t reason, std::uint64_t launch_cost_ns) {
  switch (reason) {
    case kHoldProductionBusy:
    case kHoldProductionDue:
      return launch_cost_ns == 0 ? "learning" : "waiting-for-gap";
    case kHoldComputeCap:
      return "compute-cap";
    case kHoldLaunchBudget:
      return "launch-budget";
    case kHoldPaused:
      return "paused-operator";
    default:
      return "running";
  }
}

}  // namespace

std::string hold_word(bool paused_operator, bool paused_memory, const HoldSample& last,
                      const HoldWindow& window, std::uint64_t now_ns,
                      std::uint64_t total_launches) {
  if (paused_operator) return "paused-operator";
  if (paused_memory) return "paused-memory";
  if (last.hold_reason != kHoldNone && last.hold_since_ns != 0 &&
      now_ns >= last.hold_since_ns + kHoldNowNs) {
    return word_of(last.hold_reason, last.launch_cost_ns);
  }
  if (window.span_ns > 0 && window.held_total_ns * 2 >= window.span_ns) {
    std::uint64_t most = kHoldNone;
    for (int i = 1; i < kHoldReasons; ++i) {
      if (window.held_ns[i] > window.held_ns[most]) most = static_cast<std::uint64_t>(i);
    }
    return word_of(most, last.launch_cost_ns);
  }
  if (window.span_ns > 0 ? window.launches == 0 : total_launches == 0) return "idle";
  return "running";
}

}  // namespace gpushare::coord::server
