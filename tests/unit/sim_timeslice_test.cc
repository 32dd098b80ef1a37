// The time-sliced scheduler on timelines worked out by hand (times in
// arbitrary nanoseconds; slice 10 unless a test says otherwise).
#include <catch2/catch.hpp>
#include <memory>

#include "simgpu/timeslice.h"

using namespace gpushare::simgpu;

namespace {

struct Model {
  std::unique_ptr<SchedModel> m = std::make_unique<SchedModel>();
  std::unique_ptr<SchedModel> scratch = std::make_unique<SchedModel>();
  Model(SchedPolicy policy = SchedPolicy::kTimeslice, std::int64_t slice = 10,
        std::int64_t switch_cost = 0) {
    sched_init(m.get(), policy, slice, switch_cost, 0);
  }
  std::uint64_t launch(int context, std::int64_t at, std::int64_t duration) {
    std::uint64_t seq = sched_launch(m.get(), context, at, duration);
    REQUIRE(seq != 0);
    return seq;
  }
  std::int64_t projected(std::uint64_t seq) { return sched_projected_end(*m, seq, scratch.get()); }
  std::int64_t settled(std::uint64_t seq, std::int64_t at) {
    sched_advance(m.get(), at);
    return sched_end(*m, seq);
  }
};

}  // namespace

TEST_CASE("timeslice: a kernel longer than a slice is preempted for another context") {
  // A 0-10, B 10-20 (done), A 20-30, alone so a fresh slice, A 30-35.
  Model t;
  auto a = t.launch(0, 0, 25);
  auto b = t.launch(1, 0, 10);
  CHECK(t.projected(a) == 35);
  CHECK(t.projected(b) == 20);
  CHECK(t.settled(b, 19) == -1);
  CHECK(t.settled(b, 20) == 20);
  CHECK(t.settled(a, 100) == 35);
  CHECK(t.m->busy_ns[0] == 25);
  CHECK(t.m->busy_ns[1] == 10);
  CHECK(t.m->switches == 2);
}

TEST_CASE("timeslice: each change of context costs the switch overhead") {
  // A 0-10, switch 10-12, B 12-22 (done), switch 22-24, A 24-34, A 34-39.
  Model t(SchedPolicy::kTimeslice, 10, 2);
  auto a = t.launch(0, 0, 25);
  auto b = t.launch(1, 0, 10);
  CHECK(t.settled(a, 100) == 39);
  CHECK(sched_end(*t.m, b) == 22);
  CHECK(sched_busy_between(*t.m, 0, 100) == 35);
  CHECK(sched_busy_between(*t.m, 10, 12) == 0);
}

TEST_CASE("timeslice: a later launch by another context delays work already queued") {
  Model t;
  auto a = t.launch(0, 0, 30);
  CHECK(t.projected(a) == 30);  // alone: slices renew without a switch
  // B arrives at 5 and waits for A's slice to end at 10: A 0-10, B 10-20,
  // A 20-30, A 30-40.
  auto b = t.launch(1, 5, 10);
  CHECK(t.projected(a) == 40);
  CHECK(t.projected(b) == 20);
  CHECK(t.settled(a, 40) == 40);
}

TEST_CASE("timeslice: three contexts take turns in round-robin order") {
  // A 0-10, B 10-20, C 20-25 (done), A 25-35 (done), B 35-45 (done).
  Model t;
  auto a = t.launch(0, 0, 20);
  auto b = t.launch(1, 0, 20);
  auto c = t.launch(2, 0, 5);
  sched_advance(t.m.get(), 1000);
  CHECK(sched_end(*t.m, a) == 35);
  CHECK(sched_end(*t.m, b) == 45);
  CHECK(sched_end(*t.m, c) == 25);
}

TEST_CASE("timeslice: a context's kernels run in launch order") {
  // A's two kernels 0-5 and 5-10 fill its first slice; B 10-20, 20-30.
  Model t;
  auto a1 = t.launch(0, 0, 5);
  auto b = t.launch(1, 0, 20);
  auto a2 = t.launch(0, 0, 5);
  sched_advance(t.m.get(), 1000);
  CHECK(sched_end(*t.m, a1) == 5);
  CHECK(sched_end(*t.m, a2) == 10);
  CHECK(sched_end(*t.m, b) == 30);
  CHECK(sched_last_pending(*t.m, 0) == 0);
}

TEST_CASE("timeslice: idle gaps, a switch after idle, and busy time per context") {
  Model t(SchedPolicy::kTimeslice, 10, 2);
  auto a1 = t.launch(0, 0, 5);               // A 0-5
  auto b = t.launch(1, 20, 5);               // switch 20-22, B 22-27
  auto a2 = t.launch(0, 30, 5);              // switch 30-32, A 32-37
  auto a3 = t.launch(0, 50, 5);              // A still resident: no switch, 50-55
  CHECK(sched_last_pending(*t.m, 0) == a3);  // a2 ended at 37
  sched_advance(t.m.get(), 60);
  CHECK(sched_end(*t.m, a1) == 5);
  CHECK(sched_end(*t.m, b) == 27);
  CHECK(sched_end(*t.m, a2) == 37);
  CHECK(sched_end(*t.m, a3) == 55);
  CHECK(sched_busy_between(*t.m, 0, 60) == 20);
  CHECK(sched_busy_between(*t.m, 0, 60, 1) == 5);
  CHECK(sched_busy_between(*t.m, 0, 3, 0) == 3);
  CHECK(sched_busy_between(*t.m, 24, 34, -1) == 5);  // 24-27 and 32-34
  CHECK(t.m->switches == 2);
}

TEST_CASE("timeslice: the fifo policy runs kernels to completion in launch order") {
  Model t(SchedPolicy::kFifo, 10, 5);
  auto a = t.launch(0, 0, 25);
  auto b = t.launch(1, 0, 10);
  auto a2 = t.launch(0, 1, 5);  // behind B, though A's context is running
  sched_advance(t.m.get(), 100);
  CHECK(sched_end(*t.m, a) == 25);
  CHECK(sched_end(*t.m, b) == 35);
  CHECK(sched_end(*t.m, a2) == 40);
}

TEST_CASE("timeslice: a full queue and a bad context are refused, not overrun") {
  Model t;
  CHECK(sched_launch(t.m.get(), -1, 0, 5) == 0);
  CHECK(sched_launch(t.m.get(), kSchedContexts, 0, 5) == 0);
  constexpr int kFull = kSchedPending / kSchedContextPending;  // contexts that fill the device
  for (int i = 0; i < kSchedPending; ++i) REQUIRE(sched_launch(t.m.get(), i % kFull, 0, 5) != 0);
  CHECK(sched_launch(t.m.get(), kFull, 0, 5) == 0);  // the device is full
  sched_advance(t.m.get(), 5);                       // the first kernel is done: room for one
  CHECK(sched_launch(t.m.get(), kFull, 5, 5) != 0);
  CHECK(sched_end(*t.m, 1) == 5);
  CHECK(sched_valid(*t.m));
}

TEST_CASE("timeslice: one context's deep queue leaves room for the others") {
  Model t;
  for (int i = 0; i < kSchedContextPending; ++i) REQUIRE(sched_launch(t.m.get(), 0, 0, 5) != 0);
  CHECK(sched_launch(t.m.get(), 0, 0, 5) == 0);  // context 0's share is full
  CHECK(t.m->pending_of[0] == static_cast<std::uint32_t>(kSchedContextPending));
  CHECK(sched_first_pending(*t.m, 0) == 1);
  CHECK(sched_launch(t.m.get(), 1, 0, 5) != 0);  // ... not the device
  sched_advance(t.m.get(), 5);
  CHECK(sched_first_pending(*t.m, 0) == 2);
  CHECK(sched_launch(t.m.get(), 0, 5, 5) != 0);
  sched_drop(t.m.get(), 0);
  CHECK(t.m->pending_of[0] == 0);
  CHECK(sched_valid(*t.m));
}

TEST_CASE("timeslice: an empty kernel ends with its context's work") {
  Model t;
  auto e = t.launch(0, 3, 0);  // nothing queued: done at once
  CHECK(sched_end(*t.m, e) == 3);
  auto a = t.launch(0, 3, 10);
  auto e2 = t.launch(0, 3, 0);
  CHECK(t.projected(a) == 13);
  CHECK(t.projected(e2) == 14);  // one nanosecond behind the work before it
}

TEST_CASE("timeslice: a kernel that may not start yet lets other contexts run") {
  // A's kernel waits until 30 (a migration); B runs 0-20 meanwhile, then
  // the device idles until A may start: 30-35.
  Model t;
  auto a = sched_launch(t.m.get(), 0, 0, 5, 30);
  auto b = t.launch(1, 0, 20);
  REQUIRE(a != 0);
  CHECK(t.projected(a) == 35);
  CHECK(t.projected(b) == 20);
  CHECK(t.settled(a, 100) == 35);
  CHECK(sched_busy_between(*t.m, 20, 30) == 0);
}

TEST_CASE("timeslice: under fifo a kernel that may not start yet holds up the queue") {
  Model t(SchedPolicy::kFifo);
  auto a = sched_launch(t.m.get(), 0, 0, 5, 30);
  auto b = t.launch(1, 0, 20);
  REQUIRE(a != 0);
  CHECK(t.projected(a) == 35);
  CHECK(t.projected(b) == 55);
}

TEST_CASE("timeslice: a dropped context's work vanishes and its time loses its owner") {
  Model t;
  auto a = t.launch(0, 0, 25);
  auto b = t.launch(1, 0, 10);
  sched_advance(t.m.get(), 5);
  CHECK_FALSE(sched_finished(*t.m, 0, a));
  sched_drop(t.m.get(), 0);  // A dies at 5, mid-kernel
  CHECK(sched_finished(*t.m, 0, a));
  CHECK(t.projected(b) == 15);  // B takes over at once (no switch cost here)
  CHECK(t.m->busy_ns[0] == 0);
  CHECK(sched_busy_between(*t.m, 0, 5, 0) == 0);
  CHECK(sched_busy_between(*t.m, 0, 5) == 5);
  CHECK(t.m->busy_total_ns == 5);
  CHECK(t.m->kernels == 2);
}

TEST_CASE("timeslice: finished is answered per context in launch order") {
  Model t;
  auto a1 = t.launch(0, 0, 5);
  auto a2 = t.launch(0, 0, 5);
  auto b = t.launch(1, 0, 5);
  CHECK(sched_finished(*t.m, 0, 0));
  CHECK_FALSE(sched_finished(*t.m, 0, a1));
  sched_advance(t.m.get(), 5);
  CHECK(sched_finished(*t.m, 0, a1));
  CHECK_FALSE(sched_finished(*t.m, 0, a2));
  CHECK_FALSE(sched_finished(*t.m, 1, b));
  CHECK_FALSE(sched_finished(*t.m, 1, b + 1));  // not launched yet
}

TEST_CASE("timeslice: the next completion is the earliest of any context") {
  Model t;
  t.launch(0, 0, 25);  // A 0-10, B 10-13 (done), A 13-...
  t.launch(1, 0, 3);
  CHECK(sched_next_completion(*t.m, t.scratch.get()) == 13);
  CHECK(t.m->now_ns == 0);  // only the copy was settled
  sched_advance(t.m.get(), 100);
  CHECK(sched_next_completion(*t.m, t.scratch.get()) == -1);
}

TEST_CASE("timeslice: a model scribbled out of bounds is invalid") {
  Model t;
  t.launch(0, 0, 5);
  CHECK(sched_valid(*t.m));
  SECTION("pending count") { t.m->pending_count = kSchedPending + 1; }
  SECTION("done index") { t.m->done_next = kSchedDone; }
  SECTION("interval index") { t.m->interval_next = kSchedIntervals; }
  SECTION("resident") { t.m->resident = kSchedContexts; }
  SECTION("a kernel's context") { t.m->pending[0].context = -2; }
  SECTION("policy") { t.m->policy = static_cast<SchedPolicy>(7); }
  SECTION("a context's count of unfinished kernels") { t.m->pending_of[0] = 3; }
  CHECK_FALSE(sched_valid(*t.m));
}

TEST_CASE("timeslice: a kernel's hold (fault service) keeps the device past its slice") {
  // A holds its first 25 of 30: its slice ends at 10 inside the hold, so it
  // runs on to 25, then B gets its slice (25-35), then A's last 5 (35-40).
  Model t;
  std::uint64_t a = sched_launch(t.m.get(), 0, 0, 30, 0, 25);
  REQUIRE(a != 0);
  auto b = t.launch(1, 0, 10);
  CHECK(t.projected(b) == 35);
  CHECK(t.projected(a) == 40);
  // Without the hold B would have run 10-20.
  Model plain;
  auto pa = plain.launch(0, 0, 30);
  auto pb = plain.launch(1, 0, 10);
  CHECK(plain.projected(pb) == 20);
  CHECK(plain.projected(pa) == 40);
}

TEST_CASE("timeslice: a hold longer than the kernel is cut to the kernel") {
  Model t;
  std::uint64_t a = sched_launch(t.m.get(), 0, 0, 12, 0, 1000);
  REQUIRE(a != 0);
  auto b = t.launch(1, 0, 10);
  CHECK(t.projected(a) == 12);
  CHECK(t.projected(b) == 22);
}

TEST_CASE("timeslice: a context switched in runs its head kernel cold") {
  // Slice 20, switch 2, cold 3: A 0-20, switch 20-22, B 22-35 (10 + 3
  // cold: done), switch 35-37, A resumes cold: its remaining 5 + 3, 37-45.
  std::unique_ptr<SchedModel> m = std::make_unique<SchedModel>();
  sched_init(m.get(), SchedPolicy::kTimeslice, 20, 2, 0, 3);
  std::uint64_t a = sched_launch(m.get(), 0, 0, 25);
  std::uint64_t b = sched_launch(m.get(), 1, 0, 10);
  sched_advance(m.get(), 100);
  CHECK(sched_end(*m, b) == 35);
  CHECK(sched_end(*m, a) == 45);
  CHECK(m->switches == 2);
  CHECK(sched_busy_between(*m, 0, 100) == 41);  // 35 of work and 6 run cold
  // A context alone is never cold: no switch, no cost.
  std::unique_ptr<SchedModel> alone = std::make_unique<SchedModel>();
  sched_init(alone.get(), SchedPolicy::kTimeslice, 10, 2, 0, 3);
  std::uint64_t c = sched_launch(alone.get(), 0, 0, 25);
  sched_launch(alone.get(), 0, 30, 5);
  sched_advance(alone.get(), 100);
  CHECK(sched_end(*alone, c) == 25);
  CHECK(alone->switches == 0);
}
