// The index of opportunistic candidates: GPUs ordered by load, searchable
// by free memory.
//
// An opportunistic job goes to the least loaded GPU (gpu_order spread) or
// the most loaded one (binpack) among those below the utilisation
// threshold that have enough free memory. "Ordered by load" and "enough
// memory" are two different dimensions, and a plain ordered set would have
// to step over every GPU that ranks well but is full: with many jobs
// placed, that is most of them, and the cost per job would grow with the
// jobs already placed.
//
// So each order is a red-black tree (libstdc++'s policy-based tree) whose
// nodes also carry the largest free memory in their subtree. The first GPU
// in order with at least N bytes free is then found in O(log G) by walking
// down: go left if the left subtree has such a GPU, else take this node if
// it fits, else go right. A GPU whose load or free memory changes is erased
// and reinserted, also O(log G).
//
// Most jobs use the policy's gpu_order, so the tree of the other order is
// built only when a job first asks for it (from the keys kept per GPU), and
// kept up to date from then on: until then each change costs one tree, not
// two. A search that takes the first GPU it finds (every one-GPU job) does
// not take it out of the tree; only the GPUs it passes over are taken out
// and put back.
#pragma once

#include <cstdint>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <optional>
#include <vector>

#include "place/cluster/cluster.h"

namespace gpushare::place {

/// A GPU's load, in the order of the placement rules: utilisation, then
/// jobs on it, then memory used, then opportunistic jobs on it; the flat
/// GPU id (nodes by name, then GPU index) breaks the remaining ties.
struct LoadKey {
  double util = 0.0;
  std::uint32_t jobs = 0;
  std::uint64_t mem_used = 0;
  std::uint32_t ot_jobs = 0;
  std::uint32_t gpu = 0;
  std::uint64_t free_bytes = 0;  ///< not part of the order; searched on
};

/// spread: least loaded first.
struct SpreadFirst {
  bool operator()(const LoadKey& a, const LoadKey& b) const {
    if (a.util != b.util) return a.util < b.util;
    if (a.jobs != b.jobs) return a.jobs < b.jobs;
    if (a.mem_used != b.mem_used) return a.mem_used < b.mem_used;
    if (a.ot_jobs != b.ot_jobs) return a.ot_jobs < b.ot_jobs;
    return a.gpu < b.gpu;
  }
};

/// binpack: most loaded first; fewer opportunistic jobs and then the lower
/// id still win the remaining ties.
struct BinpackFirst {
  bool operator()(const LoadKey& a, const LoadKey& b) const {
    if (a.util != b.util) return a.util > b.util;
    if (a.jobs != b.jobs) return a.jobs > b.jobs;
    if (a.mem_used != b.mem_used) return a.mem_used > b.mem_used;
    if (a.ot_jobs != b.ot_jobs) return a.ot_jobs < b.ot_jobs;
    return a.gpu < b.gpu;
  }
};

/// Whether `a` comes before `b` in `order`.
inline bool load_before(Order order, const LoadKey& a, const LoadKey& b) {
  return order == Order::kSpread ? SpreadFirst{}(a, b) : BinpackFirst{}(a, b);
}

/// The tree's node update: keeps each subtree's largest free memory and
/// answers "first in order with at least `need` free".
template <class NodeConstIt, class NodeIt, class Less, class Alloc>
struct MaxFreeUpdate {
  using metadata_type = std::uint64_t;

  void operator()(NodeIt it, NodeConstIt end) {
    std::uint64_t most = (*it)->free_bytes;
    NodeIt left = it.get_l_child();
    NodeIt right = it.get_r_child();
    if (left != end && left.get_metadata() > most) most = left.get_metadata();
    if (right != end && right.get_metadata() > most) most = right.get_metadata();
    const_cast<metadata_type&>(it.get_metadata()) = most;
  }

  const LoadKey* first_fit(std::uint64_t need) const {
    NodeConstIt it = node_begin();
    NodeConstIt end = node_end();
    while (it != end) {
      NodeConstIt left = it.get_l_child();
      if (left != end && left.get_metadata() >= need) {
        it = left;
        continue;
      }
      if ((*it)->free_bytes >= need) return &**it;
      NodeConstIt right = it.get_r_child();
      if (right == end || right.get_metadata() < need) return nullptr;
      it = right;
    }
    return nullptr;
  }

  virtual NodeConstIt node_begin() const = 0;
  virtual NodeConstIt node_end() const = 0;
  virtual ~MaxFreeUpdate() = default;
};

template <class Less>
using LoadTree =
    __gnu_pbds::tree<LoadKey, __gnu_pbds::null_type, Less, __gnu_pbds::rb_tree_tag, MaxFreeUpdate>;

/// The candidates, in both orders at once (jobs may override the policy's).
class LoadIndex {
 public:
  explicit LoadIndex(std::size_t gpus = 0) : current_(gpus) {}

  /// Inserts the GPU, or replaces its key.
  void set(const LoadKey& key) {
    remove(key.gpu);
    if (built_[0]) spread_.insert(key);
    if (built_[1]) binpack_.insert(key);
    current_[key.gpu] = key;
  }

  /// Takes the GPU out (it no longer takes opportunistic jobs).
  void remove(std::uint32_t gpu) {
    if (!current_[gpu]) return;
    if (built_[0]) spread_.erase(*current_[gpu]);
    if (built_[1]) binpack_.erase(*current_[gpu]);
    current_[gpu].reset();
  }

  bool contains(std::uint32_t gpu) const { return current_[gpu].has_value(); }

  /// Calls visit(gpu) for each GPU with at least `need` bytes free, in
  /// `order`, until it returns true. Each step costs O(log G): found GPUs
  /// are taken out of the tree to find the next, and put back at the end.
  template <class Visit>
  void visit_fits(Order order, std::uint64_t need, Visit&& visit) {
    if (order == Order::kSpread) {
      if (!built_[0]) build(spread_, 0);
      visit_in(spread_, need, visit);
    } else {
      if (!built_[1]) build(binpack_, 1);
      visit_in(binpack_, need, visit);
    }
  }

 private:
  template <class Tree>
  void build(Tree& tree, int which) {
    for (const std::optional<LoadKey>& key : current_) {
      if (key) tree.insert(*key);
    }
    built_[which] = true;
  }

  template <class Tree, class Visit>
  static void visit_in(Tree& tree, std::uint64_t need, Visit& visit) {
    std::vector<LoadKey> passed;
    while (const LoadKey* key = tree.first_fit(need)) {
      LoadKey found = *key;
      if (visit(found.gpu)) break;  // the last one stays in the tree
      passed.push_back(found);
      tree.erase(found);
    }
    for (const LoadKey& key : passed) tree.insert(key);
  }

  LoadTree<SpreadFirst> spread_;
  LoadTree<BinpackFirst> binpack_;
  bool built_[2] = {false, false};  ///< spread_, binpack_
  std::vector<std::optional<LoadKey>> current_;
};

}  // namespace gpushare::place
