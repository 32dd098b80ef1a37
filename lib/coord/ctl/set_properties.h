// `gpushare-ctl set JOB [--mem-limit SIZE] [KEY=VALUE]...`: the properties
// of `gpushare-run -p`, as far as they can change on a running job.
//
//   mem-limit (or mem), qos, name, compute   in the grammar of
//                                            common/properties.h
//   gpu, log                                 fixed for the job's life:
//                                            refused with a reason
// Values are checked here for form; percentages are resolved by the
// coordinator, which knows each device's capacity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "coord/contract/protocol.h"

namespace gpushare::coord::ctl {

Result<SetRequest> parse_set_properties(std::string job,
                                        const std::optional<std::string>& mem_limit,
                                        const std::vector<std::string>& properties);

}  // namespace gpushare::coord::ctl
