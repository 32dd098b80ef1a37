// Collectives across simulated devices (collective.h) on timelines worked
// out by hand: times in nanoseconds from 0, slices of 10, no switch cost,
// a link of 1 byte per nanosecond and no latency, so that an all-reduce of
// B bytes among 2 ranks transfers for B ns (2 (N-1)/N B / speed).
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "simgpu/collective.h"
#include "simgpu/state.h"

using namespace gpushare::simgpu;

namespace {

constexpr std::uint64_t kComm = 0x5eed;

struct Node {
  std::unique_ptr<StateLayout> layout = std::make_unique<StateLayout>();
  std::unique_ptr<SchedModel> scratch = std::make_unique<SchedModel>();
  std::unique_ptr<SchedModel> scratch2 = std::make_unique<SchedModel>();

  explicit Node(int devices) {
    SimConfig config{};
    config.device_count = devices;
    for (auto& device : config.devices) device = {1ull << 30, 0, 108};
    config.timeslice_ns = 10;
    initialise_layout(layout.get(), config);
    for (DeviceState& device : layout->devices) {
      sched_init(&device.sched, SchedPolicy::kTimeslice, 10, 0, 0);
    }
    layout->collectives.link_bytes_per_s = 1'000'000'000;
    layout->collectives.link_latency_ns = 0;
  }
  SchedModel* model(int device) { return &layout->devices[device].sched; }
  // An ordinary kernel of `context` on `device` at time `at`.
  std::uint64_t kernel(int device, int context, std::int64_t at, std::int64_t duration) {
    collective_settle(layout.get(), at);
    std::uint64_t seq = sched_launch(model(device), context, at, duration);
    REQUIRE(seq != 0);
    return seq;
  }
  // Rank `rank`'s all-reduce of `bytes`, by process slot `slot` (pid slot + 100).
  std::uint64_t allreduce(int device, int slot, std::uint32_t rank, std::uint32_t world,
                          std::int64_t at, std::uint64_t bytes,
                          CollectiveRefusal expect = CollectiveRefusal::kNone) {
    collective_settle(layout.get(), at);
    CollectiveRefusal refusal = CollectiveRefusal::kNone;
    std::uint64_t seq = collective_enqueue(layout.get(), CollectiveCall{bytes, kComm, rank, world},
                                           slot, slot + 100, device, at, 0, &refusal);
    CHECK(refusal == expect);
    CHECK((seq != 0) == (expect == CollectiveRefusal::kNone));
    return seq;
  }
  std::int64_t end(int device, std::uint64_t seq, std::int64_t at) {
    collective_settle(layout.get(), at);
    return sched_end(*model(device), seq);
  }
  std::int64_t projected(int device, std::uint64_t seq) {
    return collective_projected_end(layout.get(), device, seq, scratch.get(), scratch2.get());
  }
};

}  // namespace

TEST_CASE("collective: gated kernels spin until released, then run their duration") {
  // One model: A's gated kernel starts at 0 and stops the settling there;
  // with a bound of 15 it spins to 15 and stops again; released at 20, it
  // spins to 20 and transfers 20-25.
  auto m = std::make_unique<SchedModel>();
  sched_init(m.get(), SchedPolicy::kTimeslice, 10, 0, 0);
  std::uint64_t a = sched_launch(m.get(), 0, 0, 5);
  REQUIRE(sched_gate(m.get(), a, 1));
  CHECK(sched_has_open_gate(*m));
  sched_advance(m.get(), 100);
  CHECK(m->now_ns == 0);
  CHECK(m->pending[0].started_ns == 0);
  REQUIRE(sched_release(m.get(), a, -1, 15));
  sched_advance(m.get(), 100);
  CHECK(m->now_ns == 15);
  CHECK(sched_end(*m, a) == -1);
  REQUIRE(sched_release(m.get(), a, 20, 0));
  CHECK_FALSE(sched_has_open_gate(*m));
  sched_advance(m.get(), 100);
  CHECK(sched_end(*m, a) == 25);
  CHECK(m->busy_ns[0] == 25);  // the spin is busy time, as NCCL's kernel looks busy
  CHECK_FALSE(sched_gate(m.get(), a, 1));  // finished: nothing to gate
}

TEST_CASE("collective: a spinning kernel yields at the end of its slice like any other") {
  // A (gated, released at 25, 5 ns of transfer) and B (15 ns) from 0:
  // A spins 0-10, B 10-20, A spins 20-25 and transfers 25-30, B 30-35.
  auto m = std::make_unique<SchedModel>();
  sched_init(m.get(), SchedPolicy::kTimeslice, 10, 0, 0);
  std::uint64_t a = sched_launch(m.get(), 0, 0, 5);
  std::uint64_t b = sched_launch(m.get(), 1, 0, 15);
  REQUIRE(sched_gate(m.get(), a, 1));
  REQUIRE(sched_release(m.get(), a, 25, 0));
  sched_advance(m.get(), 100);
  CHECK(sched_end(*m, a) == 30);
  CHECK(sched_end(*m, b) == 35);
}

TEST_CASE("collective: a kernel released before it starts transfers from its start") {
  auto m = std::make_unique<SchedModel>();
  sched_init(m.get(), SchedPolicy::kTimeslice, 10, 0, 0);
  std::uint64_t first = sched_launch(m.get(), 0, 0, 12);
  std::uint64_t a = sched_launch(m.get(), 0, 0, 5);
  REQUIRE(sched_gate(m.get(), a, 1));
  REQUIRE(sched_release(m.get(), a, 4, 0));  // the last to start: it releases itself
  sched_advance(m.get(), 100);
  CHECK(sched_end(*m, first) == 12);
  CHECK(sched_end(*m, a) == 17);
}

TEST_CASE("collective: every rank's all-reduce ends after the last rank's start") {
  // Device 0: rank 0 computes 0-20, then its all-reduce starts and spins.
  // Device 1: rank 1 computes 0-50; its all-reduce starts at 50, the
  // release. 10 bytes: both transfer 50-60.
  Node node(2);
  node.kernel(0, 0, 0, 20);
  std::uint64_t r0 = node.allreduce(0, 0, 0, 2, 0, 10);
  node.kernel(1, 1, 0, 50);
  std::uint64_t r1 = node.allreduce(1, 1, 1, 2, 0, 10);
  // Projected before anything ran: rank 1 starts when its compute ends.
  CHECK(node.projected(0, r0) == 60);
  CHECK(node.end(0, r0, 59) == -1);
  CHECK(node.end(0, r0, 100) == 60);
  CHECK(sched_end(*node.model(1), r1) == 60);
  CHECK(node.model(0)->busy_ns[0] == 60);  // its device looked busy while it waited
  const CollectiveGroup& group = node.layout->collectives.groups[0];
  CHECK(group.released == 1);
  CHECK(group.last_rank == 1);
  CHECK(group.waited_ns[0] == 30);
  CHECK(group.waited_ns[1] == 0);
  CHECK(node.layout->collectives.open_ops == 0);  // finished ops are freed
}

TEST_CASE("collective: an opportunistic kernel on one rank's device delays every rank") {
  // Device 1 also runs an opportunistic context (2) with 30 ns of work from
  // 0: rank 1's compute (15) runs 0-10 and 20-25, the other's 10-20; rank
  // 1's all-reduce starts at 25 (the release), transfers 25-30, yields to
  // context 2 30-40, transfers 40-45. Rank 0, waiting since 0, transfers
  // 25-35.
  Node node(2);
  std::uint64_t r0 = node.allreduce(0, 0, 0, 2, 0, 10);
  node.kernel(1, 1, 0, 15);
  std::uint64_t r1 = node.allreduce(1, 1, 1, 2, 0, 10);
  std::uint64_t other = node.kernel(1, 2, 0, 30);
  CHECK(node.end(0, r0, 200) == 35);
  CHECK(sched_end(*node.model(1), r1) == 45);
  CHECK(sched_end(*node.model(1), other) == 55);
  CHECK(node.layout->collectives.groups[0].last_rank == 1);
}

TEST_CASE("collective: a rank that has not launched yet keeps its peers spinning") {
  // Rank 0 launches at 0 and spins; rank 1 launches at 50 on an idle
  // device: both transfer 50-60. Until then rank 0's projection is a short
  // poll ahead, never past what it can know.
  Node node(2);
  std::uint64_t r0 = node.allreduce(0, 0, 0, 2, 0, 10);
  CHECK(node.end(0, r0, 40) == -1);
  CHECK(node.model(0)->now_ns == 40);
  std::int64_t guess = node.projected(0, r0);
  CHECK(guess > 40);
  std::uint64_t r1 = node.allreduce(1, 1, 1, 2, 50, 10);
  CHECK(node.projected(0, r0) == 60);
  CHECK(node.end(0, r0, 100) == 60);
  CHECK(sched_end(*node.model(1), r1) == 60);
}

TEST_CASE("collective: four ranks meet op by op, in launch order") {
  // Each rank launches two all-reduces of 30 bytes (4 ranks: 2*3/4*30 = 45
  // ns each). Rank 3 computes 0-100 first: op 1 releases at 100, ends at
  // 145 everywhere; op 2 starts at 145 on every device (nobody waits, no
  // last rank), ends at 190.
  Node node(4);
  node.kernel(3, 3, 0, 100);
  std::uint64_t first[4], second[4];
  for (int r = 0; r < 4; ++r) {
    first[r] = node.allreduce(r, r, static_cast<std::uint32_t>(r), 4, 0, 30);
    second[r] = node.allreduce(r, r, static_cast<std::uint32_t>(r), 4, 0, 30);
  }
  node.end(0, first[0], 1000);
  for (int r = 0; r < 4; ++r) {
    CHECK(sched_end(*node.model(r), first[r]) == 145);
    CHECK(sched_end(*node.model(r), second[r]) == 190);
  }
  const CollectiveGroup& group = node.layout->collectives.groups[0];
  CHECK(group.last_count[3] == 1);
  CHECK(group.last_count[0] + group.last_count[1] + group.last_count[2] == 0);
  CHECK(group.last_rank == -1);
  CHECK(group.released == 2);
}

TEST_CASE("collective: launches that do not match their communicator are refused") {
  Node node(2);
  node.allreduce(0, 0, 0, 2, 0, 10);
  // Another world size, another message size for the same op, rank taken
  // by another process, rank out of range.
  node.allreduce(1, 1, 1, 4, 0, 10, CollectiveRefusal::kMismatch);
  node.allreduce(1, 1, 1, 2, 0, 11, CollectiveRefusal::kMismatch);
  node.allreduce(1, 5, 0, 2, 0, 10, CollectiveRefusal::kRankTaken);
  node.allreduce(1, 1, 2, 2, 0, 10, CollectiveRefusal::kBadCall);
  CollectiveRefusal refusal = CollectiveRefusal::kNone;
  CHECK(collective_enqueue(node.layout.get(), CollectiveCall{10, 0, 0, 2}, 1, 101, 1, 0, 0,
                           &refusal) == 0);
  CHECK(refusal == CollectiveRefusal::kBadCall);
}

TEST_CASE("collective: a rank that dies releases its peers and breaks the communicator") {
  Node node(2);
  std::uint64_t r0 = node.allreduce(0, 0, 0, 2, 0, 10);
  std::uint64_t r1 = node.allreduce(1, 1, 1, 2, 0, 10);
  CHECK(r1 != 0);
  std::uint64_t again = node.allreduce(0, 0, 0, 2, 0, 10);  // rank 0's second op
  CHECK(node.end(0, r0, 30) == 10);
  // Rank 1 dies at 30 before its second: rank 0's second, spinning since
  // 10, is released at 30 and transfers 30-40; a further launch fails.
  sched_drop(node.model(1), 1);
  collective_forget_slot(node.layout.get(), 1, 30);
  CHECK(node.end(0, again, 100) == 40);
  node.allreduce(0, 0, 0, 2, 100, 10, CollectiveRefusal::kBroken);
  // Once its last member is gone too, the communicator can start afresh.
  collective_forget_slot(node.layout.get(), 0, 100);
  CHECK(node.layout->collectives.open_ops == 0);
  node.allreduce(0, 0, 0, 2, 100, 10);
}

TEST_CASE("collective: ranks waiting on each other's second collective stop, never loop") {
  // Two communicators launched in opposite orders on two devices: a real
  // deadlock. Settling stops with both devices' clocks short of "now" and
  // projections say they cannot tell.
  Node node(2);
  CollectiveRefusal refusal = CollectiveRefusal::kNone;
  StateLayout* layout = node.layout.get();
  std::uint64_t a0 = collective_enqueue(layout, {10, 1, 0, 2}, 0, 100, 0, 0, 0, &refusal);
  collective_enqueue(layout, {10, 2, 0, 2}, 0, 100, 0, 0, 0, &refusal);
  collective_enqueue(layout, {10, 2, 1, 2}, 1, 101, 1, 0, 0, &refusal);
  collective_enqueue(layout, {10, 1, 1, 2}, 1, 101, 1, 0, 0, &refusal);
  collective_settle(layout, 1000);
  CHECK(node.model(0)->now_ns < 1000);
  CHECK(sched_end(*node.model(0), a0) == -1);
  CHECK(collective_valid(layout->collectives));
}

TEST_CASE("collective: the transfer time follows the ring's 2 (N-1)/N of the message") {
  CollectiveTable table{};
  table.link_bytes_per_s = kNvlinkBytesPerS;
  table.link_latency_ns = kNvlinkLatencyNs;
  // 1 GB among 2 ranks: 1 GB over 450 GB/s = 2.222 ms, plus 10 us.
  CHECK(collective_transfer_ns(table, 1'000'000'000, 2) == 10'000 + 2'222'222);
  // Among 4: 1.5 GB moved, 3.333 ms.
  CHECK(collective_transfer_ns(table, 1'000'000'000, 4) == 10'000 + 3'333'333);
  CHECK(collective_transfer_ns(table, 1'000'000'000, 1) == 10'000);
}

TEST_CASE("collective: a rank that exits no longer holds the others") {
  // Rank 1 ends after the first op (its library unloads at exit): rank 0's
  // second all-reduce, launched at 30, releases at its own start.
  Node node(2);
  node.allreduce(0, 0, 0, 2, 0, 10);
  node.allreduce(1, 1, 1, 2, 0, 10);
  CHECK(node.end(0, 1, 20) == 10);
  collective_leave(node.layout.get(), 1);
  std::uint64_t second = node.allreduce(0, 0, 0, 2, 30, 10);
  CHECK(node.end(0, second, 100) == 40);
  collective_leave(node.layout.get(), 0);
  CHECK(node.layout->collectives.groups[0].comm == 0);
  CHECK(node.layout->collectives.open_ops == 0);
}

TEST_CASE("collective: a scribbled table is refused, and a stray op is dropped") {
  Node node(2);
  char error[256] = "";
  CHECK(validate_layout(node.layout.get(), error, sizeof error));
  CollectiveTable& table = node.layout->collectives;
  table.ops[3].group_plus1 = 999;  // no such group
  CHECK_FALSE(collective_valid(table));
  CHECK_FALSE(validate_layout(node.layout.get(), error, sizeof error));
  CHECK(std::string(error).find("collectives") != std::string::npos);
  table.ops[3].group_plus1 = 0;
  table.groups[2].comm = 7;
  table.groups[2].world_size = 99;  // more ranks than a node has
  CHECK_FALSE(collective_valid(table));
  table.groups[2] = CollectiveGroup{};
  table.ops[5].seq[0] = 1;
  table.ops[5].device[0] = 42;  // no such device
  CHECK_FALSE(collective_valid(table));
  table.ops[5] = CollectiveOp{};
  // An op whose group is free (a writer left it half-done) is dropped
  // when settling, not followed.
  table.ops[1].group_plus1 = 3;
  table.ops[1].release_ns = -1;
  table.open_ops = 1;
  CHECK(collective_valid(table));
  collective_settle(node.layout.get(), 10);
  CHECK(table.ops[1].group_plus1 == 0);
  CHECK(table.open_ops == 0);
}
