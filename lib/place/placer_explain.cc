// --explain: why each GPU not chosen was rejected.
//
// This walks every GPU (O(G) per job) instead of using the indexes, and
// judges each one by the same predicates the rules use, before the
// placement is applied. A GPU that qualified but was not chosen is
// "ranked-lower", with the rule that ranked it lower. Runs of GPUs on one
// node with the same reason are merged into one entry.
#include <algorithm>
#include <sstream>

#include "common/units.h"
#include "place/placer_state.h"

namespace gpushare::place {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string jobs_text(std::size_t jobs) {
  return jobs == 1 ? "1 job" : std::to_string(jobs) + " jobs";
}

}  // namespace

Explanation Placer::State::explain(const Job& job, const ClassDecision& decision,
                                   const Choice& choice) const {
  Explanation out;
  out.class_reason = decision.reason;
  out.choice = choice.rule;
  if (!decision.job_class) return out;

  std::vector<char> chosen(gpus.size(), 0);
  std::vector<char> chosen_node(rank_to_node.size(), 0);
  for (std::uint32_t g : choice.gpus) {
    chosen[g] = 1;
    chosen_node[gpus[g].node] = 1;
  }
  auto reject = [&](std::uint32_t g, std::string reason, std::string detail) {
    const std::string& node = node_name(g);
    if (!out.rejected.empty()) {
      Rejection& last = out.rejected.back();
      if (last.node == node && last.reason == reason && last.detail == detail) {
        last.gpus.push_back(gpu(g).index);
        return;
      }
    }
    out.rejected.push_back(Rejection{node, {gpu(g).index}, std::move(reason), std::move(detail)});
  };
  const Order gpu_order = job.gpu_order.value_or(cluster.policy.gpu_order);
  const std::string gpu_rule = "gpu_order " + std::string(to_string(gpu_order));

  if (*decision.job_class == kQosProduction) {
    for (std::uint32_t g = 0; g < gpus.size(); ++g) {
      if (chosen[g]) continue;
      const Gpu& gp = gpu(g);
      if (has_production[g]) {
        reject(g, "production", "runs production job '" + production_job(gp)->id + "'");
      } else if (gp.reservation) {
        reject(g, "reserved", "reserved for job '" + gp.reservation->job + "'");
      } else if (!antman::memory_fits(production_bytes(g), job.mem_bytes)) {
        reject(g, "memory",
               size_text(production_bytes(g)) + " can be given to a production job; it needs " +
                   size_text(job.mem_bytes));
      } else if (choice.status == PlacementStatus::kReserved) {
        reject(g, "ranked-lower", "free, but the reservation went to a node with more free GPUs");
      } else if (choice.level == kSeveralNodes) {
        reject(g, "ranked-lower",
               chosen_node[gpus[g].node] ? "free, but " + gpu_rule + " ranked the chosen GPUs first"
                                         : "free, but the fewest-nodes rule chose other nodes");
      } else {
        Level level = static_cast<Level>(choice.level);
        bool same_domain = domains.domain_of(level, g) == choice.domain;
        reject(g, "ranked-lower",
               same_domain ? "free, but " + gpu_rule + " ranked the chosen GPUs first"
                           : "free, but outside the chosen " + std::string(to_string(level)));
      }
    }
    return out;
  }

  const double threshold = cluster.policy.util_threshold;
  for (std::uint32_t g = 0; g < gpus.size(); ++g) {
    if (chosen[g]) continue;
    const Gpu& gp = gpu(g);
    if (!takes_opportunistic(g)) {
      reject(
          g, "utilisation",
          "utilisation " + number(gp.util) + " is not below util_threshold " + number(threshold));
    } else if (!antman::memory_fits(free_bytes(g), job.mem_bytes)) {
      reject(g, "memory", size_text(free_bytes(g)) + " free; it needs " + size_text(job.mem_bytes));
    } else if (choice.status != PlacementStatus::kPlaced) {
      reject(g, "ranked-lower", "qualifies, but too few GPUs do");
    } else {
      bool ranks_before_a_chosen = false;
      for (std::uint32_t c : choice.gpus) {
        ranks_before_a_chosen =
            ranks_before_a_chosen || load_before(gpu_order, load_key(g), load_key(c));
      }
      reject(g, "ranked-lower",
             ranks_before_a_chosen
                 ? "qualifies, but its node has too few such GPUs and multi_node is false"
                 : "load (utilisation " + number(gp.util) + ", " + jobs_text(gp.jobs.size()) +
                       ", " + size_text(gp.mem_used_bytes) +
                       " used) ranks after the chosen GPUs by " + gpu_rule);
    }
  }
  if (choice.status == PlacementStatus::kPlaced) out.beside = beside_gangs(choice.gpus);
  return out;
}

// A production job on several GPUs is taken for a gang, one rank per GPU,
// as data-parallel training runs (torchrun, srun --gres=gpu:N): its ranks
// meet at a collective every step, so the job steps at its slowest rank's
// pace, and an opportunistic job beside any one rank costs every rank what
// it costs that one. The placer does not rank GPUs by this (Algorithm 1
// does not); it says so, so that whoever reads the placement knows which
// production jobs this one is charged against (the replay charges a gang
// for its slowest rank alike; gpushare-place(1), INTERFERENCE MODEL).
std::vector<BesideGang> Placer::State::beside_gangs(const std::vector<std::uint32_t>& chosen) const {
  std::vector<std::uint32_t> sorted = chosen;
  std::sort(sorted.begin(), sorted.end());
  std::vector<BesideGang> out;
  for (std::uint32_t g : sorted) {
    const ResidentJob* owner = production_job(gpu(g));
    if (owner == nullptr) continue;
    const RunningJobs::Running* running_job = running.find(owner->id);
    if (running_job == nullptr || running_job->gpus.size() < 2) continue;
    BesideGang beside;
    beside.node = node_name(g);
    beside.gpu = gpu(g).index;
    beside.job = owner->id;
    beside.ranks = running_job->gpus.size();
    beside.gang = by_node(running_job->gpus);
    std::string where;
    for (const NodeGpus& part : beside.gang) {
      where += where.empty() ? "" : ", ";
      where += part.node + " GPU" + (part.gpus.size() == 1 ? " " : "s ");
      for (std::size_t i = 0; i < part.gpus.size(); ++i) {
        where += (i > 0 ? "," : "") + std::to_string(part.gpus[i]);
      }
    }
    beside.detail = "beside one of the " + std::to_string(beside.ranks) + " ranks of production job '" +
                    owner->id + "' (" + where +
                    "): its steps wait for its slowest rank, so what this job takes from the rank "
                    "on " + beside.node + " GPU " + std::to_string(beside.gpu) +
                    (beside.ranks == 2 ? " it takes from both"
                                       : " it takes from all " + std::to_string(beside.ranks));
    out.push_back(std::move(beside));
  }
  return out;
}

}  // namespace gpushare::place
