// A job's side of the driver's process checkpoint in the registry: the work
// under way (migrating, suspending, resuming), its end, and what a
// migration changes (migrate.h runs the driver's calls).
//
// What a migration changes. The driver's restore maps every device a
// process checkpointed onto one it sees; to move a job from GPU A to GPU B
// the coordinator swaps the two (migrate.cc), so each process now finds B
// at the CUdevice ordinal where it found A, and A where it found B. Its
// control block is indexed by ordinal, so its limits page and telemetry
// stay where they are; what changes is the UUID behind each ordinal, in the
// process's registration and so in every view, and the job's limit per
// UUID, which follows its memory (A's limit is now B's).
#include <algorithm>
#include <utility>

#include "coord/server/registry/authorize.h"
#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

Result<const Job*> Registry::find_for(std::string_view selector, const Caller& caller,
                                      std::string* reason) const {
  Result<Job*> found = resolve(selector, reason, &caller);
  if (!found) return found.error();
  if (Status ok = may_act(caller, policy_, (*found)->id, (*found)->uid); !ok) {
    if (reason != nullptr) *reason = kReasonDenied;
    return ok.error();
  }
  return static_cast<const Job*>(*found);
}

void Registry::begin_checkpoint_work(std::uint64_t id, CheckpointWork work) {
  auto found = jobs_.find(id);
  if (found == jobs_.end()) return;
  found->second.checkpoint_work = work;
  found->second.checkpoint_error.clear();
}

void Registry::end_checkpoint_work(std::uint64_t id, const std::string& from, const std::string& to,
                                   std::int64_t elapsed_ms, const std::string& error) {
  auto found = jobs_.find(id);
  if (found == jobs_.end()) return;  // it ended meanwhile
  Job& job = found->second;
  CheckpointWork work = std::exchange(job.checkpoint_work, CheckpointWork::kNone);
  job.checkpoint_error = error;
  if (!error.empty()) return;
  switch (work) {
    case CheckpointWork::kMigrating: {
      job.migration_ms = elapsed_ms;
      for (std::uint64_t key : job.processes) {
        for (DeviceRegistration& device : processes_.at(key).devices) {
          if (device.uuid == from) {
            device.uuid = to;
          } else if (device.uuid == to) {
            device.uuid = from;
          }
        }
      }
      auto a = std::find_if(job.devices.begin(), job.devices.end(),
                            [&](const JobDevice& d) { return d.uuid == from; });
      auto b = std::find_if(job.devices.begin(), job.devices.end(),
                            [&](const JobDevice& d) { return d.uuid == to; });
      if (a != job.devices.end() && b != job.devices.end()) {
        std::swap(a->mem_limit_bytes, b->mem_limit_bytes);
        std::swap(a->start_limit_bytes, b->start_limit_bytes);
      } else if (a != job.devices.end()) {
        a->uuid = to;  // a job that registered only A (cannot happen: it sees both)
      }
      break;
    }
    case CheckpointWork::kSuspending:
      job.checkpointed = true;
      job.suspend_path = "checkpoint";
      break;
    case CheckpointWork::kResuming:
      job.checkpointed = false;
      break;
    case CheckpointWork::kNone:
      break;
  }
  for (std::uint64_t key : job.processes) apply(job, processes_.at(key));
}

}  // namespace gpushare::coord::server
