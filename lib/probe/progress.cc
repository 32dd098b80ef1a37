#include "probe/progress.h"

#include <cmath>
#include <cstdio>

namespace gpushare::probe {

double seconds_left(std::size_t index, std::size_t total, double elapsed_s,
                    double expected_run_s) {
  if (index == 0 || index > total) return 0;
  std::size_t done = index - 1;
  double per_run = done > 0 ? elapsed_s / static_cast<double>(done) : expected_run_s;
  return per_run * static_cast<double>(total - done);
}

std::string sweep_line(std::string_view what, std::size_t index, std::size_t total,
                       std::string_view setting, double elapsed_s, double expected_run_s) {
  auto left = static_cast<long long>(std::lround(seconds_left(index, total, elapsed_s,
                                                              expected_run_s)));
  char estimate[48];
  if (left >= 60) {
    std::snprintf(estimate, sizeof estimate, "about %lldm%02llds left", left / 60, left % 60);
  } else {
    std::snprintf(estimate, sizeof estimate, "about %llds left", left);
  }
  std::string line = std::string(what) + ": run " + std::to_string(index) + " of " +
                     std::to_string(total);
  if (!setting.empty()) line += " (" + std::string(setting) + ")";
  return line + ", " + estimate;
}

}  // namespace gpushare::probe
