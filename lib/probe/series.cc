// Iteration detection on a sampled memory curve.
//
// A training job repeats one iteration: load a batch (host), forward
// (activations allocated), backward (freed), synchronise. Its device memory
// therefore rises and falls with the iteration, and the device alternates
// between busy and idle with it. We see neither the framework nor the
// iteration boundaries, only samples, so the period is found the way a
// signal's pitch is:
//
//  1. Resample the readings onto a uniform grid (the sampler is late now and
//     then on a busy host; memory is a step function, so each reading holds
//     until the next one).
//  2. Remove the linear trend, so a job that also grows (a leak, a cache
//     that fills) still shows its iterations.
//  3. Compute the autocorrelation r(k), normalised on the overlap so it
//     stays within -1..1 at every lag, for lags up to a third of the span
//     (three repetitions at least).
//  4. Candidates are r's local maxima after its first local minimum (the
//     lag-0 lobe is not a period; a curve with short dips may never make r
//     negative between its peaks). The strongest, at lag L with strength R,
//     is the period or a multiple of it: a period that falls between two
//     grid lags (11.5 ms on a 1 ms grid) correlates less at its rounded lag
//     than at 2L, which falls on the grid. So the period is L/m for the
//     largest m at which a candidate sits within a tenth of L/m with at
//     least 60% of R. R under 0.5 means no period.
//  5. Refine: the peak near the largest multiple m of the period that still
//     fits is located with a parabola through its three points, and the
//     period is that lag over m. An error of a fraction of a sample is then
//     divided by m, so a 1 ms grid measures an 11 ms period to well under
//     1%.
//
// With the period known, each period-long window of the curve holds one
// iteration; its lowest reading is the iteration's floor (Gandiva's nadir,
// where suspending is cheapest) and its highest the ceiling. Medians over
// the windows keep the first (warm-up) and last iterations from deciding.
#include "probe/series.h"

#include <algorithm>
#include <cmath>

namespace gpushare::probe {
namespace {

constexpr double kMinStrength = 0.5;
constexpr double kFundamentalShare = 0.6;
constexpr std::uint64_t kMiB = 1ull << 20;

std::vector<double> detrended(const std::vector<double>& values) {
  const double n = static_cast<double>(values.size());
  double sum_x = 0, sum_y = 0, sum_xx = 0, sum_xy = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    double x = static_cast<double>(i);
    sum_x += x;
    sum_y += values[i];
    sum_xx += x * x;
    sum_xy += x * values[i];
  }
  double denominator = n * sum_xx - sum_x * sum_x;
  double slope = denominator != 0 ? (n * sum_xy - sum_x * sum_y) / denominator : 0;
  double intercept = (sum_y - slope * sum_x) / n;
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    out[i] = values[i] - (intercept + slope * static_cast<double>(i));
  }
  return out;
}

// Pearson correlation of x with itself shifted by `lag`, on the overlap.
double correlation(const std::vector<double>& x, std::size_t lag) {
  double cross = 0, head = 0, tail = 0;
  for (std::size_t i = 0; i + lag < x.size(); ++i) {
    cross += x[i] * x[i + lag];
    head += x[i] * x[i];
    tail += x[i + lag] * x[i + lag];
  }
  if (head <= 0 || tail <= 0) return 0;
  return cross / std::sqrt(head * tail);
}

// The vertex of the parabola through r[k-1], r[k], r[k+1], as a lag.
double parabolic_lag(const std::vector<double>& r, std::size_t k) {
  if (k == 0 || k + 1 >= r.size()) return static_cast<double>(k);
  double left = r[k - 1], middle = r[k], right = r[k + 1];
  double curvature = left - 2 * middle + right;
  if (curvature >= 0) return static_cast<double>(k);
  double shift = 0.5 * (left - right) / curvature;
  return static_cast<double>(k) + std::clamp(shift, -0.5, 0.5);
}

// The highest r within `radius` lags of `centre`.
std::size_t peak_near(const std::vector<double>& r, double centre, double radius) {
  auto lo = static_cast<std::size_t>(std::max(1.0, std::floor(centre - radius)));
  auto hi = std::min(r.size() - 1, static_cast<std::size_t>(std::ceil(centre + radius)));
  std::size_t best = lo;
  for (std::size_t k = lo; k <= hi; ++k) {
    if (r[k] > r[best]) best = k;
  }
  return best;
}

std::uint64_t median(std::vector<std::uint64_t> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

std::optional<PeriodEstimate> detect_period(const std::vector<double>& values, double step_ms) {
  if (values.size() < 9 || step_ms <= 0) return std::nullopt;
  std::vector<double> x = detrended(values);
  double energy = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    energy += x[i] * x[i];
    scale = std::max(scale, std::fabs(values[i]));
  }
  // A flat series (after the trend) has no period; the bound is relative
  // so that rounding in the trend of a large steady value does not count.
  if (energy <= 1e-18 * scale * scale * static_cast<double>(x.size()) || energy == 0) {
    return std::nullopt;
  }
  std::size_t max_lag = x.size() / 3;
  std::vector<double> r(max_lag + 2, 0.0);
  for (std::size_t k = 1; k < r.size(); ++k) r[k] = correlation(x, k);
  r[0] = 1;

  // The lag-0 lobe ends where r stops falling.
  std::size_t start = 1;
  while (start <= max_lag && r[start + 1] < r[start]) ++start;
  std::vector<std::size_t> peaks;
  double strongest = 0;
  for (std::size_t k = std::max<std::size_t>(start, 2); k <= max_lag; ++k) {
    if (r[k] >= r[k - 1] && r[k] > r[k + 1]) {
      peaks.push_back(k);
      strongest = std::max(strongest, r[k]);
    }
  }
  if (peaks.empty() || strongest < kMinStrength) return std::nullopt;
  // The strongest peak is some multiple m of the period. The period is
  // strongest/m for the largest m at which a candidate peak sits (within a
  // tenth of the lag) and correlates nearly as well.
  std::size_t best = 0;
  for (std::size_t k : peaks) {
    if (r[k] == strongest) best = k;
  }
  std::size_t fundamental = best;
  for (std::size_t m = best / 2; m >= 2; --m) {
    double target = static_cast<double>(best) / static_cast<double>(m);
    double slack = std::max(1.0, 0.1 * target);
    std::size_t found = 0;
    for (std::size_t k : peaks) {
      if (std::fabs(static_cast<double>(k) - target) <= slack &&
          r[k] >= kFundamentalShare * strongest && (found == 0 || r[k] > r[found])) {
        found = k;
      }
    }
    if (found != 0) {
      fundamental = found;
      break;
    }
  }
  double lag = parabolic_lag(r, fundamental);

  // Refine on the farthest multiple that still correlates well.
  std::vector<double> full(x.size() * 2 / 3 + 2, 0.0);
  for (std::size_t k = 1; k < full.size(); ++k) full[k] = correlation(x, k);
  double refined = lag;
  for (int m = 2; lag * m + lag / 4 < static_cast<double>(full.size() - 1); ++m) {
    std::size_t k = peak_near(full, lag * m, lag / 4);
    if (full[k] < kFundamentalShare * r[fundamental]) break;
    refined = parabolic_lag(full, k) / m;
  }
  return PeriodEstimate{refined * step_ms, r[fundamental]};
}

std::optional<PeriodEstimate> memory_period(const std::vector<MemorySample>& samples,
                                            double step_ms) {
  std::size_t first = samples.size(), last = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].mem_bytes == 0) continue;
    first = std::min(first, i);
    last = i;
  }
  if (first == samples.size()) return std::nullopt;
  std::vector<MemorySample> active(samples.begin() + static_cast<std::ptrdiff_t>(first),
                                   samples.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  return detect_period(resample_memory(active, step_ms), step_ms);
}

std::vector<double> resample_memory(const std::vector<MemorySample>& samples, double step_ms) {
  std::vector<double> grid;
  if (samples.empty() || step_ms <= 0) return grid;
  double t0 = samples.front().t_ms;
  double span = samples.back().t_ms - t0;
  auto steps = static_cast<std::size_t>(span / step_ms) + 1;
  grid.reserve(steps);
  std::size_t at = 0;
  for (std::size_t i = 0; i < steps; ++i) {
    double t = t0 + static_cast<double>(i) * step_ms;
    while (at + 1 < samples.size() && samples[at + 1].t_ms <= t) ++at;
    grid.push_back(static_cast<double>(samples[at].mem_bytes));
  }
  return grid;
}

std::vector<double> resample_busy(const std::vector<MemorySample>& samples, double step_ms) {
  std::vector<double> grid;
  if (samples.size() < 2 || step_ms <= 0) return grid;
  if (samples.back().busy_ns == samples.front().busy_ns) return grid;
  // Busy time accrues between readings; spread each reading's increase
  // evenly over the time since the one before, then read it per step.
  double t0 = samples.front().t_ms;
  auto steps = static_cast<std::size_t>((samples.back().t_ms - t0) / step_ms);
  grid.assign(steps, 0.0);
  for (std::size_t i = 1; i < samples.size(); ++i) {
    double begin = samples[i - 1].t_ms - t0, end = samples[i].t_ms - t0;
    if (end <= begin || samples[i].busy_ns < samples[i - 1].busy_ns) continue;
    double rate = static_cast<double>(samples[i].busy_ns - samples[i - 1].busy_ns) / 1e6 /
                  (end - begin);  // busy ms per ms
    for (auto s = static_cast<std::size_t>(begin / step_ms);
         s < steps && static_cast<double>(s) * step_ms < end; ++s) {
      double lo = std::max(begin, static_cast<double>(s) * step_ms);
      double hi = std::min(end, static_cast<double>(s + 1) * step_ms);
      if (hi > lo) grid[s] += rate * (hi - lo) / step_ms;
    }
  }
  return grid;
}

MemorySummary summarise_memory(const std::vector<MemorySample>& samples, double step_ms) {
  MemorySummary summary;
  std::size_t first = samples.size(), last = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    summary.peak_bytes = std::max(summary.peak_bytes, samples[i].mem_bytes);
    if (samples[i].mem_bytes > 0) {
      first = std::min(first, i);
      last = i;
    }
  }
  if (first == samples.size()) return summary;
  summary.touched_gpu = true;
  summary.mem_bytes = (summary.peak_bytes + kMiB - 1) / kMiB * kMiB;
  std::vector<MemorySample> active(samples.begin() + static_cast<std::ptrdiff_t>(first),
                                   samples.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  summary.active_ms = active.back().t_ms - active.front().t_ms;
  if (summary.active_ms > 0 && active.back().busy_ns > active.front().busy_ns) {
    summary.busy_fraction =
        std::min(1.0, static_cast<double>(active.back().busy_ns - active.front().busy_ns) / 1e6 /
                          summary.active_ms);
  }

  std::vector<double> memory = resample_memory(active, step_ms);
  std::optional<PeriodEstimate> period = detect_period(memory, step_ms);
  summary.period_source = "memory";
  if (!period) {
    period = detect_period(resample_busy(active, step_ms), step_ms);
    summary.period_source = "activity";
  }
  if (!period) summary.period_source.clear();

  if (period) {
    summary.period_ms = period->period_ms;
    summary.period_strength = period->strength;
    summary.iterations = static_cast<long>(summary.active_ms / period->period_ms);
    auto window = static_cast<std::size_t>(std::ceil(period->period_ms / step_ms));
    std::vector<std::uint64_t> lows, highs;
    for (std::size_t begin = 0; begin + window <= memory.size(); begin += window) {
      auto [lo, hi] =
          std::minmax_element(memory.begin() + static_cast<std::ptrdiff_t>(begin),
                              memory.begin() + static_cast<std::ptrdiff_t>(begin + window));
      lows.push_back(static_cast<std::uint64_t>(*lo));
      highs.push_back(static_cast<std::uint64_t>(*hi));
    }
    summary.floor_bytes = median(lows);
    summary.ceiling_bytes = median(highs);
  }
  if (summary.floor_bytes == 0 && summary.ceiling_bytes == 0) {
    // No iterations: the middle 90% of the active span, past the ramp up
    // and the teardown.
    std::size_t skip = memory.size() / 20;
    auto begin = memory.begin() + static_cast<std::ptrdiff_t>(skip);
    auto end = memory.end() - static_cast<std::ptrdiff_t>(skip);
    if (begin >= end) begin = memory.begin(), end = memory.end();
    auto [lo, hi] = std::minmax_element(begin, end);
    summary.floor_bytes = static_cast<std::uint64_t>(*lo);
    summary.ceiling_bytes = static_cast<std::uint64_t>(*hi);
  }
  return summary;
}

}  // namespace gpushare::probe
