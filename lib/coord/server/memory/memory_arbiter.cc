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

// What production holds on the device outside its wait (the reserved part
// of a wait is inside held_bytes, never more than it).
std::uint64_t held_outside_wait(const ArbiterJob& job) {
  return job.held_bytes - std::min(job.waiting_bytes, job.held_bytes);
}

// What refusing the job's wait frees.
std::uint64_t wait_of(const ArbiterJob& job) {
  return saturating_add(std::min(job.waiting_bytes, job.held_bytes), job.request_bytes);
}

// The waits to refuse so that production and pinned memory fit in
// `capacity`: the largest first (ties: the later input first), as few as
// possible; all of them when even that is not enough. Returns what is
// fixed on the device once they are gone.
std::uint64_t choose_refusals(const std::vector<ArbiterJob>& jobs, std::uint64_t capacity,
                              std::vector<std::size_t>* refused) {
  std::vector<std::size_t> waits;
  std::uint64_t fixed = 0;  // everything but the waits, summed without wrapping
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const ArbiterJob& job = jobs[i];
    if (job.qos == kQosOpportunistic) {
      fixed = saturating_add(fixed, job.pinned_bytes);
      continue;
    }
    fixed = saturating_add(fixed, held_outside_wait(job));
    if (wait_of(job) != 0) waits.push_back(i);
  }
  std::sort(waits.begin(), waits.end(), [&](std::size_t a, std::size_t b) {
    std::uint64_t wa = wait_of(jobs[a]), wb = wait_of(jobs[b]);
    return wa != wb ? wa > wb : a > b;
  });
  // Keep the smallest waits that fit beside the fixed memory; refusing the
  // rest, largest first, refuses the fewest.
  std::uint64_t kept = fixed;
  std::size_t first_kept = waits.size();
  for (std::size_t n = waits.size(); n > 0; --n) {
    std::uint64_t with = saturating_add(kept, wait_of(jobs[waits[n - 1]]));
    if (with > capacity) break;
    kept = with;
    first_kept = n - 1;
  }
  refused->assign(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(first_kept));
  return kept;
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
  if (!result.fits) fixed = choose_refusals(jobs, capacity, &result.refused);
  result.opportunistic_room = fixed <= capacity ? capacity - fixed : 0;
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
