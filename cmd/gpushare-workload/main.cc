// gpushare-workload: a synthetic training job for demos, tests and
// benchmarks (gpushare-workload(1)). It runs unchanged on the simulated GPU
// (LD_LIBRARY_PATH=P/lib/gpushare/sim) and on a real one.
//
// main() parses into WorkloadOptions and calls run(), which runs the
// workload (workload.cc) and prints JSON Lines; with --launch N, run()
// starts N ranks of itself instead (launcher.cc), as torchrun does.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "common/kernel_trace.h"
#include "common/units.h"
#include "launcher.h"
#include "workload.h"

namespace {

using gpushare::workload::AllocKind;
using gpushare::workload::WorkloadOptions;

struct Options {
  WorkloadOptions workload;
  std::string trace_path;
  gpushare::KernelTrace trace;
  bool per_iteration = false;
  std::string label;
  int launch = 0;  ///< --launch N: start N ranks of this command
  bool bind_gpu = false;  ///< --bind-gpu: each rank sees only its own GPU
  std::string rendezvous;
  std::vector<std::string> rank_arguments;  ///< the command line less --launch, for the ranks
};

double round3(double value) {
  return static_cast<double>(static_cast<long long>(value * 1000 + 0.5)) / 1000;
}

int run(const Options& options) {
  if (options.launch > 0) {
    return gpushare::workload::launch_ranks(options.rank_arguments, options.launch,
                                            options.rendezvous, options.bind_gpu);
  }
  gpushare::JsonLinesWriter writer(std::cout);
  const WorkloadOptions& workload = options.workload;
  auto labelled = [&](nlohmann::ordered_json fields) {
    if (!options.label.empty()) fields["label"] = options.label;
    if (workload.rank >= 0) {
      fields["rank"] = workload.rank;
      fields["world_size"] = workload.world_size;
    }
    return fields;
  };
  // Per-iteration records as they happen, so a pipeline sees progress.
  auto on_iteration = [&](const gpushare::workload::IterationSample& sample) {
    if (!options.per_iteration) return;
    nlohmann::ordered_json fields = labelled({{"iteration", sample.iteration},
                           {"iteration_ms", round3(sample.iteration_ms)},
                           {"t_ms", round3(sample.t_ms)},
                           {"gpu_ms", round3(sample.gpu_ms)},
                           {"mem_bytes", sample.mem_bytes},
                           {"sync_every", sample.sync_every},
                           {"synced", sample.synced}});
    if (workload.rank >= 0) {
      fields["step"] = sample.iteration;
      fields["allreduce_wait_ms"] = round3(sample.allreduce_wait_ms);
    }
    writer.write("workload-iteration", 1, fields);
  };
  auto result = gpushare::workload::run_workload(options.workload, on_iteration);
  if (!result) {
    gpushare::diag::error(result.error().message);
    return gpushare::exit_status::kFailure;
  }
  gpushare::workload::Summary summary = gpushare::workload::summarise(*result);
  char checksum[24];
  std::snprintf(checksum, sizeof checksum, "%016llx",
                static_cast<unsigned long long>(result->checksum));
  writer.write("workload-summary", 1,
               labelled({{"iterations", static_cast<long>(result->iteration_ms.size())},
                         {"kernels", result->kernels},
                         {"elapsed_ms", round3(result->elapsed_ms)},
                         {"startup_ms", round3(result->startup_ms)},
                         {"iterations_per_s", round3(summary.iterations_per_s)},
                         {"iteration_ms_mean", round3(summary.iteration_ms_mean)},
                         {"iteration_ms_p99", round3(summary.iteration_ms_p99)},
                         {"gpu_ms_total", round3(result->gpu_ms_total)},
                         {"peak_mem_bytes", result->peak_mem_bytes},
                         {"verified_bytes", result->verified_bytes},
                         {"verifications", result->verifications},
                         {"allreduces", result->allreduces},
                         {"checksum", checksum}}));
  return gpushare::exit_status::kSuccess;
}

// Sizes arrive as text so they get our grammar ("8GiB") and our messages.
bool parse_size_option(const std::string& name, const std::string& text, std::uint64_t* bytes) {
  auto parsed = gpushare::parse_size(text);
  if (!parsed) {
    gpushare::diag::error(name + ": " + parsed.error().message);
    gpushare::diag::usage_hint();
    return false;
  }
  *bytes = *parsed;
  return true;
}

// --sync-every N[,M...]: positive counts, comma-separated.
bool parse_sync_every(const std::string& text, std::vector<long>* counts) {
  counts->clear();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long count = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || count < 1 || count > 1000000) {
      gpushare::diag::error("--sync-every: '" + text +
                            "' is not a comma-separated list of counts from 1 to 1000000");
      gpushare::diag::usage_hint();
      return false;
    }
    counts->push_back(count);
  }
  if (counts->empty()) {
    gpushare::diag::error("--sync-every: no count given");
    gpushare::diag::usage_hint();
    return false;
  }
  return true;
}

// Whole file into `text`; false when it cannot be read (`exists` says
// whether it was there at all).
bool read_file(const std::string& path, std::string* text, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = static_cast<bool>(in);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *text = buffer.str();
  return !in.bad();
}

// --trace FILE and its syncs file beside it (gpushare-workload(1)): a bad
// file is an input error naming FILE:LINE:COL.
bool load_trace(Options* options) {
  std::string csv, syncs;
  bool exists = false;
  if (!read_file(options->trace_path, &csv, &exists)) {
    gpushare::diag::error("--trace: cannot read '" + options->trace_path + "'");
    return false;
  }
  std::string syncs_path = gpushare::syncs_path_for(options->trace_path);
  if (!read_file(syncs_path, &syncs, &exists)) {
    if (exists) {
      gpushare::diag::error("--trace: cannot read '" + syncs_path + "'");
      return false;
    }
    syncs_path.clear();  // no syncs file: the trace is one step
  }
  auto parsed = gpushare::parse_kernel_trace(csv, options->trace_path, syncs, syncs_path);
  if (!parsed) {
    gpushare::diag::error(parsed.error().message);
    return false;
  }
  options->trace = std::move(*parsed);
  options->workload.trace = &options->trace;
  return true;
}

// --rank R --world-size N, or torchrun's RANK, WORLD_SIZE and LOCAL_RANK
// when no --rank is given; a rank uses device LOCAL_RANK (R when given on
// the command line) unless --device says otherwise.
bool rank_from_environment(Options* options, bool rank_given, bool device_given) {
  WorkloadOptions& workload = options->workload;
  int local_rank = workload.rank;
  if (!rank_given && options->launch == 0) {
    const char* rank = std::getenv("RANK");
    const char* world = std::getenv("WORLD_SIZE");
    const char* local = std::getenv("LOCAL_RANK");
    if (rank == nullptr || world == nullptr) return true;  // a single process
    auto number = [](const char* text, int low, int high, int* value) {
      char* end = nullptr;
      long parsed = std::strtol(text, &end, 10);
      if (*text == '\0' || *end != '\0' || parsed < low || parsed > high) return false;
      *value = static_cast<int>(parsed);
      return true;
    };
    if (!number(world, 1, 8, &workload.world_size) ||
        !number(rank, 0, workload.world_size - 1, &workload.rank) ||
        (local != nullptr && !number(local, 0, 7, &local_rank))) {
      gpushare::diag::error("RANK, WORLD_SIZE or LOCAL_RANK: not a rank of at most 8 ("
                            "RANK=" + std::string(rank) + ", WORLD_SIZE=" + world + ")");
      return false;
    }
    if (local == nullptr) local_rank = workload.rank;
    if (options->rendezvous.empty()) {
      const char* master = std::getenv("MASTER_PORT");
      if (master != nullptr) options->rendezvous = std::string("torchrun-") + master;
    }
  }
  if (workload.rank < 0) return true;
  if (workload.rank >= workload.world_size) {
    gpushare::diag::error("--rank: " + std::to_string(workload.rank) + " is not below --world-size " +
                          std::to_string(workload.world_size));
    gpushare::diag::usage_hint();
    return false;
  }
  if (!device_given) workload.device = local_rank;
  if (options->rendezvous.empty()) options->rendezvous = "gpushare-workload";
  workload.comm = gpushare::workload::comm_of(options->rendezvous);
  return true;
}

// The command line for the ranks: argv less --launch N and --rendezvous
// NAME (or their --x=V forms).
std::vector<std::string> arguments_without_launch(int argc, char** argv) {
  std::vector<std::string> kept;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    if (argument == "--launch") {
      ++i;
      continue;
    }
    if (argument.rfind("--launch=", 0) == 0 || argument.rfind("--rendezvous=", 0) == 0 ||
        argument == "--bind-gpu") {
      continue;
    }
    if (argument == "--rendezvous") {  // each rank gets the launcher's
      ++i;
      continue;
    }
    kept.push_back(argument);
  }
  return kept;
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-workload");
  CLI::App app{"Run a synthetic training job on the CUDA driver API.", "gpushare-workload"};
  gpushare::cli::configure(app, "gpushare-workload");
  Options options;
  WorkloadOptions& workload = options.workload;
  std::string mem = "256MiB", grow = "0", verify = "64MiB", alloc = "plain", sync_every = "1";
  app.add_option("--mem", mem, "Working set to allocate (e.g. 2GiB)")->capture_default_str();
  auto* iterations = app.add_option("--iterations", workload.iterations, "Iterations to run")
                         ->capture_default_str()
                         ->check(CLI::Range(1L, 100000000L));
  app.add_option("--duration", workload.duration_s,
                 "Run iterations for this many seconds instead of a count")
      ->check(CLI::Range(0.001, 31536000.0))
      ->excludes(iterations);
  app.add_option("--host-us", workload.host_us,
                 "Host-side time per iteration in microseconds (the GPU idles)")
      ->capture_default_str()
      ->check(CLI::Range(0L, 3600000000L));
  auto* per_iter = app.add_option("--kernels-per-iter", workload.kernels_per_iteration,
                                  "Kernels per iteration")
      ->capture_default_str()
      ->check(CLI::Range(0L, 1000000L));
  auto* kernel_us =
      app.add_option("--kernel-us", workload.kernel_us, "Duration of each kernel in microseconds")
      ->capture_default_str()
      ->check(CLI::Range(0L, 3600000000L));
  app.add_option("--grow", grow, "Extra memory allocated and freed in each iteration")
      ->capture_default_str();
  app.add_option("--alloc", alloc, "How memory is allocated")
      ->capture_default_str()
      ->check(CLI::IsMember({"plain", "managed", "async"}));
  app.add_option("--verify", verify, "Bytes of the working set checked by checksum")
      ->capture_default_str();
  app.add_option("--chunks", workload.chunks, "Split the working set into N allocations")
      ->capture_default_str()
      ->check(CLI::Range(1L, 4096L));
  app.add_option("--verify-every", workload.verify_every,
                 "Also check the data after every N iterations")
      ->capture_default_str()
      ->check(CLI::Range(0L, 100000000L));
  app.add_option("--stop-file", workload.stop_file, "Stop iterating once this file exists");
  app.add_option("--blocks", workload.blocks, "Thread blocks per kernel")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65535u));
  app.add_option("--device", workload.device, "Device ordinal")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  auto* trace = app.add_option("--trace", options.trace_path,
                               "Replay a kernel timeline (CSV) instead of spin kernels")
                    ->excludes(per_iter)
                    ->excludes(kernel_us);
  app.add_option("--launch-scale", workload.launch_scale,
                 "With --trace: multiply the recorded launch offsets (0: back to back)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0))
      ->needs(trace);
  std::string pace = "schedule";
  app.add_option("--pace", pace,
                 "With --trace: after a launch that blocked, catch up with the step's schedule "
                 "(schedule) or shift it (host: a Python framework's pace)")
      ->capture_default_str()
      ->check(CLI::IsMember({"schedule", "host"}))
      ->needs(trace);
  app.add_option("--startup-steps", workload.startup_steps,
                 "Start-up steps before the first iteration, each paused inside its burst")
      ->capture_default_str()
      ->check(CLI::Range(0L, 100000L));
  app.add_option("--startup-pause-us", workload.startup_pause_us,
                 "Host pause in the middle of each start-up step, in microseconds")
      ->capture_default_str()
      ->check(CLI::Range(0L, 3600000000L));
  app.add_option("--sync-every", sync_every,
                 "Synchronise after every N iterations; N,M,...: in turn, see --sync-switch-s")
      ->capture_default_str();
  app.add_option("--sync-switch-s", workload.sync_switch_s,
                 "With several --sync-every figures: move to the next after this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 31536000.0));
  std::string allreduce = "0";
  auto* rank = app.add_option("--rank", workload.rank,
                              "This process's rank in a multi-process job (with --world-size)")
                   ->check(CLI::Range(0, 7));
  auto* world = app.add_option("--world-size", workload.world_size,
                               "Ranks in the job: each step ends with an all-reduce among them")
                    ->check(CLI::Range(1, 8))
                    ->needs(rank);
  rank->needs(world);
  app.add_option("--rendezvous", options.rendezvous,
                 "Name the ranks of one job share (default: gpushare-workload)");
  app.add_option("--allreduce", allreduce,
                 "Bytes all-reduced among the ranks at the end of each step")
      ->capture_default_str();
  auto* launch =
      app.add_option("--launch", options.launch, "Start N ranks of this job, rank R on device R")
          ->check(CLI::Range(1, 8))
          ->excludes(rank);
  app.add_flag("--bind-gpu", options.bind_gpu,
               "With --launch: each rank sees only its own GPU (CUDA_VISIBLE_DEVICES)")
      ->needs(launch);
  double skew = 1.0;
  app.add_option("--skew", skew,
                 "Rank 0's kernels take this many times as long (a rank with more work)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 100.0));
  app.add_option("--label", options.label, "Label added to every record");
  app.add_flag("--per-iteration", options.per_iteration, "Print a record per iteration");
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  if (!parse_size_option("--mem", mem, &workload.mem_bytes) ||
      !parse_size_option("--grow", grow, &workload.grow_bytes) ||
      !parse_size_option("--verify", verify, &workload.verify_bytes)) {
    return gpushare::exit_status::kUsage;
  }
  if (workload.mem_bytes == 0) {
    gpushare::diag::error("--mem: the working set must not be empty");
    gpushare::diag::usage_hint();
    return gpushare::exit_status::kUsage;
  }
  if (!parse_sync_every(sync_every, &workload.sync_every)) return gpushare::exit_status::kUsage;
  if (!parse_size_option("--allreduce", allreduce, &workload.allreduce_bytes)) {
    return gpushare::exit_status::kUsage;
  }
  if (!rank_from_environment(&options, app.count("--rank") > 0, app.count("--device") > 0)) {
    return gpushare::exit_status::kUsage;
  }
  // Rank 0 with more (or less) work than the others: the rank they wait
  // for at each all-reduce. Synthetic kernels only (a trace is replayed
  // as recorded).
  if (workload.rank == 0 && skew != 1.0) {
    workload.kernel_us = std::max(1L, std::lround(static_cast<double>(workload.kernel_us) * skew));
  }
  if (options.launch > 0) {
    options.rank_arguments = arguments_without_launch(argc, argv);
    if (options.rendezvous.empty()) {
      options.rendezvous = "launch-" + std::to_string(getpid());
    }
  }
  if (!options.trace_path.empty() && !load_trace(&options)) return gpushare::exit_status::kUsage;
  workload.alloc = alloc == "managed" ? AllocKind::kManaged
                                      : (alloc == "async" ? AllocKind::kAsync : AllocKind::kPlain);
  workload.host_paced = pace == "host";
  return run(options);
}
