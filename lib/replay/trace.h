// Public cluster traces, for `gpushare-place replay`.
//
// Two job trace formats are read, told apart by their header line:
//
//   Tiresias (NSDI'19 artifact):
//     job_id,num_gpu,submit_time,iterations,model_name,duration,interval
//   Philly via Pollux (OSDI'21 artifact):
//     timestamp,duration,num_gpus,gpu_time,cluster
//
// Submit times become seconds from the first job; a Philly "cluster" (a
// virtual cluster of the Microsoft trace) becomes the job's tenant. Pollux's
// own workloads (name,time,application,num_replicas,batch_size) carry no
// durations, since its simulator derives them from its models, and are
// refused with a message saying so.
//
// A Tiresias cluster spec (num_switch,num_node_p_switch,num_gpu_p_node,...)
// becomes a cluster of switch*node nodes with that many GPUs each.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "place/cluster/cluster.h"

namespace gpushare::replay {

struct TraceJob {
  std::string id;
  std::string tenant;
  double submit_s = 0.0;    ///< seconds after the trace's first submission
  double duration_s = 0.0;  ///< run time at full speed
  std::int64_t gpus = 1;
};

struct Trace {
  std::vector<TraceJob> jobs;  ///< in submission order (stable)
  /// Malformed rows, skipped: "file:line: message" each.
  std::vector<std::string> skipped;
};

/// Reads a job trace. A bad header, or no usable row, is an Error; a
/// malformed row is skipped and reported in `skipped`.
Result<Trace> parse_trace(std::string_view text, std::string_view source);
Result<Trace> load_trace(const std::string& path);

/// Reads a Tiresias cluster spec: nodes named s<switch>n<node>, GPUs of
/// `gpu_mem_bytes` each (the spec gives none).
Result<place::Cluster> parse_cluster_spec(std::string_view text, std::string_view source,
                                          std::uint64_t gpu_mem_bytes);

/// The file's text, or an Error naming it.
Result<std::string> read_text_file(const std::string& path);

}  // namespace gpushare::replay
