#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/units.h"
#include "probe.h"

namespace probe_cmd {
namespace {

using gpushare::make_error;
using gpushare::Result;

std::string own_executable() {
  char buffer[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return length > 0 ? std::string(buffer, static_cast<std::size_t>(length)) : std::string();
}

bool file_exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

Result<double> duration_ms(const std::string& option, const std::string& text, double min_ms,
                           double max_ms) {
  auto parsed = gpushare::parse_duration(text);
  if (!parsed) return make_error(option + ": " + parsed.error().message);
  double ms = static_cast<double>(parsed->count()) / 1e6;
  if (ms < min_ms || ms > max_ms) {
    return make_error(option + ": '" + text + "' is out of range (" +
                      std::to_string(static_cast<long long>(min_ms * 1000)) + " us to " +
                      std::to_string(static_cast<long long>(max_ms / 1000)) + " s)");
  }
  return ms;
}

// "25%,50%,1GiB": percentages of the profile's mem_bytes (above 0, at
// most 100%) or sizes; each checked now so a typo fails before a long run.
Result<std::vector<std::string>> parse_caps(const std::string& text) {
  std::vector<std::string> caps;
  std::size_t begin = 0;
  for (;;) {
    std::size_t comma = text.find(',', begin);
    std::string cap = text.substr(begin, comma == std::string::npos ? comma : comma - begin);
    if (cap.empty()) return make_error("--caps: empty cap in '" + text + "'");
    if (gpushare::is_percentage(cap)) {
      auto share = gpushare::parse_size(cap, 1000000);
      if (!share) return make_error("--caps: " + share.error().message);
      if (*share == 0) return make_error("--caps: '" + cap + "' must be above 0%");
    } else {
      auto bytes = gpushare::parse_size(cap);
      if (!bytes) return make_error("--caps: " + bytes.error().message);
      if (*bytes == 0) return make_error("--caps: '" + cap + "' must be above 0");
    }
    caps.push_back(cap);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (caps.size() > 32) return make_error("--caps: at most 32 caps");
  return caps;
}

void on_stop_signal(int signal_number) { g_stop_signal = signal_number; }

}  // namespace

volatile std::sig_atomic_t g_stop_signal = 0;

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal_number, &action, nullptr);
}

Result<Parsed> parse_arguments(const ProbeOptions& options) {
  Parsed parsed;
  auto interval = duration_ms("--interval", options.interval, 0.1, 10000);
  if (!interval) return interval.error();
  parsed.interval_ms = *interval;
  if (options.duration) {
    auto duration = duration_ms("--duration", *options.duration, 1, 7 * 24 * 3600 * 1000.0);
    if (!duration) return duration.error();
    parsed.duration_ms = *duration;
  }
  auto run = duration_ms("--duration", options.run_duration, 100, 24 * 3600 * 1000.0);
  if (!run) return run.error();
  parsed.run_ms = *run;
  auto window = duration_ms("--window", options.window, 10, 3600 * 1000.0);
  if (!window) return window.error();
  parsed.window_ms = *window;
  if (options.caps) {
    auto caps = parse_caps(*options.caps);
    if (!caps) return caps.error();
    parsed.caps = std::move(*caps);
  }
  return parsed;
}

std::string executable_dir() {
  std::string exe = own_executable();
  std::size_t slash = exe.rfind('/');
  return slash == std::string::npos ? std::string() : exe.substr(0, slash);
}

Result<std::unique_ptr<gpushare::probe::GpuApi>> open_gpu(bool sim) {
  gpushare::probe::LibraryPaths paths;
  if (sim) {
    auto directory = gpushare::probe::locate_simulator(own_executable(), file_exists);
    if (!directory) return directory.error();
    paths.cuda = *directory + "/libcuda.so.1";
    paths.nvml = *directory + "/libnvidia-ml.so.1";
  }
  return gpushare::probe::open_system_gpu(paths);
}

Result<gpushare::LaunchPlan> plan_job(const JobRequest& job) {
  auto paths = gpushare::locate_install(own_executable(), std::getenv, file_exists);
  if (!paths) return paths.error();
  char resolved[PATH_MAX];
  if (realpath(paths->interposer.c_str(), resolved) != nullptr) paths->interposer = resolved;
  if (!paths->auditor.empty() && realpath(paths->auditor.c_str(), resolved) != nullptr) {
    paths->auditor = resolved;
  }
  paths->sim_dir = paths->interposer.substr(0, paths->interposer.rfind('/')) + "/sim";
  if (job.sim && !file_exists(paths->sim_dir + "/libcuda.so.1")) {
    return make_error("--sim: the simulated GPU is not installed (no " + paths->sim_dir +
                      "/libcuda.so.1)");
  }
  gpushare::RunRequest request;
  request.command = job.command;
  request.sim = job.sim;
  request.qos = job.opportunistic ? gpushare::kQosOpportunistic : gpushare::kQosProduction;
  request.mem_limit = job.mem_limit;
  request.name = job.name;
  auto plan = gpushare::plan_launch(request, *paths, std::getenv);
  if (!plan) return plan.error();
  for (const auto& entry : job.environment) plan->environment.push_back(entry);
  return plan;
}

Result<Runs> run_sampled(gpushare::probe::GpuApi& api, const std::vector<std::string>& uuids,
                         const std::vector<gpushare::LaunchPlan>& plans,
                         const gpushare::probe::SamplingOptions& sampling,
                         const gpushare::probe::SampleCallback& on_sample) {
  Runs runs;
  std::vector<pid_t> pids;
  auto stop_started = [&] {
    for (pid_t pid : pids) gpushare::probe::stop_job(pid, 1000);
  };
  for (const gpushare::LaunchPlan& plan : plans) {
    auto spawned = gpushare::probe::spawn_job(plan);
    if (!spawned) {
      stop_started();
      return spawned.error();
    }
    if (spawned->exec_errno != 0) {
      stop_started();
      runs.exec_errno = spawned->exec_errno;
      runs.failed_command = plan.argv.front();
      return runs;
    }
    pids.push_back(spawned->pid);
  }
  gpushare::probe::SamplingOptions options = sampling;
  options.interrupted = &g_stop_signal;
  auto traces = gpushare::probe::sample_jobs(api, uuids, pids, options, on_sample);
  if (!traces) return traces.error();
  runs.traces = std::move(*traces);
  return runs;
}

bool json_lines(const std::string& format) {
  return format == "jsonl" || (format == "auto" && !isatty(STDOUT_FILENO));
}

void progress(const std::string& line) {
  if (!isatty(STDERR_FILENO)) return;
  // Whole lines: the jobs the probe runs write to this stderr too, and a
  // line rewritten in place would run into theirs.
  std::cerr << gpushare::diag::program_name() + ": " + gpushare::diag::printable(line) + "\n"
            << std::flush;
}

std::string record_text(const nlohmann::ordered_json& record) {
  std::size_t width = 0;
  for (const auto& [key, value] : record.items()) width = std::max(width, key.size());
  std::string out;
  for (const auto& [key, value] : record.items()) {
    if (key == "kind" || key == "version") continue;
    std::string text;
    bool bytes = key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0;
    if (bytes && value.is_number_unsigned()) {
      text = gpushare::format_size(value.get<std::uint64_t>());
    } else if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_null()) {
      text = "-";
    } else {
      text = value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    }
    out += key + std::string(width - key.size() + 2, ' ') + gpushare::diag::printable(text) + "\n";
  }
  return out;
}

gpushare::Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(path + ": cannot write: " + std::strerror(errno));
  out << text;
  out.close();
  if (!out) return make_error(path + ": write failed");
  return {};
}

}  // namespace probe_cmd
