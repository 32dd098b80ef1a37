// The monotonic clock (CLOCK_MONOTONIC), the one every deadline, interval
// and timestamp of gpushare is read on, so that times taken in different
// processes of a node compare (the control block's times are on it).
//
// One helper for all of lib/ that may include lib/common. The code that runs
// inside a job or the simulated driver may not (CONTRIBUTING.md: those
// libraries link libc only and include no lib/common), and keeps one twin
// per floor, each saying so: lib/coord/job/client_state.h (`now_ns`),
// lib/interpose/core/clock.h and lib/simgpu/state.h (`monotonic_ns`).
#pragma once

#include <time.h>

#include <cstdint>

namespace gpushare {

/// Nanoseconds on CLOCK_MONOTONIC.
inline std::uint64_t monotonic_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

/// Milliseconds on CLOCK_MONOTONIC, with the fraction (for reports).
inline double monotonic_ms() { return static_cast<double>(monotonic_ns()) / 1e6; }

}  // namespace gpushare
