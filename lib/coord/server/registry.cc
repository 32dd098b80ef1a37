#include "coord/server/registry.h"

#include <algorithm>
#include <cstdint>

#include "common/saturate.h"
#include "common/units.h"
#include "coord/server/suspend.h"

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

// Writes a job's static cap into its pages at once (the compute loop keeps
// it there with the rest of the job's limits at its next tick).
static void apply_cap(Job& job) {
  for (int i = 0; i < job.block->device_count(); ++i) {
    ComputeLimits limits = job.block->compute(i);
    limits.compute_cap_ppm = job.compute_cap_ppm;
    job.block->set_compute(i, limits);
  }
}

Result<Job*> Registry::add(const RegisterRequest& request, const Caller& peer) {
  // A returning job keeps its old id when it is free and was not another
  // user's. Hints stay small, so that one job cannot push every later id to
  // the end of the range.
  std::uint64_t id = next_id_;
  const Decision* restored = nullptr;
  if (request.id_hint != 0 && request.id_hint <= kMaxIdHint && jobs_.count(request.id_hint) == 0) {
    auto memory = remembered_.find(request.id_hint);
    if (memory == remembered_.end()) {
      id = request.id_hint;
    } else if (memory->second.uid == peer.uid) {
      id = request.id_hint;
      // The same process coming back: what was decided for it holds again.
      if (memory->second.pid == peer.pid &&
          memory->second.mem_limit_bytes.size() == request.devices.size()) {
        restored = &memory->second;
      }
    }
  }
  std::vector<std::uint64_t> limits;
  for (const DeviceRegistration& device : request.devices) {
    limits.push_back(device.mem_limit_bytes);
  }
  std::uint32_t qos = request.qos;
  if (restored != nullptr) {
    limits = restored->mem_limit_bytes;
    qos = restored->qos;
  }
  Result<std::unique_ptr<ControlBlock>> block =
      ControlBlock::create(id, static_cast<int>(limits.size()), limits.data(), qos);
  if (!block) return block.error();
  next_id_ = std::max(next_id_, id + 1);

  Job& job = jobs_[id];
  job.id = id;
  job.name = restored != nullptr ? restored->name : request.name;
  job.pid = peer.pid;
  job.uid = peer.uid;
  job.devices = request.devices;
  job.block = std::move(*block);
  job.compute_cap_ppm = restored != nullptr ? restored->compute_cap_ppm : request.compute_cap_ppm;
  apply_cap(job);
  if (restored != nullptr) {
    job.block->set_paused(restored->paused);
    remembered_.erase(id);
  }
  learn_devices();
  return &job;
}

// The devices the node view shows: those of registered jobs, each with the
// smallest total any of them reports (a job can make a device look smaller
// in `node`, never larger, and a device no job uses any more is forgotten).
void Registry::learn_devices() {
  std::vector<Device> seen;
  for (const auto& [id, job] : jobs_) {
    for (const DeviceRegistration& device : job.devices) {
      auto known = std::find_if(seen.begin(), seen.end(),
                                [&](const Device& d) { return d.uuid == device.uuid; });
      if (known == seen.end()) {
        seen.push_back({device.uuid, device.mem_total_bytes});
      } else {
        known->mem_total_bytes = std::min(known->mem_total_bytes, device.mem_total_bytes);
      }
    }
  }
  // Keep the order devices were first seen in.
  std::vector<Device> ordered;
  for (const Device& old : devices_) {
    auto it =
        std::find_if(seen.begin(), seen.end(), [&](const Device& d) { return d.uuid == old.uuid; });
    if (it != seen.end()) ordered.push_back(*it);
  }
  for (const Device& device : seen) {
    if (std::none_of(ordered.begin(), ordered.end(),
                     [&](const Device& d) { return d.uuid == device.uuid; })) {
      ordered.push_back(device);
    }
  }
  devices_ = std::move(ordered);
}

void Registry::remember(std::vector<Decision> decisions) {
  for (Decision& decision : decisions) {
    if (decision.id == 0 || decision.id > kMaxIdHint || jobs_.count(decision.id) != 0) continue;
    next_id_ = std::max(next_id_, decision.id + 1);
    remembered_[decision.id] = std::move(decision);
  }
}

std::vector<Decision> Registry::decisions() const {
  std::vector<Decision> out;
  for (const auto& [id, job] : jobs_) {
    Decision d;
    d.id = id;
    d.uid = job.uid;
    d.pid = job.pid;
    d.name = job.name;
    d.qos = job.block->qos();
    // A suspend's pause is not restored: the job resumes itself when the
    // coordinator goes away (lib/interpose/suspend.h).
    d.paused = job.block->paused() && !job.block->suspend_requested() && !job.resuming;
    d.compute_cap_ppm = job.compute_cap_ppm;
    for (std::size_t i = 0; i < job.devices.size(); ++i) {
      d.mem_limit_bytes.push_back(job.block->mem_limit(static_cast<int>(i)));
    }
    out.push_back(std::move(d));
  }
  // Decisions not yet claimed by their job stay until it comes back.
  for (const auto& [id, decision] : remembered_) out.push_back(decision);
  return out;
}

bool Registry::remove(std::uint64_t id) {
  bool removed = jobs_.erase(id) > 0;
  if (removed) learn_devices();
  return removed;
}

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
  view.iterations = telemetry.iterations.load(std::memory_order_relaxed);
  view.speed_per_s = job.compute.speed_per_s;
  view.speed_in_iterations = job.compute.speed_in_iterations;
  view.solo_speed_per_s = job.compute.solo_speed_per_s;
  view.slowdown = job.compute.slowdown;
  view.gpu_share = job.compute.gpu_share;
  view.compute_phase = job.compute_phase;
  view.compute_cap_ppm = job.compute_cap_ppm;
  if (!job.devices.empty()) {
    ComputeLimits limits = block.compute(0);
    view.launch_budget = limits.launch_budget;
    view.launch_window_ns = limits.launch_window_ns;
    view.max_queued = limits.max_queued;
    view.gpu_limit_ppm = limits.compute_cap_ppm;
  }
  for (std::size_t i = 0; i < job.devices.size(); ++i) {
    JobDeviceView device;
    device.uuid = job.devices[i].uuid;
    device.mem_total_bytes = job.devices[i].mem_total_bytes;
    device.mem_used_bytes = telemetry.devices[i].mem_used_bytes.load(std::memory_order_relaxed);
    device.mem_limit_bytes = block.mem_limit(static_cast<int>(i));
    device.start_limit_bytes = job.devices[i].requested_limit_bytes;
    if (i < static_cast<std::size_t>(kMaxDevices)) {  // issue 11
      device.device_resident_bytes =
          telemetry.device_resident_bytes[i].load(std::memory_order_relaxed);
      device.host_resident_bytes = telemetry.host_resident_bytes[i].load(std::memory_order_relaxed);
      device.device_resident_target = block.device_resident_target(static_cast<int>(i));
    }
    view.devices.push_back(std::move(device));
  }
  suspend_view(job, &view);  // issue 11: suspend state and suspended bytes
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
      totals.mem_used_bytes = saturating_add(totals.mem_used_bytes, jd.mem_used_bytes);
      totals.mem_limit_bytes =
          (totals.mem_limit_bytes == kNoLimit || jd.mem_limit_bytes == kNoLimit)
              ? kNoLimit
              : std::min(saturating_add(totals.mem_limit_bytes, jd.mem_limit_bytes), kNoLimit - 1);
    }
  }
  return node;
}

Result<Job*> Registry::resolve(std::string_view selector, std::string* reason,
                               const Caller* caller) const {
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
  if (caller != nullptr && named.size() > 1) {
    std::vector<Job*> own;
    for (Job* job : named) {
      if (job->uid == caller->uid) own.push_back(job);
    }
    if (!own.empty()) named = std::move(own);
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
  Result<Job*> found = resolve(request.job, reason, &caller);
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
  std::optional<std::uint64_t> cap;
  if (request.compute) {
    Result<std::uint64_t> parsed = parse_compute_share(*request.compute);
    if (!parsed) return refuse(reason, kReasonInvalid, parsed.error().message);
    cap = *parsed;
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
  if (cap) {
    job.compute_cap_ppm = *cap;
    apply_cap(job);
  }
  return view(job, now_ns);
}

Result<JobView> Registry::pause(const PauseRequest& request, const Caller& caller,
                                std::uint64_t now_ns, std::string* reason) {
  Result<Job*> found = resolve(request.job, reason, &caller);
  if (!found) return found.error();
  Job& job = **found;
  if (Status ok = may_act(caller, policy_, job.id, job.uid); !ok) {
    return refuse(reason, kReasonDenied, ok.error().message);
  }
  if (!request.pause) {  // issue 11: resume undoes a suspend too (suspend.h)
    if (std::string note = resume_note(job); !note.empty()) {
      JobView unchanged = view(job, now_ns);
      unchanged.note = note;
      return unchanged;
    }
    if (job.block->suspend_requested()) {
      job.resuming = true;
      job.block->set_suspend_requested(false);  // suspend_tick lets it run once back
      return view(job, now_ns);
    }
  }
  if (request.pause) job.resuming = false;  // stays paused once its memory is back
  job.block->set_paused(request.pause);
  return view(job, now_ns);
}

}  // namespace gpushare::coord
