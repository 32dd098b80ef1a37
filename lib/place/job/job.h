// A job to place, as read from one JSON Lines record:
//
//   {"kind":"job","id":"train-7","tenant":"vision","gpus":2,
//    "mem_bytes":17179869184,"class":"auto"}
//
// Only "id" is required. Unknown fields are ignored, so a record from
// another tool (a gpushare-probe profile, with "peak_mem_bytes") can be
// piped in as it is. Checks that need the cluster (does the tenant exist,
// can the cluster ever hold it) are the placer's.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "common/result.h"
#include "place/cluster/cluster.h"

namespace gpushare::place {

/// A job's id as given: a string or an integer, echoed back the same way.
struct JobId {
  std::string text;
  std::optional<std::int64_t> number;  ///< set when the id was an integer

  bool operator==(const JobId&) const = default;
};

/// The class a job asks for; "auto" lets the quota decide.
enum class ClassHint { kProduction, kOpportunistic, kAuto };

struct Job {
  JobId id;
  std::string tenant;  ///< empty: the policy's default_tenant
  std::int64_t gpus = 1;
  std::uint64_t mem_bytes = 0;  ///< needed on each of its GPUs
  ClassHint hint = ClassHint::kAuto;
  double util = 0.0;  ///< expected utilisation it adds to each GPU, 0..1
  std::optional<double> queued_s;
  std::optional<Order> node_order;  ///< overrides the policy for this job
  std::optional<Order> gpu_order;
};

std::string_view to_string(ClassHint hint);

/// Reads a job record; an Error names the offending field.
Result<Job> job_from_json(const nlohmann::json& record);

/// The record's id if it has a usable one, so an error can still name it.
std::optional<JobId> job_id_of(const nlohmann::json& record);

/// How the id reads in messages: 'train-7' or 42.
std::string quoted(const JobId& id);

}  // namespace gpushare::place
