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
  REQUIRE(r.opportunistic_room == 0);
  REQUIRE(r.targets[0].device_resident_target == 0);
  // Two production jobs alone over the device: no spill helps them.
  ArbiterResult both =
      arbitrate(80 * kGiB, {production(1, 50 * kGiB), production(3, 0, 40 * kGiB)});
  REQUIRE_FALSE(both.fits);
  REQUIRE(both.targets.empty());
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
