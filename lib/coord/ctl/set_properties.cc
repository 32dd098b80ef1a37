#include "coord/ctl/set_properties.h"

#include "common/properties.h"

namespace gpushare::coord::ctl {

Result<SetRequest> parse_set_properties(std::string job,
                                        const std::optional<std::string>& mem_limit,
                                        const std::vector<std::string>& properties) {
  SetRequest request;
  request.job = std::move(job);
  request.mem_limit = mem_limit;
  Result<JobProperties> set = parse_job_properties(properties, PropertiesFor::kRunningJob);
  if (!set) return set.error();
  if (set->mem_limit) request.mem_limit = std::move(set->mem_limit);
  if (set->qos) request.qos = *set->qos;
  request.name = std::move(set->name);
  request.compute = std::move(set->compute);
  if (request.mem_limit) {
    if (Status ok = check_mem_limit(*request.mem_limit); !ok) return ok.error();
  }
  if (!request.mem_limit && !request.qos && !request.name && !request.compute) {
    return make_error("nothing to set: give --mem-limit SIZE or KEY=VALUE properties");
  }
  return request;
}

}  // namespace gpushare::coord::ctl
