// The gpushare loop, per device.
//
// Signal: each production job's iteration rate, from its iteration
// boundaries (iterations / time between the first and last boundary in a
// measurement; a job that never synchronises is measured by its launch
// rate). Actuator: one "harvest" level h for the device, the share of wall
// time the device's opportunistic jobs may keep the GPU busy, split between
// them by weight: each gets a GPU-time cap of h * w_j / sum(w) (the
// compute_cap_ppm of its limits page, enforced by its interposer on the GPU
// time it measures, with at most two launches queued). A cap in time, not
// a launch budget: it needs no estimate of each job's kernel sizes, it
// splits the harvest fairly in GPU time, and on the simulator it disturbs
// the production job less than a launch budget did (the job waits on its
// own launches' events, so little of its work sits queued when a
// production kernel arrives; see bench/share/results-fifo.md).
//
// Phases:
//   free        no production job active (none, or none launched for
//               idle_after): opportunistic jobs run unthrottled.
//   profile     a production job became active and its solo speed is not
//               known: opportunistic jobs are held (budget 0, one queued
//               launch) while its speed is measured, for at least
//               min_eval and profile_iterations iterations, after settle
//               and, for a job that just started, after its first 500 ms
//               (its set-up's synchronisations are not steps), during
//               which they run in its gaps at the floor's level.
//   slow-start  from h = 1/8: h doubles after each measurement within the
//               slowdown target, and halves into avoid otherwise; entered
//               again from avoid when a new opportunistic job joins.
//               A good measurement raises h (here and in avoid) only when
//               the opportunistic jobs used at least half of it: a new job
//               still in its start-up (PyTorch's first steps pause for
//               library loading and autotuning) let the level double to 1
//               beside a busy GPT-2 stand-in, which then ran 6-11% slow
//               for a second once the job ran.
//   avoid       additive increase by a step set on entry and at each
//               decrease (a tenth of h, at least 1/128), doubled after
//               every two good steps in a row (at most 1/4: a level cut
//               by noise comes back within about a second), and
//               multiplicative decrease by 0.7 (by 0.35 when the slowdown
//               is over four times the target).
// Each step measures for max(min_eval, n periods) after a settle time, so
// a step takes 100-400 ms for typical jobs and the loop converges in about
// a second; n is sized by the job's steps (below).
//
// Measurements sized by the steps. A job's steps are not all alike: the
// ResNet stand-in replays three recorded steps of 53, 72 and 51 ms, and a
// real job logs, evaluates or accumulates gradients every few steps. Four
// such steps in a row read 57.4, 62.1 or 56.8 ms by where they start, 5%
// either side of the mean with nothing beside the job, against a target
// of 3%: the loop cut the level at random (the opportunistic job held at
// 0.07 of what even steps give it, in the unit test), and a profile of
// four steps could set the solo speed too high for good. So each
// production job keeps its last 256 step boundaries, and the loop finds
// the pattern its steps repeat (Track::step_pattern: the least lag at
// which a step's time is closest to the one that lag before, when clearly
// closer than to the step before it; 1 where there is none). A
// measurement spans a whole number of patterns, at least min_iterations
// steps (6 for ResNet's three), its rate taken between boundaries a whole
// number of patterns apart. The profile measures profile_iterations steps
// (6: whole patterns of 1, 2, 3 or 6 steps) before any pattern is
// known. A change of the level beside the job moves all its steps alike,
// so it does not hide the pattern; steps that vary at random are measured
// as before, over min_iterations, and their noise is the loop's to absorb.
//
// Re-estimation: a production job measured
// faster than its solo estimate by more than the target twice in a row has
// its estimate raised to the lesser of the two (it changed phase, or the
// estimate was noisy; a single fast window is noise, and raising on one
// biased the estimate up by the noise's peaks: a gang's rank read 3.5%
// slow for good after one 150-ms window at 61 steps/s where it ran at 59,
// and the loop cut its opportunistic jobs to the floor); one measured slower
// than the target allows three times in a row while opportunistic jobs are
// at the floor is re-profiled (its slowdown is not theirs). A production
// job idle for idle_after frees the device; when it returns, its known
// solo speed is kept and the loop restarts at slow start.
//
// Several production jobs on one device: the loop protects the one slowed
// most (the slowdown is the maximum over them); they share the device
// between themselves as the GPU does, unthrottled, and each one's solo
// speed is measured while the others run too (placement avoids this).
//
// The fast yield signal (compute_yield.h, control_block.h layout 4,
// coord/job/yield.h). The time-sliced simulator showed that a share alone
// cannot reach the harvest target: every opportunistic kernel that overlaps
// a production kernel takes slices from it, so a share of wall time placed
// blindly slows production by about half of it (a static 50% cap:
// production at 0.69-0.91 of solo) and a 3% target left the loop near its
// floor (harvest 0.04-0.16 against the 0.80 target, in the run kept in
// bench/share/results-before-yield.md). Only an opportunistic job that
// runs in the production job's host gaps can harvest them, so each job
// marks a page of its own busy from a launch until its next
// synchronisation, with the time of its last clear and its estimated gap,
// and opportunistic launches, once this loop's share lets them go, wait
// while a production job on their device is marked, and do not start a
// kernel that would outlast its gap. This loop
// still sets the share: it guards a production job whose marks say little
// (one that never synchronises looks busy all the time, and a mark held
// without a heartbeat for a second, or for 30 s, is dropped), and splits
// the harvest between opportunistic jobs. The costs: one load of the
// job's own cache line per launch (a store and a clock read at an
// iteration's first launch), and a clock read and a FUTEX_WAKE at its
// synchronisation. A production job in a long synchronisation launches
// nothing but holds a live mark: that counts as progress (in_flight).
#include "coord/server/compute/compute_control.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <vector>

#include "coord/contract/repeat_lag.h"

namespace gpushare::coord::server {
namespace {

constexpr std::uint64_t kHistoryNs = 2'500'000'000;
constexpr std::uint64_t kShowWindowNs = 500'000'000;
constexpr double kStartHarvest = 1.0 / 8;
// Additive increase, at least. Small: below 1/4 the level paces the
// batches an opportunistic job queues beside a busy production job
// (throttle.cc), and a step of 1/32 took the level from 0.05 to 0.08 at
// once; beside GPT-2, whose level settles near 0.02, the loop then sat at
// 3-6% slowdown (production 0.95-0.96 of solo), and at 0.997 with 1/128.
constexpr double kMinStep = 1.0 / 128;
constexpr double kMaxStep = 1.0 / 4;
constexpr std::uint64_t kProfileWarmupNs = 500'000'000;  // a new job's set-up
// The part of the level the opportunistic jobs must have used for a good
// measurement to raise it (opportunistic_used).
constexpr double kUsedOfLevel = 0.5;

struct Sample {
  std::uint64_t now = 0;
  std::uint64_t launches = 0;
  std::uint64_t iterations = 0;
  std::uint64_t last_iteration_ns = 0;
  std::uint64_t busy = 0;
};

struct Rate {
  double per_s = -1;
  bool iterations = false;
  std::uint64_t span_ns = 0;
  std::uint64_t count = 0;  // iterations (or launches) in the measurement
};

// Progress between two samples: iterations over the time between their last
// boundaries when there are some, else launches over wall time.
Rate rate_between(const Sample& a, const Sample& b) {
  Rate r;
  if (b.iterations > a.iterations && a.iterations > 0 &&
      b.last_iteration_ns > a.last_iteration_ns) {
    r.iterations = true;
    r.count = b.iterations - a.iterations;
    r.span_ns = b.last_iteration_ns - a.last_iteration_ns;
    r.per_s = static_cast<double>(r.count) * 1e9 / static_cast<double>(r.span_ns);
    return r;
  }
  if (b.now > a.now) {
    r.count = b.launches - a.launches;
    r.span_ns = b.now - a.now;
    r.per_s = static_cast<double>(r.count) * 1e9 / static_cast<double>(r.span_ns);
  }
  return r;
}

// A step boundary of a production job: the iteration count and when the
// last of them ended (several may end between two samples of a fast job).
struct Boundary {
  std::uint64_t index = 0;
  std::uint64_t ns = 0;
};

constexpr std::size_t kBoundaries = 256;
// The longest step pattern looked for, and the pairs of steps each lag
// needs before a pattern is claimed.
constexpr std::uint64_t kMaxPattern = 12;
constexpr std::size_t kMinPairs = 8;

struct Track {
  std::deque<Sample> samples;
  std::deque<Boundary> boundaries;  // the last kBoundaries, oldest first
  std::uint64_t last_progress_ns = 0;  // when launches last moved
  std::uint64_t first_progress_ns = 0;  // when it was first seen to have launched
  double solo = -1;                    // production: its solo speed
  double fast = -1;  // production: a measurement faster than solo allows, not yet confirmed

  void add(const Sample& s) {
    if (samples.empty() || s.launches != samples.back().launches) last_progress_ns = s.now;
    if (first_progress_ns == 0 && s.launches > 0) first_progress_ns = s.now;
    if (s.iterations > 0 && s.last_iteration_ns > 0 &&
        (boundaries.empty() || (s.iterations > boundaries.back().index &&
                                s.last_iteration_ns > boundaries.back().ns))) {
      boundaries.push_back({s.iterations, s.last_iteration_ns});
      if (boundaries.size() > kBoundaries) boundaries.pop_front();
    }
    samples.push_back(s);
    while (samples.size() > 2 && s.now - samples.front().now > kHistoryNs) samples.pop_front();
  }
  // The oldest sample at or after `since`.
  const Sample& from(std::uint64_t since) const {
    for (const Sample& s : samples) {
      if (s.now >= since) return s;
    }
    return samples.back();
  }
  Rate rate_since(std::uint64_t since) const { return rate_between(from(since), samples.back()); }

  // The length of the pattern the job's steps repeat, in steps (up to
  // kMaxPattern; coord/contract/repeat_lag.h says how); 1 for steps that
  // do not repeat a pattern, or that end several per sample (their own
  // times are not seen; such a job's measurement spans many steps anyway).
  // A change of the level beside the job moves all its steps alike, so it
  // does not hide the pattern, where a spread of window means would have
  // taken it for noise.
  std::uint64_t step_pattern() const {
    double steps[kBoundaries] = {};  // the times of single steps, oldest first; 0: unseen
    int count = 0;
    for (std::size_t i = 1; i < boundaries.size(); ++i) {
      const Boundary& a = boundaries[i - 1];
      const Boundary& b = boundaries[i];
      steps[count++] = b.index - a.index == 1 ? static_cast<double>(b.ns - a.ns) : 0.0;
    }
    return static_cast<std::uint64_t>(
        repeat_lag(steps, count, static_cast<int>(kMaxPattern), static_cast<int>(kMinPairs), 0));
  }

  // The steps one measurement of this job spans: a whole number of its
  // pattern, at least min_iterations (the essay above).
  std::uint64_t steps_needed(const ComputeTuning& t) const {
    std::uint64_t pattern = step_pattern();
    std::uint64_t least = static_cast<std::uint64_t>(std::max(1, t.min_iterations));
    return (least + pattern - 1) / pattern * pattern;
  }

  // The rate since `since` over a whole multiple of `pattern` steps, at
  // least `least` of them, from the boundaries; none (per_s < 0) before
  // then.
  Rate steps_rate_since(std::uint64_t since, std::uint64_t pattern, std::uint64_t least) const {
    Rate r;
    std::size_t first = 0;
    while (first < boundaries.size() && boundaries[first].ns < since) ++first;
    if (first >= boundaries.size() || pattern == 0) return r;
    const Boundary& a = boundaries[first];
    std::uint64_t whole = (boundaries.back().index - a.index) / pattern * pattern;
    if (whole == 0 || whole < least) return r;
    // The boundary at exactly a whole multiple, or the nearest below it
    // (a fast job's boundaries arrive several per sample).
    const Boundary* b = &a;
    for (std::size_t i = first + 1; i < boundaries.size() && boundaries[i].index <= a.index + whole;
         ++i) {
      b = &boundaries[i];
    }
    if (b->index == a.index || b->ns <= a.ns) return r;
    r.iterations = true;
    r.count = b->index - a.index;
    r.span_ns = b->ns - a.ns;
    r.per_s = static_cast<double>(r.count) * 1e9 / static_cast<double>(r.span_ns);
    return r;
  }
};

// The measured part of an output: speed over the last half second (none
// for a job that never launched), launch rate, and the GPU share of its
// tracked launches.
void measure_output(const Track& track, std::uint64_t now, ComputeJobOutput* o) {
  std::uint64_t since = now > kShowWindowNs ? now - kShowWindowNs : 0;
  Rate shown = track.rate_since(since);
  o->speed_per_s = track.samples.back().launches > 0 ? shown.per_s : -1;
  o->speed_in_iterations = shown.iterations;
  const Sample& first = track.from(since);
  const Sample& last = track.samples.back();
  if (last.now > first.now) {
    double span = static_cast<double>(last.now - first.now);
    o->launch_rate_per_s = static_cast<double>(last.launches - first.launches) * 1e9 / span;
    if (last.busy > first.busy) o->gpu_share = static_cast<double>(last.busy - first.busy) / span;
  }
}

class GpushareController : public DeviceController {
 public:
  explicit GpushareController(const ComputeTuning& tuning) : t_(tuning) {}

  std::vector<ComputeJobOutput> tick(std::uint64_t now,
                                     const std::vector<ComputeJobInput>& jobs) override {
    update_tracks(now, jobs);
    bool active = any_production_active(now, jobs);
    if (!active) {
      enter(Phase::kFree, now);
    } else if (phase_ == Phase::kFree) {
      bool known = true;
      for (const ComputeJobInput& job : jobs) {
        if (job.qos == kQosProduction && tracks_[job.id].solo <= 0) known = false;
      }
      enter(known ? Phase::kSlowStart : Phase::kProfile, now);
    } else if (phase_ == Phase::kAvoid && joined(jobs)) {
      // A new opportunistic job: the level reached without it (up to all
      // of it, while production ran alone and every measurement was good)
      // says nothing about what this one costs production. Slow start
      // again: started beside a busy GPT-2 stand-in at a level of 1, one
      // slowed production by 7-11% for a second and a half.
      enter(Phase::kSlowStart, now);
    }
    opportunistic_.clear();
    for (const ComputeJobInput& job : jobs) {
      if (job.qos == kQosOpportunistic) opportunistic_.insert(job.id);
    }
    if (phase_ == Phase::kProfile) {
      profile(now, jobs);
    } else if (phase_ == Phase::kSlowStart || phase_ == Phase::kAvoid) {
      evaluate(now, jobs);
    }
    return outputs(now, jobs);
  }

  ComputeDeviceStatus status() const override {
    static const char* const kNames[] = {"free", "profile", "slow-start", "avoid"};
    return {kNames[static_cast<int>(phase_)], phase_ == Phase::kFree ? 1.0 : harvest_};
  }

 private:
  enum class Phase { kFree, kProfile, kSlowStart, kAvoid };

  void enter(Phase phase, std::uint64_t now) {
    if (phase == phase_ && phase == Phase::kFree) return;
    phase_ = phase;
    change_ns_ = now;
    stale_ = 0;
    if (phase == Phase::kSlowStart) harvest_ = kStartHarvest;
  }

  // Whether an opportunistic job is here that was not at the last tick.
  bool joined(const std::vector<ComputeJobInput>& jobs) const {
    for (const ComputeJobInput& job : jobs) {
      if (job.qos == kQosOpportunistic && !opportunistic_.count(job.id)) return true;
    }
    return false;
  }

  void update_tracks(std::uint64_t now, const std::vector<ComputeJobInput>& jobs) {
    std::map<std::uint64_t, Track> kept;
    for (const ComputeJobInput& job : jobs) {
      Track& track = kept[job.id];
      if (auto old = tracks_.find(job.id); old != tracks_.end()) track = std::move(old->second);
      // Back from idle: its steps before are not a pattern with those after.
      if (!track.samples.empty() && now - track.last_progress_ns >= t_.idle_after_ns) {
        track.boundaries.clear();
      }
      track.add({now, job.launches, job.iterations, job.last_iteration_ns, job.gpu_busy_ns});
      if (job.in_flight) track.last_progress_ns = now;
    }
    tracks_ = std::move(kept);  // a job that left is forgotten
  }

  bool any_production_active(std::uint64_t now, const std::vector<ComputeJobInput>& jobs) {
    for (const ComputeJobInput& job : jobs) {
      const Track& track = tracks_[job.id];
      if (job.qos == kQosProduction && track.samples.size() > 1 &&
          now - track.last_progress_ns < t_.idle_after_ns) {
        return true;
      }
    }
    return false;
  }

  // The length of one measurement: enough iterations of the slowest
  // production job, within [min_eval, max_eval].
  std::uint64_t eval_ns(const std::vector<ComputeJobInput>& jobs) {
    double longest = 0;
    for (const ComputeJobInput& job : jobs) {
      const Track& track = tracks_[job.id];
      if (job.qos == kQosProduction && track.solo > 0) {
        longest = std::max(longest,
                           static_cast<double>(track.steps_needed(t_)) * 1e9 / track.solo);
      }
    }
    return std::clamp(static_cast<std::uint64_t>(longest), t_.min_eval_ns, t_.max_eval_ns);
  }

  // Measures every active production job since the last change; false
  // while some measurement is still too short.
  // `steps`: how many iterations each job's measurement spans (0: as
  // its steps need, Track::steps_needed).
  bool measure(std::uint64_t now, const std::vector<ComputeJobInput>& jobs, std::uint64_t length,
               std::uint64_t steps, std::map<std::uint64_t, double>* speeds) {
    if (now < change_ns_ + t_.settle_ns + length) return false;
    bool overdue = now >= change_ns_ + t_.settle_ns + t_.max_eval_ns;
    std::uint64_t since = change_ns_ + t_.settle_ns;
    for (const ComputeJobInput& job : jobs) {
      if (job.qos != kQosProduction) continue;
      const Track& track = tracks_[job.id];
      if (now - track.last_progress_ns >= t_.idle_after_ns) continue;  // idle: not protected
      std::uint64_t pattern = steps > 0 ? steps : track.step_pattern();
      std::uint64_t needed = steps > 0 ? steps : track.steps_needed(t_);
      Rate rate = track.rate_since(since);
      if (rate.iterations) {
        // Over whole patterns, so that where a pattern starts does not
        // bias the figure; overdue, whatever there is.
        Rate whole = track.steps_rate_since(since, pattern, needed);
        if (whole.per_s > 0) {
          rate = whole;
        } else if (!overdue) {
          return false;
        }
      }
      if (rate.per_s > 0) (*speeds)[job.id] = rate.per_s;
    }
    return !speeds->empty();
  }

  void profile(std::uint64_t now, const std::vector<ComputeJobInput>& jobs) {
    // A job's first kProfileWarmupNs are its set-up (allocations, copies
    // back, a framework's autotuning), whose synchronisations would count
    // as steps: its solo speed is measured from after them. Measured from
    // its start, a GPT-2 stand-in's came out 12% above its steady speed,
    // and the loop cut to its floor and re-profiled a second later.
    for (const ComputeJobInput& job : jobs) {
      const Track& track = tracks_[job.id];
      if (job.qos == kQosProduction && track.first_progress_ns != 0 &&
          now < track.first_progress_ns + kProfileWarmupNs) {
        change_ns_ = now;
        warming_ = true;
        return;
      }
    }
    warming_ = false;
    std::map<std::uint64_t, double> speeds;
    if (!measure(now, jobs, t_.min_eval_ns, static_cast<std::uint64_t>(t_.profile_iterations),
                 &speeds)) {
      return;
    }
    for (const auto& [id, speed] : speeds) {
      tracks_[id].solo = speed;
      tracks_[id].fast = -1;
    }
    enter(Phase::kSlowStart, now);
  }

  void evaluate(std::uint64_t now, const std::vector<ComputeJobInput>& jobs) {
    std::map<std::uint64_t, double> speeds;
    if (!measure(now, jobs, eval_ns(jobs), 0, &speeds)) return;
    double slowdown = 0;
    for (const auto& [id, speed] : speeds) {
      Track& track = tracks_[id];
      if (track.solo <= 0) {
        track.solo = speed;
      } else if (speed > track.solo * (1 + t_.slowdown_target)) {
        // Faster than the estimate allows: raised on the second such
        // measurement in a row, to the lesser of the two (one is noise).
        if (track.fast > 0) {
          track.solo = std::min(track.fast, speed);
          track.fast = -1;
        } else {
          track.fast = speed;
        }
      } else {
        track.fast = -1;
      }
      slowdown = std::max(slowdown, 1 - speed / track.solo);
    }
    double target = t_.slowdown_target;
    bool good = slowdown <= target;
    // A good measurement raises the level only if the opportunistic jobs
    // used it (TCP's rule for a window that was not full): one still in
    // its start-up pauses says nothing about what it will cost production
    // once it runs.
    bool used = opportunistic_used(jobs);
    if (phase_ == Phase::kSlowStart) {
      if (good && used) {
        harvest_ = std::min(1.0, harvest_ * 2);
      } else if (good) {
        // Unused: measure again at this level.
      } else {
        harvest_ = std::max(t_.harvest_min, harvest_ / 2);
        phase_ = Phase::kAvoid;
        step_ = std::max(harvest_ / 10, kMinStep);
        goods_ = 0;
      }
    } else if (good && !used) {
      // Unused: neither a step up nor a sign of harm.
    } else if (good) {
      harvest_ = std::min(1.0, harvest_ + step_);
      // Good steps in a row: the level was cut by noise, not by harm
      // (with the yield in force, overlap costs production little), so
      // the step grows to find the level again within about a second.
      if (++goods_ % 2 == 0) step_ = std::min(step_ * 2, kMaxStep);
    } else {
      goods_ = 0;
      step_ = std::max(harvest_ / 10, kMinStep);
      harvest_ = std::max(t_.harvest_min, harvest_ * (slowdown > 4 * target ? 0.35 : 0.7));
    }
    // Over the target with the opportunistic jobs at the floor: the
    // production job is slower for another reason (its own phase, or the
    // host), and its solo estimate is stale.
    stale_ = (slowdown > target && harvest_ <= t_.harvest_min * 1.01) ? stale_ + 1 : 0;
    change_ns_ = now;
    if (stale_ >= 3) {  // slower than "solo" with nobody else running: re-measure
      for (const ComputeJobInput& job : jobs) {
        if (job.qos == kQosProduction) tracks_[job.id].solo = -1;
      }
      enter(Phase::kProfile, now);
    }
  }

  // Whether the device's opportunistic jobs used the level over the
  // measurement just made: their GPU time at least half of what the level
  // allows them (harvest times the measurement's span). Where none has
  // ever reported GPU time (its launches untracked: no events), launches
  // since the measurement began count as use, as before this rule.
  bool opportunistic_used(const std::vector<ComputeJobInput>& jobs) const {
    std::uint64_t since = change_ns_ + t_.settle_ns;
    std::uint64_t busy = 0, launches = 0, span = 0;
    bool ever_timed = false;
    for (const ComputeJobInput& job : jobs) {
      if (job.qos != kQosOpportunistic) continue;
      const Track& track = tracks_.at(job.id);
      const Sample& first = track.from(since);
      const Sample& last = track.samples.back();
      if (last.busy > 0) ever_timed = true;
      busy += last.busy - first.busy;
      launches += last.launches - first.launches;
      span = std::max(span, last.now - first.now);
    }
    if (!ever_timed) return launches > 0;
    if (span == 0) return false;
    return static_cast<double>(busy) >= kUsedOfLevel * harvest_ * static_cast<double>(span);
  }

  // The harvest's part for one opportunistic job, by weight among those
  // of its GPU.
  double allowed_share(const ComputeJobInput& job, const std::vector<ComputeJobInput>& jobs) const {
    double total = 0;
    for (const ComputeJobInput& other : jobs) {
      if (other.qos == kQosOpportunistic && other.share_group == job.share_group) {
        total += std::max(other.weight, 1e-6);
      }
    }
    return harvest_ * std::max(job.weight, 1e-6) / std::max(total, 1e-6);
  }

  std::vector<ComputeJobOutput> outputs(std::uint64_t now,
                                        const std::vector<ComputeJobInput>& jobs) {
    std::vector<ComputeJobOutput> out;
    for (const ComputeJobInput& job : jobs) {
      Track& track = tracks_[job.id];
      ComputeJobOutput o;
      o.id = job.id;
      measure_output(track, now, &o);
      if (job.qos == kQosProduction) {
        o.solo_speed_per_s = track.solo;
        if (track.solo > 0 && o.speed_per_s >= 0) o.slowdown = 1 - o.speed_per_s / track.solo;
      } else {
        o.limits = opportunistic_limits(job, jobs);
      }
      // The user's static cap holds too: the tighter of the two.
      if (job.compute_cap_ppm < o.limits.compute_cap_ppm)
        o.limits.compute_cap_ppm = job.compute_cap_ppm;
      out.push_back(o);
    }
    return out;
  }

  ComputeLimits opportunistic_limits(const ComputeJobInput& job,
                                     const std::vector<ComputeJobInput>& jobs) const {
    ComputeLimits limits;
    if (phase_ == Phase::kFree) return limits;
    if (phase_ == Phase::kProfile && warming_) {
      // Production's set-up, not measured: its gaps only (the yield), with
      // the least room beside it. Held outright here too, the opportunistic
      // job lost 0.5 s more per production start: a tenth of what
      // bench/share's opportunistic-first scenarios measure it over.
      limits.compute_cap_ppm = static_cast<std::uint64_t>(t_.harvest_min * 1e6);
      return limits;
    }
    if (phase_ == Phase::kProfile) {
      // Held outright, so that the solo speed is the job's alone. (Held to
      // its gaps instead, the solo figure took in what the gaps' work
      // costs it, and the loop no longer saw it: GPT-2's production at
      // 0.94-0.95 of its true solo speed on a loaded simulator.)
      limits.launch_budget = 0;
      limits.launch_window_ns = t_.window_ns;
      limits.max_queued = 1;
      return limits;
    }
    limits.compute_cap_ppm =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(allowed_share(job, jobs) * 1e6));
    return limits;
  }

  ComputeTuning t_;
  std::map<std::uint64_t, Track> tracks_;
  std::set<std::uint64_t> opportunistic_;  // the opportunistic jobs at the last tick
  Phase phase_ = Phase::kFree;
  std::uint64_t change_ns_ = 0;
  double harvest_ = 1.0;
  bool warming_ = false;  // profiling, but a production job is still in its set-up
  double step_ = 0;
  int goods_ = 0;  // good steps in a row, in avoid
  int stale_ = 0;
};

}  // namespace

std::unique_ptr<DeviceController> make_tgs_controller(const ComputeTuning& tuning);

struct ProgressMeter::Tracks {
  std::map<std::uint64_t, Track> by_id;
};

ProgressMeter::ProgressMeter() : tracks_(std::make_unique<Tracks>()) {}
ProgressMeter::~ProgressMeter() = default;

void ProgressMeter::measure(std::uint64_t now, const std::vector<ComputeJobInput>& jobs,
                            std::vector<ComputeJobOutput>* outputs) {
  std::map<std::uint64_t, Track> kept;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const ComputeJobInput& job = jobs[i];
    Track& track = kept[job.id];
    if (auto old = tracks_->by_id.find(job.id); old != tracks_->by_id.end()) {
      track = std::move(old->second);
    }
    track.add({now, job.launches, job.iterations, job.last_iteration_ns, job.gpu_busy_ns});
    if (i < outputs->size()) measure_output(track, now, &(*outputs)[i]);
  }
  tracks_->by_id = std::move(kept);
}

std::optional<ComputePolicy> parse_compute_policy(std::string_view text) {
  if (text == "none") return ComputePolicy::kNone;
  if (text == "gpushare") return ComputePolicy::kGpushare;
  if (text == "tgs") return ComputePolicy::kTgs;
  return std::nullopt;
}

const char* compute_policy_name(ComputePolicy policy) {
  switch (policy) {
    case ComputePolicy::kNone:
      return "none";
    case ComputePolicy::kGpushare:
      return "gpushare";
    case ComputePolicy::kTgs:
      return "tgs";
  }
  return "none";
}

namespace {

class UncontrolledController : public DeviceController {
 public:
  std::vector<ComputeJobOutput> tick(std::uint64_t now,
                                     const std::vector<ComputeJobInput>& jobs) override {
    std::vector<ComputeJobOutput> out;
    for (const ComputeJobInput& job : jobs) {
      ComputeJobOutput o;
      o.id = job.id;
      o.limits.compute_cap_ppm = job.compute_cap_ppm;
      out.push_back(o);
    }
    meter_.measure(now, jobs, &out);
    return out;
  }
  ComputeDeviceStatus status() const override { return {"none", 1.0}; }

 private:
  ProgressMeter meter_;
};

}  // namespace

std::unique_ptr<DeviceController> make_device_controller(ComputePolicy policy,
                                                         const ComputeTuning& tuning) {
  switch (policy) {
    case ComputePolicy::kGpushare:
      return std::make_unique<GpushareController>(tuning);
    case ComputePolicy::kTgs:
      return make_tgs_controller(tuning);
    case ComputePolicy::kNone:
      break;
  }
  return std::make_unique<UncontrolledController>();
}

}  // namespace gpushare::coord::server
