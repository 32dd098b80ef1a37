#include "interpose/compute/throttle_logic.h"

namespace gpushare::interpose {
namespace {

double min_double(double a, double b) { return a < b ? a : b; }

std::uint64_t clamp_sleep(double ns) {
  if (!(ns > 0)) return 1000;  // a microsecond: the token is about to arrive
  if (ns > static_cast<double>(kMaxSleepNs)) return kMaxSleepNs;
  std::uint64_t whole = static_cast<std::uint64_t>(ns);
  return whole < 1000 ? 1000 : whole;
}

// Launch tokens: budget per window, the bucket as large as one budget (at
// least one launch, so that a budget below one per window still passes).
void refill_launches(ThrottleState* s, const ThrottleLimits& limits, std::uint64_t now) {
  double size = static_cast<double>(limits.launch_budget);  // 0, or at least one launch
  if (s->launch_refill_ns == 0) {
    s->launch_tokens = size;
  } else if (now > s->launch_refill_ns && limits.launch_window_ns > 0) {
    double rate =
        static_cast<double>(limits.launch_budget) / static_cast<double>(limits.launch_window_ns);
    s->launch_tokens += rate * static_cast<double>(now - s->launch_refill_ns);
  }
  s->launch_tokens = min_double(s->launch_tokens, size);
  s->launch_refill_ns = now;
}

void refill_time(ThrottleState* s, const ThrottleLimits& limits, std::uint64_t now) {
  double rate = static_cast<double>(limits.compute_cap_ppm) / 1e6;
  double size = rate * static_cast<double>(kCapWindowNs);
  if (s->time_refill_ns == 0) {
    s->time_tokens_ns = 0;  // empty at first: no burst beyond the cap when a job starts
  } else if (now > s->time_refill_ns) {
    s->time_tokens_ns += rate * static_cast<double>(now - s->time_refill_ns);
  }
  s->time_tokens_ns = min_double(s->time_tokens_ns, size);
  s->time_refill_ns = now;
}

}  // namespace

std::uint64_t queue_bound(const ThrottleLimits& limits) {
  std::uint64_t bound = limits.max_queued;
  if (limits.compute_cap_ppm != kThrottleNoLimit && bound > kCapQueue) bound = kCapQueue;
  if (bound == 0) bound = 1;  // nothing queued at all would stop the job for good
  return bound;
}

ThrottleDecision throttle_decide(ThrottleState* s, const ThrottleLimits& limits,
                                 std::uint64_t now) {
  ThrottleDecision decision;
  bool budgeted = limits.launch_budget != kThrottleNoLimit;
  // Under a yield mask the cap scales the bursts' grants instead
  // (throttle.cc): no bucket of GPU time.
  bool capped = limits.compute_cap_ppm != kThrottleNoLimit && limits.compute_cap_ppm > 0 &&
                limits.yield_mask == 0;
  if (budgeted) {
    refill_launches(s, limits, now);
  } else {
    s->launch_refill_ns = 0;
  }
  if (capped) {
    refill_time(s, limits, now);
  } else if (limits.compute_cap_ppm == kThrottleNoLimit || limits.compute_cap_ppm == 0) {
    s->time_refill_ns = 0;  // no cap: a later one starts empty (a yield keeps its bucket)
  }

  std::uint64_t bound = queue_bound(limits);
  if (bound != kThrottleNoLimit && s->queued >= bound) {
    decision.wait = ThrottleWait::kOldest;
    return decision;
  }
  if (capped && s->time_tokens_ns <= 0) {
    if (s->queued > 0) {  // learn what the queued work cost before sleeping
      decision.wait = ThrottleWait::kOldest;
      return decision;
    }
    double rate = static_cast<double>(limits.compute_cap_ppm) / 1e6;
    decision.wait = ThrottleWait::kSleep;
    decision.sleep_ns = clamp_sleep(-s->time_tokens_ns / rate);
    return decision;
  }
  if (budgeted && s->launch_tokens < 1) {
    decision.wait = ThrottleWait::kSleep;
    if (limits.launch_budget == 0 || limits.launch_window_ns == 0) {
      decision.sleep_ns = kMaxSleepNs;
    } else {
      double rate =
          static_cast<double>(limits.launch_budget) / static_cast<double>(limits.launch_window_ns);
      decision.sleep_ns = clamp_sleep((1 - s->launch_tokens) / rate);
    }
    return decision;
  }
  return decision;
}

std::uint64_t cap_sleep_ns(ThrottleState* s, const ThrottleLimits& limits, std::uint64_t now) {
  if (limits.compute_cap_ppm == kThrottleNoLimit || limits.compute_cap_ppm == 0) return 0;
  refill_time(s, limits, now);
  if (s->time_tokens_ns > 0) return 0;
  double rate = static_cast<double>(limits.compute_cap_ppm) / 1e6;
  return clamp_sleep(-s->time_tokens_ns / rate);
}

void throttle_launched(ThrottleState* s, const ThrottleLimits& limits, bool tracked) {
  if (limits.launch_budget != kThrottleNoLimit) s->launch_tokens -= 1;
  if (tracked) ++s->queued;
}

void throttle_finished(ThrottleState* s, std::uint64_t gpu_ns) {
  if (s->queued > 0) --s->queued;
  if (s->time_refill_ns != 0) s->time_tokens_ns -= static_cast<double>(gpu_ns);
}

void throttle_reset(ThrottleState* s) {
  s->launch_tokens = 0;
  s->launch_refill_ns = 0;
  s->time_tokens_ns = 0;
  s->time_refill_ns = 0;
}

double burst_cost(const BurstState& s) { return s.launch_ns > 0 ? s.launch_ns : kInitialLaunchNs; }

std::uint64_t burst_room(const BurstState& s, std::uint64_t grant_ns) {
  double cost = burst_cost(s);
  double queued = static_cast<double>(s.issued - s.done) * cost;
  double left = static_cast<double>(grant_ns) - queued;
  if (left < cost) return 0;
  return static_cast<std::uint64_t>(left / cost);
}

bool burst_forced(const BurstState& s, std::uint64_t grant_ns, bool in_gap) {
  return in_gap && grant_ns > 0 && s.issued == s.done && s.busy_since_launch &&
         burst_room(s, grant_ns) == 0;
}

std::uint64_t burst_admits(const BurstState& s, std::uint64_t grant_ns, bool in_gap) {
  std::uint64_t room = burst_room(s, grant_ns);
  return room > 0 ? room : (burst_forced(s, grant_ns, in_gap) ? 1 : 0);
}

bool forced_launch_paced(ForcedBucket* b, double level, std::uint64_t now, double cost_ns) {
  if (b->refill_ns != 0 && now > b->refill_ns) {
    b->tokens_ns += level * static_cast<double>(now - b->refill_ns);
  }
  b->tokens_ns = min_double(b->tokens_ns, kForcedBucketMaxNs);
  if (b->refill_ns == 0 || now > b->refill_ns) b->refill_ns = now;
  if (b->tokens_ns < 0) return false;
  b->tokens_ns -= cost_ns;
  return true;
}

std::uint64_t burst_wait_target(const BurstState& s, std::uint64_t grant_ns) {
  std::uint64_t keep = static_cast<std::uint64_t>(static_cast<double>(grant_ns) / 2 / burst_cost(s));
  return s.issued > keep ? s.issued - keep : s.done;
}

std::uint64_t burst_cover_ns(const BurstState& s) {
  double each = min_double(burst_cost(s), kInitialLaunchNs);
  return static_cast<std::uint64_t>(static_cast<double>(s.issued - s.done) * each);
}

bool burst_breaks(const BurstState& s, std::uint64_t now) {
  if (s.last_launch_ns == 0 || now <= s.last_launch_ns) return false;
  std::uint64_t cover = burst_cover_ns(s);
  return now - s.last_launch_ns > (cover > kBurstBreakMinNs ? cover : kBurstBreakMinNs);
}

void burst_launched(BurstState* s, std::uint64_t now) {
  s->last_launch_ns = now;
  s->busy_since_launch = false;
}

bool burst_age(BurstState* s, std::uint64_t now) {
  if (s->launch_ns <= kInitialLaunchNs || s->last_launch_ns == 0) return false;
  std::uint64_t since = s->aged_ns > s->last_launch_ns ? s->aged_ns : s->last_launch_ns;
  if (now < since + kBurstAgeNs) return false;
  std::uint64_t halvings = (now - since) / kBurstAgeNs;
  for (std::uint64_t i = 0; i < halvings && s->launch_ns > kInitialLaunchNs; ++i) s->launch_ns /= 2;
  if (s->launch_ns < kInitialLaunchNs) s->launch_ns = kInitialLaunchNs;
  s->aged_ns = since + halvings * kBurstAgeNs;
  s->learn_ns = s->launch_ns * s->learn_launches;  // the mean's sums follow
  return true;
}

void burst_learn(BurstState* s, std::uint64_t launches, std::uint64_t gpu_ns, bool clean) {
  if (launches == 0 || gpu_ns == 0) return;
  double n = static_cast<double>(launches);
  double ns = static_cast<double>(gpu_ns);
  if (clean) {
    // The first clean stretch is the first measure: what came before it
    // (the assumed kInitialLaunchNs and stretches capped at twice it) says
    // only what was assumed. Blended in, it kept a 2-ms kernel's figure at
    // 0.6 ms, which the trust below then held for 1024 launches (3.5 s of
    // 8-kernel bursts queued into 8-ms gaps: a gang of 4 ranks at 0.80 of
    // its speed alone).
    if (s->clean_issued == 0) {
      s->learn_ns = 0;
      s->learn_launches = 0;
      s->launch_ns = 0;
    }
    s->clean_issued = s->issued > 0 ? s->issued : 1;
  } else {
    // An upper bound: above the figure it says nothing while clean
    // stretches measure it, and otherwise counts at most twice the figure.
    double cost = burst_cost(*s);
    bool trusted = s->clean_issued != 0 && s->issued >= s->clean_issued &&
                   s->issued - s->clean_issued < kCleanTrustLaunches;
    if (ns > cost * n && trusted) return;
    ns = min_double(ns, 2 * cost * n);
  }
  // A figure set without stretches (ageing halves the sums with it) is
  // one launch's worth of history.
  if (s->learn_launches <= 0 && s->launch_ns > 0) {
    s->learn_ns = s->launch_ns;
    s->learn_launches = 1;
  }
  // A mean over recent stretches: per-stretch figures of a job with
  // heterogeneous kernels spread 4-10x around it (ResNet-50: 13-51 us per
  // launch over 32-launch stretches, 36 on average), so following the
  // highest at once, as this did, kept the figure two to six times the
  // mean and admitted that much less beside production. The window is
  // bounded in launches too, so a job whose kernels turn long reaches the
  // new cost within two or three stretches (their GPU time dominates).
  s->learn_ns += ns;
  s->learn_launches += n;
  double scale = 1;
  if (s->learn_ns > kLearnWindowNs) scale = kLearnWindowNs / s->learn_ns;
  if (s->learn_launches * scale > kLearnWindowLaunches) {
    scale = kLearnWindowLaunches / s->learn_launches;
  }
  s->learn_ns *= scale;
  s->learn_launches *= scale;
  s->launch_ns = s->learn_ns / s->learn_launches;
}

}  // namespace gpushare::interpose
