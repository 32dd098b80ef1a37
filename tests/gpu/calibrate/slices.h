// Time-slice analysis for the real-GPU calibration (gpushare-gpu-calibrate).
//
// Two processes each run one long single-thread kernel that reads the GPU's
// %globaltimer in a loop and records every jump larger than a threshold: a
// gap, during which the kernel was not running because the GPU was serving
// the other process's context. %globaltimer is one clock for the whole
// device, so the two records lie on one timeline. From them:
//
//   - a *run* is the time a kernel ran between two of its gaps; the time
//     slice is the median run, counting only runs that begin and end with a
//     gap inside the window where both kernels were live (the first and the
//     last run of each kernel are cut by its start or end, not by the
//     scheduler);
//   - in that window every instant is either covered by a run of one of the
//     two kernels or by neither: the uncovered time is what the switches
//     cost. Each gap of either kernel begins with one switch (away from it)
//     and the other kernel's gap ends with that same switch, so the number
//     of switches is the number of gaps of both in the window, and the
//     context-switch cost is the uncovered time divided by it.
//
// Plain arithmetic on the records: no CUDA here, so it is unit-tested.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"

namespace gpushare::gpucheck {

/// One jump of %globaltimer seen by a spinning kernel: [from_ns, to_ns).
struct Gap {
  std::uint64_t from_ns;
  std::uint64_t to_ns;
};

/// What one kernel recorded: when it started and ended, and its gaps in order.
struct SliceRecord {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::vector<Gap> gaps;
};

struct SliceAnalysis {
  double window_ms = 0;  ///< time both kernels were live
  long switches = 0;     ///< gaps of both kernels inside the window
  long runs = 0;         ///< whole runs the slice length comes from
  double slice_ms_median = 0;
  double slice_ms_min = 0;
  double slice_ms_max = 0;
  double switch_us = 0;  ///< uncovered time per switch
};

/// Analyses two kernels' records. An Error when they did not overlap, a
/// record is malformed (gaps out of order or outside the kernel's life), or
/// no whole run lies in the window (the GPU did not time-slice them: one
/// waited for the other, as under MPS-less FIFO or on the simulated GPU).
Result<SliceAnalysis> analyse_slices(const SliceRecord& a, const SliceRecord& b);

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

}  // namespace gpushare::gpucheck
