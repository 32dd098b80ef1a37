// The replay's event loop. Time jumps from event to event (an arrival or the
// earliest completion at current speeds); at each event, finished jobs
// leave the placer, arrivals join the queue, the head of the queue is
// offered to the placer, and every running job's speed is recomputed from
// what now shares its GPUs. Speeds only change at events, so between two
// events each job's remaining work falls linearly and the next completion
// is exact.
#include "place/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <list>
#include <map>
#include <set>
#include <unordered_map>

#include "common/jsonl.h"
#include "place/placer.h"

namespace gpushare::place {
namespace {

struct GpuUse {
  bool production = false;
  int opportunistic = 0;
};

struct Running {
  std::size_t job;
  std::vector<std::uint32_t> gpus;  // flat ids
  bool production;
  double remaining_s;  // work left, in seconds at full speed
  double rate = 1.0;
};

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

/// The replay's cluster: the nodes and GPUs of `base`, idle, with one
/// tenant per trace tenant.
Cluster idle_cluster(const Cluster& base, const std::vector<TraceJob>& trace,
                     const ReplayOptions& options, std::int64_t total_gpus) {
  Cluster c;
  c.policy = base.policy;
  c.policy.default_tenant.clear();
  bool antman = options.policy == ReplayPolicy::kAntman;
  c.policy.reserve = antman;
  c.policy.queue_threshold = antman ? options.queue_threshold : std::nullopt;
  std::set<std::string> tenants;
  for (const TraceJob& job : trace) tenants.insert(job.tenant);
  for (const std::string& name : tenants) {
    std::int64_t quota = antman ? static_cast<std::int64_t>(std::floor(
                                      options.quota_share * static_cast<double>(total_gpus) /
                                      static_cast<double>(tenants.size())))
                                : total_gpus;
    c.tenants.push_back({name, quota});
  }
  for (const Node& node : base.nodes) {
    Node idle{node.name, {}};
    for (const Gpu& gpu : node.gpus) {
      Gpu g;
      g.index = gpu.index;
      g.model = gpu.model;
      g.mem_bytes = gpu.mem_bytes;
      g.nvlink_group = gpu.nvlink_group;
      g.numa = gpu.numa;
      idle.gpus.push_back(g);
    }
    c.nodes.push_back(std::move(idle));
  }
  return c;
}

}  // namespace

std::string_view to_string(ReplayPolicy policy) {
  return policy == ReplayPolicy::kExclusive ? "exclusive" : "antman";
}

std::optional<ReplayPolicy> parse_replay_policy(std::string_view text) {
  if (text == "exclusive") return ReplayPolicy::kExclusive;
  if (text == "antman") return ReplayPolicy::kAntman;
  return std::nullopt;
}

Result<ReplayMetrics> replay(const Cluster& base, const std::vector<TraceJob>& trace,
                             const ReplayOptions& options) {
  // Flat GPU ids by node name and index, to follow each job's GPUs.
  std::unordered_map<std::string, std::map<int, std::uint32_t>> flat;
  std::int64_t total_gpus = 0;
  std::int64_t largest_node = 0;
  for (const Node& node : base.nodes) {
    for (const Gpu& gpu : node.gpus)
      flat[node.name][gpu.index] = static_cast<std::uint32_t>(total_gpus++);
    largest_node =
        std::max<std::int64_t>(largest_node, static_cast<std::int64_t>(node.gpus.size()));
  }
  if (total_gpus == 0) return make_error("the cluster has no GPUs");
  Placer placer(idle_cluster(base, trace, options, total_gpus));

  // Jobs the cluster can never hold are left out and counted.
  ReplayMetrics metrics;
  metrics.policy = to_string(options.policy);
  std::int64_t most = base.policy.multi_node ? total_gpus : largest_node;
  std::vector<const TraceJob*> jobs;
  for (const TraceJob& job : trace) {
    if (job.gpus > most) {
      ++metrics.skipped;
    } else {
      jobs.push_back(&job);
    }
  }
  const std::size_t n = jobs.size();
  metrics.jobs = static_cast<std::int64_t>(n);
  if (n == 0) return metrics;
  std::vector<std::int64_t> sizes;
  for (const TraceJob* job : jobs) sizes.push_back(job->gpus);
  std::sort(sizes.begin(), sizes.end());
  const std::int64_t median_request = sizes[(n - 1) / 2];

  std::vector<double> start(n, -1.0), end(n, -1.0);
  std::vector<char> reserved(n, 0);
  std::vector<GpuUse> use(static_cast<std::size_t>(total_gpus));
  std::vector<Running> running;
  std::list<std::size_t> queue;
  std::size_t next_arrival = 0, completed = 0;
  double now = jobs.front()->submit_s;
  double busy_gpu_s = 0, frag_gpu_s = 0;
  std::int64_t busy = 0, frag = 0;
  const double kInfinity = std::numeric_limits<double>::infinity();

  auto set_use = [&](const Running& r, int sign) {
    for (std::uint32_t g : r.gpus) {
      bool was_busy = use[g].production || use[g].opportunistic > 0;
      if (r.production) {
        use[g].production = sign > 0;
      } else {
        use[g].opportunistic += sign;
      }
      bool is_busy = use[g].production || use[g].opportunistic > 0;
      busy += static_cast<int>(is_busy) - static_cast<int>(was_busy);
    }
  };

  while (completed < n) {
    // The next event: an arrival, or the first completion at current speeds.
    double next = next_arrival < n ? jobs[next_arrival]->submit_s : kInfinity;
    for (const Running& r : running) {
      if (r.rate > 0) next = std::min(next, now + r.remaining_s / r.rate);
    }
    if (next == kInfinity) {
      return make_error(std::to_string(n - completed) +
                        " jobs can never run on this cluster under this policy");
    }
    double dt = std::max(0.0, next - now);
    for (Running& r : running) r.remaining_s -= r.rate * dt;
    busy_gpu_s += static_cast<double>(busy) * dt;
    frag_gpu_s += static_cast<double>(frag) * dt;
    now = std::max(now, next);

    // Finished jobs leave.
    for (std::size_t i = 0; i < running.size();) {
      const TraceJob& job = *jobs[running[i].job];
      if (running[i].remaining_s > 1e-9 * std::max(1.0, job.duration_s)) {
        ++i;
        continue;
      }
      if (Status s = placer.remove(job.id); !s) return s.error();
      set_use(running[i], -1);
      end[running[i].job] = now;
      ++completed;
      running[i] = std::move(running.back());
      running.pop_back();
    }
    // Arrivals queue up.
    while (next_arrival < n && jobs[next_arrival]->submit_s <= now) queue.push_back(next_arrival++);

    // The head of the queue, in order, each seeing the placements before it.
    std::size_t offered = 0;
    for (auto it = queue.begin(); it != queue.end() && offered < options.window; ++offered) {
      const TraceJob& trace_job = *jobs[*it];
      Job job;
      job.id.text = trace_job.id;
      job.tenant = trace_job.tenant;
      job.gpus = trace_job.gpus;
      job.hint =
          options.policy == ReplayPolicy::kExclusive ? ClassHint::kProduction : ClassHint::kAuto;
      job.util = options.job_util;
      job.queued_s = now - trace_job.submit_s;
      Placement placement = placer.place(job);
      if (placement.input_error) return make_error(trace_job.id + ": " + placement.reason);
      if (placement.status != PlacementStatus::kPlaced) {
        reserved[*it] |= placement.status == PlacementStatus::kReserved;
        ++it;
        continue;
      }
      Running r{*it, {}, placement.job_class == JobClass::kProduction, trace_job.duration_s};
      for (const NodeGpus& on_node : placement.nodes) {
        for (int index : on_node.gpus) r.gpus.push_back(flat[on_node.node][index]);
      }
      metrics.ot_jobs += !r.production;
      start[*it] = now;
      set_use(r, +1);
      running.push_back(std::move(r));
      it = queue.erase(it);
    }

    // Speeds: production at full speed; opportunistic jobs share what the
    // production job leaves; a job runs at its slowest GPU's pace.
    for (Running& r : running) {
      if (r.production) continue;
      r.rate = 1.0;
      for (std::uint32_t g : r.gpus) {
        double left = use[g].production ? 1.0 - options.job_util : 1.0;
        r.rate = std::min(r.rate, left / use[g].opportunistic);
      }
    }
    frag = 0;
    for (std::uint32_t free : placer.free_gpus_per_node()) {
      if (free < median_request) frag += free;
    }
  }

  std::vector<double> jct(n);
  double wait_sum = 0, last_end = 0;
  for (std::size_t j = 0; j < n; ++j) {
    jct[j] = end[j] - jobs[j]->submit_s;
    wait_sum += start[j] - jobs[j]->submit_s;
    last_end = std::max(last_end, end[j]);
    metrics.reservations += reserved[j];
  }
  std::vector<double> sorted = jct;
  std::sort(sorted.begin(), sorted.end());
  double jct_sum = 0;
  for (double v : jct) jct_sum += v;
  metrics.avg_jct_s = jct_sum / static_cast<double>(n);
  // Nearest rank.
  std::size_t rank = static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(n)));
  metrics.p95_jct_s = sorted[std::max<std::size_t>(rank, 1) - 1];
  metrics.makespan_s = last_end - jobs.front()->submit_s;
  metrics.avg_wait_s = wait_sum / static_cast<double>(n);
  if (metrics.makespan_s > 0) {
    metrics.gpu_util = busy_gpu_s / (static_cast<double>(total_gpus) * metrics.makespan_s);
    metrics.frag_gpus = frag_gpu_s / metrics.makespan_s;
  }
  return metrics;
}

std::string replay_csv_header() {
  return "policy,avg_jct,p95_jct,makespan,avg_wait,gpu_util,frag_gpus,ot_jobs,reservations,jobs,"
         "skipped";
}

std::string replay_csv(const ReplayMetrics& m) {
  return m.policy + "," + fixed(m.avg_jct_s, 1) + "," + fixed(m.p95_jct_s, 1) + "," +
         fixed(m.makespan_s, 1) + "," + fixed(m.avg_wait_s, 1) + "," + fixed(m.gpu_util, 4) + "," +
         fixed(m.frag_gpus, 2) + "," + std::to_string(m.ot_jobs) + "," +
         std::to_string(m.reservations) + "," + std::to_string(m.jobs) + "," +
         std::to_string(m.skipped);
}

std::string replay_json(const ReplayMetrics& m) {
  return "{\"kind\":\"replay\",\"version\":1,\"policy\":\"" + m.policy +
         "\",\"avg_jct_s\":" + fixed(m.avg_jct_s, 3) + ",\"p95_jct_s\":" + fixed(m.p95_jct_s, 3) +
         ",\"makespan_s\":" + fixed(m.makespan_s, 3) + ",\"avg_wait_s\":" + fixed(m.avg_wait_s, 3) +
         ",\"gpu_util\":" + fixed(m.gpu_util, 6) + ",\"frag_gpus\":" + fixed(m.frag_gpus, 4) +
         ",\"ot_jobs\":" + std::to_string(m.ot_jobs) +
         ",\"reservations\":" + std::to_string(m.reservations) +
         ",\"jobs\":" + std::to_string(m.jobs) + ",\"skipped\":" + std::to_string(m.skipped) + "}";
}

}  // namespace gpushare::place
