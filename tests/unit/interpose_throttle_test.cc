// The compute actuator's decisions (throttle_logic.h), without a driver.
#include <catch2/catch.hpp>

#include "interpose/compute/throttle_logic.h"

using namespace gpushare::interpose;

namespace {
constexpr std::uint64_t kMs = 1'000'000;

// Launches as fast as the decisions allow over `duration`, sleeping when
// told to and finishing each tracked launch `gpu_ns` after it started.
int launches_in(ThrottleLimits limits, std::uint64_t duration, std::uint64_t gpu_ns = 0) {
  ThrottleState state;
  std::uint64_t now = 1;
  int count = 0;
  while (now < duration) {
    ThrottleDecision d = throttle_decide(&state, limits, now);
    if (d.wait == ThrottleWait::kSleep) {
      CHECK(d.sleep_ns <= kMaxSleepNs);
      now += d.sleep_ns;
    } else if (d.wait == ThrottleWait::kOldest) {
      now += gpu_ns;
      throttle_finished(&state, gpu_ns);
    } else {
      throttle_launched(&state, limits, gpu_ns > 0);
      ++count;
      now += 1000;
    }
  }
  return count;
}
}  // namespace

TEST_CASE("throttle passes everything without limits") {
  ThrottleLimits none;
  CHECK_FALSE(none.any());
  ThrottleState state;
  CHECK(throttle_decide(&state, none, 5).wait == ThrottleWait::kNone);
}

TEST_CASE("throttle launch budget holds its rate") {
  ThrottleLimits limits;
  limits.launch_budget = 10;
  limits.launch_window_ns = 20 * kMs;
  int n = launches_in(limits, 1000 * kMs);  // 500 per second
  CHECK(n >= 495);
  CHECK(n <= 512);  // the rate plus one initial burst
}

TEST_CASE("throttle budget of zero holds every launch and a cut is immediate") {
  ThrottleLimits limits;
  limits.launch_budget = 1000;
  limits.launch_window_ns = 20 * kMs;
  ThrottleState state;
  CHECK(throttle_decide(&state, limits, 1).wait == ThrottleWait::kNone);
  limits.launch_budget = 0;
  ThrottleDecision d = throttle_decide(&state, limits, 2);
  CHECK(d.wait == ThrottleWait::kSleep);
  CHECK(d.sleep_ns == kMaxSleepNs);
  limits.launch_budget = 1;  // a cut from 1000 tokens to 1 launch
  throttle_launched(&state, limits, false);
  CHECK(throttle_decide(&state, limits, 3).wait == ThrottleWait::kSleep);
}

TEST_CASE("throttle queued bound waits for the oldest launch") {
  ThrottleLimits limits;
  limits.max_queued = 2;
  ThrottleState state;
  throttle_launched(&state, limits, true);
  throttle_launched(&state, limits, true);
  CHECK(throttle_decide(&state, limits, 10).wait == ThrottleWait::kOldest);
  throttle_finished(&state, 0);
  CHECK(throttle_decide(&state, limits, 11).wait == ThrottleWait::kNone);
  limits.max_queued = 0;  // never "nothing at all": one may be queued
  CHECK(queue_bound(limits) == 1);
}

TEST_CASE("throttle compute cap holds the share of GPU time") {
  ThrottleLimits limits;
  limits.compute_cap_ppm = 300000;  // 30%
  std::uint64_t gpu = 5 * kMs;
  int n = launches_in(limits, 10'000 * kMs, gpu);
  double share = static_cast<double>(n) * static_cast<double>(gpu) / (10'000.0 * kMs);
  CHECK(share == Approx(0.30).margin(0.02));
  CHECK(queue_bound(limits) == kCapQueue);
}

TEST_CASE("a yield mask gates launches without a bound of one launch in flight") {
  ThrottleLimits limits;
  CHECK_FALSE(limits.any());
  limits.yield_mask = 1;
  CHECK(limits.any());
  CHECK(queue_bound(limits) == kThrottleNoLimit);  // bursts bound GPU time instead
  ThrottleState state;
  CHECK(throttle_decide(&state, limits, 1).wait == ThrottleWait::kNone);
  throttle_launched(&state, limits, false);
  CHECK(throttle_decide(&state, limits, 2).wait == ThrottleWait::kNone);
}

TEST_CASE("a burst queues GPU time up to its grant, learned per launch") {
  BurstState burst;
  constexpr std::uint64_t kMs = 1'000'000;
  // Unknown cost: a launch is assumed to take 200 us, so 8 ms admit 40.
  CHECK(burst_room(burst, 8 * kMs) == 40);
  CHECK(burst_room(burst, kMs / 10) == 0);
  burst_learn(&burst, 100, 1 * kMs);  // 10 us each
  CHECK(burst.launch_ns == Approx(10'000));
  CHECK(burst_room(burst, 8 * kMs) == 800);  // hundreds of short kernels in one grant
  burst.issued = 600;
  burst.done = 100;  // 500 queued: 5 ms of the 8
  CHECK(burst_room(burst, 8 * kMs) == 300);
  // Full: wait until half the grant is free (400 left queued), in one wait.
  burst.issued = 900;
  CHECK(burst_room(burst, 8 * kMs) == 0);
  CHECK(burst_wait_target(burst, 8 * kMs) == 500);
  // A costlier stretch joins the mean: 2 ms over 110 launches.
  burst_learn(&burst, 10, 1 * kMs);
  CHECK(burst.launch_ns == Approx(2.0 * kMs / 110));
}

TEST_CASE("the learned cost is a mean of heterogeneous stretches, not their highest") {
  constexpr std::uint64_t kUs = 1'000;
  BurstState burst;
  // A ResNet-50 step beside nobody: 32-launch stretches of 13-51 us per
  // launch, and single launches of a long convolution, 36 us on average.
  const std::uint64_t each_us[] = {13, 51, 20, 45, 27, 60};
  for (int round = 0; round < 20; ++round) {
    for (std::uint64_t us : each_us) burst_learn(&burst, 32, 32 * us * kUs);
    burst_learn(&burst, 1, 300 * kUs);
  }
  double mean = (32.0 * (13 + 51 + 20 + 45 + 27 + 60) + 300) / (32.0 * 6 + 1) * kUs;
  CHECK(burst.launch_ns > 0.7 * mean);
  CHECK(burst.launch_ns < 1.5 * mean);
  // A time slice of production's work inside a stretch (one launch that
  // took 1.1 ms) counts at most twice the figure: it barely moves it.
  double before = burst.launch_ns;
  burst_learn(&burst, 1, 1'100 * kUs, false);
  CHECK(burst.launch_ns < 1.02 * before);
  // A job whose kernels turn long (1.4 ms) reaches the new cost within
  // three clean 32-launch stretches.
  for (int i = 0; i < 3; ++i) burst_learn(&burst, 32, 32 * 1'400 * kUs);
  CHECK(burst.launch_ns > 0.9 * 1'400 * kUs);
}

TEST_CASE("under a yield mask the cap's bucket refills between decisions") {
  ThrottleLimits limits;
  limits.yield_mask = 1;
  limits.compute_cap_ppm = 500'000;
  ThrottleState state;
  constexpr std::uint64_t kMs = 1'000'000;
  CHECK(cap_sleep_ns(&state, limits, 1 * kMs) > 0);  // starts empty
  CHECK(throttle_decide(&state, limits, 2 * kMs).wait == ThrottleWait::kNone);
  // 1 ms later at half rate: half a millisecond of GPU time in the bucket,
  // even though a decision came in between.
  CHECK(cap_sleep_ns(&state, limits, 2 * kMs) == 0);
  throttle_finished(&state, 2 * kMs);  // a marker's stretch: 2 ms debited
  CHECK(cap_sleep_ns(&state, limits, 2 * kMs) == kMaxSleepNs);  // 3 ms owed, in 2-ms sleeps
}

TEST_CASE("a host pause longer than the queued work covers starts a new burst") {
  constexpr std::uint64_t kUs = 1'000;
  BurstState burst;
  CHECK_FALSE(burst_breaks(burst, 5 * kUs));  // no launch yet: the first burst starts anyway
  burst.launch_ns = 1400 * kUs;  // learned: long kernels
  burst_launched(&burst, 1'000 * kUs);
  burst.issued = 10;
  burst.done = 0;
  // Ten queued, counted at the assumed 200 us at most (not the learned
  // 1.4 ms): 2 ms covered. Launches 10 us apart stay in the burst; a 1-s
  // pause does not, nor does one just over the cover.
  CHECK(burst_cover_ns(burst) == 2'000 * kUs);
  CHECK_FALSE(burst_breaks(burst, 1'010 * kUs));
  CHECK_FALSE(burst_breaks(burst, 3'000 * kUs));
  CHECK(burst_breaks(burst, 3'001 * kUs));
  CHECK(burst_breaks(burst, 1'001'000 * kUs));
  // Nothing queued: a pause of more than kBurstBreakMinNs breaks, a
  // shorter one (a host-bound job's launch spacing) does not.
  burst.done = 10;
  CHECK_FALSE(burst_breaks(burst, 1'000 * kUs + kBurstBreakMinNs));
  CHECK(burst_breaks(burst, 1'001 * kUs + kBurstBreakMinNs));
}

TEST_CASE("beside recent clean stretches a stretched one only lowers the cost") {
  constexpr std::uint64_t kUs = 1'000;
  BurstState burst;
  burst.issued = 1000;
  burst_learn(&burst, 32, 32 * 28 * kUs);  // in production's gap: 28 us each
  CHECK(burst.launch_ns == Approx(28 * kUs));
  // Beside production's work its time slices stretch ours (85 us a
  // launch): while clean stretches are recent they do not raise it...
  for (int i = 0; i < 20; ++i) {
    burst.issued += 32;
    burst_learn(&burst, 32, 32 * 85 * kUs, false);
  }
  CHECK(burst.launch_ns == Approx(28 * kUs));
  // ...a cheaper one lowers it...
  burst_learn(&burst, 32, 32 * 20 * kUs, false);
  CHECK(burst.launch_ns < 28 * kUs);
  // ...and with no clean stretch for kCleanTrustLaunches they raise it.
  burst.issued += kCleanTrustLaunches;
  double before = burst.launch_ns;
  burst_learn(&burst, 32, 32 * 85 * kUs, false);
  CHECK(burst.launch_ns > before);
}

TEST_CASE("the first clean stretch replaces what was assumed before it") {
  constexpr std::uint64_t kMs = 1'000'000;
  constexpr std::uint64_t kUs = 1'000;
  // An opportunistic job of 2-ms kernels beside a busy production rank (a
  // compute trace of bench/share's gang4-all-bound): its first stretch,
  // 7 launches in 26 ms, is production's time slices as much as its own
  // (an upper bound, counted at twice the assumed 200 us), then one launch
  // alone in production's gap measures 2 ms.
  BurstState burst;
  burst.issued = 7;
  burst_learn(&burst, 7, 26'354 * kUs, false);
  CHECK(burst.launch_ns == Approx(400 * kUs));
  burst.issued = 8;
  burst_learn(&burst, 1, 2'001 * kUs, true);
  // The measure, not a blend with the assumption (0.6 ms before this
  // rule, which the clean stretch's trust then kept for 1024 launches
  // while 8-launch bursts of 28 ms went into 8-ms gaps).
  CHECK(burst.launch_ns == Approx(2'001 * kUs));
  for (int i = 0; i < 100; ++i) {
    burst.issued += 8;
    burst_learn(&burst, 8, 28 * kMs, false);
  }
  CHECK(burst.launch_ns == Approx(2'001 * kUs));
  // Later clean stretches join the mean as before.
  burst_learn(&burst, 1, 1'001 * kUs, true);
  CHECK(burst.launch_ns == Approx(3'002.0 * kUs / 2));
}

TEST_CASE("launches forced into gaps too short for them are paced by the loop's level") {
  constexpr std::uint64_t kMs = 1'000'000;
  // bench/share's busy scenario: production's 9-ms kernels leave 1-ms
  // gaps; the opportunistic job's kernels cost 5 ms beside it. Every gap
  // forced one in before this pacing, whatever the level (production at
  // 0.83 of solo).
  auto forced_in = [&](double level) {
    ForcedBucket bucket;
    int forced = 0;
    for (std::uint64_t t = 1; t <= 1000; t += 10) {  // a gap every 10 ms for 1 s
      if (forced_launch_paced(&bucket, level, t * kMs, 5.0 * kMs)) ++forced;
    }
    return forced;
  };
  CHECK(forced_in(1.0) >= 50);  // the full level: one every other gap (5 ms of each 10)
  CHECK(forced_in(1.0 / 8) <= 26);  // slow start's level: an eighth of the time
  CHECK(forced_in(1.0 / 8) >= 24);
  int floor = forced_in(1.0 / 256);  // the floor: one, never none (no lockout)
  CHECK(floor >= 1);
  CHECK(floor <= 2);
  // The bucket holds at most kForcedBucketMaxNs: a long wait with no gap
  // does not bank a burst of forced launches.
  ForcedBucket bucket;
  CHECK(forced_launch_paced(&bucket, 1.0, 1, 5.0 * kMs));
  int in_a_row = 0;
  while (forced_launch_paced(&bucket, 1.0, 10'000 * kMs, 5.0 * kMs)) ++in_a_row;
  CHECK(in_a_row == 5);  // 20 ms banked: four of 5 ms, then a fifth from zero, below it
}

TEST_CASE("a stretch another context may have run in at most doubles the cost") {
  constexpr std::uint64_t kMs = 1'000'000;
  BurstState burst;
  // Unlearned: a stretch beside production (5 launches in 15 ms, most of
  // it production's) raises the assumed 200 us to 400 us, no more...
  burst_learn(&burst, 5, 15 * kMs, false);
  CHECK(burst.launch_ns == Approx(2 * kInitialLaunchNs));
  // ...and each such stretch at most doubles it...
  burst_learn(&burst, 1, 15 * kMs, false);
  CHECK(burst.launch_ns > 2 * kInitialLaunchNs);
  CHECK(burst.launch_ns <= 4 * kInitialLaunchNs);
  // ...yet a job whose kernels really are long (1.4 ms), seen only beside
  // production, reaches its cost within a few dozen short stretches.
  int stretches = 0;
  while (burst.launch_ns < 1.3 * kMs && stretches < 1000) {
    burst_learn(&burst, 1, 1400 * kMs / 1000, false);
    ++stretches;
  }
  CHECK(stretches <= 30);
  // A cheaper one lowers it.
  double before = burst.launch_ns;
  burst_learn(&burst, 10, kMs / 10, false);
  CHECK(burst.launch_ns < before);
  // A clean stretch is taken in whole: one launch of 20 ms beside 13 short
  // ones in the window makes the mean over a millisecond.
  burst_learn(&burst, 1, 20 * kMs, true);
  CHECK(burst.launch_ns > 1 * kMs);
  // Unlearned, a cheaper stretch than assumed is taken as is.
  BurstState fresh;
  burst_learn(&fresh, 100, 1 * kMs, false);
  CHECK(fresh.launch_ns == Approx(10'000));
}

TEST_CASE("a learned cost halves for every second without a launch") {
  constexpr std::uint64_t kS = 1'000'000'000;
  BurstState burst;
  burst.launch_ns = 100'000'000;  // 100 ms: more than any gap holds
  burst_launched(&burst, 10 * kS);
  CHECK_FALSE(burst_age(&burst, 10 * kS + kS / 2));
  CHECK(burst_age(&burst, 12 * kS + 1));  // two seconds: a quarter
  CHECK(burst.launch_ns == Approx(25'000'000));
  CHECK_FALSE(burst_age(&burst, 12 * kS + 2));  // not twice for the same seconds
  CHECK(burst_age(&burst, 13 * kS + 1));
  CHECK(burst.launch_ns == Approx(12'500'000));
  CHECK(burst_age(&burst, 40 * kS));  // never below what an unknown job is assumed to cost
  CHECK(burst.launch_ns == Approx(kInitialLaunchNs));
  CHECK_FALSE(burst_age(&burst, 50 * kS));
  burst.launch_ns = 10'000;  // a cheap figure is left alone
  CHECK_FALSE(burst_age(&burst, 60 * kS));
  CHECK(burst.launch_ns == Approx(10'000));
}

TEST_CASE("no learned cost keeps a job out of a production gap") {
  constexpr std::uint64_t kMs = 1'000'000;
  BurstState burst;
  // The lockout as it was: a second learned over ten launches, a 15-ms gap.
  burst_learn(&burst, 10, 1000 * kMs);
  CHECK(burst.launch_ns == Approx(100 * kMs));
  CHECK(burst_room(burst, 15 * kMs) == 0);
  // In the gap one launch goes while none of ours is queued...
  CHECK(burst_admits(burst, 15 * kMs, true) == 1);
  // ...but not beside a busy job, not with a grant of 0 (it is due back),
  // and not a second one while the first is queued.
  CHECK(burst_admits(burst, 1 * kMs, false) == 0);
  CHECK(burst_admits(burst, 0, true) == 0);
  burst.issued = 1;
  CHECK(burst_admits(burst, 15 * kMs, true) == 0);
  // Each such launch is measured (1.4 ms, in the gap: clean) and the
  // figure mends as the mean takes it in: within 60 gaps (under 2 s of a
  // 29-ms production period) a gap holds several launches again.
  int gaps = 0;
  while (burst_room(burst, 15 * kMs) < 5 && gaps < 1000) {
    burst.done = burst.issued;
    burst.busy_since_launch = true;  // production ran between the gaps
    CHECK(burst_admits(burst, 15 * kMs, true) >= 1);
    burst_launched(&burst, static_cast<std::uint64_t>(gaps + 1) * 29 * kMs);
    // One per gap: where the figure leaves no room, the rest of this gap
    // admits no second forced launch.
    burst.done = burst.issued;
    if (burst_room(burst, 15 * kMs) == 0) CHECK(burst_admits(burst, 15 * kMs, true) == 0);
    burst_learn(&burst, 1, 1400 * kMs / 1000);
    ++burst.issued;
    ++gaps;
  }
  burst.done = burst.issued;
  CHECK(gaps <= 60);
  CHECK(burst_room(burst, 15 * kMs) >= 5);
}
