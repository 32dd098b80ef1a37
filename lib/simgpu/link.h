// The simulated GPU's copy path: how long copies and managed-memory
// migrations take, and how they queue behind one another.
//
// A real GPU moves data with copy engines that run beside its kernels: at
// least one engine per direction over the host link (PCIe), so a copy to
// the device and a copy from it overlap with each other and with kernels,
// while two copies in one direction share the direction's bandwidth. The
// model gives each device three lanes:
//   - to the device (host to device, and migrations of managed memory to it);
//   - from the device (device to host, and migrations to the host, including
//     evictions an allocation causes);
//   - local (device to device on one device: not over the host link).
// A copy between two devices occupies the source's "from" lane and the
// destination's "to" lane at once (through the host bridge).
//
// A transfer of B bytes takes latency + B / bandwidth on its lanes. Lanes
// serve one transfer at a time: two transfers in one direction run one
// after the other at full speed, which ends each of them no later, on
// average, than sharing the bandwidth would, and makes every end a figure
// one can work out by hand. A transfer gets the earliest stretch, at or
// after the time its stream lets it start, in which all its lanes are free:
// a copy queued behind a long kernel reserves a stretch in the future, and
// a copy enqueued later that can run now fills the gap before it, as copy
// engines serve whichever work is ready.
//
// Each lane keeps kLinkSlots reserved stretches, sorted and disjoint;
// stretches that ended are forgotten. When a lane is full, a new stretch
// is merged with its neighbour (the gap between them counts as busy): the
// model stays bounded and errs on the slow side.
//
// Plain data, no allocation: the lanes live in the shared state file and
// run inside libcuda.so.1.
#pragma once

#include <cstdint>

namespace gpushare::simgpu {

inline constexpr int kLinkSlots = 32;  ///< reserved stretches kept per lane

enum LinkLane : int { kLaneToDevice = 0, kLaneFromDevice = 1, kLaneLocal = 2 };
inline constexpr int kLinkLanes = 3;

struct LinkInterval {
  std::int64_t start_ns;
  std::int64_t end_ns;
};

struct LinkQueue {
  std::uint32_t count;  ///< stretches in slots[0..count), sorted and disjoint
  std::uint32_t reserved0;
  std::uint64_t transfers;  ///< ever reserved
  std::uint64_t bytes;      ///< ever reserved
  std::int64_t busy_ns;     ///< ever reserved
  LinkInterval slots[kLinkSlots];
};

struct DeviceLink {
  LinkQueue lanes[kLinkLanes];
};

/// How long a transfer of `bytes` takes: latency_ns + bytes / bytes_per_s,
/// rounded up to the nanosecond (bytes_per_s 0: the latency only). Zero
/// bytes take nothing.
std::int64_t link_duration_ns(std::uint64_t bytes, std::uint64_t bytes_per_s,
                              std::int64_t latency_ns);

/// Reserves `duration_ns` on each of `count` lanes (1 or 2) at the earliest
/// time, at or after max(now_ns, earliest_ns), at which all of them are
/// free; first forgets stretches that ended by now_ns. A zero duration
/// reserves nothing and returns that time twice.
LinkInterval link_reserve(LinkQueue* const* lanes, int count, std::int64_t now_ns,
                          std::int64_t earliest_ns, std::int64_t duration_ns, std::uint64_t bytes);

/// The end of the last stretch reserved on a lane (0 when none is kept).
std::int64_t link_busy_until(const LinkQueue& lane);

/// Checks the invariants that keep indexing in bounds (the lanes live in a
/// file that other processes write).
bool link_valid(const LinkQueue& lane);

}  // namespace gpushare::simgpu
