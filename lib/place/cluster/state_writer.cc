#include "place/cluster/state_writer.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/version.h"

namespace gpushare::place {
namespace {

/// A TOML basic string.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", u);
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// The shortest text that reads back as the same double, always a TOML
/// float (with a point or an exponent).
std::string toml_float(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string out(buffer, ec == std::errc() ? end : buffer);
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

/// The largest unit that divides the duration exactly.
std::string duration_text(std::chrono::nanoseconds duration) {
  struct Unit {
    const char* name;
    std::int64_t ns;
  };
  static constexpr Unit kUnits[] = {{"h", 3600'000'000'000}, {"m", 60'000'000'000},
                                    {"s", 1'000'000'000},    {"ms", 1'000'000},
                                    {"us", 1'000},           {"ns", 1}};
  std::int64_t ns = duration.count();
  for (const Unit& unit : kUnits) {
    if (ns % unit.ns == 0) return std::to_string(ns / unit.ns) + unit.name;
  }
  return std::to_string(ns) + "ns";
}

}  // namespace

std::string cluster_to_toml(const Cluster& cluster) {
  std::string out = "# Cluster state written by gpushare-place " + std::string(version()) + ".\n";
  const Policy& p = cluster.policy;
  out += "\n[policy]\n";
  out += "util_threshold = " + toml_float(p.util_threshold) + "\n";
  out += "node_order = " + toml_string(to_string(p.node_order)) + "\n";
  out += "gpu_order = " + toml_string(to_string(p.gpu_order)) + "\n";
  out += std::string("multi_node = ") + (p.multi_node ? "true" : "false") + "\n";
  out += std::string("reserve = ") + (p.reserve ? "true" : "false") + "\n";
  if (!p.default_tenant.empty()) out += "default_tenant = " + toml_string(p.default_tenant) + "\n";
  if (p.queue_threshold) {
    out += "queue_threshold = " + toml_string(duration_text(*p.queue_threshold)) + "\n";
  }
  for (const Tenant& t : cluster.tenants) {
    out += "\n[[tenant]]\nname = " + toml_string(t.name) + "\n";
    out += "quota_gpus = " + std::to_string(t.quota_gpus) + "\n";
  }
  for (const Node& node : cluster.nodes) {
    out += "\n[[node]]\nname = " + toml_string(node.name) + "\n";
    for (const Gpu& gpu : node.gpus) {
      out += "\n[[node.gpu]]\nindex = " + std::to_string(gpu.index) + "\n";
      if (!gpu.model.empty()) out += "model = " + toml_string(gpu.model) + "\n";
      out += "mem_bytes = " + std::to_string(gpu.mem_bytes) + "\n";
      out += "util = " + toml_float(gpu.util) + "\n";
      out += "mem_used_bytes = " + std::to_string(gpu.mem_used_bytes) + "\n";
      if (gpu.nvlink_group) out += "nvlink_group = " + std::to_string(*gpu.nvlink_group) + "\n";
      if (gpu.numa) out += "numa = " + std::to_string(*gpu.numa) + "\n";
      if (gpu.reservation) {
        out += "reservation = { job = " + toml_string(gpu.reservation->job) +
               ", tenant = " + toml_string(gpu.reservation->tenant) + " }\n";
      }
      for (const ResidentJob& job : gpu.jobs) {
        out += "\n[[node.gpu.job]]\nid = " + toml_string(job.id) + "\n";
        out += "class = " + toml_string(to_string(job.job_class)) + "\n";
        out += "tenant = " + toml_string(job.tenant) + "\n";
        out += "mem_bytes = " + std::to_string(job.mem_bytes) + "\n";
      }
    }
  }
  return out;
}

Status write_state(const Cluster& cluster, const std::string& path) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(path + ": cannot write: " + std::strerror(errno));
    out << cluster_to_toml(cluster);
    out.flush();
    if (!out) {
      int saved = errno;
      std::remove(temporary.c_str());
      return make_error(path + ": cannot write: " + std::strerror(saved));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(temporary.c_str());
    return make_error(path + ": cannot write: " + std::strerror(saved));
  }
  return {};
}

}  // namespace gpushare::place
