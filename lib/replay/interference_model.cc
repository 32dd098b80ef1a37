#include "replay/interference_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "replay/trace.h"

namespace gpushare::replay {
namespace {

double interference(const InterferenceModel& model, double others_util) {
  return std::max(0.0, 1.0 - model.beta * std::min(1.0, others_util));
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

double shared_rate(const InterferenceModel& model, Sharing sharing,
                   const std::vector<CoRunner>& jobs, std::size_t self) {
  if (jobs.size() <= 1) return 1.0;
  const double n = static_cast<double>(jobs.size());
  if (sharing == Sharing::kTimesliced) {
    return std::max(0.0, 1.0 - model.switch_s / model.quantum_s) / n;
  }
  double total = 0;
  for (const CoRunner& job : jobs) total += job.util;
  const double u = std::max(0.01, jobs[self].util);
  const double others = total - jobs[self].util;
  if (sharing == Sharing::kPacked) {
    return std::min(1.0, 1.0 / std::max(1.0, total)) * interference(model, others);
  }
  // Controlled: the production job (if any) keeps its target.
  if (jobs[self].production) return 1.0 - model.controlled_slowdown;
  double production = 0, demand = 0;
  for (const CoRunner& job : jobs) (job.production ? production : demand) += job.util;
  double left = std::max(0.0, 1.0 - production);
  double share = demand > left ? left * u / demand : u;
  return std::min(1.0, share / u) * interference(model, others);
}

Result<InterferenceModel> parse_interference(std::string_view text, std::string_view source) {
  InterferenceModel model;
  struct Key {
    std::string_view name;
    double* value;
    double low, high;
  };
  double timeslice_max = model.timeslice_max;
  const Key keys[] = {
      {"beta", &model.beta, 0, 1},
      {"controlled_slowdown", &model.controlled_slowdown, 0, 1},
      {"quantum_s", &model.quantum_s, 1e-3, 1e6},
      {"switch_s", &model.switch_s, 0, 1e6},
      {"timeslice_max", &timeslice_max, 1, 64},
      {"migrate_s", &model.migrate_s, 0, 1e6},
      {"ot_threshold", &model.ot_threshold, 0, 1},
  };
  long number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (std::size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    auto where = std::string(source) + ":" + std::to_string(number) + ": ";
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) return make_error(where + "expected key = value");
    std::string_view name = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    auto key = std::find_if(std::begin(keys), std::end(keys),
                            [&](const Key& k) { return k.name == name; });
    if (key == std::end(keys)) return make_error(where + "unknown key '" + std::string(name) + "'");
    double parsed = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (ec != std::errc() || ptr != value.data() + value.size() || !std::isfinite(parsed) ||
        parsed < key->low || parsed > key->high) {
      return make_error(where + "'" + std::string(name) + "' must be a number from " +
                        std::to_string(key->low) + " to " + std::to_string(key->high));
    }
    *key->value = parsed;
  }
  if (model.switch_s >= model.quantum_s) {
    return make_error(std::string(source) + ": switch_s must be shorter than quantum_s");
  }
  model.timeslice_max = static_cast<int>(timeslice_max);
  return model;
}

Result<InterferenceModel> load_interference(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text) return text.error();
  return parse_interference(*text, path);
}

}  // namespace gpushare::replay
