// The replay's event loop. Time jumps from event to event: the next
// arrival, the earliest completion at current speeds, or a policy's timer.
// At each event finished jobs leave, arrivals queue, the policy makes one
// pass, and (if anything moved) every running job's speed is recomputed
// from what shares its GPUs. Speeds change only at events, so between two
// events each job's remaining work falls linearly and the next completion
// is exact.
//
// Cost: an event costs O(running jobs + nodes) plus the policy's pass
// (bounded by the window, with failures memoised) and, when something
// moved, O(GPUs) to recompute speeds. There are at most two events per job
// plus timers, so a replay grows as jobs * (running + window), no worse
// than n log n for a fixed cluster.
#include "replay/replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "replay/sim.h"

namespace gpushare::replay {
namespace {

/// A uniform draw in [0, 1) from (seed, job, stream): each job's properties
/// depend on nothing else, so they do not change with the policy.
double uniform(std::uint64_t seed, std::uint64_t job, std::uint64_t stream) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + job * 0xBF58476D1CE4E5B9ull + stream;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

Status build(Sim& s, const place::Cluster& base, const std::vector<TraceJob>& trace) {
  s.multi_node = base.policy.multi_node;
  std::uint64_t mem = std::numeric_limits<std::uint64_t>::max();
  for (const place::Node& node : base.nodes) {
    std::vector<std::uint32_t> ids;
    for (const place::Gpu& gpu : node.gpus) {
      ids.push_back(static_cast<std::uint32_t>(s.gpus.size()));
      SimGpu g;
      g.node = static_cast<std::uint32_t>(s.node_gpus.size());
      s.gpus.push_back(g);
      mem = std::min(mem, gpu.mem_bytes);
    }
    s.largest_node = std::max(s.largest_node, static_cast<int>(ids.size()));
    s.node_empty.push_back(static_cast<int>(ids.size()));
    s.node_gpus.push_back(std::move(ids));
  }
  const auto total = static_cast<std::int64_t>(s.gpus.size());
  if (total == 0) return make_error("the cluster has no GPUs");
  s.empty = s.unowned = s.open = total;
  s.gpu_mem_gib = static_cast<double>(mem) / static_cast<double>(1ull << 30);

  std::map<std::string, int> tenants;
  for (const TraceJob& job : trace) tenants.emplace(job.tenant, 0);
  int next = 0;
  for (auto& [name, index] : tenants) index = next++;
  const ReplayOptions& o = s.options;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceJob& t = trace[i];
    SimJob job;
    job.trace = &t;
    job.tenant = tenants[t.tenant];
    job.gpus = static_cast<int>(t.gpus);
    job.remaining_s = t.duration_s;
    // The documented distribution: utilisation uniform in [0.2, 1.0),
    // memory uniform in [1/8, 1) of a GPU, mini-batch log-uniform in
    // [50, 1000) ms.
    job.util = o.job_util ? *o.job_util : 0.2 + 0.8 * uniform(o.seed, i, 1);
    job.mem_gib = s.gpu_mem_gib *
                  (o.job_mem_share ? *o.job_mem_share : 0.125 + 0.875 * uniform(o.seed, i, 2));
    job.batch_ms = 50.0 * std::pow(20.0, uniform(o.seed, i, 3));
    s.jobs.push_back(job);
  }
  bool per_tenant = o.policy == ReplayPolicy::kYarnCs || o.policy == ReplayPolicy::kAntman;
  s.queues.resize(per_tenant ? tenants.size() : 1);
  auto quota = static_cast<std::int64_t>(
      std::floor(o.quota_share * static_cast<double>(total) / static_cast<double>(tenants.size())));
  s.quota.assign(tenants.size(), quota);
  s.prod.assign(tenants.size(), 0);
  s.reserver.assign(tenants.size(), -1);
  s.waiting.assign(tenants.size(), 0);
  s.backlog_s.assign(tenants.size(), 0);
  s.backlog_gpu_s.assign(tenants.size(), 0);
  s.tenant_gpu_s.assign(tenants.size(), 0);
  s.tenant_names.resize(tenants.size());
  for (const auto& [name, index] : tenants) s.tenant_names[static_cast<std::size_t>(index)] = name;
  return {};
}

/// Each running job's speed: 1 alone, else its slowest GPU's share.
void recompute_rates(Sim& s) {
  for (std::int32_t r : s.running) s.jobs[static_cast<std::size_t>(r)].rate = 1.0;
  std::vector<CoRunner> co;
  const bool controlled = s.options.policy == ReplayPolicy::kAntman;
  for (const SimGpu& gpu : s.gpus) {
    if (gpu.jobs.size() < 2) continue;
    co.clear();
    for (std::int32_t j : gpu.jobs) {
      const SimJob& job = s.jobs[static_cast<std::size_t>(j)];
      co.push_back({job.util, job.production && controlled});
    }
    Sharing sharing = gpu.timesliced ? Sharing::kTimesliced
                      : controlled   ? Sharing::kControlled
                                     : Sharing::kPacked;
    for (std::size_t i = 0; i < gpu.jobs.size(); ++i) {
      SimJob& job = s.jobs[static_cast<std::size_t>(gpu.jobs[i])];
      job.rate = std::min(job.rate, shared_rate(s.options.model, sharing, co, i));
    }
  }
}

/// Free GPUs on nodes with fewer free than `request` (capped at the
/// node's size): GPUs that cannot serve the median request there.
std::int64_t fragmented(const Sim& s, int request) {
  std::int64_t frag = 0;
  for (std::size_t n = 0; n < s.node_gpus.size(); ++n) {
    int need = std::min(request, static_cast<int>(s.node_gpus[n].size()));
    if (s.node_empty[n] < need) frag += s.node_empty[n];
  }
  return frag;
}

/// The request size the median requested GPU belongs to.
int weighted_median_request(const std::vector<SimJob>& jobs) {
  std::vector<std::pair<int, std::int64_t>> sizes;
  std::int64_t total = 0;
  for (const SimJob& job : jobs) {
    sizes.emplace_back(job.gpus, job.gpus);
    total += job.gpus;
  }
  std::sort(sizes.begin(), sizes.end());
  std::int64_t seen = 0;
  for (auto [size, weight] : sizes) {
    seen += weight;
    if (2 * seen >= total) return size;
  }
  return 1;
}

struct Clock {
  double busy_gpu_s = 0, frag_gpu_s = 0;
  std::int64_t frag = 0;
};

/// Moves time to `next`: work done, GPU-time received, time-weighted sums.
void advance(Sim& s, Clock& clock, double next) {
  double dt = std::max(0.0, next - s.now);
  for (std::int32_t r : s.running) {
    SimJob& job = s.jobs[static_cast<std::size_t>(r)];
    // A job due by `next` is done: subtracting rate * dt could leave a
    // residue that, far into a trace, rounds to no time at all.
    bool due = job.rate > 0 && s.now + std::max(0.0, job.remaining_s) / job.rate <= next;
    job.remaining_s = due ? 0 : job.remaining_s - job.rate * dt;
    auto t = static_cast<std::size_t>(job.tenant);
    s.work_gpu_s += job.gpus * job.rate * dt;
    s.tenant_gpu_s[t] += job.gpus * job.rate * dt;
    if (s.waiting[t] > 0) s.backlog_gpu_s[t] += job.gpus * job.rate * dt;
    if (job.production) {
      job.prod_wall_s += dt;
      job.prod_work_s += job.rate * dt;
    }
  }
  for (std::size_t t = 0; t < s.waiting.size(); ++t) {
    if (s.waiting[t] > 0) s.backlog_s[t] += dt;
  }
  clock.busy_gpu_s += static_cast<double>(s.busy) * dt;
  clock.frag_gpu_s += static_cast<double>(clock.frag) * dt;
  s.now = std::max(s.now, next);
}

/// The next completion at current speeds (infinity if none).
double next_completion(const Sim& s) {
  double next = std::numeric_limits<double>::infinity();
  for (std::int32_t r : s.running) {
    const SimJob& job = s.jobs[static_cast<std::size_t>(r)];
    if (job.rate > 0) next = std::min(next, s.now + std::max(0.0, job.remaining_s) / job.rate);
  }
  return next;
}

/// Takes finished jobs off; true if any.
bool complete(Sim& s) {
  std::vector<std::int32_t> done;
  for (std::int32_t r : s.running) {
    const SimJob& job = s.jobs[static_cast<std::size_t>(r)];
    if (job.remaining_s <= 1e-9 * std::max(1.0, job.trace->duration_s)) done.push_back(r);
  }
  for (std::int32_t r : done) s.finish(r);
  return !done.empty();
}

}  // namespace

Result<ReplayMetrics> replay(const place::Cluster& base, const std::vector<TraceJob>& trace,
                             const ReplayOptions& options) {
  if (Status fits = check_fits(base, trace); !fits) return fits.error();
  Sim s;
  s.options = options;
  if (Status built = build(s, base, trace); !built) return built.error();
  const std::size_t n = s.jobs.size();
  if (n == 0) return make_error("the trace has no jobs");
  const int median = weighted_median_request(s.jobs);
  const double kInfinity = std::numeric_limits<double>::infinity();
  Clock clock;
  std::size_t arrived = 0, done = 0;
  s.now = trace.front().submit_s;
  s.timer = kInfinity;
  while (done < n) {
    double next =
        std::min({arrived < n ? trace[arrived].submit_s : kInfinity, next_completion(s), s.timer});
    if (next == kInfinity) {
      return make_error(std::to_string(n - done) +
                        " jobs can never run on this cluster under this policy");
    }
    advance(s, clock, next);
    std::size_t before = s.running.size();
    bool changed = complete(s);
    done += before - s.running.size();
    for (; arrived < n && trace[arrived].submit_s <= s.now; ++arrived) {
      auto j = static_cast<std::int32_t>(arrived);
      s.jobs[arrived].state = JobState::kQueued;
      ++s.waiting[static_cast<std::size_t>(s.jobs[arrived].tenant)];
      s.queues[s.queues.size() == 1 ? 0 : static_cast<std::size_t>(s.jobs[arrived].tenant)]
          .push_back(j);
      changed = true;
    }
    if (changed || s.now >= s.timer) {
      s.timer = kInfinity;
      schedule(s);
      recompute_rates(s);
      clock.frag = fragmented(s, median);
    }
  }
  return summarise(s, clock.busy_gpu_s, clock.frag_gpu_s);
}

Status check_fits(const place::Cluster& cluster, const std::vector<TraceJob>& trace) {
  std::int64_t total = 0, largest = 0;
  for (const place::Node& node : cluster.nodes) {
    total += static_cast<std::int64_t>(node.gpus.size());
    largest = std::max(largest, static_cast<std::int64_t>(node.gpus.size()));
  }
  const std::int64_t most = cluster.policy.multi_node ? total : largest;
  for (const TraceJob& job : trace) {
    if (job.gpus > most) {
      return make_error("job " + job.id + " asks for " + std::to_string(job.gpus) +
                        " GPUs; this cluster gives one job at most " + std::to_string(most));
    }
  }
  return {};
}

std::string_view to_string(ReplayPolicy policy) {
  switch (policy) {
    case ReplayPolicy::kExclusive:
      return "exclusive";
    case ReplayPolicy::kYarnCs:
      return "yarn-cs";
    case ReplayPolicy::kGandiva:
      return "gandiva";
    case ReplayPolicy::kAntman:
      return "antman";
  }
  return "?";
}

std::vector<ReplayPolicy> all_replay_policies() {
  return {ReplayPolicy::kExclusive, ReplayPolicy::kYarnCs, ReplayPolicy::kGandiva,
          ReplayPolicy::kAntman};
}

std::optional<ReplayPolicy> parse_replay_policy(std::string_view text) {
  for (ReplayPolicy policy : all_replay_policies()) {
    if (text == to_string(policy)) return policy;
  }
  return std::nullopt;
}

}  // namespace gpushare::replay
