// Algorithm 1's rules, written once: each comparison AntMan's policy makes,
// as a pure function of a few figures. Two programs decide with them: the
// placer (placer*.cc), one job at a time from a cluster file, and the
// trace replay's antman policy (lib/replay/policies.cc), over simulated
// time. Neither writes its own comparison, so the two cannot drift apart.
//
// What the two share is the rules, not their bookkeeping or their
// tie-breaks: the placer ranks GPUs by topology domain and load (node_order,
// gpu_order), the replay by best-fitting node and utilisation; the replay
// lets a tenant hold one reservation at a time and upgrades opportunistic
// jobs, which the placer (which never re-offers a job) does not. Where the
// models differ on a rule, the difference is a parameter here, and
// tests/unit/antman_agreement_test.cc replays generated job streams through
// both and checks the decisions they must share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "vocab/job.h"

namespace gpushare::place::antman {

/// Quota: may a tenant that holds `held` GPUs (production jobs plus
/// reservations, the job's own reservation not counted) be guaranteed
/// `need` more?
constexpr bool within_quota(std::int64_t held, std::int64_t need, std::int64_t quota) {
  return held + need <= quota;
}

/// The queueing-time conversion: a job that has queued at least the
/// threshold (when there is one) runs opportunistic rather than wait on.
constexpr bool queued_too_long(double queued_s, std::optional<double> threshold_s) {
  return threshold_s && queued_s >= *threshold_s;
}

/// The class of a job that lets the policy decide ("auto"): production
/// when its tenant has the quota and it has not queued too long, else
/// opportunistic (AntMan turns what it cannot guarantee into opportunistic
/// work).
constexpr Qos auto_class(bool within_quota, bool queued_too_long) {
  return within_quota && !queued_too_long ? kQosProduction : kQosOpportunistic;
}

/// The utilisation threshold M: a GPU takes opportunistic jobs only while
/// its recent utilisation is below it.
constexpr bool takes_opportunistic(double gpu_util, double threshold) {
  return gpu_util < threshold;
}

/// Memory fit: `need` fits in `free` (bytes for the placer, GiB for the
/// replay).
template <typename Amount>
constexpr bool memory_fits(Amount free, Amount need) {
  return need <= free;
}

/// Memory a production job can have on a GPU: its capacity less what is
/// pinned there, which is everything used but opportunistic memory
/// (`spillable`), since that can spill to the host.
template <typename Amount>
constexpr Amount production_memory(Amount capacity, Amount used, Amount spillable) {
  const Amount pinned = used > spillable ? used - spillable : Amount{0};
  return capacity > pinned ? capacity - pinned : Amount{0};
}

/// Gang reservation: may a production job that fits nowhere whole hold
/// back what qualifies? `enabled` is the placer's [policy] reserve (the
/// replay always reserves); with `one_per_tenant` (the replay) a tenant
/// already holding a reservation for another job may not take a second.
struct ReservationRule {
  bool enabled = true;
  bool one_per_tenant = false;
};
constexpr bool may_reserve(ReservationRule rule, bool tenant_reserving) {
  return rule.enabled && !(rule.one_per_tenant && tenant_reserving);
}

/// Which node a one-node reservation goes to: the one with the most
/// qualifying GPUs; on a tie, the first seen (nodes are visited in order).
constexpr bool better_reservation(std::size_t here, std::size_t best) { return here > best; }

/// Upgrade: a running opportunistic job becomes production when its
/// tenant has the quota for it, holds no reservation (a waiting production
/// job of that tenant goes first), and none of its GPUs has a production
/// job or a reservation.
constexpr bool may_upgrade(bool within_quota, bool tenant_reserving, bool gpus_unowned) {
  return within_quota && !tenant_reserving && gpus_unowned;
}

}  // namespace gpushare::place::antman
