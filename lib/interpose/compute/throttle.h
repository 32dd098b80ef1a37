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
// known, each times the job's share of the device's opportunistic jobs
// (yield_share_ppm); while one is busy, the room its page leaves (yield.h,
// yield_busy_room: up to 2 ms beside a job whose synchronisations find
// little of its own work ahead of them, nothing beside a GPU-bound one,
// at most a thirtieth of its step; kBusyGrantNs times the level while the
// page has measured nothing), scaled by the loop's level only below
// kRoomFullLevel, which bounds what its synchronisation can find queued
// ahead of it. Queued work is launches issued minus launches known
// finished, times the learned GPU time per launch; finished work is learned
// from marker events recorded every kMarkerEvery launches and when the
// grant is full, which also time the bursts (the cost per launch: the
// mean over recent stretches, GPU time over launches; below). When the grant is full the
// launch waits, in the driver, until half of it is done (beside a busy
// job, until all of it is: a time-sliced GPU hands production the device
// only when our queue runs dry); when not even one
// launch fits beside a busy job it waits once on the job's busy word
// (futex, at most kYieldWaitNs) and then gets a whole gap's grant; past a
// gap's expected end nothing more is queued until the job is back or twice
// its gap has passed. So a follower wakes once per half grant, not per
// launch, and a production job that returns finds at most a grant queued,
// which the time-sliced GPU interleaves with its own work. Without events
// the grant alone admits launches, in gaps only.
//
// No learned figure may lock a job out. The cost per launch is the time
// between two finished markers of one burst over the launches between
// them, and admission trusts it: a figure above what a gap holds admits
// nothing, and then nothing finishes to teach it otherwise. Three rules
// keep it honest and keep a wrong one from holding:
//   GPU time only. The stretch between two markers counts whatever the
//       GPU did or did not do meanwhile. (a) The job's own host pauses: a
//       launch that comes later after the previous one than our queued
//       work could keep the GPU busy (burst_cover_ns: the launches not
//       known finished at the learned cost, but never above the assumed
//       kInitialLaunchNs, since an overestimate here is what would let a
//       pause through; at least kBurstBreakMinNs) starts a new burst. The
//       pause is seen at admission, before anything records a marker (a
//       wait's marker included), and the burst's start marker finishes
//       when the GPU reaches it, so no stretch counts the pause. Starting
//       a burst too often costs one event record, never a wrong figure.
//       Since a launch after a synchronisation starts a burst, a marker
//       goes in just before each synchronising call (throttle_before_sync)
//       to time the iteration's tail. Before this, a PyTorch job that
//       paused for a second inside a burst (cuDNN autotuning, lazy module
//       loading) learned a second over a few launches and was out for as
//       long as production ran. (b) Other contexts' time slices: a stretch
//       is clean when no followed production job was busy when it began
//       and none started before its end was seen (the page's marks did not
//       move). The figure is the mean of recent stretches (GPU time over
//       launches, burst_learn): a clean stretch counts as measured, any
//       other as an upper bound of our cost, at most twice the figure per
//       launch, so one stretch that held production's time slice cannot
//       make it high, yet a job of long kernels beside a busy producer
//       still reaches its cost within a few dozen stretches. A mean, since
//       a framework's kernels differ: taking the highest stretch at once
//       kept a ResNet-50 job's figure at 87-231 us against a mean of 36.
//   Estimates age. A figure above kInitialLaunchNs halves for every
//       kBurstAgeNs with no launch: what nothing can refute does not
//       stand for ever.
//   One launch per gap. Within a production gap in which none of ours
//       went yet (production was seen busy since our last launch), a launch
//       always goes when none of ours is queued, whatever the figure says
//       (burst_admits): it is then measured, and a wrong figure mends as the
//       mean takes the measure in. Only one: a job that launched in this gap
//       and finds no room is near the gap's end, where a forced launch would
//       delay production's return at every gap (it cost the demo's
//       production 3-5%). At worst production finds one of our launches
//       queued when it returns, which the time-sliced GPU interleaves.
//
// The compute trace (compute_trace.h) records each wait, each burst start
// and why, each finished marker and what it taught, ageing and pauses.
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

/// Before a synchronising call: a burst whose last launches no marker
/// follows gets one (when no host pause came between), so that the
/// iteration's tail is timed too; a job that synchronises every few dozen
/// launches would otherwise have nothing timed, since the next launch
/// after the synchronisation starts a new burst. Free for a job whose
/// launches are not gated (one load).
void throttle_before_sync();

/// After a synchronising call returned: tracked launches that finished are
/// reaped (their GPU time debited) without waiting.
void throttle_reap_all();

/// In a forked child: the parent's events and locks are not ours.
void throttle_after_fork();

}  // namespace gpushare::interpose
