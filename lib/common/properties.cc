#include "common/properties.h"

#include "common/units.h"

namespace gpushare {

Result<Property> split_property(std::string_view text) {
  std::size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    return make_error("invalid property '" + std::string(text) + "': expected KEY=VALUE");
  }
  Property property{std::string(text.substr(0, equals)), std::string(text.substr(equals + 1))};
  if (property.key == "mem") property.key = "mem-limit";
  return property;
}

Result<MemLimit> parse_mem_limit(std::string_view text) {
  MemLimit limit;
  if (text == "none") return limit;
  Result<SizeSpec> spec = parse_size_spec_text(text);
  if (!spec) return make_error("invalid mem-limit: " + spec.error().message);
  if (!size_spec_positive(*spec)) {
    return make_error("invalid mem-limit '" + std::string(text) + "': must be above 0 (or none)");
  }
  limit.none = false;
  limit.spec = *spec;
  return limit;
}

Status check_mem_limit(std::string_view text) {
  Result<MemLimit> limit = parse_mem_limit(text);
  if (!limit) return limit.error();
  return {};
}

Result<Qos> parse_qos_property(std::string_view text) {
  Qos qos = kQosProduction;
  if (!parse_qos(text, &qos)) {
    return make_error("invalid qos '" + std::string(text) + "': " + kQosExpected);
  }
  return qos;
}

Status check_job_name_property(std::string_view name) {
  JobNameError error = check_job_name(name);
  if (error == JobNameError::kNone) return {};
  // Only a long name is echoed: control characters would garble the terminal.
  // An empty one has nothing to show.
  std::string shown = error == JobNameError::kTooLong ? " '" + std::string(name) + "'" : "";
  return make_error("job name" + shown + " " + job_name_error_reason(error));
}

Result<std::uint64_t> parse_compute_share(std::string_view text) {
  if (text == "none") return kNoLimit;
  std::uint64_t ppm = 0;
  if (!parse_compute_percent(text, &ppm)) {
    return make_error("invalid compute share '" + std::string(text) + "': " + kComputeExpected);
  }
  return ppm;
}

Result<JobProperties> parse_job_properties(const std::vector<std::string>& texts,
                                           PropertiesFor where) {
  JobProperties set;
  for (const std::string& text : texts) {
    Result<Property> property = split_property(text);
    if (!property) return property.error();
    const std::string& key = property->key;
    std::string& value = property->value;
    if (key == "mem-limit") {
      set.mem_limit = std::move(value);
    } else if (key == "qos") {
      Result<Qos> qos = parse_qos_property(value);
      if (!qos) return qos.error();
      set.qos = *qos;
    } else if (key == "name") {
      if (Status ok = check_job_name_property(value); !ok) return ok.error();
      set.name = std::move(value);
    } else if (key == "compute") {
      if (Result<std::uint64_t> ok = parse_compute_share(value); !ok) return ok.error();
      set.compute = std::move(value);
    } else if ((key == "gpu" || key == "log") && where == PropertiesFor::kRunningJob) {
      return make_error("property '" + key + "' cannot change on a running job");
    } else if (key == "gpu") {
      set.gpu = std::move(value);
    } else if (key == "log") {
      set.log = std::move(value);
    } else {
      return make_error("unknown property '" + key + "' (known: mem-limit, qos, name, compute" +
                        (where == PropertiesFor::kStart ? ", gpu, log)" : ")"));
    }
  }
  return set;
}

}  // namespace gpushare

