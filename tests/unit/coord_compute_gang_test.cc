// Production jobs on several GPUs (gang.h): which processes make a gang,
// which GPUs one controller drives together, and the group's controller
// against a deterministic fake gang whose step waits for its slowest rank.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "coord/server/compute/compute_control.h"
#include "coord/server/compute/gang.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

GangProcess process(std::uint64_t key, std::uint64_t job, bool production,
                    std::vector<std::string> registered, std::vector<std::string> used) {
  GangProcess p;
  p.key = key;
  p.job_id = job;
  p.production = production;
  p.registered = std::move(registered);
  p.used = std::move(used);
  return p;
}

// A gang of ranks, one per GPU, each step `kernel_ms` on its GPU (stretched
// by the GPU share the opportunistic job beside it takes), an all-reduce
// that waits for the slowest rank, and `host_ms` on the host; one
// opportunistic job beside each rank, as fast as its cap lets it.
struct FakeGang {
  int ranks;
  double kernel_ms = 8, host_ms = 8, opp_kernel_ms = 2;
  std::uint64_t now = 0;
  double progress = 0;
  std::uint64_t iterations = 0, last_iteration = 0;
  std::vector<double> opp_launches;
  std::vector<ComputeLimits> opp_limits;

  explicit FakeGang(int n) : ranks(n), opp_launches(n, 0), opp_limits(n) {}

  double opp_gpu(int j) const {
    double rate = 1000.0 / opp_kernel_ms;
    const ComputeLimits& l = opp_limits[j];
    if (l.launch_budget == 0) return 0;
    if (l.compute_cap_ppm != kNoLimit) {
      rate = std::min(rate, static_cast<double>(l.compute_cap_ppm) / 1e6 * 1000.0 / opp_kernel_ms);
    }
    return std::min(1.0, rate * opp_kernel_ms / 1000);
  }
  double period() const {  // the slowest rank's
    double worst = 0;
    for (int j = 0; j < ranks; ++j) worst = std::max(worst, opp_gpu(j));
    return host_ms + kernel_ms * (1 + worst);
  }
  double solo() const { return 1000.0 / (host_ms + kernel_ms); }

  void advance() {
    std::uint64_t dt = 25 * kMs;
    double before = progress;
    progress += 25.0 / period();
    auto whole = static_cast<std::uint64_t>(progress);
    if (whole > iterations) {
      double fraction = (static_cast<double>(whole) - before) / (progress - before);
      last_iteration = now + static_cast<std::uint64_t>(fraction * static_cast<double>(dt));
      iterations = whole;
    }
    for (int j = 0; j < ranks; ++j) opp_launches[j] += opp_gpu(j) * 1000.0 / opp_kernel_ms * 0.025;
    now += dt;
  }

  // The group's inputs: every rank (each sees the gang's steps) and each
  // opportunistic job in its GPU's share group.
  std::vector<ComputeJobInput> inputs() const {
    std::vector<ComputeJobInput> jobs;
    for (int r = 0; r < ranks; ++r) {
      ComputeJobInput p;
      p.id = 1 + static_cast<std::uint64_t>(r);
      p.qos = kQosProduction;
      p.launches = iterations * 2 + 1;
      p.iterations = iterations;
      p.last_iteration_ns = last_iteration;
      jobs.push_back(p);
    }
    for (int j = 0; j < ranks; ++j) {
      ComputeJobInput o;
      o.id = 100 + static_cast<std::uint64_t>(j);
      o.qos = kQosOpportunistic;
      o.launches = static_cast<std::uint64_t>(opp_launches[j]);
      o.share_group = j;
      jobs.push_back(o);
    }
    return jobs;
  }

  std::vector<ComputeJobOutput> run(DeviceController& controller) {
    advance();
    std::vector<ComputeJobOutput> out = controller.tick(now, inputs());
    for (const ComputeJobOutput& o : out) {
      if (o.id >= 100) opp_limits[o.id - 100] = o.limits;
    }
    return out;
  }
};

}  // namespace

TEST_CASE("gang: a production job's processes on two GPUs or more make one gang") {
  std::vector<GangProcess> processes = {
      // torchrun's ranks: each registers every GPU it sees, uses its own.
      process(1, 7, true, {"GPU-a", "GPU-b"}, {"GPU-a"}),
      process(2, 7, true, {"GPU-a", "GPU-b"}, {"GPU-b"}),
      process(3, 7, true, {"GPU-a", "GPU-b"}, {}),  // the launcher: no memory, not a rank
      // A one-GPU production job, an opportunistic job on two GPUs.
      process(4, 8, true, {"GPU-c"}, {"GPU-c"}),
      process(5, 9, false, {"GPU-c", "GPU-d"}, {"GPU-c", "GPU-d"}),
      // A production job of two processes on one GPU: not a gang.
      process(6, 10, true, {"GPU-e"}, {"GPU-e"}),
      process(7, 10, true, {"GPU-e"}, {"GPU-e"}),
  };
  std::vector<Gang> gangs = find_gangs(processes);
  REQUIRE(gangs.size() == 1);
  CHECK(gangs[0].job_id == 7);
  CHECK(gangs[0].ranks == std::vector<std::uint64_t>{1, 2});
  CHECK(gangs[0].gpus == std::vector<std::string>{"GPU-a", "GPU-b"});

  // One process using two GPUs is a gang too (one rank per GPU is usual,
  // not required): its GPUs' steps are one.
  std::vector<Gang> one = find_gangs({process(1, 3, true, {"GPU-a", "GPU-b"}, {"GPU-a"}),
                                      process(2, 3, true, {"GPU-b"}, {"GPU-a", "GPU-b"})});
  REQUIRE(one.size() == 1);
  CHECK(one[0].gpus.size() == 2);
}

TEST_CASE("gang: a gang's GPUs are one control group, other GPUs each their own") {
  SECTION("ranks bound to one GPU each, an opportunistic job beside each") {
    std::vector<GangProcess> processes = {
        process(1, 7, true, {"GPU-b"}, {"GPU-b"}),  process(2, 7, true, {"GPU-a"}, {"GPU-a"}),
        process(3, 8, false, {"GPU-a"}, {"GPU-a"}), process(4, 9, false, {"GPU-b"}, {"GPU-b"}),
        process(5, 10, true, {"GPU-c"}, {"GPU-c"}), process(6, 11, false, {"GPU-c"}, {"GPU-c"}),
    };
    auto groups = control_groups(processes, find_gangs(processes));
    CHECK(groups.at("GPU-a") == "GPU-a+GPU-b");
    CHECK(groups.at("GPU-b") == "GPU-a+GPU-b");
    CHECK(groups.at("GPU-c") == "GPU-c");  // a one-GPU job's GPU: as before
  }
  SECTION("no gang: every GPU alone, even under a process that sees them all") {
    std::vector<GangProcess> processes = {
        process(1, 7, true, {"GPU-a"}, {"GPU-a"}),
        process(2, 8, false, {"GPU-a", "GPU-b"}, {"GPU-a"}),
        process(3, 9, true, {"GPU-b"}, {"GPU-b"}),
    };
    auto groups = control_groups(processes, find_gangs(processes));
    CHECK(groups.at("GPU-a") == "GPU-a");
    CHECK(groups.at("GPU-b") == "GPU-b");
  }
  SECTION("a process registered beside a gang and on another GPU joins that GPU in") {
    std::vector<GangProcess> processes = {
        process(1, 7, true, {"GPU-a"}, {"GPU-a"}),
        process(2, 7, true, {"GPU-b"}, {"GPU-b"}),
        process(3, 8, false, {"GPU-b", "GPU-c"}, {"GPU-c"}),
        process(4, 9, false, {"GPU-d"}, {"GPU-d"}),
    };
    auto groups = control_groups(processes, find_gangs(processes));
    CHECK(groups.at("GPU-a") == "GPU-a+GPU-b+GPU-c");
    CHECK(groups.at("GPU-c") == "GPU-a+GPU-b+GPU-c");
    CHECK(groups.at("GPU-d") == "GPU-d");
  }
  SECTION("two gangs that share a GPU are one group") {
    std::vector<GangProcess> processes = {
        process(1, 7, true, {"GPU-a"}, {"GPU-a"}), process(2, 7, true, {"GPU-b"}, {"GPU-b"}),
        process(3, 8, true, {"GPU-b"}, {"GPU-b"}), process(4, 8, true, {"GPU-c"}, {"GPU-c"}),
        process(5, 9, true, {"GPU-d"}, {"GPU-d"}), process(6, 9, true, {"GPU-e"}, {"GPU-e"}),
    };
    auto groups = control_groups(processes, find_gangs(processes));
    CHECK(groups.at("GPU-a") == "GPU-a+GPU-b+GPU-c");
    CHECK(groups.at("GPU-c") == "GPU-a+GPU-b+GPU-c");
    CHECK(groups.at("GPU-d") == "GPU-d+GPU-e");
  }
}

TEST_CASE("gang: one controller holds every GPU's opportunistic job while it profiles the gang") {
  FakeGang gang(4);
  auto controller = make_device_controller(ComputePolicy::kGpushare);
  bool held_together = true, profiled = false, measured = false;
  for (int tick = 0; tick < 60; ++tick) {
    gang.run(*controller);
    if (controller->status().phase != "profile") continue;
    profiled = true;
    // The gang's set-up (its first 500 ms) is not measured: the jobs keep
    // their gaps meanwhile, all alike; after it, all are held.
    bool set_up = tick * 25 < 550;
    if (!set_up) measured = true;
    for (int j = 0; j < 4; ++j) {
      held_together = held_together &&
                      (set_up ? gang.opp_limits[j].compute_cap_ppm == gang.opp_limits[0].compute_cap_ppm
                              : gang.opp_limits[j].launch_budget == 0);
    }
  }
  CHECK(profiled);
  CHECK(measured);
  CHECK(held_together);
  // The solo speed it learnt is the gang's alone, not a speed slowed by
  // another GPU's opportunistic job.
  std::vector<ComputeJobOutput> out = gang.run(*controller);
  CHECK(out[0].solo_speed_per_s == Approx(gang.solo()).epsilon(0.03));
}

TEST_CASE("gang: the level is each GPU's, not split across the group's GPUs") {
  FakeGang gang(2);
  auto controller = make_device_controller(ComputePolicy::kGpushare);
  for (int tick = 0; tick < 400; ++tick) gang.run(*controller);
  REQUIRE(gang.opp_limits[0].compute_cap_ppm != kNoLimit);
  CHECK(gang.opp_limits[0].compute_cap_ppm == gang.opp_limits[1].compute_cap_ppm);
  // Each job gets the whole level on its own GPU: harvest * 1e6.
  double harvest = controller->status().harvest;
  CHECK(static_cast<double>(gang.opp_limits[0].compute_cap_ppm) ==
        Approx(harvest * 1e6).epsilon(0.01));
  // And the gang keeps its speed within the target (and the fake's noise).
  CHECK(1 - (1000.0 / gang.period()) / gang.solo() <= 0.05);
}

// Which rank the others wait for: two ranks meet at one all-reduce per
// 25-ms step; rank 0 computes 20 ms, rank 1 10 ms, the transfer takes 1 ms.
// Rank 1's collective spins 10 ms waiting, then transfers: 11 ms; rank 0's
// is the transfer alone.
TEST_CASE("gang: gang_wait names the rank with the least collective time") {
  std::vector<RankSpan> ranks = {{1.0, 40}, {11.0, 40}};
  GangWait w = gang_wait(ranks);
  CHECK(w.waited_for == 0);
  CHECK(w.wait_ms[0] == Approx(0));
  CHECK(w.wait_ms[1] == Approx(10));
  CHECK(w.wait_share[1] == Approx(0.4));  // 10 ms of every 25
  CHECK_FALSE(w.waits[0]);
  CHECK(w.waits[1]);
  // kWaitHarvest of the wait: 0.2 of the GPU beside rank 1, none beside rank 0.
  CHECK(wait_harvest_ppm(w.wait_share[1]) == 200'000);
  CHECK(wait_harvest_ppm(w.wait_share[0]) == 0);
  // With its gaps (4 ms of 25: 0.16), which the job beside it had already.
  CHECK(wait_harvest_ppm(w.wait_share[1], 0.16) == 360'000);
  CHECK(wait_harvest_ppm(w.wait_share[0], 0.16) == 0);  // no wait: the usual limits
  CHECK(wait_harvest_ppm(1.0, 0.9) == 1'000'000);
  // The loop's level bounds the wait's part, not the gaps': a level of
  // 0.05 leaves 0.16 + 0.05.
  CHECK(wait_harvest_ppm(w.wait_share[1], 0.16, 50'000) == 210'000);
  // Two jobs beside the rank: each half of the gaps and of the wait's part.
  CHECK(wait_harvest_ppm(w.wait_share[1], 0.16, 1'000'000, 2) == 180'000);
  CHECK(wait_harvest_ppm(w.wait_share[1], 0.16, 1'000'000, 0) == 0);
}

TEST_CASE("gang: gang_wait names nobody for balanced ranks, noise, or an unmeasured rank") {
  // Balanced: spans within noise of each other.
  GangWait balanced = gang_wait({{1.00, 40}, {1.05, 40}, {1.02, 40}});
  CHECK(balanced.waited_for == -1);
  CHECK(std::none_of(balanced.waits.begin(), balanced.waits.end(), [](bool b) { return b; }));
  // A wait of 0.5 ms in a 1-s step is above kMinWaitMs but no share to use.
  GangWait slow = gang_wait({{1.0, 1}, {1.5, 1}});
  CHECK(slow.waited_for == -1);
  // A rank not measured yet: nothing is known.
  GangWait unknown = gang_wait({{1.0, 40}, {-1, 0}});
  CHECK(unknown.waited_for == -1);
  CHECK(unknown.wait_ms[0] == -1);
  CHECK(gang_wait({{1.0, 40}}).waited_for == -1);  // one rank is no gang
}

TEST_CASE("gang: gang_wait with four ranks: two slow ones do not wait, the fast ones do") {
  GangWait w = gang_wait({{6.0, 40}, {1.0, 40}, {1.1, 40}, {8.0, 40}});
  CHECK(w.waited_for == 1);
  CHECK_FALSE(w.waits[1]);
  CHECK_FALSE(w.waits[2]);  // 0.1 ms: as slow as the slowest, within noise
  CHECK(w.waits[0]);
  CHECK(w.waits[3]);
  CHECK(w.wait_share[3] == Approx(0.28));
}

TEST_CASE("gang: SpanMeter measures each window's mean span and forgets a stopped rank") {
  SpanMeter meter;
  meter.sample(0, 0, 0);
  CHECK(meter.span().span_ms < 0);
  // 20 collectives of 11 ms each over 500 ms.
  meter.sample(250 * kMs, 110 * kMs, 10);
  CHECK(meter.span().span_ms < 0);  // the window is not over
  meter.sample(500 * kMs, 220 * kMs, 20);
  CHECK(meter.span().span_ms == Approx(11));
  CHECK(meter.span().collectives_per_s == Approx(40));
  // The next window: 20 more of 1 ms each.
  meter.sample(1000 * kMs, 240 * kMs, 40);
  CHECK(meter.span().span_ms == Approx(1));
  // Counters going back (another process, or a lie): start again.
  meter.sample(1100 * kMs, 5 * kMs, 2);
  CHECK(meter.span().span_ms < 0);
  meter.sample(1600 * kMs, 5 * kMs + 30 * kMs, 12);
  CHECK(meter.span().span_ms == Approx(3));
  // No collective for kSpanForgetNs: unmeasured.
  meter.sample(1600 * kMs + kSpanForgetNs, 5 * kMs + 30 * kMs, 12);
  CHECK(meter.span().span_ms < 0);
}

TEST_CASE("gang: a rank's wait from the host's jitter alone is no wait to harvest") {
  // Balanced ranks whose host launches drift: one waits 1.8 ms of an 18-ms
  // step on average (measured so on the simulator, e2e/ctl-gang-ranks).
  GangWait w = gang_wait({{2.0, 55}, {0.23, 55}});
  CHECK(w.waited_for == -1);
  CHECK(w.wait_ms[0] == Approx(1.77));
  CHECK_FALSE(w.waits[0]);
  CHECK(wait_harvest_ppm(w.wait_share[0]) == 0);
}

TEST_CASE("gang: harvest_wait starts on a wait, holds while what it takes shortens it, ends when "
          "the rank no longer waits") {
  // Rank 1 waits 8 ms of a 24-ms step: the harvest starts, sized by 1/3.
  GangWait before = gang_wait({{0.3, 41}, {8.3, 41}});
  std::optional<double> h = harvest_wait(std::nullopt, before, 1);
  REQUIRE(h);
  CHECK(*h == Approx(8.0 * 41 / 1000));
  CHECK_FALSE(harvest_wait(std::nullopt, before, 0));  // the rank waited for
  // What the job beside it takes leaves 1.7 ms: below kMinWaitShare, yet
  // above a third of it: the harvest holds, sized as it started.
  GangWait during = gang_wait({{0.3, 41}, {2.0, 41}});
  CHECK(during.waited_for == -1);
  REQUIRE(harvest_wait(h, during, 1));
  CHECK(*harvest_wait(h, during, 1) == Approx(*h));
  // Taken too far: rank 1 is now the slow one, or waits no more.
  CHECK_FALSE(harvest_wait(h, gang_wait({{1.5, 41}, {0.3, 41}}), 1));
  CHECK_FALSE(harvest_wait(h, gang_wait({{0.3, 41}, {0.4, 41}}), 1));
  CHECK_FALSE(harvest_wait(h, gang_wait({{0.3, 41}, {1.4, 41}}), 1));  // 1.1 ms: 4.5%
  // A rank not measured: no harvest.
  CHECK_FALSE(harvest_wait(h, gang_wait({{0.3, 41}, {-1, 0}}), 1));
}

TEST_CASE("gang: a use of a rank's wait is kept only where the jobs beside it go faster") {
  constexpr std::uint64_t kS = 1'000'000'000;
  HarvestTrial trial;
  CHECK_FALSE(harvest_trial(&trial, false, 10, 0));    // the rank does not wait
  CHECK_FALSE(harvest_trial(&trial, true, 30, kS / 4));  // it waits: their speed settles
  CHECK_FALSE(harvest_trial(&trial, true, -1, kS));      // their speed not measured
  CHECK(harvest_trial(&trial, true, 10, 1 * kS + kS / 4));  // starts from 10 it/s
  CHECK(harvest_trial(&trial, true, 6, 2 * kS));     // judged only after kHarvestTrialNs
  CHECK(harvest_trial(&trial, true, 14, 4 * kS));    // faster: kept
  CHECK(harvest_trial(&trial, true, 9, 10 * kS));    // judged once
  // A new trial after the rank stopped waiting; slower this time: blocked.
  CHECK_FALSE(harvest_trial(&trial, false, 9, 11 * kS));
  CHECK_FALSE(harvest_trial(&trial, true, 10, 11 * kS));
  CHECK(harvest_trial(&trial, true, 10, 12 * kS));
  CHECK_FALSE(harvest_trial(&trial, true, 7, 14 * kS));
  CHECK_FALSE(harvest_trial(&trial, true, 10, 14 * kS + kHarvestBlockNs - 1));
  CHECK(harvest_trial(&trial, true, 10, 14 * kS + kHarvestBlockNs));  // tried again
  // The gang slowed while its wait was used: blocked at once.
  CHECK_FALSE(harvest_trial(&trial, true, 20, 15 * kS + kHarvestBlockNs, true));
  CHECK_FALSE(harvest_trial(&trial, true, 20, 16 * kS + kHarvestBlockNs));
}
