// The control block: the shared memory between the coordinator and one job.
//
// At registration the coordinator creates two memfds and passes them to the
// job over the socket (SCM_RIGHTS):
//
//   limits page     written by the coordinator, mapped READ-ONLY by the job.
//                   The memfd is sealed with F_SEAL_FUTURE_WRITE before it is
//                   sent, so the job cannot map it writable or write(2) it:
//                   a job cannot raise its own limits. The coordinator keeps
//                   its own writable mapping, made before the seal.
//   telemetry page  written by the job's client thread, read by the
//                   coordinator. Sealed against shrinking, so a job cannot
//                   truncate it under the coordinator's mapping (SIGBUS).
//
// Both pages are plain structs of lock-free atomics: no locks cross the
// process boundary, so neither side can wedge the other, and a reader never
// sees a torn 64-bit value. Each field is independent; nothing needs a
// consistent snapshot of several fields at once (a limit and the paused flag
// take effect separately).
//
// A limit change is one atomic store by the coordinator; the job's next
// allocation check loads it. Pausing stores 1 into `paused`; resuming stores
// 0 and FUTEX_WAKEs the word, on which paused launches wait (a futex on a
// shared mapping works across processes, and waiting needs only read access).
//
// Versioning: `magic` and `layout_version` open each page; a reader that
// finds another version refuses the page (the coordinator and the job then
// treat each other as absent). Fields are only ever added at the end, into
// the reserved room, with layout_version bumped; sizes are fixed at one page.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpushare::coord {

inline constexpr int kMaxDevices = 16;
/// A limit of "none": the job may use the whole device.
inline constexpr std::uint64_t kNoLimit = UINT64_MAX;

inline constexpr std::uint32_t kLimitsMagic = 0x4d4c5347;     // "GSLM" little-endian
inline constexpr std::uint32_t kTelemetryMagic = 0x544c5347;  // "GSLT" little-endian
inline constexpr std::uint32_t kLayoutVersion = 1;
inline constexpr std::size_t kControlPageBytes = 4096;

/// Values of LimitsPage::qos.
inline constexpr std::uint32_t kQosProduction = 0;
inline constexpr std::uint32_t kQosOpportunistic = 1;

/// Per-device limits, written by the coordinator.
struct DeviceLimits {
  std::atomic<std::uint64_t> mem_limit_bytes;  ///< kNoLimit for none
  // Room for the compute controller (roadmap step 6): a launch budget per
  // window and a bound on queued work. kNoLimit means unthrottled.
  std::atomic<std::uint64_t> launch_budget;     ///< launches allowed per window
  std::atomic<std::uint64_t> launch_window_ns;  ///< length of the budget window
  std::atomic<std::uint64_t> max_queued;        ///< bound on launches in flight
  std::atomic<std::uint64_t> reserved[4];
};

struct LimitsPage {
  std::uint32_t magic;           ///< kLimitsMagic; written before the page is sent
  std::uint32_t layout_version;  ///< kLayoutVersion
  std::uint64_t job_id;          ///< the coordinator's id for this job
  std::uint32_t device_count;
  std::atomic<std::uint32_t> paused;  ///< futex word: 0 running, 1 paused
  std::atomic<std::uint32_t> qos;     ///< kQosProduction or kQosOpportunistic
  std::uint32_t pad0;
  std::atomic<std::uint64_t> generation;  ///< bumped after every change, for observers
  std::atomic<std::uint64_t> reserved[8];
  DeviceLimits devices[kMaxDevices];
};

/// Per-device usage, written by the job.
struct DeviceTelemetry {
  std::atomic<std::uint64_t> mem_used_bytes;
  std::atomic<std::uint64_t> reserved[3];
};

struct TelemetryPage {
  std::uint32_t magic;  ///< kTelemetryMagic
  std::uint32_t layout_version;
  std::atomic<std::uint64_t> heartbeat_ns;  ///< CLOCK_MONOTONIC of the job's last update
  std::atomic<std::uint64_t> launches;      ///< kernel launches so far
  // Progress counters for the compute controller (roadmap step 6).
  std::atomic<std::uint64_t> blocks_launched;
  std::atomic<std::uint64_t> kernels_completed;
  std::atomic<std::uint64_t> iterations;
  std::atomic<std::uint64_t> reserved[10];
  DeviceTelemetry devices[kMaxDevices];
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && sizeof(std::atomic<std::uint32_t>) == 4,
              "atomics must have the size of the plain integer to be shared between processes");
static_assert(sizeof(LimitsPage) <= kControlPageBytes);
static_assert(sizeof(TelemetryPage) <= kControlPageBytes);
static_assert(offsetof(LimitsPage, paused) % 4 == 0, "a futex word is 4-byte aligned");

}  // namespace gpushare::coord
