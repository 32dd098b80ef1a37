#include "place/cluster/cluster_slurm.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/units.h"

namespace gpushare::place {
namespace {

using nlohmann::json;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::optional<long> to_number(std::string_view text) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

/// Splits at commas outside parentheses and brackets.
std::vector<std::string> split_top(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '(' || c == '[') depth++;
    if (c == ')' || c == ']') depth--;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

/// "0-1,3" -> {0, 1, 3}.
std::optional<std::vector<int>> expand_ranges(std::string_view text) {
  std::vector<int> out;
  for (const std::string& part : split_top(text)) {
    auto dash = part.find('-');
    auto first = to_number(std::string_view(part).substr(0, dash));
    auto last =
        dash == std::string::npos ? first : to_number(std::string_view(part).substr(dash + 1));
    if (!first || !last || *last < *first || *last - *first > 100000) return std::nullopt;
    for (long i = *first; i <= *last; i++) out.push_back(static_cast<int>(i));
  }
  return out;
}

/// The number of GPUs in a node's gres ("gpu:a100:4(S:0-1),shard:32").
std::optional<long> gpu_count(std::string_view gres) {
  long total = 0;
  for (std::string entry : split_top(gres)) {
    entry = entry.substr(0, entry.find('('));
    if (entry.rfind("gpu:", 0) != 0 && entry != "gpu") continue;
    auto colon = entry.rfind(':');
    auto count = to_number(std::string_view(entry).substr(colon + 1));
    if (!count) return std::nullopt;
    total += *count;
  }
  return total;
}

bool unschedulable(const json& node) {
  static const std::set<std::string> states = {"down", "drained", "drain",  "draining",
                                               "fail", "failing", "future", "unknown"};
  static const std::set<std::string> flags = {
      "drain", "drained", "draining", "fail", "maintenance", "not_responding", "powered_down"};
  std::string state = lower(node.value("state", std::string()));
  // "state" may carry flags after '+' (e.g. "idle+drain").
  std::string_view rest = state;
  while (!rest.empty()) {
    auto plus = rest.find('+');
    std::string part(rest.substr(0, plus));
    if (states.count(part) || flags.count(part)) return true;
    rest = plus == std::string_view::npos ? std::string_view() : rest.substr(plus + 1);
  }
  if (auto it = node.find("state_flags"); it != node.end() && it->is_array()) {
    for (const json& flag : *it) {
      if (flag.is_string() && flags.count(lower(flag.get<std::string>()))) return true;
    }
  }
  return false;
}

Result<json> parse(std::string_view text, const char* what, const char* list) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return make_error(std::string(what) + ": not a JSON object");
  }
  auto it = doc.find(list);
  if (it == doc.end() || !it->is_array()) {
    return make_error(std::string(what) + ": no \"" + list + "\" array (Slurm 22.05 or later?)");
  }
  return doc;
}

struct Request {
  std::optional<Qos> job_class;
  std::uint64_t mem_bytes = 0;
};

/// "gpushare:CLASS[,mem=SIZE][,...]", as the hooks read it; anything else
/// (or an ill-formed one, which runs unshared) says nothing.
Request comment_request(const std::string& comment) {
  Request request;
  if (comment.rfind("gpushare:", 0) != 0) return request;
  auto parts = split_top(std::string_view(comment).substr(9));
  if (parts.empty()) return request;
  auto job_class = parse_job_class(parts[0]);
  if (!job_class) return request;
  for (std::size_t i = 1; i < parts.size(); i++) {
    if (parts[i].rfind("mem=", 0) == 0) {
      auto bytes = parse_size(std::string_view(parts[i]).substr(4));
      if (!bytes) return Request{};  // a percentage or garbage: leave it to the node
      request.mem_bytes = *bytes;
    }
  }
  request.job_class = job_class;
  return request;
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view text) {
  std::vector<std::string> names;
  for (const std::string& item : split_top(text)) {
    auto open = item.find('[');
    if (open == std::string::npos) {
      if (!item.empty()) names.push_back(item);
      continue;
    }
    auto close = item.find(']', open);
    if (close == std::string::npos || item.find('[', close) != std::string::npos) {
      return make_error("hostlist '" + std::string(text) + "': cannot read '" + item + "'");
    }
    std::string prefix = item.substr(0, open), suffix = item.substr(close + 1);
    for (const std::string& range : split_top(item.substr(open + 1, close - open - 1))) {
      auto dash = range.find('-');
      std::string first = range.substr(0, dash);
      std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
      auto a = to_number(first), b = to_number(last);
      if (!a || !b || *b < *a || *b - *a > 100000) {
        return make_error("hostlist '" + std::string(text) + "': bad range '" + range + "'");
      }
      for (long i = *a; i <= *b; i++) {
        std::string number = std::to_string(i);
        if (number.size() < first.size()) number.insert(0, first.size() - number.size(), '0');
        names.push_back(prefix + number + suffix);
      }
    }
  }
  return names;
}

namespace {

using Notes = std::vector<std::string>;
/// Resident jobs by Slurm job id: a job holds an entry per GPU it is on.
using PlacedJobs = std::map<std::string, std::vector<ResidentJob*>>;

/// Keeps the cluster's nodes that Slurm reports and schedules on, emptied
/// of jobs; notes the others, and Slurm's GPU nodes the file lacks.
Status keep_slurm_nodes(Cluster* cluster, const json& sinfo, Notes* notes) {
  std::map<std::string, const json*> reported;
  for (const json& node : sinfo["nodes"]) {
    if (!node.is_object() || !node.contains("name") || !node["name"].is_string()) {
      return make_error("sinfo --json: a node without a name");
    }
    reported.emplace(node["name"].get<std::string>(), &node);  // once per partition: first wins
  }
  std::vector<Node> kept;
  for (Node& node : cluster->nodes) {
    auto it = reported.find(node.name);
    if (it == reported.end()) {
      notes->push_back("node " + node.name + ": not in Slurm: no job goes there");
      continue;
    }
    const json& info = *it->second;
    if (unschedulable(info)) {
      notes->push_back("node " + node.name + ": Slurm state " + info.value("state", "?") +
                       ": no job goes there");
      continue;
    }
    auto gpus = gpu_count(info.value("gres", std::string()));
    if (!gpus) {
      return make_error("sinfo --json: node " + node.name + ": cannot read gres '" +
                        info.value("gres", std::string()) + "'");
    }
    if (*gpus != static_cast<long>(node.gpus.size())) {
      return make_error("node " + node.name + ": Slurm has " + std::to_string(*gpus) +
                        " GPUs (gres), the cluster file " + std::to_string(node.gpus.size()));
    }
    for (Gpu& gpu : node.gpus) {
      gpu.jobs.clear();
      gpu.reservation.reset();
    }
    kept.push_back(std::move(node));
  }
  cluster->nodes = std::move(kept);
  for (const auto& entry : reported) {
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    const std::string& name = entry.first;
    const auto& info = entry.second;
    if (std::none_of(cluster->nodes.begin(), cluster->nodes.end(),
                     [&](const Node& n) { return n.name == name; }) &&
        !unschedulable(*info) && gpu_count(info->value("gres", std::string())).value_or(0) > 0) {
      notes->push_back("node " + name + ": in Slurm, not in the cluster file: skipped");
    }
  }
  return {};
}

/// Puts job `id` on the GPUs one entry of its gres_detail names
/// ("gpu:2(IDX:0-1)", "shard:1(IDX:0)"), on `node`.
void place_gres(Node* node, const std::string& id, const std::string& gres_list,
                const Request& request, const std::string& tenant, Notes* notes) {
  for (const std::string& gres : split_top(gres_list)) {
    std::string kind = gres.substr(0, gres.find(':'));
    if (kind != "gpu" && kind != "shard") continue;
    auto idx = gres.find("(IDX:");
    auto end = gres.find(')', idx);
    auto indices = idx == std::string::npos || end == std::string::npos
                       ? std::nullopt
                       : expand_ranges(std::string_view(gres).substr(idx + 5, end - idx - 5));
    if (!indices) {
      notes->push_back("job " + id + ": cannot read GPU indices in '" + gres + "': ignored");
      continue;
    }
    Qos job_class = request.job_class.value_or(kind == "gpu" ? kQosProduction
                                                                  : kQosOpportunistic);
    for (int index : *indices) {
      auto gpu = std::find_if(node->gpus.begin(), node->gpus.end(),
                              [&](const Gpu& g) { return g.index == index; });
      if (gpu == node->gpus.end()) {
        notes->push_back("job " + id + ": GPU " + std::to_string(index) + " of node " + node->name +
                         " is not in the cluster file: ignored");
        continue;
      }
      if (job_class == kQosProduction && production_job(*gpu) != nullptr) {
        notes->push_back("job " + id + ": GPU " + std::to_string(index) + " of node " + node->name +
                         " has a production job already: counted opportunistic");
        job_class = kQosOpportunistic;
      }
      gpu->jobs.push_back(ResidentJob{id, job_class, tenant, request.mem_bytes});
    }
  }
}

/// Each running job of squeue on the GPUs its gres_detail names.
Result<PlacedJobs> place_slurm_jobs(Cluster* cluster, const json& squeue, Notes* notes) {
  std::map<std::string, Node*> by_name;
  for (Node& node : cluster->nodes) by_name[node.name] = &node;
  std::set<std::string> tenants;
  for (const Tenant& t : cluster->tenants) tenants.insert(t.name);
  for (const json& job : squeue["jobs"]) {
    std::string job_state = job.value("job_state", std::string());
    if (job_state != "RUNNING" && job_state != "SUSPENDED" && job_state != "COMPLETING") continue;
    if (!job.contains("job_id") || !job["job_id"].is_number_unsigned()) {
      return make_error("squeue --json: a running job without a job_id");
    }
    std::string id = "slurm-" + std::to_string(job["job_id"].get<std::uint64_t>());
    auto hosts = expand_hostlist(job.value("nodes", std::string()));
    if (!hosts) return make_error("squeue --json: job " + id + ": " + hosts.error().message);
    auto detail = job.find("gres_detail");
    if (detail == job.end() || !detail->is_array()) continue;  // no GPUs
    Request request = comment_request(job.value("comment", std::string()));
    std::string account = job.value("account", std::string());
    std::string tenant = tenants.count(account) ? account : cluster->policy.default_tenant;
    for (std::size_t h = 0; h < hosts->size() && h < detail->size(); h++) {
      auto node = by_name.find((*hosts)[h]);
      if (node == by_name.end() || !(*detail)[h].is_string()) continue;
      place_gres(node->second, id, (*detail)[h].get<std::string>(), request, tenant, notes);
    }
  }
  PlacedJobs placed;
  for (Node& node : cluster->nodes) {
    for (Gpu& gpu : node.gpus) {
      for (ResidentJob& job : gpu.jobs) placed[job.id].push_back(&job);
    }
  }
  return placed;
}

/// What each job uses now, from the nodes' `gpushare-ctl ls` lines (its
/// processes register apart: add them up), spread over the GPUs it holds;
/// never below what it asked for. Then each GPU's used memory.
Status apply_telemetry(Cluster* cluster,
                       const std::vector<std::pair<std::string, std::string>>& telemetry,
                       PlacedJobs& placed) {
  std::map<std::string, std::uint64_t> used_by_job;
  for (const auto& [node_name, lines] : telemetry) {
    std::size_t line_number = 0;
    std::size_t start = 0;
    while (start < lines.size()) {
      std::size_t stop = lines.find('\n', start);
      if (stop == std::string::npos) stop = lines.size();
      std::string_view line(lines.data() + start, stop - start);
      start = stop + 1;
      line_number++;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      json record = json::parse(line, nullptr, false);
      if (record.is_discarded() || !record.is_object()) {
        return make_error("telemetry of node " + node_name + ": line " +
                          std::to_string(line_number) + ": not a JSON object");
      }
      if (record.value("kind", std::string()) != "job") continue;
      auto jobs = placed.find(record.value("name", std::string()));
      if (jobs == placed.end() || !record.contains("mem_used_bytes") ||
          !record["mem_used_bytes"].is_number_unsigned()) {
        continue;
      }
      std::uint64_t& used = used_by_job[jobs->first];
      used = saturating_add(used, record["mem_used_bytes"].get<std::uint64_t>());
    }
  }
  for (const auto& [id, used] : used_by_job) {
    const std::vector<ResidentJob*>& jobs = placed[id];
    for (ResidentJob* job : jobs) job->mem_bytes = std::max(job->mem_bytes, used / jobs.size());
  }
  for (Node& node : cluster->nodes) {
    for (Gpu& gpu : node.gpus) {
      std::uint64_t sum = 0;
      for (const ResidentJob& job : gpu.jobs) sum = saturating_add(sum, job.mem_bytes);
      gpu.mem_used_bytes = std::min(sum, gpu.mem_bytes);
    }
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> apply_slurm_state(Cluster* cluster, const SlurmState& state) {
  Notes notes;
  auto sinfo = parse(state.sinfo_json, "sinfo --json", "nodes");
  if (!sinfo) return sinfo.error();
  auto squeue = parse(state.squeue_json, "squeue --json", "jobs");
  if (!squeue) return squeue.error();
  if (Status kept = keep_slurm_nodes(cluster, *sinfo, &notes); !kept) return kept.error();
  auto placed = place_slurm_jobs(cluster, *squeue, &notes);
  if (!placed) return placed.error();
  if (Status applied = apply_telemetry(cluster, state.telemetry, *placed); !applied) {
    return applied.error();
  }
  return notes;
}

}  // namespace gpushare::place
