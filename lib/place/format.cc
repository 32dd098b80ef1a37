#include "place/format.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/jsonl.h"

namespace gpushare::place {
namespace {

// Records are written by hand rather than built as a JSON tree: with
// 100,000 jobs, the tree's allocations cost as much as placing them.

/// Appends `text` as a JSON string, escaped as nlohmann escapes it.
void append_string(std::string& out, std::string_view text) {
  // Names, ids and reasons are nearly always plain: one append each.
  bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  for (unsigned char c : text) {
    if (c >= 0x80) {
      // Names and ids arrive validated as UTF-8 by the TOML and JSON
      // parsers; anything else takes the careful path (U+FFFD for bad bytes).
      out += dump_compact(nlohmann::ordered_json(std::string(text)));
      return;
    }
  }
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
          out += escape;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

/// Appends ,"key":"value".
void append_field(std::string& out, std::string_view key, std::string_view value) {
  out += ",\"";
  out += key;
  out += "\":";
  append_string(out, value);
}

void append_gpus(std::string& out, const std::vector<int>& gpus) {
  out += '[';
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(gpus[i]);
  }
  out += ']';
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
  std::string out;
  out.reserve(256);
  out += "{\"kind\":\"placement\",\"version\":1,\"job\":";
  if (!placement.job) {
    out += "null";
  } else if (placement.job->number) {
    out += std::to_string(*placement.job->number);
  } else {
    append_string(out, placement.job->text);
  }
  append_field(out, "status", to_string(placement.status));
  if (placement.job_class) append_field(out, "class", to_string(*placement.job_class));
  if (!placement.tenant.empty()) append_field(out, "tenant", placement.tenant);
  if (placement.nodes.size() == 1) {
    append_field(out, "node", placement.nodes.front().node);
    out += ",\"gpus\":";
    append_gpus(out, placement.nodes.front().gpus);
  } else if (placement.nodes.size() > 1) {
    out += ",\"nodes\":[";
    for (std::size_t i = 0; i < placement.nodes.size(); ++i) {
      out += i > 0 ? ",{\"node\":" : "{\"node\":";
      append_string(out, placement.nodes[i].node);
      out += ",\"gpus\":";
      append_gpus(out, placement.nodes[i].gpus);
      out += '}';
    }
    out += ']';
  }
  if (!placement.reason.empty()) append_field(out, "reason", placement.reason);
  if (placement.explanation) {
    const Explanation& e = *placement.explanation;
    out += ",\"explain\":{\"class\":";
    append_string(out, e.class_reason);
    append_field(out, "choice", e.choice);
    out += ",\"rejected\":[";
    for (std::size_t i = 0; i < e.rejected.size(); ++i) {
      const Rejection& r = e.rejected[i];
      out += i > 0 ? ",{\"node\":" : "{\"node\":";
      append_string(out, r.node);
      out += ",\"gpus\":";
      append_gpus(out, r.gpus);
      append_field(out, "reason", r.reason);
      append_field(out, "detail", r.detail);
      out += '}';
    }
    out += ']';
    if (!e.beside.empty()) {
      // Only where the job shares a GPU with a rank of a production job
      // on several GPUs, so other explanations read as before.
      out += ",\"beside\":[";
      for (std::size_t i = 0; i < e.beside.size(); ++i) {
        const BesideGang& b = e.beside[i];
        out += i > 0 ? ",{\"node\":" : "{\"node\":";
        append_string(out, b.node);
        out += ",\"gpu\":" + std::to_string(b.gpu);
        append_field(out, "job", b.job);
        out += ",\"ranks\":" + std::to_string(b.ranks);
        out += ",\"gang\":[";
        for (std::size_t k = 0; k < b.gang.size(); ++k) {
          out += k > 0 ? ",{\"node\":" : "{\"node\":";
          append_string(out, b.gang[k].node);
          out += ",\"gpus\":";
          append_gpus(out, b.gang[k].gpus);
          out += '}';
        }
        out += ']';
        append_field(out, "detail", b.detail);
        out += '}';
      }
      out += ']';
    }
    out += '}';
  }
  out += '}';
  return out;
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
  bool production = placement.job_class == kQosProduction;
  out += " --nodes=" + std::to_string(placement.nodes.size());
  out += " " + shell_quote("--nodelist=" + nodelist);
  // Beside a production job's GPU, which Slurm gives it whole: no shard of
  // it is left, so the job asks for no GPU and names its own
  // (CUDA_VISIBLE_DEVICES, from --format env; gpushare-slurm(7), "JOBS ON
  // SEVERAL GPUS").
  if (production || !placement.beside_whole_gpu) {
    out += std::string(" --gres=") + (production ? "gpu:" : "shard:") + std::to_string(most);
  }
  out += std::string(" --export=ALL,GPUSHARE_QOS=") + (production ? "production" : "opportunistic");
  // The limit travels the same way (the TaskProlog keeps an exported one);
  // without it a placed opportunistic job would run unlimited.
  if (!production && placement.mem_bytes > 0) {
    out += ",GPUSHARE_MEM_LIMIT=" + std::to_string(placement.mem_bytes);
  }
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
  bool production = placement.job_class == kQosProduction;
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
