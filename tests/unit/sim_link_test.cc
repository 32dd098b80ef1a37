// The copy path's arithmetic (link.h): durations and reservations worked
// out by hand (times in nanoseconds).
#include <catch2/catch.hpp>

#include "simgpu/link.h"

using namespace gpushare::simgpu;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

struct Lanes {
  LinkQueue to{};
  LinkQueue from{};
  LinkInterval reserve(LinkQueue* lane, std::int64_t now, std::int64_t earliest,
                       std::int64_t duration) {
    LinkQueue* lanes[] = {lane};
    return link_reserve(lanes, 1, now, earliest, duration, 1);
  }
};

}  // namespace

TEST_CASE("a transfer takes the latency plus bytes over the bandwidth", "[sim][link]") {
  // 1 GiB at 25 GB/s: 1073741824 / 25e9 s = 42.95 ms, plus 5 us.
  CHECK(link_duration_ns(kGiB, 25'000'000'000, 5000) == 42'949'673 + 5000);
  CHECK(link_duration_ns(kGiB, 25'000'000'000, 0) == 42'949'673);  // rounded up
  CHECK(link_duration_ns(1, 25'000'000'000, 5000) == 5001);
  CHECK(link_duration_ns(0, 25'000'000'000, 5000) == 0);  // nothing to move, nothing to pay
  CHECK(link_duration_ns(4096, 0, 7000) == 7000);         // no bandwidth: latency only
  CHECK(link_duration_ns(1000, 1000, 0) == 1'000'000'000);
  // Huge transfers saturate instead of overflowing.
  CHECK(link_duration_ns(~0ull, 1, 0) > 0);
}

TEST_CASE("transfers on one lane run one after the other", "[sim][link]") {
  Lanes lanes;
  LinkInterval first = lanes.reserve(&lanes.to, 100, 0, 50);
  CHECK(first.start_ns == 100);
  CHECK(first.end_ns == 150);
  LinkInterval second = lanes.reserve(&lanes.to, 110, 0, 50);
  CHECK(second.start_ns == 150);
  CHECK(second.end_ns == 200);
  // The other direction is free.
  LinkInterval other = lanes.reserve(&lanes.from, 110, 0, 50);
  CHECK(other.start_ns == 110);
  CHECK(link_busy_until(lanes.to) == 200);
  CHECK(lanes.to.transfers == 2);
  CHECK(lanes.to.busy_ns == 100);
}

TEST_CASE("a transfer that can run now fills the gap before a later one", "[sim][link]") {
  Lanes lanes;
  // Queued behind a stream's work: from 1000 to 1100.
  LinkInterval later = lanes.reserve(&lanes.to, 0, 1000, 100);
  CHECK(later.start_ns == 1000);
  // Fits before it.
  LinkInterval now = lanes.reserve(&lanes.to, 10, 0, 500);
  CHECK(now.start_ns == 10);
  CHECK(now.end_ns == 510);
  // Does not fit in what is left of the gap (510..1000): goes after 1100.
  LinkInterval big = lanes.reserve(&lanes.to, 20, 0, 600);
  CHECK(big.start_ns == 1100);
  CHECK(big.end_ns == 1700);
  // Fits exactly in 510..1000.
  LinkInterval exact = lanes.reserve(&lanes.to, 30, 0, 490);
  CHECK(exact.start_ns == 510);
  CHECK(link_valid(lanes.to));
  // Past stretches are forgotten.
  lanes.reserve(&lanes.to, 5000, 0, 1);
  CHECK(lanes.to.count == 1);
}

TEST_CASE("a transfer between devices needs both lanes free at once", "[sim][link]") {
  Lanes lanes;
  lanes.reserve(&lanes.from, 0, 0, 100);  // 0..100
  lanes.reserve(&lanes.to, 0, 150, 100);  // 150..250
  LinkQueue* both[] = {&lanes.from, &lanes.to};
  LinkInterval peer = link_reserve(both, 2, 0, 0, 60, 1);
  CHECK(peer.start_ns == 250);  // 100..160 would overlap 150..250
  LinkInterval small = link_reserve(both, 2, 0, 0, 50, 1);
  CHECK(small.start_ns == 100);  // 100..150 fits on both
  CHECK(link_valid(lanes.from));
  CHECK(link_valid(lanes.to));
}

TEST_CASE("a full lane merges stretches and stays ordered", "[sim][link]") {
  Lanes lanes;
  // kLinkSlots stretches with gaps of 10: 0..10, 20..30, ...
  for (int i = 0; i < kLinkSlots; ++i) lanes.reserve(&lanes.to, 0, 20 * i, 10);
  REQUIRE(lanes.to.count == static_cast<std::uint32_t>(kLinkSlots));
  // One more fills the first gap: merged with its neighbour, the lane stays valid.
  LinkInterval gap = lanes.reserve(&lanes.to, 0, 0, 10);
  CHECK(gap.start_ns == 10);
  CHECK(lanes.to.count == static_cast<std::uint32_t>(kLinkSlots));
  CHECK(link_valid(lanes.to));
  // The merged stretch counts as busy from 0 to 20.
  LinkInterval next = lanes.reserve(&lanes.to, 0, 0, 5);
  CHECK(next.start_ns >= 20);
  CHECK(link_valid(lanes.to));
  // A zero-length transfer reserves nothing.
  LinkInterval none = lanes.reserve(&lanes.from, 7, 3, 0);
  CHECK(none.start_ns == 7);
  CHECK(none.end_ns == 7);
  CHECK(lanes.from.count == 0);
}

TEST_CASE("a corrupt lane is recognised", "[sim][link]") {
  LinkQueue lane{};
  lane.count = kLinkSlots + 1;
  CHECK_FALSE(link_valid(lane));
  lane.count = 2;
  lane.slots[0] = {0, 100};
  lane.slots[1] = {50, 150};  // overlaps
  CHECK_FALSE(link_valid(lane));
  lane.slots[1] = {100, 150};
  CHECK(link_valid(lane));
}

TEST_CASE("migrations issued together on several streams share the link", "[sim][link]") {
  // A spill batch issues four prefetches of 256 MiB at once, one per
  // migration stream (interpose/memory/spill_plan.h): they take the
  // direction's lane one after the other, so 1 GiB ends after 1 GiB over
  // the link, not after 256 MiB of it.
  Lanes lanes;
  std::int64_t duration = link_duration_ns(kGiB / 4, 51'000'000'000, 0);
  std::int64_t last_end = 0;
  for (int stream = 0; stream < 4; ++stream) {
    LinkQueue* lane[] = {&lanes.from};
    LinkInterval stretch = link_reserve(lane, 1, 1000, 1000, duration, kGiB / 4);
    CHECK(stretch.start_ns >= 1000);
    last_end = stretch.end_ns > last_end ? stretch.end_ns : last_end;
  }
  CHECK(last_end == 1000 + 4 * duration);
  CHECK(lanes.from.bytes == kGiB);
  CHECK(lanes.from.busy_ns == 4 * duration);
  // 4 x ceil(256 MiB / 51 GB/s): within 4 ns of 1 GiB over the link.
  CHECK(last_end - 1000 - link_duration_ns(kGiB, 51'000'000'000, 0) <= 4);
}
