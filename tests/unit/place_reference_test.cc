// The indexed placer against a naive reading of the same rules.
//
// The placer answers each job from two indexes (a load-ordered tree searched
// by free memory, and topology domains ordered by free GPUs) that it keeps
// up to date as it goes. Here a deliberately plain implementation of the
// rules in gpushare-place(1) (sort everything, take the first) decides each
// job from the placer's own state just before the placer does, on random
// clusters with many ties, and the two must agree on every job.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>
#include <tuple>

#include "place/placer.h"
#include "place/cluster/state_writer.h"

using namespace gpushare;
using namespace gpushare::place;

namespace {

constexpr std::uint32_t kUnnamed = 0x80000000u;

struct Flat {
  std::string node;
  const Gpu* gpu;
  std::uint32_t id;  // position in (node name, index) order
};

struct Expected {
  PlacementStatus status = PlacementStatus::kUnplaced;
  std::optional<Qos> job_class;
  std::vector<std::pair<std::string, int>> gpus;  // sorted
};

std::uint64_t ot_bytes(const Gpu& g) {
  std::uint64_t sum = 0;
  for (const auto& j : g.jobs) sum += j.job_class == kQosOpportunistic ? j.mem_bytes : 0;
  return sum;
}

std::uint32_t ot_count(const Gpu& g) {
  std::uint32_t n = 0;
  for (const auto& j : g.jobs) n += j.job_class == kQosOpportunistic;
  return n;
}

Expected reference(const Cluster& c, const Job& job) {
  std::vector<Flat> flat;
  for (const Node& n : c.nodes) {
    for (const Gpu& g : n.gpus) flat.push_back({n.name, &g, 0});
  }
  std::sort(flat.begin(), flat.end(), [](const Flat& a, const Flat& b) {
    return std::tie(a.node, a.gpu->index) < std::tie(b.node, b.gpu->index);
  });
  for (std::uint32_t i = 0; i < flat.size(); ++i) flat[i].id = i;

  const std::string tenant = job.tenant.empty() ? c.policy.default_tenant : job.tenant;
  auto reserved = [&](const Flat& f) {
    return f.gpu->reservation && f.gpu->reservation->job != job.id.text;
  };
  std::int64_t usage = 0, quota = 0;
  for (const Tenant& t : c.tenants) quota = t.name == tenant ? t.quota_gpus : quota;
  for (const Flat& f : flat) {
    const ResidentJob* p = production_job(*f.gpu);
    if (p && p->tenant == tenant) ++usage;
    if (reserved(f) && f.gpu->reservation->tenant == tenant) ++usage;
  }
  bool within = usage + job.gpus <= quota;
  Expected out;
  if (job.hint == ClassHint::kOpportunistic) {
    out.job_class = kQosOpportunistic;
  } else if (job.hint == ClassHint::kProduction) {
    out.job_class = kQosProduction;
    if (!within) return out;
  } else {
    bool queued = c.policy.queue_threshold && job.queued_s &&
                  *job.queued_s * 1e9 >= static_cast<double>(c.policy.queue_threshold->count());
    out.job_class = !queued && within ? kQosProduction : kQosOpportunistic;
  }

  const Order node_order = job.node_order.value_or(c.policy.node_order);
  const Order gpu_order = job.gpu_order.value_or(c.policy.gpu_order);
  auto load = [&](const Flat& f) {
    const Gpu& g = *f.gpu;
    return std::make_tuple(g.util, g.jobs.size(), g.mem_used_bytes, ot_count(g), f.id);
  };
  auto load_less = [&](const Flat* a, const Flat* b) {
    auto la = load(*a), lb = load(*b);
    if (gpu_order == Order::kSpread) return la < lb;
    auto [ua, ja, ma, oa, ia] = la;
    auto [ub, jb, mb, ob, ib] = lb;
    return std::make_tuple(-ua, -static_cast<double>(ja), -static_cast<double>(ma), oa, ia) <
           std::make_tuple(-ub, -static_cast<double>(jb), -static_cast<double>(mb), ob, ib);
  };
  auto finish = [&](PlacementStatus status, std::vector<const Flat*> chosen) {
    out.status = status;
    for (const Flat* f : chosen) out.gpus.emplace_back(f->node, f->gpu->index);
    std::sort(out.gpus.begin(), out.gpus.end());
    return out;
  };
  const std::size_t need = static_cast<std::size_t>(job.gpus);

  if (*out.job_class == kQosOpportunistic) {
    std::vector<const Flat*> candidates;
    for (const Flat& f : flat) {
      const Gpu& g = *f.gpu;
      std::uint64_t free = g.mem_bytes > g.mem_used_bytes ? g.mem_bytes - g.mem_used_bytes : 0;
      if (g.util < c.policy.util_threshold && free >= job.mem_bytes) candidates.push_back(&f);
    }
    std::sort(candidates.begin(), candidates.end(), load_less);
    if (c.policy.multi_node || need == 1) {
      if (candidates.size() < need) return out;
      candidates.resize(need);
      return finish(PlacementStatus::kPlaced, candidates);
    }
    std::map<std::string, std::vector<const Flat*>> per_node;
    for (const Flat* f : candidates) {
      auto& list = per_node[f->node];
      list.push_back(f);
      if (list.size() == need) return finish(PlacementStatus::kPlaced, list);
    }
    return out;
  }

  // Production.
  auto is_free = [&](const Flat& f) { return !production_job(*f.gpu) && !reserved(f); };
  auto qualifies = [&](const Flat& f) {
    const Gpu& g = *f.gpu;
    std::uint64_t ot = ot_bytes(g);
    std::uint64_t pinned = g.mem_used_bytes > ot ? g.mem_used_bytes - ot : 0;
    std::uint64_t room = g.mem_bytes > pinned ? g.mem_bytes - pinned : 0;
    return is_free(f) && room >= job.mem_bytes;
  };
  std::map<std::string, int> node_free;
  for (const Flat& f : flat) node_free[f.node] += is_free(f);

  struct Dom {
    std::string node;
    std::uint32_t key;
    std::vector<const Flat*> gpus;
    int free = 0;
  };
  for (int level = 0; level < 3; ++level) {
    std::map<std::pair<std::string, std::uint32_t>, Dom> doms;
    for (const Flat& f : flat) {
      const Gpu& g = *f.gpu;
      std::uint32_t key = level == 0   ? (g.nvlink_group ? *g.nvlink_group : kUnnamed + g.index)
                          : level == 1 ? (g.numa ? static_cast<std::uint32_t>(*g.numa) : kUnnamed)
                                       : 0;
      Dom& d = doms[{f.node, key}];
      d.node = f.node;
      d.key = key;
      d.gpus.push_back(&f);
      d.free += is_free(f);
    }
    std::vector<Dom*> order;
    for (auto& [k, d] : doms) {
      if (d.free >= static_cast<int>(need)) order.push_back(&d);
    }
    std::sort(order.begin(), order.end(), [&](const Dom* a, const Dom* b) {
      int sign = node_order == Order::kBinpack ? 1 : -1;
      return std::make_tuple(sign * a->free, sign * node_free[a->node], a->node, a->key) <
             std::make_tuple(sign * b->free, sign * node_free[b->node], b->node, b->key);
    });
    for (Dom* d : order) {
      std::vector<const Flat*> fit;
      for (const Flat* f : d->gpus) {
        if (qualifies(*f)) fit.push_back(f);
      }
      if (fit.size() < need) continue;
      std::sort(fit.begin(), fit.end(), load_less);
      fit.resize(need);
      return finish(PlacementStatus::kPlaced, fit);
    }
  }

  // Nodes, most free first (then name).
  std::vector<std::string> nodes;
  for (auto& [name, free] : node_free) {
    if (free > 0) nodes.push_back(name);
  }
  std::stable_sort(nodes.begin(), nodes.end(), [&](const std::string& a, const std::string& b) {
    return node_free[a] > node_free[b];
  });
  auto fitting = [&](const std::string& node) {
    std::vector<const Flat*> fit;
    for (const Flat& f : flat) {
      if (f.node == node && qualifies(f)) fit.push_back(&f);
    }
    std::sort(fit.begin(), fit.end(), load_less);
    return fit;
  };
  if (c.policy.multi_node) {
    std::vector<const Flat*> taken;
    std::vector<std::string> taken_nodes;
    std::size_t remaining = need;
    for (const std::string& node : nodes) {
      auto fit = fitting(node);
      if (fit.empty()) continue;
      if (fit.size() >= remaining) {
        std::string last = node;
        if (node_order == Order::kBinpack) {
          std::vector<std::string> tight;
          for (const std::string& n : nodes) {
            if (node_free[n] >= static_cast<int>(remaining) &&
                std::find(taken_nodes.begin(), taken_nodes.end(), n) == taken_nodes.end() &&
                fitting(n).size() >= remaining) {
              tight.push_back(n);
            }
          }
          std::stable_sort(
              tight.begin(), tight.end(), [&](const std::string& a, const std::string& b) {
                return std::make_tuple(node_free[a], a) < std::make_tuple(node_free[b], b);
              });
          last = tight.front();
        }
        auto rest = fitting(last);
        rest.resize(remaining);
        taken.insert(taken.end(), rest.begin(), rest.end());
        return finish(PlacementStatus::kPlaced, taken);
      }
      taken.insert(taken.end(), fit.begin(), fit.end());
      taken_nodes.push_back(node);
      remaining -= fit.size();
    }
    if (taken.empty()) return out;
    if (!c.policy.reserve) return out;
    return finish(PlacementStatus::kReserved, taken);
  }
  std::vector<const Flat*> best;
  for (const std::string& node : nodes) {
    auto fit = fitting(node);
    if (fit.size() > best.size()) best = fit;
  }
  if (best.empty() || !c.policy.reserve) return out;
  return finish(PlacementStatus::kReserved, best);
}

/// A random cluster with many ties: coarse utilisations and sizes, names
/// not in file order, indices shuffled, reservations and resident jobs.
Cluster random_cluster(std::mt19937& rng, std::vector<std::string>* reserved_ids) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  Cluster c;
  c.policy.util_threshold = pick(2) ? 0.8 : 0.5;
  c.policy.node_order = pick(2) ? Order::kBinpack : Order::kSpread;
  c.policy.gpu_order = pick(2) ? Order::kBinpack : Order::kSpread;
  c.policy.multi_node = pick(4) != 0;
  c.policy.reserve = pick(5) != 0;
  if (pick(3) == 0) c.policy.queue_threshold = std::chrono::seconds(60);
  for (int t = 0; t < 3; ++t) c.tenants.push_back({"t" + std::to_string(t), pick(12)});
  int node_count = 1 + pick(5);
  int job_serial = 0;
  for (int n = 0; n < node_count; ++n) {
    Node node;
    node.name = std::string(1, static_cast<char>('a' + pick(26))) + std::to_string(n);
    int gpus = 1 + pick(6);
    std::vector<int> indices(static_cast<std::size_t>(gpus));
    for (int i = 0; i < gpus; ++i) indices[static_cast<std::size_t>(i)] = i * (1 + pick(2));
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    std::shuffle(indices.begin(), indices.end(), rng);
    for (int index : indices) {
      Gpu g;
      g.index = index;
      g.mem_bytes = (8ull << 30) << pick(3);
      g.util = pick(10) / 10.0;
      if (pick(2)) g.nvlink_group = pick(2);
      if (pick(2)) g.numa = pick(2);
      std::uint64_t used = 0;
      if (pick(4) == 0) {
        g.jobs.push_back({"p" + std::to_string(job_serial++), kQosProduction,
                          "t" + std::to_string(pick(3)), (2ull << 30) * pick(3)});
        used += g.jobs.back().mem_bytes;
      } else if (pick(8) == 0) {
        std::string id = "r" + std::to_string(pick(3));
        g.reservation = Reservation{id, "t" + std::to_string(pick(3))};
        if (std::find(reserved_ids->begin(), reserved_ids->end(), id) == reserved_ids->end()) {
          reserved_ids->push_back(id);
        }
      }
      for (int k = pick(3); k > 0; --k) {
        g.jobs.push_back({"o" + std::to_string(job_serial++), kQosOpportunistic,
                          "t" + std::to_string(pick(3)), (1ull << 30) * pick(4)});
        used += g.jobs.back().mem_bytes;
      }
      g.mem_used_bytes =
          std::min<std::uint64_t>(g.mem_bytes, used + (pick(3) == 0 ? (1ull << 30) : 0));
      node.gpus.push_back(g);
    }
    c.nodes.push_back(node);
  }
  return c;
}

Job random_job(std::mt19937& rng, const Cluster& c, int serial,
               std::vector<std::string>* reserved_ids) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::uint64_t total = 0, largest_node = 0, largest_gpu = 0;
  for (const Node& n : c.nodes) {
    total += n.gpus.size();
    largest_node = std::max<std::uint64_t>(largest_node, n.gpus.size());
    for (const Gpu& g : n.gpus) largest_gpu = std::max(largest_gpu, g.mem_bytes);
  }
  Job job;
  job.id.text = "j" + std::to_string(serial);
  if (!reserved_ids->empty() && pick(4) == 0) {
    job.id.text = reserved_ids->back();  // comes back for its reservation
    reserved_ids->pop_back();
  }
  job.tenant = "t" + std::to_string(pick(3));
  std::uint64_t most = c.policy.multi_node ? total : largest_node;
  job.gpus = 1 + static_cast<std::int64_t>(rng() % std::min<std::uint64_t>(most, pick(3) ? 3 : 8));
  job.mem_bytes = std::min<std::uint64_t>(
      largest_gpu, (1ull << 30) * static_cast<unsigned>(pick(4) ? pick(9) : 0));
  job.hint = static_cast<ClassHint>(pick(3));
  job.util = pick(3) == 0 ? 0.2 : 0.0;
  if (pick(2)) job.queued_s = pick(120);
  if (pick(5) == 0) job.node_order = pick(2) ? Order::kBinpack : Order::kSpread;
  if (pick(5) == 0) job.gpu_order = pick(2) ? Order::kBinpack : Order::kSpread;
  return job;
}

}  // namespace

TEST_CASE("the indexed placer agrees with a naive reading of the rules", "[place][reference]") {
  std::mt19937 rng(20240611);
  int compared = 0, placed = 0, reserved = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> reserved_ids;
    Cluster cluster = random_cluster(rng, &reserved_ids);
    Placer placer(cluster);
    for (int j = 0; j < 40; ++j) {
      // Now and then a job finishes: the indexes must follow removals too.
      if (rng() % 4 == 0) {
        std::vector<std::string> ids;
        for (const Node& n : placer.cluster().nodes) {
          for (const Gpu& g : n.gpus) {
            for (const ResidentJob& r : g.jobs) ids.push_back(r.id);
          }
        }
        if (!ids.empty()) REQUIRE(placer.remove(ids[rng() % ids.size()]));
      }
      Job job = random_job(rng, placer.cluster(), j, &reserved_ids);
      Expected want = reference(placer.cluster(), job);
      std::string before = cluster_to_toml(placer.cluster());
      Placement got = placer.place(job, true);
      INFO("round " << round << ", job " << job.id.text << " (tenant " << job.tenant << ", "
                    << job.gpus << " GPUs, " << job.mem_bytes << " bytes, " << to_string(job.hint)
                    << "): " << got.reason << "\n"
                    << (got.explanation ? got.explanation->choice : "") << "\n"
                    << before);
      REQUIRE_FALSE(got.input_error);
      std::vector<std::pair<std::string, int>> got_gpus;
      for (const auto& n : got.nodes) {
        for (int g : n.gpus) got_gpus.emplace_back(n.node, g);
      }
      REQUIRE(got.status == want.status);
      REQUIRE(got.job_class == want.job_class);
      REQUIRE(got_gpus == want.gpus);
      ++compared;
      placed += got.status == PlacementStatus::kPlaced;
      reserved += got.status == PlacementStatus::kReserved;
    }
  }
  // The random cases must exercise every outcome, or the test proves little.
  CHECK(compared == 12000);
  CHECK(placed > 3000);
  CHECK(reserved > 100);
  CHECK(compared - placed - reserved > 1000);
}
