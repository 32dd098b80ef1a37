// `gpushare-probe interference`: each job alone, then each pair co-located,
// uncontrolled (both production: nothing yields) and under gpushare's QoS
// (one production, one opportunistic, both ways round).
//
// All runs go through one private coordinator (gpushare-ctl serve on a
// socket in a private directory), so every job registers and the QoS runs
// get whatever the coordinator does with an opportunistic job at the time;
// the probe needs no change as the controller improves.
//
// A job's speed is its kernel launch rate, read from the coordinator's
// telemetry (`ls`, every 100 ms): transparent, available for any CUDA job
// (a framework's caching allocator can keep its memory flat, so the memory
// curve may show no iterations), and it falls when the job is slowed or
// throttled. Where the job's memory curve shows iterations, their rate is
// reported too. Relative speed = co-located rate / solo rate.
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/clock.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "coord/contract/socket_path.h"
#include "coord/ctl/ctl_client.h"
#include "probe.h"
#include "probe/progress.h"
#include "probe/svg.h"
#include "runner/coordinator.h"

namespace probe_cmd {
namespace {

namespace exit_status = gpushare::exit_status;
using gpushare::make_error;
using gpushare::monotonic_ms;
using gpushare::Result;
using nlohmann::ordered_json;

double round3(double value) { return std::round(value * 1000) / 1000; }

ordered_json optional_number(const std::optional<double>& value) {
  return value ? ordered_json(round3(*value)) : ordered_json(nullptr);
}

// Launch counts per job over a run, from the coordinator's `ls`.
class LaunchMeter {
 public:
  LaunchMeter(const std::string& socket, std::size_t jobs)
      : socket_(socket), pgids_(jobs, -1), first_(jobs), last_(jobs) {}

  void set_pid(std::size_t job, pid_t pid) { pgids_[job] = pid; }

  void poll() {
    if (monotonic_ms() < next_) return;
    next_ = monotonic_ms() + 100;
    if (!connection_) {
      auto connected = gpushare::coord::ctl::CtlConnection::connect(socket_, std::chrono::seconds(1));
      if (!connected) return;
      connection_.emplace(std::move(*connected));
    }
    auto records = connection_->request(gpushare::coord::ListRequest{}, std::chrono::seconds(1));
    if (!records) {
      connection_.reset();
      return;
    }
    double t = monotonic_ms();
    for (const ordered_json& record : *records) {
      if (!record.is_object() || record.value("kind", "") != "job" || !record.contains("pid") ||
          !record["pid"].is_number_integer() || !record.contains("launches") ||
          !record["launches"].is_number()) {
        continue;
      }
      pid_t group = getpgid(record["pid"].get<pid_t>());
      for (std::size_t j = 0; j < pgids_.size(); ++j) {
        if (pgids_[j] < 0) continue;
        if (group != pgids_[j] && record["pid"].get<pid_t>() != pgids_[j]) continue;
        double launches = record["launches"].get<double>();
        if (launches <= 0) continue;
        if (!first_[j]) first_[j] = Reading{t, launches};
        last_[j] = Reading{t, launches};
      }
    }
  }

  /// Launches per second between the first and last readings with launches.
  std::optional<double> rate(std::size_t job) const {
    if (!first_[job] || !last_[job] || last_[job]->t - first_[job]->t < 150) return std::nullopt;
    return (last_[job]->launches - first_[job]->launches) / (last_[job]->t - first_[job]->t) * 1e3;
  }

 private:
  struct Reading {
    double t;
    double launches;
  };
  std::string socket_;
  std::vector<pid_t> pgids_;
  std::vector<std::optional<Reading>> first_, last_;
  std::optional<gpushare::coord::ctl::CtlConnection> connection_;
  double next_ = 0;
};

struct Speed {
  std::optional<double> launches_per_s;
  std::optional<double> iterations_per_s;
  int exit_status = 0;
  bool stopped = false;
};

struct Context {
  gpushare::probe::GpuApi* api = nullptr;
  std::vector<std::string> uuids;
  const ProbeOptions* options = nullptr;
  Parsed parsed;
  std::string socket;
};

std::string label(std::size_t job) { return "j" + std::to_string(job + 1); }

// Runs the given jobs together (each as `sh -c CMD`) for the run's length.
Result<std::vector<Speed>> run_together(const Context& ctx, const std::vector<std::size_t>& jobs,
                                        const std::vector<bool>& opportunistic) {
  std::vector<gpushare::LaunchPlan> plans;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    JobRequest request{{"/bin/sh", "-c", ctx.options->jobs[jobs[i]]},
                       ctx.options->sim,
                       opportunistic[i],
                       std::nullopt,
                       label(jobs[i]),
                       {{"GPUSHARE_SOCKET", ctx.socket}}};
    auto plan = plan_job(request);
    if (!plan) return plan.error();
    plans.push_back(std::move(*plan));
  }
  std::vector<pid_t> pids(jobs.size(), -1);
  LaunchMeter meter(ctx.socket, jobs.size());
  auto on_sample = [&](std::size_t j, pid_t pid, const gpushare::probe::MemorySample&,
                       const std::vector<std::uint64_t>&) {
    meter.set_pid(j, pid);
    if (j + 1 == jobs.size() || pids[j] < 0) meter.poll();
    pids[j] = pid;
  };
  auto runs = run_sampled(*ctx.api, ctx.uuids, plans, {ctx.parsed.interval_ms, ctx.parsed.run_ms},
                          on_sample);
  if (!runs) return runs.error();
  if (runs->exec_errno != 0) {
    return make_error("'" + runs->failed_command + "': " + std::strerror(runs->exec_errno));
  }
  std::vector<Speed> speeds(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const gpushare::probe::JobTrace& trace = runs->traces[j];
    // Only the job's own memory tells its iterations apart from its
    // neighbour's: the device's activity is shared.
    auto period = gpushare::probe::memory_period(trace.samples, ctx.parsed.interval_ms);
    if (period && period->period_ms > 0) speeds[j].iterations_per_s = 1000 / period->period_ms;
    speeds[j].launches_per_s = meter.rate(j);
    speeds[j].exit_status = trace.exit_status;
    speeds[j].stopped = trace.stopped;
  }
  return speeds;
}

std::optional<double> relative(const Speed& together, const Speed& alone) {
  if (!together.launches_per_s || !alone.launches_per_s || *alone.launches_per_s <= 0) {
    return std::nullopt;
  }
  return *together.launches_per_s / *alone.launches_per_s;
}

struct Matrices {
  gpushare::probe::HeatMap uncontrolled, production, opportunistic;
};

Matrices empty_matrices(std::size_t n) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(label(i));
  std::vector<std::vector<std::optional<double>>> cells(n, std::vector<std::optional<double>>(n));
  return {{"uncontrolled: row beside column", labels, cells},
          {"QoS: row production, column opportunistic", labels, cells},
          {"QoS: row opportunistic, column production", labels, cells}};
}

std::string table(const ProbeOptions& options, const std::vector<Speed>& solo, const Matrices& m) {
  std::ostringstream out;
  char cell[32];
  out << "JOB  LAUNCHES/S  ITERATIONS/S  COMMAND\n";
  for (std::size_t i = 0; i < solo.size(); ++i) {
    if (solo[i].launches_per_s) {
      std::snprintf(cell, sizeof cell, "%-4s %10.1f  ", label(i).c_str(), *solo[i].launches_per_s);
    } else {
      std::snprintf(cell, sizeof cell, "%-4s %10s  ", label(i).c_str(), "-");
    }
    out << cell;
    if (solo[i].iterations_per_s) {
      std::snprintf(cell, sizeof cell, "%12.1f  ", *solo[i].iterations_per_s);
    } else {
      std::snprintf(cell, sizeof cell, "%12s  ", "-");
    }
    out << cell << options.jobs[i] << "\n";
  }
  for (const gpushare::probe::HeatMap* map : {&m.uncontrolled, &m.production, &m.opportunistic}) {
    out << "\n" << map->caption << " (speed relative to alone)\n    ";
    for (const std::string& name : map->labels) {
      std::snprintf(cell, sizeof cell, " %6s", name.c_str());
      out << cell;
    }
    out << "\n";
    for (std::size_t r = 0; r < map->cells.size(); ++r) {
      std::snprintf(cell, sizeof cell, "%-4s", map->labels[r].c_str());
      out << cell;
      for (const std::optional<double>& value : map->cells[r]) {
        if (value) {
          std::snprintf(cell, sizeof cell, " %6.2f", *value);
        } else {
          std::snprintf(cell, sizeof cell, " %6s", "-");
        }
        out << cell;
      }
      out << "\n";
    }
  }
  return out.str();
}

ordered_json pair_record(const std::string& setting, std::size_t first, std::size_t second,
                         bool second_opportunistic, const std::vector<Speed>& together,
                         const std::vector<Speed>& solo) {
  ordered_json record = ordered_json::object();
  record["setting"] = setting;
  record["jobs"] = {label(first), label(second)};
  record["qos"] = {"production", second_opportunistic ? "opportunistic" : "production"};
  record["launches_per_s"] = {optional_number(together[0].launches_per_s),
                              optional_number(together[1].launches_per_s)};
  record["iterations_per_s"] = {optional_number(together[0].iterations_per_s),
                                optional_number(together[1].iterations_per_s)};
  std::optional<double> a = relative(together[0], solo[first]);
  std::optional<double> b = relative(together[1], solo[second]);
  record["relative_speed"] = {optional_number(a), optional_number(b)};
  auto slowdown = [](const std::optional<double>& r) {
    return r && *r > 0 ? optional_number(1 / *r) : ordered_json(nullptr);
  };
  record["slowdown"] = {slowdown(a), slowdown(b)};
  if (second_opportunistic) record["opportunistic_share"] = optional_number(b);
  return record;
}

int fail(const std::string& message) {
  gpushare::diag::error(message);
  return exit_status::kFailure;
}

// The arguments, checked before anything runs.
Result<Parsed> check_arguments(const ProbeOptions& options) {
  auto parsed = parse_arguments(options);
  if (!parsed) return parsed.error();
  if (options.jobs.size() < 2 || options.jobs.size() > 8) {
    return make_error("--job: give two to eight jobs");
  }
  for (const std::string& job : options.jobs) {
    if (job.find_first_not_of(" \t") == std::string::npos) {
      return make_error("--job: empty command");
    }
  }
  return parsed;
}

ordered_json solo_record(const ProbeOptions& options, std::size_t job, const Speed& speed) {
  ordered_json record = ordered_json::object();
  record["job"] = label(job);
  record["command"] = options.jobs[job];
  record["launches_per_s"] = optional_number(speed.launches_per_s);
  record["iterations_per_s"] = optional_number(speed.iterations_per_s);
  record["exit_status"] = speed.exit_status;
  record["stopped"] = speed.stopped;
  if (!speed.launches_per_s) record["note"] = "no kernel launches seen: no speed to compare";
  return record;
}

}  // namespace

int run_interference(const ProbeOptions& options) {
  auto parsed = check_arguments(options);
  if (!parsed) {
    gpushare::diag::error(parsed.error().message);
    gpushare::diag::usage_hint();
    return exit_status::kUsage;
  }
  auto gpu = open_gpu(options.sim);
  if (!gpu) return fail(gpu.error().message);
  Context ctx;
  ctx.api = gpu->get();
  auto uuids = gpushare::probe::device_uuids(**gpu);
  if (!uuids) return fail(uuids.error().message);
  if (!(*gpu)->has_nvml()) {
    return fail(
        "no NVML (libnvidia-ml.so.1) to read the job's memory from: its process list is "
        "what the probe samples");
  }
  ctx.uuids = std::move(*uuids);
  ctx.options = &options;
  ctx.parsed = *parsed;
  // A Ctrl-C stops the runs; the coordinator is stopped and removed.
  install_stop_handlers();
  // One private coordinator for every run, so every run is measured alike.
  gpushare::PrivateCoordinator coordinator;
  if (auto started = coordinator.start(executable_dir() + "/gpushare-ctl", "probe"); !started) {
    return fail(started.error().message);
  }
  ctx.socket = coordinator.socket();

  bool jsonl = json_lines(options.format);
  gpushare::JsonLinesWriter writer(std::cout);
  const std::size_t n = options.jobs.size();
  // Each job alone, then per pair one uncontrolled run and two under QoS.
  const std::size_t runs = n + 3 * (n * (n - 1) / 2);
  std::size_t run = 0;
  const double began_ms = monotonic_ms();
  auto say = [&](const std::string& setting) {
    progress(gpushare::probe::sweep_line("interference", ++run, runs, setting,
                                         (monotonic_ms() - began_ms) / 1000, ctx.parsed.run_ms / 1000));
  };
  std::vector<Speed> solo;
  for (std::size_t i = 0; i < n; ++i) {
    if (g_stop_signal != 0) return 128 + g_stop_signal;
    say(label(i) + " alone");
    auto speeds = run_together(ctx, {i}, {false});
    if (!speeds) return fail(speeds.error().message);
    solo.push_back(speeds->front());
    if (jsonl) writer.write("interference-solo", 1, solo_record(options, i, solo[i]));
  }
  Matrices matrices = empty_matrices(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (g_stop_signal != 0) return 128 + g_stop_signal;
      say(label(i) + "+" + label(j) + ", uncontrolled");
      auto together = run_together(ctx, {i, j}, {false, false});
      if (!together) return fail(together.error().message);
      matrices.uncontrolled.cells[i][j] = relative((*together)[0], solo[i]);
      matrices.uncontrolled.cells[j][i] = relative((*together)[1], solo[j]);
      if (jsonl)
        writer.write("interference-pair", 1,
                     pair_record("uncontrolled", i, j, false, *together, solo));
      // Under QoS, both ways round.
      for (auto [production, opportunistic] : {std::pair{i, j}, std::pair{j, i}}) {
        say(label(production) + "+" + label(opportunistic) + ", " + label(opportunistic) +
            " opportunistic");
        auto qos = run_together(ctx, {production, opportunistic}, {false, true});
        if (!qos) return fail(qos.error().message);
        matrices.production.cells[production][opportunistic] =
            relative((*qos)[0], solo[production]);
        matrices.opportunistic.cells[opportunistic][production] =
            relative((*qos)[1], solo[opportunistic]);
        if (jsonl) {
          writer.write("interference-pair", 1,
                       pair_record("qos", production, opportunistic, true, *qos, solo));
        }
      }
    }
  }
  if (g_stop_signal != 0) return 128 + g_stop_signal;
  if (!jsonl) std::cout << table(options, solo, matrices) << std::flush;
  if (options.plot) {
    std::string svg = gpushare::probe::interference_svg(
        {matrices.uncontrolled, matrices.production, matrices.opportunistic});
    if (auto written = write_file(*options.plot, svg); !written) {
      return fail(written.error().message);
    }
  }
  return exit_status::kSuccess;
}

}  // namespace probe_cmd
