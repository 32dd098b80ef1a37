#include "probe/job_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"

namespace gpushare::probe {
namespace {

void sleep_until_ms(double deadline_ms) {
  timespec at;
  at.tv_sec = static_cast<time_t>(deadline_ms / 1e3);
  at.tv_nsec = static_cast<long>((deadline_ms - static_cast<double>(at.tv_sec) * 1e3) * 1e6);
  if (at.tv_nsec < 0) at.tv_nsec = 0;
  if (at.tv_nsec >= 1000000000L) at.tv_nsec = 999999999L;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
  }
}

int shell_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The child: its own process group, the plan's environment, exec. Only
// async-signal-safe calls until exec (the probe may have threads: NVML).
[[noreturn]] void exec_child(const std::vector<char*>& argv, const std::vector<char*>& envp,
                             int report_fd) {
  setpgid(0, 0);
  signal(SIGPIPE, SIG_DFL);
  // The probe's stdout carries only its records: the job's goes to stderr.
  dup2(STDERR_FILENO, STDOUT_FILENO);
  execvpe(argv[0], argv.data(), envp.data());
  int error = errno;
  ssize_t written = write(report_fd, &error, sizeof error);
  (void)written;
  _exit(error == ENOENT ? 127 : 126);
}

// The whole environment for the child, built before fork.
std::vector<std::string> child_environment(const LaunchPlan& plan) {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::string key = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [name, value] : plan.environment) replaced = replaced || name == key;
    if (!replaced) out.push_back(std::move(text));
  }
  for (const auto& [name, value] : plan.environment) out.push_back(name + "=" + value);
  return out;
}

// Bytes per device held by the processes of `pgids[j]`, for every job j.
Status read_usage(GpuApi& api, const std::vector<std::string>& uuids,
                  const std::vector<pid_t>& pgids, std::vector<std::vector<std::uint64_t>>* usage) {
  for (auto& per_device : *usage) per_device.assign(uuids.size(), 0);
  for (std::size_t d = 0; d < uuids.size(); ++d) {
    Result<std::vector<ProcessMemory>> processes = api.nvml_processes(uuids[d]);
    if (!processes) return processes.error();
    for (const ProcessMemory& process : *processes) {
      pid_t group = getpgid(process.pid);
      for (std::size_t j = 0; j < pgids.size(); ++j) {
        if (group == pgids[j] || process.pid == pgids[j]) (*usage)[j][d] += process.used_bytes;
      }
    }
  }
  return {};
}

std::uint64_t busy_ns(GpuApi& api, std::size_t devices, bool* known) {
  std::uint64_t total = 0;
  *known = false;
  for (std::size_t d = 0; d < devices; ++d) {
    if (std::optional<SimStats> stats = api.sim_stats(static_cast<int>(d))) {
      total += stats->busy_ns;
      *known = true;
    }
  }
  return total;
}

}  // namespace

Result<Spawned> spawn_job(const LaunchPlan& plan) {
  if (plan.argv.empty()) return make_error("no command given");
  std::vector<std::string> environment = child_environment(plan);
  std::vector<char*> argv, envp;
  for (const std::string& word : plan.argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return make_error(std::string("cannot start the job: pipe: ") + std::strerror(errno));
  }
  pid_t child = fork();
  if (child < 0) {
    int error = errno;
    close(report[0]);
    close(report[1]);
    return make_error(std::string("cannot start the job: fork: ") + std::strerror(error));
  }
  if (child == 0) {
    close(report[0]);
    exec_child(argv, envp, report[1]);
  }
  // Also here, so the group exists before the probe signals it.
  setpgid(child, child);
  close(report[1]);
  Spawned spawned;
  spawned.pid = child;
  int error = 0;
  ssize_t got;
  while ((got = read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (got == static_cast<ssize_t>(sizeof error)) {
    spawned.exec_errno = error;
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  return spawned;
}

int stop_job(pid_t pid, int grace_ms) {
  kill(-pid, SIGTERM);
  double deadline = monotonic_ms() + grace_ms;
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return 1;
    if (monotonic_ms() >= deadline) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    sleep_until_ms(monotonic_ms() + 5);
  }
  // Whatever is left of its group goes too.
  kill(-pid, SIGKILL);
  return shell_status(status);
}

Result<std::vector<std::string>> device_uuids(GpuApi& api) {
  if (Status status = api.init(); !status) return status.error();
  Result<int> count = api.device_count();
  if (!count) return count.error();
  std::vector<std::string> uuids;
  for (int i = 0; i < *count; ++i) {
    Result<DriverDevice> device = api.device(i);
    if (!device) return device.error();
    uuids.push_back(format_uuid(device->uuid));
  }
  return uuids;
}

Result<std::vector<JobTrace>> sample_jobs(GpuApi& api, const std::vector<std::string>& uuids,
                                          const std::vector<pid_t>& pids,
                                          const SamplingOptions& options,
                                          const SampleCallback& on_sample) {
  std::vector<JobTrace> traces(pids.size());
  std::vector<bool> running(pids.size(), true);
  std::size_t left = pids.size();
  for (std::size_t j = 0; j < pids.size(); ++j) traces[j].pid = pids[j];
  std::vector<std::vector<std::uint64_t>> usage(pids.size());
  const double start = monotonic_ms();
  double next_util = start;
  for (long tick = 0; left > 0; ++tick) {
    double t = monotonic_ms() - start;
    bool interrupted = options.interrupted != nullptr && *options.interrupted != 0;
    if ((options.duration_ms && t >= *options.duration_ms) || interrupted) {
      for (std::size_t j = 0; j < pids.size(); ++j) {
        if (!running[j]) continue;
        traces[j].exit_status = stop_job(pids[j], 5000);
        traces[j].stopped = true;
        traces[j].elapsed_ms = monotonic_ms() - start;
      }
      break;
    }
    if (Status read = read_usage(api, uuids, pids, &usage); !read) {
      for (std::size_t j = 0; j < pids.size(); ++j) {
        if (running[j]) stop_job(pids[j], 1000);
      }
      return read.error();
    }
    bool busy_known = false;
    std::uint64_t busy = busy_ns(api, uuids.size(), &busy_known);
    bool read_util = !busy_known && monotonic_ms() >= next_util;
    if (read_util) next_util = monotonic_ms() + 100;
    for (std::size_t j = 0; j < pids.size(); ++j) {
      if (!running[j]) continue;
      MemorySample sample;
      sample.t_ms = t;
      sample.busy_ns = busy;
      for (std::uint64_t bytes : usage[j]) sample.mem_bytes += bytes;
      traces[j].samples.push_back(sample);
      if (on_sample) on_sample(j, pids[j], sample, usage[j]);
      if (read_util && sample.mem_bytes > 0) {
        for (const std::string& uuid : uuids) {
          if (Result<unsigned> util = api.nvml_utilisation(uuid)) {
            traces[j].util_sum += *util;
            ++traces[j].util_readings;
          }
        }
      }
      int status = 0;
      if (waitpid(pids[j], &status, WNOHANG) == pids[j]) {
        running[j] = false;
        --left;
        traces[j].exit_status = shell_status(status);
        traces[j].elapsed_ms = monotonic_ms() - start;
        kill(-pids[j], SIGKILL);  // stragglers of its group
      }
    }
    // Absolute deadlines: a late sample does not shift the ones after it.
    double next = start + static_cast<double>(tick + 1) * options.interval_ms;
    if (next > monotonic_ms()) sleep_until_ms(next);
  }
  return traces;
}

}  // namespace gpushare::probe
