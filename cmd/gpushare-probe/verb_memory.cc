// `gpushare-probe memory`: runs a command under the interposer, samples its
// device memory, prints the samples and a profile (peak, iteration floor
// and ceiling, period, context memory, the mem_bytes to place it with),
// then, with --caps, its speed under each memory cap.
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "common/units.h"
#include "probe.h"
#include "probe/progress.h"
#include "probe/series.h"
#include "probe/svg.h"

namespace probe_cmd {
namespace {

namespace exit_status = gpushare::exit_status;
using gpushare::probe::CapPoint;
using gpushare::probe::MemorySummary;
using nlohmann::ordered_json;

double round3(double value) { return std::round(value * 1000) / 1000; }

double now_s() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

ordered_json optional_number(const std::optional<double>& value) {
  return value ? ordered_json(round3(*value)) : ordered_json(nullptr);
}

std::optional<double> speed_of(const MemorySummary& summary) {
  if (!summary.period_ms || *summary.period_ms <= 0) return std::nullopt;
  return 1000.0 / *summary.period_ms;
}

// Device utilisation while the job ran, 0..1: the simulator's busy time,
// else NVML's readings; nullopt where neither was available.
std::optional<double> utilisation(const MemorySummary& summary,
                                  const gpushare::probe::JobTrace& trace) {
  if (summary.busy_fraction > 0) return summary.busy_fraction;
  if (trace.util_readings > 0) {
    return std::min(1.0, trace.util_sum / static_cast<double>(trace.util_readings) / 100.0);
  }
  return std::nullopt;
}

ordered_json profile_record(const std::string& name, const std::vector<std::string>& command,
                            const MemorySummary& summary, const gpushare::probe::JobTrace& trace,
                            const std::optional<std::uint64_t>& context_bytes, double interval_ms) {
  ordered_json record = ordered_json::object();
  record["id"] = name;
  record["command"] = command;
  record["exit_status"] = trace.exit_status;
  record["stopped"] = trace.stopped;
  record["touched_gpu"] = summary.touched_gpu;
  record["peak_mem_bytes"] = summary.peak_bytes;
  record["floor_mem_bytes"] = summary.floor_bytes;
  record["ceiling_mem_bytes"] = summary.ceiling_bytes;
  record["period_ms"] = optional_number(summary.period_ms);
  record["period_source"] =
      summary.period_source.empty() ? ordered_json(nullptr) : ordered_json(summary.period_source);
  record["iterations"] = summary.iterations;
  record["iterations_per_s"] = optional_number(speed_of(summary));
  record["context_mem_bytes"] =
      context_bytes ? ordered_json(*context_bytes) : ordered_json(nullptr);
  record["mem_bytes"] = summary.mem_bytes;
  std::optional<double> util = utilisation(summary, trace);
  if (util) record["util"] = round3(*util);
  record["elapsed_ms"] = round3(trace.elapsed_ms);
  record["active_ms"] = round3(summary.active_ms);
  record["samples"] = trace.samples.size();
  record["interval_ms"] = round3(interval_ms);
  if (!summary.touched_gpu) {
    record["note"] =
        "the job never held device memory: it did not use the GPU (or failed before its "
        "first context), so there is nothing to profile";
  } else if (!summary.period_ms) {
    record["note"] =
        "no iterations seen: floor and ceiling are the lowest and highest memory of the run";
  }
  return record;
}

std::uint64_t cap_bytes(const std::string& cap, std::uint64_t profile_bytes) {
  // Already validated by parse_arguments.
  if (gpushare::is_percentage(cap)) return *gpushare::parse_size(cap, profile_bytes);
  return *gpushare::parse_size(cap);
}

struct CapRun {
  CapPoint point;
  ordered_json record;
};

// One run under a cap. A failed run is a result, not an error: it is what
// a cap below the working set does without spill.
gpushare::Result<CapRun> run_cap(gpushare::probe::GpuApi& api,
                                 const std::vector<std::string>& uuids, const ProbeOptions& options,
                                 const Parsed& parsed, const std::string& cap,
                                 std::uint64_t profile_bytes,
                                 const std::optional<double>& uncapped_speed) {
  CapRun run;
  run.point.cap = cap;
  run.point.limit_bytes = std::max<std::uint64_t>(1, cap_bytes(cap, profile_bytes));
  JobRequest job{options.command, options.sim, false, std::to_string(run.point.limit_bytes),
                 options.name,    {}};
  auto plan = plan_job(job);
  if (!plan) return plan.error();
  auto runs = run_sampled(api, uuids, {*plan}, {parsed.interval_ms, parsed.duration_ms}, nullptr);
  if (!runs) return runs.error();
  if (runs->exec_errno != 0) {
    return gpushare::make_error("'" + runs->failed_command +
                                "': " + std::strerror(runs->exec_errno));
  }
  const gpushare::probe::JobTrace& trace = runs->traces.front();
  MemorySummary summary = gpushare::probe::summarise_memory(trace.samples, parsed.interval_ms);
  bool completed = trace.exit_status == 0 || trace.stopped;
  if (completed) run.point.iterations_per_s = speed_of(summary);
  ordered_json& record = run.record;
  record["cap"] = cap;
  record["mem_limit_bytes"] = run.point.limit_bytes;
  record["completed"] = completed;
  record["exit_status"] = trace.exit_status;
  record["iterations_per_s"] = optional_number(run.point.iterations_per_s);
  record["relative_speed"] =
      run.point.iterations_per_s && uncapped_speed
          ? ordered_json(round3(*run.point.iterations_per_s / *uncapped_speed))
          : ordered_json(nullptr);
  record["peak_mem_bytes"] = summary.peak_bytes;
  if (!completed) {
    record["note"] =
        "the job failed under this cap (exit status " + std::to_string(trace.exit_status) +
        "): the job runs as production, whose memory never spills to the host, so a cap below "
        "its working set fails its allocations with CUDA_ERROR_OUT_OF_MEMORY";
  } else if (!run.point.iterations_per_s) {
    record["note"] = "no iterations seen under this cap";
  }
  return run;
}

int fail(const std::string& message, int status = exit_status::kFailure) {
  gpushare::diag::error(message);
  return status;
}

}  // namespace

int run_memory(const ProbeOptions& options) {
  // Every argument is checked before anything runs.
  auto parsed = parse_arguments(options);
  if (!parsed) {
    gpushare::diag::error(parsed.error().message);
    gpushare::diag::usage_hint();
    return exit_status::kUsage;
  }
  // From here a Ctrl-C stops the job and reports what was seen.
  install_stop_handlers();
  // The GPU as the job will see it: its UUIDs, and one bare context's size.
  auto gpu = open_gpu(options.sim);
  if (!gpu) return fail(gpu.error().message);
  auto uuids = gpushare::probe::device_uuids(**gpu);
  if (!uuids) return fail(uuids.error().message);
  if (uuids->empty()) return fail("no GPU to probe");
  if (!(*gpu)->has_nvml()) {
    return fail(
        "no NVML (libnvidia-ml.so.1) to read the job's memory from: its process list is "
        "what the probe samples");
  }
  std::optional<std::uint64_t> context_bytes;
  if (auto bytes = (*gpu)->context_bytes(0, uuids->front())) context_bytes = *bytes;
  // The job, started as gpushare-run would start it.
  JobRequest job{options.command, options.sim, false, std::nullopt, options.name, {}};
  auto plan = plan_job(job);
  if (!plan) return fail(plan.error().message);
  std::string name;
  for (const auto& [key, value] : plan->environment) {
    if (key == "GPUSHARE_JOB") name = value;
  }
  // Samples as they come, so a pipeline sees the curve live; a terminal
  // gets the profile and the caps as text, without the samples.
  bool jsonl = json_lines(options.format);
  gpushare::JsonLinesWriter writer(std::cout);
  std::uint64_t peak = 0;
  double shown_s = now_s();
  bool shown_once = false;
  auto on_sample = [&](std::size_t, pid_t, const gpushare::probe::MemorySample& sample,
                       const std::vector<std::uint64_t>& per_device) {
    if (options.summary_only || !jsonl) {
      // Nothing on stdout until the end: how far the run is, on stderr.
      double t = now_s();
      peak = std::max(peak, sample.mem_bytes);
      // From 2 s on, every 5 s.
      if (t - shown_s >= (shown_once ? 5.0 : 2.0)) {
        shown_once = true;
        shown_s = t;
        progress("memory: " + std::to_string(static_cast<long long>(sample.t_ms / 1000)) +
                 "s, " + gpushare::format_size(sample.mem_bytes) + " now, peak " +
                 gpushare::format_size(peak));
      }
      return;
    }
    writer.write("memory-sample", 1,
                 {{"t_ms", round3(sample.t_ms)},
                  {"mem_bytes", sample.mem_bytes},
                  {"device_mem_bytes", per_device}});
  };
  auto runs =
      run_sampled(**gpu, *uuids, {*plan}, {parsed->interval_ms, parsed->duration_ms}, on_sample);
  if (!runs) return fail(runs.error().message);
  if (runs->exec_errno != 0) {
    return fail("'" + runs->failed_command + "': " + std::strerror(runs->exec_errno),
                runs->exec_errno == ENOENT ? exit_status::kNotFound : exit_status::kCannotExecute);
  }
  const gpushare::probe::JobTrace& trace = runs->traces.front();
  MemorySummary summary = gpushare::probe::summarise_memory(trace.samples, parsed->interval_ms);
  ordered_json profile =
      profile_record(name, options.command, summary, trace, context_bytes, parsed->interval_ms);
  if (jsonl) {
    writer.write("memory-profile", 1, profile);
  } else {
    std::cout << "memory profile of " << gpushare::diag::printable(name) << ":\n"
              << record_text(profile) << std::flush;
  }
  // Speed under each cap, one run after another.
  std::vector<CapPoint> points;
  if (!parsed->caps.empty() && !summary.touched_gpu) {
    gpushare::diag::warning("--caps: the job never used device memory; no caps to try");
  } else {
    // One run per cap, each about as long as the profile's run.
    double sweep_began = now_s();
    for (std::size_t i = 0; i < parsed->caps.size(); ++i) {
      const std::string& cap = parsed->caps[i];
      if (g_stop_signal != 0) break;
      progress(gpushare::probe::sweep_line("memory caps", i + 1, parsed->caps.size(),
                                           "cap " + cap, now_s() - sweep_began,
                                           trace.elapsed_ms / 1000));
      auto run =
          run_cap(**gpu, *uuids, options, *parsed, cap, summary.mem_bytes, speed_of(summary));
          if (!run) return fail(run.error().message);
      points.push_back(run->point);
      if (options.summary_only) continue;
      if (jsonl) {
        writer.write("memory-cap", 1, run->record);
      } else {
        std::cout << "\nunder cap " << gpushare::diag::printable(cap) << ":\n"
                  << record_text(run->record) << std::flush;
      }
    }
  }
  if (options.plot) {
    std::string svg = gpushare::probe::memory_svg(name, trace.samples, summary, points);
    if (auto written = write_file(*options.plot, svg); !written) {
      return fail(written.error().message);
    }
  }
  if (g_stop_signal != 0) return 128 + g_stop_signal;
  if (trace.exit_status != 0 && !trace.stopped) {
    return fail("the job exited with status " + std::to_string(trace.exit_status));
  }
  return exit_status::kSuccess;
}

}  // namespace probe_cmd
