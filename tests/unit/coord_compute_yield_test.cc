// The coordinator's half of the yield signal (compute_yield.h): slots,
// the stuck-mark cap, and which pages and masks each opportunistic job gets.
#include <catch2/catch.hpp>

#include "coord/server/compute/compute_yield.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::server;

namespace {
constexpr std::uint64_t kMs = 1'000'000;

YieldProducer producer(std::uint64_t id, bool busy = false, std::uint64_t marks = 0) {
  YieldProducer p;
  p.id = id;
  p.sealed = true;
  p.live = true;
  p.active = true;
  p.busy = busy;
  p.marks = marks;
  return p;
}

/// Opportunistic job 8 following the producers' pages (sampled at 0, the
/// first page delivered): where a test of what follows starts.
void follow(YieldPlanner& planner, const std::vector<YieldProducer>& producers) {
  planner.sample(0, producers, {7, 8});
  std::vector<YieldDelivery> send;
  planner.mask(8, true, producers, &send);
  planner.delivered(send.at(0));
}
}  // namespace

TEST_CASE("yield slots go to the first free one and come back when a job leaves") {
  YieldSlots slots;
  CHECK(slots.slot_of(10) == 0);
  CHECK(slots.slot_of(11) == 1);
  CHECK(slots.slot_of(10) == 0);  // stable
  slots.keep_only({11});
  CHECK(slots.holder(0) == 0);
  CHECK(slots.slot_of(12) == 0);
  for (std::uint64_t id = 13; id < 13 + kYieldSlots - 2; ++id) CHECK(slots.slot_of(id) >= 0);
  CHECK(slots.slot_of(99) == -1);  // all taken: not followed
}

TEST_CASE("a mark held without a break or a beat for a second is stuck until it clears") {
  YieldHold hold;
  hold.sample(0, true, 1, 0);
  for (std::uint64_t t = 25; t < 1000; t += 25) {
    hold.sample(t * kMs, true, 1, 0);
    CHECK_FALSE(hold.stuck());
  }
  hold.sample(1000 * kMs, true, 1, 0);
  CHECK(hold.stuck());
  hold.sample(1025 * kMs, false, 1, 0);
  CHECK_FALSE(hold.stuck());
}

TEST_CASE("a mark set again and again is never stuck however busy the job is") {
  YieldHold hold;
  std::uint64_t marks = 0;
  for (std::uint64_t t = 0; t < 3000; t += 25) {
    hold.sample(t * kMs, true, ++marks, 0);  // cleared and set between every two samples
    CHECK_FALSE(hold.stuck());
  }
}

TEST_CASE("a beating mark is honoured past a second, and dropped a second after its beats stop") {
  YieldHold hold;
  std::uint32_t beats = 0;
  hold.sample(0, true, 1, beats);
  std::uint64_t t = 25;
  for (; t <= 5000; t += 25) {  // a 5 s synchronisation of a live deep queue
    hold.sample(t * kMs, true, 1, ++beats);
    CHECK_FALSE(hold.stuck());
    CHECK(hold.in_flight());
  }
  std::uint64_t last_beat = t - 25;
  for (; t < last_beat + 1000; t += 25) {  // stopped (SIGSTOP) or dead: no more beats
    hold.sample(t * kMs, true, 1, beats);
    CHECK_FALSE(hold.stuck());
  }
  hold.sample((last_beat + 1000) * kMs, true, 1, beats);
  CHECK(hold.stuck());
  CHECK_FALSE(hold.in_flight());
  // Beating again (SIGCONT): followed again.
  hold.sample((last_beat + 1025) * kMs, true, 1, ++beats);
  CHECK_FALSE(hold.stuck());
}

TEST_CASE("a beating mark held for the cap is stuck until it clears") {
  YieldHold hold;
  std::uint32_t beats = 0;
  hold.sample(0, true, 1, beats);
  for (std::uint64_t t = 100; t < kYieldHoldCapNs / kMs; t += 100) {
    hold.sample(t * kMs, true, 1, ++beats);
    CHECK_FALSE(hold.stuck());
  }
  hold.sample(kYieldHoldCapNs, true, 1, ++beats);
  CHECK(hold.stuck());
  hold.sample(kYieldHoldCapNs + 100 * kMs, true, 1, ++beats);
  CHECK(hold.stuck());  // beats do not undo the cap
  hold.sample(kYieldHoldCapNs + 200 * kMs, false, 1, beats);
  CHECK_FALSE(hold.stuck());
  hold.sample(kYieldHoldCapNs + 300 * kMs, true, 2, beats);
  CHECK_FALSE(hold.stuck());
}

TEST_CASE("a live producer in a long synchronisation stays followed though it launches nothing") {
  YieldPlanner planner;
  std::vector<YieldProducer> producers = {producer(7, true, 1)};
  follow(planner, producers);
  std::vector<YieldDelivery> send;
  // No launch for longer than idle_after: active is false, the mark beats.
  producers[0].active = false;
  std::uint64_t t = 25;
  for (; t <= 3000; t += 25) {
    ++producers[0].beats;
    planner.sample(t * kMs, producers, {7, 8});
    CHECK(planner.in_flight(7));
    CHECK(planner.mask(8, true, producers, &send) == 1);
  }
  // Its client went quiet (stale telemetry) or it was paused: not followed.
  producers[0].live = false;
  CHECK(planner.mask(8, true, producers, &send) == 0);
  producers[0].live = true;
  // Its beats stop: dropped a second after the last one.
  std::uint64_t last_beat = t - 25;
  planner.sample((last_beat + 975) * kMs, producers, {7, 8});
  CHECK(planner.mask(8, true, producers, &send) == 1);
  planner.sample((last_beat + 1000) * kMs, producers, {7, 8});
  CHECK_FALSE(planner.in_flight(7));
  CHECK(planner.mask(8, true, producers, &send) == 0);
}

TEST_CASE("a receiver gets a producer's page first and follows it once delivered") {
  YieldPlanner planner;
  std::vector<YieldProducer> producers = {producer(7)};
  planner.sample(0, producers, {7, 8});
  std::vector<YieldDelivery> send;
  CHECK(planner.mask(8, true, producers, &send) == 0);
  REQUIRE(send.size() == 1);
  CHECK(send[0].receiver == 8);
  CHECK(send[0].producer == 7);
  CHECK(send[0].slot == 0);
  planner.delivered(send[0]);
  send.clear();
  CHECK(planner.mask(8, true, producers, &send) == 1);
  CHECK(send.empty());
  // Not controlled (the device is free), or the producer idle: no mask.
  CHECK(planner.mask(8, false, producers, &send) == 0);
  producers[0].active = false;
  CHECK(planner.mask(8, true, producers, &send) == 0);
  CHECK(send.empty());
}

TEST_CASE("an unsealed page is never passed on") {
  YieldPlanner planner;
  std::vector<YieldProducer> producers = {producer(7)};
  producers[0].sealed = false;
  planner.sample(0, producers, {7, 8});
  std::vector<YieldDelivery> send;
  CHECK(planner.mask(8, true, producers, &send) == 0);
  CHECK(send.empty());
}

TEST_CASE("a stuck producer is dropped from the mask and followed again once it clears") {
  YieldPlanner planner;
  std::vector<YieldProducer> producers = {producer(7, true, 1)};
  follow(planner, producers);
  std::vector<YieldDelivery> send;
  CHECK(planner.mask(8, true, producers, &send) == 1);
  planner.sample(1100 * kMs, producers, {7, 8});
  CHECK(planner.mask(8, true, producers, &send) == 0);
  producers[0].busy = false;
  planner.sample(1125 * kMs, producers, {7, 8});
  CHECK(planner.mask(8, true, producers, &send) == 1);
}

TEST_CASE("a slot freed by a departed producer is sent again for its next holder") {
  YieldPlanner planner;
  std::vector<YieldProducer> first = {producer(7)};
  follow(planner, first);
  std::vector<YieldDelivery> send;
  std::vector<YieldProducer> second = {producer(9)};
  planner.sample(25 * kMs, second, {8, 9});  // 7 left, 9 came
  CHECK(planner.mask(8, true, second, &send) == 0);
  REQUIRE(send.size() == 1);
  CHECK(send[0].producer == 9);
  CHECK(send[0].slot == 0);
  planner.delivered(send[0]);
  send.clear();
  CHECK(planner.mask(8, true, second, &send) == 1);
}

TEST_CASE("two producers on a device are both followed in their own slots") {
  YieldPlanner planner;
  std::vector<YieldProducer> producers = {producer(3), producer(4)};
  planner.sample(0, producers, {3, 4, 5});
  std::vector<YieldDelivery> send;
  planner.mask(5, true, producers, &send);
  REQUIRE(send.size() == 2);
  for (const YieldDelivery& d : send) planner.delivered(d);
  send.clear();
  CHECK(planner.mask(5, true, producers, &send) == 3);
}
