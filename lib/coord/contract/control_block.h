// The control block: the shared memory between the coordinator and one job.
//
// At registration the coordinator creates two memfds (three since layout 4:
// the yield page, below) and passes them to the job over the socket
// (SCM_RIGHTS):
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
// allocation check loads it. Pausing sets a reason's bit in `paused` (see
// "Pause reasons" below); resuming clears it and FUTEX_WAKEs the word, on
// which paused launches wait (a futex on a shared mapping works across
// processes, and waiting needs only read access).
//
// Pause reasons (layout 5, no new field). `paused` is a set of reasons,
// each a bit: kPauseOperator (gpushare-ctl pause, a suspend, the
// enforcer's pause) and kPauseHostMemory (the coordinator's own pause of an
// opportunistic job whose memory is mostly on the host while production
// runs: memory/host_pause.h). A launch waits while any bit is set, as it
// always did for a nonzero word, so a job built before the bits obeys
// both; the coordinator sets and clears each reason on its own, so that
// neither undoes the other, and wakes the word at every change.
//
// Compute control (layout version 2). The coordinator throttles a job's
// kernel launches per device through three limits, all live:
//   launch_budget / launch_window_ns  a token bucket: the job may launch
//       launch_budget kernels per launch_window_ns on average, in bursts of
//       at most launch_budget. kNoLimit: no launch budget. 0: launches wait
//       until the budget is raised. When the coordinator goes away the
//       job keeps the last limits it had.
//   max_queued   at most this many of the job's launches on the device may
//       be unfinished; a launch beyond waits for the oldest to finish.
//       kNoLimit: no bound.
//   compute_cap_ppm  a static cap (`compute=30%`) on the share of wall time
//       the job's GPU work may take, in parts per million, enforced by the
//       job on the GPU time it measures (cuEventElapsedTime around each
//       launch it tracks). kNoLimit: no cap.
// `throttle` in the page header is nonzero exactly when one of those is in
// force on some device: the launch path reads `paused` and `throttle` (one
// cache line) and does nothing else when both are 0.
//
// Progress (telemetry, written by every job, copied from process-local
// counters every 10 ms): `launches` counts kernel launches (every launch
// entry point, graph launches included); `iterations` counts iteration
// boundaries, a synchronising call (cuCtxSynchronize, cuStreamSynchronize,
// cuEventSynchronize, a synchronous device-to-host copy) that returns after
// at least one launch since the previous such call; `last_iteration_ns` is
// CLOCK_MONOTONIC at the last boundary; `kernels_completed` is the value
// `launches` had at the last boundary (those launches are known finished
// for a context-wide sync, a lower bound on progress otherwise). Counters
// are process-wide: a job on several devices reports one total.
// `gpu_busy_ns` is the GPU time the job measured for its tracked launches
// (only while throttled or capped), `throttle_wait_ns` the time its launches
// waited for budget or for queued work.
//
// Elastic memory (layout version 3). An opportunistic job's
// cuMemAlloc family is backed by managed memory preferring its GPU, so it
// can live on the host. Per device:
//   device_resident_target (limits page, after `devices`)  the most bytes
//       of the job's managed memory that may stay on the device; kNoLimit:
//       no target (all of it may come back). The coordinator's memory
//       arbiter (memory_arbiter.h) sets it and bumps `generation`; the job's
//       client thread polls it every tick and moves memory to the host (or
//       back) by advice and prefetch, never by freeing anything.
//   device_resident_bytes, host_resident_bytes (telemetry, after `devices`)
//       where the job's managed-backed memory is now: where its interposer
//       moved it, less what the driver evicted on its own (layout 6,
//       `evicted_bytes` below).
//   mem_request_bytes (telemetry)  room a production job waits for beyond
//       what mem_used_bytes already holds (a new context's expected size;
//       an allocation's bytes are reserved, so already counted); 0: none.
//
// No room coming (layout version 4). A production job that waits for room
// bumps mem_request_seq (telemetry, written last in the client thread's
// copy, with release order, so a reader that sees it sees the bytes it
// waits with). When the arbiter finds that the production jobs' memory and
// requests on a device do not fit even with every opportunistic job spilled
// (another production job holds the room, or opportunistic memory that
// cannot move), it stores that sequence number into mem_refused_seq (limits
// page); the waiting allocation then fails at once with out-of-memory
// instead of at the end of its 2 s wait. A verdict names one wait: the next
// wait has a new number. Since layout 6 the job also publishes, beside
// mem_used_bytes, the part of it its waiting allocation holds reserved
// (mem_waiting_bytes), so that the arbiter knows what each refusal frees
// and refuses only the fewest waits that let the others fit, the largest
// first (memory_arbiter.h).
//
// Suspend and resume (layout version 4).
//   suspend_request (limits page, at the end)  1: the coordinator asks the
//       job to move all its device memory to the host (it has set `paused`
//       first); 0: to bring it back. The job's client thread does the work
//       (lib/interpose/memory/suspend.h) and reports in the telemetry page:
//   suspend_state  kSuspendRunning, kSuspendSuspending, kSuspendSuspended,
//       kSuspendResuming, or kSuspendRefused (the job found memory it cannot
//       move after the request: nothing was moved, it stays running).
//   suspend_blockers  a bitmask (kBlocks*) of what the job holds that a
//       suspend cannot move, kept current every tick, so that a request is
//       refused before anything changes.
//   suspended_bytes  per device, the bytes the suspend moved to the host.
//
// Yield page (layout version 4), the fast yield signal. At registration
// the coordinator sends a third memfd, the job's yield page, sealed only
// against resizing. The job maps it writable and at once seals it with
// F_SEAL_FUTURE_WRITE (and F_SEAL_SEAL): from then on nobody can map it
// writable or write(2) it, and the mappings made before the seal (the
// job's and the coordinator's) are the only writers. `busy` (a futex word)
// is 1 while the job has GPU work in flight: the job's interposer sets it
// at a launch and clears it (with a FUTEX_WAKE) at a synchronising call
// that returns, when its work is known finished; it also publishes when it
// cleared the mark and how long its idle gaps last (`cleared_ns`,
// `gap_ns`), so that a follower does not start a kernel that would still
// run when the job comes back. Every job marks; only a
// production job's mark is honoured. The coordinator hands a production
// job's page, once it has verified the seal (F_GET_SEALS), to the
// opportunistic jobs on its devices, one message per page after the
// registration reply:
//   {"kind":"yield-page","version":1,"slot":N}  with the memfd (SCM_RIGHTS)
// N (below kYieldSlots) is the production job's slot, the same for every
// receiver; a later page for the same slot replaces the earlier one. The
// opportunistic job maps it read-only. Which slots a launch on a device
// must wait for is the coordinator's word, not the producer's:
// `yield_mask` in the receiver's own limits page (bit N: honour slot N),
// set only while the loop controls the device and the producer is active,
// and cleared when its mark says busy nearly all the time (a job that
// never clears it would starve opportunistic jobs; see
// compute_yield.h). A launch gated by a mask waits on the futex, with a
// timeout, so a withdrawn mask or a dead producer stops the wait.
//
// Heartbeat (layout 5, in the word that was reserved32). A job with a deep
// queue launches a whole iteration at once and holds its mark through a
// synchronisation of a second or more, so a length of hold alone cannot
// tell it from a producer that died, was stopped (SIGSTOP) or wedged with
// its mark set. While its mark is set, the job's client thread (which
// dies and stops with the process) adds one to `beats` every tick
// (10 ms) while registered. A mark is ignored once held kYieldHoldMaxNs
// (1 s) with no new transition and no new beat, or kYieldHoldCapNs (30 s)
// with no new transition whatever the beats. It came with layout 5 (the
// word was reserved32 in layout 4), and a page whose `beats` never moves (a
// job between coordinators) gets the 1 s rule alone.
//
// Wake-ups (layout version 5; no field changed, the socket carries them).
// A production job whose allocation starts waiting for room wakes its own
// client thread, which publishes its counters and sends
//   {"kind":"room","version":1}
// on its socket (once per new mem_request_seq); the coordinator then runs
// its memory loop at once instead of at its next tick, and again whenever a
// job's process goes (its memory is room now). Whenever the loop changes
// an opportunistic job's device_resident_target it sends that job
//   {"kind":"wake","version":1}
// (without blocking; dropped when the socket is full), and the job's
// client thread runs its memory work at once rather than at its next
// tick. Both are hints: the ticks still run, so a lost or forged line
// costs at most a tick, and a job that floods "room" makes the
// coordinator run its memory loop at most once per batch of events.
// Layout 4 peers refuse "room" (a registered job sent nothing before), so
// the version changes with it.
//
// Migrations and the driver's view (layout 6, telemetry). The job's
// memory work runs on a worker thread of its own, so that a migration of
// many GiB never holds back the client thread's copy and heartbeat; while
// a batch moves, the job publishes
//   migration  kMigrationToHost (a spill or a suspend under way),
//       kMigrationToDevice (a restore or a resume), or kMigrationNone;
//   migrating_bytes  per device, the bytes of the batch under way (they
//       are counted where they were until the batch ends);
//   migration_started_ns  CLOCK_MONOTONIC when the batch began.
// The coordinator shows such a job as "spilling" or "restoring".
//   evicted_bytes  per device, managed bytes the job placed on the device
//       that the driver holds on the host by its own decision (evicted for
//       another allocation), as read from the driver (interpose/memory/
//       residency.h); already moved from device_resident_bytes to
//       host_resident_bytes, so those two say where the memory is.
//
// Hold reasons (layout 6, telemetry, at the end). An opportunistic job
// that gets no GPU time says why. Its launch gate stores what its launches
// wait for now in `hold_reason` (kHold*; kHoldNone while nothing waits)
// and since when in `hold_since_ns`, adds each wait's length to
// `held_ns[reason]` when it ends, and publishes in `launch_cost_ns` the GPU
// time per launch its admission learned (0: not learned yet, so the
// assumed figure is in force). The coordinator samples them with the
// compute loop and shows, per job, the reason and the GPU time of its last
// window (gpushare-ctl(1), "Why a job is held").
//
// Production's queue (layout 7, yield page). A production job that
// launches at Python's pace leaves the GPU idle most of its busy mark,
// while one that queues a whole step at once keeps it busy to the end:
// beside the first a follower may queue work (the GPU interleaves it with
// production's kernels and production's synchronisation finds at most that
// much ahead of it), beside the second every microsecond queued is one
// production waits. The producer tells them apart at no cost to its
// launches: at the synchronising call that clears its mark it measures how
// long the call blocked (its queue's tail: the GPU work still ahead of the
// host when it stopped launching) and how long the mark was held, and
// publishes both, smoothed:
//   marked_ns  CLOCK_MONOTONIC of the last 0 -> 1 transition;
//   tail_ns    the clearing synchronisation's wait: rises at once to a
//       longer wait, falls by an eighth of the difference (a follower errs
//       toward a deep queue);
//   span_ns    the mark's length, mark to clear, smoothed by an eighth.
// A follower derives from them what it may queue beside the busy mark
// (yield.h, yield_grant's busy_room_ns). A producer may lie, in either
// direction: a smaller tail lets followers queue more beside it (which
// slows only the liar), a larger one holds them to its gaps (which it may
// do anyway by keeping the GPU busy); the loop's share bounds both.
//
// Shares of a gap (layout 7, limits page). Several opportunistic jobs
// on one device each fill a production gap on their own, so three of them
// left production three times what one may leave queued when it returned.
// `yield_share_ppm` (per device, in the reserved room) is the job's part
// of the harvest among the device's opportunistic jobs (its weight over
// their sum, in parts per million; 0 or kNoLimit: the whole): a follower
// queues at most that part of what is left of a gap.
//
// Turns (layout 8, limits page). Parts of one gap still cost a switch and
// a cold start for each job that fills its part: a GPU time-slices between
// the contexts with queued work, and each one switched in pays both (three
// ResNet stand-ins together harvested 0.36 of one job's solo speed where
// one alone harvested 0.57). So with several opportunistic jobs on a device
// production's gaps go to one job at a time: `yield_turn` holds the job's
// index among them and their count, and a follower fills gaps, and queues
// beside production's busy mark, only in its turns: kYieldTurnNs of
// CLOCK_MONOTONIC each, round-robin by index (yield.h, yield_is_turn), so
// the followers agree without talking and a turn's end costs one switch.
// Turns by clock, not by production's marks: a production job that
// synchronises twice a step would give one follower every long gap. The
// share still splits the loop's level (a job in its turn fills the whole
// gap).
//
// The GPUs a process uses (layout 9, telemetry). A process registers every
// GPU it sees (all of them, without CUDA_VISIBLE_DEVICES), yet uses one or
// a few: a job counted on all of them would be throttled beside production
// on a GPU it never touches, and a job moved to an idle GPU (migrate.h)
// would gain nothing. The job publishes, per device, `contexts`: the
// contexts it holds there (created, or the primary context retained; each
// counted once, until destroyed, released for the last time or reset). The
// coordinator counts a process on a device while it holds a context or
// memory there (registry.h, Registry::uses). The ordinal is the process's:
// a migration that swaps two GPUs under it (the driver's restore) moves the
// count with the memory, and the coordinator swaps the UUIDs behind the
// ordinals. A process may lie: one that hides a context and its memory on
// a GPU (while claiming some elsewhere) escapes that GPU's compute
// controller, which gains it no more than skipping the interposer's
// throttle, which runs in its own address space, already does; the memory
// it holds there is still seen by NVML (serve's memory enforcement).
// Claiming contexts everywhere only holds it everywhere, as before layout 9.
//
// Collectives (layout 10, telemetry). A data-parallel job's ranks meet at
// a collective (NCCL's all-reduce) every step, whose kernel spins on each
// rank's GPU from its start until the last rank's has started, then moves
// the data: the rank the others wait for spends least time in it. The
// interposer recognises collective kernels by name (NCCL's ncclKernel_* and
// ncclDevKernel_*, learnt when the program looks the function up), records
// an event on the kernel's stream just before and just after it, and adds,
// per device, each finished pair's elapsed time to `collective_ns` and one
// to `collectives`. The coordinator compares the mean spans across a job's
// ranks (gang.h). A process may lie: one that claims long spans makes its
// rank look like one that waits, which opens its GPU to the opportunistic
// job beside it; only the job's own speed pays for that (the gang's
// controller still holds every opportunistic job when the job slows).
//
// Versioning: `magic` and `layout_version` open each page; a reader that
// finds another version refuses the page (the coordinator and the job then
// treat each other as absent). Fields are only ever added at the end, into
// the reserved room, with layout_version bumped; sizes are fixed at one page.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "vocab/job.h"

namespace gpushare::coord {


inline constexpr std::uint32_t kLimitsMagic = 0x4d4c5347;     // "GSLM" little-endian
inline constexpr std::uint32_t kTelemetryMagic = 0x544c5347;  // "GSLT" little-endian
inline constexpr std::uint32_t kYieldMagic = 0x594c5347;      // "GSLY" little-endian
inline constexpr std::uint32_t kLayoutVersion = 10;
/// Production jobs whose yield pages one opportunistic job can follow.
inline constexpr int kYieldSlots = 8;
/// A mark held this long with no new 0 -> 1 transition and no new beat is
/// ignored, by the coordinator and by the follower itself (which may have
/// no coordinator): its producer is dead, stopped or wedged.
inline constexpr std::uint64_t kYieldHoldMaxNs = 1'000'000'000;
/// A mark held this long with no new transition is ignored even while its
/// producer beats (a live job whose work never ends or never synchronises).
inline constexpr std::uint64_t kYieldHoldCapNs = 30'000'000'000;
inline constexpr std::size_t kControlPageBytes = 4096;

// LimitsPage::qos holds a Qos (vocab/job.h); kNoLimit and kMaxDevices come
// from there too.

/// Bits of LimitsPage::paused: why launches wait (0: they do not).
inline constexpr std::uint32_t kPauseOperator = 1;
inline constexpr std::uint32_t kPauseHostMemory = 2;

/// Values of TelemetryPage::suspend_state (layout 4).
inline constexpr std::uint64_t kSuspendRunning = 0;
inline constexpr std::uint64_t kSuspendSuspending = 1;
inline constexpr std::uint64_t kSuspendSuspended = 2;
inline constexpr std::uint64_t kSuspendResuming = 3;
inline constexpr std::uint64_t kSuspendRefused = 4;
/// Bits of TelemetryPage::suspend_blockers: what a suspend cannot move.
inline constexpr std::uint64_t kBlocksArrays = 1;      ///< CUDA arrays (no VMM or managed form)
inline constexpr std::uint64_t kBlocksIpc = 2;         ///< memory exported by cuIpcGetMemHandle
inline constexpr std::uint64_t kBlocksProgramVmm = 4;  ///< the program's own VMM mappings
inline constexpr std::uint64_t kBlocksPlain = 8;       ///< device memory not allocated suspendable
inline constexpr std::uint64_t kBlocksPools = 16;      ///< stream-ordered (pool) memory
/// Values of TelemetryPage::migration (layout 6).
inline constexpr std::uint64_t kMigrationNone = 0;
inline constexpr std::uint64_t kMigrationToHost = 1;
inline constexpr std::uint64_t kMigrationToDevice = 2;

/// Values of TelemetryPage::hold_reason (layout 6): what a job's launches
/// wait for; also the index of TelemetryPage::held_ns.
inline constexpr std::uint64_t kHoldNone = 0;             ///< nothing waits
inline constexpr std::uint64_t kHoldProductionBusy = 1;   ///< a followed production job is busy
inline constexpr std::uint64_t kHoldProductionDue = 2;    ///< its gap is over: it is due back
inline constexpr std::uint64_t kHoldOwnWork = 3;          ///< the job's own queued work fills its grant
inline constexpr std::uint64_t kHoldComputeCap = 4;       ///< a share of GPU time (cap or loop level)
inline constexpr std::uint64_t kHoldLaunchBudget = 5;     ///< the loop's launch budget
inline constexpr std::uint64_t kHoldPaused = 6;           ///< the job is paused (limits page)
inline constexpr int kHoldReasons = 7;

/// Per-device limits, written by the coordinator.
struct DeviceLimits {
  std::atomic<std::uint64_t> mem_limit_bytes;   ///< kNoLimit for none
  std::atomic<std::uint64_t> launch_budget;     ///< launches per window; kNoLimit: none
  std::atomic<std::uint64_t> launch_window_ns;  ///< the budget's window (> 0 when budgeted)
  std::atomic<std::uint64_t> max_queued;        ///< unfinished launches; kNoLimit: none
  std::atomic<std::uint64_t> compute_cap_ppm;   ///< share of wall time on the GPU; kNoLimit: none
  std::atomic<std::uint64_t> yield_mask;        ///< layout 4: yield slots to wait for; 0: none
  /// Layout 7: the job's part of a gap among the device's opportunistic
  /// jobs, parts per million; 0 or kNoLimit: all of it ("Shares of a gap").
  std::atomic<std::uint64_t> yield_share_ppm;
  /// Layout 8: whose turn a gap is among the device's opportunistic jobs,
  /// (index << 32) | count; a count of 0 or 1: no turns ("Turns").
  std::atomic<std::uint64_t> yield_turn;
};

struct LimitsPage {
  std::uint32_t magic;           ///< kLimitsMagic; written before the page is sent
  std::uint32_t layout_version;  ///< kLayoutVersion
  std::uint64_t job_id;          ///< the coordinator's id for this job
  std::uint32_t device_count;
  std::atomic<std::uint32_t> paused;      ///< futex word: 0 running, else kPause* bits
  std::atomic<std::uint32_t> qos;         ///< kQosProduction or kQosOpportunistic
  std::atomic<std::uint32_t> throttle;    ///< nonzero: some device has a compute limit
  std::atomic<std::uint64_t> generation;  ///< bumped after every change, for observers
  std::atomic<std::uint64_t> reserved[8];
  DeviceLimits devices[kMaxDevices];
  std::atomic<std::uint64_t> device_resident_target[kMaxDevices];  ///< layout 3
  std::atomic<std::uint64_t> mem_refused_seq[kMaxDevices];         ///< layout 4
  std::atomic<std::uint64_t> suspend_request;  ///< layout 4: 1 suspend, 0 run
};

/// Per-device usage, written by the job.
struct DeviceTelemetry {
  std::atomic<std::uint64_t> mem_used_bytes;
  /// Layout 6: the bytes of a waiting production allocation that are
  /// already in mem_used_bytes (see "No room coming"); 0 when none waits.
  std::atomic<std::uint64_t> mem_waiting_bytes;
  /// Layout 9: the contexts the process holds on the device ("The GPUs a
  /// process uses"); 0: it does not use it (unless it holds memory there).
  std::atomic<std::uint64_t> contexts;
  std::atomic<std::uint64_t> reserved[1];
};

struct TelemetryPage {
  std::uint32_t magic;  ///< kTelemetryMagic
  std::uint32_t layout_version;
  std::atomic<std::uint64_t> heartbeat_ns;       ///< CLOCK_MONOTONIC of the job's last update
  std::atomic<std::uint64_t> launches;           ///< kernel launches so far
  std::atomic<std::uint64_t> blocks_launched;    ///< unused (0): counting blocks costs the hot path
  std::atomic<std::uint64_t> kernels_completed;  ///< `launches` at the last iteration boundary
  std::atomic<std::uint64_t> iterations;         ///< iteration boundaries so far
  std::atomic<std::uint64_t> last_iteration_ns;  ///< CLOCK_MONOTONIC of the last boundary
  std::atomic<std::uint64_t> gpu_busy_ns;        ///< GPU time measured for tracked launches
  std::atomic<std::uint64_t> throttle_wait_ns;   ///< time launches waited for the throttle
  std::atomic<std::uint64_t> reserved[7];
  DeviceTelemetry devices[kMaxDevices];
  std::atomic<std::uint64_t> device_resident_bytes[kMaxDevices];  ///< layout 3
  std::atomic<std::uint64_t> host_resident_bytes[kMaxDevices];    ///< layout 3
  std::atomic<std::uint64_t> mem_request_bytes[kMaxDevices];      ///< layout 3
  std::atomic<std::uint64_t> mem_request_seq[kMaxDevices];        ///< layout 4
  std::atomic<std::uint64_t> suspend_state;                       ///< layout 4: kSuspend*
  std::atomic<std::uint64_t> suspend_blockers;                    ///< layout 4: kBlocks*
  std::atomic<std::uint64_t> suspended_bytes[kMaxDevices];        ///< layout 4
  std::atomic<std::uint64_t> migration;                           ///< layout 6: kMigration*
  std::atomic<std::uint64_t> migration_started_ns;                ///< layout 6
  std::atomic<std::uint64_t> migrating_bytes[kMaxDevices];        ///< layout 6
  std::atomic<std::uint64_t> evicted_bytes[kMaxDevices];          ///< layout 6
  std::atomic<std::uint64_t> hold_reason;                         ///< layout 6: kHold*
  std::atomic<std::uint64_t> hold_since_ns;   ///< layout 6: CLOCK_MONOTONIC; 0: not held
  std::atomic<std::uint64_t> held_ns[kHoldReasons];  ///< layout 6: waits so far, per reason
  std::atomic<std::uint64_t> launch_cost_ns;  ///< layout 6: learned GPU time per launch; 0: none
  /// Layout 10 ("Collectives"): per device, the summed spans of the
  /// process's collective kernels (from just before each to its end) and
  /// how many were timed.
  std::atomic<std::uint64_t> collective_ns[kMaxDevices];
  std::atomic<std::uint64_t> collectives[kMaxDevices];
};

/// A job's yield page (layout 4; `beats`, layout 5): written by the job
/// through the mapping it made before sealing, read by the coordinator and
/// by opportunistic jobs.
struct YieldPage {
  std::uint32_t magic;  ///< kYieldMagic
  std::uint32_t layout_version;
  std::uint64_t job_id;
  /// Futex word, alone on its cache line: 1 while GPU work is in flight.
  alignas(64) std::atomic<std::uint32_t> busy;
  /// Heartbeat while the mark is held: moves every tick of the job's client
  /// thread (in place of a reserved word, layout 5: see "Heartbeat").
  std::atomic<std::uint32_t> beats;
  std::atomic<std::uint64_t> marks;       ///< 0 -> 1 transitions so far (the job's claim)
  std::atomic<std::uint64_t> cleared_ns;  ///< CLOCK_MONOTONIC of the last clear; 0: none yet
  std::atomic<std::uint64_t> gap_ns;      ///< its idle gap, estimated (see yield.h); 0: unknown
  // Layout 7: production's queue ("Production's queue"); 0: not measured yet.
  std::atomic<std::uint64_t> marked_ns;  ///< CLOCK_MONOTONIC of the last 0 -> 1 transition
  std::atomic<std::uint64_t> tail_ns;    ///< the clearing synchronisation's wait, smoothed
  std::atomic<std::uint64_t> span_ns;    ///< the mark's length, smoothed
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && sizeof(std::atomic<std::uint32_t>) == 4,
              "atomics must have the size of the plain integer to be shared between processes");
static_assert(sizeof(LimitsPage) <= kControlPageBytes);
static_assert(sizeof(TelemetryPage) <= kControlPageBytes);
static_assert(sizeof(YieldPage) <= kControlPageBytes);
static_assert(offsetof(YieldPage, busy) == 64, "the busy word opens its own cache line");
static_assert(offsetof(LimitsPage, paused) % 4 == 0, "a futex word is 4-byte aligned");
static_assert(offsetof(LimitsPage, throttle) / 64 == offsetof(LimitsPage, paused) / 64,
              "the launch path reads paused and throttle from one cache line");

}  // namespace gpushare::coord
