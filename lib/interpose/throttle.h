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
// Yield (control_block.h, layout 4): when the limits page names yield
// slots for the device, a launch that the limits let go then waits while a
// followed production job marks GPU work in flight: a futex wait on its
// busy word, woken when the production job synchronises, with a timeout of
// kYieldWaitNs after which the limits are read again (so a mask the
// coordinator withdraws, or a producer that died, holds nobody longer).
// A launch when no followed job is busy still waits if its kernel (the
// smoothed GPU time of this device's tracked launches) would outlast the
// followed job's expected gap (coord/job/yield.h, yield_gap_sleep). Each
// launch passes the loop's share first, so the yield only moves an
// opportunistic job's work into the production job's idle time.
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
