// The simulated GPU's settings, read from GPUSHARE_SIM_* environment
// variables (gpushare-workload(1) documents them).
//
// Plain C-style code: no allocation, no exceptions, nothing from libstdc++
// at run time, because it runs inside libcuda.so.1 and libnvidia-ml.so.1,
// which are loaded into arbitrary processes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpushare::simgpu {

inline constexpr int kMaxDevices = 8;
inline constexpr std::size_t kPathBytes = 4096;
inline constexpr std::size_t kMessageBytes = 512;

/// What makes one device: fixed when the state file is (re)configured.
struct DeviceConfig {
  std::uint64_t memory_bytes;
  std::uint64_t ctx_overhead_bytes;
  std::uint32_t sms;
};

struct SimConfig {
  char state_path[kPathBytes];
  /// The default path: its directory (gpushare-sim.UID under /dev/shm or
  /// /tmp) is created mode 0700 and must be the user's own and private.
  bool state_in_private_directory;
  int device_count;
  DeviceConfig devices[kMaxDevices];
  /// Host link speed, bytes per second (GPUSHARE_SIM_PCIE_GBPS).
  std::uint64_t link_bytes_per_s;
  /// Fixed cost of each transfer (GPUSHARE_SIM_PCIE_LATENCY_US).
  std::int64_t link_latency_ns;
  /// Device-to-device copies on one device (GPUSHARE_SIM_DTOD_GBPS).
  std::uint64_t local_bytes_per_s;
  /// A cap on managed-memory migrations below the link's speed
  /// (GPUSHARE_SIM_MIGRATE_BANDWIDTH); 0: none.
  std::uint64_t migrate_bytes_per_s;
  /// The GPU-to-GPU link collectives use (GPUSHARE_SIM_GPU_LINK: nvlink or
  /// pcie, GPUSHARE_SIM_GPU_LINK_GBPS; defaults in collective.h).
  std::uint64_t gpu_link_bytes_per_s;
  std::int64_t gpu_link_latency_ns;
  /// Whether an allocation that does not fit evicts managed memory
  /// (GPUSHARE_SIM_EVICT).
  bool evict;
  /// Extra kernel time, in thousandths, when all of a context's managed
  /// memory is on the host (GPUSHARE_SIM_MANAGED_SLOWDOWN=4 gives 4000).
  std::uint32_t managed_slowdown_milli;
  /// How the device shares its time between processes (GPUSHARE_SIM_SCHED):
  /// 0 time slices (timeslice.h), 1 one first-in first-out queue.
  std::uint32_t sched_policy;
  std::int64_t timeslice_ns;  ///< GPUSHARE_SIM_TIMESLICE (milliseconds)
  std::int64_t switch_ns;     ///< GPUSHARE_SIM_SWITCH_US
  std::int64_t cold_ns;       ///< GPUSHARE_SIM_SWITCH_COLD_US
  // The rest is per process; other processes may differ.
  int driver_version;               ///< GPUSHARE_SIM_DRIVER_VERSION
  std::uint64_t default_kernel_ns;  ///< GPUSHARE_SIM_KERNEL_US
  std::uint32_t max_pending;        ///< GPUSHARE_SIM_MAX_PENDING
  std::int64_t util_window_ns;      ///< GPUSHARE_SIM_UTIL_WINDOW_MS
};

// Defaults (documented in gpushare-workload(1)).
inline constexpr std::uint64_t kDefaultMemoryBytes = 16ull << 30;
inline constexpr std::uint64_t kDefaultCtxOverheadBytes = 524ull << 20;  // an H100 context
inline constexpr std::uint32_t kDefaultSms = 108;
inline constexpr std::uint64_t kDefaultLinkBytesPerS = 51'000'000'000;  // 51 GB/s (H100, pinned)
inline constexpr std::int64_t kDefaultLinkLatencyNs = 5000;
inline constexpr std::uint64_t kDefaultLocalBytesPerS = 800'000'000'000;  // 800 GB/s
inline constexpr std::uint32_t kDefaultManagedSlowdownMilli = 4000;
inline constexpr std::int64_t kDefaultTimesliceNs = 2000000;
inline constexpr std::int64_t kDefaultSwitchNs = 151000;  // an H100 (kernel-traces README)
// A context's first kernel after it is switched in runs this much longer
// (its L2 lines and TLB entries went to the other context). Fitted to the
// H100's pairs without gpushare (docs/simulated-gpu.md, "What sharing
// costs"): no GPU measurement of it exists yet; gpu-check's calibration
// measures it (tests/gpu/calibrate).
inline constexpr std::int64_t kDefaultColdNs = 250000;
inline constexpr int kDefaultDriverVersion = 13000;
inline constexpr std::uint64_t kDefaultKernelNs = 1000000;
inline constexpr std::uint32_t kDefaultMaxPending = 1024;
inline constexpr std::int64_t kDefaultUtilWindowNs = 1000000000;

/// Looks up an environment variable; nullptr when unset.
using EnvLookup = const char* (*)(const char* name, void* context);

/// Fills `config` from the environment. On a bad value returns false and
/// writes "GPUSHARE_SIM_MEMORY: '12XB' has an unknown unit 'XB'" to `error`.
bool load_config(EnvLookup lookup, void* context, SimConfig* config, char* error,
                 std::size_t error_bytes);

/// load_config over the process environment (getenv).
bool load_config_from_environment(SimConfig* config, char* error, std::size_t error_bytes);

}  // namespace gpushare::simgpu
