#include "coord/registry.h"

#include <algorithm>

#include "common/units.h"

namespace gpushare::coord {
namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && text.size() <= 19 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Error refuse(std::string* reason, const char* why, std::string message) {
  if (reason != nullptr) *reason = why;
  return make_error(std::move(message));
}

}  // namespace

Result<std::uint64_t> resolve_limit(std::string_view text, std::uint64_t mem_total_bytes) {
  if (text == "none") return kNoLimit;
  Result<std::uint64_t> bytes =
      is_percentage(text) ? parse_size(text, mem_total_bytes) : parse_size(text);
  if (!bytes) return bytes.error();
  if (*bytes == 0) return make_error("a memory limit must be above 0 (or 'none')");
  return bytes;
}

Result<Job*> Registry::add(const RegisterRequest& request, const Caller& peer) {
  // A returning job keeps its old id when it is free. Hints stay small, so
  // that one job cannot push every later id to the end of the range.
  std::uint64_t id = next_id_;
  if (request.id_hint != 0 && request.id_hint <= kMaxIdHint && jobs_.count(request.id_hint) == 0) {
    id = request.id_hint;
  }
  std::vector<std::uint64_t> limits;
  for (const DeviceRegistration& device : request.devices) {
    limits.push_back(device.mem_limit_bytes);
  }
  Result<std::unique_ptr<ControlBlock>> block =
      ControlBlock::create(id, static_cast<int>(limits.size()), limits.data(), request.qos);
  if (!block) return block.error();
  next_id_ = std::max(next_id_, id + 1);

  for (const DeviceRegistration& device : request.devices) {
    auto known = std::find_if(devices_.begin(), devices_.end(),
                              [&](const Device& d) { return d.uuid == device.uuid; });
    if (known == devices_.end()) {
      devices_.push_back({device.uuid, device.mem_total_bytes});
    } else {
      known->mem_total_bytes = std::max(known->mem_total_bytes, device.mem_total_bytes);
    }
  }
  Job& job = jobs_[id];
  job.id = id;
  job.name = request.name;
  job.pid = peer.pid;
  job.uid = peer.uid;
  job.devices = request.devices;
  job.block = std::move(*block);
  return &job;
}

bool Registry::remove(std::uint64_t id) { return jobs_.erase(id) > 0; }

const Job* Registry::find(std::uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobView Registry::view(const Job& job, std::uint64_t now_ns) const {
  const ControlBlock& block = *job.block;
  const TelemetryPage& telemetry = block.telemetry();
  JobView view;
  view.id = job.id;
  view.name = job.name;
  view.pid = job.pid;
  view.uid = job.uid;
  view.qos = block.qos();
  std::uint64_t heartbeat = telemetry.heartbeat_ns.load(std::memory_order_acquire);
  if (block.paused()) {
    view.state = "paused";
  } else if (heartbeat + kStaleAfterNs < now_ns) {
    view.state = "stale";
  } else {
    view.state = "running";
  }
  view.launches = telemetry.launches.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < job.devices.size(); ++i) {
    JobDeviceView device;
    device.uuid = job.devices[i].uuid;
    device.mem_total_bytes = job.devices[i].mem_total_bytes;
    device.mem_used_bytes = telemetry.devices[i].mem_used_bytes.load(std::memory_order_relaxed);
    device.mem_limit_bytes = block.mem_limit(static_cast<int>(i));
    device.start_limit_bytes = job.devices[i].requested_limit_bytes;
    view.devices.push_back(std::move(device));
  }
  return view;
}

std::vector<JobView> Registry::list(std::uint64_t now_ns) const {
  std::vector<JobView> views;
  views.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) views.push_back(view(job, now_ns));
  return views;
}

NodeView Registry::node(std::uint64_t now_ns) const {
  NodeView node;
  for (const Device& device : devices_) {
    DeviceView d;
    d.uuid = device.uuid;
    d.mem_total_bytes = device.mem_total_bytes;
    node.devices.push_back(std::move(d));
  }
  for (const auto& [id, job] : jobs_) {
    JobView v = view(job, now_ns);
    if (v.state == "paused") ++node.paused_jobs;
    for (const JobDeviceView& jd : v.devices) {
      auto it = std::find_if(node.devices.begin(), node.devices.end(),
                             [&](const DeviceView& d) { return d.uuid == jd.uuid; });
      if (it == node.devices.end()) continue;
      ClassTotals& totals = v.qos == kQosOpportunistic ? it->opportunistic : it->production;
      totals.jobs += 1;
      totals.mem_used_bytes += jd.mem_used_bytes;
      totals.mem_limit_bytes =
          (totals.mem_limit_bytes == kNoLimit || jd.mem_limit_bytes == kNoLimit)
              ? kNoLimit
              : totals.mem_limit_bytes + jd.mem_limit_bytes;
    }
  }
  return node;
}

Result<Job*> Registry::resolve(std::string_view selector, std::string* reason) const {
  auto* self = const_cast<Registry*>(this);
  if (all_digits(selector)) {
    std::uint64_t number = std::stoull(std::string(selector));
    if (auto it = self->jobs_.find(number); it != self->jobs_.end()) return &it->second;
    for (auto& [id, job] : self->jobs_) {
      if (static_cast<std::uint64_t>(job.pid) == number) return &job;
    }
  }
  std::vector<Job*> named;
  for (auto& [id, job] : self->jobs_) {
    if (job.name == selector) named.push_back(&job);
  }
  if (named.size() == 1) return named.front();
  if (named.empty()) {
    return refuse(reason, kReasonUnknownJob,
                  "no job '" + std::string(selector) + "' (not the id, pid or name of a job)");
  }
  std::string ids;
  for (const Job* job : named) ids += (ids.empty() ? "" : ", ") + std::to_string(job->id);
  return refuse(reason, kReasonAmbiguous,
                "job name '" + std::string(selector) + "' is ambiguous (ids " + ids +
                    "): use an id or a pid");
}

Result<JobView> Registry::show(std::string_view selector, std::uint64_t now_ns,
                               std::string* reason) const {
  Result<Job*> job = resolve(selector, reason);
  if (!job) return job.error();
  return view(**job, now_ns);
}

Result<JobView> Registry::set(const SetRequest& request, const Caller& caller, std::uint64_t now_ns,
                              std::string* reason) {
  Result<Job*> found = resolve(request.job, reason);
  if (!found) return found.error();
  Job& job = **found;

  // Work out the whole change first: a refused request changes nothing.
  Change change;
  change.job_id = job.id;
  change.job_uid = job.uid;
  std::vector<std::uint64_t> limits;
  if (request.mem_limit) {
    for (const DeviceRegistration& device : job.devices) {
      Result<std::uint64_t> limit = resolve_limit(*request.mem_limit, device.mem_total_bytes);
      if (!limit) {
        return refuse(reason, kReasonInvalid, "invalid mem-limit: " + limit.error().message);
      }
      limits.push_back(*limit);
      change.limits.emplace_back(*limit, device.requested_limit_bytes);
    }
  }
  change.makes_production =
      request.qos && *request.qos == kQosProduction && job.block->qos() != kQosProduction;
  if (Status ok = may_change(caller, policy_, change); !ok) {
    return refuse(reason, kReasonDenied, ok.error().message);
  }

  for (std::size_t i = 0; i < limits.size(); ++i) {
    job.block->set_mem_limit(static_cast<int>(i), limits[i]);
  }
  if (request.qos) job.block->set_qos(*request.qos);
  if (request.name) job.name = *request.name;
  return view(job, now_ns);
}

Result<JobView> Registry::pause(const PauseRequest& request, const Caller& caller,
                                std::uint64_t now_ns, std::string* reason) {
  Result<Job*> found = resolve(request.job, reason);
  if (!found) return found.error();
  Job& job = **found;
  if (Status ok = may_act(caller, policy_, job.id, job.uid); !ok) {
    return refuse(reason, kReasonDenied, ok.error().message);
  }
  job.block->set_paused(request.pause);
  return view(job, now_ns);
}

}  // namespace gpushare::coord
