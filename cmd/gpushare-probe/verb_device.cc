// `gpushare-probe device`: one JSON record per GPU, or a table on a terminal.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "common/units.h"
#include "probe.h"

namespace probe_cmd {
namespace {

// One line per GPU for a person: what it is and what is in use.
std::string device_table(const std::vector<gpushare::probe::DeviceRecord>& records) {
  std::vector<std::vector<std::string>> rows = {
      {"INDEX", "NAME", "UUID", "MEM-TOTAL", "MEM-USED", "SMS", "CC", "SIMULATED"}};
  for (const auto& record : records) {
    nlohmann::ordered_json f = gpushare::probe::device_fields(record);
    auto text = [&](const char* key) {
      auto it = f.find(key);
      if (it == f.end() || it->is_null()) return std::string("-");
      return gpushare::diag::printable(it->is_string() ? it->get<std::string>() : it->dump());
    };
    auto size = [&](const char* key) {
      auto it = f.find(key);
      return it != f.end() && it->is_number_unsigned()
                 ? gpushare::format_size(it->get<std::uint64_t>())
                 : std::string("-");
    };
    rows.push_back({text("index"), text("name"), text("uuid"), size("mem_total_bytes"),
                    size("mem_used_bytes"), text("sms"), text("compute_capability"),
                    text("simulated") == "true" ? "yes" : "no"});
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

}  // namespace

int run_device(const ProbeOptions& options) {
  auto gpu = open_gpu(options.sim);
  if (!gpu) {
    gpushare::diag::error(gpu.error().message);
    return gpushare::exit_status::kFailure;
  }
  auto records = gpushare::probe::probe_devices(**gpu);
  if (!records) {
    gpushare::diag::error(records.error().message);
    return gpushare::exit_status::kFailure;
  }
  if (!json_lines(options.format)) {
    std::cout << device_table(*records) << std::flush;
    return gpushare::exit_status::kSuccess;
  }
  gpushare::JsonLinesWriter writer(std::cout);
  for (const auto& record : *records) {
    writer.write("device", 1, gpushare::probe::device_fields(record));
  }
  return gpushare::exit_status::kSuccess;
}

}  // namespace probe_cmd
