// The replay subcommand of gpushare-place: its options and its run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gpushare::place_cmd {

struct ReplayCommand {
  std::string trace_file;
  std::string cluster_file;
  std::vector<std::string> policies;  ///< empty: every policy
  double quota_share = 1.0;
  std::optional<double> job_util;  ///< unset: the documented distribution
  std::size_t window = 64;
  std::string queue_threshold;  ///< a duration, or empty for none
  std::uint64_t seed = 1;
  std::string model_file;  ///< interference model; empty: defaults
  std::string plot_file;   ///< SVG of the JCT CDFs; empty: none
  bool header = false;
  std::string format = "csv";
};

/// Adds `replay` and its options to the program's parser.
CLI::App* add_replay_subcommand(CLI::App& app, ReplayCommand& command);

/// Replays the trace once per policy and prints one line each.
int run_replay(const ReplayCommand& command);

}  // namespace gpushare::place_cmd
