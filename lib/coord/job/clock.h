// CLOCK_MONOTONIC in nanoseconds for the job side: lib/common/clock.h's
// twin, since lib/coord/job may not include lib/common (it is compiled into
// the interposer, which links libc only: CONTRIBUTING.md). The coordinator
// reads the times the job writes to the control block (the heartbeat, the
// yield page's clear) on the same clock. At the bottom of the room: it
// includes nothing of it.
#pragma once

#include <time.h>

#include <cstdint>

namespace gpushare::coord::job {

inline std::uint64_t now_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

}  // namespace gpushare::coord::job
