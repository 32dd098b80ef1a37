// Elastic memory on the job's side (design decision 6).
//
// An opportunistic job's cuMemAlloc family (plain and pitch, _v2; the
// stream-ordered cuMemAllocAsync and cuMemAllocFromPoolAsync from pools
// that are not exportable, see spill_async.cc) is backed by
// managed memory advised to prefer the job's device: the program gets a
// device pointer that works everywhere a device pointer does, and the
// memory can move to the host without the program noticing (only its
// kernels slow down). Arrays, textures, VMM and IPC-exported memory stay
// device memory: the driver cannot manage them.
//
// The coordinator writes a device-resident target per device into the
// job's limits page; the memory worker calls spill_tick() every tick, and
// at once when the coordinator says it changed a target (a line on the
// job's socket: job_client.h), which moves whole allocations toward the
// target: to the host (advice: prefer the CPU; prefetch to the CPU) while
// the job keeps more on the device than its target, back to the device
// (advice: prefer the device; prefetch to it) while an allocation fits
// under the target again. The allocations chosen for a target move in one
// batch (spill_plan.h): every advice and prefetch is issued on a few
// migration streams before one wait per stream, so the link stays busy.
// Nothing is freed; a migration is ordered after the work already queued
// on the context's legacy stream (an event recorded there, which the
// migration streams wait for), and managed memory stays coherent for work
// on other streams (on a real GPU its pages fault across; the simulator
// slows such kernels down instead). Largest allocations move first, so few
// migrations meet a target.
//
// A production allocation that waits for room wakes its own client thread
// (request_room), which tells the coordinator at once instead of at its
// next tick; the coordinator runs its memory loop then. A production free
// (notice_freed) does the same, so that spilled memory comes back as soon
// as there is room.
//
// The per-device resident counters (g_counters.device_resident_bytes,
// host_resident_bytes) say where the interposer put the memory, and the
// spill decides on them; memory the driver evicted on its own is read from
// the driver apart (residency.h) and applied when the counters are
// published (coord/job/memory_telemetry.h). The tick runs on the memory
// worker's thread (memory_worker.h), never on the client thread that beats.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "interpose/core/accounting.h"
#include "interpose/core/clock.h"

namespace gpushare::interpose {

/// Whether this job's device allocations are backed by managed memory:
/// opportunistic, not disabled (GPUSHARE_SPILL=off), and the driver has
/// managed memory, advice and prefetch.
bool managed_backing();

/// Allocates `bytes` of managed memory preferring `device`, as a device
/// allocation would be, and counts it device-resident; when the device's
/// free memory (the driver's cuMemGetInfo) cannot hold it, it prefers the
/// host instead, is counted host-resident and *on_host is set (the spill
/// tick brings it to the device once there is room and the target allows).
/// The caller records it spillable, with on_host as given.
CUresult allocate_managed_backed(CUdeviceptr* pointer, std::size_t bytes, int device,
                                 bool* on_host);

/// The limit a managed-backed allocation is checked against: the larger of
/// the job's starting limit and the coordinator's (kNoLimit when either is
/// none). A coordinator limit below the starting one lowers the job's
/// device residency (the arbiter caps its target) instead of failing its
/// allocations.
std::uint64_t spillable_limit(int device);

/// Moves one managed-backed allocation (`key`, in the current context) to
/// the host or back to its device: preferred-location advice and a
/// prefetch on the legacy stream, waited for. Shared by the spill and by
/// suspend; the caller updates its counters.
CUresult move_residency(std::uint64_t key, const AllocationRecord& record, bool to_host);

/// Records that the managed allocation `key` is now on the host (or on its
/// device), as the driver says (residency.h), moving its bytes between the
/// resident counters. No-op unless spillable, or when freed meanwhile.
void note_residency(std::uint64_t key, bool on_host);

/// Takes a freed record out of the resident counters (no-op unless spillable).
void spill_forget(const AllocationRecord& record);

/// After a free of `bytes` succeeded: a production job's free of 2 MiB or
/// more wakes its client thread, which tells the coordinator, so that
/// spilled opportunistic memory comes back without waiting for a tick.
void notice_freed(std::uint64_t bytes);

/// A production job's allocation that the driver refused for want of room:
/// whether to ask the coordinator for room (production, registered, on a
/// valid device) and wait for opportunistic memory to leave.
bool may_wait_for_room(int device);
/// Publishes `unreserved` bytes as wanted on `device` (the arbiter counts
/// them as production's) and `reserved` as the part of the job's charge the
/// wait holds (what refusing it frees), and returns the wait's number; or
/// withdraws both (returns 0).
std::uint64_t request_room(int device, std::uint64_t reserved, std::uint64_t unreserved,
                           bool wanted);
/// Waits one step (1 ms) for room; false once `deadline_ns` (CLOCK_MONOTONIC)
/// has passed or the coordinator said no room is coming for wait `seq`.
bool wait_for_room_step(int device, std::uint64_t seq, std::uint64_t deadline_ns);
/// How long a production allocation waits at most for a spill (2 s: a
/// 16 GiB spill at 25 GB/s takes 0.7 s), on CLOCK_MONOTONIC
/// (core/clock.h); it fails sooner when the coordinator says no spill can
/// make the room.
inline constexpr std::uint64_t kRoomWaitNs = 2'000'000'000;
/// What a new context is asked room for when no context was measured yet.
inline constexpr std::uint64_t kContextRoomGuess = 512ull << 20;

/// After `allocate` returned `result`: when the driver refused a production
/// job's allocation for want of room, publishes `unreserved` (bytes not
/// already charged to the job's budget, which the coordinator sees anyway)
/// as wanted and `reserved` (the allocation's bytes already charged) as
/// held by the wait, retries while opportunistic memory spills, and
/// withdraws both.
template <class Allocate>
CUresult wait_for_room(int device, std::uint64_t reserved, std::uint64_t unreserved,
                       CUresult result, Allocate allocate) {
  if (result != CUDA_ERROR_OUT_OF_MEMORY || !may_wait_for_room(device)) return result;
  std::uint64_t seq = request_room(device, reserved, unreserved, true);
  std::uint64_t deadline = monotonic_ns() + kRoomWaitNs;
  while (result == CUDA_ERROR_OUT_OF_MEMORY && wait_for_room_step(device, seq, deadline)) {
    result = allocate();
  }
  request_room(device, reserved, unreserved, false);
  return result;
}

/// Stream-ordered allocation of `bytes` on `device` backed by managed memory
/// (spill_async.cc): charged against spillable_limit, recorded spillable;
/// reuses a pending free of the same size on the same stream.
CUresult allocate_spillable_async(const char* api, CUdeviceptr* pointer, std::size_t bytes,
                                  int device, CUstream stream, bool per_thread);
/// cuMemFreeAsync of a spillable allocation: the free waits for `stream` to
/// reach this point (an event, drained later); *result is the call's answer.
/// False when `pointer` is not a spillable allocation.
bool free_spillable_async(CUdeviceptr pointer, CUstream stream, bool per_thread, CUresult* result);
/// Frees the deferred frees whose streams have reached them; cheap when
/// none pend.
void drain_deferred_frees();

/// One tick of the memory work: moves memory toward each device's target.
/// Not reentrant (the memory worker is its only caller).
void spill_tick();

}  // namespace gpushare::interpose
