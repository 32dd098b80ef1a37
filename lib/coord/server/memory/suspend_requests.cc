// Suspend requests, their state in job views, and the tick (suspend.h).
//
// A job is a process tree (registry.h): the request is the job's
// (Job::suspend_requested, written into every process's limits page by
// Registry::apply, so a process that joins later is asked too), and each
// process moves its own memory. The job's state is read across its
// processes: suspended once every process is, refused as soon as one
// refuses (the request is then withdrawn from all of them, and the ones
// that had moved memory bring it back).
#include "coord/server/memory/suspend_requests.h"

#include "common/saturate.h"
#include "coord/server/registry/authorize.h"

namespace gpushare::coord::server {

namespace {

std::string describe_job(const Job& job) {
  return "job " + std::to_string(job.id) + " '" + job.name + "'";
}

// What the job's processes report, taken together.
struct TreeSuspendState {
  bool all_suspended = true;
  bool all_running = true;
  bool any_refused = false;
  bool any_away = false;  ///< some process has memory away or on its way
  bool none_moved = true;  ///< every process is running or refused: nothing moved
  bool any_suspending = false;
  std::uint64_t blockers = 0;
};

template <class Processes>
TreeSuspendState tree_state(const Processes& processes) {
  TreeSuspendState state;
  for (const Process* process : processes) {
    const TelemetryPage& telemetry = process->block->telemetry();
    std::uint64_t s = telemetry.suspend_state.load(std::memory_order_relaxed);
    state.all_suspended = state.all_suspended && s == kSuspendSuspended;
    state.all_running = state.all_running && s == kSuspendRunning;
    state.any_refused = state.any_refused || s == kSuspendRefused;
    state.any_away = state.any_away || s == kSuspendSuspended || s == kSuspendResuming;
    state.none_moved = state.none_moved && (s == kSuspendRunning || s == kSuspendRefused);
    state.any_suspending = state.any_suspending || s == kSuspendSuspending;
    state.blockers |= telemetry.suspend_blockers.load(std::memory_order_relaxed);
  }
  return state;
}

}  // namespace

std::string describe_blockers(std::uint64_t mask) {
  std::string out;
  auto add = [&](std::uint64_t bit, const char* what) {
    if ((mask & bit) == 0) return;
    out += out.empty() ? "" : ", ";
    out += what;
  };
  add(kBlocksArrays, "CUDA arrays");
  add(kBlocksIpc, "memory exported by cuIpcGetMemHandle");
  add(kBlocksProgramVmm, "memory the program maps itself with the VMM API");
  add(kBlocksPlain,
      "plain device memory not allocated suspendable (start it with gpushare-run --suspendable)");
  add(kBlocksPools, "stream-ordered memory (cuMemAllocAsync and memory pools)");
  if (out.empty()) out = "memory it could not move";
  return out;
}

void Registry::suspend_view(const Job& job, JobView* view) const {
  std::vector<const Process*> processes;
  for (std::uint64_t key : job.processes) processes.push_back(&processes_.at(key));
  TreeSuspendState state = tree_state(processes);
  if (job.suspend_requested) {
    view->state = state.all_suspended ? "suspended" : "suspending";
  } else if (job.resuming || state.any_away || state.any_suspending) {
    // Suspending with no request from this coordinator: a suspend asked by
    // one that went away, which the job's memory worker may still be
    // moving; the job undoes it once that move ends (suspend.h).
    view->state = "resuming";
  }
  // A running job moving its managed memory (layout 6): its memory worker
  // beats on, so it is never stale for it; shown as spilling or restoring.
  std::uint64_t migration = kMigrationNone;
  for (const Process* process : processes) {
    std::uint64_t m = process->block->telemetry().migration.load(std::memory_order_acquire);
    if (migration == kMigrationNone) migration = m;
  }
  if (view->state == "running" && migration == kMigrationToHost) view->state = "spilling";
  if (view->state == "running" && migration == kMigrationToDevice) view->state = "restoring";
  // Suspended, migrating and evicted bytes per job device, summed over the
  // processes using it.
  for (std::size_t d = 0; d < view->devices.size(); ++d) {
    JobDeviceView& device = view->devices[d];
    for (const Process* process : processes) {
      const TelemetryPage& telemetry = process->block->telemetry();
      for (std::size_t i = 0; i < process->devices.size() && i < std::size_t{kMaxDevices}; ++i) {
        if (process->devices[i].uuid != device.uuid) continue;
        std::uint64_t bytes = telemetry.suspended_bytes[i].load(std::memory_order_relaxed);
        device.suspended_bytes = saturating_add(device.suspended_bytes, bytes);
        device.host_resident_bytes = saturating_add(device.host_resident_bytes, bytes);
        device.migrating_bytes = saturating_add(
            device.migrating_bytes, telemetry.migrating_bytes[i].load(std::memory_order_relaxed));
        device.evicted_bytes = saturating_add(
            device.evicted_bytes, telemetry.evicted_bytes[i].load(std::memory_order_relaxed));
      }
    }
  }
  view->suspend_refused = job.suspend_refused;
  // The driver's process checkpoint (checkpoint_jobs.cc): its work shows
  // over everything above (a locked job's client thread may be blocked in
  // the driver, so its heartbeat says nothing), and a job checkpointed holds
  // nothing on the GPU: all it uses is on the host.
  switch (job.checkpoint_work) {
    case CheckpointWork::kMigrating:
      view->state = "migrating";
      break;
    case CheckpointWork::kSuspending:
      view->state = "suspending";
      break;
    case CheckpointWork::kResuming:
      view->state = "resuming";
      break;
    case CheckpointWork::kNone:
      if (job.checkpointed) view->state = "suspended";
      break;
  }
  if (job.checkpointed) {
    for (JobDeviceView& device : view->devices) {
      device.suspended_bytes = device.mem_used_bytes;
      device.host_resident_bytes = device.mem_used_bytes;
      device.device_resident_bytes = 0;
    }
  }
  view->suspend_path = job.suspend_path;
  view->migration_ms = job.migration_ms;
  view->checkpoint_error = job.checkpoint_error;
}

std::string Registry::resume_note(const Job& job) const {
  if (job.suspend_requested) return "";
  if (job.resuming) return "already resuming";
  if (!job.paused && job.host_paused) {
    return "paused by the coordinator while its memory is on the host and production runs: "
           "it resumes when either ends";
  }
  if (!job.paused) return "not paused or suspended: nothing to resume";
  return "";
}

void Registry::suspend_tick(const std::function<void(const std::string&)>& note) {
  for (auto& [id, job] : jobs_) {
    std::vector<const Process*> processes;
    for (std::uint64_t key : job.processes) processes.push_back(&processes_.at(key));
    TreeSuspendState state = tree_state(processes);
    if (job.suspend_requested && state.any_refused) {
      job.suspend_refused = describe_blockers(state.blockers);
      job.suspend_requested = false;
      // Processes that had moved memory bring it back before the job runs.
      job.resuming = !state.none_moved;
      if (state.none_moved) job.paused = false;
      for (std::uint64_t key : job.processes) apply(job, processes_.at(key));
      note("suspend of " + describe_job(job) + " refused by the job: " + job.suspend_refused);
    } else if (job.resuming && !job.suspend_requested && state.all_running) {
      job.resuming = false;
      set_paused(job.id, false);
      note(describe_job(job) + " resumed");
    }
  }
}

void suspend_tick(Registry& registry, const std::function<void(const std::string&)>& note) {
  registry.suspend_tick(note);
}

Result<JobView> Registry::suspend(const SuspendRequest& request, const Caller& caller,
                                  std::uint64_t now_ns, std::string* reason) {
  Result<Job*> found = resolve(request.job, reason, &caller);
  if (!found) return found.error();
  Job& job = **found;
  if (Status ok = may_act(caller, policy_, job.id, job.uid); !ok) {
    if (reason != nullptr) *reason = kReasonDenied;
    return ok.error();
  }
  if (job.suspend_requested) {
    JobView unchanged = view(job, now_ns);
    unchanged.note = unchanged.state == "suspended" ? "already suspended" : "already suspending";
    return unchanged;
  }
  std::vector<const Process*> processes;
  for (std::uint64_t key : job.processes) processes.push_back(&processes_.at(key));
  std::uint64_t blockers = tree_state(processes).blockers;
  if (blockers != 0) {
    if (reason != nullptr) *reason = kReasonNotSuspendable;
    return make_error(describe_job(job) + " cannot be suspended: it holds " +
                      describe_blockers(blockers));
  }
  job.suspend_refused.clear();
  job.resuming = false;
  job.paused = true;
  job.suspend_requested = true;
  job.suspend_path = "memory";
  for (std::uint64_t key : job.processes) apply(job, processes_.at(key));
  return view(job, now_ns);
}

}  // namespace gpushare::coord::server
