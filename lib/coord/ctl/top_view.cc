#include "coord/ctl/top_view.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/diag.h"
#include "coord/ctl/table.h"

namespace gpushare::ctl {
namespace {

using nlohmann::ordered_json;

// A count or size; 0 when absent, null or not a whole number at or above 0.
bool whole(const ordered_json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<std::int64_t>() >= 0);
}

std::uint64_t unsigned_field(const ordered_json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && whole(*it) ? it->get<std::uint64_t>() : 0;
}

std::string string_field(const ordered_json& record, const char* key, const char* none = "-") {
  auto it = record.find(key);
  if (it == record.end() || it->is_null()) return none;
  return diag::printable(it->is_string() ? it->get<std::string>() : it->dump());
}

struct Gpu {
  std::string uuid;
  std::uint64_t total_bytes = 0;
  std::uint64_t used_bytes = 0;
  std::uint64_t spilled_bytes = 0;
  bool free_known = false;
  std::uint64_t free_ns = 0;
  std::uint64_t window_ns = 0;
  std::vector<const ordered_json*> jobs;  // those whose first GPU this is
};

std::string short_gpu(const std::string& uuid) {
  std::string hex = uuid.rfind("GPU-", 0) == 0 ? uuid.substr(4) : uuid;
  return diag::printable(hex.substr(0, std::min<std::size_t>(hex.find('-'), 8)));
}

std::string gpu_line(const Gpu& gpu) {
  std::string line = "GPU " + short_gpu(gpu.uuid) + "  memory " + short_size(gpu.used_bytes);
  if (gpu.total_bytes > 0) line += " of " + short_size(gpu.total_bytes);
  if (gpu.spilled_bytes > 0) line += ", " + short_size(gpu.spilled_bytes) + " spilled to host";
  if (gpu.free_known && gpu.window_ns > 0) {
    double pct = 100.0 * static_cast<double>(gpu.free_ns) / static_cast<double>(gpu.window_ns);
    line += "  free GPU time " + std::to_string(std::lround(pct)) + "%";
  }
  return line;
}

}  // namespace

std::vector<std::string> top_lines(const std::vector<ordered_json>& records,
                                   const TopFrame& frame) {
  // GPUs in the order jobs first name them; jobs under their first.
  std::vector<Gpu> gpus;
  std::map<std::string, std::size_t> index;
  std::vector<const ordered_json*> no_gpu;
  std::uint64_t production = 0, opportunistic = 0, paused = 0, used = 0, spilled = 0;
  std::size_t jobs = 0;
  for (const ordered_json& r : records) {
    if (string_field(r, "kind") != "job") continue;
    ++jobs;
    std::string qos = string_field(r, "qos");
    ++(qos == "opportunistic" ? opportunistic : production);
    if (string_field(r, "state") == "paused") ++paused;
    auto devices = r.find("devices");
    if (devices != r.end() && devices->is_array()) {
      for (const ordered_json& d : *devices) {
        if (!d.is_object()) continue;
        std::string uuid = string_field(d, "uuid", "");
        if (uuid.empty()) continue;
        auto [it, added] = index.emplace(uuid, gpus.size());
        if (added) {
          gpus.emplace_back();
          gpus.back().uuid = uuid;
        }
        Gpu& gpu = gpus[it->second];
        gpu.total_bytes = std::max(gpu.total_bytes, unsigned_field(d, "mem_total_bytes"));
        gpu.used_bytes += unsigned_field(d, "mem_used_bytes");
        gpu.spilled_bytes += unsigned_field(d, "host_resident_bytes");
      }
    }
    used += unsigned_field(r, "mem_used_bytes");
    spilled += unsigned_field(r, "mem_host_resident_bytes");
    std::string first = string_field(r, "device", "");
    auto it = index.find(first);
    if (it == index.end()) {
      no_gpu.push_back(&r);
      continue;
    }
    Gpu& gpu = gpus[it->second];
    gpu.jobs.push_back(&r);
    auto free = r.find("free_gpu_ns_last_window");
    if (free != r.end() && whole(*free)) {
      gpu.free_known = true;
      gpu.free_ns = free->get<std::uint64_t>();
      gpu.window_ns = unsigned_field(r, "window_ns");
    }
  }

  std::vector<std::string> lines;
  lines.push_back("gpushare-ctl top  " + frame.clock + "  every " + frame.interval + "  " +
                  std::to_string(jobs) + (jobs == 1 ? " job" : " jobs") + " on " +
                  std::to_string(gpus.size()) + (gpus.size() == 1 ? " GPU" : " GPUs") +
                  "  q quits");
  if (jobs == 0) {
    lines.push_back("");
    lines.push_back("no jobs registered with the coordinator");
  }
  auto job_rows = [&](const std::vector<const ordered_json*>& members) {
    std::vector<std::vector<std::string>> rows = {
        {"ID", "NAME", "CLASS", "SPEED", "SOLO/FREE", "HOLD", "MEMORY", "SPILLED", "STATE"}};
    for (const ordered_json* r : members) {
      rows.push_back({string_field(*r, "id"), string_field(*r, "name"), class_word(*r),
                      speed_cell(*r), solo_or_free_cell(*r), string_field(*r, "hold"),
                      memory_cell(*r), short_size(unsigned_field(*r, "mem_host_resident_bytes")),
                      state_cell(*r)});
    }
    std::istringstream table(render_fitted(rows, frame.width > 2 ? frame.width - 2 : 0, 1));
    for (std::string line; std::getline(table, line);) lines.push_back("  " + line);
  };
  for (const Gpu& gpu : gpus) {
    lines.push_back("");
    lines.push_back(gpu_line(gpu));
    if (!gpu.jobs.empty()) job_rows(gpu.jobs);
  }
  if (!no_gpu.empty()) {
    lines.push_back("");
    lines.push_back("no GPU yet");
    job_rows(no_gpu);
  }
  lines.push_back("");
  lines.push_back("node: " + std::to_string(jobs) + (jobs == 1 ? " job" : " jobs") + " (" +
                  std::to_string(production) + " production, " + std::to_string(opportunistic) +
                  " opportunistic), " + std::to_string(paused) + " paused; " + short_size(used) +
                  " used, " + short_size(spilled) + " spilled to host");

  for (std::string& line : lines) line = fit(line, frame.width);
  if (frame.height > 0 && lines.size() > frame.height) {
    std::size_t kept = frame.height - 1;
    std::size_t left = lines.size() - kept;
    lines.resize(kept);
    lines.push_back(fit("... " + std::to_string(left) + " more lines: enlarge the terminal",
                        frame.width));
  }
  return lines;
}

}  // namespace gpushare::ctl
