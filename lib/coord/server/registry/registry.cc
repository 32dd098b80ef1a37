#include "coord/server/registry/registry.h"

#include <algorithm>
#include <cstdint>

#include "common/properties.h"
#include "common/saturate.h"
#include "common/units.h"

namespace gpushare::coord::server {
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

// The devices a process uses (control_block.h, "The GPUs a process uses").
// Every process registers every GPU it sees, and with no
// CUDA_VISIBLE_DEVICES that is every GPU of the node; counting it on all of
// them put an opportunistic job beside production on a GPU it never
// touched (and one moved off production's GPU stayed held as if beside it).
// What it uses is what it holds there: a context (counted by the
// interposer) or memory. Both are the job's claims (control_block.h, "The
// GPUs a process uses", says what a lie gains); one that claims nothing
// anywhere is held everywhere, as before.
bool uses_device(const Process& process, std::size_t index) {
  if (index >= static_cast<std::size_t>(kMaxDevices) || index >= process.devices.size()) {
    return false;
  }
  const DeviceTelemetry& device = process.block->telemetry().devices[index];
  return device.contexts.load(std::memory_order_relaxed) != 0 ||
         device.mem_used_bytes.load(std::memory_order_relaxed) != 0;
}

bool counts_on(const Process& process, std::size_t index) {
  if (index >= process.devices.size()) return false;
  if (uses_device(process, index)) return true;
  for (std::size_t i = 0; i < process.devices.size(); ++i) {
    if (uses_device(process, i)) return false;
  }
  return true;  // it uses none yet: held everywhere it may start
}

std::size_t first_counted(const Process& process) {
  for (std::size_t i = 0; i < process.devices.size(); ++i) {
    if (counts_on(process, i)) return i;
  }
  return 0;
}

// Writes a static cap into a process's pages at once (the compute loop
// keeps it there with the rest of its limits at its next tick).
static void apply_cap(Process& process) {
  for (int i = 0; i < process.block->device_count(); ++i) {
    ComputeLimits limits = process.block->compute(i);
    limits.compute_cap_ppm = process.compute_cap_ppm;
    process.block->set_compute(i, limits);
  }
}

// The job's device with this UUID, or null (for a Job or a const Job).
template <class AnyJob>
static auto job_device(AnyJob& job, const std::string& uuid) -> decltype(&job.devices[0]) {
  auto it = std::find_if(job.devices.begin(), job.devices.end(),
                         [&](const JobDevice& d) { return d.uuid == uuid; });
  return it == job.devices.end() ? nullptr : &*it;
}

// Writes the job's limits, class, pause and cap into one process's pages
// (changing only what differs, so observers see no spurious generation).
void Registry::apply(const Job& job, Process& process) const {
  for (std::size_t i = 0; i < process.devices.size(); ++i) {
    const JobDevice* device = job_device(job, process.devices[i].uuid);
    if (device != nullptr &&
        process.block->mem_limit(static_cast<int>(i)) != device->mem_limit_bytes) {
      process.block->set_mem_limit(static_cast<int>(i), device->mem_limit_bytes);
    }
  }
  if (process.block->qos() != job.qos) process.block->set_qos(job.qos);
  std::uint32_t reasons =
      (job.paused ? kPauseOperator : 0u) | (job.host_paused ? kPauseHostMemory : 0u);
  if (process.block->pause_reasons() != reasons) process.block->set_pause_reasons(reasons);
  if (process.block->suspend_requested() != job.suspend_requested) {
    process.block->set_suspend_requested(job.suspend_requested);
  }
  if (process.compute_cap_ppm != job.compute_cap_ppm || job.compute_cap_ppm != kNoLimit) {
    process.compute_cap_ppm = job.compute_cap_ppm;
    apply_cap(process);
  }
}

// A new job for the first process of a tree (or a process with no tree).
// A returning job keeps its old id when it is free and was not another
// user's. Hints stay small, so that one job cannot push every later id to
// the end of the range.
Job& Registry::start_job(const RegisterRequest& request, const Caller& peer, TreeProof tree) {
  std::uint64_t id = next_id_;
  if (request.id_hint != 0 && request.id_hint <= kMaxIdHint && jobs_.count(request.id_hint) == 0) {
    auto memory = remembered_.find(request.id_hint);
    if (memory == remembered_.end() || memory->second.uid == peer.uid) id = request.id_hint;
  }
  next_id_ = std::max(next_id_, id + 1);
  Job& job = jobs_[id];
  job.id = id;
  job.name = request.name;
  job.uid = peer.uid;
  job.qos = request.qos;
  job.compute_cap_ppm = request.compute_cap_ppm;
  job.tree = std::move(tree);
  return job;
}

Job* Registry::tree_job(const TreeProof& tree, uid_t uid) {
  if (!tree.valid()) return nullptr;
  for (auto& [id, job] : jobs_) {
    if (job.uid == uid && job.tree.same_tree(tree)) return &job;
  }
  return nullptr;
}

// What an earlier coordinator decided for the job comes back.
void Registry::restore(Job& job, const Decision& decision) {
  job.name = decision.name;
  job.qos = decision.qos;
  job.paused = decision.paused;
  job.compute_cap_ppm = decision.compute_cap_ppm;
  for (std::size_t i = 0; i < job.devices.size() && i < decision.mem_limit_bytes.size(); ++i) {
    job.devices[i].mem_limit_bytes = decision.mem_limit_bytes[i];
  }
  for (std::uint64_t key : job.processes) apply(job, processes_.at(key));
}

Result<Process*> Registry::add(const RegisterRequest& request, const Caller& peer, TreeProof tree) {
  if (request.devices.size() > static_cast<std::size_t>(kMaxDevices)) {
    return make_error("too many devices (" + std::to_string(request.devices.size()) + ", at most " +
                      std::to_string(kMaxDevices) + ")");
  }
  Job* job = tree_job(tree, peer.uid);
  if (job == nullptr) job = &start_job(request, peer, std::move(tree));
  std::size_t known_devices = job->devices.size();
  // The job's devices: the union of its processes'. A device new to the job
  // comes with the limit its process asks for (after a coordinator restart,
  // the one in force for it).
  std::vector<std::uint64_t> limits;
  for (const DeviceRegistration& device : request.devices) {
    JobDevice* known = job_device(*job, device.uuid);
    if (known == nullptr) {
      job->devices.push_back({device.uuid, device.mem_total_bytes, device.start_limit_bytes,
                              device.mem_limit_bytes});
      known = &job->devices.back();
    } else {
      known->mem_total_bytes = std::min(known->mem_total_bytes, device.mem_total_bytes);
    }
    limits.push_back(known->mem_limit_bytes);
  }
  Result<std::unique_ptr<ControlBlock>> block =
      ControlBlock::create(job->id, static_cast<int>(limits.size()), limits.data(), job->qos);
  if (!block) {
    job->devices.resize(known_devices);  // as it was
    if (job->processes.empty()) jobs_.erase(job->id);
    return block.error();
  }
  std::uint64_t key = next_key_++;
  Process& process = processes_[key];
  process.key = key;
  process.job_id = job->id;
  process.pid = peer.pid;
  process.devices = request.devices;
  process.block = std::move(*block);
  job->processes.push_back(key);
  apply(*job, process);

  // The job's first process coming back to a restarted coordinator: what
  // was decided for the job holds again.
  auto memory = remembered_.find(job->id);
  if (memory != remembered_.end() && memory->second.uid == peer.uid &&
      memory->second.pid == peer.pid &&
      memory->second.mem_limit_bytes.size() == job->devices.size()) {
    restore(*job, memory->second);
    remembered_.erase(memory);
  }
  learn_devices();
  return &process;
}

// The devices the node view shows: those of registered processes, each with
// the smallest total any of them reports (a job can make a device look
// smaller in `node`, never larger, and a device no job uses any more is
// forgotten).
void Registry::learn_devices() {
  std::vector<Device> seen;
  for (const auto& [key, process] : processes_) {
    for (const DeviceRegistration& device : process.devices) {
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
    d.pid = processes_.at(job.processes.front()).pid;
    d.name = job.name;
    d.qos = job.qos;
    // A suspend's pause is not restored: the job resumes itself when the
    // coordinator goes away (lib/interpose/memory/suspend.h).
    d.paused = job.paused && !job.suspend_requested && !job.resuming;
    d.compute_cap_ppm = job.compute_cap_ppm;
    for (const JobDevice& device : job.devices) d.mem_limit_bytes.push_back(device.mem_limit_bytes);
    out.push_back(std::move(d));
  }
  // Decisions not yet claimed by their job stay until it comes back.
  for (const auto& [id, decision] : remembered_) out.push_back(decision);
  return out;
}

bool Registry::remove(std::uint64_t process_key) {
  auto it = processes_.find(process_key);
  if (it == processes_.end()) return false;
  auto job = jobs_.find(it->second.job_id);
  processes_.erase(it);
  if (job != jobs_.end()) {
    std::vector<std::uint64_t>& keys = job->second.processes;
    keys.erase(std::remove(keys.begin(), keys.end(), process_key), keys.end());
    if (keys.empty()) jobs_.erase(job);  // its last process: the job goes
  }
  learn_devices();
  return true;
}

void Registry::give_back_id(std::uint64_t id) {
  if (jobs_.count(id) == 0 && remembered_.count(id) == 0 && id + 1 == next_id_) next_id_ = id;
}

const Job* Registry::find(std::uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const Process* Registry::process(std::uint64_t key) const {
  auto it = processes_.find(key);
  return it == processes_.end() ? nullptr : &it->second;
}

bool Registry::set_paused(std::uint64_t id, bool paused) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  it->second.paused = paused;
  for (std::uint64_t key : it->second.processes) apply(it->second, processes_.at(key));
  return true;
}

bool Registry::set_host_paused(std::uint64_t id, bool paused) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  it->second.host_paused = paused;
  for (std::uint64_t key : it->second.processes) apply(it->second, processes_.at(key));
  return true;
}

// One device of a job, summed over the processes that use it.
static void add_device_usage(const Process& process, std::size_t index, JobDeviceView* device,
                             bool first) {
  const TelemetryPage& telemetry = process.block->telemetry();
  device->mem_used_bytes =
      saturating_add(device->mem_used_bytes,
                     telemetry.devices[index].mem_used_bytes.load(std::memory_order_relaxed));
  if (index >= static_cast<std::size_t>(kMaxDevices)) return;
  device->device_resident_bytes =
      saturating_add(device->device_resident_bytes,
                     telemetry.device_resident_bytes[index].load(std::memory_order_relaxed));
  device->host_resident_bytes =
      saturating_add(device->host_resident_bytes,
                     telemetry.host_resident_bytes[index].load(std::memory_order_relaxed));
  if (first) {
    device->device_resident_target = process.block->device_resident_target(static_cast<int>(index));
  }
}

// A job's view: identity and limits from the job; usage and progress summed
// over its processes; the compute controller's view from its first process.
JobView Registry::view(const Job& job, std::uint64_t now_ns) const {
  JobView view;
  view.id = job.id;
  view.name = job.name;
  view.uid = job.uid;
  view.qos = job.qos;
  bool fresh = false;
  for (std::uint64_t key : job.processes) {
    const Process& process = processes_.at(key);
    const TelemetryPage& telemetry = process.block->telemetry();
    view.pids.push_back(process.pid);
    std::uint64_t heartbeat = telemetry.heartbeat_ns.load(std::memory_order_acquire);
    fresh = fresh || heartbeat + kStaleAfterNs >= now_ns;
    view.launches =
        saturating_add(view.launches, telemetry.launches.load(std::memory_order_relaxed));
    view.iterations =
        saturating_add(view.iterations, telemetry.iterations.load(std::memory_order_relaxed));
  }
  view.pid = view.pids.empty() ? 0 : view.pids.front();
  // Why it is held and what it got: summed over its processes, the word
  // from its first (hold_track.h).
  for (std::uint64_t key : job.processes) {
    HoldWindow window = processes_.at(key).hold.window();
    view.gpu_ns_last_window = saturating_add(view.gpu_ns_last_window, window.gpu_ns);
    view.held_ns_last_window = saturating_add(view.held_ns_last_window, window.held_total_ns);
  }
  {
    const Process& first_process = processes_.at(job.processes.front());
    view.hold = hold_word(job.paused, job.host_paused, first_process.hold.last(),
                          first_process.hold.window(), now_ns, view.launches);
    view.launch_cost_ns = first_process.hold.last().launch_cost_ns;
    view.uses_wait_of_pid = first_process.uses_wait_of_pid;
  }
  view.state = job.paused || job.host_paused ? "paused" : fresh ? "running" : "stale";
  if (job.paused) view.pause_reasons.push_back("operator");
  if (job.host_paused) view.pause_reasons.push_back("memory");
  const Process& first = processes_.at(job.processes.front());
  view.speed_per_s = first.compute.speed_per_s;
  view.speed_in_iterations = first.compute.speed_in_iterations;
  view.solo_speed_per_s = first.compute.solo_speed_per_s;
  view.slowdown = first.compute.slowdown;
  view.gpu_share = first.compute.gpu_share;
  view.compute_phase = first.compute_phase;
  view.compute_cap_ppm = job.compute_cap_ppm;
  if (!first.devices.empty()) {
    ComputeLimits limits = first.block->compute(static_cast<int>(first_counted(first)));
    view.launch_budget = limits.launch_budget;
    view.launch_window_ns = limits.launch_window_ns;
    view.max_queued = limits.max_queued;
    view.gpu_limit_ppm = limits.compute_cap_ppm;
  }
  for (const JobDevice& device : job.devices) {
    JobDeviceView d;
    d.uuid = device.uuid;
    d.mem_total_bytes = device.mem_total_bytes;
    d.mem_limit_bytes = device.mem_limit_bytes;
    d.start_limit_bytes = device.start_limit_bytes;
    bool first_user = true;
    for (std::uint64_t key : job.processes) {
      const Process& process = processes_.at(key);
      for (std::size_t i = 0; i < process.devices.size(); ++i) {
        if (process.devices[i].uuid != device.uuid) continue;
        add_device_usage(process, i, &d, first_user);
        first_user = false;
      }
    }
    view.devices.push_back(std::move(d));
  }
  // The GPUs it uses first (counts_on), each part in the order first seen:
  // the record's `device` is then the GPU it runs on, also after a move.
  std::stable_partition(view.devices.begin(), view.devices.end(),
                        [&](const JobDeviceView& d) { return job_counts_on(job, d.uuid); });
  suspend_view(job, &view);  // suspend state and suspended bytes
  rank_view(job, &view);
  return view;
}

// A job on several GPUs: each process holding memory on a GPU is a rank
// (every rank of torchrun's registers every GPU it sees, so where it holds
// memory says which is its own). A job on one GPU gets no ranks.
void Registry::rank_view(const Job& job, JobView* view) const {
  std::vector<RankView> ranks;
  std::vector<std::string> gpus;
  for (std::uint64_t key : job.processes) {
    const Process& process = processes_.at(key);
    const TelemetryPage& telemetry = process.block->telemetry();
    RankView rank;
    rank.pid = process.pid;
    for (std::size_t i = 0; i < process.devices.size() && i < kMaxDevices; ++i) {
      if (telemetry.devices[i].mem_used_bytes.load(std::memory_order_relaxed) == 0) continue;
      rank.gpus.push_back(process.devices[i].uuid);
      if (std::find(gpus.begin(), gpus.end(), rank.gpus.back()) == gpus.end()) {
        gpus.push_back(rank.gpus.back());
      }
    }
    if (rank.gpus.empty()) continue;  // a launcher, or a rank not started yet
    rank.iterations = telemetry.iterations.load(std::memory_order_relaxed);
    rank.steps_per_s = process.compute.speed_in_iterations ? process.compute.speed_per_s : -1;
    rank.collective_ms = process.collective_ms;
    rank.wait_ms = process.collective_wait_ms;
    rank.waited_for = process.waited_for;
    ranks.push_back(std::move(rank));
  }
  if (gpus.size() >= 2 && ranks.size() >= 2) view->ranks = std::move(ranks);
}

std::vector<JobView> Registry::list(std::uint64_t now_ns) const {
  std::vector<JobView> views;
  views.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) views.push_back(view(job, now_ns));
  return views;
}

// Whether some process of the job is counted on the device (counts_on).
bool Registry::job_counts_on(const Job& job, const std::string& uuid) const {
  for (std::uint64_t key : job.processes) {
    const Process& process = processes_.at(key);
    for (std::size_t i = 0; i < process.devices.size(); ++i) {
      if (process.devices[i].uuid == uuid && counts_on(process, i)) return true;
    }
  }
  return false;
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
    ++(v.qos == kQosOpportunistic ? node.opportunistic_jobs : node.production_jobs);
    for (const JobDeviceView& jd : v.devices) {
      auto it = std::find_if(node.devices.begin(), node.devices.end(),
                             [&](const DeviceView& d) { return d.uuid == jd.uuid; });
      if (it == node.devices.end()) continue;
      ClassTotals& totals = v.qos == kQosOpportunistic ? it->opportunistic : it->production;
      if (job_counts_on(job, jd.uuid)) totals.jobs += 1;
      totals.mem_used_bytes = saturating_add(totals.mem_used_bytes, jd.mem_used_bytes);
      totals.device_resident_bytes =
          saturating_add(totals.device_resident_bytes, jd.device_resident_bytes);
      totals.host_resident_bytes =
          saturating_add(totals.host_resident_bytes, jd.host_resident_bytes);
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
    if (auto it = std::find_if(self->processes_.begin(), self->processes_.end(),
                               [&](const auto& entry) {
                                 return static_cast<std::uint64_t>(entry.second.pid) == number;
                               });
        it != self->processes_.end()) {
      return &self->jobs_.at(it->second.job_id);  // any process of the job names it
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
    for (const JobDevice& device : job.devices) {
      Result<std::uint64_t> limit = resolve_limit(*request.mem_limit, device.mem_total_bytes);
      if (!limit) {
        return refuse(reason, kReasonInvalid, "invalid mem-limit: " + limit.error().message);
      }
      limits.push_back(*limit);
      change.limits.emplace_back(*limit, device.start_limit_bytes);
    }
  }
  std::optional<std::uint64_t> cap;
  if (request.compute) {
    Result<std::uint64_t> parsed = parse_compute_share(*request.compute);
    if (!parsed) return refuse(reason, kReasonInvalid, parsed.error().message);
    cap = *parsed;
  }
  change.makes_production =
      request.qos && *request.qos == kQosProduction && job.qos != kQosProduction;
  if (Status ok = may_change(caller, policy_, change); !ok) {
    return refuse(reason, kReasonDenied, ok.error().message);
  }

  // The change is the job's, and reaches every one of its processes.
  for (std::size_t i = 0; i < limits.size(); ++i) job.devices[i].mem_limit_bytes = limits[i];
  if (request.qos) job.qos = *request.qos;
  if (request.name) job.name = *request.name;
  if (cap) job.compute_cap_ppm = *cap;
  for (std::uint64_t key : job.processes) apply(job, processes_.at(key));
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
  if (!request.pause) {  // resume undoes a suspend too (suspend.cc)
    if (std::string note = resume_note(job); !note.empty()) {
      JobView unchanged = view(job, now_ns);
      unchanged.note = note;
      return unchanged;
    }
    if (job.suspend_requested) {
      job.resuming = true;
      job.suspend_requested = false;  // suspend_tick lets it run once back
      for (std::uint64_t key : job.processes) apply(job, processes_.at(key));
      return view(job, now_ns);
    }
  }
  if (request.pause) job.resuming = false;  // stays paused once its memory is back
  set_paused(job.id, request.pause);
  return view(job, now_ns);
}

}  // namespace gpushare::coord::server
