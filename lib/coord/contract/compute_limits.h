// One device's compute limits: the one value type that the coordinator
// stores into the limits page, the job's owner of its limits
// (coord/job/limits.h) loads from it, and the launch throttle
// (interpose/compute/throttle_logic.h) enforces. Beside its layout
// (control_block.h, DeviceLimits), with the load and the store that both
// sides use, so that the fields and their order of publication are written
// once. Header-only, libc only: compiled into the interposer too.
#pragma once

#include <atomic>
#include <cstdint>

#include "coord/contract/control_block.h"

namespace gpushare::coord {

/// kNoLimit: none (for the three limits); 0: no yield slot to wait for.
struct ComputeLimits {
  std::uint64_t launch_budget = kNoLimit;  ///< launches per window
  std::uint64_t launch_window_ns = 0;      ///< the budget's window (> 0 when budgeted)
  std::uint64_t max_queued = kNoLimit;     ///< unfinished launches
  std::uint64_t compute_cap_ppm = kNoLimit;  ///< share of wall time on the GPU
  std::uint64_t yield_mask = 0;  ///< layout 4: production jobs' yield slots to wait for
  /// Layout 7: the job's part of a gap among the device's opportunistic
  /// jobs, parts per million; kNoLimit or 0: all of it (control_block.h).
  std::uint64_t yield_share_ppm = kNoLimit;
  /// Layout 8: the job's turn among the device's opportunistic jobs and
  /// their count (control_block.h, "Turns"); a count of 0 or 1: no turns.
  std::uint32_t yield_turn = 0;
  std::uint32_t yield_turns = 0;

  /// Whether a launch must take the throttle's path on this device.
  bool any() const {
    return launch_budget != kNoLimit || max_queued != kNoLimit || compute_cap_ppm != kNoLimit ||
           yield_mask != 0;
  }
  bool operator==(const ComputeLimits&) const = default;
};

/// A device's limits as the page holds them. The budget is loaded first
/// (acquire): it pairs with the store below, so the window read with it
/// goes with that budget or an older one.
inline ComputeLimits load_compute_limits(const DeviceLimits& device) {
  ComputeLimits out;
  out.launch_budget = device.launch_budget.load(std::memory_order_acquire);
  out.launch_window_ns = device.launch_window_ns.load(std::memory_order_relaxed);
  out.max_queued = device.max_queued.load(std::memory_order_relaxed);
  out.compute_cap_ppm = device.compute_cap_ppm.load(std::memory_order_relaxed);
  out.yield_mask = device.yield_mask.load(std::memory_order_relaxed);
  std::uint64_t share = device.yield_share_ppm.load(std::memory_order_relaxed);
  out.yield_share_ppm = share == 0 ? kNoLimit : share;  // 0 and kNoLimit both mean all
  std::uint64_t turn = device.yield_turn.load(std::memory_order_relaxed);
  out.yield_turns = static_cast<std::uint32_t>(turn & 0xffffffffu);
  out.yield_turn = static_cast<std::uint32_t>(turn >> 32);
  if (out.yield_turns <= 1 || out.yield_turn >= out.yield_turns) {
    out.yield_turn = out.yield_turns = 0;
  }
  return out;
}

/// Stores the three limits and their window (the coordinator's side). The
/// window before the budget: a reader that sees the new budget sees a
/// window that goes with it (or an older one, which only scales a refill).
/// The yield mask and share are not stored here: they have their own
/// writer (the coordinator's yield: store_yield_mask, and the share in
/// ControlBlock::set_yield_share).
inline void store_compute_limits(DeviceLimits& device, const ComputeLimits& limits) {
  device.launch_window_ns.store(limits.launch_window_ns, std::memory_order_relaxed);
  device.launch_budget.store(limits.launch_budget, std::memory_order_release);
  device.max_queued.store(limits.max_queued, std::memory_order_release);
  device.compute_cap_ppm.store(limits.compute_cap_ppm, std::memory_order_release);
}

/// The yield_turn word of a job's turn `index` among `count` (layout 8).
inline std::uint64_t yield_turn_word(std::uint32_t index, std::uint32_t count) {
  return count > 1 && index < count ? (static_cast<std::uint64_t>(index) << 32) | count : 0;
}

/// Stores the yield slots the job waits for on the device (layout 4).
inline void store_yield_mask(DeviceLimits& device, std::uint64_t mask) {
  device.yield_mask.store(mask, std::memory_order_release);
}

}  // namespace gpushare::coord
