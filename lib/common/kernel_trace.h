// Kernel timelines of real training steps (the kernel-traces CSV format,
// tests/data/kernel-traces/README.md), read for gpushare-workload --trace.
//
// A trace is a CSV file with the header
//   launch_us,start_us,kernel_us,stream,kernel
// one row per kernel in launch order (times in microseconds from the first
// launch; the kernel's name is the rest of the line and may hold anything
// but a newline), and optionally a sibling "syncs" file with the header
//   call_us,return_us,call
// one row per synchronising call. A step ends at each synchronising call:
// its kernels are those launched before that call's call_us and after the
// previous one's; kernels after the last call form a last step; steps with
// no kernel are dropped. Without a syncs file the whole trace is one step.
// Within a step, each kernel keeps its launch time relative to the step's
// first launch (what the CPU did between the previous synchronisation and
// that launch is host time, which --host-us sets instead).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpushare {

struct TraceKernel {
  double launch_offset_us = 0;  ///< from the step's first launch
  double kernel_us = 0;         ///< the kernel's recorded duration
};

struct TraceStep {
  std::vector<TraceKernel> kernels;
};

struct KernelTrace {
  std::vector<TraceStep> steps;
};

/// Parses a trace (`csv`, named `csv_name` in errors) and its syncs file
/// (`syncs`, empty `syncs_name` for none). Errors are
/// "NAME:LINE:COL: message" naming the first bad field.
Result<KernelTrace> parse_kernel_trace(std::string_view csv, std::string_view csv_name,
                                       std::string_view syncs, std::string_view syncs_name);

/// The conventional syncs file beside a trace: "X.csv" -> "X.syncs.csv"
/// (for a name not ending in ".csv", NAME + ".syncs.csv").
std::string syncs_path_for(std::string_view trace_path);

}  // namespace gpushare
