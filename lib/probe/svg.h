// Plots as SVG, written directly: a few hundred lines of plain XML need no
// plotting program at run time, render in every browser, and are checked
// in tests with an XML parser. Each series is an element with a fixed id
// (memory-curve, floor, ceiling, speed-vs-cap, interference-matrix) so a
// script or a test can find it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/series.h"

namespace gpushare::probe {

/// One run under a memory cap, as plotted and printed.
struct CapPoint {
  std::string cap;  ///< as given: "25%" or "1GiB"
  std::uint64_t limit_bytes = 0;
  std::optional<double> iterations_per_s;  ///< nullopt: failed or no iterations seen
};

/// The memory curve (with the iteration floor and ceiling as dashed lines)
/// and, when `caps` is not empty, the speed under each cap beside it.
std::string memory_svg(const std::string& title, const std::vector<MemorySample>& samples,
                       const MemorySummary& summary, const std::vector<CapPoint>& caps);

/// A heat map: `cells[row][col]` is the row job's speed beside the column
/// job, relative to its speed alone (1 = unaffected); nullopt is drawn as
/// an empty cell. `labels` name the jobs; `caption` says which setting.
struct HeatMap {
  std::string caption;
  std::vector<std::string> labels;
  std::vector<std::vector<std::optional<double>>> cells;
};

/// One heat map per setting (uncontrolled, under QoS), side by side.
std::string interference_svg(const std::vector<HeatMap>& maps);

/// Text escaped for XML character data and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace gpushare::probe
