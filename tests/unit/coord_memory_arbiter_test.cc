// The memory arbiter: production first, opportunistic room shared fairly.
#include <catch2/catch.hpp>

#include "coord/server/memory/memory_arbiter.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

ArbiterJob production(std::uint64_t id, std::uint64_t held, std::uint64_t request = 0) {
  ArbiterJob job;
  job.id = id;
  job.qos = kQosProduction;
  job.held_bytes = held;
  job.request_bytes = request;
  return job;
}

// A production job holding `held` and waiting for an allocation of
// `waiting` more, already charged to its budget (so inside held_bytes).
ArbiterJob waiting(std::uint64_t id, std::uint64_t held, std::uint64_t waiting) {
  ArbiterJob job = production(id, held + waiting);
  job.waiting_bytes = waiting;
  return job;
}

ArbiterJob opportunistic(std::uint64_t id, std::uint64_t managed, std::uint64_t pinned = 0,
                         std::uint64_t limit = kNoLimit) {
  ArbiterJob job;
  job.id = id;
  job.qos = kQosOpportunistic;
  job.managed_bytes = managed;
  job.pinned_bytes = pinned;
  job.mem_limit = limit;
  return job;
}

}  // namespace

TEST_CASE("arbiter leaves opportunistic memory alone when everything fits", "[arbiter]") {
  ArbiterResult r = arbitrate(80 * kGiB, {production(1, 30 * kGiB), opportunistic(2, 40 * kGiB)});
  REQUIRE(r.fits);
  REQUIRE(r.spill_bytes == 0);
  REQUIRE(r.targets.size() == 1);
  REQUIRE(r.targets[0].id == 2);
  REQUIRE(r.targets[0].device_resident_target == kNoLimit);
  REQUIRE(r.opportunistic_room == 50 * kGiB);
}

TEST_CASE("arbiter spills exactly what a production request needs", "[arbiter]") {
  ArbiterResult r =
      arbitrate(80 * kGiB, {production(1, 30 * kGiB, 16 * kGiB), opportunistic(2, 40 * kGiB)});
  REQUIRE(r.fits);
  REQUIRE(r.targets[0].device_resident_target == 34 * kGiB);
  REQUIRE(r.spill_bytes == 6 * kGiB);
}

TEST_CASE("arbiter shares the room max-min fairly among opportunistic jobs", "[arbiter]") {
  // 20 GiB of room: the small job keeps its 4, the others split 16.
  ArbiterResult r = arbitrate(60 * kGiB, {opportunistic(2, 30 * kGiB), production(1, 40 * kGiB),
                                          opportunistic(3, 4 * kGiB), opportunistic(4, 30 * kGiB)});
  REQUIRE(r.fits);
  REQUIRE(r.targets.size() == 3);
  REQUIRE(r.targets[0].id == 2);
  REQUIRE(r.targets[0].device_resident_target == 8 * kGiB);
  REQUIRE(r.targets[1].device_resident_target == kNoLimit);
  REQUIRE(r.targets[2].device_resident_target == 8 * kGiB);
  REQUIRE(r.spill_bytes == 44 * kGiB);
}

TEST_CASE("arbiter counts pinned opportunistic memory before managed", "[arbiter]") {
  ArbiterResult r =
      arbitrate(80 * kGiB, {production(1, 60 * kGiB), opportunistic(2, 20 * kGiB, 8 * kGiB)});
  REQUIRE(r.fits);
  REQUIRE(r.opportunistic_room == 12 * kGiB);
  REQUIRE(r.targets[0].device_resident_target == 12 * kGiB);
}

TEST_CASE("arbiter says a request does not fit when pinned and production memory exceed the device",
          "[arbiter]") {
  ArbiterResult r = arbitrate(
      80 * kGiB, {production(1, 60 * kGiB, 16 * kGiB), opportunistic(2, 20 * kGiB, 8 * kGiB)});
  REQUIRE_FALSE(r.fits);
  // The refused request leaves: the opportunistic job has the rest.
  REQUIRE(r.refused == std::vector<std::size_t>{0});
  REQUIRE(r.opportunistic_room == 12 * kGiB);
  REQUIRE(r.targets[0].device_resident_target == 12 * kGiB);
  // Two production jobs alone over the device: no spill helps them.
  ArbiterResult both =
      arbitrate(80 * kGiB, {production(1, 50 * kGiB), production(3, 0, 40 * kGiB)});
  REQUIRE_FALSE(both.fits);
  REQUIRE(both.refused == std::vector<std::size_t>{1});
  REQUIRE(both.targets.empty());
}

TEST_CASE("arbiter refuses only the waits that cannot fit, the largest first", "[arbiter]") {
  // 10 GiB: 2 held plus a 6 GiB wait, 1 held plus a 3 GiB wait, 1 GiB
  // pinned: 13 GiB. Refusing the 6 GiB wait lets the 3 GiB one fit.
  ArbiterResult r =
      arbitrate(10 * kGiB, {waiting(1, 2 * kGiB, 6 * kGiB), opportunistic(2, 4 * kGiB, kGiB),
                            waiting(3, 1 * kGiB, 3 * kGiB)});
  REQUIRE_FALSE(r.fits);
  REQUIRE(r.refused == std::vector<std::size_t>{0});
  // 2 + 4 + 1 fixed once the wait is gone: 3 GiB for managed memory.
  REQUIRE(r.opportunistic_room == 3 * kGiB);
  REQUIRE(r.targets[0].device_resident_target == 3 * kGiB);
}

TEST_CASE("arbiter refuses the fewest waits, the later of two equal ones first", "[arbiter]") {
  // Three 4 GiB waits beside 2 GiB held, on 10 GiB: two fit.
  std::vector<ArbiterJob> jobs{waiting(1, kGiB, 4 * kGiB), waiting(2, kGiB, 4 * kGiB),
                               waiting(3, 0, 4 * kGiB)};
  ArbiterResult r = arbitrate(10 * kGiB, jobs);
  REQUIRE_FALSE(r.fits);
  REQUIRE(r.refused == std::vector<std::size_t>{2});
  // Several refusals: a 5 GiB and a 4 GiB wait must go for the 1 GiB ones.
  ArbiterResult many = arbitrate(8 * kGiB, {waiting(1, 3 * kGiB, 5 * kGiB), waiting(2, 0, kGiB),
                                            waiting(3, 2 * kGiB, 4 * kGiB), waiting(4, 0, kGiB)});
  REQUIRE(many.refused == std::vector<std::size_t>{0, 2});
  // What production holds outside its waits leaves room for none: all go.
  ArbiterResult none =
      arbitrate(8 * kGiB, {waiting(1, 7 * kGiB, 2 * kGiB), waiting(2, 2 * kGiB, kGiB)});
  REQUIRE(none.refused == std::vector<std::size_t>{0, 1});
  REQUIRE(none.opportunistic_room == 0);
  // Everything fits: nothing is refused.
  REQUIRE(arbitrate(20 * kGiB, jobs).refused.empty());
}

TEST_CASE("arbiter restores opportunistic memory when production frees", "[arbiter]") {
  std::vector<ArbiterJob> jobs{production(1, 70 * kGiB), opportunistic(2, 48 * kGiB)};
  REQUIRE(arbitrate(80 * kGiB, jobs).targets[0].device_resident_target == 10 * kGiB);
  jobs[0].held_bytes = 0;
  REQUIRE(arbitrate(80 * kGiB, jobs).targets[0].device_resident_target == kNoLimit);
}

TEST_CASE("arbiter caps residency at an opportunistic job's own limit", "[arbiter]") {
  // mem=12GiB on a job with 2 GiB pinned and 20 GiB managed: 10 on the device.
  ArbiterResult r = arbitrate(80 * kGiB, {opportunistic(2, 20 * kGiB, 2 * kGiB, 12 * kGiB)});
  REQUIRE(r.targets[0].device_resident_target == 10 * kGiB);
  REQUIRE(r.spill_bytes == 10 * kGiB);
  // A limit below the pinned bytes leaves no managed byte on the device.
  ArbiterResult low = arbitrate(80 * kGiB, {opportunistic(2, 20 * kGiB, 2 * kGiB, 1 * kGiB)});
  REQUIRE(low.targets[0].device_resident_target == 0);
}

TEST_CASE("arbiter saturates instead of wrapping on absurd inputs", "[arbiter]") {
  ArbiterResult r = arbitrate(
      80 * kGiB, {production(1, kNoLimit - 1, kNoLimit - 1), opportunistic(2, kNoLimit, kNoLimit)});
  REQUIRE_FALSE(r.fits);
  REQUIRE(r.targets[0].device_resident_target == 0);
  REQUIRE(r.spill_bytes == kNoLimit);
}
