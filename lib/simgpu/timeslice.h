// How the simulated GPU shares its time between contexts.
//
// A real GPU without MPS runs one context at a time. When several contexts
// have work queued, the hardware scheduler gives each a time slice in turn
// (round-robin); a kernel still running when its context's slice ends is
// preempted and resumes when the context's turn comes again; switching
// contexts costs a little time. So work launched later by one context can
// run before work queued earlier by another, and the end of a kernel is not
// known when it is launched: it depends on what others launch meanwhile.
//
// SchedModel models that as a discrete-event simulation that is settled
// lazily: launch() and advance() move the model's clock forward to "now",
// running the resident context's head kernel until it finishes, its slice
// ends (and another context is waiting), or the clock reaches "now".
// Kernels of one context run in launch order (one stream order per context,
// which is what the workloads do). A kernel may carry a "not before" time
// (a dependency on something off the device's timeline, such as a managed
// memory migration): until then its context has no runnable work, and the
// context's later kernels wait behind it. A kernel's end is known once the model's
// clock has passed it; projected_end() answers "when, if nobody launches
// anything more", by settling a copy of the model, so that a synchronising
// caller can sleep until then and look again.
//
// Rules, chosen to match what is documented of NVIDIA's time-sliced
// scheduling (and kept simple enough to work timelines out by hand):
//   - the resident context keeps the device while it has work; at the end
//     of its slice it yields only if another context has work;
//   - a context that runs out of work yields at once;
//   - the next context is the next one, in context-number order after the
//     resident one, that has work (round-robin);
//   - each change of resident context costs switch_ns of idle device, and
//     the incoming context's head kernel then runs cold_ns longer (its
//     data left the L2 cache and its translations the TLB while the other
//     context ran: what makes sharing cost more on a GPU than the switches
//     alone, docs/simulated-gpu.md);
//   - a context's slice starts when it becomes resident (after the switch);
//   - a kernel may carry a hold: the part of it spent waiting for managed
//     memory to migrate (its page faults). A slice that ends inside a hold
//     is extended to the hold's end: a context stalled on faults is not
//     switched out until they are served, so its faults take other
//     contexts' time as well as its own (the kernel runs its hold first,
//     as a kernel faults its pages in when it first touches them).
//   - a kernel may be gated (a collective, collective.h): from its first
//     run until its release (the moment every peer's matching kernel has
//     started, on other devices) it spins, holding the device in its
//     slices like any kernel without using up its duration; from its
//     release on, its duration (the transfer) counts down as usual. Its
//     release is set from outside (sched_release); until then the model
//     only knows it is not before wait_bound_ns, and settles no further
//     than that while the kernel is running: sched_advance stops there
//     (now_ns < to), and the caller, having learnt more from the other
//     devices, settles again. A gated kernel first run records started_ns
//     and stops the settling at once, so the caller can publish the start.
// kFifo keeps the previous model: one global queue in launch order, each
// kernel run to completion, no switch cost.
//
// Fixed-size, plain data, no allocation: the model lives in the shared
// state file and runs inside libcuda.so.1.
#pragma once

#include <cstdint>

namespace gpushare::simgpu {

inline constexpr int kSchedContexts = 128;  ///< contexts are numbered 0..127
inline constexpr int kSchedPending = 2048;  ///< unfinished kernels, all contexts
/// Unfinished kernels of one context: each has its own queue on a real GPU,
/// so one context's deep queue must not block another's launches.
inline constexpr int kSchedContextPending = 512;
inline constexpr int kSchedDone = 1024;       ///< ends of recent kernels kept
inline constexpr int kSchedIntervals = 4096;  ///< busy stretches kept (for NVML)

enum class SchedPolicy : std::uint32_t { kTimeslice = 0, kFifo = 1 };

struct SchedKernel {
  std::uint64_t seq;  ///< 1, 2, ... in launch order; 0 never used
  std::int64_t remaining_ns;
  std::int64_t not_before_ns;  ///< may not start earlier (0: no such bound)
  std::int32_t context;
  /// Of the kernel's remaining time, how much still holds the device (its
  /// managed-memory fault service: the slice does not end inside it).
  std::uint32_t hold_ns;
  /// 0: an ordinary kernel; else a collective's kernel, the caller's id
  /// for it (see "gated" above).
  std::uint32_t gate;
  std::uint32_t reserved0;
  std::int64_t started_ns;     ///< gated: when it first ran; -1 not yet
  std::int64_t release_ns;     ///< gated: when its spin ends; -1 unknown
  std::int64_t wait_bound_ns;  ///< gated, release unknown: it is not before this
};

struct SchedDone {
  std::uint64_t seq;
  std::int64_t end_ns;
};

/// A stretch of time one context had the device.
struct SchedInterval {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::int32_t context;
  std::uint32_t reserved0;
};

struct SchedModel {
  SchedPolicy policy;
  std::int32_t resident;  ///< context that has (or last had) the device; -1 none
  std::int64_t slice_ns;
  std::int64_t switch_ns;
  std::int64_t cold_ns;        ///< added to a context's head kernel when switched in
  std::int64_t now_ns;         ///< the model's clock: settled up to here
  std::int64_t slice_end_ns;   ///< end of the resident context's slice
  std::int64_t switch_end_ns;  ///< the device is switching until here
  std::uint64_t next_seq;
  std::uint32_t pending_count;  ///< kernels in pending[0..count), in seq order
  std::uint32_t done_next;
  std::uint32_t interval_next;
  std::uint32_t interval_count;
  std::uint64_t switches;
  std::uint64_t kernels;                     ///< kernels ever launched
  std::uint64_t busy_total_ns;               ///< kernel time run, ever, all contexts
  std::uint64_t busy_ns[kSchedContexts];     ///< kernel time run by the context now numbered so
  std::uint32_t pending_of[kSchedContexts];  ///< unfinished kernels per context
  SchedKernel pending[kSchedPending];
  SchedDone done[kSchedDone];
  SchedInterval intervals[kSchedIntervals];  ///< ring, oldest at interval_next
};

/// A fresh, idle model whose clock starts at `now_ns`.
void sched_init(SchedModel* model, SchedPolicy policy, std::int64_t slice_ns,
                std::int64_t switch_ns, std::int64_t now_ns, std::int64_t cold_ns = 0);

/// Settles the model up to `to_ns` (an earlier time changes nothing).
void sched_advance(SchedModel* model, std::int64_t to_ns);

/// Queues a kernel of `duration_ns` for `context` at `now_ns` (settling up
/// to then first) that may not start before `not_before_ns`. Returns its
/// sequence number; 0 when the context number is out of range, or the
/// context has kSchedContextPending kernels unfinished, or all contexts
/// kSchedPending (settle and retry). The first `hold_ns` of the duration
/// (at most the duration) holds the device (see the rules above).
std::uint64_t sched_launch(SchedModel* model, int context, std::int64_t now_ns,
                           std::int64_t duration_ns, std::int64_t not_before_ns = 0,
                           std::uint32_t hold_ns = 0);

/// Makes kernel `seq` (unfinished) gated with `gate` != 0: it spins from
/// its first run until released (the rules above). False when no such
/// unfinished kernel.
bool sched_gate(SchedModel* model, std::uint64_t seq, std::uint32_t gate);

/// Sets a gated kernel's release (>= 0), or while it is still unknown
/// raises the bound it is known not to precede (release_ns < 0). False
/// when no such unfinished gated kernel.
bool sched_release(SchedModel* model, std::uint64_t seq, std::int64_t release_ns,
                   std::int64_t wait_bound_ns);

/// Whether an unfinished gated kernel's release is still unknown: then
/// settling may stop short and projections need an estimate of it.
bool sched_has_open_gate(const SchedModel& model);

/// Forgets a context that is gone (its process died or detached): its
/// unfinished kernels are dropped (they count as finished, end unknown),
/// its busy time is zeroed and its past intervals lose their owner, so that
/// a process later given the same number inherits nothing.
void sched_drop(SchedModel* model, int context);

/// Checks the invariants that keep indexing in bounds (the model lives in
/// a file that other processes write); false when one fails.
bool sched_valid(const SchedModel& model);

/// The end of kernel `seq`: its time once settled; -1 while unfinished;
/// 0 when it finished so long ago that its end is no longer kept.
std::int64_t sched_end(const SchedModel& model, std::uint64_t seq);

/// Whether `context`'s kernel `seq` has finished (0, no kernel, has): cheap,
/// since a context's kernels finish in launch order.
bool sched_finished(const SchedModel& model, int context, std::uint64_t seq);

/// When the next of the unfinished kernels ends if nothing more is
/// launched (-1 when none is unfinished). Settles a copy into `scratch`.
std::int64_t sched_next_completion(const SchedModel& model, SchedModel* scratch);

/// When kernel `seq` ends if nothing more is launched (its settled end if
/// finished). Settles a copy; `scratch` receives it (the model is large, so
/// the caller provides the room).
std::int64_t sched_projected_end(const SchedModel& model, std::uint64_t seq, SchedModel* scratch);

/// The first kernel `context` has unfinished (0 when none): the next of
/// its kernels to finish.
std::uint64_t sched_first_pending(const SchedModel& model, int context);

/// The last kernel `context` has unfinished (0 when none): waiting for it
/// is synchronising the context.
std::uint64_t sched_last_pending(const SchedModel& model, int context);

/// Kernel time within [from_ns, to_ns) as far back as the ring of intervals
/// reaches; only `context`'s when context >= 0. Counts only settled time.
std::int64_t sched_busy_between(const SchedModel& model, std::int64_t from_ns, std::int64_t to_ns,
                                int context = -1);

}  // namespace gpushare::simgpu
