// The job's side of the yield page (control_block.h, layout 4): its own
// page, which it marks busy while it has GPU work in flight, and the pages
// of production jobs the coordinator sends it, which its launches wait on.
//
// Costs on the hot paths: a launch loads one process-local pointer and,
// when a page is mapped, the busy word (a cache line the job only stores
// to once per iteration, at its first launch after a synchronisation, with
// a clock read to learn its idle gap); a synchronising call that clears a
// set mark reads the clock, stores twice and makes one FUTEX_WAKE system
// call. A gated launch of an opportunistic job reads its yield_mask and,
// for each slot the mask names, the busy word and the gap.
//
// No libstdc++: only libc, no allocation. Pages are never unmapped while
// the process lives (a launch may hold a pointer to one an instant after
// it is replaced): 4 KiB per production job the job has followed.
#pragma once

#include <atomic>
#include <cstdint>

#include "coord/contract/control_block.h"

namespace gpushare::coord::job {

/// The job's own yield page while registered (null otherwise), read by
/// the launch and synchronisation paths.
extern std::atomic<YieldPage*> g_own_yield;

/// The first launch after a clear: sets the mark and learns the gap.
void yield_mark_start(YieldPage* page);

/// A launch: marks the job busy (one load when already marked).
inline void yield_mark_busy() {
  YieldPage* page = g_own_yield.load(std::memory_order_acquire);
  if (page != nullptr && page->busy.load(std::memory_order_relaxed) == 0) yield_mark_start(page);
}

/// CLOCK_MONOTONIC when the current synchronising call began, while the
/// job's own mark is set (0: none): what yield_clear_busy measures the
/// queue's tail from (control_block.h, "Production's queue").
extern std::atomic<std::uint64_t> g_sync_entry_ns;

/// Reads the clock into g_sync_entry_ns.
void yield_note_sync_entry();

/// Before a synchronising call: when the job's own mark is set, notes when
/// the call began (one load otherwise; a clock read per synchronisation,
/// never per launch).
inline void yield_before_sync() {
  YieldPage* page = g_own_yield.load(std::memory_order_acquire);
  if (page != nullptr && page->busy.load(std::memory_order_relaxed) != 0) yield_note_sync_entry();
}

/// A synchronising call returned: the job's work is known finished; wakes
/// the launches of opportunistic jobs that wait on the mark, and publishes
/// how long the call waited and the mark lasted ("Production's queue").
void yield_clear_busy();

/// What a follower may keep queued beside a busy producer whose page says
/// `tail_ns`, `span_ns` and `gap_ns` (control_block.h, "Production's
/// queue"), before the loop's level scales it: kBusyRoomMaxNs while the
/// producer's synchronisations find little of its own work ahead of them,
/// falling to 0 as its tail reaches kBusyRoomDeepTail of its busy span (a GPU-bound job:
/// whatever we queue, it waits for), and never above kBusyRoomStepShare of
/// its step (span plus gap), which bounds what its synchronisation can find
/// of ours ahead of it. kBusyRoomUnknown while the page has no span yet.
///
/// Late in a mark nothing goes beside it: a batch queued while production
/// is busy is absorbed by the idle moments its remaining launches leave
/// (a framework's step is paced by Python, and its kernels catch up after
/// ours), but near its synchronisation there are too few of them left and
/// the synchronisation waits for our batch. So the room is 0 once less
/// than kBusyRoomLateFactor times (the room plus a batch's switches and
/// cold start, kBusyBatchCostNs) is left of the mark's expected span
/// (`this_span_ns`, predicted from its last marks' spans where they repeat
/// a pattern, else the smoothed `span_ns`) after its tail and the
/// `elapsed_ns` since it was set (kMarkElapsedUnknown: not known, no
/// such rule). Beside the GPT-2 stand-in this raised the opportunistic
/// job from 0.69-0.77 to 0.74-0.84 of the pair without gpushare, with
/// production at 0.98 instead of 0.96-0.97 (docs/colocation.md). The
/// factor trades one pair against the other: 4 gave GPT-2's 0.80-0.85 and
/// ResNet's 0.77-0.88 (its production at 1.0: what absorbs a batch is
/// production's idle share of the rest of its mark, 36% for GPT-2 and
/// 60-80% for ResNet, which the follower cannot see); 2.5 gave 0.78-0.84
/// and 0.80-0.92; 3 gave 0.79-0.84 and 0.85-0.91.
std::uint64_t yield_busy_room(std::uint64_t tail_ns, std::uint64_t span_ns, std::uint64_t gap_ns,
                              std::uint64_t elapsed_ns, std::uint64_t this_span_ns);
inline constexpr std::uint64_t kBusyRoomUnknown = ~0ull;
inline constexpr std::uint64_t kMarkElapsedUnknown = ~0ull;
inline constexpr double kBusyRoomLateFactor = 3;
/// Two switches and a cold start on the simulator's H100 figures (151 us
/// and 250 us, docs/simulated-gpu.md), rounded up.
inline constexpr std::uint64_t kBusyBatchCostNs = 800'000;
/// The spans of the last marks a follower keeps per followed job.
inline constexpr std::uint64_t kSpansKept = 8;
/// The span the next mark will have, from `recent` (recent[0] the last
/// mark's span, recent[1] the one before, ...; 0 where not seen): the span
/// one pattern back where the spans repeat a pattern of 2 to 4 marks
/// clearly (each closest to the one that many marks before, half as far
/// or less as to the one before it, which is 10% or more away); 0
/// otherwise (even spans, or too few seen: the caller's smoothed span is
/// as good).
std::uint64_t yield_predict_span(const std::uint64_t* recent, int count);
/// About one time slice (2.09 ms measured on an H100): beyond it a GPU
/// would slice production's return anyway.
inline constexpr std::uint64_t kBusyRoomMaxNs = 2'000'000;
/// A thirtieth of production's step: what its synchronisation can find of
/// ours ahead of it, within its 3% slowdown target with room for the
/// switches around it. A thirtieth once gave GPT-2's production 0.95-0.96
/// of solo in the colocation check, so this was a fiftieth; with nothing
/// queued late in the mark (kBusyRoomLateFactor) a thirtieth keeps GPT-2's
/// production at 0.98 and lifts ResNet's pair from 0.83-0.90 to 0.89-0.93
/// of the no-gpushare pair (one colocation run each, same machine). For
/// steps of 60 ms or more kBusyRoomMaxNs binds first.
inline constexpr double kBusyRoomStepShare = 1.0 / 30;
/// A tail this share of the busy span or more: a GPU-bound producer,
/// nothing beside it (0.75 was tried: no gain on GPT-2's pair).
inline constexpr double kBusyRoomDeepTail = 0.5;

/// The client thread's tick: while the job's own mark is set, moves its
/// heartbeat (control_block.h), so followers tell a deep queue from a dead
/// or stopped producer. Never on a launch path.
void yield_beat();

/// Maps the job's own page from the registration's third descriptor:
/// writable, then sealed against any later writable mapping (so that the
/// coordinator may pass it on). False, with the descriptor left open, when
/// it cannot be mapped or is not a yield page for `job_id`.
bool yield_map_own(int fd, std::uint64_t job_id, YieldPage** out);

/// Publishes (or, with null, retires) the job's own page; a retired page
/// is cleared and its waiters woken first.
void yield_publish_own(YieldPage* page);

/// Reads what the coordinator sent on a registered socket after the reply:
/// "yield-page" messages with a descriptor each (the descriptor maps read
/// only into the message's slot). Returns false when the socket ended or
/// failed; unknown or malformed messages are ignored.
bool yield_receive(int socket_fd);

/// Forgets the line in progress (a new connection starts a new stream).
void yield_reset_stream();

/// For a gated launch with `mask` (the limits page's yield_mask, or the
/// last one while no coordinator is there): the busy word of a followed
/// production job that has GPU work in flight now, or null when none. A
/// mark held with no new transition is not once its heartbeat has stood
/// still for kYieldHoldMaxNs, or after kYieldHoldCapNs (CLOCK_MONOTONIC
/// `now_ns`).
const std::atomic<std::uint32_t>* yield_busy_word(std::uint64_t mask, std::uint64_t now_ns);

/// What a gated launch of a follower may do now (yield_grant).
struct YieldGrant {
  /// A followed production job has GPU work in flight: wait on this word.
  const std::atomic<std::uint32_t>* busy = nullptr;
  /// Otherwise: how much GPU work the follower may have queued now, in
  /// nanoseconds: what is left of the followed jobs' expected gaps (the
  /// smallest), or kYieldFreeGrantNs where no gap is known or a job is long
  /// overdue; 0 while a job is expected back any moment.
  std::uint64_t grant_ns = 0;
  /// With a grant of 0: when to look again (at most 1 ms).
  std::uint64_t retry_ns = 0;
  /// With `busy`: what may stay queued beside the busy producers (the
  /// smallest yield_busy_room of those marked), or kBusyRoomUnknown.
  std::uint64_t busy_room_ns = kBusyRoomUnknown;
  /// No followed job is busy or within a known gap (kYieldFreeGrantNs):
  /// nothing says when production comes back.
  bool free = false;
};

/// The queued work a follower may hold while no followed job has a known
/// gap (none measured yet, or one twice overdue: it paused): about one
/// time slice, so a job that returns unannounced waits for at most that.
inline constexpr std::uint64_t kYieldFreeGrantNs = 2'000'000;

/// How long one opportunistic job's turn lasts where several share a
/// device's gaps (control_block.h, "Turns"): a few production steps, so
/// that a turn covers gaps long and short whatever production's pattern of
/// synchronisations, and the switch its end costs is rare.
inline constexpr std::uint64_t kYieldTurnNs = 100'000'000;

/// Whether CLOCK_MONOTONIC `now_ns` falls in turn `turn` of `turns` (the
/// turns go round by kYieldTurnNs on the clock every process shares, so
/// followers agree without talking); always with fewer than two turns.
constexpr bool yield_is_turn(std::uint64_t now_ns, std::uint32_t turn, std::uint32_t turns) {
  return turns <= 1 || (now_ns / kYieldTurnNs) % turns == turn;
}

/// From `now_ns`, how long until turn `turn` of `turns` begins (0 within it).
constexpr std::uint64_t yield_turn_wait_ns(std::uint64_t now_ns, std::uint32_t turn,
                                           std::uint32_t turns) {
  if (yield_is_turn(now_ns, turn, turns)) return 0;
  std::uint64_t slot = now_ns / kYieldTurnNs;
  std::uint64_t ahead = (turn + turns - slot % turns) % turns;
  return (slot + ahead) * kYieldTurnNs - now_ns;
}

/// For a gated launch under `mask` at CLOCK_MONOTONIC `now_ns`: a busy
/// followed job (yield_busy_word's rule), else the GPU time the follower
/// may keep queued. A job's gap is its last clear plus its estimated gap;
/// past its end the job is expected back and the grant is 0, until twice
/// its gap has passed (then its pattern is taken as broken) or the rule
/// has held launches back for kYieldHoldMaxNs without the job being seen
/// busy (a page that always says "back soon" but never is).
YieldGrant yield_grant(std::uint64_t mask, std::uint64_t now_ns);

/// What a follower sees of the production jobs under `mask`, for its
/// compute trace and for telling a clean stretch of its own work from one
/// another context's work may have stretched (throttle.cc). Read-only
/// loads; no clock.
struct YieldMarks {
  int slots = 0;                  ///< followed pages mapped under the mask
  bool busy = false;              ///< any of them marked busy now
  std::uint64_t marks = 0;        ///< their 0 -> 1 transitions, summed
  std::uint64_t beats = 0;        ///< their heartbeats, summed
  std::uint64_t gap_ns = 0;       ///< the smallest known gap estimate; 0: none
  std::uint64_t cleared_ns = 0;   ///< the latest clear; 0: none
};
YieldMarks yield_marks(std::uint64_t mask);

/// Waits (futex, never spinning) while `word` stays 1, at most timeout_ns.
void yield_wait(const std::atomic<std::uint32_t>* word, std::uint64_t timeout_ns);

}  // namespace gpushare::coord::job
