#include "slices.h"

#include <algorithm>
#include <string>

namespace gpushare::gpucheck {
namespace {

Status check_record(const SliceRecord& record, const char* which) {
  std::string name = std::string("kernel ") + which;
  if (record.end_ns <= record.start_ns) return make_error(name + ": it ended before it started");
  std::uint64_t previous = record.start_ns;
  for (const Gap& gap : record.gaps) {
    if (gap.from_ns < previous || gap.to_ns <= gap.from_ns || gap.to_ns > record.end_ns) {
      return make_error(name + ": its gaps are out of order or outside its run");
    }
    previous = gap.to_ns;
  }
  return {};
}

// The intervals a kernel ran, clipped to [lo, hi).
std::vector<Gap> runs_within(const SliceRecord& record, std::uint64_t lo, std::uint64_t hi) {
  std::vector<Gap> runs;
  std::uint64_t from = record.start_ns;
  auto add = [&](std::uint64_t begin, std::uint64_t end) {
    begin = std::max(begin, lo);
    end = std::min(end, hi);
    if (end > begin) runs.push_back({begin, end});
  };
  for (const Gap& gap : record.gaps) {
    add(from, gap.from_ns);
    from = gap.to_ns;
  }
  add(from, record.end_ns);
  return runs;
}

// Lengths of the runs that begin and end with a gap, both inside [lo, hi).
void whole_runs(const SliceRecord& record, std::uint64_t lo, std::uint64_t hi,
                std::vector<double>* lengths_ms) {
  for (std::size_t i = 1; i < record.gaps.size(); ++i) {
    std::uint64_t begin = record.gaps[i - 1].to_ns;
    std::uint64_t end = record.gaps[i].from_ns;
    if (begin >= lo && end <= hi) lengths_ms->push_back(static_cast<double>(end - begin) / 1e6);
  }
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  std::size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle - 1] + values[middle]) / 2;
}

Result<SliceAnalysis> analyse_slices(const SliceRecord& a, const SliceRecord& b) {
  if (Status status = check_record(a, "A"); !status) return status.error();
  if (Status status = check_record(b, "B"); !status) return status.error();
  std::uint64_t lo = std::max(a.start_ns, b.start_ns);
  std::uint64_t hi = std::min(a.end_ns, b.end_ns);
  if (hi <= lo) return make_error("the two kernels never ran at the same time");

  SliceAnalysis analysis;
  analysis.window_ms = static_cast<double>(hi - lo) / 1e6;
  for (const SliceRecord* record : {&a, &b}) {
    for (const Gap& gap : record->gaps) {
      if (gap.from_ns >= lo && gap.from_ns < hi) ++analysis.switches;
    }
  }
  std::vector<double> lengths;
  whole_runs(a, lo, hi, &lengths);
  whole_runs(b, lo, hi, &lengths);
  if (lengths.empty() || analysis.switches == 0) {
    return make_error("no whole time slice inside the " + std::to_string(analysis.window_ms) +
                      " ms both kernels were live: the GPU did not time-slice them");
  }
  analysis.runs = static_cast<long>(lengths.size());
  analysis.slice_ms_median = median(lengths);
  analysis.slice_ms_min = *std::min_element(lengths.begin(), lengths.end());
  analysis.slice_ms_max = *std::max_element(lengths.begin(), lengths.end());

  // Covered time: the union of both kernels' runs in the window. The runs of
  // one kernel never overlap each other; those of the two kernels should not
  // either (one context at a time), but a merge makes the sum honest if the
  // clock says otherwise.
  std::vector<Gap> runs = runs_within(a, lo, hi);
  std::vector<Gap> more = runs_within(b, lo, hi);
  runs.insert(runs.end(), more.begin(), more.end());
  std::sort(runs.begin(), runs.end(),
            [](const Gap& x, const Gap& y) { return x.from_ns < y.from_ns; });
  std::uint64_t covered = 0, reach = lo;
  for (const Gap& run : runs) {
    std::uint64_t begin = std::max(run.from_ns, reach);
    if (run.to_ns > begin) {
      covered += run.to_ns - begin;
      reach = run.to_ns;
    }
  }
  double uncovered_ns = static_cast<double>(hi - lo) - static_cast<double>(covered);
  analysis.switch_us = uncovered_ns / static_cast<double>(analysis.switches) / 1e3;
  return analysis;
}

}  // namespace gpushare::gpucheck
