// Algorithm 1, as gpushare reads it.
//
// AntMan (OSDI'20, "Scheduling Policy") splits jobs into resource-guarantee
// (production) jobs, which have a per-tenant GPU quota and own their GPUs,
// and opportunistic jobs, which harvest what production jobs leave idle.
// The paper gives the shape of the policy; the exact loop and the
// tie-breaks are not published, so this file fixes them, and the same
// input always gives the same output.
//
// Jobs are placed one at a time in input order; each placement updates the
// state the next job sees.
//
// 1. Check the job against the cluster: a known tenant, no more GPUs than
//    the cluster (or, without multi_node, its largest node) has, no more
//    memory per GPU than its largest GPU has, an id not already running.
//    A job that fails is unusable input, and the others still go on.
// 2. A job whose id holds a reservation gets those GPUs back first.
// 3. Decide the class. The tenant's usage is its GPUs with a production job
//    plus its reserved GPUs. "production": within quota, or refused.
//    "opportunistic": as asked. "auto": opportunistic when it has queued at
//    least queue_threshold, else production within quota, else
//    opportunistic (AntMan turns jobs it cannot guarantee into
//    opportunistic ones).
// 4. Production: a GPU qualifies when it has no production job, no
//    reservation, and enough memory once opportunistic memory (which can
//    spill to the host) is set aside. Try the smallest topology domain
//    first: an NVLink group, then a NUMA node, then a node; at each level
//    take the first domain with enough qualifying GPUs in node_order, and
//    in it the GPUs first in gpu_order. If no single node fits and
//    multi_node is on, use the fewest nodes: nodes with the most free GPUs
//    first, all their qualifying GPUs, and for the rest the best-fitting
//    node (binpack) or the next largest (spread). If the job fits nowhere
//    whole, reserve what qualifies (on one node without multi_node), unless
//    [policy] reserve is false: the job is "reserved" and those GPUs take no
//    other production job, though opportunistic jobs may use them meanwhile.
// 5. Opportunistic: a GPU qualifies when its utilisation is below
//    util_threshold and it has the memory free. Take the first in
//    gpu_order: spread is the least loaded (utilisation, then jobs on it,
//    then memory used, then opportunistic jobs on it), binpack the most
//    loaded. A job of several GPUs takes the first several (on one node
//    without multi_node). All or nothing: no reservations.
// 6. Apply: the job joins its GPUs' job lists, their memory use and
//    utilisation grow by the job's, and both indexes are updated.
//
// A finished job can be removed (trace replay does): its GPUs, memory,
// utilisation and quota are given back and the indexes follow.
//
// Every remaining tie goes to the node name, then the GPU index. The two
// indexes (load_index.h, domain_index.h) make each step O(log G) in the
// common case, so the cost per job does not grow with the jobs placed.
#include "place/placer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/units.h"
#include "place/placer_state.h"

namespace gpushare::place {
std::string gpus_word(std::int64_t n) { return n == 1 ? "1 GPU" : std::to_string(n) + " GPUs"; }

std::string order_rule(Order order, bool nodes) {
  if (order == Order::kBinpack) {
    return nodes ? "node_order binpack: fewest free GPUs first"
                 : "gpu_order binpack: most loaded first";
  }
  return nodes ? "node_order spread: most free GPUs first" : "gpu_order spread: least loaded first";
}

std::string size_text(std::uint64_t bytes) {
  std::string text = format_size(bytes);
  Result<std::uint64_t> back = parse_size(text);
  if (back && *back == bytes) return text;
  return std::to_string(bytes) + " bytes";
}

std::string_view to_string(PlacementStatus status) {
  switch (status) {
    case PlacementStatus::kPlaced:
      return "placed";
    case PlacementStatus::kReserved:
      return "reserved";
    default:
      return "unplaced";
  }
}

Placement input_error(std::optional<JobId> job, std::string message) {
  Placement placement;
  placement.job = std::move(job);
  placement.status = PlacementStatus::kUnplaced;
  placement.reason = std::move(message);
  placement.input_error = true;
  return placement;
}

// --- state ------------------------------------------------------------------

Placer::State::State(Cluster cluster_in) : cluster(std::move(cluster_in)) {
  std::vector<std::uint32_t> order(cluster.nodes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return cluster.nodes[a].name < cluster.nodes[b].name;
  });
  rank_to_node = order;

  std::vector<DomainGpu> domain_gpus;
  for (std::uint32_t rank = 0; rank < order.size(); ++rank) {
    const Node& node = cluster.nodes[order[rank]];
    std::vector<std::uint32_t> slots(node.gpus.size());
    std::iota(slots.begin(), slots.end(), 0u);
    std::sort(slots.begin(), slots.end(), [&](std::uint32_t a, std::uint32_t b) {
      return node.gpus[a].index < node.gpus[b].index;
    });
    largest_node_gpus = std::max<std::uint64_t>(largest_node_gpus, node.gpus.size());
    for (std::uint32_t slot : slots) {
      const Gpu& g = node.gpus[slot];
      gpus.push_back(GpuRef{rank, slot});
      largest_gpu_bytes = std::max(largest_gpu_bytes, g.mem_bytes);
      std::uint32_t ots = 0;
      std::uint64_t ot_bytes = 0;
      for (const ResidentJob& job : g.jobs) {
        running[job.id].gpus.push_back(static_cast<std::uint32_t>(gpus.size() - 1));
        if (job.job_class == kQosOpportunistic) {
          ++ots;
          ot_bytes = saturating_add(ot_bytes, job.mem_bytes);
        }
      }
      ot_jobs.push_back(ots);
      util_sum.push_back(g.util);
      ot_mem_bytes.push_back(ot_bytes);
      has_production.push_back(production_job(g) != nullptr);
      domain_gpus.push_back(DomainGpu{rank, g.index, g.nvlink_group, g.numa,
                                      !has_production.back() && !g.reservation});
    }
  }
  total_gpus = gpus.size();

  for (const Tenant& tenant : cluster.tenants) {
    tenant_ids.emplace(tenant.name, static_cast<std::uint32_t>(tenant_usage.size()));
    tenant_usage.push_back(0);
  }
  for (std::uint32_t g = 0; g < gpus.size(); ++g) {
    const Gpu& gp = gpu(g);
    if (const ResidentJob* owner = production_job(gp)) {
      auto it = tenant_ids.find(owner->tenant);
      if (it != tenant_ids.end()) ++tenant_usage[it->second];
    }
    if (gp.reservation) {
      reservations[gp.reservation->job].push_back(g);
      auto it = tenant_ids.find(gp.reservation->tenant);
      if (it != tenant_ids.end()) ++tenant_usage[it->second];
    }
  }

  domains = DomainIndex(domain_gpus, static_cast<std::uint32_t>(order.size()));
  load = LoadIndex(gpus.size());
  for (std::uint32_t g = 0; g < gpus.size(); ++g) refresh_load(g);
}

std::uint64_t Placer::State::production_bytes(std::uint32_t g) const {
  const Gpu& gp = gpu(g);
  return antman::production_memory(gp.mem_bytes, gp.mem_used_bytes, ot_mem_bytes[g]);
}

std::uint64_t Placer::State::free_bytes(std::uint32_t g) const {
  const Gpu& gp = gpu(g);
  return gp.mem_bytes > gp.mem_used_bytes ? gp.mem_bytes - gp.mem_used_bytes : 0;
}

LoadKey Placer::State::load_key(std::uint32_t g) const {
  const Gpu& gp = gpu(g);
  return LoadKey{
      gp.util,      static_cast<std::uint32_t>(gp.jobs.size()), gp.mem_used_bytes, ot_jobs[g], g,
      free_bytes(g)};
}

void Placer::State::refresh_load(std::uint32_t g) {
  if (takes_opportunistic(g)) {
    load.set(load_key(g));
  } else {
    load.remove(g);
  }
}

// --- 1. checks ----------------------------------------------------------------

Status Placer::State::check(const Job& job, const std::string& tenant) const {
  if (tenant.empty()) {
    return make_error("no tenant given, and the cluster has no [policy] default_tenant");
  }
  if (tenant_ids.count(tenant) == 0) {
    std::string known;
    for (const Tenant& t : cluster.tenants) known += (known.empty() ? "" : ", ") + t.name;
    return make_error("unknown tenant '" + tenant + "'" +
                      (known.empty() ? " (the cluster defines none)" : " (known: " + known + ")"));
  }
  if (static_cast<std::uint64_t>(job.gpus) > total_gpus) {
    return make_error("asks for " + gpus_word(job.gpus) + "; the cluster has " +
                      gpus_word(static_cast<std::int64_t>(total_gpus)));
  }
  if (!cluster.policy.multi_node && static_cast<std::uint64_t>(job.gpus) > largest_node_gpus) {
    return make_error("asks for " + gpus_word(job.gpus) + "; the largest node has " +
                      gpus_word(static_cast<std::int64_t>(largest_node_gpus)) +
                      " and [policy] multi_node is false");
  }
  if (job.mem_bytes > largest_gpu_bytes) {
    return make_error("needs " + size_text(job.mem_bytes) + " per GPU; the largest GPU has " +
                      size_text(largest_gpu_bytes));
  }
  if (running.contains(job.id.text)) {
    return make_error("already running on the cluster (duplicate id)");
  }
  return {};
}

// --- 2. reservations ------------------------------------------------------------

void Placer::State::release_reservation(const std::string& job_id) {
  auto it = reservations.find(job_id);
  if (it == reservations.end()) return;
  std::vector<std::uint32_t> held = std::move(it->second);
  reservations.erase(it);
  for (std::uint32_t g : held) {
    Gpu& gp = gpu(g);
    auto tenant = tenant_ids.find(gp.reservation->tenant);
    if (tenant != tenant_ids.end()) --tenant_usage[tenant->second];
    gp.reservation.reset();
  }
  domains.set_free(held, true);
}

// --- 3. class -----------------------------------------------------------------

ClassDecision Placer::State::decide_class(const Job& job, const std::string& tenant) const {
  std::uint32_t t = tenant_ids.at(tenant);
  std::int64_t usage = tenant_usage[t];
  std::int64_t quota = cluster.tenants[t].quota_gpus;
  bool within = antman::within_quota(usage, job.gpus, quota);
  // The words cost more than the decision: build them only when someone
  // reads them (a refusal, or --explain).
  auto standing = [&] {
    return "tenant '" + tenant + "' holds " + std::to_string(usage) + " of its " +
           std::to_string(quota) + " quota GPUs and the job needs " + std::to_string(job.gpus);
  };
  switch (job.hint) {
    case ClassHint::kOpportunistic:
      return {kQosOpportunistic, "opportunistic, as asked"};
    case ClassHint::kProduction:
      if (!within) return {std::nullopt, "over quota: " + standing()};
      return {kQosProduction, explaining ? "production, as asked; " + standing() : ""};
    case ClassHint::kAuto:
      break;
  }
  const auto& threshold = cluster.policy.queue_threshold;
  std::optional<double> threshold_s;
  if (threshold) threshold_s = std::chrono::duration<double>(*threshold).count();
  const bool too_long = job.queued_s && antman::queued_too_long(*job.queued_s, threshold_s);
  if (too_long) {
    if (!explaining) return {kQosOpportunistic, ""};
    std::ostringstream text;
    text << "auto: queued " << *job.queued_s << " s, at least [policy] queue_threshold ("
         << static_cast<double>(threshold->count()) / 1e9 << " s), so opportunistic";
    return {kQosOpportunistic, text.str()};
  }
  if (!explaining) return {antman::auto_class(within, too_long), ""};
  if (within) {
    return {kQosProduction, "auto: within quota (" + standing() + "), so production"};
  }
  return {kQosOpportunistic, "auto: over quota (" + standing() + "), so opportunistic"};
}

// --- 5. opportunistic -----------------------------------------------------------

Choice Placer::State::choose_opportunistic(const Job& job) {
  const Order gpu_order = job.gpu_order.value_or(cluster.policy.gpu_order);
  const std::size_t need = static_cast<std::size_t>(job.gpus);
  Choice choice;
  std::vector<std::uint32_t> found;
  std::size_t candidates = 0;  // for the message when there are too few
  if (cluster.policy.multi_node || need == 1) {
    load.visit_fits(gpu_order, job.mem_bytes, [&](std::uint32_t g) {
      found.push_back(g);
      return found.size() == need;
    });
    candidates = found.size();
  } else {
    // The first node to gather enough candidates, in candidate order.
    std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> per_node;
    load.visit_fits(gpu_order, job.mem_bytes, [&](std::uint32_t g) {
      ++candidates;
      std::vector<std::uint32_t>& on_node = per_node[gpus[g].node];
      on_node.push_back(g);
      if (on_node.size() < need) return false;
      found = on_node;
      return true;
    });
  }
  // Words only for a refusal or an explanation: a stream costs more than
  // the search.
  auto threshold_text = [&] {
    std::ostringstream threshold;
    threshold << cluster.policy.util_threshold;
    return threshold.str();
  };
  if (found.size() < need) {
    bool one_node = !cluster.policy.multi_node && need > 1 && candidates >= need;
    choice.reason =
        (candidates == 0   ? std::string("no GPU has")
         : candidates == 1 ? std::string("only 1 GPU has")
                           : "only " + gpus_word(static_cast<std::int64_t>(candidates)) + " have") +
        " utilisation below " + threshold_text() + " and " + size_text(job.mem_bytes) + " free" +
        (one_node ? ", and no node has " + std::to_string(need) : "");
    choice.rule = choice.reason;
    return choice;
  }
  choice.status = PlacementStatus::kPlaced;
  choice.gpus = std::move(found);
  if (!explaining) return choice;
  choice.rule = "GPUs with utilisation below " + threshold_text() + " and " +
                size_text(job.mem_bytes) + " free, " + order_rule(gpu_order, false);
  return choice;
}

// --- 6. apply -------------------------------------------------------------------

void Placer::State::apply(const Job& job, const std::string& tenant, Qos job_class,
                          const Choice& choice) {
  std::uint32_t t = tenant_ids.at(tenant);
  if (choice.status == PlacementStatus::kReserved) {
    for (std::uint32_t g : choice.gpus) gpu(g).reservation = Reservation{job.id.text, tenant};
    tenant_usage[t] += static_cast<std::int64_t>(choice.gpus.size());
    reservations[job.id.text] = choice.gpus;
    domains.set_free(choice.gpus, false);
    return;
  }
  if (choice.status != PlacementStatus::kPlaced) return;
  for (std::uint32_t g : choice.gpus) {
    Gpu& gp = gpu(g);
    gp.jobs.push_back(ResidentJob{job.id.text, job_class, tenant, job.mem_bytes});
    gp.mem_used_bytes = saturating_add(gp.mem_used_bytes, job.mem_bytes);
    util_sum[g] += job.util;
    gp.util = std::min(1.0, util_sum[g]);
    if (job_class == kQosProduction) {
      has_production[g] = 1;
    } else {
      ++ot_jobs[g];
      ot_mem_bytes[g] = saturating_add(ot_mem_bytes[g], job.mem_bytes);
    }
    refresh_load(g);
  }
  if (job_class == kQosProduction) {
    tenant_usage[t] += static_cast<std::int64_t>(choice.gpus.size());
    domains.set_free(choice.gpus, false);
  }
  running[job.id.text] = RunningJobs::Running{choice.gpus, job.util};
}

std::vector<NodeGpus> Placer::State::by_node(const std::vector<std::uint32_t>& chosen) const {
  std::vector<std::uint32_t> sorted = chosen;
  std::sort(sorted.begin(), sorted.end());  // flat order: node name, then index
  std::vector<NodeGpus> out;
  for (std::uint32_t g : sorted) {
    if (out.empty() || out.back().node != node_name(g)) out.push_back(NodeGpus{node_name(g), {}});
    out.back().gpus.push_back(gpu(g).index);
  }
  return out;
}

// --- finished jobs --------------------------------------------------------------

Status Placer::State::remove(const std::string& job_id) {
  RunningJobs::Running* it = running.find(job_id);
  if (it == nullptr) return make_error("no job '" + job_id + "' runs on the cluster");
  std::vector<std::uint32_t> freed;
  for (std::uint32_t g : it->gpus) {
    Gpu& gp = gpu(g);
    auto job = std::find_if(gp.jobs.begin(), gp.jobs.end(),
                            [&](const ResidentJob& j) { return j.id == job_id; });
    if (job == gp.jobs.end()) continue;
    gp.mem_used_bytes -= std::min(gp.mem_used_bytes, job->mem_bytes);
    if (job->job_class == kQosProduction) {
      has_production[g] = 0;
      auto tenant = tenant_ids.find(job->tenant);
      if (tenant != tenant_ids.end()) --tenant_usage[tenant->second];
      freed.push_back(g);
    } else {
      --ot_jobs[g];
      ot_mem_bytes[g] -= std::min(ot_mem_bytes[g], job->mem_bytes);
    }
    gp.jobs.erase(job);
    util_sum[g] -= it->util;
    gp.util = std::clamp(util_sum[g], 0.0, 1.0);
    refresh_load(g);
  }
  domains.set_free(freed, true);
  running.erase(job_id);
  return {};
}

// --- the placer -------------------------------------------------------------------

Placer::Placer(Cluster cluster) : state_(std::make_unique<State>(std::move(cluster))) {}
Placer::~Placer() = default;
Placer::Placer(Placer&&) noexcept = default;
Placer& Placer::operator=(Placer&&) noexcept = default;

const Cluster& Placer::cluster() const { return state_->cluster; }

Status Placer::remove(const std::string& job_id) { return state_->remove(job_id); }

std::vector<std::uint32_t> Placer::free_gpus_per_node() const {
  std::vector<std::uint32_t> out(state_->rank_to_node.size());
  for (std::uint32_t n = 0; n < out.size(); ++n) out[n] = state_->domains.node_free(n);
  return out;
}

Placement Placer::place(const Job& job, bool explain) {
  State& s = *state_;
  const std::string tenant = job.tenant.empty() ? s.cluster.policy.default_tenant : job.tenant;
  if (Status ok = s.check(job, tenant); !ok) return input_error(job.id, ok.error().message);

  Placement placement;
  placement.job = job.id;
  placement.tenant = tenant;
  placement.mem_bytes = job.mem_bytes;

  s.explaining = explain;
  s.release_reservation(job.id.text);
  ClassDecision decision = s.decide_class(job, tenant);
  Choice choice;
  if (!decision.job_class) {
    choice.reason = decision.reason;
    choice.rule = "refused before looking at GPUs";
  } else if (*decision.job_class == kQosProduction) {
    choice = s.choose_production(job);
    if (choice.status == PlacementStatus::kReserved &&
        !antman::may_reserve({s.cluster.policy.reserve, false}, false)) {
      choice.reason = "only " + std::to_string(choice.gpus.size()) + " of the " +
                      gpus_word(job.gpus) +
                      " it needs are free of production jobs and reservations, and [policy] "
                      "reserve is false";
      choice.rule = choice.reason;
      choice.status = PlacementStatus::kUnplaced;
      choice.gpus.clear();
    }
  } else {
    choice = s.choose_opportunistic(job);
  }
  // Explain first: it must see the state the choice saw.
  if (explain) placement.explanation = s.explain(job, decision, choice);
  if (decision.job_class == kQosOpportunistic && choice.status == PlacementStatus::kPlaced) {
    placement.beside_whole_gpu =
        std::any_of(choice.gpus.begin(), choice.gpus.end(),
                    [&](std::uint32_t g) { return production_job(s.gpu(g)) != nullptr; });
  }
  if (decision.job_class) s.apply(job, tenant, *decision.job_class, choice);

  placement.job_class = decision.job_class;
  if (!decision.job_class) placement.job_class = kQosProduction;
  placement.status = choice.status;
  placement.reason = choice.reason;
  placement.nodes = s.by_node(choice.gpus);
  return placement;
}

}  // namespace gpushare::place
