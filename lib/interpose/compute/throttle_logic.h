// The compute actuator's decisions, without the driver: what a launch on a
// throttled device must wait for. The driver-facing half is throttle.cc.
//
// Three limits (control_block.h), each a separate gate:
//   launch budget   a token bucket of launches: it refills at
//                   launch_budget per launch_window_ns and holds at most
//                   launch_budget tokens (at least one), so a cut takes
//                   effect at the next launch (the bucket is clamped to the
//                   new size at once) and a budget of 0 holds every launch.
//   queued work     at most max_queued tracked launches unfinished; beyond,
//                   the launch waits for the oldest to finish.
//   compute cap     a token bucket of GPU time: it refills at cap_ppm/1e6
//                   nanoseconds per nanosecond, holds one window's worth
//                   (kCapWindowNs), and starts empty (a job gets no burst
//                   above its cap when it starts). A launch may go while the bucket is
//                   positive; each tracked launch's measured GPU time is
//                   debited when it is seen to finish, so the bucket may go
//                   negative and the next launch then waits it back to
//                   zero. Before sleeping on it, the job first waits for its
//                   queued work (its cost is not known until it finishes);
//                   with a cap in force at most kCapQueue launches are
//                   queued, so an overdraft is a few kernels at most.
// Waits are sleeps of at most kMaxSleepNs, after which the caller re-reads
// the limits (a raise takes effect within that time) and asks again.
#pragma once

#include <cstdint>

#include "coord/contract/compute_limits.h"

namespace gpushare::interpose {

inline constexpr std::uint64_t kThrottleNoLimit = ~0ull;
inline constexpr std::uint64_t kMaxSleepNs = 2'000'000;
inline constexpr std::uint64_t kCapWindowNs = 100'000'000;
inline constexpr std::uint64_t kCapQueue = 2;

/// A device's compute limits: the one type of coord/contract/compute_limits.h,
/// named here by the throttle's word for it (kThrottleNoLimit == kNoLimit).
using ThrottleLimits = coord::ComputeLimits;
static_assert(kThrottleNoLimit == kNoLimit);

/// Per device, process-local; the caller serialises access.
struct ThrottleState {
  double launch_tokens = 0;
  std::uint64_t launch_refill_ns = 0;  ///< 0: the bucket starts full
  double time_tokens_ns = 0;
  std::uint64_t time_refill_ns = 0;
  std::uint64_t queued = 0;  ///< tracked launches not yet seen to finish
};

enum class ThrottleWait { kNone, kOldest, kSleep };

struct ThrottleDecision {
  ThrottleWait wait = ThrottleWait::kNone;
  std::uint64_t sleep_ns = 0;  ///< for kSleep: at most kMaxSleepNs
};

/// The queued-work bound in force on tracked launches: max_queued,
/// tightened to kCapQueue under a compute cap; kThrottleNoLimit for none.
/// Launches under a yield mask are not tracked one by one (BurstState).
std::uint64_t queue_bound(const ThrottleLimits& limits);

/// Refills the buckets to `now_ns` and says whether a launch may go now.
ThrottleDecision throttle_decide(ThrottleState* state, const ThrottleLimits& limits,
                                 std::uint64_t now_ns);

/// The compute cap's bucket alone (for the yield's free grants): 0 when a
/// launch may go now, else how long to sleep (at most kMaxSleepNs).
std::uint64_t cap_sleep_ns(ThrottleState* state, const ThrottleLimits& limits,
                           std::uint64_t now_ns);

/// A launch went: takes its launch token; `tracked` when its completion
/// will be reported by throttle_finished.
void throttle_launched(ThrottleState* state, const ThrottleLimits& limits, bool tracked);

/// A tracked launch finished after `gpu_ns` of measured GPU time.
void throttle_finished(ThrottleState* state, std::uint64_t gpu_ns);

/// Limits were lifted: forget the buckets (a later limit starts full).
void throttle_reset(ThrottleState* state);

/// A follower's admission under a yield mask (throttle.cc explains it):
/// launches issued, launches known finished (by marker events), and the
/// GPU time one launch takes, learned from finished markers.
struct BurstState {
  std::uint64_t issued = 0;
  std::uint64_t done = 0;
  double launch_ns = 0;  ///< 0: not learned yet (kInitialLaunchNs is assumed)
  // What launch_ns is the ratio of (burst_learn): recent stretches' GPU
  // time and launches, scaled down together to the kLearnWindow* bounds.
  double learn_ns = 0;
  double learn_launches = 0;
  std::uint64_t clean_issued = 0;  ///< `issued` at the last clean stretch; 0: none yet
  std::uint64_t last_launch_ns = 0;  ///< CLOCK_MONOTONIC of the last launch; 0: none
  std::uint64_t aged_ns = 0;         ///< when burst_age last lowered launch_ns
  /// A followed production job was seen busy since our last launch: a gap
  /// now is one in which none of ours went yet (burst_admits).
  bool busy_since_launch = true;
};

/// What one launch is assumed to cost before any was measured: high, so
/// that the first grant queues little work of an unknown job.
inline constexpr double kInitialLaunchNs = 200'000;

/// A learned cost above kInitialLaunchNs is halved for every this long
/// with no launch: a figure nothing can refute (no launch went) does not
/// stand for ever.
inline constexpr std::uint64_t kBurstAgeNs = 1'000'000'000;

/// The learned cost is GPU time over launches of the recent stretches,
/// scaled down together to at most this much GPU time and this many
/// launches: a mean, not a per-stretch figure (throttle_logic.cc).
inline constexpr double kLearnWindowNs = 4'000'000;
inline constexpr double kLearnWindowLaunches = 128;

/// Within this many launches of a clean stretch, a stretch another context
/// may have run in can lower the learned cost but not raise it: the clean
/// ones measure it, and the others, stretched by production's time
/// slices, would pull the mean toward their own (ResNet-50 beside its
/// production job: 85 us per launch against 28 in clean stretches).
inline constexpr std::uint64_t kCleanTrustLaunches = 1024;

/// The GPU time one launch is taken to cost: the learned figure, or
/// kInitialLaunchNs before there is one.
double burst_cost(const BurstState& state);

/// Launches that may go now when `grant_ns` of queued GPU time is allowed:
/// each costs the learned launch_ns, and the unfinished ones count first.
std::uint64_t burst_room(const BurstState& state, std::uint64_t grant_ns);

/// burst_room, except that within a production gap (`in_gap`, a grant
/// above 0) in which none of ours went yet (busy_since_launch) one launch
/// may always go when none of ours is queued: no learned figure, however
/// wrong, keeps a job out of every gap. Only one per gap: a job that
/// launched in this gap and finds no room left is near its end, where a
/// forced launch would delay production's return.
std::uint64_t burst_admits(const BurstState& state, std::uint64_t grant_ns, bool in_gap);

/// Whether burst_admits's one launch is a forced one: no room for it under
/// `grant_ns`, yet in a gap where none of ours went and none is queued.
bool burst_forced(const BurstState& state, std::uint64_t grant_ns, bool in_gap);

/// The launch burst_admits forces into a gap that has no room for it is
/// paced by the loop's level: a bucket of GPU time filled at `level` (the
/// job's part of it) per ns of wall time, at most kForcedBucketMaxNs, and
/// debited the learned cost of each forced launch. A forced launch goes
/// while the bucket is not below zero. Unpaced, an opportunistic job of
/// 2-ms kernels beside a production job of 9-ms kernels and 1-ms host
/// gaps forced one kernel into every gap, whatever the loop's level,
/// and held production at 0.83 of its solo speed (bench/share `busy`);
/// at the loop's floor (1/256) it now forces one such launch a second or
/// so, which still measures the job's cost and keeps the lockout away.
struct ForcedBucket {
  double tokens_ns = 0;
  std::uint64_t refill_ns = 0;  ///< CLOCK_MONOTONIC of the last refill; 0: never
};
inline constexpr double kForcedBucketMaxNs = 20'000'000;

/// Whether a forced launch of `cost_ns` may go at `now_ns` under `level`
/// (0-1, the job's part of the loop's level); debits it if so.
bool forced_launch_paced(ForcedBucket* bucket, double level, std::uint64_t now_ns,
                         double cost_ns);

/// The launches that must have finished before `room` more may go under
/// `grant_ns`, leaving half the grant free (so that waits come in bulk):
/// the issued count a marker must have reached.
std::uint64_t burst_wait_target(const BurstState& state, std::uint64_t grant_ns);

/// The GPU work our queue may still hold at most: launches not known
/// finished, each at the learned cost but never above kInitialLaunchNs
/// (an overestimate here would let a stretch span an idle GPU).
std::uint64_t burst_cover_ns(const BurstState& state);

/// A host gap shorter than this never starts a new burst: a marker per
/// launch would cost a job whose host is its bottleneck an event record per
/// launch, and a stretch holds at most this much idle time per launch.
inline constexpr std::uint64_t kBurstBreakMinNs = 100'000;

/// Whether a launch at `now_ns` must start a new burst: the host took
/// longer since the previous launch than our queued work could keep the
/// GPU busy (and longer than kBurstBreakMinNs), so the GPU may have idled,
/// and a stretch timed across that would count the job's own pause as GPU
/// time.
bool burst_breaks(const BurstState& state, std::uint64_t now_ns);

/// A launch went at `now_ns`.
void burst_launched(BurstState* state, std::uint64_t now_ns);

/// Ages the learned cost at `now_ns` (kBurstAgeNs). True when it changed.
bool burst_age(BurstState* state, std::uint64_t now_ns);

/// A stretch of `launches` launches took `gpu_ns` from its first start
/// to its last end: it joins the learned mean cost per launch (total GPU
/// time over total launches of the recent stretches, kLearnWindow*), so a
/// stretch of a few long kernels among many short ones moves it by its
/// share, not to its own figure. A `clean` stretch (nothing of a followed
/// production job ran meanwhile: throttle.cc) counts as measured; one that
/// another context's work may have stretched is an upper bound of our
/// cost, not a measure of it: one below the figure counts as it is; one
/// above it counts only when no clean stretch came in kCleanTrustLaunches,
/// and then at most twice the figure per launch (the assumed
/// kInitialLaunchNs when nothing was learned), so a time slice of
/// production's work inside it cannot make the figure arbitrarily high,
/// yet a long-kernel job only ever seen beside production reaches its cost.
void burst_learn(BurstState* state, std::uint64_t launches, std::uint64_t gpu_ns,
                 bool clean = true);

}  // namespace gpushare::interpose
