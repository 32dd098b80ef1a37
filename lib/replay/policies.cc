// The replay's policies: one scheduling pass each, run at every event that
// can change a decision (an arrival, a completion, an antman timer).
//
// A pass never scans the whole queue: exclusive, gandiva and antman offer
// at most `window` queued jobs, in submit order; yarn-cs looks only at the
// head of each tenant's queue. Within a pass a failed decision is
// remembered by what it depended on (the GPU count, and the utilisation
// or memory where those matter), so a later job that must fail for the
// same reason costs O(1). These memos are exact: each records a failure
// that a job asking for no less would meet too, in the same state, and
// any placement in the pass clears them.
#include <algorithm>
#include <limits>
#include <map>

#include "place/antman_rules.h"
#include "replay/sim.h"

namespace gpushare::replay {
namespace antman = place::antman;
namespace {

/// The replay's reservations: always on, and one reserving job per tenant
/// at a time (the next waits for its turn rather than split the free GPUs).
constexpr antman::ReservationRule kReservations{true, true};

bool is_empty(const SimGpu& gpu) { return gpu.jobs.empty() && gpu.reserved_by < 0; }

/// The lowest (util, mem) that failed, per GPU count.
struct Memo {
  std::map<int, std::pair<double, double>> failed;
  bool fails(int k, double util, double mem) const {
    auto it = failed.find(k);
    return it != failed.end() && util >= it->second.first && mem >= it->second.second;
  }
  void fail(int k, double util, double mem) {
    auto [it, fresh] = failed.try_emplace(k, util, mem);
    if (!fresh) it->second = {std::min(it->second.first, util), std::min(it->second.second, mem)};
  }
  void clear() { failed.clear(); }
};

bool start_exclusive(Sim& sim, std::int32_t j) {
  SimJob& job = sim.jobs[static_cast<std::size_t>(j)];
  if (!sim.fits_empty(job.gpus)) return false;
  sim.start(j, sim.choose(job.gpus, is_empty), true, false);
  return true;
}

/// exclusive: one queue, the first `window` jobs in order, whole GPUs.
void schedule_exclusive(Sim& sim) {
  std::deque<std::int32_t>& queue = sim.queues.front();
  std::size_t offered = 0;
  for (auto it = queue.begin(); it != queue.end() && offered < sim.options.window; ++offered) {
    if (sim.empty == 0) return;
    it = start_exclusive(sim, *it) ? queue.erase(it) : it + 1;
  }
}

/// yarn-cs: the tenant furthest below its capacity whose head fits goes
/// first; a queue may grow past its capacity while GPUs are idle
/// (elastic), and never skips its own head (FIFO within a queue).
void schedule_yarn(Sim& sim) {
  for (;;) {
    std::size_t best = sim.queues.size();
    double best_ratio = std::numeric_limits<double>::infinity();
    for (std::size_t t = 0; t < sim.queues.size(); ++t) {
      if (sim.queues[t].empty()) continue;
      const SimJob& head = sim.jobs[static_cast<std::size_t>(sim.queues[t].front())];
      double ratio = static_cast<double>(sim.prod[t]) /
                     static_cast<double>(std::max<std::int64_t>(1, sim.quota[t]));
      if (ratio < best_ratio && sim.fits_empty(head.gpus)) {
        best = t;
        best_ratio = ratio;
      }
    }
    if (best == sim.queues.size()) return;
    start_exclusive(sim, sim.queues[best].front());
    sim.queues[best].pop_front();
  }
}

/// Gandiva's migration: frees `k` GPUs on the node with the most empty
/// ones by moving single-GPU jobs that run alone there to empty GPUs
/// elsewhere. False (and nothing moved) if that cannot be done.
bool defragment(Sim& sim, int k) {
  if (k > sim.largest_node || k > sim.empty) return false;
  auto most = std::max_element(sim.node_empty.begin(), sim.node_empty.end());
  auto node = static_cast<std::size_t>(most - sim.node_empty.begin());
  int need = k - *most;
  if (need <= 0 || sim.empty - *most < need) return false;
  std::vector<std::uint32_t> movable;
  for (std::uint32_t g : sim.node_gpus[node]) {
    const SimGpu& gpu = sim.gpus[g];
    if (gpu.jobs.size() == 1 && gpu.reserved_by < 0 &&
        sim.jobs[static_cast<std::size_t>(gpu.jobs[0])].gpus == 1) {
      movable.push_back(g);
    }
  }
  if (static_cast<int>(movable.size()) < need) return false;
  for (int i = 0; i < need; ++i) {
    std::vector<std::uint32_t> to =
        sim.choose(1, [&](const SimGpu& gpu) { return is_empty(gpu) && gpu.node != node; });
    sim.move(sim.gpus[movable[static_cast<std::size_t>(i)]].jobs[0],
             movable[static_cast<std::size_t>(i)], to[0]);
  }
  return true;
}

/// Gandiva's packing: beside a running job of the same size that runs
/// alone on its GPUs, if their utilisations sum to at most 1 and their
/// memory fits; the least busy such host.
bool pack(Sim& sim, std::int32_t j) {
  const SimJob& job = sim.jobs[static_cast<std::size_t>(j)];
  std::int32_t host = -1;
  for (std::int32_t r : sim.running) {
    const SimJob& other = sim.jobs[static_cast<std::size_t>(r)];
    if (other.gpus != job.gpus || other.timesliced || other.util + job.util > 1.0 ||
        other.mem_gib + job.mem_gib > sim.gpu_mem_gib) {
      continue;
    }
    bool alone = std::all_of(other.on.begin(), other.on.end(),
                             [&](std::uint32_t g) { return sim.gpus[g].jobs.size() == 1; });
    if (alone && (host < 0 || other.util < sim.jobs[static_cast<std::size_t>(host)].util)) host = r;
  }
  if (host < 0) return false;
  sim.start(j, sim.jobs[static_cast<std::size_t>(host)].on, true, false);
  ++sim.metrics.packed;
  return true;
}

/// Gandiva's time slicing: join the GPUs of a job of the same size that
/// are not packed, where the fewest jobs take turns (below the limit).
bool timeslice(Sim& sim, std::int32_t j) {
  const SimJob& job = sim.jobs[static_cast<std::size_t>(j)];
  std::int32_t host = -1;
  std::size_t fewest = static_cast<std::size_t>(sim.options.model.timeslice_max);
  for (std::int32_t r : sim.running) {
    const SimJob& other = sim.jobs[static_cast<std::size_t>(r)];
    if (other.gpus != job.gpus) continue;
    const SimGpu& first = sim.gpus[other.on.front()];
    if (first.jobs.size() >= fewest || (first.jobs.size() > 1 && !first.timesliced)) continue;
    bool same = std::all_of(other.on.begin(), other.on.end(),
                            [&](std::uint32_t g) { return sim.gpus[g].jobs == first.jobs; });
    if (same) {
      host = r;
      fewest = first.jobs.size();
    }
  }
  if (host < 0) return false;
  std::vector<std::uint32_t> on = sim.jobs[static_cast<std::size_t>(host)].on;
  for (std::uint32_t g : on) sim.gpus[g].timesliced = true;
  for (std::int32_t other : sim.gpus[on.front()].jobs) {
    sim.jobs[static_cast<std::size_t>(other)].timesliced = true;
  }
  sim.start(j, on, true, true);
  ++sim.metrics.timesliced;
  return true;
}

/// gandiva: whole GPUs while there are some (migrating to make room for a
/// job that needs one node), then packing, then time slicing.
void schedule_gandiva(Sim& sim) {
  std::deque<std::int32_t>& queue = sim.queues.front();
  Memo pack_memo, slice_memo;
  std::size_t offered = 0;
  for (auto it = queue.begin(); it != queue.end() && offered < sim.options.window; ++offered) {
    std::int32_t j = *it;
    const SimJob& job = sim.jobs[static_cast<std::size_t>(j)];
    bool started =
        start_exclusive(sim, j) || (defragment(sim, job.gpus) && start_exclusive(sim, j));
    if (!started && !pack_memo.fails(job.gpus, job.util, job.mem_gib)) {
      started = pack(sim, j);
      if (!started) pack_memo.fail(job.gpus, job.util, job.mem_gib);
    }
    if (!started && !slice_memo.fails(job.gpus, 0, 0)) {
      started = timeslice(sim, j);
      if (!started) slice_memo.fail(job.gpus, 0, 0);
    }
    if (started) {
      pack_memo.clear();
      slice_memo.clear();
      it = queue.erase(it);
    } else {
      ++it;
    }
  }
}

/// antman, one queued job: production within quota (reserving what it can
/// get when it fits only in part, one reserving job per tenant), else, or
/// once it has queued too long, opportunistic on GPUs below M.
bool offer_antman(Sim& sim, std::int32_t j, Memo& prod_memo, Memo& ot_memo, double open_mem) {
  SimJob& job = sim.jobs[static_cast<std::size_t>(j)];
  auto t = static_cast<std::size_t>(job.tenant);
  const std::optional<double>& threshold = sim.options.queue_threshold_s;
  bool too_long = antman::queued_too_long(sim.now - job.trace->submit_s, threshold);
  bool within_quota = antman::within_quota(
      sim.prod[t] - static_cast<std::int64_t>(job.reserved.size()), job.gpus, sim.quota[t]);
  if (antman::auto_class(within_quota, too_long) == kQosProduction) {
    std::int64_t can = sim.unowned + static_cast<std::int64_t>(job.reserved.size());
    if (can >= job.gpus && (job.reserved.size() > 0 || !prod_memo.fails(job.gpus, 0, 0))) {
      // Free of production jobs and others' reservations, with the memory:
      // on such a GPU every job is opportunistic, so all its memory can
      // spill.
      auto mine = [&](const SimGpu& gpu) {
        return gpu.owner < 0 && (gpu.reserved_by < 0 || gpu.reserved_by == j) &&
               antman::memory_fits(
                   antman::production_memory(sim.gpu_mem_gib, gpu.mem_gib, gpu.mem_gib),
                   job.mem_gib);
      };
      std::vector<std::uint32_t> on = sim.choose(job.gpus, mine);
      if (!on.empty()) {
        sim.start(j, on, true, false);
        return true;
      }
      if (job.reserved.empty()) prod_memo.fail(job.gpus, 0, 0);
    }
    if (job.reserved.empty() && antman::may_reserve(kReservations, sim.reserver[t] >= 0) &&
        sim.unowned > 0) {
      // Gang reservation: the unowned GPUs of the node with the most.
      std::vector<std::uint32_t> best;
      for (const auto& node : sim.node_gpus) {
        std::vector<std::uint32_t> here;
        for (std::uint32_t g : node) {
          if (sim.gpus[g].owner < 0 && sim.gpus[g].reserved_by < 0) here.push_back(g);
        }
        if (antman::better_reservation(here.size(), best.size())) best = std::move(here);
      }
      best.resize(std::min(best.size(), static_cast<std::size_t>(job.gpus)));
      sim.reserve(j, best);
    }
    return false;
  }
  if (!job.reserved.empty()) sim.unreserve(j);
  if (job.gpus > sim.open || !antman::memory_fits(open_mem, job.mem_gib) ||
      ot_memo.fails(job.gpus, 0, job.mem_gib)) {
    return false;
  }
  const InterferenceModel& model = sim.options.model;
  std::vector<std::uint32_t> on = sim.choose(
      job.gpus,
      [&](const SimGpu& gpu) {
        return antman::takes_opportunistic(gpu.util, model.ot_threshold) &&
               antman::memory_fits(sim.gpu_mem_gib - gpu.mem_gib, job.mem_gib);
      },
      true);
  if (on.empty()) {
    ot_memo.fail(job.gpus, 0, job.mem_gib);
    return false;
  }
  sim.start(j, on, false, false);
  ++sim.metrics.ot_jobs;
  sim.metrics.conversions += within_quota && too_long;
  return true;
}

/// The most memory free on a GPU under M: no opportunistic job needing
/// more can start.
double most_open_memory(const Sim& sim) {
  double most = -1;
  for (const SimGpu& gpu : sim.gpus) {
    if (antman::takes_opportunistic(gpu.util, sim.options.model.ot_threshold)) {
      most = std::max(most, sim.gpu_mem_gib - gpu.mem_gib);
    }
  }
  return most;
}

/// antman: each tenant's queue (furthest below its quota first) offers its
/// first `window` jobs; then opportunistic jobs whose tenant has quota
/// again and whose GPUs have no owner are upgraded; the timer is set for
/// the next offered job to cross the queueing threshold.
void schedule_antman(Sim& sim) {
  Memo prod_memo, ot_memo;
  sim.timer = std::numeric_limits<double>::infinity();
  const std::optional<double>& threshold = sim.options.queue_threshold_s;
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < sim.queues.size(); ++t) {
    if (!sim.queues[t].empty()) order.push_back(t);
  }
  auto ratio = [&](std::size_t t) {
    return static_cast<double>(sim.prod[t]) /
           static_cast<double>(std::max<std::int64_t>(1, sim.quota[t]));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ratio(a) < ratio(b); });
  // Kept up to date after each start.
  double open_mem = most_open_memory(sim);
  for (std::size_t t : order) {
    std::deque<std::int32_t>& queue = sim.queues[t];
    std::size_t offered = 0;
    for (auto it = queue.begin(); it != queue.end() && offered < sim.options.window; ++offered) {
      // Nothing can start (a conversion waits for the next pass too).
      if (sim.unowned == 0 && (sim.open == 0 || open_mem <= 0)) break;
      if (offer_antman(sim, *it, prod_memo, ot_memo, open_mem)) {
        prod_memo.clear();
        ot_memo.clear();
        open_mem = most_open_memory(sim);
        it = queue.erase(it);
        continue;
      }
      double crosses = threshold
                           ? sim.jobs[static_cast<std::size_t>(*it)].trace->submit_s + *threshold
                           : sim.timer;
      if (crosses > sim.now) sim.timer = std::min(sim.timer, crosses);
      ++it;
    }
  }
  for (std::int32_t r : sim.running) {
    SimJob& job = sim.jobs[static_cast<std::size_t>(r)];
    auto t = static_cast<std::size_t>(job.tenant);
    if (job.production) continue;
    bool unowned = std::all_of(job.on.begin(), job.on.end(), [&](std::uint32_t g) {
      return sim.gpus[g].owner < 0 && sim.gpus[g].reserved_by < 0;
    });
    if (antman::may_upgrade(antman::within_quota(sim.prod[t], job.gpus, sim.quota[t]),
                            sim.reserver[t] >= 0, unowned)) {
      sim.upgrade(r);
    }
  }
}

}  // namespace

bool offer_antman_once(Sim& sim, std::int32_t j) {
  Memo prod_memo, ot_memo;
  return offer_antman(sim, j, prod_memo, ot_memo, most_open_memory(sim));
}

void schedule(Sim& sim) {
  switch (sim.options.policy) {
    case ReplayPolicy::kExclusive:
      return schedule_exclusive(sim);
    case ReplayPolicy::kYarnCs:
      return schedule_yarn(sim);
    case ReplayPolicy::kGandiva:
      return schedule_gandiva(sim);
    case ReplayPolicy::kAntman:
      return schedule_antman(sim);
  }
}

}  // namespace gpushare::replay
