// Where the job's managed memory is, as the driver says (not only where
// the interposer asked it to be).
//
// The spill counts where it prefetched each managed-backed allocation
// (spill.h). Two things move managed memory without it:
//
//   the program itself: a production job's own cuMemAllocManaged memory
//     (or an opportunistic job's with the spill off) is counted (device- or host-resident, so that ls shows it and a suspend
//     can move it), and the program may advise or prefetch it anywhere. For
//     these allocations the refresh reads the driver's range attribute
//     CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION and counts each where
//     the program last prefetched it; never prefetched, on its device
//     (where a kernel's touch brings it). The preferred location is no
//     evidence (advice moves nothing by itself); pages that did leave show
//     in NVML's figure, below.
//
//   the driver: when another allocation needs room, the driver's
//     unified-memory layer evicts managed pages to the host by itself (even
//     pages advised to prefer the device). No range attribute says so (the
//     last prefetch location is only what was asked), so the refresh reads
//     the process's device memory from NVML (per-process usage) and takes
//     out what the interposer knows is not managed (its charges: contexts,
//     plain memory; less a suspend's copies): the rest is the managed memory
//     on the device. What the interposer placed there beyond that was
//     evicted, and is published as host-resident (evicted_bytes,
//     coord/job/memory_telemetry.h). The spill still decides on what it
//     placed: evicted pages that prefer the device come back by themselves
//     when the program touches them once there is room.
//     The reading is trusted on a device only once NVML's figure has been
//     seen to include the process's managed memory (most of what the
//     interposer placed there, at least 64 MiB): where a driver leaves
//     managed memory out of the per-process figure, nothing is inferred and
//     the interposer's own view stands. Differences under 64 MiB (rounding,
//     the driver's own allocations) are not evictions.
//
// The refresh runs on the memory worker (memory_worker.h) after each round,
// at most every 100 ms, never during a migration (the worker runs one
// thing at a time), and not while a suspend has memory away.
#pragma once

#include <cstdint>

namespace gpushare::interpose {

/// Reads residency from the driver and publishes it (see above). Memory
/// worker only.
void residency_refresh();

/// Counts the program's own managed allocation `key` where the
/// interposer places no memory (a production job; already
/// charged and recorded) as managed memory: spillable in the allocation
/// table (a suspend moves it by prefetch), device-resident until the
/// driver's attributes say otherwise.
void count_program_managed(std::uint64_t key);

/// Below this, a difference between the driver's view and the
/// interposer's is noise, not an eviction.
inline constexpr std::uint64_t kMinEvictedBytes = 64ull << 20;

}  // namespace gpushare::interpose
