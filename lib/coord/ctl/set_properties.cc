#include "coord/ctl/set_properties.h"

#include "common/properties.h"

namespace gpushare::coord::ctl {

Result<SetRequest> parse_set_properties(std::string job,
                                        const std::optional<std::string>& mem_limit,
                                        const std::vector<std::string>& properties) {
  SetRequest request;
  request.job = std::move(job);
  request.mem_limit = mem_limit;
  for (const std::string& text : properties) {
    Result<Property> property = split_property(text);
    if (!property) return property.error();
    const std::string& value = property->value;
    if (property->key == "mem-limit") {
      request.mem_limit = value;
    } else if (property->key == "qos") {
      Result<Qos> qos = parse_qos_property(value);
      if (!qos) return qos.error();
      request.qos = *qos;
    } else if (property->key == "name") {
      if (Status ok = check_job_name_property(value); !ok) return ok.error();
      request.name = value;
    } else if (property->key == "compute") {
      if (Result<std::uint64_t> ok = parse_compute_share(value); !ok) return ok.error();
      request.compute = value;
    } else if (property->key == "gpu" || property->key == "log") {
      return make_error("property '" + property->key + "' cannot change on a running job");
    } else {
      return make_error("unknown property '" + property->key +
                        "' (known: mem-limit, qos, name, compute)");
    }
  }
  if (request.mem_limit) {
    if (Status ok = check_mem_limit(*request.mem_limit); !ok) return ok.error();
  }
  if (!request.mem_limit && !request.qos && !request.name && !request.compute) {
    return make_error("nothing to set: give --mem-limit SIZE or KEY=VALUE properties");
  }
  return request;
}

}  // namespace gpushare::coord::ctl
