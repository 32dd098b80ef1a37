#include "coord/ctl/properties.h"

#include "common/units.h"

namespace gpushare::coord {
namespace {

Status check_limit(const std::string& text) {
  if (text == "none") return {};
  Result<std::uint64_t> bytes = is_percentage(text) ? parse_size(text, 100) : parse_size(text);
  if (!bytes) return make_error("invalid mem-limit: " + bytes.error().message);
  if (*bytes == 0)
    return make_error("invalid mem-limit '" + text + "': must be above 0 (or 'none')");
  return {};
}

Status check_name(const std::string& name) {
  if (name.empty()) return make_error("name must not be empty");
  if (name.size() > kMaxJobNameBytes) {
    return make_error("name '" + name + "' is longer than " + std::to_string(kMaxJobNameBytes) +
                      " bytes");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return make_error("name contains a control character");
  }
  return {};
}

}  // namespace

Result<SetRequest> parse_set_properties(std::string job,
                                        const std::optional<std::string>& mem_limit,
                                        const std::vector<std::string>& properties) {
  SetRequest request;
  request.job = std::move(job);
  request.mem_limit = mem_limit;
  for (const std::string& property : properties) {
    std::size_t equals = property.find('=');
    if (equals == std::string::npos || equals == 0) {
      return make_error("invalid property '" + property + "': expected KEY=VALUE");
    }
    std::string key = property.substr(0, equals);
    std::string value = property.substr(equals + 1);
    if (key == "mem-limit" || key == "mem") {
      request.mem_limit = value;
    } else if (key == "qos") {
      request.qos = parse_qos(value);
      if (!request.qos) {
        return make_error("invalid qos '" + value + "': expected production or opportunistic");
      }
    } else if (key == "name") {
      if (Status ok = check_name(value); !ok) return ok.error();
      request.name = value;
    } else if (key == "compute") {
      if (Result<std::uint64_t> ok = parse_compute_share(value); !ok) return ok.error();
      request.compute = value;
    } else if (key == "gpu" || key == "log") {
      return make_error("property '" + key + "' cannot change on a running job");
    } else {
      return make_error("unknown property '" + key + "' (known: mem-limit, qos, name, compute)");
    }
  }
  if (request.mem_limit) {
    if (Status ok = check_limit(*request.mem_limit); !ok) return ok.error();
  }
  if (!request.mem_limit && !request.qos && !request.name && !request.compute) {
    return make_error("nothing to set: give --mem-limit SIZE or KEY=VALUE properties");
  }
  return request;
}

}  // namespace gpushare::coord
