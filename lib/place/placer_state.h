// The placer's working state (private to lib/place): the cluster, a flat
// view of its GPUs in tie-break order, and the two indexes.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "place/antman_rules.h"
#include "place/cluster/cluster.h"
#include "place/domain_index.h"
#include "place/load_index.h"
#include "place/placer.h"
#include "place/running_jobs.h"

namespace gpushare::place {

/// Bytes for people: "16GiB" when that is exact, else "17179869185 bytes",
/// so a message never says "needs 16GiB; has 16GiB".
std::string size_text(std::uint64_t bytes);

/// "1 GPU", "3 GPUs".
std::string gpus_word(std::int64_t n);
/// The words of a node_order (nodes) or gpu_order rule, for explanations.
std::string order_rule(Order order, bool nodes);
/// Choice::level of a production job placed over several nodes.
inline constexpr int kSeveralNodes = 3;

/// A production job's class decision, or its refusal.
struct ClassDecision {
  std::optional<Qos> job_class;  ///< unset: refused (over quota)
  std::string reason;
};

/// What the rules chose for a job, before it is applied.
struct Choice {
  PlacementStatus status = PlacementStatus::kUnplaced;
  std::vector<std::uint32_t> gpus;  ///< flat ids
  std::string reason;               ///< for reserved or unplaced
  std::string rule;                 ///< for explanations
  int level = -1;                   ///< production: Level, or 3 for several nodes
  std::uint32_t domain = 0;         ///< production, level < 3: the domain chosen
};

struct Placer::State {
  explicit State(Cluster cluster);

  Cluster cluster;
  /// Flat GPU ids: nodes in name order, GPUs by index within a node. Every
  /// "node name, then GPU index" tie-break is "lower flat id".
  struct GpuRef {
    std::uint32_t node;  ///< rank: position in name order
    std::uint32_t slot;  ///< position in the node's gpus
  };
  std::vector<GpuRef> gpus;
  std::vector<std::uint32_t> rank_to_node;  ///< rank -> position in cluster.nodes
  std::vector<std::uint32_t> ot_jobs;       ///< per GPU
  std::vector<std::uint64_t> ot_mem_bytes;  ///< per GPU: memory that can spill
  std::vector<std::uint8_t> has_production;

  std::unordered_map<std::string, std::uint32_t> tenant_ids;
  std::vector<std::int64_t> tenant_usage;  ///< production + reserved GPUs
  /// The jobs on the cluster: their GPUs, and the utilisation each added.
  RunningJobs running;
  /// Per GPU: its utilisation before clamping to 1, so removing a job
  /// takes away exactly what placing it added.
  std::vector<double> util_sum;
  std::unordered_map<std::string, std::vector<std::uint32_t>> reservations;

  std::uint64_t total_gpus = 0;
  std::uint64_t largest_node_gpus = 0;
  std::uint64_t largest_gpu_bytes = 0;

  LoadIndex load;
  DomainIndex domains;
  /// Whether the job being placed is explained: rules and class reasons
  /// are then put in words, which otherwise costs more than placing.
  bool explaining = false;

  Gpu& gpu(std::uint32_t g) { return cluster.nodes[rank_to_node[gpus[g].node]].gpus[gpus[g].slot]; }
  const Gpu& gpu(std::uint32_t g) const {
    return cluster.nodes[rank_to_node[gpus[g].node]].gpus[gpus[g].slot];
  }
  const std::string& node_name(std::uint32_t g) const {
    return cluster.nodes[rank_to_node[gpus[g].node]].name;
  }

  bool production_free(std::uint32_t g) const { return !has_production[g] && !gpu(g).reservation; }
  /// Memory a production job can have: all but what production jobs and
  /// unaccounted processes hold, since opportunistic memory can spill.
  std::uint64_t production_bytes(std::uint32_t g) const;
  std::uint64_t free_bytes(std::uint32_t g) const;
  bool takes_opportunistic(std::uint32_t g) const {
    return antman::takes_opportunistic(gpu(g).util, cluster.policy.util_threshold);
  }
  LoadKey load_key(std::uint32_t g) const;
  /// Puts the GPU in the opportunistic index, or out of it, as it now is.
  void refresh_load(std::uint32_t g);

  Status check(const Job& job, const std::string& tenant) const;
  ClassDecision decide_class(const Job& job, const std::string& tenant) const;
  /// Step 4, in three tries: the smallest domain that fits, else several
  /// nodes (multi_node), else a reservation on one node.
  Choice choose_production(const Job& job) const;
  Choice choose_in_domain(const Job& job) const;
  Choice choose_several_nodes(const Job& job) const;
  Choice reserve_on_one_node(const Job& job) const;
  Choice nothing_qualifies(const Job& job) const;
  /// The GPUs of `d` that can take the production job.
  std::vector<std::uint32_t> qualifying(const Domain& d, const Job& job) const;
  /// The first `count` of `candidates` in gpu_order.
  std::vector<std::uint32_t> take_first(std::vector<std::uint32_t> candidates, std::size_t count,
                                        Order gpu_order) const;
  Choice choose_opportunistic(const Job& job);
  void release_reservation(const std::string& job_id);
  Status remove(const std::string& job_id);
  void apply(const Job& job, const std::string& tenant, Qos job_class, const Choice& choice);
  std::vector<NodeGpus> by_node(const std::vector<std::uint32_t>& gpus) const;

  /// placer_explain.cc
  Explanation explain(const Job& job, const ClassDecision& decision, const Choice& choice) const;
  /// The production jobs on several GPUs (gangs) that the chosen GPUs
  /// hold one rank of each, by GPU in flat order.
  std::vector<BesideGang> beside_gangs(const std::vector<std::uint32_t>& chosen) const;
};

}  // namespace gpushare::place
