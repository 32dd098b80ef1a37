// The cluster file's sections, read strictly through TomlReader: each
// section knows its keys, and cross-references are checked at the end.
#include "place/cluster/cluster_toml.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "common/units.h"
#include "place/cluster/toml_reader.h"

namespace gpushare::place {
namespace {

/// Where a tenant name was used, checked once all tenants are known.
struct TenantReference {
  std::string tenant;
  toml::source_region where;
  std::string what;  // "job 'x'", "reservation", "default_tenant"
};

/// A GPU reserved for a job, checked once all running jobs are known.
struct ReservedFor {
  std::string job;
  toml::source_region where;
  std::string what;  // "GPU 3 of node 'n1'"
};

/// First sighting of a resident job id, to check its other GPUs agree.
struct JobSighting {
  Qos job_class;
  std::string tenant;
  std::string node;
  int gpu;
};

class Loader : private TomlReader {
 public:
  Loader(std::string_view text, std::string_view source_name) : TomlReader(text, source_name) {}

  /// The file is parsed in parts, one per [[node]] (see split_before),
  /// each read and dropped before the next: time and memory then grow
  /// linearly with the nodes. The parts together mean what the whole
  /// file means: a top-level key in several parts must be an array of
  /// tables made by [[headers]] each time (TOML appends those), and
  /// anything else defined twice is an error, as it would be whole.
  Result<Cluster> load() {
    Cluster cluster;
    for (const Part& part : split_before("[[node]]")) {
      Result<toml::table> root = parse_part(part.text, part.first_line);
      if (!root) return root.error();
      if (Status s = check_top_level(*root); !s) return s.error();
      if (Status s = read_root(*root, &cluster); !s) return s.error();
    }
    if (Status s = check_references(); !s) return s.error();
    return cluster;
  }

 private:
  // --- sections ----------------------------------------------------------------

  /// A top-level key seen in an earlier part may come again only as
  /// more [[KEY]] tables.
  Status check_top_level(const toml::table& root) {
    for (auto&& [key, node] : root) {
      bool appendable = node.is_array_of_tables() && source_starts_with(node.source(), "[[");
      auto [it, first] = top_level_.try_emplace(std::string(key.str()), appendable);
      if (first) continue;
      if (!it->second || !appendable) {
        return error_at(key.source(), "'" + std::string(key.str()) + "' is defined twice");
      }
    }
    return {};
  }

  Status read_root(const toml::table& root, Cluster* cluster) {
    return walk(root, "the top level",
                {{"policy",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    if (!node.is_table()) return wrong_type(key, node, "a table ([policy])");
                    return read_policy(*node.as_table(), &cluster->policy);
                  }},
                 {"tenant",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    auto tables = get_tables(key, node, "[[tenant]]");
                    if (!tables) return tables.error();
                    for (const toml::table* table : *tables) {
                      if (Status s = read_tenant(*table, cluster); !s) return s;
                    }
                    return {};
                  }},
                 {"node", [&](const toml::key& key, const toml::node& node) -> Status {
                    auto tables = get_tables(key, node, "[[node]]");
                    if (!tables) return tables.error();
                    for (const toml::table* table : *tables) {
                      if (Status s = read_node(*table, cluster); !s) return s;
                    }
                    return {};
                  }}});
  }

  Status read_policy(const toml::table& table, Policy* policy) {
    const toml::node* default_tenant_at = nullptr;
    Status s =
        walk(table, "[policy]",
             {{"util_threshold", bind_fraction(&policy->util_threshold)},
              {"node_order", bind_order(&policy->node_order)},
              {"gpu_order", bind_order(&policy->gpu_order)},
              {"multi_node", bind_bool(&policy->multi_node)},
              {"reserve", bind_bool(&policy->reserve)},
              {"default_tenant", bind_string(&policy->default_tenant, &default_tenant_at)},
              {"queue_threshold", [&](const toml::key& key, const toml::node& node) -> Status {
                 auto text = get_string(key, node);
                 if (!text) return text.error();
                 auto value = parse_duration(*text);
                 if (!value) return error_at(node.source(), value.error().message);
                 policy->queue_threshold = *value;
                 return {};
               }}});
    if (!s) return s;
    if (default_tenant_at != nullptr) {
      references_.push_back(
          {policy->default_tenant, default_tenant_at->source(), "default_tenant"});
    }
    return {};
  }

  Status read_tenant(const toml::table& table, Cluster* cluster) {
    Tenant tenant;
    const toml::node* name_at = nullptr;
    const toml::node* quota_at = nullptr;
    Status s = walk(table, "[[tenant]]",
                    {{"name", bind_string(&tenant.name, &name_at)},
                     {"quota_gpus", bind_integer(&tenant.quota_gpus, 0, &quota_at)}});
    if (!s) return s;
    if (name_at == nullptr) return missing(table, "[[tenant]]", "name");
    if (quota_at == nullptr)
      return missing(table, "[[tenant]] '" + tenant.name + "'", "quota_gpus");
    if (!tenant_names_.insert(tenant.name).second) {
      return error_at(name_at->source(), "tenant '" + tenant.name + "' is defined twice");
    }
    cluster->tenants.push_back(std::move(tenant));
    return {};
  }

  Status read_node(const toml::table& table, Cluster* cluster) {
    Node node_out;
    const toml::node* name_at = nullptr;
    std::vector<const toml::table*> gpu_tables;
    Status s = walk(table, "[[node]]",
                    {{"name", bind_string(&node_out.name, &name_at)},
                     {"gpu", bind_tables(&gpu_tables, "[[node.gpu]]")}});
    if (!s) return s;
    if (name_at == nullptr) return missing(table, "[[node]]", "name");
    if (!node_names_.insert(node_out.name).second) {
      return error_at(name_at->source(), "node '" + node_out.name + "' is defined twice");
    }
    std::set<int> indices;
    for (const toml::table* gpu_table : gpu_tables) {
      Result<Gpu> gpu = read_gpu(*gpu_table, node_out.name);
      if (!gpu) return gpu.error();
      if (!indices.insert(gpu->index).second) {
        return error_at(gpu_table->source(), "node '" + node_out.name + "' has GPU index " +
                                                 std::to_string(gpu->index) + " twice");
      }
      node_out.gpus.push_back(std::move(*gpu));
    }
    cluster->nodes.push_back(std::move(node_out));
    return {};
  }

  /// A [[node.gpu]] table: its keys, then its capacity, resident jobs and
  /// reservation, each checked against the others.
  Result<Gpu> read_gpu(const toml::table& table, const std::string& node_name) {
    Gpu gpu;
    GpuKeys keys;
    Status s = walk(table, "[[node.gpu]]",
                    {{"index", bind_integer(&gpu.index, 0, &keys.index)},
                     {"model", bind_string(&gpu.model, nullptr, true)},
                     {"mem", bind_size(&gpu.mem_bytes, &keys.mem)},
                     {"mem_bytes", bind_bytes(&gpu.mem_bytes, &keys.mem_bytes)},
                     {"util", bind_fraction(&gpu.util)},
                     {"mem_used_bytes", bind_bytes(&gpu.mem_used_bytes, &keys.used)},
                     {"nvlink_group", bind_integer(&gpu.nvlink_group, 0)},
                     {"numa", bind_integer(&gpu.numa, 0)},
                     {"reservation", bind_table(&keys.reservation)},
                     {"job", bind_tables(&keys.jobs, "[[node.gpu.job]]")}});
    if (!s) return s.error();
    if (keys.index == nullptr) {
      return missing(table, "[[node.gpu]] of node '" + node_name + "'", "index");
    }
    const std::string where = "GPU " + std::to_string(gpu.index) + " of node '" + node_name + "'";
    if (Status capacity = check_capacity(table, gpu, keys, where); !capacity)
      return capacity.error();
    if (Status jobs = read_jobs(keys, node_name, where, &gpu); !jobs) return jobs.error();
    if (keys.reservation != nullptr) {
      if (Status r = read_gpu_reservation(*keys.reservation, where, &gpu); !r) return r.error();
    }
    return gpu;
  }

  /// Where a [[node.gpu]] table gave the keys that other keys are checked
  /// against; null when not given.
  struct GpuKeys {
    const toml::node* index = nullptr;
    const toml::node* mem = nullptr;
    const toml::node* mem_bytes = nullptr;
    const toml::node* used = nullptr;
    const toml::table* reservation = nullptr;
    std::vector<const toml::table*> jobs;
  };

  /// Exactly one of 'mem' and 'mem_bytes', and not zero.
  Status check_capacity(const toml::table& table, const Gpu& gpu, const GpuKeys& keys,
                        const std::string& where) const {
    if (keys.mem != nullptr && keys.mem_bytes != nullptr) {
      return error_at(keys.mem_bytes->source(), where + " has both 'mem' and 'mem_bytes'");
    }
    if (keys.mem == nullptr && keys.mem_bytes == nullptr) {
      return missing(table, where, "mem' or 'mem_bytes");
    }
    const toml::node& capacity = keys.mem ? *keys.mem : *keys.mem_bytes;
    if (gpu.mem_bytes == 0) return error_at(capacity.source(), where + " has no memory");
    return {};
  }

  /// The GPU's resident jobs, and its memory in use: as given, or else the
  /// sum of its jobs' memory.
  Status read_jobs(const GpuKeys& keys, const std::string& node_name, const std::string& where,
                   Gpu* gpu) {
    std::uint64_t jobs_bytes = 0;
    for (const toml::table* job_table : keys.jobs) {
      Result<ResidentJob> job = read_job(*job_table, node_name, *gpu);
      if (!job) return job.error();
      jobs_bytes = saturating_add(jobs_bytes, job->mem_bytes);
      gpu->jobs.push_back(std::move(*job));
    }
    if (keys.used == nullptr) {
      // Without telemetry, the jobs' own figures are the best estimate.
      gpu->mem_used_bytes = jobs_bytes;
    } else if (gpu->mem_used_bytes > gpu->mem_bytes) {
      return error_at(keys.used->source(),
                      where + ": mem_used_bytes " + std::to_string(gpu->mem_used_bytes) +
                          " exceeds its memory of " + std::to_string(gpu->mem_bytes) + " bytes");
    }
    return {};
  }

  Status read_gpu_reservation(const toml::table& table, const std::string& where, Gpu* gpu) {
    Result<Reservation> reservation = read_reservation(table, where);
    if (!reservation) return reservation.error();
    if (const ResidentJob* owner = production_job(*gpu)) {
      return error_at(table.source(), where + " is reserved for job '" + reservation->job +
                                          "' but production job '" + owner->id + "' runs there");
    }
    reserved_for_.push_back({reservation->job, table.source(), where});
    gpu->reservation = std::move(*reservation);
    return {};
  }

  Result<ResidentJob> read_job(const toml::table& table, const std::string& node_name,
                               const Gpu& gpu) {
    ResidentJob job;
    const toml::node* id_at = nullptr;
    const toml::node* class_at = nullptr;
    const toml::node* tenant_at = nullptr;
    Status s = walk(table, "[[node.gpu.job]]",
                    {{"id", bind_string(&job.id, &id_at)},
                     {"class", bind_class(&job.job_class, &class_at)},
                     {"tenant", bind_string(&job.tenant, &tenant_at)},
                     {"mem_bytes", bind_bytes(&job.mem_bytes)}});
    if (!s) return s.error();
    std::string where = "job on GPU " + std::to_string(gpu.index) + " of node '" + node_name + "'";
    if (id_at == nullptr) return missing(table, where, "id");
    where = "job '" + job.id + "'";
    if (class_at == nullptr) return missing(table, where, "class");
    if (tenant_at == nullptr) return missing(table, where, "tenant");
    references_.push_back({job.tenant, tenant_at->source(), where});

    std::string here = "GPU " + std::to_string(gpu.index) + " of node '" + node_name + "'";
    for (const ResidentJob& other : gpu.jobs) {
      if (other.id == job.id) return error_at(id_at->source(), where + " appears twice on " + here);
    }
    if (job.job_class == kQosProduction) {
      if (const ResidentJob* owner = production_job(gpu)) {
        return error_at(id_at->source(), here + " already runs production job '" + owner->id +
                                             "'; a GPU takes at most one");
      }
    }
    auto [it, first] = sightings_.try_emplace(
        job.id, JobSighting{job.job_class, job.tenant, node_name, gpu.index});
    if (!first && (it->second.job_class != job.job_class || it->second.tenant != job.tenant)) {
      return error_at(id_at->source(), where + " differs from the job of the same id on GPU " +
                                           std::to_string(it->second.gpu) + " of node '" +
                                           it->second.node + "' (class or tenant)");
    }
    return job;
  }

  Result<Reservation> read_reservation(const toml::table& table, const std::string& where) {
    Reservation reservation;
    const toml::node* job_at = nullptr;
    const toml::node* tenant_at = nullptr;
    const std::string what = "the reservation of " + where;
    Status s = walk(table, what,
                    {{"job", bind_string(&reservation.job, &job_at)},
                     {"tenant", bind_string(&reservation.tenant, &tenant_at)}});
    if (!s) return s.error();
    if (job_at == nullptr) return missing(table, what, "job");
    if (tenant_at == nullptr) return missing(table, what, "tenant");
    references_.push_back({reservation.tenant, tenant_at->source(), what});
    return reservation;
  }

  /// Checks that need the whole file: tenants named before they are
  /// defined, and a reserved job that is also running somewhere.
  Status check_references() const {
    for (const TenantReference& ref : references_) {
      if (tenant_names_.count(ref.tenant) == 0) {
        return error_at(ref.where, ref.what + " names tenant '" + ref.tenant +
                                       "', which no [[tenant]] defines");
      }
    }
    for (const ReservedFor& ref : reserved_for_) {
      if (sightings_.count(ref.job) != 0) {
        return error_at(ref.where,
                        ref.what + " is reserved for job '" + ref.job + "', which already runs");
      }
    }
    return {};
  }

  /// Top-level keys of the parts read so far: whether more [[KEY]] may follow.
  std::unordered_map<std::string, bool> top_level_;
  std::set<std::string> tenant_names_;
  std::set<std::string> node_names_;
  std::vector<TenantReference> references_;
  std::vector<ReservedFor> reserved_for_;
  std::unordered_map<std::string, JobSighting> sightings_;
};

}  // namespace

Result<Cluster> parse_cluster(std::string_view text, std::string_view source_name) {
  return Loader(text, source_name).load();
}

Result<Cluster> load_cluster(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot open: " + std::strerror(errno));
  // One copy of the text, read in blocks: a stringstream and its str()
  // would hold two for the whole parse.
  std::string content;
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    content.append(block, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return make_error(path + ": cannot read: " + std::strerror(errno));
  return parse_cluster(content, path);
}

}  // namespace gpushare::place
