// Suspend requests, their state in job views, and the tick (suspend.h).
#include "coord/server/suspend.h"

#include "coord/server/authorize.h"

namespace gpushare::coord {

namespace {

std::uint64_t job_state(const Job& job) {
  return job.block->telemetry().suspend_state.load(std::memory_order_relaxed);
}

std::string describe_job(const Job& job) {
  return "job " + std::to_string(job.id) + " '" + job.name + "'";
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

void suspend_view(const Job& job, JobView* view) {
  if (!job.block) return;
  const TelemetryPage& telemetry = job.block->telemetry();
  std::uint64_t state = job_state(job);
  if (job.block->suspend_requested()) {
    view->state = state == kSuspendSuspended ? "suspended" : "suspending";
  } else if (job.resuming || state == kSuspendSuspended || state == kSuspendResuming) {
    view->state = "resuming";
  }
  for (std::size_t i = 0; i < view->devices.size() && i < static_cast<std::size_t>(kMaxDevices);
       ++i) {
    std::uint64_t bytes = telemetry.suspended_bytes[i].load(std::memory_order_relaxed);
    JobDeviceView& device = view->devices[i];
    device.suspended_bytes = bytes;
    device.host_resident_bytes =
        device.host_resident_bytes + bytes < bytes ? kNoLimit : device.host_resident_bytes + bytes;
  }
  view->suspend_refused = job.suspend_refused;
}

std::string resume_note(const Job& job) {
  if (!job.block || job.block->suspend_requested()) return "";
  if (job.resuming) return "already resuming";
  if (!job.block->paused()) return "not paused or suspended: nothing to resume";
  return "";
}

void suspend_tick(Registry& registry, const std::function<void(const std::string&)>& note) {
  registry.for_each_job([&](Job& job) {
    if (!job.block) return;
    std::uint64_t state = job_state(job);
    if (job.block->suspend_requested() && state == kSuspendRefused) {
      job.suspend_refused = describe_blockers(
          job.block->telemetry().suspend_blockers.load(std::memory_order_relaxed));
      job.block->set_suspend_requested(false);
      job.block->set_paused(false);
      note("suspend of " + describe_job(job) + " refused by the job: " + job.suspend_refused);
    } else if (job.resuming && !job.block->suspend_requested() && state == kSuspendRunning) {
      job.resuming = false;
      job.block->set_paused(false);
      note(describe_job(job) + " resumed");
    }
  });
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
  if (job.block->suspend_requested()) {
    JobView unchanged = view(job, now_ns);
    unchanged.note = unchanged.state == "suspended" ? "already suspended" : "already suspending";
    return unchanged;
  }
  std::uint64_t blockers = job.block->telemetry().suspend_blockers.load(std::memory_order_relaxed);
  if (blockers != 0) {
    if (reason != nullptr) *reason = kReasonNotSuspendable;
    return make_error(describe_job(job) + " cannot be suspended: it holds " +
                      describe_blockers(blockers));
  }
  job.suspend_refused.clear();
  job.resuming = false;
  job.block->set_paused(true);
  job.block->set_suspend_requested(true);
  return view(job, now_ns);
}

}  // namespace gpushare::coord
