#include "place/domain_index.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace gpushare::place {

std::string_view to_string(Level level) {
  switch (level) {
    case Level::kNvlink:
      return "NVLink group";
    case Level::kNuma:
      return "NUMA node";
    default:
      return "node";
  }
}

bool DomainIndex::BinpackLess::operator()(const Entry& a, const Entry& b) const {
  return std::tie(a.free, a.node_free, a.node, a.key, a.id) <
         std::tie(b.free, b.node_free, b.node, b.key, b.id);
}

bool DomainIndex::SpreadLess::operator()(const Entry& a, const Entry& b) const {
  // Larger counts first; name and number still ascending.
  return std::tie(b.free, b.node_free, a.node, a.key, a.id) <
         std::tie(a.free, a.node_free, b.node, b.key, b.id);
}

DomainIndex::DomainIndex(const std::vector<DomainGpu>& gpus, std::uint32_t nodes) {
  for (int l = 0; l < kLevels; ++l) {
    gpu_domain_[l].resize(gpus.size());
    node_domains_[l].resize(nodes);
  }
  // A node is a domain even with no GPU, so domain id == node rank there.
  for (std::uint32_t n = 0; n < nodes; ++n) {
    domains_[static_cast<int>(Level::kNode)].push_back(Domain{n, n, 0, {}, 0});
    node_domains_[static_cast<int>(Level::kNode)][n].push_back(n);
  }
  std::array<std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t>, 2> ids;
  for (std::uint32_t g = 0; g < gpus.size(); ++g) {
    const DomainGpu& gpu = gpus[g];
    std::array<std::uint32_t, kLevels> keys = {
        // An unnamed GPU is an NVLink domain of its own, so one-GPU jobs
        // still fit at the first level.
        gpu.nvlink_group ? static_cast<std::uint32_t>(*gpu.nvlink_group)
                         : kUnnamedDomain + static_cast<std::uint32_t>(gpu.index),
        gpu.numa ? static_cast<std::uint32_t>(*gpu.numa) : kUnnamedDomain, 0};
    for (int l = 0; l < kLevels; ++l) {
      std::uint32_t id;
      if (l == static_cast<int>(Level::kNode)) {
        id = gpu.node;
      } else {
        auto [it, inserted] =
            ids[l].try_emplace({gpu.node, keys[l]}, static_cast<std::uint32_t>(domains_[l].size()));
        id = it->second;
        if (inserted) {
          domains_[l].push_back(Domain{id, gpu.node, keys[l], {}, 0});
          node_domains_[l][gpu.node].push_back(id);
        }
      }
      gpu_domain_[l][g] = id;
      domains_[l][id].gpus.push_back(g);
      if (gpu.free) ++domains_[l][id].free;
    }
  }
  for (std::uint32_t n = 0; n < nodes; ++n) link_node(n);
}

DomainIndex::Entry DomainIndex::entry(int level, std::uint32_t id) const {
  const Domain& d = domains_[level][id];
  return Entry{d.free, node_free(d.node), d.node, d.key, id};
}

void DomainIndex::link_node(std::uint32_t node) {
  for (int l = 0; l < kLevels; ++l) {
    for (std::uint32_t id : node_domains_[l][node]) {
      if (domains_[l][id].free == 0) continue;
      Entry e = entry(l, id);
      binpack_[l].insert(e);
      spread_[l].insert(e);
    }
  }
}

void DomainIndex::set_free(const std::vector<std::uint32_t>& gpus, bool free) {
  // Keys hold the node's free count, so every domain of a touched node is
  // taken out of both sets before any count changes and put back after.
  // The set nodes are extracted and reinserted with their new keys rather
  // than erased and allocated again: a production placement re-keys some
  // twenty entries, and the allocations cost more than the searches.
  std::vector<std::uint32_t>& nodes = scratch_nodes_;
  std::vector<Taken>& taken = scratch_taken_;
  nodes.clear();
  taken.clear();
  for (std::uint32_t g : gpus) {
    std::uint32_t node = domains_[static_cast<int>(Level::kNode)][gpu_domain_[2][g]].node;
    if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) continue;
    nodes.push_back(node);
    for (int l = 0; l < kLevels; ++l) {
      for (std::uint32_t id : node_domains_[l][node]) {
        Entry e = entry(l, id);
        // A domain with no free GPU is in neither set: empty handles.
        taken.push_back(Taken{l, id, binpack_[l].extract(e), spread_[l].extract(e)});
      }
    }
  }
  for (std::uint32_t g : gpus) {
    for (int l = 0; l < kLevels; ++l) {
      Domain& d = domains_[l][gpu_domain_[l][g]];
      if (free) {
        ++d.free;
      } else {
        --d.free;
      }
    }
  }
  for (Taken& t : taken) {
    if (domains_[t.level][t.id].free == 0) continue;  // the handles free their nodes
    Entry e = entry(t.level, t.id);
    if (t.binpack.empty()) {
      binpack_[t.level].insert(e);
    } else {
      t.binpack.value() = e;
      binpack_[t.level].insert(std::move(t.binpack));
    }
    if (t.spread.empty()) {
      spread_[t.level].insert(e);
    } else {
      t.spread.value() = e;
      spread_[t.level].insert(std::move(t.spread));
    }
  }
  taken.clear();
}

}  // namespace gpushare::place
