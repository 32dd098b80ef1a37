#include "coord/contract/protocol.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/jsonl.h"
#include "common/properties.h"
#include "common/saturate.h"

namespace gpushare::coord {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::size_t kMaxUuidBytes = 64;

std::string without_exception_id(const std::string& what) {
  if (!what.empty() && what[0] == '[') {
    std::size_t end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

// A field reader that remembers the first error, naming the field.
class Fields {
 public:
  explicit Fields(const json& object) : object_(object) {}

  const json* find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  Result<std::string> string(const char* key, std::size_t max_bytes, bool required = true) const {
    const json* value = find(key);
    if (value == nullptr) {
      if (required) return make_error(std::string("missing field '") + key + "'");
      return std::string();
    }
    if (!value->is_string()) return make_error(std::string("field '") + key + "' must be a string");
    const std::string& text = value->get_ref<const std::string&>();
    if (text.size() > max_bytes) {
      return make_error(std::string("field '") + key + "' is longer than " +
                        std::to_string(max_bytes) + " bytes");
    }
    return text;
  }

  // An unsigned 64-bit integer; null reads as kNoLimit when `null_is_none`.
  Result<std::uint64_t> number(const char* key, bool null_is_none, std::uint64_t absent) const {
    const json* value = find(key);
    if (value == nullptr) return absent;
    if (value->is_null() && null_is_none) return kNoLimit;
    if (value->is_number_unsigned()) return value->get<std::uint64_t>();
    if (value->is_number_integer()) {
      return make_error(std::string("field '") + key + "' must not be negative");
    }
    return make_error(std::string("field '") + key + "' must be an unsigned integer" +
                      (null_is_none ? " or null" : ""));
  }

 private:
  const json& object_;
};

// Names are shown to people: control characters become '?'.
std::string sanitize_name(std::string name) {
  for (char& c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return name;
}

bool valid_uuid(const std::string& uuid) {
  if (uuid.rfind("GPU-", 0) != 0 && uuid.rfind("MIG-", 0) != 0) return false;
  for (char c : uuid) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '-' || c == '/';
    if (!ok) return false;
  }
  return uuid.size() > 4;
}

Result<DeviceRegistration> parse_device(const json& value, std::size_t index) {
  std::string where = "devices[" + std::to_string(index) + "]: ";
  if (!value.is_object()) return make_error(where + "must be an object");
  Fields fields(value);
  DeviceRegistration device;
  Result<std::string> uuid = fields.string("uuid", kMaxUuidBytes);
  if (!uuid) return make_error(where + uuid.error().message);
  if (!valid_uuid(*uuid)) return make_error(where + "invalid uuid '" + *uuid + "'");
  device.uuid = *uuid;
  Result<std::uint64_t> total = fields.number("mem_total_bytes", false, 0);
  Result<std::uint64_t> requested = fields.number("requested_limit_bytes", true, kNoLimit);
  Result<std::uint64_t> limit = fields.number("mem_limit_bytes", true, kNoLimit);
  for (const Result<std::uint64_t>* r : {&total, &requested, &limit}) {
    if (!*r) return make_error(where + r->error().message);
  }
  if (fields.find("mem_total_bytes") == nullptr) {
    return make_error(where + "missing field 'mem_total_bytes'");
  }
  device.mem_total_bytes = *total;
  device.start_limit_bytes = *requested;
  device.mem_limit_bytes = fields.find("mem_limit_bytes") == nullptr ? *requested : *limit;
  if (device.start_limit_bytes == 0 || device.mem_limit_bytes == 0) {
    return make_error(where + "a memory limit must be above 0 (null for none)");
  }
  return device;
}

Result<Request> parse_register(const Fields& fields) {
  RegisterRequest request;
  if (const json* protocol = fields.find("protocol")) {
    if (!protocol->is_number_unsigned() || protocol->get<std::uint64_t>() != kProtocolVersion) {
      return make_error("unsupported protocol " + protocol->dump() + " (this coordinator speaks " +
                        std::to_string(kProtocolVersion) + ")");
    }
  }
  if (const json* layout = fields.find("layout_version")) {
    if (!layout->is_number_unsigned() || layout->get<std::uint64_t>() != kLayoutVersion) {
      return make_error("unsupported control block layout " + layout->dump() +
                        " (this coordinator has " + std::to_string(kLayoutVersion) + ")");
    }
  }
  Result<std::string> name = fields.string("name", kMaxJobNameBytes);
  if (!name) return name.error();
  if (name->empty()) return make_error("field 'name' must not be empty");
  request.name = sanitize_name(*name);
  Result<std::string> qos = fields.string("qos", 32);
  if (!qos) return qos.error();
  Result<Qos> qos_value = parse_qos_property(*qos);
  if (!qos_value) return qos_value.error();
  request.qos = *qos_value;
  Result<std::uint64_t> hint = fields.number("id_hint", false, 0);
  if (!hint) return hint.error();
  request.id_hint = *hint;
  Result<std::uint64_t> cap = fields.number("compute_cap_ppm", false, kNoLimit);
  if (!cap) return cap.error();
  if (*cap != kNoLimit && (*cap == 0 || *cap > 1'000'000)) {
    return make_error("field 'compute_cap_ppm' must be in 1..1000000");
  }
  request.compute_cap_ppm = *cap;
  if (const json* tree = fields.find("tree")) {
    if (!tree->is_boolean()) return make_error("field 'tree' must be true or false");
    request.tree = tree->get<bool>();
  }
  const json* devices = fields.find("devices");
  if (devices == nullptr) return make_error("missing field 'devices'");
  if (!devices->is_array()) return make_error("field 'devices' must be an array");
  if (devices->size() > static_cast<std::size_t>(kMaxDevices)) {
    return make_error("more than " + std::to_string(kMaxDevices) + " devices");
  }
  for (std::size_t i = 0; i < devices->size(); ++i) {
    Result<DeviceRegistration> device = parse_device((*devices)[i], i);
    if (!device) return device.error();
    request.devices.push_back(std::move(*device));
  }
  return Request(std::move(request));
}

Result<std::string> parse_selector(const Fields& fields) {
  Result<std::string> job = fields.string("job", kMaxSelectorBytes);
  if (!job) return job;
  if (job->empty()) return make_error("field 'job' must not be empty");
  return job;
}

Result<Request> parse_set(const Fields& fields) {
  SetRequest request;
  Result<std::string> job = parse_selector(fields);
  if (!job) return job.error();
  request.job = *job;
  if (fields.find("mem_limit") != nullptr) {
    Result<std::string> limit = fields.string("mem_limit", 64);
    if (!limit) return limit.error();
    request.mem_limit = *limit;
  }
  if (fields.find("qos") != nullptr) {
    Result<std::string> qos = fields.string("qos", 32);
    if (!qos) return qos.error();
    Result<Qos> qos_value = parse_qos_property(*qos);
    if (!qos_value) return qos_value.error();
    request.qos = *qos_value;
  }
  if (fields.find("name") != nullptr) {
    Result<std::string> name = fields.string("name", kMaxJobNameBytes);
    if (!name) return name.error();
    if (name->empty()) return make_error("field 'name' must not be empty");
    request.name = sanitize_name(*name);
  }
  if (fields.find("compute") != nullptr) {
    Result<std::string> compute = fields.string("compute", 32);
    if (!compute) return compute.error();
    if (Result<std::uint64_t> ok = parse_compute_share(*compute); !ok) return ok.error();
    request.compute = *compute;
  }
  if (!request.mem_limit && !request.qos && !request.name && !request.compute) {
    return make_error("set changes nothing: give mem_limit, qos, name or compute");
  }
  return Request(std::move(request));
}

ordered_json limit_json(std::uint64_t bytes) {
  return bytes == kNoLimit ? ordered_json(nullptr) : ordered_json(bytes);
}

ordered_json class_json(const ClassTotals& totals) {
  ordered_json out = ordered_json::object();
  out["jobs"] = totals.jobs;
  out["mem_used_bytes"] = totals.mem_used_bytes;
  out["mem_limit_bytes"] = limit_json(totals.mem_limit_bytes);
  out["mem_device_resident_bytes"] = totals.device_resident_bytes;
  out["mem_host_resident_bytes"] = totals.host_resident_bytes;
  return out;
}

std::string records_line(const std::vector<ordered_json>& records) {
  ordered_json fields = ordered_json::object();
  fields["records"] = records;
  return to_json_line("records", kProtocolVersion, fields) + "\n";
}

}  // namespace

Result<Request> parse_request(std::string_view line) {
  if (line.size() > kMaxMessageBytes) {
    return make_error("message longer than " + std::to_string(kMaxMessageBytes) + " bytes");
  }
  json message;
  try {
    message = json::parse(line);
  } catch (const json::exception& e) {
    return make_error("malformed JSON: " + without_exception_id(e.what()));
  }
  if (!message.is_object()) return make_error("a message must be a JSON object");
  Fields fields(message);
  Result<std::string> kind = fields.string("kind", 32);
  if (!kind) return kind.error();
  const json* version = fields.find("version");
  if (version == nullptr) return make_error("missing field 'version'");
  if (!version->is_number_unsigned() || version->get<std::uint64_t>() != kProtocolVersion) {
    return make_error("unsupported version " + version->dump() + " of message '" + *kind + "'");
  }
  if (*kind == "register") return parse_register(fields);
  if (*kind == "list") return Request(ListRequest{});
  if (*kind == "node") return Request(NodeRequest{});
  if (*kind == "room") return Request(RoomRequest{});
  if (*kind == "set") return parse_set(fields);
  if (*kind == "migrate") {
    Result<std::string> job = parse_selector(fields);
    if (!job) return job.error();
    Result<std::string> to = fields.string("to", 128);
    if (!to) return to.error();
    return Request(MigrateRequest{*job, *to});
  }
  if (*kind == "show" || *kind == "pause" || *kind == "resume" || *kind == "suspend") {
    Result<std::string> job = parse_selector(fields);
    if (!job) return job.error();
    if (*kind == "show") return Request(ShowRequest{*job});
    if (*kind == "suspend") return Request(SuspendRequest{*job});
    return Request(PauseRequest{*job, *kind == "pause"});
  }
  return make_error("unknown message kind '" + *kind + "'");
}

std::string encode_request(const Request& request) {
  ordered_json fields = ordered_json::object();
  std::string kind;
  if (const auto* r = std::get_if<RegisterRequest>(&request)) {
    kind = "register";
    fields["protocol"] = kProtocolVersion;
    fields["layout_version"] = kLayoutVersion;
    fields["name"] = r->name;
    fields["qos"] = qos_name(r->qos);
    if (r->id_hint != 0) fields["id_hint"] = r->id_hint;
    if (r->compute_cap_ppm != kNoLimit) fields["compute_cap_ppm"] = r->compute_cap_ppm;
    if (r->tree) fields["tree"] = true;
    fields["devices"] = ordered_json::array();
    for (const DeviceRegistration& d : r->devices) {
      fields["devices"].push_back({{"uuid", d.uuid},
                                   {"mem_total_bytes", d.mem_total_bytes},
                                   {"requested_limit_bytes", limit_json(d.start_limit_bytes)},
                                   {"mem_limit_bytes", limit_json(d.mem_limit_bytes)}});
    }
  } else if (std::holds_alternative<ListRequest>(request)) {
    kind = "list";
  } else if (std::holds_alternative<NodeRequest>(request)) {
    kind = "node";
  } else if (std::holds_alternative<RoomRequest>(request)) {
    kind = "room";
  } else if (const auto* show = std::get_if<ShowRequest>(&request)) {
    kind = "show";
    fields["job"] = show->job;
  } else if (const auto* set = std::get_if<SetRequest>(&request)) {
    kind = "set";
    fields["job"] = set->job;
    if (set->mem_limit) fields["mem_limit"] = *set->mem_limit;
    if (set->qos) fields["qos"] = qos_name(*set->qos);
    if (set->name) fields["name"] = *set->name;
    if (set->compute) fields["compute"] = *set->compute;
  } else if (const auto* pause = std::get_if<PauseRequest>(&request)) {
    kind = pause->pause ? "pause" : "resume";
    fields["job"] = pause->job;
  } else if (const auto* suspend = std::get_if<SuspendRequest>(&request)) {
    kind = "suspend";
    fields["job"] = suspend->job;
  } else if (const auto* migrate = std::get_if<MigrateRequest>(&request)) {
    kind = "migrate";
    fields["job"] = migrate->job;
    fields["to"] = migrate->to;
  }
  return to_json_line(kind, kProtocolVersion, fields) + "\n";
}

std::string encode_registered(std::uint64_t job_id) {
  ordered_json fields = ordered_json::object();
  fields["id"] = job_id;
  return to_json_line("registered", kProtocolVersion, fields) + "\n";
}

std::string encode_error(std::string_view message, std::string_view reason) {
  ordered_json fields = ordered_json::object();
  fields["message"] = message;
  fields["reason"] = reason;
  return to_json_line("error", kProtocolVersion, fields) + "\n";
}

namespace {

// The window of gpu_ns_last_window and held_ns_last_window (the
// coordinator's kHoldWindowNs; shorter for a job that just started).
constexpr std::uint64_t kHoldWindowNsShown = 1'000'000'000;

// A measured number, rounded for people (three significant decimals), or
// null when not measured.
ordered_json measured(double value, double scale = 1.0) {
  if (value < 0) return nullptr;
  return std::round(value * scale * 1000.0) / 1000.0;
}

void add_compute_fields(const JobView& job, ordered_json* record) {
  ordered_json& r = *record;
  r["iterations"] = job.iterations;
  r["speed_per_s"] = measured(job.speed_per_s);
  r["speed_unit"] = job.speed_per_s < 0
                        ? ordered_json(nullptr)
                        : ordered_json(job.speed_in_iterations ? "iterations" : "launches");
  r["solo_speed_per_s"] = measured(job.solo_speed_per_s);
  // A slowdown may be negative (faster than the solo estimate).
  r["slowdown_pct"] = std::isnan(job.slowdown) ? ordered_json(nullptr)
                                               : ordered_json(std::round(job.slowdown * 1e5) / 1e3);
  bool budgeted = job.launch_budget != kNoLimit && job.launch_window_ns > 0;
  r["launch_budget_per_s"] = budgeted ? measured(static_cast<double>(job.launch_budget) * 1e9 /
                                                 static_cast<double>(job.launch_window_ns))
                                      : ordered_json(nullptr);
  r["max_queued"] = limit_json(job.max_queued);
  r["gpu_share_pct"] = measured(job.gpu_share, 100.0);
  r["compute_cap_pct"] = job.compute_cap_ppm == kNoLimit
                             ? ordered_json(nullptr)
                             : ordered_json(static_cast<double>(job.compute_cap_ppm) / 1e4);
  r["gpu_share_limit_pct"] = job.gpu_limit_ppm == kNoLimit
                                 ? ordered_json(nullptr)
                                 : ordered_json(static_cast<double>(job.gpu_limit_ppm) / 1e4);
  r["compute_phase"] =
      job.compute_phase.empty() ? ordered_json(nullptr) : ordered_json(job.compute_phase);
  r["hold"] = job.hold.empty() ? ordered_json(nullptr) : ordered_json(job.hold);
  r["window_ns"] = kHoldWindowNsShown;
  r["gpu_ns_last_window"] = job.gpu_ns_last_window;
  r["held_ns_last_window"] = job.held_ns_last_window;
  r["launch_cost_ns"] =
      job.launch_cost_ns == 0 ? ordered_json(nullptr) : ordered_json(job.launch_cost_ns);
  r["free_gpu_ns_last_window"] = job.free_gpu_ns_last_window
                                     ? ordered_json(*job.free_gpu_ns_last_window)
                                     : ordered_json(nullptr);
  r["free_share_ppm"] =
      job.free_share_ppm ? ordered_json(*job.free_share_ppm) : ordered_json(nullptr);
  r["uses_wait_of_pid"] =
      job.uses_wait_of_pid != 0 ? ordered_json(job.uses_wait_of_pid) : ordered_json(nullptr);
}

}  // namespace

ordered_json job_record(const JobView& job) {
  ordered_json record = ordered_json::object();
  record["kind"] = "job";
  record["version"] = 1;
  record["id"] = job.id;
  record["name"] = job.name;
  record["pid"] = job.pid;
  record["uid"] = job.uid;
  // After uid: readers that match "pid":N,"uid":N as one run keep working.
  record["pids"] = job.pids.empty() ? ordered_json::array({job.pid}) : ordered_json(job.pids);
  record["qos"] = qos_name(job.qos);
  std::uint64_t used = 0;
  std::uint64_t limit = 0;
  for (const JobDeviceView& d : job.devices) {
    used = saturating_add(used, d.mem_used_bytes);
    limit = (limit == kNoLimit || d.mem_limit_bytes == kNoLimit)
                ? kNoLimit
                : std::min(saturating_add(limit, d.mem_limit_bytes), kNoLimit - 1);
  }
  record["device"] =
      job.devices.empty() ? ordered_json(nullptr) : ordered_json(job.devices[0].uuid);
  record["mem_used_bytes"] = used;
  record["mem_limit_bytes"] = job.devices.empty() ? ordered_json(nullptr) : limit_json(limit);
  record["launches"] = job.launches;
  record["state"] = job.state;
  add_compute_fields(job, &record);
  ordered_json devices = ordered_json::array();
  for (const JobDeviceView& d : job.devices) {
    devices.push_back({{"uuid", d.uuid},
                       {"mem_total_bytes", d.mem_total_bytes},
                       {"mem_used_bytes", d.mem_used_bytes},
                       {"mem_limit_bytes", limit_json(d.mem_limit_bytes)},
                       {"start_limit_bytes", limit_json(d.start_limit_bytes)},
                       {"device_resident_bytes", d.device_resident_bytes},
                       {"host_resident_bytes", d.host_resident_bytes},
                       {"device_resident_target", limit_json(d.device_resident_target)}});
    if (d.migrating_bytes != 0) devices.back()["migrating_bytes"] = d.migrating_bytes;
    if (d.evicted_bytes != 0) devices.back()["evicted_bytes"] = d.evicted_bytes;
  }
  record["devices"] = std::move(devices);
  if (job.ranks.size() >= 2) {  // a job on several GPUs: its ranks and its step
    ordered_json ranks = ordered_json::array();
    double slowest = -1;
    bool all_measured = true;
    std::int64_t waited_for = 0;
    for (const RankView& rank : job.ranks) {
      double step_ms = rank.steps_per_s > 0 ? 1000.0 / rank.steps_per_s : -1;
      ranks.push_back({{"pid", rank.pid},
                       {"gpus", rank.gpus},
                       {"iterations", rank.iterations},
                       {"step_ms", measured(step_ms)},
                       {"collective_ms", measured(rank.collective_ms)},
                       {"wait_ms", measured(rank.wait_ms)}});
      all_measured = all_measured && step_ms > 0;
      if (step_ms > slowest) slowest = step_ms;
      if (rank.waited_for) waited_for = rank.pid;
    }
    record["ranks"] = std::move(ranks);
    // The job's step is its slowest rank's: the others wait for it at the
    // collective that ends each step.
    record["step_ms"] = all_measured ? measured(slowest) : ordered_json(nullptr);
    // The rank the others wait for, by the ranks' time in their collectives
    // (null: none waits, or not measured).
    record["waited_for_pid"] = waited_for != 0 ? ordered_json(waited_for) : ordered_json(nullptr);
  }
  {  // the job's managed-backed memory, summed over its devices
    std::uint64_t on_device = 0, on_host = 0;
    for (const JobDeviceView& d : job.devices) {
      on_device = saturating_add(on_device, d.device_resident_bytes);
      on_host = saturating_add(on_host, d.host_resident_bytes);
    }
    record["mem_device_resident_bytes"] = on_device;
    record["mem_host_resident_bytes"] = on_host;
  }
  {  // only while they are not zero: a migration under way, the driver's evictions
    std::uint64_t migrating = 0, evicted = 0;
    for (const JobDeviceView& d : job.devices) {
      migrating = saturating_add(migrating, d.migrating_bytes);
      evicted = saturating_add(evicted, d.evicted_bytes);
    }
    if (migrating != 0) record["mem_migrating_bytes"] = migrating;
    if (evicted != 0) record["mem_evicted_bytes"] = evicted;
  }
  {  // only for a job a suspend has touched
    std::uint64_t suspended = 0;
    for (const JobDeviceView& d : job.devices)
      suspended = saturating_add(suspended, d.suspended_bytes);
    if (suspended != 0 || job.state == "suspending" || job.state == "suspended" ||
        job.state == "resuming") {
      record["mem_suspended_bytes"] = suspended;
    }
  }
  if (!job.pause_reasons.empty()) record["pause_reasons"] = job.pause_reasons;
  if (!job.suspend_refused.empty()) record["suspend_refused"] = job.suspend_refused;
  if (!job.suspend_path.empty()) record["suspend_path"] = job.suspend_path;
  if (job.migration_ms >= 0) record["migration_ms"] = job.migration_ms;
  if (!job.checkpoint_error.empty()) record["checkpoint_error"] = job.checkpoint_error;
  if (!job.note.empty()) record["note"] = job.note;
  if (job.violation) {
    record["violation"] = {{"device", job.violation->device},
                           {"observed_bytes", job.violation->observed_bytes},
                           {"limit_bytes", job.violation->limit_bytes},
                           {"action", job.violation->action}};
  }
  return record;
}

std::vector<ordered_json> node_records(const NodeView& node) {
  std::vector<ordered_json> records;
  ClassTotals production, opportunistic;
  auto add = [](ClassTotals& sum, const ClassTotals& part) {
    sum.jobs += part.jobs;
    sum.mem_used_bytes = saturating_add(sum.mem_used_bytes, part.mem_used_bytes);
    sum.device_resident_bytes =
        saturating_add(sum.device_resident_bytes, part.device_resident_bytes);
    sum.host_resident_bytes = saturating_add(sum.host_resident_bytes, part.host_resident_bytes);
    sum.mem_limit_bytes =
        (sum.mem_limit_bytes == kNoLimit || part.mem_limit_bytes == kNoLimit)
            ? kNoLimit
            : std::min(saturating_add(sum.mem_limit_bytes, part.mem_limit_bytes), kNoLimit - 1);
  };
  std::uint64_t total = 0, used = 0, free = 0;
  for (const DeviceView& d : node.devices) {
    ordered_json record = ordered_json::object();
    std::uint64_t device_used =
        saturating_add(d.production.mem_used_bytes, d.opportunistic.mem_used_bytes);
    record["kind"] = "device";
    record["version"] = 1;
    record["uuid"] = d.uuid;
    record["mem_total_bytes"] = d.mem_total_bytes;
    record["mem_used_bytes"] = device_used;
    std::uint64_t device_free =
        d.mem_total_bytes > device_used ? d.mem_total_bytes - device_used : 0;
    record["mem_free_bytes"] = device_free;
    record["jobs"] = d.production.jobs + d.opportunistic.jobs;
    record["mem_device_resident_bytes"] =
        saturating_add(d.production.device_resident_bytes, d.opportunistic.device_resident_bytes);
    record["mem_host_resident_bytes"] =
        saturating_add(d.production.host_resident_bytes, d.opportunistic.host_resident_bytes);
    record["production"] = class_json(d.production);
    record["opportunistic"] = class_json(d.opportunistic);
    records.push_back(std::move(record));
    add(production, d.production);
    add(opportunistic, d.opportunistic);
    total = saturating_add(total, d.mem_total_bytes);
    used = saturating_add(used, device_used);
    free = saturating_add(free, device_free);
  }
  ordered_json summary = ordered_json::object();
  summary["kind"] = "node";
  summary["version"] = 1;
  summary["devices"] = node.devices.size();
  // A job on several GPUs counts once on the node (the devices' counts
  // would count it once per GPU).
  production.jobs = node.production_jobs;
  opportunistic.jobs = node.opportunistic_jobs;
  summary["jobs"] = production.jobs + opportunistic.jobs;
  summary["paused_jobs"] = node.paused_jobs;
  summary["mem_total_bytes"] = total;
  summary["mem_used_bytes"] = used;
  summary["mem_free_bytes"] = free;
  summary["mem_device_resident_bytes"] =
      saturating_add(production.device_resident_bytes, opportunistic.device_resident_bytes);
  summary["mem_host_resident_bytes"] =
      saturating_add(production.host_resident_bytes, opportunistic.host_resident_bytes);
  summary["production"] = class_json(production);
  summary["opportunistic"] = class_json(opportunistic);
  records.push_back(std::move(summary));
  return records;
}

std::string encode_jobs(const std::vector<JobView>& jobs) {
  std::vector<ordered_json> records;
  records.reserve(jobs.size());
  for (const JobView& job : jobs) records.push_back(job_record(job));
  return records_line(records);
}

std::string encode_node(const NodeView& node) { return records_line(node_records(node)); }

Result<std::vector<ordered_json>> decode_records(std::string_view line) {
  ordered_json reply;
  try {
    reply = ordered_json::parse(line);
  } catch (const json::exception& e) {
    return make_error("malformed reply from the coordinator: " + without_exception_id(e.what()));
  }
  if (!reply.is_object() || !reply.contains("kind") || !reply["kind"].is_string()) {
    return make_error("malformed reply from the coordinator: no kind");
  }
  const std::string& kind = reply["kind"].get_ref<const std::string&>();
  if (kind == "error") {
    if (reply.contains("message") && reply["message"].is_string()) {
      return make_error(reply["message"].get<std::string>());
    }
    return make_error("the coordinator refused the request without saying why");
  }
  if (kind != "records" || !reply.contains("records") || !reply["records"].is_array()) {
    return make_error("unexpected reply '" + kind + "' from the coordinator");
  }
  std::vector<ordered_json> records;
  for (ordered_json& record : reply["records"]) records.push_back(std::move(record));
  return records;
}

}  // namespace gpushare::coord
