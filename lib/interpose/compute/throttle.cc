#include "interpose/compute/throttle.h"

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstring>

#include "coord/job/limits.h"
#include "coord/contract/control_block.h"
#include "coord/job/yield.h"
#include "interpose/core/clock.h"
#include "interpose/core/runtime.h"
#include "interpose/core/log.h"
#include "interpose/compute/event_record.h"
#include "interpose/compute/compute_trace.h"
#include "interpose/compute/throttle_logic.h"

namespace gpushare::interpose {
namespace {

using coord::kHoldComputeCap, coord::kHoldLaunchBudget, coord::kHoldNone, coord::kHoldOwnWork,
    coord::kHoldPaused, coord::kHoldProductionBusy, coord::kHoldProductionDue;

constexpr int kRing = 64;
// Marker events of the yield's bursts: a ring, at most kMarkers - 2 in
// flight so that the last finished marker's event is still there to time
// the next one against.
constexpr int kMarkers = 16;
// A marker after every this many launches of a burst: finished work is
// learned within a few dozen short kernels, at one event per 32 launches.
constexpr std::uint64_t kMarkerEvery = 32;
// The GPU work a follower may keep queued while a followed production job
// is busy, at the loop's full level: what that job's synchronisation may
// wait for (a slice's worth of it on a time-sliced GPU, plus a switch).
constexpr std::uint64_t kBusyGrantNs = 1'000'000;
// The loop's level at and above which a measured busy room is granted in
// full (burst_admit).
constexpr double kRoomFullLevel = 0.25;
// The longest one yield wait lasts before the limits are read again.
constexpr std::uint64_t kYieldWaitNs = 10'000'000;
// The least pace of the batches beside a busy production job (burst_admit):
// at most one batch in 64 of what the room would allow back to back.
constexpr double kMinPace = 1.0 / 64;

// One device's gate. The ring holds the tracked launches not yet seen to
// finish: `count` slots from `head` on.
struct DeviceGate {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  ThrottleState state;
  CUcontext context = nullptr;  ///< where the events live
  bool ready = false;           ///< events made
  bool failed = false;          ///< events could not be made: launches are not tracked
  std::uint64_t kernel_ns = 0;  ///< GPU time of a tracked launch, smoothed (the yield's fit)
  int head = 0;
  int count = 0;
  bool timed[kRing] = {};
  CUevent start[kRing] = {};
  CUevent end[kRing] = {};
  // The yield's bursts (throttle.h): admission state, and the markers.
  BurstState burst;
  bool burst_fresh = true;  ///< the next launch starts a burst (after a wait)
  bool host_gap = false;    ///< ... because the host paused (burst_admit saw it)
  std::uint64_t gap_ns = 0, gap_cover_ns = 0;  ///< that pause, and what covered it
  // Batches beside a busy production job, spaced out by the loop's level
  // (burst_admit): when the current one started (0: none), at what pace,
  // and when the next may start.
  std::uint64_t busy_batch_ns = 0;
  double busy_batch_pace = 1.0;
  std::uint64_t busy_resume_ns = 0;
  ForcedBucket forced;  ///< paces the launches forced into gaps (burst_admits)
  std::uint64_t burst_id = 0;
  CUevent marker[kMarkers] = {};
  std::uint64_t marker_issued[kMarkers] = {};  ///< burst.issued when recorded
  std::uint64_t marker_burst[kMarkers] = {};
  // Followed production jobs' marks when the marker was recorded, and
  // whether one was busy then: a stretch from it is clean when none was,
  // and none started, before the stretch's end was seen.
  std::uint64_t marker_prod_marks[kMarkers] = {};
  bool marker_prod_busy[kMarkers] = {};
  // The trace's record of the waits since the last launch, merged while
  // they have one reason (a job held for a second is one record, not
  // hundreds): written when the reason changes or a launch goes.
  struct PendingWait {
    const char* reason = nullptr;  ///< null: none pending
    std::uint64_t start = 0, end = 0, waits = 0, wait_ns = 0, burst_launches = 0;
    std::uint64_t grant_ns = 0, allowed_ns = 0, launch_ns = 0, queued = 0;
    coord::job::YieldMarks marks;
  } pending;
  std::uint64_t yield_mask = 0;        ///< the mask of the last admission
  std::uint64_t burst_launches = 0;    ///< launches since the last wait (the trace's burst)
  CUstream last_stream = nullptr;      ///< where the last burst launch went
  bool last_per_thread = false;
  int marker_head = 0;
  int marker_count = 0;
  int last_done_marker = -1;  ///< the newest finished marker's slot, or -1
  std::uint64_t last_marker_issued = 0;
};

constinit DeviceGate g_gates[kMaxDevices];
// Whether any gate has admitted a burst launch: the synchronisation hooks'
// only cost for other jobs (throttle_before_sync).
constinit std::atomic<bool> g_bursting{false};

// The interposer's monotonic clock (interpose/core/clock.h), by its old
// name here.
std::uint64_t now_ns() { return monotonic_ns(); }

ThrottleLimits read_limits(int device) { return coord::job::compute_limits(device); }

// Makes the ring's events in the current context, once. False when this
// launch cannot be tracked (another context, or no events).
bool ensure_events(DeviceGate& gate) {
  const RealDriver& real = g_runtime.real;
  CUcontext context = reinterpret_cast<CUcontext>(current_context());
  if (gate.ready) return context == gate.context;
  if (gate.failed || context == nullptr || real.real_cuEventCreate == nullptr ||
      real.real_cuEventQuery == nullptr || real.real_cuEventRecord == nullptr) {
    return false;
  }
  // Blocking sync: waiting on the oldest launch sleeps in the driver.
  // Timing stays enabled: a compute cap needs the elapsed time.
  for (int i = 0; i < kRing; ++i) {
    if (real.real_cuEventCreate(&gate.start[i], CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS ||
        real.real_cuEventCreate(&gate.end[i], CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS ||
        (i < kMarkers &&
         real.real_cuEventCreate(&gate.marker[i], CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS)) {
      GS_WARN(
          "cannot create events to track throttled launches; the queued-work bound and "
          "compute cap are not enforced");
      gate.failed = true;
      return false;
    }
  }
  gate.context = context;
  gate.ready = true;
  return true;
}

CUresult record(CUevent event, CUstream stream, bool per_thread) {
  return record_event(event, stream, per_thread);
}

// Retires finished launches from the ring's head; with `wait_oldest`,
// first waits for the oldest to finish.
void reap(DeviceGate& gate, bool wait_oldest) {
  const RealDriver& real = g_runtime.real;
  while (gate.count > 0) {
    int slot = gate.head;
    if (wait_oldest) {
      if (real.real_cuEventSynchronize != nullptr) real.real_cuEventSynchronize(gate.end[slot]);
      wait_oldest = false;
    } else if (real.real_cuEventQuery(gate.end[slot]) == CUDA_ERROR_NOT_READY) {
      return;
    }
    std::uint64_t gpu_ns = 0;
    float ms = 0;
    if (gate.timed[slot] && real.real_cuEventElapsedTime != nullptr &&
        real.real_cuEventElapsedTime(&ms, gate.start[slot], gate.end[slot]) == CUDA_SUCCESS &&
        ms > 0) {
      gpu_ns = static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
    }
    throttle_finished(&gate.state, gpu_ns);
    // The measured time includes waiting behind other contexts: the
    // estimate follows a shorter one at once and a longer one slowly.
    if (gpu_ns > 0) {
      gate.kernel_ns = gate.kernel_ns == 0 || gpu_ns < gate.kernel_ns
                           ? gpu_ns
                           : gate.kernel_ns + (gpu_ns - gate.kernel_ns) / 8;
    }
    if (gpu_ns > 0) g_counters.gpu_busy_ns.fetch_add(gpu_ns, std::memory_order_relaxed);
    gate.head = (gate.head + 1) % kRing;
    --gate.count;
  }
}

// Records a marker after the launches issued so far (at most
// kMarkers - 2 in flight: beyond, the oldest is waited for first).
void record_marker(DeviceGate& gate, CUstream stream, bool per_thread);

// Retires finished markers from the ring's head: the launches before each
// are done, and the GPU time between two finished markers of one burst
// teaches the cost per launch and is debited from a compute cap. With
// `until` > 0, first waits (in the driver, sleeping) for the markers up to
// the one that reached `until` launches.
void reap_markers(DeviceGate& gate, std::uint64_t until) {
  const RealDriver& real = g_runtime.real;
  while (gate.marker_count > 0) {
    int slot = gate.marker_head;
    // Waiting: until `until` launches are known done, whichever marker
    // gets there (the head one is the oldest past `done`).
    bool waited = until > 0 && gate.burst.done < until;
    if (waited) {
      if (real.real_cuEventSynchronize != nullptr) real.real_cuEventSynchronize(gate.marker[slot]);
    } else if (real.real_cuEventQuery(gate.marker[slot]) == CUDA_ERROR_NOT_READY) {
      return;
    }
    int previous = gate.last_done_marker;
    std::uint64_t launches = gate.marker_issued[slot] - gate.burst.done;
    float ms = 0;
    std::uint64_t gpu_ns = 0;
    bool clean = false;
    if (previous >= 0 && launches > 0 && gate.marker_burst[previous] == gate.marker_burst[slot] &&
        real.real_cuEventElapsedTime != nullptr &&
        real.real_cuEventElapsedTime(&ms, gate.marker[previous], gate.marker[slot]) ==
            CUDA_SUCCESS &&
        ms > 0) {
      gpu_ns = static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
      // Clean: no followed production job was busy when the stretch began,
      // and none has started since (its marks did not move, it is not
      // busy now), so the stretch is our GPU time alone.
      coord::job::YieldMarks now = coord::job::yield_marks(gate.yield_mask);
      clean = !gate.marker_prod_busy[previous] && !now.busy &&
              now.marks == gate.marker_prod_marks[previous];
      burst_learn(&gate.burst, launches, gpu_ns, clean);
      g_counters.launch_cost_ns.store(static_cast<std::uint64_t>(gate.burst.launch_ns),
                                      std::memory_order_relaxed);
      throttle_finished(&gate.state, gpu_ns);  // the cap's debit, for free grants
      g_counters.gpu_busy_ns.fetch_add(gpu_ns, std::memory_order_relaxed);
    }
    if (launches > 0 && trace_enabled()) {  // a burst's start marker times nothing
      TraceLine("compute-marker", now_ns())
          .num("burst", gate.marker_burst[slot])
          .num("issued", gate.marker_issued[slot])
          .num("launches", launches)
          .num("gpu_ns", gpu_ns)
          .flag("timed", gpu_ns > 0)
          .flag("clean", clean)
          .flag("waited", waited)
          .num("launch_ns", static_cast<std::uint64_t>(gate.burst.launch_ns))
          .emit();
    }
    gate.burst.done = gate.marker_issued[slot];
    gate.last_done_marker = slot;
    gate.marker_head = (gate.marker_head + 1) % kMarkers;
    --gate.marker_count;
  }
}

void record_marker(DeviceGate& gate, CUstream stream, bool per_thread) {
  if (gate.marker_count >= kMarkers - 2) {  // the oldest must go first: wait for it
    const RealDriver& real = g_runtime.real;
    if (real.real_cuEventSynchronize != nullptr) {
      real.real_cuEventSynchronize(gate.marker[gate.marker_head]);
    }
    reap_markers(gate, 0);
  }
  int slot = (gate.marker_head + gate.marker_count) % kMarkers;
  if (record(gate.marker[slot], stream, per_thread) != CUDA_SUCCESS) return;
  gate.marker_issued[slot] = gate.burst.issued;
  gate.marker_burst[slot] = gate.burst_id;
  coord::job::YieldMarks marks = coord::job::yield_marks(gate.yield_mask);
  gate.marker_prod_marks[slot] = marks.marks;
  gate.marker_prod_busy[slot] = marks.busy;
  gate.last_marker_issued = gate.burst.issued;
  ++gate.marker_count;
}

// Sleeps `ns` with the gate's mutex released; the next launch starts a
// new burst (the GPU may idle meanwhile: no stretch is timed across it).
void sleep_unlocked(DeviceGate& gate, std::uint64_t ns) {
  pthread_mutex_unlock(&gate.mutex);
  timespec pause{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  nanosleep(&pause, nullptr);
  pthread_mutex_lock(&gate.mutex);
}

// Writes the pending waits' record (compute_trace.h): why, how often, how
// long, and what admission and the production marks said at the first.
void trace_waits(DeviceGate& gate, int device) {
  DeviceGate::PendingWait& p = gate.pending;
  if (p.reason == nullptr) return;
  TraceLine("compute-wait", p.start)
      .num("device", static_cast<std::uint64_t>(device))
      .str("reason", p.reason)
      .num("waits", p.waits)
      .num("wait_ns", p.wait_ns)
      .num("span_ns", p.end > p.start ? p.end - p.start : 0)
      .num("burst_launches", p.burst_launches)
      .num("grant_ns", p.grant_ns)
      .num("allowed_ns", p.allowed_ns)
      .num("launch_ns", p.launch_ns)
      .num("queued_launches", p.queued)
      .num("prod_slots", static_cast<std::uint64_t>(p.marks.slots))
      .flag("prod_busy", p.marks.busy)
      .num("prod_marks", p.marks.marks)
      .num("prod_beats", p.marks.beats)
      .num("prod_gap_ns", p.marks.gap_ns)
      .num("prod_since_clear_ns",
           p.marks.cleared_ns != 0 && p.start > p.marks.cleared_ns ? p.start - p.marks.cleared_ns
                                                                   : 0)
      .emit();
  p.reason = nullptr;
}

// A launch starts waiting for `hold` (control_block.h, kHold*): published
// for gpushare-ctl, so that a job held for long says why.
void hold_begin(std::uint64_t hold, std::uint64_t now) {
  g_counters.hold_since_ns.store(now, std::memory_order_relaxed);
  g_counters.hold_reason.store(hold, std::memory_order_relaxed);
}

// One wait of a launch is over: its time under its reason, the compute
// trace's record of it (why, how long, what admission knew), and the
// burst count restarts.
void note_wait(DeviceGate& gate, int device, std::uint64_t hold, const char* reason,
               std::uint64_t start, std::uint64_t grant_ns, std::uint64_t allowed_ns) {
  std::uint64_t end = now_ns();
  g_counters.held_ns[hold].fetch_add(end > start ? end - start : 0, std::memory_order_relaxed);
  g_counters.hold_reason.store(kHoldNone, std::memory_order_relaxed);
  g_counters.hold_since_ns.store(0, std::memory_order_relaxed);
  if (trace_enabled()) {
    DeviceGate::PendingWait& p = gate.pending;
    if (p.reason != nullptr && std::strcmp(p.reason, reason) != 0) trace_waits(gate, device);
    if (p.reason == nullptr) {
      p.reason = reason;
      p.start = start;
      p.waits = p.wait_ns = 0;
      p.burst_launches = gate.burst_launches;
      p.marks = coord::job::yield_marks(gate.yield_mask);
    }
    ++p.waits;
    p.wait_ns += end > start ? end - start : 0;
    p.end = end;
    p.grant_ns = grant_ns;
    p.allowed_ns = allowed_ns;
    p.launch_ns = static_cast<std::uint64_t>(gate.burst.launch_ns);
    p.queued = gate.burst.issued - gate.burst.done;
  }
  gate.burst_launches = 0;
}

// The yield's admission for one launch (the essay in throttle.h): true when
// it may go now; otherwise it waited for something (the followed job's
// clear, our queued work, or time) and the caller asks again.
bool burst_admit(DeviceGate& gate, int device, const ThrottleLimits& limits, CUstream stream,
                 bool per_thread, std::uint64_t now) {
  gate.yield_mask = limits.yield_mask;
  bool tracked = ensure_events(gate);
  if (tracked) reap_markers(gate, 0);
  // The host paused longer than our queued work covers since the last
  // launch: the GPU may have idled, so no marker recorded from now on (a
  // wait's included) is timed against one before (throttle.h).
  if (!gate.burst_fresh && burst_breaks(gate.burst, now)) {
    gate.host_gap = true;
    gate.gap_ns = now - gate.burst.last_launch_ns;
    gate.gap_cover_ns = burst_cover_ns(gate.burst);
    gate.burst_fresh = true;
    ++gate.burst_id;
  }
  double before = gate.burst.launch_ns;
  if (burst_age(&gate.burst, now) && trace_enabled()) {
    TraceLine("compute-age", now)
        .num("device", static_cast<std::uint64_t>(device))
        .num("launch_ns_before", static_cast<std::uint64_t>(before))
        .num("launch_ns", static_cast<std::uint64_t>(gate.burst.launch_ns))
        .emit();
  }
  coord::job::YieldGrant grant = coord::job::yield_grant(limits.yield_mask, now);
  double level = limits.compute_cap_ppm != kThrottleNoLimit
                     ? static_cast<double>(limits.compute_cap_ppm) / 1e6
                     : 1.0;
  // The job's part of a gap among the device's opportunistic jobs: each
  // fills only its part, so that production, back, finds no more queued
  // than one job alone would have left (control_block.h, "Shares of a
  // gap"). The level is split among them already.
  double share = limits.yield_share_ppm == 0 || limits.yield_share_ppm >= 1'000'000
                     ? 1.0
                     : static_cast<double>(limits.yield_share_ppm) / 1e6;
  // With turns (control_block.h, "Turns") a job fills the whole of the
  // gaps in its turns and waits out the others'.
  bool turns = limits.yield_turns > 1;
  double part = turns ? 1.0 : share;
  if (turns && !grant.free &&
      !coord::job::yield_is_turn(now, limits.yield_turn, limits.yield_turns)) {
    std::uint64_t wait =
        coord::job::yield_turn_wait_ns(now, limits.yield_turn, limits.yield_turns);
    std::uint64_t hold = grant.busy != nullptr ? kHoldProductionBusy : kHoldProductionDue;
    hold_begin(hold, now);
    sleep_unlocked(gate, wait < kYieldWaitNs ? wait : kYieldWaitNs);  // limits are read again
    note_wait(gate, device, hold, "other-turn", now, grant.grant_ns, 0);
    gate.burst_fresh = true;
    return false;
  }
  std::uint64_t allowed =
      static_cast<std::uint64_t>(static_cast<double>(grant.grant_ns) * part);
  if (grant.free) {
    // Nothing says when production is back: the loop's level is a share of
    // GPU time, kept by the cap's bucket (debited by the markers), and one
    // launch may always be queued, whatever it costs.
    if (std::uint64_t sleep = cap_sleep_ns(&gate.state, limits, now); sleep > 0) {
      hold_begin(kHoldComputeCap, now);
      sleep_unlocked(gate, sleep);
      note_wait(gate, device, kHoldComputeCap, "cap", now, grant.grant_ns, allowed);
      gate.burst_fresh = true;
      return false;
    }
    if (gate.burst.issued == gate.burst.done) return true;
  } else if (gate.state.time_tokens_ns < 0) {
    // Work in production's gaps, or beside it within the busy grant, is not
    // charged to the share: only what runs while nothing is known is.
    gate.state.time_tokens_ns = 0;
  }
  if (grant.busy != nullptr) {
    gate.burst.busy_since_launch = true;  // the next gap is a new one for burst_admits
    // Production is at work: only the loop's part of what its queue leaves
    // room for may be queued beside it (what its synchronisation may have
    // to wait for): little or nothing beside a GPU-bound job, up to a
    // slice beside one that launches at a framework's pace (yield.h,
    // yield_busy_room; kBusyGrantNs while its page has measured nothing).
    // The loop's level scales a measured room only once it falls below
    // kRoomFullLevel: the room already bounds what production's
    // synchronisation can find of ours, and the level, moved by the noise
    // of short measurements, sat at 0.1-0.25 beside a production job that
    // ran at its solo speed; a level cut by real harm (0.7 or 0.35 a
    // measurement) reaches it within a few measurements.
    //
    // Below kRoomFullLevel the level spaces the batches out; it does not
    // shrink them. Each batch beside a busy job costs production two
    // switches and a cold start whatever its size (0.8 ms on the
    // simulator, docs/simulated-gpu.md), so a room cut to a tenth made ten
    // times the batches for the same work: beside GPT-2 a level of 1% gave
    // batches of 50 us, one after another, and production lost 5% where a
    // level of 7% (batches of 300 us) cost it 1-2%, and the loop, seeing
    // the harm, cut the level further. A batch of the whole room, then a
    // pause of (1 / scale - 1) times what the batch took, keeps the level's
    // share of the interleaving and the cost per batch.
    double scale = level;
    std::uint64_t room = kBusyGrantNs;
    if (grant.busy_room_ns != coord::job::kBusyRoomUnknown) {
      room = grant.busy_room_ns;
      double device_level = level / share;  // the loop's level before the split
      double pace = device_level >= kRoomFullLevel ? 1.0 : device_level / kRoomFullLevel;
      scale = part;
      if (gate.burst.issued == gate.burst.done) {  // none of ours queued: a new batch
        if (gate.busy_batch_ns != 0 && now > gate.busy_batch_ns) {  // the last one drained
          double spaced = gate.busy_batch_pace < kMinPace ? kMinPace : gate.busy_batch_pace;
          gate.busy_resume_ns = now + static_cast<std::uint64_t>(
                                          static_cast<double>(now - gate.busy_batch_ns) *
                                          (1.0 / spaced - 1.0));
          gate.busy_batch_ns = 0;
        }
        if (now < gate.busy_resume_ns) {  // spaced out: until then, or production's clear
          std::uint64_t left = gate.busy_resume_ns - now;
          hold_begin(kHoldProductionBusy, now);
          pthread_mutex_unlock(&gate.mutex);
          coord::job::yield_wait(grant.busy, left < kYieldWaitNs ? left : kYieldWaitNs);
          pthread_mutex_lock(&gate.mutex);
          note_wait(gate, device, kHoldProductionBusy, "level-pace", now, grant.grant_ns, 0);
          gate.burst_fresh = true;
          return false;
        }
        gate.busy_batch_pace = pace;  // for the batch this launch starts, if it goes
      }
    }
    allowed = static_cast<std::uint64_t>(static_cast<double>(room) * scale);
  } else {
    gate.busy_batch_ns = gate.busy_resume_ns = 0;  // a gap: the next busy mark starts afresh
  }
  if (!tracked) {  // no markers: no bound on queued work, so only in gaps
    if (grant.busy == nullptr && allowed > 0) return true;
  } else if (burst_room(gate.burst, allowed) > 0 ||
             (burst_forced(gate.burst, allowed, grant.busy == nullptr) &&
              forced_launch_paced(&gate.forced, level, now, burst_cost(gate.burst)))) {
    // In a gap one launch goes whenever none of ours is queued, whatever
    // the learned cost says: it is then measured, and a wrong figure mends.
    // Such a forced launch is paced by the loop's level (ForcedBucket):
    // one that does not fit the gap delays production's return.
    if (grant.busy != nullptr && gate.burst.issued == gate.burst.done) gate.busy_batch_ns = now;
    return true;
  } else if (gate.burst.issued > gate.burst.done) {
    // Our queued work fills the grant: wait, in the driver, until half of
    // it is done (one wake-up per half grant, not per launch). Beside a
    // busy production job, until all of it is: a time-sliced GPU hands
    // production the device only when our queue runs dry (or a whole
    // slice has passed), so a queue refilled at half would make each of
    // its kernels wait for the end of our slice, not for our grant.
    if (gate.burst.issued > gate.last_marker_issued) record_marker(gate, stream, per_thread);
    std::uint64_t target =
        grant.busy != nullptr ? gate.burst.issued : burst_wait_target(gate.burst, allowed);
    hold_begin(kHoldOwnWork, now);
    reap_markers(gate, target > gate.burst.done ? target : gate.burst.done + 1);
    note_wait(gate, device, kHoldOwnWork, "own-work", now, grant.grant_ns, allowed);
    return false;
  }
  if (grant.busy != nullptr) {  // not even one launch beside it: one wake-up at its clear
    hold_begin(kHoldProductionBusy, now);
    pthread_mutex_unlock(&gate.mutex);
    coord::job::yield_wait(grant.busy, kYieldWaitNs);
    pthread_mutex_lock(&gate.mutex);
    note_wait(gate, device, kHoldProductionBusy, "production-busy", now, grant.grant_ns, allowed);
    gate.burst_fresh = true;
    return false;
  }
  // Nothing queued and no room for one launch: the followed job is expected
  // back any moment (a grant of 0).
  std::uint64_t wait = grant.retry_ns > 0 ? grant.retry_ns : grant.grant_ns;
  hold_begin(kHoldProductionDue, now);
  sleep_unlocked(gate, wait > 1000 ? (wait < kMaxSleepNs ? wait : kMaxSleepNs) : 1000);
  note_wait(gate, device, kHoldProductionDue, "production-due", now, grant.grant_ns, allowed);
  gate.burst_fresh = true;
  return false;
}

// Waits until the limits let a launch go (the mutex held, except while
// sleeping). Returns the limits in force when it may.
ThrottleLimits wait_for_turn(DeviceGate& gate, int device, CUstream stream, bool per_thread,
                             std::uint64_t* now_out) {
  ThrottleLimits limits = read_limits(device);
  std::uint64_t waited = 0;
  std::uint64_t now = now_ns();
  while (limits.any()) {
    reap(gate, false);
    now = now_ns();
    ThrottleDecision decision = throttle_decide(&gate.state, limits, now);
    if (decision.wait == ThrottleWait::kNone) {
      if (limits.yield_mask == 0 || burst_admit(gate, device, limits, stream, per_thread, now)) {
        break;
      }
    } else if (decision.wait == ThrottleWait::kOldest) {
      if (gate.count == 0) break;  // nothing tracked to wait for
      hold_begin(kHoldOwnWork, now);
      reap(gate, true);
      note_wait(gate, device, kHoldOwnWork, "queue-bound", now, 0, 0);
    } else {
      bool cap = limits.compute_cap_ppm != kThrottleNoLimit && limits.compute_cap_ppm > 0 &&
                 limits.yield_mask == 0 && gate.state.time_tokens_ns <= 0;
      hold_begin(cap ? kHoldComputeCap : kHoldLaunchBudget, now);
      pthread_mutex_unlock(&gate.mutex);
      timespec pause{0, static_cast<long>(decision.sleep_ns)};
      nanosleep(&pause, nullptr);
      pthread_mutex_lock(&gate.mutex);
      note_wait(gate, device, cap ? kHoldComputeCap : kHoldLaunchBudget, cap ? "cap" : "budget",
                now, 0, 0);
      gate.burst_fresh = true;  // the GPU may have idled: no stretch timed across it
    }
    waited += now_ns() - now;
    limits = read_limits(device);  // live: a raise or a cut counts at once
  }
  if (waited > 0) g_counters.throttle_wait_ns.fetch_add(waited, std::memory_order_relaxed);
  *now_out = now;
  return limits;
}

}  // namespace

LaunchTicket throttle_gate(CUstream stream, bool per_thread) {
  if (coord::job::paused()) {
    std::uint64_t start = now_ns();
    const char* reason = trace_pause_reason();
    hold_begin(kHoldPaused, start);
    coord::job::wait_while_paused();
    std::uint64_t end = now_ns();
    g_counters.held_ns[kHoldPaused].fetch_add(end - start, std::memory_order_relaxed);
    g_counters.hold_reason.store(kHoldNone, std::memory_order_relaxed);
    g_counters.hold_since_ns.store(0, std::memory_order_relaxed);
    if (trace_enabled()) {
      TraceLine("compute-pause", start).str("reason", reason).num("wait_ns", end - start).emit();
    }
  }
  LaunchTicket ticket;
  int device = current_device();
  if (device < 0) return ticket;
  DeviceGate& gate = g_gates[device];
  pthread_mutex_lock(&gate.mutex);
  std::uint64_t now = 0;
  ThrottleLimits limits = wait_for_turn(gate, device, stream, per_thread, &now);
  if (gate.pending.reason != nullptr) trace_waits(gate, device);  // a launch goes now
  if (!limits.any()) {
    throttle_reset(&gate.state);
    pthread_mutex_unlock(&gate.mutex);
    return ticket;
  }
  throttle_launched(&gate.state, limits, false);
  ticket.device = device;
  ticket.stream = stream;
  ticket.per_thread = per_thread;
  if (limits.yield_mask != 0) {
    // A burst's launch: not tracked by itself; markers follow the burst.
    ticket.burst = true;
    if (gate.burst_fresh && ensure_events(gate)) {
      ++gate.burst_id;
      // After a wait the wait's record says why; a burst is worth its own
      // record when it starts the job or a host pause started it.
      if (trace_enabled() && (gate.host_gap || gate.burst.issued == 0)) {
        TraceLine("compute-burst", now)
            .num("device", static_cast<std::uint64_t>(device))
            .num("burst", gate.burst_id)
            .str("cause", gate.host_gap ? "host-gap" : "first")
            .num("host_gap_ns", gate.host_gap ? gate.gap_ns : 0)
            .num("cover_ns", gate.host_gap ? gate.gap_cover_ns : 0)
            .num("launch_ns", static_cast<std::uint64_t>(gate.burst.launch_ns))
            .emit();
      }
      record_marker(gate, stream, per_thread);  // the burst's start, to time it from
    }
    gate.burst_fresh = false;
    gate.host_gap = false;
    gate.last_stream = stream;
    gate.last_per_thread = per_thread;
    if (!g_bursting.load(std::memory_order_relaxed)) g_bursting.store(true);
    burst_launched(&gate.burst, now);
    ++gate.burst_launches;
    return ticket;
  }
  if (ensure_events(gate)) {
    if (gate.count == kRing) reap(gate, true);  // the ring is the last bound
    int slot = (gate.head + gate.count) % kRing;
    ticket.slot = slot;
    // Every tracked launch is timed: a cap needs its GPU time, and ctl
    // shows the share an opportunistic job obtained.
    ticket.timed = record(gate.start[slot], stream, per_thread) == CUDA_SUCCESS;
  }
  return ticket;  // the mutex stays held until throttle_after
}

void throttle_after(LaunchTicket* ticket, CUresult result) {
  if (ticket->device < 0) return;
  DeviceGate& gate = g_gates[ticket->device];
  if (ticket->burst && result == CUDA_SUCCESS) {
    ++gate.burst.issued;
    if (gate.ready && gate.burst.issued - gate.last_marker_issued >= kMarkerEvery) {
      record_marker(gate, ticket->stream, ticket->per_thread);
    }
  }
  if (ticket->slot >= 0 && result == CUDA_SUCCESS &&
      record(gate.end[ticket->slot], ticket->stream, ticket->per_thread) == CUDA_SUCCESS) {
    gate.timed[ticket->slot] = ticket->timed;
    ++gate.count;
    ++gate.state.queued;
  }
  pthread_mutex_unlock(&gate.mutex);
}

void throttle_before_sync() {
  if (!g_bursting.load(std::memory_order_relaxed)) return;
  std::uint64_t now = now_ns();
  for (DeviceGate& gate : g_gates) {
    if (!gate.ready || gate.burst.issued <= gate.last_marker_issued) continue;
    if (pthread_mutex_trylock(&gate.mutex) != 0) continue;  // a launcher is at work
    // After a host pause the GPU may have idled since the last launch: a
    // marker now would count it; the tail then goes untimed, as before.
    if (gate.burst.issued > gate.last_marker_issued && !burst_breaks(gate.burst, now)) {
      record_marker(gate, gate.last_stream, gate.last_per_thread);
    }
    pthread_mutex_unlock(&gate.mutex);
  }
}

void throttle_reap_all() {
  for (DeviceGate& gate : g_gates) {
    if (!gate.ready) continue;
    if (pthread_mutex_trylock(&gate.mutex) != 0) continue;  // a launcher is at work
    reap(gate, false);
    reap_markers(gate, 0);
    pthread_mutex_unlock(&gate.mutex);
  }
}

void throttle_after_fork() {
  for (DeviceGate& gate : g_gates) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    std::memcpy(&gate.mutex, &fresh, sizeof fresh);
    gate.state = ThrottleState{};
    gate.context = nullptr;
    gate.ready = false;
    gate.failed = false;
    gate.head = gate.count = 0;
    gate.burst = BurstState{};
    gate.busy_batch_ns = gate.busy_resume_ns = 0;
    gate.busy_batch_pace = 1.0;
    gate.pending = DeviceGate::PendingWait{};
    gate.burst_fresh = true;
    gate.marker_head = gate.marker_count = 0;
    gate.last_done_marker = -1;
    gate.last_marker_issued = 0;
    gate.burst_launches = 0;
    gate.last_stream = nullptr;
  }
  trace_after_fork();
}

}  // namespace gpushare::interpose
