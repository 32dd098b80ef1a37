#include "place/format.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/jsonl.h"

namespace gpushare::place {
namespace {

using nlohmann::ordered_json;

ordered_json id_json(const Placement& placement) {
  if (!placement.job) return nullptr;
  if (placement.job->number) return *placement.job->number;
  return placement.job->text;
}

ordered_json gpus_json(const std::vector<int>& gpus) {
  ordered_json out = ordered_json::array();
  for (int g : gpus) out.push_back(g);
  return out;
}

std::string joined(const std::vector<int>& values, char separator) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += separator;
    out += std::to_string(v);
  }
  return out;
}

}  // namespace

std::string placement_json(const Placement& placement) {
  ordered_json fields = ordered_json::object();
  fields["job"] = id_json(placement);
  fields["status"] = to_string(placement.status);
  if (placement.job_class) fields["class"] = to_string(*placement.job_class);
  if (!placement.tenant.empty()) fields["tenant"] = placement.tenant;
  if (placement.nodes.size() == 1) {
    fields["node"] = placement.nodes.front().node;
    fields["gpus"] = gpus_json(placement.nodes.front().gpus);
  } else if (placement.nodes.size() > 1) {
    ordered_json nodes = ordered_json::array();
    for (const NodeGpus& n : placement.nodes) {
      nodes.push_back(ordered_json{{"node", n.node}, {"gpus", gpus_json(n.gpus)}});
    }
    fields["nodes"] = std::move(nodes);
  }
  if (!placement.reason.empty()) fields["reason"] = placement.reason;
  if (placement.explanation) {
    const Explanation& e = *placement.explanation;
    ordered_json rejected = ordered_json::array();
    for (const Rejection& r : e.rejected) {
      rejected.push_back(ordered_json{{"node", r.node},
                                      {"gpus", gpus_json(r.gpus)},
                                      {"reason", r.reason},
                                      {"detail", r.detail}});
    }
    fields["explain"] = ordered_json{
        {"class", e.class_reason}, {"choice", e.choice}, {"rejected", std::move(rejected)}};
  }
  return to_json_line("placement", 1, fields);
}

std::string shell_quote(std::string_view text) {
  bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '/' || c == ':' || c == ',' || c == '=' || c == '+' ||
           c == '@' || c == '%';
  });
  if (plain) return std::string(text);
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string slurm_arguments(const Placement& placement) {
  std::string name = placement.job ? placement.job->text : "";
  std::string out = "--job-name=" + shell_quote(name);
  if (placement.status != PlacementStatus::kPlaced) {
    // Queue it held: released by hand (scontrol release) once it can run.
    return out + " --hold";
  }
  std::string nodelist;
  std::size_t most = 0;
  for (const NodeGpus& n : placement.nodes) {
    nodelist += (nodelist.empty() ? "" : ",") + n.node;
    most = std::max(most, n.gpus.size());
  }
  bool production = placement.job_class == JobClass::kProduction;
  out += " --nodes=" + std::to_string(placement.nodes.size());
  out += " " + shell_quote("--nodelist=" + nodelist);
  out += std::string(" --gres=") + (production ? "gpu:" : "shard:") + std::to_string(most);
  out += std::string(" --export=ALL,GPUSHARE_QOS=") + (production ? "production" : "opportunistic");
  return out;
}

Result<std::string> env_assignments(const Placement& placement) {
  std::string id = placement.job ? quoted(*placement.job) : "the job";
  if (placement.status != PlacementStatus::kPlaced) {
    return make_error("job " + id + " is " + std::string(to_string(placement.status)) + ": " +
                      placement.reason);
  }
  if (placement.nodes.size() != 1) {
    return make_error("job " + id + " spans " + std::to_string(placement.nodes.size()) +
                      " nodes, and CUDA_VISIBLE_DEVICES differs per node; use --format json "
                      "or slurm");
  }
  const NodeGpus& where = placement.nodes.front();
  bool production = placement.job_class == JobClass::kProduction;
  std::string out;
  out += "export CUDA_VISIBLE_DEVICES=" + joined(where.gpus, ',') + "\n";
  out += std::string("export GPUSHARE_QOS=") + (production ? "production" : "opportunistic") + "\n";
  out += "export GPUSHARE_JOB=" + shell_quote(placement.job->text) + "\n";
  if (!production && placement.mem_bytes > 0) {
    out += "export GPUSHARE_MEM_LIMIT=" + std::to_string(placement.mem_bytes) + "\n";
  }
  out += "export GPUSHARE_NODE=" + shell_quote(where.node) + "\n";
  return out;
}

}  // namespace gpushare::place
