// Max-min fair sharing of the opportunistic room (memory_arbiter.h).
#include "coord/server/memory/memory_arbiter.h"

#include <algorithm>
#include <numeric>

namespace gpushare::coord::server {

namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > kNoLimit - b ? kNoLimit : a + b;
}

// What an opportunistic job wants on the device: its managed bytes, capped
// by its limit less its pinned bytes.
std::uint64_t want_of(const ArbiterJob& job) {
  if (job.mem_limit == kNoLimit) return job.managed_bytes;
  std::uint64_t room = job.mem_limit > job.pinned_bytes ? job.mem_limit - job.pinned_bytes : 0;
  return std::min(job.managed_bytes, room);
}

// Water filling: shares `room` among `wants`; returns each one's share.
std::vector<std::uint64_t> water_fill(std::uint64_t room, const std::vector<std::uint64_t>& wants) {
  std::vector<std::uint64_t> shares(wants.size(), 0);
  std::vector<std::size_t> order(wants.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return wants[a] != wants[b] ? wants[a] < wants[b] : a < b;
  });
  std::size_t left = order.size();
  for (std::size_t index : order) {
    std::uint64_t equal = room / left;
    shares[index] = std::min(wants[index], equal);
    room -= shares[index];
    --left;
  }
  return shares;
}

}  // namespace

ArbiterResult arbitrate(std::uint64_t capacity, const std::vector<ArbiterJob>& jobs) {
  ArbiterResult result;
  std::uint64_t production = 0, pinned = 0;
  std::vector<std::uint64_t> wants;
  for (const ArbiterJob& job : jobs) {
    if (job.qos == kQosOpportunistic) {
      pinned = saturating_add(pinned, job.pinned_bytes);
      wants.push_back(want_of(job));
    } else {
      production = saturating_add(production, saturating_add(job.held_bytes, job.request_bytes));
    }
  }
  std::uint64_t fixed = saturating_add(production, pinned);
  result.fits = fixed <= capacity;
  result.opportunistic_room = result.fits ? capacity - fixed : 0;
  std::vector<std::uint64_t> shares = water_fill(result.opportunistic_room, wants);
  std::size_t next = 0;
  for (const ArbiterJob& job : jobs) {
    if (job.qos != kQosOpportunistic) continue;
    std::uint64_t share = shares[next++];
    ArbiterTarget target{job.id, kNoLimit};
    if (share < job.managed_bytes) target.device_resident_target = share;
    result.spill_bytes = saturating_add(result.spill_bytes, job.managed_bytes - share);
    result.targets.push_back(target);
  }
  return result;
}

}  // namespace gpushare::coord::server
