// Sums of figures that other processes report (a job's telemetry, a
// registration): a lying or broken reporter must not make a total wrap.
#pragma once

#include <cstdint>

namespace gpushare {

constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace gpushare
