// gpushare-place replay: a job trace through each policy, one metrics
// record per policy (lib/replay/replay.h has the model).
#include "replay_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/units.h"
#include "place/cluster/cluster_toml.h"
#include "replay/replay.h"
#include "replay/trace.h"

namespace gpushare::place_cmd {
namespace {

namespace place = gpushare::place;
namespace replay = gpushare::replay;

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A TOML cluster, or a Tiresias cluster spec when the name ends in .csv.
Result<place::Cluster> load_replay_cluster(const std::string& path) {
  if (!ends_with(path, ".csv")) return place::load_cluster(path);
  Result<std::string> text = replay::read_text_file(path);
  if (!text) return text.error();
  return replay::parse_cluster_spec(*text, path, 16ull << 30);
}

void print(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

/// The options as the library takes them, or an Error naming the option.
Result<replay::ReplayOptions> replay_options(const ReplayCommand& command) {
  replay::ReplayOptions options;
  options.quota_share = command.quota_share;
  options.job_util = command.job_util;
  options.window = command.window;
  options.seed = command.seed;
  if (!command.queue_threshold.empty()) {
    Result<std::chrono::nanoseconds> threshold = parse_duration(command.queue_threshold);
    if (!threshold) return make_error("--queue-threshold: " + threshold.error().message);
    options.queue_threshold_s = std::chrono::duration<double>(*threshold).count();
  }
  if (!command.model_file.empty()) {
    Result<replay::InterferenceModel> model = replay::load_interference(command.model_file);
    if (!model) return model.error();
    options.model = *model;
  }
  return options;
}

}  // namespace

CLI::App* add_replay_subcommand(CLI::App& app, ReplayCommand& replay) {
  CLI::App* sub =
      app.add_subcommand("replay", "Replay a job trace on the cluster; print metrics per policy");
  sub->add_option("-t,--trace", replay.trace_file, "Job trace (Tiresias or Philly CSV)")
      ->required()
      ->type_name("FILE");
  sub->add_option("-c,--cluster", replay.cluster_file,
                  "Cluster (TOML, or a Tiresias cluster spec .csv)")
      ->required()
      ->type_name("FILE");
  sub->add_option("-p,--policy", replay.policies,
                  "exclusive, yarn-cs, gandiva or antman, repeatable (default: all)")
      ->check(CLI::IsMember({"exclusive", "yarn-cs", "gandiva", "antman"}))
      ->type_name("POLICY");
  sub->add_option("--quota-share", replay.quota_share,
                  "Tenants' quotas together, as a share of the GPUs (yarn-cs, antman)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  sub->add_option("--job-util", replay.job_util,
                  "Every job's utilisation (default: drawn per job, see the man page)")
      ->check(CLI::Range(0.01, 1.0));
  sub->add_option("--window", replay.window, "Queued jobs offered at each event")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--queue-threshold", replay.queue_threshold,
                  "Jobs queued this long run opportunistic (antman)")
      ->type_name("DURATION");
  sub->add_option("--seed", replay.seed, "Seed of the jobs' drawn properties")
      ->capture_default_str();
  sub->add_option("-m,--model", replay.model_file, "Interference model (key = value lines)")
      ->type_name("FILE");
  sub->add_option("--plot", replay.plot_file, "Write the policies' JCT CDFs to FILE (SVG)")
      ->type_name("FILE");
  sub->add_flag("--header", replay.header, "Print the CSV header line first");
  sub->add_option("-f,--format", replay.format, "Output: csv or json")
      ->check(CLI::IsMember({"csv", "json"}))
      ->capture_default_str();
  return sub;
}

int run_replay(const ReplayCommand& command) {
  // Inputs first: a bad file is a usage error before any simulation runs.
  Result<place::Cluster> cluster = load_replay_cluster(command.cluster_file);
  if (!cluster) {
    diag::error(cluster.error().message);
    return exit_status::kUsage;
  }
  Result<replay::Trace> trace = replay::load_trace(command.trace_file);
  if (!trace) {
    diag::error(trace.error().message);
    return exit_status::kUsage;
  }
  for (const std::string& problem : trace->skipped) diag::warning(problem);
  if (!trace->skipped.empty()) {
    diag::warning(command.trace_file + ": " + std::to_string(trace->skipped.size()) +
                  " malformed rows skipped");
  }
  Result<replay::ReplayOptions> options = replay_options(command);
  if (!options) {
    diag::error(options.error().message);
    return exit_status::kUsage;
  }
  if (Status fits = replay::check_fits(*cluster, trace->jobs); !fits) {
    diag::error(command.cluster_file + ": " + fits.error().message);
    return exit_status::kUsage;
  }

  // One run per policy, each from the same idle cluster.
  bool json = command.format == "json";
  if (command.header && !json) print(replay::replay_csv_header());
  std::vector<replay::ReplayPolicy> policies;
  for (const std::string& name : command.policies) {
    policies.push_back(*replay::parse_replay_policy(name));
  }
  if (policies.empty()) policies = replay::all_replay_policies();
  std::vector<replay::ReplayMetrics> runs;
  for (replay::ReplayPolicy policy : policies) {
    options->policy = policy;
    Result<replay::ReplayMetrics> metrics = replay::replay(*cluster, trace->jobs, *options);
    if (!metrics) {
      diag::error(command.trace_file + ": " + std::string(to_string(policy)) + ": " +
                  metrics.error().message);
      return exit_status::kFailure;
    }
    print(json ? replay::replay_json(*metrics) : replay::replay_csv(*metrics));
    if (!command.plot_file.empty()) runs.push_back(std::move(*metrics));
  }
  if (!command.plot_file.empty()) {
    std::ofstream out(command.plot_file, std::ios::binary | std::ios::trunc);
    out << replay::replay_plot_svg(runs);
    out.flush();
    if (!out) {
      diag::error(command.plot_file + ": cannot write the plot");
      return exit_status::kFailure;
    }
  }
  return exit_status::kSuccess;
}

}  // namespace gpushare::place_cmd
