#include "simgpu/link.h"

namespace gpushare::simgpu {
namespace {

constexpr std::int64_t kMaxDurationNs = 1'000'000'000'000'000'000;  // about 31 years

std::int64_t max64(std::int64_t a, std::int64_t b) { return a > b ? a : b; }

std::uint32_t bounded_count(const LinkQueue& lane) {
  return lane.count < kLinkSlots ? lane.count : kLinkSlots;
}

// Drops the stretches that ended by `now_ns` (they are sorted, so a prefix).
void forget_past(LinkQueue* lane, std::int64_t now_ns) {
  std::uint32_t count = bounded_count(*lane);
  std::uint32_t keep_from = 0;
  while (keep_from < count && lane->slots[keep_from].end_ns <= now_ns) ++keep_from;
  for (std::uint32_t i = keep_from; i < count; ++i) lane->slots[i - keep_from] = lane->slots[i];
  lane->count = count - keep_from;
}

// The first stretch of `lane` overlapping [start, end), or nullptr.
const LinkInterval* overlap(const LinkQueue& lane, std::int64_t start, std::int64_t end) {
  for (std::uint32_t i = 0; i < bounded_count(lane); ++i) {
    const LinkInterval& slot = lane.slots[i];
    if (slot.start_ns < end && slot.end_ns > start) return &slot;
  }
  return nullptr;
}

// Inserts a free stretch in order; a full lane merges it with a neighbour.
void insert(LinkQueue* lane, LinkInterval stretch) {
  std::uint32_t count = bounded_count(*lane);
  std::uint32_t at = 0;
  while (at < count && lane->slots[at].start_ns < stretch.start_ns) ++at;
  if (count == kLinkSlots) {
    if (at > 0) {
      lane->slots[at - 1].end_ns = stretch.end_ns;  // the gap before it counts as busy
    } else {
      lane->slots[0].start_ns = stretch.start_ns;
    }
    return;
  }
  for (std::uint32_t i = count; i > at; --i) lane->slots[i] = lane->slots[i - 1];
  lane->slots[at] = stretch;
  lane->count = count + 1;
}

}  // namespace

std::int64_t link_duration_ns(std::uint64_t bytes, std::uint64_t bytes_per_s,
                              std::int64_t latency_ns) {
  if (bytes == 0) return 0;
  unsigned __int128 transfer = 0;
  if (bytes_per_s > 0) {
    transfer =
        (static_cast<unsigned __int128>(bytes) * 1'000'000'000u + bytes_per_s - 1) / bytes_per_s;
  }
  unsigned __int128 total =
      transfer + static_cast<unsigned __int128>(latency_ns > 0 ? latency_ns : 0);
  return total > static_cast<unsigned __int128>(kMaxDurationNs) ? kMaxDurationNs
                                                                : static_cast<std::int64_t>(total);
}

LinkInterval link_reserve(LinkQueue* const* lanes, int count, std::int64_t now_ns,
                          std::int64_t earliest_ns, std::int64_t duration_ns, std::uint64_t bytes) {
  for (int i = 0; i < count; ++i) forget_past(lanes[i], now_ns);
  std::int64_t start = max64(now_ns, earliest_ns);
  if (duration_ns <= 0) return LinkInterval{start, start};
  // Move past every stretch in the way until none is: each move goes to a
  // stretch's end, later than before, and there are finitely many.
  for (bool moved = true; moved;) {
    moved = false;
    for (int i = 0; i < count; ++i) {
      if (const LinkInterval* busy = overlap(*lanes[i], start, start + duration_ns)) {
        start = busy->end_ns;
        moved = true;
      }
    }
  }
  LinkInterval stretch{start, start + duration_ns};
  for (int i = 0; i < count; ++i) {
    insert(lanes[i], stretch);
    ++lanes[i]->transfers;
    lanes[i]->bytes += bytes;
    lanes[i]->busy_ns += duration_ns;
  }
  return stretch;
}

std::int64_t link_busy_until(const LinkQueue& lane) {
  std::uint32_t count = bounded_count(lane);
  return count == 0 ? 0 : lane.slots[count - 1].end_ns;
}

bool link_valid(const LinkQueue& lane) {
  if (lane.count > kLinkSlots) return false;
  for (std::uint32_t i = 0; i < lane.count; ++i) {
    if (lane.slots[i].end_ns < lane.slots[i].start_ns) return false;
    if (i > 0 && lane.slots[i].start_ns < lane.slots[i - 1].end_ns) return false;
  }
  return true;
}

}  // namespace gpushare::simgpu
