// The coordinator's own view of what jobs hold.
//
// The interposer keeps a job's limit from inside the job, and so it is
// cooperative: a job can replace the limits page in its own memory (a
// private mapping over it with MAP_FIXED), forge its telemetry, or reach
// the device in ways no interposer sees. The coordinator must not be blind
// to that. Once a second it asks the driver's management library (NVML,
// the simulator's on the simulated GPU) how much device memory each job's
// processes hold on each device, compares their sum with the job's limit
// (a job is a process tree, and its limit is the tree's), and acts on a job
// that holds more:
//
//   warn   a warning in the coordinator's log, and the job marked as
//          violating in ls, show and watch (every action does these);
//   pause  also pauses the job (its launches wait), until someone with the
//          right to resumes it (gpushare-ctl resume);
//   kill   also sends each of the job's processes SIGKILL.
//
// A job is a violator only when it holds more than its limit plus a
// tolerance (the larger of 64 MiB and 1/32 of the limit: drivers round
// allocations up and count memory the interposer cannot attribute), at two
// checks in a row (a free may be on its way). The mark goes when the job is
// back under its limit; the action is taken once per violation.
//
// A limit lowered below what a job holds (gpushare-ctl set) destroys
// nothing: the interposer refuses the job's next allocations until it is
// back under, but what it held stays. Only memory obtained past the
// interposer is a violation, so a lowered limit gets an allowance: what the
// job held when the limit dropped (as seen here, at most the limit before),
// which then only shrinks, following the job's frees (the larger of what
// NVML sees and what the job reports it reserves, so a spill to the host
// does not shrink it), and never below the limit. A job that grows past
// its allowance got that memory past the interposer. A forged report can
// keep the allowance where it was, never raise it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "coord/contract/protocol.h"

namespace gpushare::coord::server {

class Registry;

enum class ViolationAction { kWarn, kPause, kKill };

Result<ViolationAction> parse_violation_action(std::string_view text);
const char* violation_action_name(ViolationAction action);

/// What each process holds on a device, seen from outside the jobs.
class UsageSource {
 public:
  virtual ~UsageSource() = default;
  /// Bytes per pid on the device with this UUID; false when it cannot tell.
  virtual bool usage(const std::string& uuid, std::map<pid_t, std::uint64_t>* by_pid) = 0;
};

/// NVML (libnvidia-ml.so.1, the simulated one where the library path puts
/// it first): per-process usage of compute processes. An Error says why it
/// cannot be used (no NVML, nvmlInit failed).
Result<std::unique_ptr<UsageSource>> open_nvml_usage();

/// The tolerance above a limit before a job is a violator.
std::uint64_t violation_tolerance(std::uint64_t limit_bytes);

class Enforcer {
 public:
  using Sink = std::function<void(const std::string&)>;
  Enforcer(ViolationAction action, std::unique_ptr<UsageSource> source, Sink warning);

  /// One check of every registered job (see the file comment).
  void check(Registry& registry, std::uint64_t now_ns);
  /// Adds the violation of each job that is a violator now to its view.
  void annotate(std::vector<JobView>& jobs) const;
  void annotate(JobView& job) const;

 private:
  /// What a job may hold on one device (see the file comment).
  struct Allowance {
    std::uint64_t limit = 0;  ///< the limit when last seen
    std::uint64_t bytes = 0;  ///< at least limit
  };
  struct State {
    int over_checks = 0;  ///< consecutive checks over the limit
    bool acted = false;   ///< the action was taken for this violation
    ViolationView violation;
    std::map<std::string, Allowance> allowances;  ///< by device UUID
  };
  /// Updates the job's allowance on a device from this check's view.
  static std::uint64_t allowance(State& state, const JobDeviceView& device, std::uint64_t observed);
  ViolationAction action_;
  std::unique_ptr<UsageSource> source_;
  Sink warning_;
  std::map<std::uint64_t, State> states_;  ///< by job id
};

}  // namespace gpushare::coord::server
