// gpushare-place replay: a job trace through the placer, one metrics line
// per policy (lib/place/replay.h has the model).
#include "replay.h"

#include <cstdio>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/units.h"
#include "place/cluster_toml.h"
#include "place/replay.h"
#include "place/trace.h"

namespace gpushare::place_cmd {
namespace {

namespace place = gpushare::place;

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A TOML cluster, or a Tiresias cluster spec when the name ends in .csv.
Result<place::Cluster> load_replay_cluster(const std::string& path) {
  if (!ends_with(path, ".csv")) return place::load_cluster(path);
  Result<std::string> text = place::read_text_file(path);
  if (!text) return text.error();
  return place::parse_cluster_spec(*text, path, 16ull << 30);
}

void print(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace

int run_replay(const ReplayCommand& command) {
  // Inputs first: a bad file is a usage error before any simulation runs.
  Result<place::Cluster> cluster = load_replay_cluster(command.cluster_file);
  if (!cluster) {
    diag::error(cluster.error().message);
    return exit_status::kUsage;
  }
  Result<std::vector<place::TraceJob>> trace = place::load_trace(command.trace_file);
  if (!trace) {
    diag::error(trace.error().message);
    return exit_status::kUsage;
  }
  place::ReplayOptions options;
  options.quota_share = command.quota_share;
  options.job_util = command.job_util;
  options.window = command.window;
  if (!command.queue_threshold.empty()) {
    Result<std::chrono::nanoseconds> threshold = parse_duration(command.queue_threshold);
    if (!threshold) {
      diag::error("--queue-threshold: " + threshold.error().message);
      diag::usage_hint();
      return exit_status::kUsage;
    }
    options.queue_threshold = *threshold;
  }

  // One run per policy, each from the same idle cluster.
  bool json = command.format == "json";
  if (command.header && !json) print(place::replay_csv_header());
  std::vector<std::string> policies = command.policies;
  if (policies.empty()) policies = {"exclusive", "antman"};
  for (const std::string& name : policies) {
    options.policy = *place::parse_replay_policy(name);
    Result<place::ReplayMetrics> metrics = place::replay(*cluster, *trace, options);
    if (!metrics) {
      diag::error(command.trace_file + ": " + name + ": " + metrics.error().message);
      return exit_status::kFailure;
    }
    if (metrics->skipped > 0) {
      diag::warning(command.trace_file + ": " + std::to_string(metrics->skipped) +
                    " jobs ask for more GPUs than the cluster can hold; left out");
    }
    print(json ? place::replay_json(*metrics) : place::replay_csv(*metrics));
  }
  return exit_status::kSuccess;
}

}  // namespace gpushare::place_cmd
