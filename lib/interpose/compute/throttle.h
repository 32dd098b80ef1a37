// The compute actuator's driver half: the gate a launch passes when the job
// is paused or has compute limits (throttle_logic.h decides; this file
// waits, tracks launches with events and measures their GPU time).
//
// A launch hook calls, only when before_launch() said the launch is gated:
//   LaunchTicket ticket = throttle_gate(stream, per_thread);
//   CUresult result = real(...);
//   throttle_after(&ticket, result);
// The gate waits while the job is paused, then, on the current device,
// while the limits say so. It never spins: it waits on the oldest tracked
// launch's event (created with CU_EVENT_BLOCKING_SYNC, so the driver
// sleeps) or sleeps at most 2 ms at a time, re-reading the limits live. It
// holds the device's throttle mutex from the gate to throttle_after, so
// launches of several threads on one device are counted in order.
//
// Yield bursts (control_block.h, layout 4). When the limits page names
// yield slots for the device, an opportunistic job's launches are admitted
// by GPU time, never one at a time: a framework step is hundreds of kernels
// of a few microseconds, and a wake-up or a round trip per launch (the
// earlier design: one launch in flight, a futex wait per launch) left such
// a job 3-9% of its speed. The follower may keep a grant of GPU work
// queued: while no followed production job is busy, what is left of that
// job's expected gap (its last clear plus its estimated gap: the work ends
// by the time it is expected back), or kYieldFreeGrantNs where no gap is
// known; while one is busy, the loop's level (compute_cap_ppm, 1 without
// one) times kBusyGrantNs, which bounds what its synchronisation can find
// queued ahead of it. Queued work is launches issued minus launches known
// finished, times the learned GPU time per launch; finished work is learned
// from marker events recorded every kMarkerEvery launches and when the
// grant is full, which also time the bursts (the cost per launch, taken
// higher at once and lower by an eighth). When the grant is full the
// launch waits, in the driver, until half of it is done; when not even one
// launch fits beside a busy job it waits once on the job's busy word
// (futex, at most kYieldWaitNs) and then gets a whole gap's grant; past a
// gap's expected end nothing more is queued until the job is back or twice
// its gap has passed. So a follower wakes once per half grant, not per
// launch, and a production job that returns finds at most a grant queued,
// which the time-sliced GPU interleaves with its own work. Without events
// the grant alone admits launches, in gaps only.
//
// Tracking: each gated launch is followed by an event recorded in its
// stream (cuEventRecord_ptsz for per-thread-default-stream variants) and
// one before it; the GPU time of the launch is cuEventElapsedTime between
// the two (from the
// stream reaching the launch to its end: exact on an idle GPU; on a shared
// GPU it also counts time another context held the GPU meanwhile, so a
// capped job gets at most its cap). Events live in a ring of kRing pairs
// per device, created in the context current at the first gated launch;
// a launch in another context (or when events cannot be made) is counted
// against the launch budget but not tracked.
#pragma once

#include <cuda.h>

namespace gpushare::interpose {

struct LaunchTicket {
  int device = -1;     ///< -1: nothing held, nothing to do after the launch
  int slot = -1;       ///< the ring slot whose events track this launch, or -1
  bool timed = false;  ///< a start event was recorded
  bool burst = false;  ///< a launch of a yield burst (counted, not tracked alone)
  bool per_thread = false;
  CUstream stream = nullptr;
};

LaunchTicket throttle_gate(CUstream stream, bool per_thread);
void throttle_after(LaunchTicket* ticket, CUresult result);

/// After a synchronising call returned: tracked launches that finished are
/// reaped (their GPU time debited) without waiting.
void throttle_reap_all();

/// In a forked child: the parent's events and locks are not ours.
void throttle_after_fork();

}  // namespace gpushare::interpose
