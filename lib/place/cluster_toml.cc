// The cluster file's sections, read strictly through TomlReader: each
// section knows its keys, and cross-references are checked at the end.
#include "place/cluster_toml.h"

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
#include "place/toml_reader.h"

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
  JobClass job_class;
  std::string tenant;
  std::string node;
  int gpu;
};

class Loader : private TomlReader {
 public:
  Loader(std::string_view text, std::string_view source_name) : TomlReader(text, source_name) {}

  Result<Cluster> load() {
    Result<toml::table> root = parse();
    if (!root) return root.error();
    Cluster cluster;
    if (Status s = read_root(*root, &cluster); !s) return s.error();
    if (Status s = check_references(); !s) return s.error();
    return cluster;
  }

 private:
  // --- sections ----------------------------------------------------------------

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
    return walk(table, "[policy]",
                {{"util_threshold",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    auto value = get_fraction(key, node);
                    if (!value) return value.error();
                    policy->util_threshold = *value;
                    return {};
                  }},
                 {"node_order",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    auto value = get_order(key, node);
                    if (!value) return value.error();
                    policy->node_order = *value;
                    return {};
                  }},
                 {"gpu_order",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    auto value = get_order(key, node);
                    if (!value) return value.error();
                    policy->gpu_order = *value;
                    return {};
                  }},
                 {"multi_node",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    auto value = get_bool(key, node);
                    if (!value) return value.error();
                    policy->multi_node = *value;
                    return {};
                  }},
                 {"reserve",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    auto value = get_bool(key, node);
                    if (!value) return value.error();
                    policy->reserve = *value;
                    return {};
                  }},
                 {"default_tenant",
                  [&](const toml::key& key, const toml::node& node) -> Status {
                    auto value = get_string(key, node);
                    if (!value) return value.error();
                    policy->default_tenant = *value;
                    references_.push_back({*value, node.source(), "default_tenant"});
                    return {};
                  }},
                 {"queue_threshold", [&](const toml::key& key, const toml::node& node) -> Status {
                    auto text = get_string(key, node);
                    if (!text) return text.error();
                    auto value = parse_duration(*text);
                    if (!value) return error_at(node.source(), value.error().message);
                    policy->queue_threshold = *value;
                    return {};
                  }}});
  }

  Status read_tenant(const toml::table& table, Cluster* cluster) {
    Tenant tenant;
    bool has_name = false;
    bool has_quota = false;
    toml::source_region name_at;
    Status s = walk(table, "[[tenant]]",
                    {{"name",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_string(key, node);
                        if (!value) return value.error();
                        tenant.name = *value;
                        name_at = node.source();
                        has_name = true;
                        return {};
                      }},
                     {"quota_gpus", [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_integer(key, node, 0, kMaxInt);
                        if (!value) return value.error();
                        tenant.quota_gpus = *value;
                        has_quota = true;
                        return {};
                      }}});
    if (!s) return s;
    if (!has_name) return missing(table, "[[tenant]]", "name");
    if (!has_quota) return missing(table, "[[tenant]] '" + tenant.name + "'", "quota_gpus");
    if (!tenant_names_.insert(tenant.name).second) {
      return error_at(name_at, "tenant '" + tenant.name + "' is defined twice");
    }
    cluster->tenants.push_back(std::move(tenant));
    return {};
  }

  Status read_node(const toml::table& table, Cluster* cluster) {
    Node node_out;
    bool has_name = false;
    toml::source_region name_at;
    std::vector<const toml::table*> gpu_tables;
    Status s = walk(table, "[[node]]",
                    {{"name",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_string(key, node);
                        if (!value) return value.error();
                        node_out.name = *value;
                        name_at = node.source();
                        has_name = true;
                        return {};
                      }},
                     {"gpu", [&](const toml::key& key, const toml::node& node) -> Status {
                        auto tables = get_tables(key, node, "[[node.gpu]]");
                        if (!tables) return tables.error();
                        gpu_tables = std::move(*tables);
                        return {};
                      }}});
    if (!s) return s;
    if (!has_name) return missing(table, "[[node]]", "name");
    if (!node_names_.insert(node_out.name).second) {
      return error_at(name_at, "node '" + node_out.name + "' is defined twice");
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

  Result<Gpu> read_gpu(const toml::table& table, const std::string& node_name) {
    Gpu gpu;
    bool has_index = false;
    const toml::node* mem_node = nullptr;
    const toml::node* mem_bytes_node = nullptr;
    const toml::node* used_node = nullptr;
    const toml::table* reservation_table = nullptr;
    std::vector<const toml::table*> job_tables;
    Status s = walk(table, "[[node.gpu]]",
                    {{"index",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_integer(key, node, 0, kMaxInt);
                        if (!value) return value.error();
                        gpu.index = static_cast<int>(*value);
                        has_index = true;
                        return {};
                      }},
                     {"model",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_string(key, node, true);
                        if (!value) return value.error();
                        gpu.model = *value;
                        return {};
                      }},
                     {"mem",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_size(key, node);
                        if (!value) return value.error();
                        gpu.mem_bytes = *value;
                        mem_node = &node;
                        return {};
                      }},
                     {"mem_bytes",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_integer(key, node, 0, kMaxInt64);
                        if (!value) return value.error();
                        gpu.mem_bytes = static_cast<std::uint64_t>(*value);
                        mem_bytes_node = &node;
                        return {};
                      }},
                     {"util",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_fraction(key, node);
                        if (!value) return value.error();
                        gpu.util = *value;
                        return {};
                      }},
                     {"mem_used_bytes",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_integer(key, node, 0, kMaxInt64);
                        if (!value) return value.error();
                        gpu.mem_used_bytes = static_cast<std::uint64_t>(*value);
                        used_node = &node;
                        return {};
                      }},
                     {"nvlink_group",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_integer(key, node, 0, kMaxInt);
                        if (!value) return value.error();
                        gpu.nvlink_group = static_cast<int>(*value);
                        return {};
                      }},
                     {"numa",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_integer(key, node, 0, kMaxInt);
                        if (!value) return value.error();
                        gpu.numa = static_cast<int>(*value);
                        return {};
                      }},
                     {"reservation",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        if (!node.is_table()) return wrong_type(key, node, "a table");
                        reservation_table = node.as_table();
                        return {};
                      }},
                     {"job", [&](const toml::key& key, const toml::node& node) -> Status {
                        auto tables = get_tables(key, node, "[[node.gpu.job]]");
                        if (!tables) return tables.error();
                        job_tables = std::move(*tables);
                        return {};
                      }}});
    if (!s) return s.error();
    std::string where = "GPU of node '" + node_name + "'";
    if (!has_index) return missing(table, "[[node.gpu]] of node '" + node_name + "'", "index");
    where = "GPU " + std::to_string(gpu.index) + " of node '" + node_name + "'";
    if (mem_node != nullptr && mem_bytes_node != nullptr) {
      return error_at(mem_bytes_node->source(), where + " has both 'mem' and 'mem_bytes'");
    }
    if (mem_node == nullptr && mem_bytes_node == nullptr) {
      return missing(table, where, "mem' or 'mem_bytes");
    }
    const toml::node& capacity_node = mem_node ? *mem_node : *mem_bytes_node;
    if (gpu.mem_bytes == 0) return error_at(capacity_node.source(), where + " has no memory");

    std::uint64_t jobs_bytes = 0;
    for (const toml::table* job_table : job_tables) {
      Result<ResidentJob> job = read_job(*job_table, node_name, gpu);
      if (!job) return job.error();
      jobs_bytes += job->mem_bytes;
      gpu.jobs.push_back(std::move(*job));
    }
    if (used_node == nullptr) {
      // Without telemetry, the jobs' own figures are the best estimate.
      gpu.mem_used_bytes = jobs_bytes;
    } else if (gpu.mem_used_bytes > gpu.mem_bytes) {
      return error_at(used_node->source(),
                      where + ": mem_used_bytes " + std::to_string(gpu.mem_used_bytes) +
                          " exceeds its memory of " + std::to_string(gpu.mem_bytes) + " bytes");
    }
    if (reservation_table != nullptr) {
      Result<Reservation> reservation = read_reservation(*reservation_table, where);
      if (!reservation) return reservation.error();
      if (const ResidentJob* owner = production_job(gpu)) {
        return error_at(reservation_table->source(),
                        where + " is reserved for job '" + reservation->job +
                            "' but production job '" + owner->id + "' runs there");
      }
      reserved_for_.push_back({reservation->job, reservation_table->source(), where});
      gpu.reservation = std::move(*reservation);
    }
    return gpu;
  }

  Result<ResidentJob> read_job(const toml::table& table, const std::string& node_name,
                               const Gpu& gpu) {
    ResidentJob job;
    bool has_id = false, has_class = false, has_tenant = false;
    toml::source_region id_at, tenant_at;
    Status s = walk(table, "[[node.gpu.job]]",
                    {{"id",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_string(key, node);
                        if (!value) return value.error();
                        job.id = *value;
                        id_at = node.source();
                        has_id = true;
                        return {};
                      }},
                     {"class",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_class(key, node);
                        if (!value) return value.error();
                        job.job_class = *value;
                        has_class = true;
                        return {};
                      }},
                     {"tenant",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_string(key, node);
                        if (!value) return value.error();
                        job.tenant = *value;
                        tenant_at = node.source();
                        has_tenant = true;
                        return {};
                      }},
                     {"mem_bytes", [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_integer(key, node, 0, kMaxInt64);
                        if (!value) return value.error();
                        job.mem_bytes = static_cast<std::uint64_t>(*value);
                        return {};
                      }}});
    if (!s) return s.error();
    std::string where = "job on GPU " + std::to_string(gpu.index) + " of node '" + node_name + "'";
    if (!has_id) return missing(table, where, "id");
    where = "job '" + job.id + "'";
    if (!has_class) return missing(table, where, "class");
    if (!has_tenant) return missing(table, where, "tenant");
    references_.push_back({job.tenant, tenant_at, where});

    std::string here = "GPU " + std::to_string(gpu.index) + " of node '" + node_name + "'";
    for (const ResidentJob& other : gpu.jobs) {
      if (other.id == job.id) return error_at(id_at, where + " appears twice on " + here);
    }
    if (job.job_class == JobClass::kProduction) {
      if (const ResidentJob* owner = production_job(gpu)) {
        return error_at(id_at, here + " already runs production job '" + owner->id +
                                   "'; a GPU takes at most one");
      }
    }
    auto [it, first] = sightings_.try_emplace(
        job.id, JobSighting{job.job_class, job.tenant, node_name, gpu.index});
    if (!first && (it->second.job_class != job.job_class || it->second.tenant != job.tenant)) {
      return error_at(id_at, where + " differs from the job of the same id on GPU " +
                                 std::to_string(it->second.gpu) + " of node '" + it->second.node +
                                 "' (class or tenant)");
    }
    return job;
  }

  Result<Reservation> read_reservation(const toml::table& table, const std::string& where) {
    Reservation reservation;
    bool has_job = false, has_tenant = false;
    toml::source_region tenant_at;
    Status s = walk(table, "the reservation of " + where,
                    {{"job",
                      [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_string(key, node);
                        if (!value) return value.error();
                        reservation.job = *value;
                        has_job = true;
                        return {};
                      }},
                     {"tenant", [&](const toml::key& key, const toml::node& node) -> Status {
                        auto value = get_string(key, node);
                        if (!value) return value.error();
                        reservation.tenant = *value;
                        tenant_at = node.source();
                        has_tenant = true;
                        return {};
                      }}});
    if (!s) return s.error();
    if (!has_job) return missing(table, "the reservation of " + where, "job");
    if (!has_tenant) return missing(table, "the reservation of " + where, "tenant");
    references_.push_back({reservation.tenant, tenant_at, "the reservation of " + where});
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
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return make_error(path + ": cannot read: " + std::strerror(errno));
  return parse_cluster(content.str(), path);
}

}  // namespace gpushare::place
