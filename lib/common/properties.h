// The one grammar of a job's properties, shared by `gpushare-run -p
// KEY=VALUE` (and its options) and `gpushare-ctl set JOB KEY=VALUE`:
//
//   mem-limit (or mem)  SIZE, a percentage of each device ("50%"), or none;
//                       above 0
//   qos                 production | opportunistic
//   name                1-128 bytes, no control characters
//   compute             a share of GPU time: above 0%, at most 100%, or none
//   gpu, log            at start only (gpushare-run)
//
// Each check returns the message a person sees after "error: ".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "vocab/job.h"
#include "vocab/size.h"

namespace gpushare {

struct Property {
  std::string key;  ///< canonical: "mem" is given as "mem-limit"
  std::string value;
};

/// Splits "KEY=VALUE" (KEY non-empty; VALUE may contain '=').
Result<Property> split_property(std::string_view text);

/// A memory limit as gpushare-run and gpushare-ctl set take it, parsed
/// once: "none", or a size above zero whose percentage (if it is one) is
/// resolved later against each device.
struct MemLimit {
  bool none = true;
  SizeSpec spec;
};
Result<MemLimit> parse_mem_limit(std::string_view text);

/// parse_mem_limit's verdict alone.
Status check_mem_limit(std::string_view text);

Result<Qos> parse_qos_property(std::string_view text);

Status check_job_name_property(std::string_view name);

/// A compute share in parts per million; "none" is kNoLimit.
Result<std::uint64_t> parse_compute_share(std::string_view text);

/// Where the properties are given: at a job's start (gpushare-run, which
/// takes every key) or to a running job (gpushare-ctl set, which refuses
/// gpu and log: they are fixed for the job's life).
enum class PropertiesFor { kStart, kRunningJob };

/// What a list of KEY=VALUE properties sets, each key at most once (a later
/// text wins, as later options do). qos is parsed, name and compute are
/// checked; mem-limit is kept as written (checked where it meets the
/// --mem-limit option); gpu and log are checked by gpushare-run, which
/// knows their grammar.
struct JobProperties {
  std::optional<std::string> mem_limit;
  std::optional<Qos> qos;
  std::optional<std::string> name;
  std::optional<std::string> compute;
  std::optional<std::string> gpu;  ///< kStart only
  std::optional<std::string> log;  ///< kStart only
};

/// The one dispatch of the property keys: texts in order, the first
/// error returned ("unknown property 'sm' (known: ...)", "property 'gpu'
/// cannot change on a running job", or the value's own).
Result<JobProperties> parse_job_properties(const std::vector<std::string>& texts,
                                           PropertiesFor where);

}  // namespace gpushare
