// The yield page end to end in one process: the coordinator's page, the
// job's seal, what a receiver may not do, and the futex between them.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "coord/contract/fd_passing.h"
#include "coord/job/yield.h"
#include "coord/server/registry/control_block_owner.h"

using namespace gpushare;
using namespace gpushare::coord;
using namespace gpushare::coord::job;
using namespace gpushare::coord::server;

namespace {

std::unique_ptr<ControlBlock> make_block(std::uint64_t id) {
  std::uint64_t limits[1] = {kNoLimit};
  auto block = ControlBlock::create(id, 1, limits, kQosProduction);
  REQUIRE(block.ok());
  return std::move(*block);
}

// Sends `line` with `fd` over a socket, as the server does.
void send_with_fd(int socket_fd, const std::string& line, int fd) {
  REQUIRE(send_with_fds(socket_fd, line.data(), line.size(), &fd, 1, 0) ==
          static_cast<ssize_t>(line.size()));
}

// This process follows `block`'s yield page in `slot`, sent as the server
// sends it; returns the mask bit that names the slot.
std::uint64_t follow_in_slot(const ControlBlock& block, int slot) {
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  yield_reset_stream();
  send_with_fd(pair[0], "{\"kind\":\"yield-page\",\"version\":1,\"slot\":" + std::to_string(slot) + "}\n",
               block.yield_fd());
  REQUIRE(yield_receive(pair[1]));
  close(pair[0]);
  close(pair[1]);  // the mapping keeps the page
  return std::uint64_t{1} << slot;
}

}  // namespace

TEST_CASE("a yield page is passed on only once its job sealed it", "[coord][yield]") {
  auto block = make_block(5);
  CHECK_FALSE(block->yield_sealed());
  YieldPage* own = nullptr;
  REQUIRE(yield_map_own(block->yield_fd(), 5, &own));
  CHECK(block->yield_sealed());
  // The job's mapping writes; the coordinator sees it.
  own->busy.store(1);
  CHECK(block->yield_busy());
  munmap(own, kControlPageBytes);
}

TEST_CASE("a job refuses a yield page of another job", "[coord][yield]") {
  auto block = make_block(5);
  YieldPage* own = nullptr;
  CHECK_FALSE(yield_map_own(block->yield_fd(), 6, &own));
  CHECK_FALSE(block->yield_sealed());
}

TEST_CASE("a receiver of a sealed yield page cannot write it", "[coord][yield]") {
  auto block = make_block(5);
  YieldPage* own = nullptr;
  REQUIRE(yield_map_own(block->yield_fd(), 5, &own));
  int fd = block->yield_fd();
  errno = 0;
  CHECK(mmap(nullptr, kControlPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
  CHECK(errno == EPERM);
  void* readable = mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(readable != MAP_FAILED);
  CHECK(mprotect(readable, kControlPageBytes, PROT_READ | PROT_WRITE) != 0);
  munmap(readable, kControlPageBytes);
  std::uint32_t one = 1;
  CHECK(pwrite(fd, &one, sizeof one, 64) < 0);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  int reopened = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (reopened >= 0) {
    CHECK(pwrite(reopened, &one, sizeof one, 64) < 0);
    CHECK(mmap(nullptr, kControlPageBytes, PROT_WRITE, MAP_SHARED, reopened, 0) == MAP_FAILED);
    close(reopened);
  }
  CHECK(ftruncate(fd, 0) != 0);
  CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) != 0);  // sealed for good
  CHECK(own->busy.load() == 0);
  munmap(own, kControlPageBytes);
}

TEST_CASE("marks set at a launch, clear at a sync, and a departed job's mark clears",
          "[coord][yield]") {
  auto block = make_block(5);
  YieldPage* own = nullptr;
  REQUIRE(yield_map_own(block->yield_fd(), 5, &own));
  yield_publish_own(own);
  yield_mark_busy();
  yield_mark_busy();
  CHECK(block->yield_busy());
  CHECK(block->yield_marks() == 1);  // one transition, however many launches
  yield_clear_busy();
  CHECK_FALSE(block->yield_busy());
  yield_mark_busy();
  CHECK(block->yield_marks() == 2);
  yield_publish_own(nullptr);  // retired: cleared for whoever waits on it
  CHECK_FALSE(block->yield_busy());
  yield_mark_busy();  // no page: nothing
  CHECK_FALSE(block->yield_busy());
  munmap(own, kControlPageBytes);
}

TEST_CASE("a received page is followed by its slot and a waiter wakes at the clear",
          "[coord][yield]") {
  auto block = make_block(5);
  YieldPage* producer = nullptr;
  REQUIRE(yield_map_own(block->yield_fd(), 5, &producer));
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  yield_reset_stream();
  send_with_fd(pair[0], "{\"kind\":\"yield-page\",\"version\":1,\"slot\":3}\n", block->yield_fd());
  // A message of another kind with a descriptor is ignored (and closed).
  send_with_fd(pair[0], "{\"kind\":\"other\",\"version\":1,\"slot\":2}\n", block->yield_fd());
  CHECK(yield_receive(pair[1]));
  CHECK(yield_receive(pair[1]));
  CHECK(yield_busy_word(std::uint64_t{1} << 3, 1000) == nullptr);  // followed, not busy
  producer->busy.store(1);
  const std::atomic<std::uint32_t>* word = yield_busy_word(std::uint64_t{1} << 3, 1000);
  REQUIRE(word != nullptr);
  CHECK(yield_busy_word(std::uint64_t{1} << 2, 1000) == nullptr);  // slot 2 was never sent
  CHECK(yield_busy_word(0, 1000) == nullptr);

  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    yield_wait(word, 30'000'000'000ull);  // the clear, not the timeout, ends it
    woke = true;
  });
  yield_publish_own(producer);
  yield_clear_busy();  // the producer synchronised
  waiter.join();
  CHECK(woke);
  CHECK(yield_busy_word(std::uint64_t{1} << 3, 1000) == nullptr);
  // A mark held with no new transition is ignored after kYieldHoldMaxNs.
  producer->marks.fetch_add(1);
  producer->busy.store(1);
  CHECK(yield_busy_word(std::uint64_t{1} << 3, 2000) != nullptr);
  CHECK(yield_busy_word(std::uint64_t{1} << 3, 2000 + kYieldHoldMaxNs - 1) != nullptr);
  CHECK(yield_busy_word(std::uint64_t{1} << 3, 2000 + kYieldHoldMaxNs) == nullptr);
  producer->marks.fetch_add(1);  // set again: followed again
  CHECK(yield_busy_word(std::uint64_t{1} << 3, 3000 + kYieldHoldMaxNs) != nullptr);
  // A mark whose heartbeat moves (a deep queue in its synchronisation) is
  // followed past kYieldHoldMaxNs, until the beats stop for that long or
  // the hold reaches kYieldHoldCapNs.
  producer->marks.fetch_add(1);
  std::uint64_t t = 4 * kYieldHoldMaxNs;
  CHECK(yield_busy_word(std::uint64_t{1} << 3, t) != nullptr);
  yield_publish_own(producer);  // the page is this process's own: yield_beat() moves it
  std::uint64_t beat = t;
  for (; beat < t + 5 * kYieldHoldMaxNs; beat += kYieldHoldMaxNs / 10) {
    yield_beat();  // the client thread's tick, while the mark is set
    CHECK(yield_busy_word(std::uint64_t{1} << 3, beat) != nullptr);
  }
  yield_publish_own(nullptr);
  producer->busy.store(1);  // retiring the page cleared it: the producer (a test) holds it
  beat -= kYieldHoldMaxNs / 10;
  CHECK(yield_busy_word(std::uint64_t{1} << 3, beat + kYieldHoldMaxNs - 1) != nullptr);
  CHECK(yield_busy_word(std::uint64_t{1} << 3, beat + kYieldHoldMaxNs) == nullptr);  // stopped
  // Beats again: followed again.
  producer->beats.fetch_add(1);
  CHECK(yield_busy_word(std::uint64_t{1} << 3, beat + kYieldHoldMaxNs + 1) != nullptr);
  for (std::uint64_t at = beat + 2 * kYieldHoldMaxNs; at < t + kYieldHoldCapNs;
       at += kYieldHoldMaxNs / 2) {
    producer->beats.fetch_add(1);
    CHECK(yield_busy_word(std::uint64_t{1} << 3, at) != nullptr);
  }
  producer->beats.fetch_add(1);
  CHECK(yield_busy_word(std::uint64_t{1} << 3, t + kYieldHoldCapNs) == nullptr);  // the cap
  producer->busy.store(0);
  yield_publish_own(nullptr);
  close(pair[0]);
  CHECK_FALSE(yield_receive(pair[1]));  // the coordinator went away
  close(pair[1]);
  munmap(producer, kControlPageBytes);
}

TEST_CASE("a yield mask keeps the throttle flag set", "[coord][yield]") {
  auto block = make_block(5);
  auto* limits = static_cast<const LimitsPage*>(
      mmap(nullptr, kControlPageBytes, PROT_READ, MAP_SHARED, block->limits_fd(), 0));
  REQUIRE(limits != MAP_FAILED);
  CHECK(limits->throttle.load() == 0);
  block->set_yield_mask(0, 5);
  CHECK(limits->devices[0].yield_mask.load() == 5);
  CHECK(limits->throttle.load() == 1);
  block->set_yield_mask(0, 0);
  CHECK(limits->throttle.load() == 0);
  munmap(const_cast<LimitsPage*>(limits), kControlPageBytes);
}

TEST_CASE("a production job publishes its idle gap and a follower queues work only inside it",
          "[coord][yield]") {
  auto block = make_block(5);
  YieldPage* producer = nullptr;
  REQUIRE(yield_map_own(block->yield_fd(), 5, &producer));
  yield_publish_own(producer);
  // Two iterations: launch, sync, a host gap, launch again.
  yield_mark_busy();
  yield_clear_busy();
  std::uint64_t cleared = producer->cleared_ns.load();
  CHECK(cleared > 0);
  CHECK(producer->gap_ns.load() == 0);  // no gap seen yet
  yield_mark_busy();
  std::uint64_t first_gap = producer->gap_ns.load();
  CHECK(first_gap > 0);
  yield_clear_busy();
  yield_publish_own(nullptr);

  // A follower's view of a job that cleared at t0 with gaps of 8 ms.
  constexpr std::uint64_t kMs = 1'000'000;
  std::uint64_t mask = follow_in_slot(*block, 1);
  std::uint64_t t0 = 1000 * kMs;
  producer->busy.store(0);
  producer->cleared_ns.store(t0);
  producer->gap_ns.store(8 * kMs);
  auto grant_at = [&](std::uint64_t now) { return yield_grant(mask, now).grant_ns; };
  auto retry_at = [&](std::uint64_t now) { return yield_grant(mask, now).retry_ns; };
  CHECK(grant_at(t0 + 1 * kMs) == 7 * kMs);  // what is left of the gap, in one grant
  CHECK(grant_at(t0 + 6 * kMs) == 2 * kMs);
  CHECK(grant_at(t0 + 8 * kMs) == 0);  // expected back: nothing more queued
  CHECK(retry_at(t0 + 8 * kMs) == 1 * kMs);
  CHECK(retry_at(t0 + 15 * kMs + kMs / 2) == kMs / 2);  // until twice the gap
  CHECK(grant_at(t0 + 16 * kMs) == kYieldFreeGrantNs);  // twice overdue: pattern broken
  CHECK(yield_grant(0, t0 + 8 * kMs).grant_ns == kYieldFreeGrantNs);  // not followed
  producer->busy.store(1);
  producer->marks.fetch_add(1);
  CHECK(yield_grant(mask, t0 + 1 * kMs).busy != nullptr);  // busy: wait for its clear
  CHECK(yield_grant(mask, t0 + 1 * kMs).grant_ns == 0);
  producer->busy.store(0);
  // A page that keeps saying "back soon" and is never seen busy holds
  // launches back for kYieldHoldMaxNs at most.
  std::uint64_t t1 = t0 + 100 * kMs;
  producer->cleared_ns.store(t1);
  CHECK(grant_at(t1 + 9 * kMs) == 0);  // held from here
  std::uint64_t t2 = t1 + kYieldHoldMaxNs;
  producer->cleared_ns.store(t2);  // "back soon" again, never busy
  CHECK(grant_at(t2 + 9 * kMs) == kYieldFreeGrantNs);
  producer->busy.store(1);  // seen busy: its gap counts again
  producer->marks.fetch_add(1);
  CHECK(yield_busy_word(mask, t2 + 8 * kMs) != nullptr);
  producer->busy.store(0);
  CHECK(grant_at(t2 + 9 * kMs) == 0);
  producer->cleared_ns.store(t0);
  producer->gap_ns.store(0);
  CHECK(grant_at(t0 + 7 * kMs) == kYieldFreeGrantNs);  // gap unknown
  munmap(producer, kControlPageBytes);
}

TEST_CASE("a production job publishes its queue's tail and span at the clearing synchronisation",
          "[coord][yield]") {
  auto block = make_block(5);
  YieldPage* producer = nullptr;
  REQUIRE(yield_map_own(block->yield_fd(), 5, &producer));
  yield_publish_own(producer);
  CHECK(producer->tail_ns.load() == 0);
  CHECK(producer->span_ns.load() == 0);
  // A step: launches, then a synchronising call that waits for the GPU.
  yield_mark_busy();
  std::uint64_t marked = producer->marked_ns.load();
  CHECK(marked > 0);
  yield_before_sync();
  std::uint64_t entry = g_sync_entry_ns.load();
  CHECK(entry >= marked);
  timespec wait{0, 2'000'000};  // the GPU's tail: what the call waits for
  nanosleep(&wait, nullptr);
  yield_clear_busy();
  std::uint64_t tail = producer->tail_ns.load();
  std::uint64_t span = producer->span_ns.load();
  CHECK(tail >= 2'000'000);
  CHECK(span >= tail);
  CHECK(span == producer->cleared_ns.load() - marked);
  // A synchronisation with no wait lowers the tail by an eighth of the
  // difference only (a follower errs toward a deep queue); a call that
  // began before the mark (no entry noted) measures no tail.
  yield_mark_busy();
  yield_before_sync();
  yield_clear_busy();
  CHECK(producer->tail_ns.load() < tail);
  CHECK(producer->tail_ns.load() >= tail - tail / 8);
  std::uint64_t kept = producer->tail_ns.load();
  yield_mark_busy();
  yield_clear_busy();
  CHECK(producer->tail_ns.load() == kept);
  yield_publish_own(nullptr);
  munmap(producer, kControlPageBytes);
}

TEST_CASE("a follower's room beside a busy producer follows its queue's tail", "[coord][yield]") {
  constexpr std::uint64_t kMs = 1'000'000;
  // Nothing measured yet: the caller's default.
  CHECK(yield_busy_room(0, 0, 0, kMarkElapsedUnknown, 0) == kBusyRoomUnknown);
  // A framework's pace (ResNet-50 beside a long host phase): no tail in a
  // 34-ms mark, an 80-ms gap: the whole room; a 1-ms tail, a little less.
  CHECK(yield_busy_room(0, 34 * kMs, 80 * kMs, kMarkElapsedUnknown, 0) == kBusyRoomMaxNs);
  std::uint64_t short_tail = yield_busy_room(1 * kMs, 34 * kMs, 80 * kMs, kMarkElapsedUnknown, 0);
  CHECK(short_tail < kBusyRoomMaxNs);
  CHECK(short_tail > kBusyRoomMaxNs * 9 / 10);
  // ... but never above a thirtieth of the step (span plus gap).
  CHECK(yield_busy_room(0, 10 * kMs, 5 * kMs, kMarkElapsedUnknown, 0) == 15 * kMs / 30);
  // A GPU-bound job (ten 1.4-ms products queued at once): the call waits
  // for nearly all of its mark; nothing beside it.
  CHECK(yield_busy_room(13 * kMs, 14 * kMs, 15 * kMs, kMarkElapsedUnknown, 0) == 0);
  CHECK(yield_busy_room(7 * kMs, 14 * kMs, 15 * kMs, kMarkElapsedUnknown, 0) == 0);
  // In between, less room as the tail grows.
  std::uint64_t quarter = yield_busy_room(25 * kMs / 4, 25 * kMs, 100 * kMs, kMarkElapsedUnknown, 0);
  CHECK(quarter == kBusyRoomMaxNs / 2);
}

TEST_CASE("a follower queues nothing beside a producer late in its mark", "[coord][yield]") {
  constexpr std::uint64_t kMs = 1'000'000;
  // GPT-2's stand-in: a 37-ms mark with a 1-ms tail, a 25-ms gap. Early
  // in the mark its remaining launches' idle moments absorb a batch: the
  // room is the thirtieth of its step.
  std::uint64_t early = yield_busy_room(1 * kMs, 37 * kMs, 25 * kMs, 2 * kMs, 0);
  CHECK(early == yield_busy_room(1 * kMs, 37 * kMs, 25 * kMs, kMarkElapsedUnknown, 0));
  CHECK(early > 1 * kMs);
  // Late in it: nothing, once less than kBusyRoomLateFactor times the
  // room and a batch's cost is left before its tail.
  double need = kBusyRoomLateFactor * static_cast<double>(early + kBusyBatchCostNs);
  auto at = [&](double left_ns) {
    return yield_busy_room(1 * kMs, 37 * kMs, 25 * kMs,
                           static_cast<std::uint64_t>(36 * kMs - left_ns), 0);
  };
  CHECK(at(need + 0.1 * kMs) == early);
  CHECK(at(need - 0.1 * kMs) == 0);
  CHECK(yield_busy_room(1 * kMs, 37 * kMs, 25 * kMs, 40 * kMs, 0) == 0);  // overdue
  // A mark predicted longer than the smoothed span (a pattern's long
  // step) keeps its room for longer.
  CHECK(yield_busy_room(1 * kMs, 37 * kMs, 25 * kMs, 30 * kMs, 0) == 0);
  CHECK(yield_busy_room(1 * kMs, 37 * kMs, 25 * kMs, 30 * kMs, 47 * kMs) == early);
}

TEST_CASE("a follower predicts a producer's mark from the pattern of its last marks",
          "[coord][yield]") {
  constexpr std::uint64_t kMs = 1'000'000;
  // ResNet's stand-in repeats marks of 26, 28 and 47 ms: the next is the
  // one three back. recent[0] is the last mark.
  std::uint64_t three[] = {47 * kMs, 28 * kMs, 26 * kMs, 47 * kMs,
                           28 * kMs, 26 * kMs, 47 * kMs, 28 * kMs};
  CHECK(yield_predict_span(three, 8) == 26 * kMs);
  // Alternating marks: two back.
  std::uint64_t two[] = {10 * kMs, 30 * kMs, 10 * kMs, 30 * kMs,
                         10 * kMs, 30 * kMs, 10 * kMs, 30 * kMs};
  CHECK(yield_predict_span(two, 8) == 30 * kMs);
  // Even marks with a little noise: no pattern, the smoothed span serves.
  std::uint64_t even[] = {37 * kMs, 38 * kMs, 36 * kMs, 37 * kMs,
                          38 * kMs, 37 * kMs, 36 * kMs, 38 * kMs};
  CHECK(yield_predict_span(even, 8) == 0);
  // Too few seen (marks the follower slept through): none.
  std::uint64_t sparse[] = {47 * kMs, 0, 0, 47 * kMs, 0, 0, 0, 0};
  CHECK(yield_predict_span(sparse, 8) == 0);
}

TEST_CASE("opportunistic jobs take turns at production's gaps by the shared clock",
          "[coord][yield]") {
  constexpr std::uint64_t kTurn = kYieldTurnNs;
  // One job, or none: always its turn.
  CHECK(yield_is_turn(12345, 0, 0));
  CHECK(yield_is_turn(12345, 0, 1));
  CHECK(yield_turn_wait_ns(12345, 0, 1) == 0);
  // Three: round-robin by kYieldTurnNs, exactly one job's turn at a time.
  for (std::uint64_t t : {std::uint64_t{0}, kTurn / 2, kTurn, 5 * kTurn + 7, 1'000 * kTurn + 3}) {
    int owners = 0;
    for (std::uint32_t turn = 0; turn < 3; ++turn) owners += yield_is_turn(t, turn, 3) ? 1 : 0;
    CHECK(owners == 1);
  }
  CHECK(yield_is_turn(4 * kTurn + 1, 1, 3));  // 4 mod 3
  // How long until a turn: to the start of the next slot that is its.
  CHECK(yield_turn_wait_ns(4 * kTurn + 1, 1, 3) == 0);
  CHECK(yield_turn_wait_ns(4 * kTurn + 1, 2, 3) == kTurn - 1);
  CHECK(yield_turn_wait_ns(4 * kTurn + 1, 0, 3) == 2 * kTurn - 1);
  CHECK(yield_is_turn(4 * kTurn + 1 + yield_turn_wait_ns(4 * kTurn + 1, 0, 3), 0, 3));
}

TEST_CASE("a follower beside a busy producer is told its room by the producer's page",
          "[coord][yield]") {
  constexpr std::uint64_t kMs = 1'000'000;
  auto block = make_block(5);
  YieldPage* producer = nullptr;
  REQUIRE(yield_map_own(block->yield_fd(), 5, &producer));
  std::uint64_t mask = follow_in_slot(*block, 2);
  std::uint64_t now = 5000 * kMs;
  producer->busy.store(1);
  producer->marks.fetch_add(1);
  CHECK(yield_grant(mask, now).busy_room_ns == kBusyRoomUnknown);
  producer->span_ns.store(34 * kMs);
  producer->gap_ns.store(80 * kMs);
  producer->tail_ns.store(0);
  YieldGrant grant = yield_grant(mask, now);
  CHECK(grant.busy != nullptr);
  CHECK(grant.busy_room_ns == kBusyRoomMaxNs);
  producer->tail_ns.store(30 * kMs);  // GPU-bound now
  CHECK(yield_grant(mask, now).busy_room_ns == 0);
  producer->busy.store(0);
  munmap(producer, kControlPageBytes);
}
