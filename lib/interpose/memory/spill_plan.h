// Planning one batch of migrations toward a device-resident target
// (spill.h): which allocations move, on which migration stream, and the
// order of the driver calls. Pure (no driver, no clock), so that the order
// is tested on its own (tests/unit/interpose_spill_plan_test.cc).
//
// Why a batch: one prefetch at a time, each waited for, leaves the link
// idle between allocations and gives the driver no chance to overlap its
// own work (on an H100, 24 GiB moved at a quarter of the link that way).
// A batch issues every advice and prefetch before it waits once:
//
//   1. an event recorded on the context's legacy stream (stream 0): every
//      migration is ordered after the work the program queued there, as a
//      prefetch on stream 0 was;
//   2. each migration stream waits for that event;
//   3. per chosen allocation, largest first: its preferred-location advice,
//      then its prefetch on the stream with the fewest bytes assigned so far
//      (largest first onto the least loaded: the streams end close
//      together);
//   4. one synchronisation per stream.
//
// Without migration streams (none could be created) the batch runs on the
// legacy stream: advice and prefetch for each, then one synchronisation.
// The link is one resource whatever the number of streams: the streams
// only keep it busy, they do not add bandwidth.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpushare::interpose {

/// Streams a batch spreads its prefetches over.
inline constexpr int kMigrationStreams = 4;

/// One allocation that may move, as the planner needs it.
struct MigrationCandidate {
  std::uint64_t bytes;
  bool on_host;
};

/// Toward the host: indices of `candidates` (sorted largest first) to move
/// so that `resident` falls to `target` or below, largest first, skipping
/// those already on the host. Returns how many were written to `chosen`.
std::size_t choose_spill(const MigrationCandidate* candidates, std::size_t count,
                         std::uint64_t resident, std::uint64_t target, std::size_t* chosen);

/// Back to the device: indices of host-resident candidates that fit both
/// under `target` (kNoLimit: none) and in `room` (the device's free memory
/// now), largest first, each counted before the next is judged.
std::size_t choose_restore(const MigrationCandidate* candidates, std::size_t count,
                           std::uint64_t resident, std::uint64_t target, std::uint64_t room,
                           std::size_t* chosen);

enum class StepKind : std::uint8_t {
  kRecordLegacy,  ///< record the batch's event on the legacy stream
  kStreamWait,    ///< `stream` waits for that event
  kAdvise,        ///< preferred-location advice for `item`
  kPrefetch,      ///< prefetch `item` on `stream` (-1: the legacy stream)
  kSynchronize,   ///< wait for `stream` (-1: the legacy stream)
};

struct MigrationStep {
  StepKind kind;
  int stream;        ///< 0..streams-1, or -1 for the legacy stream
  std::size_t item;  ///< an index into `candidates` (kAdvise, kPrefetch)
};

/// The steps needed at most for `count` items.
constexpr std::size_t batch_steps(std::size_t count) {
  return 1 + 2 * static_cast<std::size_t>(kMigrationStreams) + 2 * count + 1;
}

/// Writes the driver calls for moving the `count` items of `chosen` on
/// `streams` migration streams (0 to kMigrationStreams; 0: the legacy
/// stream alone) in the order above. Returns the number of steps (0 when
/// `capacity` is below batch_steps(count)).
std::size_t plan_batch(const MigrationCandidate* candidates, const std::size_t* chosen,
                       std::size_t count, int streams, MigrationStep* steps, std::size_t capacity);

}  // namespace gpushare::interpose
