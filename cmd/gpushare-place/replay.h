// The replay subcommand of gpushare-place.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpushare::place_cmd {

struct ReplayCommand {
  std::string trace_file;
  std::string cluster_file;
  std::vector<std::string> policies;  ///< empty: exclusive, then antman
  double quota_share = 1.0;
  double job_util = 0.6;
  std::size_t window = 64;
  std::string queue_threshold;  ///< a duration, or empty for none
  bool header = false;
  std::string format = "csv";
};

/// Replays the trace once per policy and prints one line each.
int run_replay(const ReplayCommand& command);

}  // namespace gpushare::place_cmd
