// `gpushare-ctl set JOB [--mem-limit SIZE] [KEY=VALUE]...`: the properties
// of `gpushare-run -p`, as far as they can change on a running job.
//
//   mem-limit (or mem)  SIZE, a percentage of each device ("50%"), or "none"
//   qos                 production | opportunistic
//   name                a new name
//   compute             a cap on the job's share of GPU time (30%: above 0,
//                       at most 100), or none
//   gpu, log            fixed for the job's life: refused with a reason
// Values are checked here for form; percentages are resolved by the
// coordinator, which knows each device's capacity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "coord/contract/protocol.h"

namespace gpushare::coord {

Result<SetRequest> parse_set_properties(std::string job,
                                        const std::optional<std::string>& mem_limit,
                                        const std::vector<std::string>& properties);

}  // namespace gpushare::coord
