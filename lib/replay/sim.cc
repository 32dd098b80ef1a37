// The replay state's bookkeeping: every change to who is on a GPU goes
// through attach/detach, which keep the counts in step.
#include "replay/sim.h"

#include <algorithm>
#include <numeric>

#include "place/antman_rules.h"

namespace gpushare::replay {

void Sim::count_empty(std::uint32_t g, int sign) {
  node_empty[gpus[g].node] += sign;
  empty += sign;
}

void Sim::attach(std::int32_t j, std::uint32_t g) {
  SimGpu& gpu = gpus[g];
  const SimJob& job = jobs[static_cast<std::size_t>(j)];
  if (gpu.jobs.empty()) {
    ++busy;
    if (gpu.reserved_by < 0) count_empty(g, -1);
  }
  gpu.jobs.push_back(j);
  const double m = options.model.ot_threshold;
  open -= place::antman::takes_opportunistic(gpu.util, m) &&
          !place::antman::takes_opportunistic(gpu.util + job.util, m);
  gpu.util += job.util;
  gpu.mem_gib += job.mem_gib;
  if (job.production) {
    if (gpu.reserved_by < 0) --unowned;
    gpu.owner = j;
  }
}

void Sim::detach(std::int32_t j, std::uint32_t g) {
  SimGpu& gpu = gpus[g];
  const SimJob& job = jobs[static_cast<std::size_t>(j)];
  gpu.jobs.erase(std::find(gpu.jobs.begin(), gpu.jobs.end(), j));
  const double was = gpu.util, m = options.model.ot_threshold;
  gpu.util = gpu.jobs.empty() ? 0 : gpu.util - job.util;
  open += !place::antman::takes_opportunistic(was, m) &&
          place::antman::takes_opportunistic(gpu.util, m);
  gpu.mem_gib = gpu.jobs.empty() ? 0 : gpu.mem_gib - job.mem_gib;
  if (gpu.owner == j) {
    gpu.owner = -1;
    if (gpu.reserved_by < 0) ++unowned;
  }
  if (gpu.jobs.empty()) {
    --busy;
    gpu.timesliced = false;
    if (gpu.reserved_by < 0) count_empty(g, +1);
  }
}

bool Sim::fits_empty(int k) const {
  if (k > empty) return false;
  if (multi_node) return true;
  return std::any_of(node_empty.begin(), node_empty.end(), [k](int n) { return n >= k; });
}

std::vector<std::uint32_t> Sim::choose(int k, const GpuFilter& ok, bool least_loaded) const {
  std::vector<std::uint32_t> out;
  if (k == 1 && least_loaded) {
    // One pass, no allocation: the common case of opportunistic jobs.
    std::int64_t best = -1;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      if ((best < 0 || gpus[g].util < gpus[static_cast<std::size_t>(best)].util) && ok(gpus[g])) {
        best = static_cast<std::int64_t>(g);
      }
    }
    if (best >= 0) out.push_back(static_cast<std::uint32_t>(best));
    return out;
  }
  // Per node, the GPUs that pass, least loaded first (then lowest index).
  std::vector<std::vector<std::uint32_t>> fit(node_gpus.size());
  std::int64_t total = 0;
  for (std::size_t n = 0; n < node_gpus.size(); ++n) {
    for (std::uint32_t g : node_gpus[n]) {
      if (ok(gpus[g])) fit[n].push_back(g);
    }
    std::stable_sort(fit[n].begin(), fit[n].end(),
                     [&](std::uint32_t a, std::uint32_t b) { return gpus[a].util < gpus[b].util; });
    total += static_cast<std::int64_t>(fit[n].size());
  }
  if (total < k) return out;
  // Best fit on one node.
  std::size_t best = fit.size();
  for (std::size_t n = 0; n < fit.size(); ++n) {
    if (static_cast<int>(fit[n].size()) >= k &&
        (best == fit.size() || fit[n].size() < fit[best].size())) {
      best = n;
    }
  }
  if (best != fit.size()) return {fit[best].begin(), fit[best].begin() + k};
  if (!multi_node) return out;
  // Fewest nodes: the fullest first.
  std::vector<std::size_t> order(fit.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return fit[a].size() > fit[b].size(); });
  for (std::size_t n : order) {
    for (std::uint32_t g : fit[n]) {
      if (static_cast<int>(out.size()) == k) return out;
      out.push_back(g);
    }
  }
  return out;
}

void Sim::start(std::int32_t j, const std::vector<std::uint32_t>& on, bool production,
                bool timesliced) {
  SimJob& job = jobs[static_cast<std::size_t>(j)];
  if (!job.reserved.empty()) unreserve(j);
  if (job.state == JobState::kQueued) --waiting[static_cast<std::size_t>(job.tenant)];
  job.production = production;
  job.timesliced = timesliced;
  job.state = JobState::kRunning;
  job.start_s = now;
  job.on = on;
  for (std::uint32_t g : on) {
    attach(j, g);
    if (timesliced) gpus[g].timesliced = true;
  }
  if (production) prod[static_cast<std::size_t>(job.tenant)] += job.gpus;
  running.push_back(j);
}

void Sim::finish(std::int32_t j) {
  SimJob& job = jobs[static_cast<std::size_t>(j)];
  for (std::uint32_t g : job.on) detach(j, g);
  if (job.production) prod[static_cast<std::size_t>(job.tenant)] -= job.gpus;
  job.state = JobState::kDone;
  job.end_s = now;
  job.on.clear();
  running.erase(std::find(running.begin(), running.end(), j));
}

void Sim::reserve(std::int32_t j, const std::vector<std::uint32_t>& on) {
  SimJob& job = jobs[static_cast<std::size_t>(j)];
  for (std::uint32_t g : on) {
    SimGpu& gpu = gpus[g];
    gpu.reserved_by = j;
    if (gpu.owner < 0) --unowned;
    if (gpu.jobs.empty()) count_empty(g, -1);
    job.reserved.push_back(g);
  }
  prod[static_cast<std::size_t>(job.tenant)] += static_cast<std::int64_t>(on.size());
  reserver[static_cast<std::size_t>(job.tenant)] = j;
  job.ever_reserved = true;
}

void Sim::unreserve(std::int32_t j) {
  SimJob& job = jobs[static_cast<std::size_t>(j)];
  for (std::uint32_t g : job.reserved) {
    SimGpu& gpu = gpus[g];
    gpu.reserved_by = -1;
    if (gpu.owner < 0) ++unowned;
    if (gpu.jobs.empty()) count_empty(g, +1);
  }
  prod[static_cast<std::size_t>(job.tenant)] -= static_cast<std::int64_t>(job.reserved.size());
  if (reserver[static_cast<std::size_t>(job.tenant)] == j) {
    reserver[static_cast<std::size_t>(job.tenant)] = -1;
  }
  job.reserved.clear();
}

void Sim::upgrade(std::int32_t j) {
  SimJob& job = jobs[static_cast<std::size_t>(j)];
  for (std::uint32_t g : job.on) {
    gpus[g].owner = j;
    --unowned;
  }
  job.production = true;
  prod[static_cast<std::size_t>(job.tenant)] += job.gpus;
  ++metrics.upgrades;
}

void Sim::move(std::int32_t j, std::uint32_t from, std::uint32_t to) {
  SimJob& job = jobs[static_cast<std::size_t>(j)];
  detach(j, from);
  attach(j, to);
  *std::find(job.on.begin(), job.on.end(), from) = to;
  job.remaining_s += options.model.migrate_s;
  ++metrics.migrations;
}

}  // namespace gpushare::replay
