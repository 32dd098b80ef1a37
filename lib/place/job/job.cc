#include "place/job/job.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace gpushare::place {
namespace {

using nlohmann::json;

std::string json_type(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

Error field_error(const std::string& field, const std::string& message) {
  return make_error("'" + field + "' " + message);
}

/// A whole, non-negative number that fits in 63 bits; JSON writers often
/// print large integers as floats (1.6e10), so integral floats count.
Result<std::uint64_t> get_bytes(const json& value, const std::string& field) {
  if (value.is_number_unsigned()) {
    std::uint64_t bytes = value.get<std::uint64_t>();
    if (bytes > static_cast<std::uint64_t>(INT64_MAX)) {
      return field_error(field, "is too large (" + value.dump() + ")");
    }
    return bytes;
  }
  if (value.is_number_integer()) {
    return field_error(field, "must not be negative (got " + value.dump() + ")");
  }
  if (value.is_number_float()) {
    double number = value.get<double>();
    if (number < 0) return field_error(field, "must not be negative (got " + value.dump() + ")");
    if (number != std::floor(number) || !(number < 9.2e18)) {
      return field_error(field, "must be a whole number of bytes (got " + value.dump() + ")");
    }
    return static_cast<std::uint64_t>(number);
  }
  return field_error(field, "must be a number of bytes, not " + json_type(value));
}

Result<double> get_number(const json& value, const std::string& field, double min, double max) {
  if (!value.is_number()) return field_error(field, "must be a number, not " + json_type(value));
  double number = value.get<double>();
  if (!(number >= min && number <= max)) {
    std::string range = max == INFINITY
                            ? "at least " + json(min).dump()
                            : "between " + json(min).dump() + " and " + json(max).dump();
    return field_error(field, "must be " + range + " (got " + value.dump() + ")");
  }
  return number;
}

Result<std::string> get_string(const json& value, const std::string& field) {
  if (!value.is_string()) return field_error(field, "must be a string, not " + json_type(value));
  std::string text = value.get<std::string>();
  if (text.empty()) return field_error(field, "must not be empty");
  if (std::optional<std::size_t> at = control_character(text)) {
    return field_error(field, control_character_message(text, *at) + " (got " + value.dump() + ")");
  }
  return text;
}

Result<Order> get_order(const json& value, const std::string& field) {
  Result<std::string> text = get_string(value, field);
  if (!text) return text.error();
  if (std::optional<Order> order = parse_order(*text)) return *order;
  return field_error(field, "must be \"binpack\" or \"spread\" (got " + value.dump() + ")");
}

}  // namespace

std::string_view to_string(ClassHint hint) {
  switch (hint) {
    case ClassHint::kProduction:
      return "production";
    case ClassHint::kOpportunistic:
      return "opportunistic";
    default:
      return "auto";
  }
}

std::optional<JobId> job_id_of(const json& record) {
  if (!record.is_object()) return std::nullopt;
  auto it = record.find("id");
  if (it == record.end()) return std::nullopt;
  if (it->is_string()) {
    // An id with a control character is no id: it would split the
    // record it is printed in (--format slurm, env), even one that
    // reports it as invalid.
    const std::string& text = it->get_ref<const std::string&>();
    if (text.empty() || control_character(text)) return std::nullopt;
    return JobId{text, {}};
  }
  if (it->is_number_integer()) {
    if (it->is_number_unsigned() &&
        it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      return std::nullopt;
    }
    std::int64_t number = it->get<std::int64_t>();
    return JobId{std::to_string(number), number};
  }
  return std::nullopt;
}

std::string quoted(const JobId& id) { return id.number ? id.text : "'" + id.text + "'"; }

namespace {

/// The job's id, or an error saying what is wrong with it.
Result<JobId> required_id(const json& record) {
  auto id = record.find("id");
  if (id == record.end()) return make_error("the job has no 'id'");
  std::optional<JobId> parsed_id = job_id_of(record);
  if (parsed_id) return std::move(*parsed_id);
  if (id->is_string()) {
    const std::string& text = id->get_ref<const std::string&>();
    if (std::optional<std::size_t> at = control_character(text)) {
      return field_error("id", control_character_message(text, *at) + " (got " + id->dump() + ")");
    }
  }
  return field_error("id", "must be a non-empty string or an integer (got " + id->dump() + ")");
}

Result<std::int64_t> read_gpus(const json& value) {
  if (!value.is_number_integer() &&
      !(value.is_number_float() && value.get<double>() == std::floor(value.get<double>()))) {
    return field_error("gpus", "must be a whole number (got " + value.dump() + ")");
  }
  double gpus = value.get<double>();
  if (gpus < 1) return field_error("gpus", "must be at least 1 (got " + value.dump() + ")");
  if (gpus > 1e9) return field_error("gpus", "is too large (got " + value.dump() + ")");
  return static_cast<std::int64_t>(gpus);
}

Result<ClassHint> read_class(const json& value) {
  if (!value.is_string()) return field_error("class", "must be a string, not " + json_type(value));
  const std::string& text = value.get_ref<const std::string&>();
  if (text == "production") return ClassHint::kProduction;
  if (text == "opportunistic") return ClassHint::kOpportunistic;
  if (text == "auto") return ClassHint::kAuto;
  return field_error(
      "class", "must be \"production\", \"opportunistic\" or \"auto\" (got " + value.dump() + ")");
}

/// Memory: a request, or a profile's peak (gpushare-probe) in its place.
Result<std::uint64_t> read_mem(const json& record) {
  auto mem = record.find("mem_bytes");
  std::string field = "mem_bytes";
  if (mem == record.end()) {
    mem = record.find("peak_mem_bytes");
    field = "peak_mem_bytes";
  }
  if (mem == record.end()) return std::uint64_t{0};
  return get_bytes(*mem, field);
}

}  // namespace

Result<Job> job_from_json(const json& record) {
  if (!record.is_object()) {
    return make_error("a job must be a JSON object, not " + json_type(record));
  }
  Job job;
  Result<JobId> id = required_id(record);
  if (!id) return id.error();
  job.id = std::move(*id);
  if (auto it = record.find("kind"); it != record.end() && !it->is_string()) {
    return field_error("kind", "must be a string, not " + json_type(*it));
  }
  if (auto it = record.find("tenant"); it != record.end()) {
    Result<std::string> tenant = get_string(*it, "tenant");
    if (!tenant) return tenant.error();
    job.tenant = std::move(*tenant);
  }
  if (auto it = record.find("gpus"); it != record.end()) {
    Result<std::int64_t> gpus = read_gpus(*it);
    if (!gpus) return gpus.error();
    job.gpus = *gpus;
  }
  Result<std::uint64_t> mem = read_mem(record);
  if (!mem) return mem.error();
  job.mem_bytes = *mem;
  if (auto it = record.find("class"); it != record.end()) {
    Result<ClassHint> hint = read_class(*it);
    if (!hint) return hint.error();
    job.hint = *hint;
  }
  if (auto it = record.find("util"); it != record.end()) {
    Result<double> util = get_number(*it, "util", 0.0, 1.0);
    if (!util) return util.error();
    job.util = *util;
  }
  if (auto it = record.find("queued_s"); it != record.end()) {
    Result<double> queued = get_number(*it, "queued_s", 0.0, INFINITY);
    if (!queued) return queued.error();
    job.queued_s = *queued;
  }
  for (auto [key, order] :
       {std::pair{"node_order", &job.node_order}, std::pair{"gpu_order", &job.gpu_order}}) {
    if (auto it = record.find(key); it != record.end()) {
      Result<Order> parsed = get_order(*it, key);
      if (!parsed) return parsed.error();
      *order = *parsed;
    }
  }
  return job;
}

}  // namespace gpushare::place
