// gpushare-probe's modes and what they share: the parsed options, the GPU
// opened as the probe sees it, and jobs started as gpushare-run starts them.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "probe/device_report.h"
#include "probe/job_run.h"
#include "runner/launch.h"

namespace probe_cmd {

struct ProbeOptions {
  std::string mode;
  bool sim = false;                     ///< use the installed simulated GPU
  std::string interval = "1ms";         ///< memory, interference: sampling interval
  std::optional<std::string> duration;  ///< memory, interference: stop jobs after this
  std::optional<std::string> caps;      ///< memory: "25%,50%,..."
  std::optional<std::string> plot;      ///< memory, interference: SVG file
  bool summary_only = false;            ///< memory: print only the profile record
  std::optional<std::string> name;      ///< memory: job name; node: node name
  std::vector<std::string> command;     ///< memory
  std::vector<std::string> jobs;        ///< interference: shell commands
  /// auto (text or a table on a terminal, JSON Lines otherwise), jsonl,
  /// and table (device, interference) or text (memory)
  std::string format = "auto";
  bool fragment = false;                ///< node: the [[node]] table only
  std::string window = "10s";           ///< node: utilisation window
  std::string run_duration = "5s";      ///< interference: each run's length
};

/// Durations and caps, checked before anything runs (usage errors, exit 2).
struct Parsed {
  double interval_ms = 1;
  std::optional<double> duration_ms;
  double window_ms = 10000;
  std::vector<std::string> caps;  ///< each "N%" or a size
  double run_ms = 5000;           ///< interference: each run's length
};
gpushare::Result<Parsed> parse_arguments(const ProbeOptions& options);

/// The GPU as the probe reads it (the simulated one with --sim).
gpushare::Result<std::unique_ptr<gpushare::probe::GpuApi>> open_gpu(bool sim);

/// gpushare-run's plan for `command` (interposer, simulated driver with
/// `sim`, QoS class, memory limit, extra environment).
struct JobRequest {
  std::vector<std::string> command;
  bool sim = false;
  bool opportunistic = false;
  std::optional<std::string> mem_limit;
  std::optional<std::string> name;
  std::vector<std::pair<std::string, std::string>> environment;
};
gpushare::Result<gpushare::LaunchPlan> plan_job(const JobRequest& request);

/// A run of one or several jobs, sampled together. `exec_errno` is set
/// when a command could not start (and nothing was sampled).
struct Runs {
  std::vector<gpushare::probe::JobTrace> traces;
  int exec_errno = 0;
  std::string failed_command;
};
gpushare::Result<Runs> run_sampled(gpushare::probe::GpuApi& api,
                                   const std::vector<std::string>& uuids,
                                   const std::vector<gpushare::LaunchPlan>& plans,
                                   const gpushare::probe::SamplingOptions& sampling,
                                   const gpushare::probe::SampleCallback& on_sample);

/// Set by SIGINT, SIGTERM and SIGHUP once install_stop_handlers() ran:
/// the probe then stops its jobs, reports what it saw and exits 128+N.
extern volatile std::sig_atomic_t g_stop_signal;
void install_stop_handlers();

/// Whether records go out as JSON Lines: asked for, or (auto) stdout is
/// not a terminal.
bool json_lines(const std::string& format);

/// A progress line on stderr when stderr is a terminal (nothing
/// otherwise): a whole line per step, as the jobs' own output shares it.
void progress(const std::string& line);

/// A record as "key  value" lines for people: sizes in units, nested
/// values as JSON.
std::string record_text(const nlohmann::ordered_json& record);

/// Writes `text` to `path` (replacing it); an Error names the file.
gpushare::Status write_file(const std::string& path, const std::string& text);

/// Where this executable lives ("" if unknown).
std::string executable_dir();

int run_device(const ProbeOptions& options);
int run_memory(const ProbeOptions& options);
int run_interference(const ProbeOptions& options);
int run_node(const ProbeOptions& options);

}  // namespace probe_cmd
