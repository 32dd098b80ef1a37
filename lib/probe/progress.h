// How far a sweep of runs has got, in one line for a terminal's stderr:
//
//   interference: run 4 of 9 (a+b, b opportunistic), about 25s left
//
// The estimate is the runs left times the mean length of the runs done so
// far, or times the expected length of one run before any finished.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpushare::probe {

/// Seconds the sweep still needs when run `index` (1-based) of `total` is
/// about to start, `elapsed_s` after the first began.
double seconds_left(std::size_t index, std::size_t total, double elapsed_s, double expected_run_s);

/// "WHAT: run INDEX of TOTAL (SETTING), about Ns left" ("about 2m05s"
/// past a minute).
std::string sweep_line(std::string_view what, std::size_t index, std::size_t total,
                       std::string_view setting, double elapsed_s, double expected_run_s);

}  // namespace gpushare::probe
