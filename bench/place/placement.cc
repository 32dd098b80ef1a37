// gpushare-bench-place: placement throughput on a generated cluster.
//
//   gpushare-bench-place [--gpus N] [--jobs M] [--seed S] [--emit DIR]
//
// Builds a cluster of N GPUs (8 per node: two NVLink groups of 4, one per
// NUMA node; a fifth of the GPUs already run a production job, the rest have
// mixed utilisation) and M jobs (production, auto and opportunistic, 1 to
// 16 GPUs, 1 to 70 GiB each), and measures two things, printed as one JSON
// record:
//
//   placement_*   Placer::place alone, on the cluster built in memory: total
//                 time, jobs per second, and the time per job over the first
//                 and the last tenth of the jobs (each exactly M/10 jobs). If
//                 the cost per job grew with the jobs already placed, the
//                 last tenth would be slower than the first. Each call is
//                 also timed alone, as the streaming mode (one job in, one
//                 placement out) sees it: placement_p50_ns, _p99_ns, _max_ns.
//   end_to_end_*  what gpushare-place does with the same cluster and jobs
//                 written as files: read and check cluster.toml, read the
//                 JSON Lines jobs, place each, format each output line
//                 (discarded), in this process. Split into the cluster file
//                 and the rest, since the file's cost grows with the cluster
//                 and the rest with the jobs. Process start and the write to
//                 a terminal or pipe are not included.
//
// The files go to DIR with --emit (kept, to time the program by hand), else
// to a temporary directory that is removed. --placement-only skips the
// files and the end-to-end figures (the CTest ratio check uses it).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
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
#include "place/cluster/cluster_toml.h"
#include "place/cluster/state_writer.h"
#include "place/format.h"
#include "place/job/job.h"
#include "place/job/job_reader.h"
#include "place/placer.h"

namespace {

namespace place = gpushare::place;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  long gpus = 10000;
  long jobs = 100000;
  unsigned seed = 1;
  std::string emit_dir;
  bool placement_only = false;
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
            {"resident-" + std::to_string(made), gpushare::kQosProduction, tenant, 40 * kGiB});
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

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct EndToEnd {
  double cluster_ms = 0;  ///< load_cluster: read, parse and check the TOML
  double jobs_ms = 0;     ///< read, parse, place and format every job
  long records = 0;
};

/// gpushare-place's work on DIR/cluster.toml and DIR/jobs.jsonl, timed.
gpushare::Result<EndToEnd> end_to_end(const std::string& dir) {
  EndToEnd result;
  auto start = Clock::now();
  auto cluster = place::load_cluster(dir + "/cluster.toml");
  if (!cluster) return cluster.error();
  place::Placer placer(std::move(*cluster));
  result.cluster_ms = ms_since(start);

  start = Clock::now();
  std::ifstream in(dir + "/jobs.jsonl", std::ios::binary);
  if (!in) return gpushare::make_error(dir + "/jobs.jsonl: cannot open");
  // The program's reader: the fast path, nlohmann for what it leaves.
  place::JobReader reader(in, "jobs.jsonl");
  std::size_t output_bytes = 0;
  place::JobRecord record;
  while (reader.next(&record)) {
    if (!record.job) return gpushare::make_error(record.error);
    output_bytes += place::placement_json(placer.place(*record.job)).size() + 1;
    ++result.records;
  }
  result.jobs_ms = ms_since(start);
  if (output_bytes == 0) return gpushare::make_error("no output");  // keeps the formatting
  return result;
}

/// Placer::place alone over `jobs`, and the outcome counts.
struct PlacementTimes {
  long counts[3] = {0, 0, 0};  ///< by PlacementStatus
  std::size_t tenth = 1;       ///< jobs in each of the first and the last tenth
  double total_ms = 0;
  double first_tenth_ns_per_job = 0;
  double last_tenth_ns_per_job = 0;
  double p50_ns = 0, p99_ns = 0, max_ns = 0;  ///< one call alone
};

// The q-quantile (0..1) of `values`, which it reorders.
double quantile(std::vector<float>& values, double q) {
  if (values.empty()) return 0;
  auto at =
      values.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

PlacementTimes time_placement(place::Placer* placer, const std::vector<place::Job>& jobs) {
  PlacementTimes times;
  // The first and the last `tenth` jobs; with fewer than 10 jobs, one each.
  const std::size_t tenth = std::max<std::size_t>(1, jobs.size() / 10);
  times.tenth = tenth;
  Clock::duration first_tenth{};
  std::vector<float> each_ns(jobs.size());
  auto start = Clock::now();
  auto last_start = start;
  auto before = start;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (i == jobs.size() - tenth) last_start = before;
    place::Placement placement = placer->place(jobs[i]);
    auto after = Clock::now();
    each_ns[i] =
        static_cast<float>(std::chrono::duration<double, std::nano>(after - before).count());
    before = after;
    ++times.counts[static_cast<int>(placement.status)];
    if (i + 1 == tenth) first_tenth = after - start;
  }
  auto end = before;
  auto per_job_ns = [&](Clock::duration d) {
    return std::chrono::duration<double, std::nano>(d).count() / static_cast<double>(tenth);
  };
  times.total_ms = std::chrono::duration<double, std::milli>(end - start).count();
  times.first_tenth_ns_per_job = per_job_ns(first_tenth);
  times.last_tenth_ns_per_job = per_job_ns(end - last_start);
  times.p50_ns = quantile(each_ns, 0.50);
  times.p99_ns = quantile(each_ns, 0.99);
  times.max_ns = quantile(each_ns, 1.0);
  return times;
}

int run(const BenchOptions& options) {
  std::mt19937 rng(options.seed);
  auto setup_start = Clock::now();
  place::Cluster cluster = make_cluster(options, rng);
  std::vector<place::Job> jobs = make_jobs(options, rng);
  place::Placer placer(cluster);
  double setup_ms = ms_since(setup_start);

  PlacementTimes placement = time_placement(&placer, jobs);
  nlohmann::ordered_json fields = {
      {"name", "place"},
      {"gpus", options.gpus},
      {"jobs", options.jobs},
      {"placed", placement.counts[0]},
      {"reserved", placement.counts[1]},
      {"unplaced", placement.counts[2]},
      {"setup_ms", setup_ms},
      {"placement_ms", placement.total_ms},
      {"placement_jobs_per_s", placement.total_ms > 0
                                   ? static_cast<double>(jobs.size()) / (placement.total_ms / 1000)
                                   : 0.0},
      {"placement_ns_per_job", placement.total_ms * 1e6 / static_cast<double>(jobs.size())},
      {"placement_p50_ns", placement.p50_ns},
      {"placement_p99_ns", placement.p99_ns},
      {"placement_max_ns", placement.max_ns},
      {"tenth_jobs", placement.tenth},
      {"placement_first_tenth_ns_per_job", placement.first_tenth_ns_per_job},
      {"placement_last_tenth_ns_per_job", placement.last_tenth_ns_per_job}};
  if (options.placement_only) {
    gpushare::JsonLinesWriter(std::cout).write("bench", 1, fields);
    return gpushare::exit_status::kSuccess;
  }

  // The same cluster and jobs as files, through gpushare-place's path.
  std::string dir = options.emit_dir;
  if (dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpushare-bench-place.XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      gpushare::diag::error("cannot make a temporary directory: " +
                            std::string(std::strerror(errno)));
      return gpushare::exit_status::kFailure;
    }
    dir = pattern;
  }
  BenchOptions emit_options = options;
  emit_options.emit_dir = dir;
  gpushare::Result<EndToEnd> e2e = gpushare::make_error("not run");
  if (auto emitted = emit(emit_options, cluster, jobs); !emitted) {
    e2e = emitted.error();
  } else {
    e2e = end_to_end(dir);
  }
  std::error_code ignored;
  std::uintmax_t cluster_file_bytes = std::filesystem::file_size(dir + "/cluster.toml", ignored);
  if (options.emit_dir.empty()) std::filesystem::remove_all(dir, ignored);
  if (!e2e) {
    gpushare::diag::error(e2e.error().message);
    return gpushare::exit_status::kFailure;
  }
  double e2e_ms = e2e->cluster_ms + e2e->jobs_ms;

  fields["cluster_file_bytes"] = cluster_file_bytes;
  fields["end_to_end_cluster_file_ms"] = e2e->cluster_ms;
  fields["end_to_end_jobs_ms"] = e2e->jobs_ms;
  fields["end_to_end_ms"] = e2e_ms;
  fields["end_to_end_jobs_per_s"] =
      e2e_ms > 0 ? static_cast<double>(e2e->records) / (e2e_ms / 1000) : 0.0;
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
  app.add_flag("--placement-only", options.placement_only,
               "Time placement alone: no files, no end-to-end figures");
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  return run(options);
}
