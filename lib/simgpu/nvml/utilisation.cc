// Utilisation as NVML reports it, computed from the simulated device's
// scheduler model (timeslice.h), settled up to the query: its ring of
// recent busy intervals, each tagged with the scheduling context (process
// slot) that ran.
//
//   - nvmlDeviceGetUtilizationRates: the busy share of the last
//     GPUSHARE_SIM_UTIL_WINDOW_MS (what a real GPU's "percent of time over
//     the past sample period during which a kernel was executing" means).
//   - nvmlDeviceGetProcessUtilization: one sample per process with kernels
//     in the window, smUtil = that process's busy share of the window since
//     lastSeenTimeStamp (at most the utilisation window, at least 1 ms),
//     so the per-process figures add up to the device's. As on a real GPU,
//     NVML_ERROR_NOT_FOUND when no process has a sample newer than
//     lastSeenTimeStamp. nvmlDeviceGetProcessesUtilizationInfo (NVML 12.3)
//     gives the same samples in its versioned layout.
//   - nvmlDeviceGetSamples (GPU utilisation): one sample per kSamplePeriodUs
//     over the window, oldest first, each the busy share of its period.
//
// Timestamps are CLOCK_REALTIME microseconds, like the real library's;
// the timeline is CLOCK_MONOTONIC, so each query converts once.
#include <time.h>

#include "simgpu/nvml/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::nvml;

namespace gpushare::simgpu::nvml {

unsigned busy_percent(int device, std::int64_t from_ns, std::int64_t to_ns, int slot) {
  if (to_ns <= from_ns) return 0;
  const SchedModel* model = settled_model(g_nvml.state.layout(), device);
  auto busy = static_cast<std::uint64_t>(sched_busy_between(*model, from_ns, to_ns, slot));
  std::uint64_t span = static_cast<std::uint64_t>(to_ns - from_ns);
  std::uint64_t percent = (busy * 100 + span / 2) / span;
  return static_cast<unsigned>(percent > 100 ? 100 : percent);
}

unsigned long long realtime_us() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<unsigned long long>(now.tv_sec) * 1'000'000ull +
         static_cast<unsigned long long>(now.tv_nsec) / 1000ull;
}

}  // namespace gpushare::simgpu::nvml

namespace {

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  signed int siVal;
};

struct nvmlSample_t {
  unsigned long long timeStamp;
  nvmlValue_t sampleValue;
};

constexpr int NVML_GPU_UTILIZATION_SAMPLES = 1;
constexpr int NVML_MEMORY_UTILIZATION_SAMPLES = 2;
constexpr int NVML_VALUE_TYPE_UNSIGNED_INT = 1;
constexpr std::int64_t kSamplePeriodUs = 100'000;

// The window a query covers, as [from_ns, now_ns) on the timeline, and now
// in NVML's timestamps: since lastSeenTimeStamp, bounded by the
// utilisation window and never empty.
struct Window {
  std::int64_t from_ns;
  std::int64_t now_ns;
  unsigned long long now_us;
};

Window window_since(unsigned long long last_seen_us) {
  Window window{};
  window.now_ns = monotonic_ns();
  window.now_us = realtime_us();
  window.from_ns = window.now_ns - g_nvml.config.util_window_ns;
  if (last_seen_us != 0 && last_seen_us < window.now_us) {
    std::int64_t since_ns =
        window.now_ns - static_cast<std::int64_t>(window.now_us - last_seen_us) * 1000;
    if (since_ns > window.from_ns) window.from_ns = since_ns;
  }
  if (window.now_ns - window.from_ns < 1'000'000) window.from_ns = window.now_ns - 1'000'000;
  return window;
}

}  // namespace

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(void* handle,
                                                       nvmlUtilization_t* utilization) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!lock_state()) return NVML_ERROR_UNKNOWN;
  std::int64_t now = monotonic_ns();
  utilization->gpu = busy_percent(device, now - g_nvml.config.util_window_ns, now, -1);
  unlock_state();
  utilization->memory = 0;  // no memory traffic is simulated
  return NVML_SUCCESS;
}

namespace {

struct nvmlProcessUtilizationInfo_v1_t {
  unsigned long long timeStamp;
  unsigned int pid;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
  unsigned int jpgUtil;
  unsigned int ofaUtil;
};

struct nvmlProcessesUtilizationInfo_v1_t {
  unsigned int version;
  unsigned int processSamplesCount;
  unsigned long long lastSeenTimeStamp;
  nvmlProcessUtilizationInfo_v1_t* procUtilArray;
};
constexpr unsigned kProcessesUtilizationInfoV1 =
    static_cast<unsigned>(sizeof(nvmlProcessesUtilizationInfo_v1_t)) | (1u << 24);

// One sample per process that ran kernels on the device in the window
// since last_seen_us, written by `write(index, pid, sm_percent, now_us)`
// while index < capacity (none when `samples_wanted` is false). Returns
// NVML's status for the call, with *count set to the samples there are.
template <class Write>
nvmlReturn_t process_samples(int device, unsigned long long last_seen_us, bool samples_wanted,
                             unsigned* count, Write write) {
  if (!lock_state()) return NVML_ERROR_UNKNOWN;
  StateLayout* layout = g_nvml.state.layout();
  Window window = window_since(last_seen_us);
  const SchedModel* model = settled_model(layout, device);
  unsigned found = 0;
  for (int i = 0; i < kMaxProcesses; ++i) {
    const ProcessSlot& slot = layout->processes[i];
    if (slot.pid == 0) continue;
    // As documented: only processes with some utilisation in the period.
    if (sched_busy_between(*model, window.from_ns, window.now_ns, i) == 0) continue;
    if (samples_wanted && found < *count) {
      write(found, static_cast<unsigned>(slot.pid),
            busy_percent(device, window.from_ns, window.now_ns, i), window.now_us);
    }
    ++found;
  }
  unlock_state();
  if (found == 0) return NVML_ERROR_NOT_FOUND;
  // A sizing call (no buffer) or a buffer too small: the count needed.
  bool enough = samples_wanted && found <= *count;
  *count = found;
  return enough ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

}  // namespace

NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(void* handle,
                                                         nvmlProcessUtilizationSample_t* samples,
                                                         unsigned int* count,
                                                         unsigned long long last_seen_us) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return process_samples(
      device, last_seen_us, samples != nullptr, count,
      [samples](unsigned index, unsigned pid, unsigned sm, unsigned long long now) {
        nvmlProcessUtilizationSample_t sample{};
        sample.pid = pid;
        sample.timeStamp = now;
        sample.smUtil = sm;
        samples[index] = sample;
      });
}

// The same samples in the layout of NVML 12.3 and later.
NVML_EXPORT nvmlReturn_t
nvmlDeviceGetProcessesUtilizationInfo(void* handle, nvmlProcessesUtilizationInfo_v1_t* info) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != kProcessesUtilizationInfoV1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  nvmlProcessUtilizationInfo_v1_t* samples = info->procUtilArray;
  return process_samples(
      device, info->lastSeenTimeStamp, samples != nullptr, &info->processSamplesCount,
      [samples](unsigned index, unsigned pid, unsigned sm, unsigned long long now) {
        nvmlProcessUtilizationInfo_v1_t sample{};
        sample.timeStamp = now;
        sample.pid = pid;
        sample.smUtil = sm;
        samples[index] = sample;
      });
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSamples(void* handle, int type,
                                              unsigned long long last_seen_us, int* value_type,
                                              unsigned int* count, nvmlSample_t* samples) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (value_type == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (type != NVML_GPU_UTILIZATION_SAMPLES && type != NVML_MEMORY_UTILIZATION_SAMPLES) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  *value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
  std::int64_t periods = g_nvml.config.util_window_ns / (kSamplePeriodUs * 1000);
  if (periods < 1) periods = 1;
  if (samples == nullptr) {  // sizing call: the most this could return
    *count = static_cast<unsigned>(periods);
    return NVML_SUCCESS;
  }
  if (!lock_state()) return NVML_ERROR_UNKNOWN;
  std::int64_t now_ns = monotonic_ns();
  unsigned long long now_us = realtime_us();
  unsigned written = 0;
  for (std::int64_t back = periods; back >= 1 && written < *count; --back) {
    unsigned long long stamp =
        now_us - static_cast<unsigned long long>((back - 1) * kSamplePeriodUs);
    if (stamp <= last_seen_us) continue;
    std::int64_t to_ns = now_ns - (back - 1) * kSamplePeriodUs * 1000;
    nvmlSample_t sample{};
    sample.timeStamp = stamp;
    sample.sampleValue.uiVal = type == NVML_GPU_UTILIZATION_SAMPLES
                                   ? busy_percent(device, to_ns - kSamplePeriodUs * 1000, to_ns, -1)
                                   : 0;
    samples[written++] = sample;
  }
  unlock_state();
  *count = written;
  return written == 0 ? NVML_ERROR_NOT_FOUND : NVML_SUCCESS;
}

// No video engines are simulated: idle, over NVML's usual sampling period.
static nvmlReturn_t idle_engine(void* handle, unsigned int* utilization, unsigned int* period_us) {
  int device = 0;
  if (nvmlReturn_t status = check(handle, &device); status != NVML_SUCCESS) return status;
  if (utilization == nullptr || period_us == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *utilization = 0;
  *period_us = 167'000;
  return NVML_SUCCESS;
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(void* handle, unsigned int* utilization,
                                                         unsigned int* period_us) {
  return idle_engine(handle, utilization, period_us);
}
NVML_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(void* handle, unsigned int* utilization,
                                                         unsigned int* period_us) {
  return idle_engine(handle, utilization, period_us);
}
