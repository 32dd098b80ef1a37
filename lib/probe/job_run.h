// Running jobs under the interposer and sampling their device memory.
//
// A job is started as gpushare-run would start it (the LaunchPlan of
// lib/runner: LD_PRELOAD, GPUSHARE_* and, with --sim, the simulated
// driver), in a process group of its own, so that the job is its whole
// process tree: its memory is the sum over the processes of that group,
// and stopping it signals them all.
//
// Where the samples come from, and why: NVML's per-process list
// (nvmlDeviceGetComputeRunningProcesses), read by the probe in its own
// process. It is the device's own accounting, includes the contexts, costs
// the job nothing (no IPC, no syscalls on its allocation or launch paths:
// the job does not know it is watched), works on a real GPU and on the
// simulated one alike, and can be read every millisecond. The coordinator's
// telemetry page also carries the job's memory, but the job's client thread
// copies it there only every 50 ms, too coarse for an iteration of a few
// milliseconds, and it counts allocations, not the context. The device's
// busy time (the simulator's counter) is read at each sample where the
// driver offers it; elsewhere NVML's utilisation every 100 ms.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "probe/device_report.h"
#include "probe/series.h"
#include "runner/launch.h"

namespace gpushare::probe {

/// A started job, or why its command could not start.
struct Spawned {
  pid_t pid = -1;      ///< also its process group
  int exec_errno = 0;  ///< set when exec failed (the child is reaped)
};

/// Forks, puts the child in a new process group, applies the plan's
/// environment, sends its stdout to the probe's stderr (the probe's stdout
/// carries records only) and execs its argv. An exec failure comes back through a
/// close-on-exec pipe as `exec_errno`; an Error only when fork fails.
Result<Spawned> spawn_job(const LaunchPlan& plan);

/// SIGTERM to the job's process group; SIGKILL after `grace_ms`. Returns
/// the status as a shell reports it (128+N for a signal).
int stop_job(pid_t pid, int grace_ms);

/// The devices to watch: their UUIDs as NVML knows them.
Result<std::vector<std::string>> device_uuids(GpuApi& api);

struct SamplingOptions {
  double interval_ms = 1;
  std::optional<double> duration_ms;  ///< stop the jobs (SIGTERM) after this
  /// Set (by the caller's signal handler) to stop the jobs now, as at the
  /// end of the duration: the jobs run in their own process group, so a
  /// Ctrl-C at the terminal reaches only the probe.
  const volatile std::sig_atomic_t* interrupted = nullptr;
};

/// One job's readings and how it ended.
struct JobTrace {
  pid_t pid = -1;
  std::vector<MemorySample> samples;
  int exit_status = 0;   ///< as a shell reports it
  bool stopped = false;  ///< ended by the probe at --duration
  double elapsed_ms = 0;
  double util_sum = 0;  ///< NVML utilisation readings (percent), where no busy counter
  long util_readings = 0;
};

/// Called for each sample: the job's index and pid, the sample, its bytes
/// per device.
using SampleCallback =
    std::function<void(std::size_t, pid_t, const MemorySample&, const std::vector<std::uint64_t>&)>;

/// Samples the jobs until all have exited (or the duration has passed and
/// the probe stopped them). A job's memory is the sum over the processes
/// of its process group, per device.
Result<std::vector<JobTrace>> sample_jobs(GpuApi& api, const std::vector<std::string>& uuids,
                                          const std::vector<pid_t>& pids,
                                          const SamplingOptions& options,
                                          const SampleCallback& on_sample);

}  // namespace gpushare::probe
