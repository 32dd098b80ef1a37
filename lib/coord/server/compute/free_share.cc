#include "coord/server/compute/free_share.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <set>

#include "common/saturate.h"

namespace gpushare::coord::server {
namespace {

// The few NVML declarations needed (the toolkit ships no nvml.h).
struct NvmlProcessUtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long time_stamp;
  unsigned int sm_util;
  unsigned int mem_util;
  unsigned int enc_util;
  unsigned int dec_util;
};
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlNotFound = 6;  // no process ran a kernel since lastSeenTimeStamp
constexpr int kNvmlInsufficientSize = 7;

unsigned long long realtime_us() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<unsigned long long>(now.tv_sec) * 1'000'000ull +
         static_cast<unsigned long long>(now.tv_nsec) / 1000ull;
}

class NvmlGpuTime final : public GpuTimeSource {
 public:
  using Handle = void*;
  int (*by_uuid)(const char*, Handle*) = nullptr;
  int (*utilisation)(Handle, NvmlProcessUtilizationSample*, unsigned int*,
                     unsigned long long) = nullptr;

  bool busy(const std::string& uuid, std::uint64_t window_ns,
            std::map<pid_t, std::uint64_t>* by_pid) override {
    Handle handle = nullptr;
    if (by_uuid(uuid.c_str(), &handle) != kNvmlSuccess) return false;
    unsigned long long since = realtime_us() - window_ns / 1000;
    std::vector<NvmlProcessUtilizationSample> samples(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
      auto count = static_cast<unsigned int>(samples.size());
      int status = utilisation(handle, samples.data(), &count, since);
      by_pid->clear();
      if (status == kNvmlNotFound) return true;  // nobody ran: all of it was free
      if (status == kNvmlInsufficientSize) {
        samples.resize(count + 16);
        continue;
      }
      if (status != kNvmlSuccess) return false;
      std::map<pid_t, std::pair<std::uint64_t, std::uint64_t>> sums;  // percent sum, samples
      std::uint64_t periods = 1;
      for (unsigned int i = 0; i < count && i < samples.size(); ++i) {
        auto& [percent, n] = sums[static_cast<pid_t>(samples[i].pid)];
        percent += std::min(samples[i].sm_util, 100u);
        periods = std::max(periods, ++n);
      }
      for (const auto& [pid, sum] : sums) {
        (*by_pid)[pid] = busy_ns_of_samples(sum.first, sum.second, periods, window_ns);
      }
      return true;
    }
    return false;
  }
};

}  // namespace

Result<std::unique_ptr<GpuTimeSource>> open_nvml_gpu_time() {
  // Kept loaded for the coordinator's lifetime (RTLD_NODELETE).
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (library == nullptr) return make_error(std::string("no NVML: ") + dlerror());
  auto init = reinterpret_cast<int (*)()>(dlsym(library, "nvmlInit_v2"));
  auto source = std::make_unique<NvmlGpuTime>();
  source->by_uuid =
      reinterpret_cast<decltype(source->by_uuid)>(dlsym(library, "nvmlDeviceGetHandleByUUID"));
  source->utilisation = reinterpret_cast<decltype(source->utilisation)>(
      dlsym(library, "nvmlDeviceGetProcessUtilization"));
  if (init == nullptr || source->by_uuid == nullptr || source->utilisation == nullptr) {
    return make_error("NVML lacks per-process utilisation (nvmlDeviceGetProcessUtilization)");
  }
  if (int status = init(); status != kNvmlSuccess) {
    return make_error("nvmlInit failed (NVML error " + std::to_string(status) + ")");
  }
  return std::unique_ptr<GpuTimeSource>(std::move(source));
}

std::uint64_t free_gpu_ns(std::uint64_t window_ns, std::uint64_t others_busy_ns) {
  return others_busy_ns >= window_ns ? 0 : window_ns - others_busy_ns;
}

std::optional<std::uint64_t> free_share_ppm(std::uint64_t gpu_ns, std::uint64_t free_ns,
                                           std::uint64_t window_ns) {
  if (free_ns == 0 || free_ns < window_ns / kMinFreeShareOfWindow) return std::nullopt;
  auto ppm = (static_cast<unsigned __int128>(gpu_ns) * 1'000'000 + free_ns / 2) / free_ns;
  // The job's time is part of the free time (one meter): more is rounding.
  return ppm > 1'000'000 ? 1'000'000 : static_cast<std::uint64_t>(ppm);
}

std::uint64_t busy_ns_of_samples(std::uint64_t sm_percent_sum, std::uint64_t samples,
                                 std::uint64_t periods, std::uint64_t window_ns) {
  if (samples == 0 || periods == 0) return 0;
  // The mean over all the window's periods: the process's samples' sum
  // over (periods x 100%), at most the whole window.
  auto busy = static_cast<unsigned __int128>(window_ns) * sm_percent_sum / (periods * 100);
  return busy > window_ns ? window_ns : static_cast<std::uint64_t>(busy);
}

void annotate_free_share(std::vector<JobView>& jobs,
                         const std::map<std::string, std::map<pid_t, std::uint64_t>>& busy_by_device,
                         std::uint64_t window_ns) {
  // The processes whose time counts as harvest, not as taken.
  std::set<pid_t> opportunistic;
  for (const JobView& job : jobs) {
    if (job.qos != kQosOpportunistic) continue;
    for (std::int64_t pid : job.pids) opportunistic.insert(static_cast<pid_t>(pid));
  }
  std::map<std::string, std::uint64_t> free_by_device;
  for (const auto& [uuid, by_pid] : busy_by_device) {
    std::uint64_t others = 0;
    for (const auto& [pid, busy] : by_pid) {
      if (opportunistic.count(pid) == 0) others = saturating_add(others, busy);
    }
    free_by_device[uuid] = free_gpu_ns(window_ns, others);
  }
  for (JobView& job : jobs) {
    job.free_gpu_ns_last_window.reset();
    job.free_share_ppm.reset();
    if (job.devices.empty()) continue;
    const std::string& uuid = job.devices.front().uuid;
    auto free = free_by_device.find(uuid);
    if (free == free_by_device.end()) continue;  // not measured
    job.free_gpu_ns_last_window = free->second;
    if (job.qos != kQosOpportunistic) continue;
    const std::map<pid_t, std::uint64_t>& by_pid = busy_by_device.at(uuid);
    std::uint64_t own = 0;
    for (std::int64_t pid : job.pids) {
      auto it = by_pid.find(static_cast<pid_t>(pid));
      if (it != by_pid.end()) own = saturating_add(own, it->second);
    }
    job.free_share_ppm = free_share_ppm(own, free->second, window_ns);
  }
}

void FreeShareMeter::annotate(std::vector<JobView>& jobs, std::uint64_t now_ns) {
  if (!opened_) {
    opened_ = true;
    Result<std::unique_ptr<GpuTimeSource>> source = open_nvml_gpu_time();
    if (source) source_ = std::move(*source);
  }
  std::map<std::string, std::map<pid_t, std::uint64_t>> busy_by_device;
  if (source_) {
    for (const JobView& job : jobs) {
      if (job.devices.empty() || busy_by_device.count(job.devices.front().uuid)) continue;
      const std::string& uuid = job.devices.front().uuid;
      Reading& reading = readings_[uuid];
      if (reading.at_ns == 0 || now_ns - reading.at_ns >= kCacheNs) {
        reading.at_ns = now_ns;
        reading.ok = source_->busy(uuid, kFreeShareWindowNs, &reading.by_pid);
      }
      if (reading.ok) busy_by_device[uuid] = reading.by_pid;
    }
  }
  annotate_free_share(jobs, busy_by_device, kFreeShareWindowNs);
}

void FreeShareMeter::annotate(JobView& job, std::vector<JobView> all, std::uint64_t now_ns) {
  // The free time on the job's device depends on which processes there
  // are opportunistic: all jobs are annotated, this one's figures kept.
  annotate(all, now_ns);
  job.free_gpu_ns_last_window.reset();
  job.free_share_ppm.reset();
  for (const JobView& other : all) {
    if (other.id != job.id) continue;
    job.free_gpu_ns_last_window = other.free_gpu_ns_last_window;
    job.free_share_ppm = other.free_share_ppm;
  }
}

}  // namespace gpushare::coord::server
