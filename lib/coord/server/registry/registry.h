// The coordinator's registry: every job on the node, its control block, and
// the rules for finding, showing and changing jobs. No I/O beyond the shared
// pages, so every rule is unit-testable.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "coord/contract/protocol.h"
#include "coord/server/registry/authorize.h"
#include "coord/server/registry/compute_output.h"
#include "coord/server/registry/control_block_owner.h"
#include "coord/server/registry/hold_track.h"
#include "coord/server/registry/tree_identity.h"

namespace gpushare::coord::server {

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
/// The job holds memory a suspend cannot move.
inline constexpr const char* kReasonNotSuspendable = "not-suspendable";
/// The driver cannot move the job (migrate.h): another chip type, no room
/// on the target, a device the job does not see, memory it cannot take.
inline constexpr const char* kReasonNotMovable = "not-movable";
/// Another checkpoint operation is under way.
inline constexpr const char* kReasonBusy = "busy";

/// Work the coordinator does on a job through the driver's process
/// checkpoint (migrate.h), one at a time.
enum class CheckpointWork { kNone, kMigrating, kSuspending, kResuming };

/// What the coordinator decided for a job, kept in its state file so that a
/// restarted coordinator restores it when the job registers again.
struct Decision {
  std::uint64_t id = 0;
  uid_t uid = 0;
  pid_t pid = 0;  ///< the job's first process
  std::string name;
  std::uint32_t qos = kQosProduction;
  bool paused = false;
  std::vector<std::uint64_t> mem_limit_bytes;  ///< per device of the job, in its order
  std::uint64_t compute_cap_ppm = kNoLimit;
};

/// One registered process of a job: its connection's control block. Each
/// process has its own pages (limits written by the coordinator, telemetry
/// by the process); the job's limits, class and pause are written into all
/// of them.
struct Process {
  std::uint64_t key = 0;     ///< the registry's own, unique among processes
  std::uint64_t job_id = 0;  ///< the job it belongs to
  pid_t pid = 0;
  std::vector<DeviceRegistration> devices;  ///< as it registered them
  std::unique_ptr<ControlBlock> block;
  std::uint64_t compute_cap_ppm = kNoLimit;  ///< the job's static cap, for the compute loop
  ComputeJobOutput compute;                  ///< the controller's last word (first device)
  std::string compute_phase;
  HoldTrack hold;  ///< its hold counters over the last window (the compute loop samples)
  /// A rank of a production job on several GPUs (compute/gang.h): its mean
  /// collective span and wait (ms per collective; < 0: not measured), and
  /// whether the other ranks wait for it; the compute loop sets them.
  double collective_ms = -1;
  double collective_wait_ms = -1;
  bool waited_for = false;
  /// An opportunistic process beside a gang's waiting rank: the rank's pid
  /// while it uses part of the rank's wait (gang.h, harvest_trial), else 0.
  std::int64_t uses_wait_of_pid = 0;
};

/// Whether a process uses its device `index` (its CUdevice ordinal, the
/// index of its registration and pages): it holds a context or memory
/// there (control_block.h, "The GPUs a process uses").
bool uses_device(const Process& process, std::size_t index);
/// Whether the compute loop counts a process on its device `index`: where
/// it uses it; a process that uses none of its devices yet (starting, or a
/// launcher that never touches a GPU) is counted on all of them, so that
/// its first launches anywhere meet a controller that already holds it.
bool counts_on(const Process& process, std::size_t index);
/// The first device a process is counted on (its view's compute figures
/// come from there); 0 when it has none.
std::size_t first_counted(const Process& process);

/// A device of a job: the union, by UUID, of its processes' devices.
struct JobDevice {
  std::string uuid;
  std::uint64_t mem_total_bytes = 0;
  std::uint64_t start_limit_bytes = kNoLimit;  ///< the start limit (its first process's)
  std::uint64_t mem_limit_bytes = kNoLimit;        ///< the limit in force, for the whole tree
};

/// A job: the process tree of one gpushare-run. Its
/// processes are those that proved membership of one tree file
/// (tree_identity.h); a process without a proof is a job of its own. The
/// job lives while any of its processes is registered.
struct Job {
  std::uint64_t id = 0;
  std::string name;
  uid_t uid = 0;
  std::uint32_t qos = kQosProduction;
  bool paused = false;
  std::uint64_t compute_cap_ppm = kNoLimit;  ///< the static cap (compute=N%)
  std::vector<JobDevice> devices;            ///< in the order first registered
  std::vector<std::uint64_t> processes;      ///< process keys, in registration order
  TreeProof tree;                            ///< invalid: a job of one process
  bool suspend_requested = false;  ///< asked of every process (suspend_requests.cc)
  std::string suspend_refused;     ///< why the job refused its last suspend
  bool resuming = false;           ///< launches held until the job is back
  /// Paused by the coordinator itself, apart from `paused` (the operator's,
  /// a suspend's, the enforcer's): its memory is mostly on the host while
  /// production runs (memory/host_pause.h). Never saved: each coordinator
  /// decides it anew.
  bool host_paused = false;
  /// The driver's process checkpoint (migrate.h, memory/checkpoint_jobs.cc):
  /// the work under way; whether the job is suspended through it (0 bytes on
  /// the GPU, its context included); how its last suspend went ("checkpoint"
  /// or "memory"); its last migration's time; why the last migration, or
  /// resume from a checkpoint, failed (empty: it did not).
  CheckpointWork checkpoint_work = CheckpointWork::kNone;
  bool checkpointed = false;
  std::string suspend_path;
  std::int64_t migration_ms = -1;
  std::string checkpoint_error;
};

class Registry {
 public:
  explicit Registry(Policy policy) : policy_(std::move(policy)) {}

  /// Registers a process for `peer` (its pid and uid come from the
  /// socket). With a valid `tree` it joins the job of that tree, when one
  /// of the same uid is registered; otherwise it starts a job. The
  /// returned block's descriptors are to be sent, then closed.
  Result<Process*> add(const RegisterRequest& request, const Caller& peer,
                       TreeProof tree = TreeProof());
  /// Forgets a process (by key), and its job with its last process; false
  /// when there was no such process.
  bool remove(std::uint64_t process_key);
  /// Takes back the id of a job that was never told it (its registration
  /// could not be answered, and the job is gone), when it was the last id
  /// given: the next job gets it, so ids spent on nothing leave no gaps.
  void give_back_id(std::uint64_t id);
  const Job* find(std::uint64_t id) const;
  const Process* process(std::uint64_t key) const;
  /// Pauses or resumes every process of a job (the enforcer's pause);
  /// false when there is no such job.
  bool set_paused(std::uint64_t id, bool paused);
  /// Sets or clears the coordinator's own pause (Job::host_paused), which
  /// leaves `paused` alone; false when there is no such job.
  bool set_host_paused(std::uint64_t id, bool paused);
  /// Registered jobs (not processes).
  std::size_t size() const { return jobs_.size(); }

  std::vector<JobView> list(std::uint64_t now_ns) const;
  NodeView node(std::uint64_t now_ns) const;
  /// The request's failure reason goes to `reason` (one of kReason*).
  Result<JobView> show(std::string_view selector, std::uint64_t now_ns, std::string* reason) const;
  Result<JobView> set(const SetRequest& request, const Caller& caller, std::uint64_t now_ns,
                      std::string* reason);
  Result<JobView> pause(const PauseRequest& request, const Caller& caller, std::uint64_t now_ns,
                        std::string* reason);
  /// (memory/suspend_requests.cc) Asks the job to move its device memory
  /// to the host; refused when it holds memory that cannot move.
  Result<JobView> suspend(const SuspendRequest& request, const Caller& caller,
                          std::uint64_t now_ns, std::string* reason);

  const Policy& policy() const { return policy_; }

  /// (memory/checkpoint_jobs.cc) The job `selector` names, when `caller`
  /// may act on it; the refusal's reason goes to `reason`.
  Result<const Job*> find_for(std::string_view selector, const Caller& caller,
                              std::string* reason) const;
  /// (memory/checkpoint_jobs.cc) Marks checkpoint work under way on a job
  /// (its view shows it: migrating, suspending, resuming).
  void begin_checkpoint_work(std::uint64_t id, CheckpointWork work);
  /// (memory/checkpoint_jobs.cc) The end of that work. A migration that
  /// succeeded moves the job from device `from` to `to` (UUIDs): each of
  /// its processes now finds `to` where it found `from` and the other way
  /// round (the driver's restore swaps them), and its limits follow its
  /// memory. `error` empty: it succeeded.
  void end_checkpoint_work(std::uint64_t id, const std::string& from, const std::string& to,
                           std::int64_t elapsed_ms, const std::string& error);
  /// (memory/checkpoint_jobs.cc) A job view, for requests answered outside
  /// the registry.
  JobView view_of(const Job& job, std::uint64_t now_ns) const { return view(job, now_ns); }

  /// (memory/suspend_requests.cc) Fills the suspend state, suspended bytes and
  /// refusal into a job's view; the note for a resume that changes
  /// nothing (empty when it does); one tick of suspend bookkeeping.
  void suspend_view(const Job& job, JobView* view) const;
  std::string resume_note(const Job& job) const;
  void suspend_tick(const std::function<void(const std::string&)>& note);

  /// Every registered job, and its processes by key (process()).
  template <class Function>
  void for_each_job(Function&& function) const {
    for (const auto& [id, job] : jobs_) function(job);
  }

  /// Every registered process, for the compute and memory loops (which
  /// write their compute limits and residency targets, per process).
  template <class Function>
  void for_each_process(Function&& function) {
    for (auto& [key, process] : processes_) function(process);
  }

  /// Decisions of an earlier coordinator. A job whose first process
  /// (uid and pid) registers again with its old id gets them back: its
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
  bool job_counts_on(const Job& job, const std::string& uuid) const;
  void rank_view(const Job& job, JobView* view) const;
  Job& start_job(const RegisterRequest& request, const Caller& peer, TreeProof tree);
  Job* tree_job(const TreeProof& tree, uid_t uid);
  void restore(Job& job, const Decision& decision);
  /// Writes the job's limits, class, pause and cap into one process's pages.
  void apply(const Job& job, Process& process) const;

  Policy policy_;
  std::map<std::uint64_t, Job> jobs_;           // by id, so lists come in id order
  std::map<std::uint64_t, Process> processes_;  // by key
  std::uint64_t next_key_ = 1;
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

}  // namespace gpushare::coord::server
