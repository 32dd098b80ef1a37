// What an opportunistic job got of the GPU time production left free.
//
// An opportunistic job at 10% of the GPU may be doing as well as it can
// (production kept the GPU busy 88% of the time) or be held back (the GPU
// sat idle 80% of the time). ls, show and the metrics say which, per job,
// over the last window (one second):
//
//   free_gpu_ns_last_window  the window less the GPU time of every process
//       on the job's first device that is not an opportunistic job of this
//       coordinator (production jobs, and processes that run outside
//       gpushare, whose time is not free either);
//   free_share_ppm  (opportunistic jobs) the job's own GPU time on that
//       device over the same window, in millionths of the free time; null
//       when less than 2% of the window was free (the meter's whole
//       percents cannot tell a share of that).
//
// Both figures come from one meter, NVML's per-process utilisation
// (nvmlDeviceGetProcessUtilization) over the window, so that they describe
// the same second and the share cannot pass 100% by mixing clocks. The
// interposer's own measurement (gpu_ns_last_window) exists only while a
// job's launches are gated, and production jobs do not measure theirs at
// all. On the simulated GPU NVML's figure is the scheduler's exact busy
// time per process; on a real GPU it is the driver's sampled SM
// utilisation (percent of the sample period a kernel of the process ran),
// an estimate at whole percents. Without NVML, or a device whose NVML
// gives no per-process utilisation, both fields are null: the coordinator
// does not guess.
//
// NVML is asked at most once per device every kCacheNs, however many
// requests come (a flood of ls costs no NVML calls).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coord/contract/protocol.h"

namespace gpushare::coord::server {

/// The window the figures cover.
inline constexpr std::uint64_t kFreeShareWindowNs = 1'000'000'000;

/// GPU time per process on one device over the last `window_ns`.
class GpuTimeSource {
 public:
  virtual ~GpuTimeSource() = default;
  /// Busy nanoseconds per pid over the window; processes that ran no
  /// kernel are absent. False when it cannot tell.
  virtual bool busy(const std::string& uuid, std::uint64_t window_ns,
                    std::map<pid_t, std::uint64_t>* by_pid) = 0;
};

/// NVML's per-process utilisation (libnvidia-ml.so.1 as the library path
/// finds it). An Error says why it cannot be used.
Result<std::unique_ptr<GpuTimeSource>> open_nvml_gpu_time();

/// The window less what others used, never below zero.
std::uint64_t free_gpu_ns(std::uint64_t window_ns, std::uint64_t others_busy_ns);

/// Below this share of the window (1/50: 20 ms of a second) the free time
/// is too small for a share: NVML counts each process in whole percents of
/// the window, so rounding alone could be a quarter of such a figure.
inline constexpr std::uint64_t kMinFreeShareOfWindow = 50;

/// `gpu_ns` in millionths of `free_ns`, rounded to nearest, at most a
/// million (the job's time is part of the free time, so more is the
/// meter's rounding); nullopt when less than 1/kMinFreeShareOfWindow of
/// `window_ns` was free (a share of next to nothing is no figure).
std::optional<std::uint64_t> free_share_ppm(std::uint64_t gpu_ns, std::uint64_t free_ns,
                                           std::uint64_t window_ns);

/// A process's busy time from NVML samples: each sample's smUtil percent
/// over its share of the window. `samples` is the process's sample count
/// and `periods` the most samples any process had in the answer (the
/// sample periods the window held); a process absent from some periods
/// ran nothing in them.
std::uint64_t busy_ns_of_samples(std::uint64_t sm_percent_sum, std::uint64_t samples,
                                 std::uint64_t periods, std::uint64_t window_ns);

/// Fills free_gpu_ns_last_window and free_share_ppm of each job from the
/// GPU time per process on its first device (see the file comment).
void annotate_free_share(std::vector<JobView>& jobs,
                         const std::map<std::string, std::map<pid_t, std::uint64_t>>& busy_by_device,
                         std::uint64_t window_ns);

class FreeShareMeter {
 public:
  /// Asks NVML again for a device at most this often.
  static constexpr std::uint64_t kCacheNs = 250'000'000;

  /// `source` null: NVML is opened at the first use (and not retried if
  /// it cannot be).
  explicit FreeShareMeter(std::unique_ptr<GpuTimeSource> source = nullptr)
      : source_(std::move(source)), opened_(source_ != nullptr) {}
  void annotate(std::vector<JobView>& jobs, std::uint64_t now_ns);
  /// One job (show, set, pause...): `all` holds every job, so that the
  /// other opportunistic jobs on its device are known for what they are.
  void annotate(JobView& job, std::vector<JobView> all, std::uint64_t now_ns);

 private:
  struct Reading {
    std::uint64_t at_ns = 0;
    bool ok = false;
    std::map<pid_t, std::uint64_t> by_pid;
  };
  std::unique_ptr<GpuTimeSource> source_;
  bool opened_ = false;
  std::map<std::string, Reading> readings_;  // by device UUID
};

}  // namespace gpushare::coord::server
