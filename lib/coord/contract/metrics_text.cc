// Prometheus exposition text from ls and node records (metrics_text.h).
//
// The format wants each metric family's samples together, after its HELP
// and TYPE lines, so the records are walked once per family rather than
// once overall. Names follow Prometheus' conventions: a gpushare_ prefix,
// the unit in the name (_bytes, _per_second, _ratio), _total for counters.
// A job is labelled by job_id, job_name and uid (not "job", which is the
// label Prometheus gives every scrape target), and per-device samples by
// gpu_uuid. A value the coordinator has not measured, or a limit a job
// does not have, is left out rather than written as a sentinel: a missing
// sample is what PromQL treats as "no value".
#include "coord/contract/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace gpushare::coord {
namespace {

using nlohmann::ordered_json;
using Records = std::vector<ordered_json>;

struct Family {
  const char* name;
  const char* type;  // gauge | counter
  const char* help;
};

std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  // %.17g spells integers exactly and fractions without loss; shorten the
  // common fractions that print longer than they are.
  char shorter[32];
  std::snprintf(shorter, sizeof shorter, "%.6g", value);
  return std::strtod(shorter, nullptr) == value ? shorter : text;
}

// A numeric field, or NaN when absent, null or not a number.
double field(const ordered_json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_number()) return std::nan("");
  return it->get<double>();
}

std::string string_field(const ordered_json& record, const char* key) {
  auto it = record.find(key);
  if (it == record.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_null()) return "";
  return it->dump();
}

using Labels = std::vector<std::pair<std::string, std::string>>;

class Writer {
 public:
  void family(const Family& f) {
    current_ = f.name;
    out_ += "# HELP ";
    out_ += f.name;
    out_ += ' ';
    out_ += f.help;  // our own text: no backslash or line feed to escape
    out_ += "\n# TYPE ";
    out_ += f.name;
    out_ += ' ';
    out_ += f.type;
    out_ += '\n';
  }
  // One sample of the current family; NaN values are left out.
  void sample(const Labels& labels, double value) {
    if (std::isnan(value)) return;
    out_ += current_;
    if (!labels.empty()) {
      out_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) out_ += ',';
        out_ += labels[i].first;
        out_ += "=\"";
        out_ += escape_label_value(labels[i].second);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += number(value);
    out_ += '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  const char* current_ = "";
};

bool is_kind(const ordered_json& record, const char* kind) {
  auto it = record.find("kind");
  return it != record.end() && it->is_string() && it->get<std::string>() == kind;
}

Labels job_labels(const ordered_json& job) {
  return {{"job_id", string_field(job, "id")},
          {"job_name", string_field(job, "name")},
          {"uid", string_field(job, "uid")}};
}

Labels with(Labels labels, const char* name, std::string value) {
  labels.emplace_back(name, std::move(value));
  return labels;
}

const char* const kClasses[] = {"production", "opportunistic"};
const char* const kStates[] = {"running",  "paused",   "stale",     "suspending", "suspended",
                               "resuming", "spilling", "restoring", "migrating"};
// The words of a job record's "hold" (gpushare-ctl(1), "Why a job is held").
const char* const kHolds[] = {"running",       "idle",          "learning",
                              "waiting-for-gap", "compute-cap", "launch-budget",
                              "paused-operator", "paused-memory"};

void device_families(Writer& w, const Records& records) {
  struct DeviceGauge {
    Family family;
    const char* key;
  };
  const DeviceGauge gauges[] = {
      {{"gpushare_device_memory_total_bytes", "gauge", "Memory of the GPU."}, "mem_total_bytes"},
      {{"gpushare_device_memory_used_bytes", "gauge",
        "Memory the GPU's registered jobs hold on it, as their interposers count it."},
       "mem_used_bytes"},
      {{"gpushare_device_memory_device_resident_bytes", "gauge",
        "Spillable (managed) memory of the GPU's jobs that is on the GPU now."},
       "mem_device_resident_bytes"},
      {{"gpushare_device_memory_host_resident_bytes", "gauge",
        "Spillable memory of the GPU's jobs that has been moved to host memory."},
       "mem_host_resident_bytes"},
  };
  for (const DeviceGauge& gauge : gauges) {
    w.family(gauge.family);
    for (const ordered_json& r : records) {
      if (is_kind(r, "device"))
        w.sample({{"gpu_uuid", string_field(r, "uuid")}}, field(r, gauge.key));
    }
  }
  w.family({"gpushare_device_jobs", "gauge", "Jobs registered on the GPU, by class."});
  for (const ordered_json& r : records) {
    if (!is_kind(r, "device")) continue;
    for (const char* qos : kClasses) {
      auto it = r.find(qos);
      if (it == r.end() || !it->is_object()) continue;
      w.sample({{"gpu_uuid", string_field(r, "uuid")}, {"class", qos}}, field(*it, "jobs"));
    }
  }
  w.family({"gpushare_jobs", "gauge",
            "Jobs registered on the node, by class (a job on several GPUs counts once)."});
  for (const ordered_json& r : records) {
    if (!is_kind(r, "node")) continue;
    for (const char* qos : kClasses) {
      auto it = r.find(qos);
      if (it != r.end() && it->is_object()) w.sample({{"class", qos}}, field(*it, "jobs"));
    }
  }
}

// Per job and device: the job's memory on each GPU it uses.
void job_memory_families(Writer& w, const Records& records) {
  struct MemoryGauge {
    Family family;
    const char* key;
  };
  const MemoryGauge gauges[] = {
      {{"gpushare_job_memory_used_bytes", "gauge",
        "Device memory the job holds on the GPU, as its interposer counts it."},
       "mem_used_bytes"},
      {{"gpushare_job_memory_limit_bytes", "gauge",
        "The job's memory limit on the GPU (absent: no limit)."},
       "mem_limit_bytes"},
      {{"gpushare_job_memory_device_resident_bytes", "gauge",
        "The job's spillable (managed) memory that is on the GPU now."},
       "device_resident_bytes"},
      {{"gpushare_job_memory_host_resident_bytes", "gauge",
        "The job's spillable memory moved to host memory (spilled or suspended)."},
       "host_resident_bytes"},
  };
  for (const MemoryGauge& gauge : gauges) {
    w.family(gauge.family);
    for (const ordered_json& r : records) {
      if (!is_kind(r, "job")) continue;
      auto devices = r.find("devices");
      if (devices == r.end() || !devices->is_array()) continue;
      for (const ordered_json& d : *devices) {
        w.sample(with(job_labels(r), "gpu_uuid", string_field(d, "uuid")), field(d, gauge.key));
      }
    }
  }
}

// Per job, on its first GPU (where the compute loop measures it).
void job_compute_families(Writer& w, const Records& records) {
  auto each_job = [&](auto&& emit) {
    for (const ordered_json& r : records) {
      if (is_kind(r, "job")) emit(r, with(job_labels(r), "gpu_uuid", string_field(r, "device")));
    }
  };
  w.family({"gpushare_job_info", "gauge",
            "Always 1: the job's class and first process (pid) as labels."});
  each_job([&](const ordered_json& r, const Labels& labels) {
    w.sample(with(with(labels, "class", string_field(r, "qos")), "pid", string_field(r, "pid")), 1);
  });
  w.family({"gpushare_job_state", "gauge",
            "1 for the state the job is in (running, paused, stale, suspending, suspended, "
            "resuming, spilling, restoring, migrating), 0 for the others."});
  each_job([&](const ordered_json& r, const Labels& labels) {
    std::string state = string_field(r, "state");
    for (const char* name : kStates) w.sample(with(labels, "state", name), state == name ? 1 : 0);
  });
  w.family({"gpushare_job_paused", "gauge",
            "1 for each reason a paused job waits: operator (pause, suspend, the enforcer), "
            "memory (the coordinator's own pause of an opportunistic job whose memory is on "
            "the host while production runs)."});
  each_job([&](const ordered_json& r, const Labels& labels) {
    auto reasons = r.find("pause_reasons");
    for (const char* name : {"operator", "memory"}) {
      bool set = false;
      if (reasons != r.end() && reasons->is_array()) {
        for (const auto& reason : *reasons) set = set || (reason.is_string() && reason == name);
      }
      w.sample(with(labels, "reason", name), set ? 1 : 0);
    }
  });
  w.family({"gpushare_job_launches_total", "counter", "Kernels the job has launched."});
  each_job([&](const ordered_json& r, const Labels& l) { w.sample(l, field(r, "launches")); });
  w.family({"gpushare_job_iterations_total", "counter",
            "Iterations (synchronisations between bursts of kernels) the job has completed."});
  each_job([&](const ordered_json& r, const Labels& l) { w.sample(l, field(r, "iterations")); });

  // The compute loop measures speed in iterations where it sees them, else
  // in kernel launches: one family per unit, so a name never hides which.
  for (const char* unit : {"iterations", "launches"}) {
    bool iterations = std::string(unit) == "iterations";
    w.family({iterations ? "gpushare_job_speed_iterations_per_second"
                         : "gpushare_job_speed_launches_per_second",
              "gauge",
              iterations ? "The job's measured speed, in iterations per second."
                         : "The job's measured speed, in kernel launches per second (for jobs "
                           "whose iterations are not seen)."});
    each_job([&](const ordered_json& r, const Labels& l) {
      if (string_field(r, "speed_unit") == unit) w.sample(l, field(r, "speed_per_s"));
    });
    w.family({iterations ? "gpushare_job_solo_speed_iterations_per_second"
                         : "gpushare_job_solo_speed_launches_per_second",
              "gauge",
              "The compute loop's estimate of the job's speed alone on the GPU, in the unit of "
              "its measured speed."});
    each_job([&](const ordered_json& r, const Labels& l) {
      if (string_field(r, "speed_unit") == unit) w.sample(l, field(r, "solo_speed_per_s"));
    });
  }
  w.family({"gpushare_job_slowdown_ratio", "gauge",
            "1 - speed / solo estimate, for production jobs; 0 when at or above the estimate."});
  each_job([&](const ordered_json& r, const Labels& l) {
    double slowdown = field(r, "slowdown_pct") / 100.0;
    w.sample(l, std::isnan(slowdown) ? slowdown : std::max(slowdown, 0.0));
  });
  w.family({"gpushare_job_gpu_share_ratio", "gauge",
            "The fraction of the GPU's time the job's kernels occupied over the last window."});
  each_job([&](const ordered_json& r, const Labels& l) {
    w.sample(l, field(r, "gpu_share_pct") / 100.0);
  });
  w.family({"gpushare_job_hold", "gauge",
            "1 for why the job is held now (waiting-for-gap, learning, compute-cap, "
            "launch-budget, paused-operator, paused-memory) or that it is not (running, idle), "
            "0 for the others."});
  each_job([&](const ordered_json& r, const Labels& labels) {
    std::string hold = string_field(r, "hold");
    if (hold.empty()) return;
    for (const char* name : kHolds) w.sample(with(labels, "reason", name), hold == name ? 1 : 0);
  });
  w.family({"gpushare_job_gpu_seconds_last_window", "gauge",
            "GPU time the job's interposer measured for its kernels over the last window "
            "(one second)."});
  each_job([&](const ordered_json& r, const Labels& l) {
    w.sample(l, field(r, "gpu_ns_last_window") / 1e9);
  });
  w.family({"gpushare_job_held_seconds_last_window", "gauge",
            "Time the job's launches waited for admission or a pause over the last window "
            "(one second)."});
  each_job([&](const ordered_json& r, const Labels& l) {
    w.sample(l, field(r, "held_ns_last_window") / 1e9);
  });
  w.family({"gpushare_job_launch_cost_seconds", "gauge",
            "The GPU time per launch the job's admission learned (absent: not learned)."});
  each_job([&](const ordered_json& r, const Labels& l) {
    w.sample(l, field(r, "launch_cost_ns") / 1e9);
  });
  w.family({"gpushare_job_free_gpu_seconds_last_window", "gauge",
            "GPU time on the job's device that neither production nor processes outside "
            "gpushare used over the last window (one second), from NVML (absent: not "
            "measured)."});
  each_job([&](const ordered_json& r, const Labels& l) {
    w.sample(l, field(r, "free_gpu_ns_last_window") / 1e9);
  });
  w.family({"gpushare_job_free_share_ratio", "gauge",
            "An opportunistic job's GPU time over the free GPU time of its device in the last "
            "window (absent: not measured, or nothing was free)."});
  each_job([&](const ordered_json& r, const Labels& l) {
    w.sample(l, field(r, "free_share_ppm") / 1e6);
  });
  w.family({"gpushare_job_gpu_share_limit_ratio", "gauge",
            "The most of the GPU's time the job may take now, from a static cap or the "
            "compute loop (absent: no limit)."});
  each_job([&](const ordered_json& r, const Labels& l) {
    w.sample(l, field(r, "gpu_share_limit_pct") / 100.0);
  });
  // A job on several GPUs: each rank's step, on its GPU.
  auto each_rank = [&](auto&& sample) {
    for (const ordered_json& r : records) {
      if (!is_kind(r, "job")) continue;
      auto ranks = r.find("ranks");
      if (ranks == r.end() || !ranks->is_array()) continue;
      for (const ordered_json& rank : *ranks) {
        auto gpus = rank.find("gpus");
        std::string gpu = gpus != rank.end() && gpus->is_array() && !gpus->empty() &&
                                  (*gpus)[0].is_string()
                              ? (*gpus)[0].get<std::string>()
                              : "";
        Labels labels =
            with(with(job_labels(r), "gpu_uuid", gpu), "pid", string_field(rank, "pid"));
        sample(r, rank, labels);
      }
    }
  };
  w.family({"gpushare_job_rank_step_seconds", "gauge",
            "For a job on several GPUs, each rank's measured step time (the pid and GPU of "
            "the rank as labels); the job's step is its slowest rank's."});
  each_rank([&](const ordered_json&, const ordered_json& rank, const Labels& labels) {
    w.sample(labels, field(rank, "step_ms") / 1000.0);
  });
  w.family({"gpushare_job_rank_collective_wait_seconds", "gauge",
            "For a job on several GPUs, each rank's wait in its collectives, per collective: "
            "its mean collective time less the least of its job's ranks (absent: not "
            "measured)."});
  each_rank([&](const ordered_json&, const ordered_json& rank, const Labels& labels) {
    w.sample(labels, field(rank, "wait_ms") / 1000.0);
  });
  w.family({"gpushare_job_rank_waited_for", "gauge",
            "For a job on several GPUs whose ranks' collectives are measured, 1 for the rank "
            "the others wait for, 0 for the others (absent: none waits, or not measured)."});
  each_rank([&](const ordered_json& r, const ordered_json& rank, const Labels& labels) {
    double waited_for = field(r, "waited_for_pid");
    if (std::isnan(waited_for)) return;
    w.sample(labels, field(rank, "pid") == waited_for ? 1 : 0);
  });
  w.family({"gpushare_job_over_limit", "gauge",
            "1 while the coordinator sees the job hold more device memory than its limit "
            "through NVML (a violation), else 0."});
  each_job([&](const ordered_json& r, const Labels& l) {
    auto it = r.find("violation");
    w.sample(l, it != r.end() && it->is_object() ? 1 : 0);
  });
  w.family({"gpushare_job_violation_observed_bytes", "gauge",
            "What NVML shows a violating job hold on the GPU (absent while within its limit)."});
  for (const ordered_json& r : records) {
    auto it = r.find("violation");
    if (!is_kind(r, "job") || it == r.end() || !it->is_object()) continue;
    w.sample(with(with(job_labels(r), "gpu_uuid", string_field(*it, "device")), "action",
                  string_field(*it, "action")),
             field(*it, "observed_bytes"));
  }
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string prometheus_text(const std::vector<ordered_json>& records) {
  Writer w;
  device_families(w, records);
  job_memory_families(w, records);
  job_compute_families(w, records);
  return w.take();
}

}  // namespace gpushare::coord
