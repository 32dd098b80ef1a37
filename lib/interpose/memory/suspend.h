// Suspend and resume on the job's side (Gandiva).
//
// `gpushare-ctl suspend JOB` makes the coordinator hold the job's launches
// (the limits page's `paused`) and set `suspend_request`. The job's client
// thread sees the request on its next tick (every 10 ms) and has the
// memory worker (memory_worker.h) do the work on its own thread:
//   1. refuses at once, moving nothing, when the job holds memory that
//      cannot leave the device (suspend_blockers: arrays, IPC-exported
//      memory, the program's own VMM memory, stream-ordered pools, plain
//      memory not allocated suspendable); the coordinator checks the same mask before it asks,
//      so this only catches an allocation made in between;
//   2. waits for the work already queued: cuCtxSynchronize on every context
//      that owns an allocation (launches are held, so nothing new comes);
//   3. moves every allocation to the host: managed-backed memory by advice
//      (prefer the CPU) and a prefetch to CU_DEVICE_CPU; VMM-backed memory
//      (vmm_backing.h) by a copy to host memory, then unmapping and
//      releasing its physical memory, keeping the address range. A tick
//      moves at most 250 ms worth (about 6 GiB at 25 GB/s), so telemetry
//      shows the progress and the thread stays responsive; the next tick
//      goes on. If a move fails, what moved comes back and the job reports
//      kSuspendRefused.
// With the request withdrawn (`resume`), the tick brings everything back to
// the same addresses (advice and prefetch to the device; new physical
// memory mapped at the reserved range and the copy written back), and
// reports kSuspendRunning; the coordinator then lets launches go. Managed
// memory comes back only as far as the job's device-resident target allows
// (the rest stays on the host, as a spill leaves it, and spill.cc brings it
// back later), so an opportunistic job never waits for production's room. A
// resume that finds too little device memory for VMM-backed memory (another
// job took it) leaves the job resuming, launches held, and tries again
// every tick.
//
// The coordinator going away while the memory is away (suspend_memory_away):
// launches stay held on its page (coord/job/job_client.cc keeps it) while the
// client thread goes on ticking; with nobody's request on that page, the
// tick undoes the suspend (a suspend under way stops where it is and what
// moved comes back, as a withdrawn one does), retrying until the memory
// fits. The thread registers with a new coordinator meanwhile, at once: it
// lists the job as resuming and counts its memory, and its page takes over
// (the held launches go) once the memory is back. A suspend's pause is not
// among the decisions a new coordinator restores: the job ends up running.
// Stopping with the memory away, the thread brings it back before it ends
// (suspend_before_retire). The job killed mid-suspend: its device memory
// goes with its process (the driver frees a dead process's memory); its
// host copies are its own anonymous memory.
//
// Copies are held too: the 1D copy entry points (cuMemcpy, HtoD, DtoH,
// DtoD, each synchronous and asynchronous, every per-thread variant) wait
// while the job is suspending, suspended or resuming, so a thread that
// copies before its next launch (a training loop's input) waits instead of
// touching unmapped memory. 2D and 3D copies, memsets and peer copies are
// not held: one of them while suspended fails (the range is unmapped).
// Allocations (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged) wait
// too, so a suspended job takes no new device memory. The context's own
// memory stays on the device.
#pragma once

#include <atomic>

#include "coord/job/local_counters.h"

namespace gpushare::interpose {

extern coord::job::LocalCounters g_counters;

/// Waits (1 ms steps) while a suspend is under way or in force; returns at
/// once otherwise (one relaxed load). Called by the held copy wrappers.
void wait_while_suspended_slow();
inline void hold_while_suspended() {
  std::uint64_t state = g_counters.suspend_state.load(std::memory_order_relaxed);
  if (__builtin_expect(state != coord::kSuspendRunning && state != coord::kSuspendRefused, 0)) {
    wait_while_suspended_slow();
  }
}

/// The suspend's part of a round of the memory work (on the memory
/// worker's thread, memory_worker.h): one step toward what the coordinator
/// asks (suspend_requested), and what a suspend could not move
/// (suspend_blockers, refreshed every tenth round). True when the round is
/// the suspend's: one is asked for, under way, in force or being undone,
/// and nothing else moves memory. False when the job runs: the round goes
/// on to the spill.
bool suspend_round();

/// Called by the client thread when it stops with the memory away, before
/// launches held on the coordinator's page are woken: brings it back.
void suspend_before_retire();

/// Whether a suspend has moved memory that is not back yet (suspending
/// after the drain, suspended, resuming). Read by the client thread.
bool suspend_memory_away();

}  // namespace gpushare::interpose
