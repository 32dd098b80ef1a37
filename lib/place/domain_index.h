// The index of production candidates: topology domains by free GPUs.
//
// A production job goes to the smallest topology domain that fits it: an
// NVLink group, else a NUMA node, else a node (then several nodes, which
// the placer builds from the node level). Each level is a set of domains;
// a domain's "free" count is its GPUs with no production job and no
// reservation. Two ordered sets per level answer "the domains with at
// least N free GPUs, best first" without scanning the cluster:
//
//   binpack: fewest free GPUs first (the tightest fit), then the node with
//            the fewest free GPUs, so large holes stay whole for large jobs;
//   spread:  most free GPUs first, then the node with the most.
//
// Remaining ties go to the node name, then the domain's number (its NVLink
// group or NUMA id; GPUs that name none come after those that do). Taking
// or freeing a GPU changes its node's free count, which is part of every
// key on that node, so all of that node's domains are re-keyed: O(D log D)
// for D domains on one node, independent of the cluster's size; the set
// nodes are moved, not reallocated.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "place/cluster/cluster.h"

namespace gpushare::place {

enum class Level { kNvlink = 0, kNuma = 1, kNode = 2 };
inline constexpr int kLevels = 3;

/// "NVLink group", "NUMA node", "node".
std::string_view to_string(Level level);

/// Domain numbers for GPUs that name no NVLink group or NUMA node: after
/// every real number, so named domains win ties.
inline constexpr std::uint32_t kUnnamedDomain = 0x80000000u;

struct Domain {
  std::uint32_t id = 0;             ///< position at its level
  std::uint32_t node = 0;           ///< node rank (position in name order)
  std::uint32_t key = 0;            ///< NVLink group, NUMA id, or 0 for a node
  std::vector<std::uint32_t> gpus;  ///< flat GPU ids, ascending
  std::uint32_t free = 0;
};

/// What the index needs to know of each GPU, in flat order.
struct DomainGpu {
  std::uint32_t node = 0;
  int index = 0;
  std::optional<int> nvlink_group;
  std::optional<int> numa;
  bool free = true;
};

class DomainIndex {
 public:
  DomainIndex() = default;
  DomainIndex(const std::vector<DomainGpu>& gpus, std::uint32_t nodes);

  const Domain& domain(Level level, std::uint32_t id) const {
    return domains_[static_cast<int>(level)][id];
  }
  std::uint32_t domain_of(Level level, std::uint32_t gpu) const {
    return gpu_domain_[static_cast<int>(level)][gpu];
  }
  std::uint32_t node_free(std::uint32_t node) const {
    return domains_[static_cast<int>(Level::kNode)][node].free;
  }

  /// Marks GPUs free or taken; each must currently be the opposite.
  void set_free(const std::vector<std::uint32_t>& gpus, bool free);

  /// Calls visit(domain) for each domain at `level` with at least
  /// `min_free` free GPUs, best first in `order`, until it returns true.
  template <class Visit>
  void visit(Level level, Order order, std::uint32_t min_free, Visit&& visit) const {
    int l = static_cast<int>(level);
    if (order == Order::kBinpack) {
      for (auto it = binpack_[l].lower_bound(Entry{min_free, 0, 0, 0, 0}); it != binpack_[l].end();
           ++it) {
        if (visit(domains_[l][it->id])) return;
      }
    } else {
      for (auto it = spread_[l].begin(); it != spread_[l].end() && it->free >= min_free; ++it) {
        if (visit(domains_[l][it->id])) return;
      }
    }
  }

 private:
  struct Entry {
    std::uint32_t free;
    std::uint32_t node_free;
    std::uint32_t node;
    std::uint32_t key;
    std::uint32_t id;
  };
  struct BinpackLess {
    bool operator()(const Entry& a, const Entry& b) const;
  };
  struct SpreadLess {
    bool operator()(const Entry& a, const Entry& b) const;
  };

  using BinpackSet = std::set<Entry, BinpackLess>;
  using SpreadSet = std::set<Entry, SpreadLess>;
  /// A domain's entries while its counts change (set_free).
  struct Taken {
    int level;
    std::uint32_t id;
    BinpackSet::node_type binpack;
    SpreadSet::node_type spread;
  };

  Entry entry(int level, std::uint32_t id) const;
  void link_node(std::uint32_t node);

  std::array<std::vector<Domain>, kLevels> domains_;
  std::array<std::vector<std::uint32_t>, kLevels> gpu_domain_;
  std::array<std::vector<std::vector<std::uint32_t>>, kLevels> node_domains_;
  std::array<BinpackSet, kLevels> binpack_;
  std::array<SpreadSet, kLevels> spread_;
  // Reused by set_free, so re-keying allocates nothing.
  std::vector<std::uint32_t> scratch_nodes_;
  std::vector<Taken> scratch_taken_;
};

}  // namespace gpushare::place
