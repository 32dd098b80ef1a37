// The coordinator's registry: every job on the node, its control block, and
// the rules for finding, showing and changing jobs. No I/O beyond the shared
// pages, so every rule is unit-testable.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "coord/server/authorize.h"
#include "coord/server/compute_control.h"
#include "coord/server/control_block_owner.h"
#include "coord/contract/protocol.h"

namespace gpushare::coord {

/// A job is "stale" when its telemetry has not moved for this long (it is
/// stopped, or stuck in a way that stops its client thread).
inline constexpr std::uint64_t kStaleAfterNs = 2'000'000'000;

/// The largest id a re-registering job may ask to keep.
inline constexpr std::uint64_t kMaxIdHint = 1u << 31;

/// Why a request was refused, for the error reply's "reason".
inline constexpr const char* kReasonUnknownJob = "unknown-job";
inline constexpr const char* kReasonAmbiguous = "ambiguous-job";
inline constexpr const char* kReasonDenied = "permission-denied";
inline constexpr const char* kReasonInvalid = "invalid-value";
inline constexpr const char* kReasonInternal = "internal";
/// Issue 11: the job holds memory a suspend cannot move.
inline constexpr const char* kReasonNotSuspendable = "not-suspendable";

/// What the coordinator decided for a job, kept in its state file so that a
/// restarted coordinator restores it when the job registers again.
struct Decision {
  std::uint64_t id = 0;
  uid_t uid = 0;
  pid_t pid = 0;
  std::string name;
  std::uint32_t qos = kQosProduction;
  bool paused = false;
  std::vector<std::uint64_t> mem_limit_bytes;  ///< per device, in registration order
  std::uint64_t compute_cap_ppm = kNoLimit;
};

struct Job {
  std::uint64_t id = 0;
  std::string name;
  pid_t pid = 0;
  uid_t uid = 0;
  std::vector<DeviceRegistration> devices;  ///< requested_limit_bytes: the start limit
  std::unique_ptr<ControlBlock> block;
  std::uint64_t compute_cap_ppm = kNoLimit;  ///< the static cap (compute=N%)
  ComputeJobOutput compute;                  ///< the controller's last word (first device)
  std::string compute_phase;
  std::string suspend_refused;  ///< issue 11: why the job refused its last suspend
  bool resuming = false;        ///< issue 11: launches held until the job is back
};

class Registry {
 public:
  explicit Registry(Policy policy) : policy_(std::move(policy)) {}

  /// Registers a job for `peer` (its pid and uid come from the socket).
  /// The returned block's descriptors are to be sent, then closed.
  Result<Job*> add(const RegisterRequest& request, const Caller& peer);
  /// Forgets a job; false when there was none with this id.
  bool remove(std::uint64_t id);
  const Job* find(std::uint64_t id) const;
  std::size_t size() const { return jobs_.size(); }

  std::vector<JobView> list(std::uint64_t now_ns) const;
  NodeView node(std::uint64_t now_ns) const;
  /// The request's failure reason goes to `reason` (one of kReason*).
  Result<JobView> show(std::string_view selector, std::uint64_t now_ns, std::string* reason) const;
  Result<JobView> set(const SetRequest& request, const Caller& caller, std::uint64_t now_ns,
                      std::string* reason);
  Result<JobView> pause(const PauseRequest& request, const Caller& caller, std::uint64_t now_ns,
                        std::string* reason);
  /// Issue 11 (server/suspend.cc): asks the job to move its device memory
  /// to the host; refused when it holds memory that cannot move.
  Result<JobView> suspend(const SuspendRequest& request, const Caller& caller,
                          std::uint64_t now_ns, std::string* reason);

  const Policy& policy() const { return policy_; }

  /// Every registered job, for the compute loop (which writes their
  /// compute limits and its view of them).
  template <class Function>
  void for_each_job(Function&& function) {
    for (auto& [id, job] : jobs_) function(job);
  }

  /// Decisions of an earlier coordinator. A job that registers again from
  /// the same process (uid and pid) with its old id gets them back: its
  /// limits, class, name and pause. An id remembered for one uid is never
  /// given to another (an id hint is only honoured for its owner).
  void remember(std::vector<Decision> decisions);
  /// The decisions in force now, one per registered job, for the state file.
  std::vector<Decision> decisions() const;

 private:
  /// JOB is an id, then a pid, then a name. A name is looked up among the
  /// caller's own jobs first, so another user cannot make it ambiguous by
  /// copying it; otherwise it must be unique.
  Result<Job*> resolve(std::string_view selector, std::string* reason,
                       const Caller* caller = nullptr) const;
  JobView view(const Job& job, std::uint64_t now_ns) const;

  Policy policy_;
  std::map<std::uint64_t, Job> jobs_;  // by id, so lists come in id order
  struct Device {
    std::string uuid;
    std::uint64_t mem_total_bytes;
  };
  std::vector<Device> devices_;  // devices of registered jobs, in the order first seen
  std::map<std::uint64_t, Decision> remembered_;  // by id, from an earlier coordinator
  std::uint64_t next_id_ = 1;

  void learn_devices();
};

/// A memory limit as `set` takes it, for one device: a size, a percentage
/// of the device, or "none".
Result<std::uint64_t> resolve_limit(std::string_view text, std::uint64_t mem_total_bytes);

}  // namespace gpushare::coord
