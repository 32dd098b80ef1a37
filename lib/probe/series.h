// What a job's sampled memory curve says: its iteration period, the floor
// and ceiling of an iteration, its peak, and the memory to place it with.
// Pure functions over recorded series, so every rule is unit-tested on
// series whose truth is known (steady, growing, noisy, none at all).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpushare::probe {

/// One reading of the job: its device memory (all its processes, summed
/// over devices) and, where the driver tells it, the device's busy time so
/// far (a cumulative counter; 0 where unknown).
struct MemorySample {
  double t_ms = 0;  ///< since the job started
  std::uint64_t mem_bytes = 0;
  std::uint64_t busy_ns = 0;
};

/// A period found in a series.
struct PeriodEstimate {
  double period_ms = 0;
  double strength = 0;  ///< normalised autocorrelation at the period, 0..1
};

/// Finds the dominant period of `values`, sampled every `step_ms`, by
/// autocorrelation (see series.cc). nullopt when there is none: a flat or
/// patternless series, or fewer than three repetitions in it.
std::optional<PeriodEstimate> detect_period(const std::vector<double>& values, double step_ms);

/// The period of the memory curve alone, over its active span (first to
/// last sample holding memory): what tells one job's iterations from its
/// neighbour's when the device's activity is shared.
std::optional<PeriodEstimate> memory_period(const std::vector<MemorySample>& samples,
                                            double step_ms);

/// Resamples a step function (each sample holds until the next) onto a
/// uniform grid of `step_ms` from the first to the last sample.
std::vector<double> resample_memory(const std::vector<MemorySample>& samples, double step_ms);

/// The busy share of the device in each grid step (from the cumulative
/// busy counter), 0..1; empty when the counter never moves.
std::vector<double> resample_busy(const std::vector<MemorySample>& samples, double step_ms);

struct MemorySummary {
  bool touched_gpu = false;  ///< any sample above zero
  std::uint64_t peak_bytes = 0;
  std::uint64_t floor_bytes = 0;    ///< an iteration's low (median over iterations)
  std::uint64_t ceiling_bytes = 0;  ///< an iteration's high (median over iterations)
  std::optional<double> period_ms;
  std::string period_source;  ///< "memory", "activity" or "" (none found)
  double period_strength = 0;
  long iterations = 0;          ///< whole periods in the active span
  double active_ms = 0;         ///< first to last sample holding memory
  double busy_fraction = 0;     ///< device busy share over the active span; 0 unknown
  std::uint64_t mem_bytes = 0;  ///< the recommendation: peak, rounded up to a MiB
};

/// Summarises a job's samples, taken every `step_ms` (the requested
/// interval). Iterations come from the memory curve first, then from the
/// device's activity; without either, floor and ceiling are the steady
/// span's lowest and highest readings.
MemorySummary summarise_memory(const std::vector<MemorySample>& samples, double step_ms);

}  // namespace gpushare::probe
