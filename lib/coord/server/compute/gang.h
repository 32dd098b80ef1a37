// Production jobs that span several GPUs (a gang): which GPUs the compute
// loop controls together, and which rank the others wait for.
//
// A data-parallel job runs one process (rank) per GPU, and every rank
// waits for the others at the collective that ends each step, so the job
// goes at its slowest rank's pace: an opportunistic job that slows one
// rank by 5% slows the whole job by 5%. Controlled one GPU at a time (one
// controller per device, each judging production by what it sees there),
// a gang loses on three counts (bench/share/results.md, "A data-parallel
// job on 2 and 4 GPUs"):
//   - a device's controller that profiles the gang's speed "alone" holds
//     only its own GPU's opportunistic jobs, while those beside the other
//     ranks slow the gang on: the solo speed it learns is the slowed one,
//     and it protects that;
//   - a measurement on one GPU sees the gang slowed by another GPU's
//     opportunistic job and cuts its own, which cost nothing;
//   - each controller raises its level on its own schedule, so the gang
//     pays every GPU's probing in turn (a step waits for the worst rank).
// So the loop controls a gang's GPUs as one group: one controller for the
// union of the GPUs of every gang that shares a GPU (and any other job on
// those GPUs), which profiles with every opportunistic job of the group
// held, judges production by the gang's step rate (the slowest rank's,
// which every rank's iterations show), and sets one level whose share each
// opportunistic job gets on its own GPU (split by weight among the jobs of
// that GPU only: compute_control.h, ComputeJobInput::share_group).
//
// Which rank the others wait for. Each rank's interposer times its
// collective kernels (interpose/compute/collective.h; control_block.h,
// "Collectives"): a waiting rank's collective spins from its start until
// the slowest rank's starts, the slowest rank's runs for the transfer
// alone, so over a window each rank's mean span less the least of them is
// how long it waits per collective, and the rank with the least is the
// one the others wait for (gang_wait). A rank whose wait is a real part of
// its time has slack: an opportunistic job beside it may use its GPU for
// part of that time without slowing the step (the loop's use of it, with
// `serve --gang-harvest on` only: compute_loop.cc, ComputeLoop::tick; off
// by default, as it cost skewed gangs 7% in some bench/share runs); the
// rank they wait for is protected as before. The host cannot see the wait: every rank's synchronisation
// returns when the collective ends.
//
// Pure: the loop (compute_loop.cc) reads the registry and passes plain
// values; tests/unit/coord_compute_gang_test.cc covers it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpushare::coord::server {

/// One process as the gang logic needs it.
struct GangProcess {
  std::uint64_t key = 0;     ///< the registry's process key
  std::uint64_t job_id = 0;  ///< the job (process tree) it belongs to
  bool production = false;
  /// Every GPU it registered (UUIDs), and those it holds memory on: a
  /// rank's own GPU (torchrun's ranks register every GPU they see).
  std::vector<std::string> registered;
  std::vector<std::string> used;
};

/// A production job whose processes use two GPUs or more, each process
/// that uses a GPU being a rank.
struct Gang {
  std::uint64_t job_id = 0;
  std::vector<std::uint64_t> ranks;  ///< process keys
  std::vector<std::string> gpus;     ///< the GPUs its ranks use, sorted
};

std::vector<Gang> find_gangs(const std::vector<GangProcess>& processes);

/// The compute loop's control groups: each registered GPU's group key.
/// A GPU no gang uses is its own group (its key is its UUID, as one
/// controller per device had it); the GPUs of gangs that share a GPU, and
/// the GPUs any process registered beside one of them, are merged: the
/// key is their sorted UUIDs joined by '+'.
std::map<std::string, std::string> control_groups(const std::vector<GangProcess>& processes,
                                                  const std::vector<Gang>& gangs);

/// A rank's collectives over the last window: its mean span and how many
/// it ran per second. span_ms < 0: not measured (too few collectives).
struct RankSpan {
  double span_ms = -1;
  double collectives_per_s = 0;
};

/// Measures one rank's spans from its cumulative telemetry counters
/// (collective_ns, collectives; summed over its GPUs): a window closes
/// after kSpanWindowNs with kSpanMinCollectives at least; counters that go
/// back (a new process behind the key, or a lie) start it again, and a
/// rank with no collective for kSpanForgetNs is unmeasured.
inline constexpr std::uint64_t kSpanWindowNs = 500'000'000;
inline constexpr std::uint64_t kSpanMinCollectives = 3;
inline constexpr std::uint64_t kSpanForgetNs = 2'000'000'000;
class SpanMeter {
 public:
  void sample(std::uint64_t now_ns, std::uint64_t collective_ns, std::uint64_t collectives);
  RankSpan span() const { return span_; }

 private:
  bool started_ = false;
  std::uint64_t start_ns_ = 0, start_sum_ = 0, start_count_ = 0;
  std::uint64_t moved_ns_ = 0, last_count_ = 0;
  RankSpan span_;
};

/// Which rank of a gang the others wait for, from the ranks' spans (in
/// the gang's order).
/// - wait_ms[i]: rank i's mean span less the least (ms per collective);
/// - wait_share[i]: the part of wall time rank i spends waiting
///   (wait_ms x its collectives per second);
/// - waits[i]: rank i waits: its wait is at least kMinWaitMs and
///   kMinWaitShare of its time (below, noise, or a wait nothing can use);
/// - waited_for: the index of the least span when some rank waits, -1
///   when none does or a rank is not measured (then every value is -1 or
///   false: nothing is known).
inline constexpr double kMinWaitMs = 0.2;
inline constexpr double kMinWaitShare = 0.15;
struct GangWait {
  int waited_for = -1;
  int least = -1;  ///< the least span's index, whether or not any rank waits
  std::vector<double> wait_ms;
  std::vector<double> wait_share;
  std::vector<bool> waits;
};
GangWait gang_wait(const std::vector<RankSpan>& ranks);

/// Whether the opportunistic jobs beside rank `i` use its wait, across
/// windows: the wait share they are sized by, or nullopt. What they take
/// shortens the wait measured next (the rank's own kernels run slower
/// beside theirs), so the decision is not taken afresh each window (it
/// would flip every window: on, the wait shrinks below kMinWaitShare; off,
/// it is back). It starts when the rank waits (GangWait::waits), sized by
/// the wait measured then, without them; it holds while the rank still
/// waits kMinWaitMs and a third of kMinWaitShare, and it ends when it no
/// longer does (the wait a noisy host made, or one they took) or
/// becomes the one the others wait for (what they took made it the slow
/// one), or when the ranks are not all measured. The next start measures
/// the wait afresh.
std::optional<double> harvest_wait(std::optional<double> harvesting, const GangWait& wait,
                                   std::size_t i);

/// The GPU-time cap (ppm of wall time) of each of `jobs` opportunistic
/// jobs beside a rank that waits `wait_share` of its time and is idle
/// `gap_share` of it, which they may use anywhere in the rank's step (they
/// then follow no busy mark of that rank): their part of the gaps, which
/// following the rank's marks gave them already whatever the loop's level,
/// and of kWaitHarvest of the wait, but no more of the wait than
/// `level_ppm`, each job's cap from the loop's level, so that a gang that
/// slows has it cut with the level. kWaitHarvest, half the wait: on a
/// time-sliced GPU a kernel beside the rank's own slows them by half its
/// own time, so even if all of it landed on the rank's kernels the rank
/// would lose a quarter of its wait and still reach the collective before
/// the one it waits for; half, as a rank's wait varies from step to step.
/// (All of it gave the jobs more in a 2-rank skewed gang of bench/share
/// but cost 4-rank ones 8%.) 0 when the rank does not wait (the loop's
/// usual limits hold).
inline constexpr double kWaitHarvest = 0.5;
/// Gangs of more ranks do not have their waits used: in bench/share's
/// skewed 4-rank gang (rank 0 with twice the work) the gang lost 6-8% in
/// about half the runs once the jobs beside the waiting ranks used their
/// waits, even beside one rank only, and was at 0.97-0.98 without; the
/// cause is not known yet (bench/share/results.md, "Which rank the others
/// wait for"). With 2 ranks it kept 0.97-0.99 in every run.
inline constexpr std::size_t kHarvestMaxRanks = 2;

/// Whether using a rank's wait pays, per GPU: the opportunistic jobs beside
/// it run beside the rank's kernels and its spinning collective, which
/// take their slices too, so what they get depends on how the rank's step
/// splits (bench/share: more beside the waiting rank of a 2-rank gang,
/// less beside those of a 4-rank one). So each use is a trial: their
/// summed speed following the rank's marks, as measured when it starts,
/// against their speed after kHarvestTrialNs of using its wait; slower,
/// and the GPU goes back to following the marks for kHarvestBlockNs. The
/// speed before is taken once the rank has waited for kHarvestSettleNs,
/// so that it is their speed beside the waiting rank, not before it.
inline constexpr std::uint64_t kHarvestSettleNs = 1'000'000'000;
inline constexpr std::uint64_t kHarvestTrialNs = 2'000'000'000;
inline constexpr std::uint64_t kHarvestBlockNs = 20'000'000'000;
struct HarvestTrial {
  double base = -1;  ///< their speed before; < 0: no trial under way
  std::uint64_t candidate_ns = 0;  ///< since when the rank waits; 0: it does not
  std::uint64_t started_ns = 0;
  bool judged = false;
  std::uint64_t blocked_until_ns = 0;
};
/// One tick: `candidate`, the rank waits and its wait may be used now;
/// `speed`, the jobs' summed speed (< 0: not measured); `slowed`, the
/// gang is slower than the loop's target (its controller's measure): a
/// use under way ends and is blocked at once. Whether they use it this
/// tick.
bool harvest_trial(HarvestTrial* trial, bool candidate, double speed, std::uint64_t now_ns,
                   bool slowed = false);

std::uint64_t wait_harvest_ppm(double wait_share, double gap_share = 0,
                               std::uint64_t level_ppm = 1'000'000, std::uint64_t jobs = 1);

}  // namespace gpushare::coord::server
