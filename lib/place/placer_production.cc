// Step 4 of Algorithm 1 (placer.cc): the GPUs of a production job, in
// three tries. The smallest topology domain with enough qualifying GPUs
// (NVLink group, NUMA node, node); else, with multi_node, the fewest
// nodes; else a reservation of what qualifies on the node with the most.
#include <algorithm>

#include "place/placer_state.h"

namespace gpushare::place {

std::vector<std::uint32_t> Placer::State::qualifying(const Domain& d, const Job& job) const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t g : d.gpus) {
    if (production_free(g) && antman::memory_fits(production_bytes(g), job.mem_bytes)) {
      out.push_back(g);
    }
  }
  return out;
}

std::vector<std::uint32_t> Placer::State::take_first(std::vector<std::uint32_t> candidates,
                                                     std::size_t count, Order gpu_order) const {
  std::sort(candidates.begin(), candidates.end(), [&](std::uint32_t a, std::uint32_t b) {
    return load_before(gpu_order, load_key(a), load_key(b));
  });
  candidates.resize(std::min(count, candidates.size()));
  return candidates;
}

Choice Placer::State::choose_production(const Job& job) const {
  Choice choice = choose_in_domain(job);
  if (choice.status == PlacementStatus::kPlaced) return choice;
  if (cluster.policy.multi_node) return choose_several_nodes(job);
  return reserve_on_one_node(job);
}

Choice Placer::State::choose_in_domain(const Job& job) const {
  const Order node_order = job.node_order.value_or(cluster.policy.node_order);
  const Order gpu_order = job.gpu_order.value_or(cluster.policy.gpu_order);
  const std::uint32_t need = static_cast<std::uint32_t>(job.gpus);
  Choice choice;
  // The smallest domain that fits: NVLink group, NUMA node, node.
  for (int l = 0; l < kLevels; ++l) {
    Level level = static_cast<Level>(l);
    domains.visit(level, node_order, need, [&](const Domain& d) {
      std::vector<std::uint32_t> fit = qualifying(d, job);
      if (fit.size() < need) return false;
      choice.status = PlacementStatus::kPlaced;
      choice.gpus = take_first(std::move(fit), need, gpu_order);
      choice.level = l;
      choice.domain = d.id;
      return true;
    });
    if (choice.status != PlacementStatus::kPlaced) continue;
    if (!explaining) return choice;
    const std::string& node = node_name(choice.gpus.front());
    const Domain& d = domains.domain(level, choice.domain);
    std::string where = level == Level::kNode ? "node '" + node + "'"
                        : d.key >= kUnnamedDomain
                            ? std::string(level == Level::kNvlink ? "a GPU in no NVLink group"
                                                                  : "the GPUs in no NUMA node") +
                                  " of node '" + node + "'"
                            : std::string(to_string(level)) + " " + std::to_string(d.key) +
                                  " of node '" + node + "'";
    choice.rule = "the smallest domain that fits is " + where + " (" +
                  order_rule(node_order, true) + "; " + order_rule(gpu_order, false) + ")";
    return choice;
  }
  return choice;
}

Choice Placer::State::choose_several_nodes(const Job& job) const {
  const Order node_order = job.node_order.value_or(cluster.policy.node_order);
  const Order gpu_order = job.gpu_order.value_or(cluster.policy.gpu_order);
  const std::uint32_t need = static_cast<std::uint32_t>(job.gpus);
  Choice choice;
  // Fewest nodes: take whole nodes, most free GPUs first, until the rest
  // fits in one more node.
  std::vector<std::uint32_t> taken_nodes;
  std::vector<std::uint32_t> gpus;
  std::uint32_t remaining = need;
  std::optional<std::uint32_t> last_node;
  domains.visit(Level::kNode, Order::kSpread, 1, [&](const Domain& d) {
    std::vector<std::uint32_t> fit = qualifying(d, job);
    if (fit.empty()) return false;
    if (fit.size() >= remaining) {
      last_node = d.node;
      return true;
    }
    taken_nodes.push_back(d.node);
    remaining -= static_cast<std::uint32_t>(fit.size());
    gpus.insert(gpus.end(), fit.begin(), fit.end());
    return false;
  });
  if (last_node) {
    if (node_order == Order::kBinpack) {
      // The tightest node that holds the rest: keeps larger holes whole.
      domains.visit(Level::kNode, Order::kBinpack, remaining, [&](const Domain& d) {
        if (std::find(taken_nodes.begin(), taken_nodes.end(), d.node) != taken_nodes.end()) {
          return false;
        }
        if (qualifying(d, job).size() < remaining) return false;
        last_node = d.node;
        return true;
      });
    }
    std::vector<std::uint32_t> rest =
        take_first(qualifying(domains.domain(Level::kNode, *last_node), job), remaining, gpu_order);
    gpus.insert(gpus.end(), rest.begin(), rest.end());
    choice.status = PlacementStatus::kPlaced;
    choice.gpus = std::move(gpus);
    choice.level = kSeveralNodes;
    if (!explaining) return choice;
    choice.rule =
        "no single node fits; the fewest nodes that do: " + std::to_string(taken_nodes.size() + 1) +
        " (whole nodes with the most free GPUs first, then " +
        (node_order == Order::kBinpack ? "the tightest node for the rest"
                                       : "the next largest node for the rest") +
        ")";
    return choice;
  }
  if (gpus.empty()) return nothing_qualifies(job);
  std::sort(gpus.begin(), gpus.end());
  choice.status = PlacementStatus::kReserved;
  choice.reason = "only " + std::to_string(gpus.size()) + " of the " + gpus_word(need) +
                  " it needs are free of production jobs and reservations; reserved them";
  choice.rule = choice.reason + " (on the fewest nodes)";
  choice.gpus = std::move(gpus);
  choice.level = kSeveralNodes;
  return choice;
}

Choice Placer::State::reserve_on_one_node(const Job& job) const {
  const std::uint32_t need = static_cast<std::uint32_t>(job.gpus);
  // One node only: reserve on the node with the most qualifying GPUs.
  std::vector<std::uint32_t> best;
  domains.visit(Level::kNode, Order::kSpread, 1, [&](const Domain& d) {
    if (d.free <= best.size()) return true;  // no later node can do better
    std::vector<std::uint32_t> fit = qualifying(d, job);
    if (antman::better_reservation(fit.size(), best.size())) best = std::move(fit);
    return false;
  });
  if (best.empty()) return nothing_qualifies(job);
  Choice choice;
  choice.status = PlacementStatus::kReserved;
  choice.reason = "no node has " + gpus_word(need) +
                  " free of production jobs and reservations; "
                  "reserved the " +
                  std::to_string(best.size()) + " of node '" + node_name(best.front()) +
                  "', the most on one node";
  choice.rule = choice.reason;
  choice.gpus = std::move(best);
  choice.level = static_cast<int>(Level::kNode);
  choice.domain = gpus[choice.gpus.front()].node;
  return choice;
}

Choice Placer::State::nothing_qualifies(const Job& job) const {
  Choice choice;
  choice.reason = "no GPU is free of production jobs and reservations with " +
                  size_text(job.mem_bytes) + " for the job";
  choice.rule = choice.reason;
  return choice;
}

}  // namespace gpushare::place
