// CLOCK_MONOTONIC in nanoseconds for the interposer: lib/common/clock.h's
// twin, since the interposer may not include lib/common (it links libc
// only: CONTRIBUTING.md). The same clock as the coordinator's and the job
// client's, so that the times it writes to the control block compare.
#pragma once

#include <time.h>

#include <cstdint>

namespace gpushare::interpose {

inline std::uint64_t monotonic_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

}  // namespace gpushare::interpose
