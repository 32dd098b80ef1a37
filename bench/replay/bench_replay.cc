// gpushare-bench-replay: how fast `gpushare-place replay` runs, and how its
// cost grows with the number of jobs.
//
//   gpushare-bench-replay [--trace FILE --cluster FILE] [--jobs N] [--seed S]
//
// With --trace and --cluster (a TOML cluster or a Tiresias spec .csv), it
// replays that trace under every policy, one JSON record per policy and one
// for all, with wall and CPU seconds (reading the files not included).
// Without them it measures growth: synthetic traces of N/8, N/4, N/2 and N
// jobs (default 80,000) at the same offered load (90% of a 128-GPU cluster
// of 4-GPU nodes; GPU counts in Philly's proportions; durations exponential,
// mean 1 h), every policy each, so the cost per job at each size can be
// compared: with cost n log n or better it grows at most by log factors.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "place/cluster/cluster_toml.h"
#include "replay/replay.h"
#include "replay/trace.h"

namespace {

namespace place = gpushare::place;
namespace replay = gpushare::replay;

struct Options {
  std::string trace_file, cluster_file;
  std::size_t jobs = 80000;
  std::uint64_t seed = 1;
};

double cpu_s() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<replay::TraceJob> synthetic(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  // Philly's GPU counts: 93.2% 1, 2.2% 2, 2.3% 4, 2.0% 8, 0.3% 16.
  std::discrete_distribution<int> size({932, 22, 23, 20, 3});
  std::exponential_distribution<double> duration(1.0 / 3600.0);
  const double mean_gpus = (932 * 1 + 22 * 2 + 23 * 4 + 20 * 8 + 3 * 16) / 1000.0;
  // Offered load 0.9 of 128 GPUs: arrivals per second.
  std::exponential_distribution<double> gap(0.9 * 128 / (mean_gpus * 3600.0));
  std::vector<replay::TraceJob> trace;
  double now = 0;
  for (std::size_t i = 0; i < n; ++i) {
    now += gap(random);
    trace.push_back({std::to_string(i), "t" + std::to_string(i % 8), now, duration(random),
                     std::int64_t{1} << size(random)});
  }
  return trace;
}

/// Every policy on the trace; prints a record each and returns CPU seconds.
bool run_all(const place::Cluster& cluster, const std::vector<replay::TraceJob>& trace,
             const std::string& label, double* all_cpu_s, double* all_wall_s) {
  *all_cpu_s = *all_wall_s = 0;
  for (replay::ReplayPolicy policy : replay::all_replay_policies()) {
    replay::ReplayOptions options;
    options.policy = policy;
    options.queue_threshold_s = 3600;
    double c0 = cpu_s(), w0 = wall_s();
    auto metrics = replay::replay(cluster, trace, options);
    double c = cpu_s() - c0, w = wall_s() - w0;
    if (!metrics) {
      gpushare::diag::error(metrics.error().message);
      return false;
    }
    *all_cpu_s += c;
    *all_wall_s += w;
    std::printf(
        "{\"kind\":\"bench\",\"version\":1,\"name\":\"replay\",\"trace\":\"%s\","
        "\"policy\":\"%s\",\"jobs\":%zu,\"wall_s\":%.3f,\"cpu_s\":%.3f,\"cpu_us_per_job\":%.2f}\n",
        label.c_str(), std::string(to_string(policy)).c_str(), trace.size(), w, c,
        c * 1e6 / static_cast<double>(trace.size()));
  }
  std::printf(
      "{\"kind\":\"bench\",\"version\":1,\"name\":\"replay\",\"trace\":\"%s\",\"policy\":\"all\","
      "\"jobs\":%zu,\"wall_s\":%.3f,\"cpu_s\":%.3f,\"cpu_us_per_job\":%.2f}\n",
      label.c_str(), trace.size(), *all_wall_s, *all_cpu_s,
      *all_cpu_s * 1e6 / static_cast<double>(trace.size()));
  std::fflush(stdout);
  return true;
}

int run(const Options& o) {
  double cpu = 0, wall = 0;
  if (!o.trace_file.empty()) {
    auto trace = replay::load_trace(o.trace_file);
    if (!trace) {
      gpushare::diag::error(trace.error().message);
      return gpushare::exit_status::kUsage;
    }
    gpushare::Result<place::Cluster> cluster = place::load_cluster(o.cluster_file);
    if (o.cluster_file.size() > 4 && o.cluster_file.substr(o.cluster_file.size() - 4) == ".csv") {
      auto text = replay::read_text_file(o.cluster_file);
      cluster = text ? replay::parse_cluster_spec(*text, o.cluster_file, 16ull << 30)
                     : gpushare::Result<place::Cluster>(text.error());
    }
    if (!cluster) {
      gpushare::diag::error(cluster.error().message);
      return gpushare::exit_status::kUsage;
    }
    return run_all(*cluster, trace->jobs, o.trace_file, &cpu, &wall)
               ? gpushare::exit_status::kSuccess
               : gpushare::exit_status::kFailure;
  }
  auto cluster = replay::parse_cluster_spec("num_switch,num_node_p_switch,num_gpu_p_node\n1,32,4\n",
                                            "n32g4", 16ull << 30);
  for (std::size_t n : {o.jobs / 8, o.jobs / 4, o.jobs / 2, o.jobs}) {
    if (n == 0) continue;
    if (!run_all(*cluster, synthetic(n, o.seed), "synthetic", &cpu, &wall)) {
      return gpushare::exit_status::kFailure;
    }
  }
  return gpushare::exit_status::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"How fast gpushare-place replay runs.", "gpushare-bench-replay"};
  gpushare::cli::configure(app, "gpushare-bench-replay");
  Options o;
  app.add_option("--trace", o.trace_file, "A job trace to replay under every policy");
  app.add_option("--cluster", o.cluster_file, "Its cluster (TOML or Tiresias spec .csv)");
  app.add_option("--jobs", o.jobs, "Largest synthetic trace")->check(CLI::Range(8, 10000000));
  app.add_option("--seed", o.seed, "Synthetic trace seed");
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  if (o.trace_file.empty() != o.cluster_file.empty()) {
    gpushare::diag::error("--trace and --cluster go together");
    return gpushare::exit_status::kUsage;
  }
  return run(o);
}
