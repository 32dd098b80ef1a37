#include "coord/ctl/table.h"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/units.h"

namespace gpushare::ctl {
namespace {

using nlohmann::ordered_json;
using Row = std::vector<std::string>;

std::string text(const ordered_json& record, const char* key, const char* null = "-") {
  auto it = record.find(key);
  if (it == record.end()) return "-";
  if (it->is_null()) return null;
  // Names and words come from other users' jobs: escaped for the terminal.
  if (it->is_string()) return diag::printable(it->get<std::string>());
  return it->dump();
}

std::string percent(const ordered_json& record, const char* key, const char* null = "-") {
  std::string value = text(record, key, null);
  return value == null || value == "-" ? value : value + "%";
}

std::string bytes(const ordered_json& record, const char* key, const char* none = "none") {
  auto it = record.find(key);
  if (it == record.end()) return "-";
  if (it->is_null()) return none;
  if (!it->is_number_unsigned()) return it->dump();
  return format_size(it->get<std::uint64_t>());
}

// "GPU-1a2b3c4d-..." is long; its first group identifies a device on a node.
std::string short_uuid(const std::string& uuid) {
  return uuid.size() > 12 ? uuid.substr(0, 12) : uuid;
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xc0) != 0x80;  // lead bytes
  return width;
}

std::string fit(std::string_view text, std::size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return {};
  std::string out;
  std::size_t columns = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    bool lead = (static_cast<unsigned char>(text[i]) & 0xc0) != 0x80;
    if (lead && ++columns > width - 1) break;
    out += text[i];
  }
  return out + "~";
}

std::string short_size(std::uint64_t bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  std::size_t index = 0;
  while (index + 1 < std::size(kNames) && value >= 1024) {
    value /= 1024;
    ++index;
  }
  char cell[32];
  // One decimal below 10 (1.5GiB), none above (12GiB); truncated, never
  // more than what is there.
  if (value < 10 && index > 0) {
    std::snprintf(cell, sizeof cell, "%.1f%s", static_cast<double>(static_cast<int>(value * 10)) / 10,
                  kNames[index]);
  } else {
    std::snprintf(cell, sizeof cell, "%.0f%s", static_cast<double>(static_cast<long long>(value)),
                  kNames[index]);
  }
  std::string out = cell;
  if (out.find(".0") != std::string::npos) out.erase(out.find(".0"), 2);
  return out;
}

std::string short_number(double value) {
  char cell[32];
  if (value >= 100 || value <= -100) {
    std::snprintf(cell, sizeof cell, "%.0f", value);
  } else if (value >= 10 || value <= -10) {
    std::snprintf(cell, sizeof cell, "%.1f", value);
  } else {
    std::snprintf(cell, sizeof cell, "%.2f", value);
  }
  return cell;
}

std::string render_fitted(const std::vector<std::vector<std::string>>& rows, std::size_t width,
                          std::size_t squeeze, std::size_t min_squeeze) {
  std::vector<std::size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  std::size_t total = 0;
  for (std::size_t w : widths) total += w + 2;
  total = total >= 2 ? total - 2 : 0;
  // The squeezed column gives up what the line has too much, down to its floor.
  if (total > width && squeeze < widths.size() && widths[squeeze] > min_squeeze) {
    std::size_t cut = std::min(total - width, widths[squeeze] - min_squeeze);
    widths[squeeze] -= cut;
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      std::string cell = fit(row[i], widths[i]);
      line += cell;
      if (i + 1 < row.size()) line += std::string(widths[i] - display_width(cell) + 2, ' ');
    }
    out += fit(line, width) + '\n';
  }
  return out;
}

namespace {

// Columns padded to their widest cell, two spaces apart; the last column
// is not padded, so lines carry no trailing spaces.
std::string render(const std::vector<Row>& rows) {
  std::vector<std::size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  }
  std::string out;
  for (const Row& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(widths[i] - display_width(row[i]) + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

// A speed with its unit: iterations per second where the loop sees the
// job's iterations, else kernel launches per second, said so.
std::string speed(const ordered_json& record, const char* key) {
  std::string value = text(record, key);
  if (value == "-" || value == "null") return "-";
  return value + (text(record, "speed_unit") == "iterations" ? " it/s" : " launches/s");
}

// How far below its solo estimate a job runs; a job at or above it has no
// slowdown (0%), never a negative one.
std::string slowdown(const ordered_json& record) {
  auto it = record.find("slowdown_pct");
  if (it == record.end() || !it->is_number()) return "-";
  double pct = it->get<double>();
  if (pct <= 0) return "0%";
  return ordered_json(pct).dump() + "%";
}

std::string with_unit(const ordered_json& record, const char* key, const char* unit) {
  std::string value = text(record, key, "none");
  return value == "none" || value == "-" ? value : value + unit;
}

// The state, why a job paused by the coordinator itself waits (an
// operator's pause alone reads "paused", as it always did), and for a job
// the coordinator sees over its limit, what it holds.
std::string state(const ordered_json& record) {
  std::string out = text(record, "state");
  auto reasons = record.find("pause_reasons");
  if (reasons != record.end() && reasons->is_array() && reasons->size() > 0 &&
      !(reasons->size() == 1 && reasons->front() == "operator")) {
    std::string why;
    for (const auto& reason : *reasons) {
      if (!reason.is_string()) continue;
      why += (why.empty() ? "" : ", ") + reason.get<std::string>();
    }
    out += " (" + why + ")";
  }
  auto it = record.find("violation");
  if (it != record.end() && it->is_object()) {
    out += " OVER-LIMIT(" + bytes(*it, "observed_bytes") + ")";
  }
  return out;
}

// The GPU time of the job's last window (one second), in seconds.
std::string gpu_last_window(const ordered_json& record) {
  auto it = record.find("gpu_ns_last_window");
  if (it == record.end() || !it->is_number()) return "-";
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.3f", it->get<double>() / 1e9);
  return cell;
}

// The job's (first) device; a job on several GPUs adds how many more its
// ranks use: "GPU-1a2b3c4d+3".
std::string devices_cell(const ordered_json& record) {
  std::string cell = short_uuid(text(record, "device"));
  auto ranks = record.find("ranks");
  if (ranks == record.end() || !ranks->is_array()) return cell;
  std::vector<std::string> gpus;
  for (const ordered_json& rank : *ranks) {
    auto list = rank.find("gpus");
    if (list == rank.end() || !list->is_array()) continue;
    for (const ordered_json& gpu : *list) {
      if (gpu.is_string() && std::find(gpus.begin(), gpus.end(), gpu.get<std::string>()) == gpus.end()) {
        gpus.push_back(gpu.get<std::string>());
      }
    }
  }
  if (gpus.size() >= 2) cell += "+" + std::to_string(gpus.size() - 1);
  return cell;
}

// The rank the job's other ranks wait for at their collectives (a job on
// several GPUs, docs/compute-sharing.md): its pid, "-" while unknown.
std::string waited_for(const ordered_json& record) {
  auto it = record.find("waited_for_pid");
  if (it == record.end() || !it->is_number_integer()) return "-";
  return it->dump();
}

}  // namespace

std::string job_table(const std::vector<ordered_json>& records) {
  // Units in the cells where they vary by job (speeds), else in the
  // header's words; gpushare-ctl(1) says how each is measured.
  std::vector<Row> rows = {{"ID", "NAME", "PID", "UID", "QOS", "DEVICE", "MEM-USED", "MEM-LIMIT",
                            "LAUNCHES", "SPEED", "SOLO-SPEED", "SLOWDOWN", "LAUNCH-BUDGET",
                            "MAX-QUEUED", "GPU-TIME", "GPU-TIME-LIMIT", "GPU-TIME-CAP", "GPU-LAST-S",
                            "WAITED-FOR", "HOLD", "STATE"}};
  for (const ordered_json& r : records) {
    if (text(r, "kind") != "job") continue;
    rows.push_back(
        {text(r, "id"), text(r, "name"), text(r, "pid"), text(r, "uid"), text(r, "qos"),
         devices_cell(r), bytes(r, "mem_used_bytes"), bytes(r, "mem_limit_bytes"),
         text(r, "launches"), speed(r, "speed_per_s"), speed(r, "solo_speed_per_s"), slowdown(r),
         with_unit(r, "launch_budget_per_s", " launches/s"), with_unit(r, "max_queued", " kernels"),
         percent(r, "gpu_share_pct"), percent(r, "gpu_share_limit_pct", "none"),
         percent(r, "compute_cap_pct", "none"), gpu_last_window(r), waited_for(r),
         text(r, "hold"), state(r)});
  }
  return render(rows);
}

std::string node_table(const std::vector<ordered_json>& records) {
  std::vector<Row> rows = {{"DEVICE", "MEM-TOTAL", "MEM-USED", "MEM-FREE", "PROD-JOBS", "PROD-USED",
                            "OPP-JOBS", "OPP-USED"}};
  auto class_cells = [](const ordered_json& r, const char* name) -> Row {
    auto it = r.find(name);
    if (it == r.end() || !it->is_object()) return {"-", "-"};
    return {text(*it, "jobs"), bytes(*it, "mem_used_bytes")};
  };
  for (const ordered_json& r : records) {
    std::string kind = text(r, "kind");
    if (kind != "device" && kind != "node") continue;
    Row row = {kind == "node" ? "TOTAL" : short_uuid(text(r, "uuid")), bytes(r, "mem_total_bytes"),
               bytes(r, "mem_used_bytes"), bytes(r, "mem_free_bytes")};
    for (const char* name : {"production", "opportunistic"}) {
      Row cells = class_cells(r, name);
      row.insert(row.end(), cells.begin(), cells.end());
    }
    rows.push_back(std::move(row));
  }
  return render(rows);
}

namespace {

// The first group of a UUID's hex, enough to tell a node's GPUs apart.
std::string gpu_cell(const ordered_json& record) {
  std::string uuid = text(record, "device");
  if (uuid == "-" || uuid == "null") return "-";
  std::string hex = uuid.rfind("GPU-", 0) == 0 ? uuid.substr(4) : uuid;
  return hex.substr(0, std::min<std::size_t>(hex.find('-'), 8));
}

std::string number_cell(const ordered_json& record, const char* key, std::string unit) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_number()) return "-";
  return short_number(it->get<double>()) + unit;
}

}  // namespace

std::string class_word(const ordered_json& record) {
  std::string qos = text(record, "qos");
  return qos == "production" ? "prod" : qos == "opportunistic" ? "opp" : qos;
}

std::string memory_cell(const ordered_json& record) {
  auto used = record.find("mem_used_bytes");
  auto limit = record.find("mem_limit_bytes");
  std::string out = used != record.end() && used->is_number_unsigned()
                        ? short_size(used->get<std::uint64_t>())
                        : "-";
  if (limit != record.end() && limit->is_number_unsigned()) {
    return out + "/" + short_size(limit->get<std::uint64_t>());
  }
  return out + "/-";
}

std::string speed_cell(const ordered_json& record) {
  return number_cell(record, "speed_per_s",
                     text(record, "speed_unit") == "iterations" ? " it/s" : " launch/s");
}

std::string solo_or_free_cell(const ordered_json& record) {
  if (text(record, "qos") == "opportunistic") {
    auto share = record.find("free_share_ppm");
    if (share != record.end() && share->is_number()) {
      return std::to_string(static_cast<long long>(std::lround(share->get<double>() / 1e4))) +
             "% free";
    }
    // No share where production (and processes outside gpushare) left
    // less than 1/50 of the window (free_share.h): nothing to harvest.
    auto free = record.find("free_gpu_ns_last_window");
    auto window = record.find("window_ns");
    if (free != record.end() && free->is_number() && window != record.end() &&
        window->is_number() && free->get<double>() * 50 < window->get<double>()) {
      return "none free";
    }
    return "-";
  }
  auto speed = record.find("speed_per_s");
  auto solo = record.find("solo_speed_per_s");
  if (speed == record.end() || solo == record.end() || !speed->is_number() ||
      !solo->is_number() || solo->get<double>() <= 0) {
    return "-";
  }
  double ratio = speed->get<double>() / solo->get<double>();
  return std::to_string(static_cast<long long>(std::lround(ratio * 100))) + "% solo";
}

std::string state_cell(const ordered_json& record) {
  std::string rank = waited_for(record);
  if (rank != "-") return state(record) + " (waits for pid " + rank + ")";
  // An opportunistic job beside a gang's waiting rank, using its wait.
  auto uses = record.find("uses_wait_of_pid");
  if (uses != record.end() && uses->is_number_integer()) {
    return state(record) + " (uses pid " + uses->dump() + "'s wait)";
  }
  return state(record);
}

std::string job_table_short(const std::vector<ordered_json>& records, std::size_t width) {
  std::vector<Row> rows = {
      {"ID", "NAME", "CLASS", "GPU", "MEMORY", "SPEED", "SOLO/FREE", "HOLD", "STATE"}};
  for (const ordered_json& r : records) {
    if (text(r, "kind") != "job") continue;
    rows.push_back({text(r, "id"), text(r, "name"), class_word(r), gpu_cell(r), memory_cell(r),
                    speed_cell(r), solo_or_free_cell(r), text(r, "hold"), state_cell(r)});
  }
  return render_fitted(rows, width, 1);
}

}  // namespace gpushare::ctl
