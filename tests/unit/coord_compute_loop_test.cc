// The compute loop's I/O half (compute_loop.h): it reads real control
// blocks (memfd pages) and writes the limits into them; telemetry is
// written here as a job would.
#include <fcntl.h>
#include <sys/mman.h>

#include <catch2/catch.hpp>

#include "coord/server/compute/compute_loop.h"
#include "coord/server/registry/registry.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

RegisterRequest request(const std::string& name, std::uint32_t qos, std::uint64_t cap = kNoLimit) {
  RegisterRequest r;
  r.name = name;
  r.qos = qos;
  r.compute_cap_ppm = cap;
  r.devices.push_back({"GPU-a", 1ull << 34, kNoLimit, kNoLimit});
  return r;
}

Caller peer(pid_t pid) {
  Caller c;
  c.pid = pid;
  c.uid = 1000;
  c.gid = 1000;
  return c;
}

// What a job's client thread does every 50 ms.
void publish(const Process& job, std::uint64_t now, std::uint64_t launches,
             std::uint64_t iterations, std::uint64_t last_iteration) {
  auto& page = const_cast<TelemetryPage&>(job.block->telemetry());
  page.launches.store(launches);
  page.iterations.store(iterations);
  page.last_iteration_ns.store(last_iteration);
  page.heartbeat_ns.store(now);
}

}  // namespace

TEST_CASE("compute loop writes a static cap at registration and keeps it") {
  Registry registry{Policy{}};
  Process* capped = *registry.add(request("capped", kQosProduction, 300000), peer(10));
  // At once, before any tick: the job's page carries the cap and the flag.
  CHECK(capped->block->compute(0).compute_cap_ppm == 300000);
  ComputeLoop loop(ComputePolicy::kGpushare);
  publish(*capped, 1000 * kMs, 5, 0, 0);
  loop.tick(registry, 1000 * kMs);
  CHECK(capped->block->compute(0).compute_cap_ppm == 300000);
  CHECK(capped->block->compute(0).launch_budget == kNoLimit);
}

TEST_CASE(
    "compute loop throttles the opportunistic job while production runs and drops a dead one") {
  Registry registry{Policy{}};
  Process* prod = *registry.add(request("prod", kQosProduction), peer(10));
  Process* opp = *registry.add(request("opp", kQosOpportunistic), peer(11));
  ComputeLoop loop(ComputePolicy::kGpushare);
  std::uint64_t now = 1000 * kMs;
  std::uint64_t iterations = 0, launches = 0, last = 0, opp_launches = 0;
  for (int tick = 0; tick < 20; ++tick) {
    now += 25 * kMs;
    iterations += 1;  // 40 iterations/s
    launches += 4;
    last = now - 5 * kMs;
    opp_launches += 10;
    publish(*prod, now, launches, iterations, last);
    publish(*opp, now, opp_launches, 0, 0);
    loop.tick(registry, now);
  }
  ComputeLimits held = opp->block->compute(0);
  // Profiling (held) or opening (a share of GPU time): limited either way.
  CHECK((held.launch_budget == 0 || held.compute_cap_ppm != kNoLimit));
  CHECK(prod->block->compute(0).launch_budget == kNoLimit);  // production is never throttled
  CHECK(opp->compute_phase != "free");

  // The production job stops publishing (it is dying): after 500 ms it is
  // left out, and the opportunistic job runs free again.
  for (int tick = 0; tick < 24; ++tick) {
    now += 25 * kMs;
    opp_launches += 10;
    publish(*opp, now, opp_launches, 0, 0);
    loop.tick(registry, now);
  }
  CHECK(opp->block->compute(0).launch_budget == kNoLimit);
  CHECK(opp->block->compute(0).compute_cap_ppm == kNoLimit);
  CHECK(opp->compute_phase == "free");
}

TEST_CASE("compute loop sends a sealed production page to the opportunistic job and follows it") {
  Registry registry{Policy{}};
  Process* prod = *registry.add(request("prod", kQosProduction), peer(10));
  Process* opp = *registry.add(request("opp", kQosOpportunistic), peer(11));
  // The production job maps its page and seals it, as its client does.
  void* own = mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   prod->block->yield_fd(), 0);
  REQUIRE(own != MAP_FAILED);
  REQUIRE(fcntl(prod->block->yield_fd(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0);
  struct Sent {
    std::uint64_t job;
    int slot;
    int fd;
  };
  std::vector<Sent> sent;
  for (ComputePolicy policy : {ComputePolicy::kGpushare, ComputePolicy::kTgs}) {
    ComputeLoop loop(policy);
    sent.clear();
    loop.set_yield_sender([&](std::uint64_t job, int slot, int fd) {
      sent.push_back({job, slot, fd});
      return true;
    });
    std::uint64_t now = 1000 * kMs;
    for (int tick = 0; tick < 8; ++tick) {
      now += 25 * kMs;
      publish(*prod, now, 4 * (tick + 1), tick + 1, now - 5 * kMs);
      publish(*opp, now, 10 * (tick + 1), 0, 0);
      loop.tick(registry, now);
    }
    REQUIRE(sent.size() == 1);  // once, not every tick
    CHECK(sent[0].job == opp->key);
    CHECK(sent[0].slot == 0);
    CHECK(sent[0].fd == prod->block->yield_fd());
    // Only the gpushare loop follows it, and only for the opportunistic job.
    CHECK(opp->block->yield_mask(0) == (policy == ComputePolicy::kGpushare ? 1u : 0u));
    CHECK(prod->block->yield_mask(0) == 0);
  }
  munmap(own, kControlPageBytes);
}
