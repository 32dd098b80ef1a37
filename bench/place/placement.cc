// gpushare-bench-place: placement throughput on a generated cluster.
//
//   gpushare-bench-place [--gpus N] [--jobs M] [--seed S] [--emit DIR]
//
// Builds a cluster of N GPUs (8 per node: two NVLink groups of 4, one per
// NUMA node; a fifth of the GPUs already run a production job, the rest have
// mixed utilisation), then places M jobs (production, auto and
// opportunistic, 1 to 16 GPUs, 1 to 70 GiB each) one by one and prints one
// JSON record: total time, jobs per second, and the time per job in the
// first and the last tenth of the jobs. If the cost per job grew with the
// jobs already placed, the last tenth would be slower than the first.
//
// Only placement is timed, not building the cluster. With --emit DIR the
// same cluster and jobs are also written as DIR/cluster.toml and
// DIR/jobs.jsonl, to time the gpushare-place program on them by hand.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "place/placer.h"
#include "place/state_writer.h"

namespace {

namespace place = gpushare::place;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  long gpus = 10000;
  long jobs = 100000;
  unsigned seed = 1;
  std::string emit_dir;
};

constexpr int kTenants = 20;
constexpr std::uint64_t kGiB = 1ull << 30;

place::Cluster make_cluster(const BenchOptions& options, std::mt19937& rng) {
  place::Cluster cluster;
  long nodes = (options.gpus + 7) / 8;
  // Quotas add up to 60% of the cluster, so production demand meets them.
  for (int t = 0; t < kTenants; ++t) {
    cluster.tenants.push_back({"tenant" + std::to_string(t), options.gpus * 6 / 10 / kTenants});
  }
  std::uniform_int_distribution<int> percent(0, 99);
  long made = 0;
  for (long n = 0; n < nodes; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "node%05ld", n);
    place::Node node{name, {}};
    for (int i = 0; i < 8 && made < options.gpus; ++i, ++made) {
      place::Gpu gpu;
      gpu.index = i;
      gpu.model = "A100-80GB";
      gpu.mem_bytes = 80 * kGiB;
      gpu.nvlink_group = i / 4;
      gpu.numa = i / 4;
      gpu.util = percent(rng) < 30 ? 0.0 : (10 + percent(rng) * 85 / 100) / 100.0;
      if (percent(rng) < 20) {
        std::string tenant = "tenant" + std::to_string(percent(rng) % kTenants);
        gpu.jobs.push_back(
            {"resident-" + std::to_string(made), place::JobClass::kProduction, tenant, 40 * kGiB});
        gpu.mem_used_bytes = 40 * kGiB;
      }
      node.gpus.push_back(gpu);
    }
    cluster.nodes.push_back(std::move(node));
  }
  return cluster;
}

std::vector<place::Job> make_jobs(const BenchOptions& options, std::mt19937& rng) {
  std::uniform_int_distribution<int> percent(0, 99);
  std::vector<place::Job> jobs;
  jobs.reserve(static_cast<std::size_t>(options.jobs));
  for (long j = 0; j < options.jobs; ++j) {
    place::Job job;
    job.id.text = "job-" + std::to_string(j);
    job.tenant = "tenant" + std::to_string(percent(rng) % kTenants);
    // Mostly small jobs that share; a tenth ask for a guarantee. Sizes
    // are such that the cluster is nearly full of memory by the end, the
    // hard case for the index (many well-ranked GPUs that no longer fit).
    int kind = percent(rng);
    job.hint = kind < 10   ? place::ClassHint::kProduction
               : kind < 70 ? place::ClassHint::kAuto
                           : place::ClassHint::kOpportunistic;
    if (job.hint == place::ClassHint::kProduction) {
      int size = percent(rng);
      job.gpus = size < 50 ? 1 : size < 70 ? 2 : size < 85 ? 4 : size < 95 ? 8 : 16;
      job.mem_bytes = (10 + percent(rng) % 60) * kGiB;
    } else {
      job.gpus = percent(rng) < 90 ? 1 : 2;
      job.mem_bytes = (1 + percent(rng) % 12) * kGiB;
    }
    job.util = 0.005;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

gpushare::Status emit(const BenchOptions& options, const place::Cluster& cluster,
                      const std::vector<place::Job>& jobs) {
  if (auto written = place::write_state(cluster, options.emit_dir + "/cluster.toml"); !written) {
    return written;
  }
  std::ofstream out(options.emit_dir + "/jobs.jsonl");
  for (const place::Job& job : jobs) {
    nlohmann::ordered_json record = {{"kind", "job"},
                                     {"version", 1},
                                     {"id", job.id.text},
                                     {"tenant", job.tenant},
                                     {"gpus", job.gpus},
                                     {"mem_bytes", job.mem_bytes},
                                     {"class", std::string(place::to_string(job.hint))},
                                     {"util", job.util}};
    out << record.dump() << '\n';
  }
  if (!out) return gpushare::make_error(options.emit_dir + "/jobs.jsonl: cannot write");
  return {};
}

int run(const BenchOptions& options) {
  std::mt19937 rng(options.seed);
  auto setup_start = Clock::now();
  place::Cluster cluster = make_cluster(options, rng);
  std::vector<place::Job> jobs = make_jobs(options, rng);
  if (!options.emit_dir.empty()) {
    if (auto emitted = emit(options, cluster, jobs); !emitted) {
      gpushare::diag::error(emitted.error().message);
      return gpushare::exit_status::kFailure;
    }
  }
  place::Placer placer(std::move(cluster));
  double setup_ms = std::chrono::duration<double, std::milli>(Clock::now() - setup_start).count();

  long counts[3] = {0, 0, 0};
  std::size_t tenth = std::max<std::size_t>(1, jobs.size() / 10);
  Clock::duration first_tenth{}, last_tenth{};
  auto start = Clock::now();
  auto mark = start;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    place::Placement placement = placer.place(jobs[i]);
    ++counts[static_cast<int>(placement.status)];
    if (i + 1 == tenth) first_tenth = Clock::now() - start;
    if (i + tenth == jobs.size()) mark = Clock::now();
  }
  auto end = Clock::now();
  last_tenth = end - mark;
  double total_ms = std::chrono::duration<double, std::milli>(end - start).count();
  auto per_job_ns = [&](Clock::duration d) {
    return std::chrono::duration<double, std::nano>(d).count() / static_cast<double>(tenth);
  };

  nlohmann::ordered_json fields = {
      {"name", "place"},
      {"gpus", options.gpus},
      {"jobs", options.jobs},
      {"placed", counts[0]},
      {"reserved", counts[1]},
      {"unplaced", counts[2]},
      {"setup_ms", setup_ms},
      {"total_ms", total_ms},
      {"jobs_per_s", total_ms > 0 ? static_cast<double>(jobs.size()) / (total_ms / 1000) : 0.0},
      {"first_tenth_ns_per_job", per_job_ns(first_tenth)},
      {"last_tenth_ns_per_job", per_job_ns(last_tenth)}};
  gpushare::JsonLinesWriter(std::cout).write("bench", 1, fields);
  return gpushare::exit_status::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-bench-place");
  CLI::App app{"Time gpushare-place's placement on a generated cluster.", "gpushare-bench-place"};
  gpushare::cli::configure(app, "gpushare-bench-place");
  BenchOptions options;
  app.add_option("--gpus", options.gpus, "GPUs in the cluster")
      ->check(CLI::Range(1L, 10000000L))
      ->capture_default_str();
  app.add_option("--jobs", options.jobs, "Jobs to place")
      ->check(CLI::Range(1L, 100000000L))
      ->capture_default_str();
  app.add_option("--seed", options.seed, "Random seed")->capture_default_str();
  app.add_option("--emit", options.emit_dir, "Also write DIR/cluster.toml and DIR/jobs.jsonl");
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  return run(options);
}
