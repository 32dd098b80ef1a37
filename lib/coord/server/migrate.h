// The driver's process checkpoint, from the coordinator: Gandiva's
// migration (`gpushare-ctl migrate JOB --to GPU`) and a suspend that leaves
// nothing on the GPU.
//
// The CUDA driver (13 and later; 570 drivers have the calls) lets one
// process lock, checkpoint, restore and unlock another by pid
// (cuCheckpointProcess*): a checkpoint copies the process's device memory
// to host memory and releases everything it held on the GPU, its contexts
// included; a restore puts it back at the same addresses, on the same GPUs
// or, through pairs of UUIDs, on others of the same chip type. The job
// changes nothing and is asked nothing: the coordinator calls these on each
// of the job's processes. It loads libcuda.so.1 the first time it needs it
// (as the jobs do: on a simulated node, with LD_LIBRARY_PATH pointing at the
// simulator); without one, migrate is refused and suspend takes its older
// path (the interposer moves the memory, the context stays).
//
// What the driver requires, and so what migrate checks first, each a clear
// refusal with nothing changed: the target has the job's chip type (name,
// compute capability, SM count) and room for what the job holds (NVML);
// the job holds no IPC-exported memory; and every process of the job sees
// the target. That last one is CUDA_VISIBLE_DEVICES: the driver restores a
// process only onto GPUs it enumerated, and the pairs must name every GPU it
// checkpointed, so a move is a permutation of the GPUs the process sees:
// moving a job from A to B swaps A and B (its CUdevice 0, where it found A,
// is B after the move). A job that gpushare-run started without --gpu sees
// every GPU and can move; one started with --gpu N (CUDA_VISIBLE_DEVICES=N)
// sees one and cannot. (docs/memory.md, gpushare-ctl(1).)
//
// The calls block (a lock waits for the job's running driver calls, a
// checkpoint for its queued work and the copy), so they run on a thread of
// their own, one job at a time; the event loop shows the job migrating,
// suspending or resuming meanwhile and collects the outcome at its compute
// tick. Any step that fails is undone, process by process: a process moved
// already is checkpointed again and restored where it was, one checkpointed
// is restored in place, and every process locked is unlocked.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/result.h"
#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

/// libcuda.so.1's checkpoint calls and the few device queries migrate
/// needs; NVML's memory information of a device.
class CheckpointDriver {
 public:
  /// Loads the driver and NVML and initialises the driver; an error names
  /// what is missing.
  static Result<std::unique_ptr<CheckpointDriver>> open();
  ~CheckpointDriver();
  CheckpointDriver(const CheckpointDriver&) = delete;
  CheckpointDriver& operator=(const CheckpointDriver&) = delete;

  /// A GPU named by index (as this driver counts them) or UUID, as a UUID.
  Result<std::string> resolve_device(const std::string& name) const;
  /// Empty when both GPUs are of one chip type; else what differs.
  std::string chip_difference(const std::string& a, const std::string& b) const;
  /// Free bytes of a GPU (NVML); nullopt when unknown.
  std::optional<std::uint64_t> free_bytes(const std::string& uuid) const;

  // The process checkpoint; each returns the CUresult.
  int lock(pid_t pid, unsigned timeout_ms) const;
  int checkpoint(pid_t pid) const;
  /// Onto the GPUs the pairs (old UUID, new UUID) name; none: in place.
  int restore(pid_t pid, const std::vector<std::pair<std::string, std::string>>& pairs) const;
  int unlock(pid_t pid) const;
  /// The process's CUprocessState (0 running, 1 locked, 2 checkpointed,
  /// 3 failed); -1 when the driver cannot say (no such CUDA process).
  int state(pid_t pid) const;
  std::string error_name(int code) const;

 private:
  CheckpointDriver() = default;
  struct Table;
  std::unique_ptr<Table> table_;
};

/// One job's work through the driver, as planned on the event loop.
struct CheckpointPlan {
  std::uint64_t job_id = 0;
  CheckpointWork work = CheckpointWork::kNone;
  struct Step {
    pid_t pid = 0;
    std::vector<std::pair<std::string, std::string>> pairs;  ///< migrations only
  };
  std::vector<Step> processes;
  std::string from, to;  ///< migrations: the GPUs, by UUID
};

struct CheckpointOutcome {
  std::string error;  ///< empty: done
  std::int64_t elapsed_ms = 0;
};

/// Runs one plan at a time on a thread of its own.
class Checkpointer {
 public:
  explicit Checkpointer(bool enabled) : enabled_(enabled) {}
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  /// The driver, opened on first use; an error when it is off (serve
  /// --checkpoint off) or there is none (kept: it is not retried).
  Result<CheckpointDriver*> driver();
  bool busy() const { return running_; }
  std::uint64_t busy_job() const { return busy_job_; }
  /// Starts a plan; requires driver() and !busy().
  void start(CheckpointPlan plan);
  /// A finished plan and its outcome, once; nullopt while none finished.
  std::optional<std::pair<CheckpointPlan, CheckpointOutcome>> poll();

 private:
  bool enabled_;
  bool opened_ = false;
  std::unique_ptr<CheckpointDriver> driver_;
  Error open_error_{""};
  bool running_ = false;
  std::uint64_t busy_job_ = 0;
  std::thread worker_;
  std::atomic<bool> finished_{false};
  CheckpointPlan plan_;
  CheckpointOutcome outcome_;
};

/// Runs a plan through the driver, undoing what it did on a failure.
CheckpointOutcome run_plan(const CheckpointDriver& driver, const CheckpointPlan& plan);

/// Answers `migrate`: checks what the driver requires, then starts the
/// move (the job shows `migrating` until the compute tick collects it).
Result<JobView> start_migration(Registry& registry, Checkpointer& checkpointer,
                                const MigrateRequest& request, const Caller& caller,
                                std::uint64_t now_ns, std::string* reason);
/// A suspend through the driver's checkpoint, when it can take this job:
/// true with the answer in *answer; false: the caller takes the memory path.
/// A job being moved is refused here.
bool start_checkpoint_suspend(Registry& registry, Checkpointer& checkpointer,
                              const SuspendRequest& request, const Caller& caller,
                              std::uint64_t now_ns, std::string* reason, Result<JobView>* answer);
/// The resume of a job suspended through the checkpoint: true with the
/// answer in *answer; false when the job was not (the caller resumes it).
/// A job that a coordinator which died left locked or checkpointed (this
/// one did not do it) is found by asking the driver, and resumed too.
bool start_checkpoint_resume(Registry& registry, Checkpointer& checkpointer,
                             const PauseRequest& request, const Caller& caller,
                             std::uint64_t now_ns, std::string* reason, Result<JobView>* answer);
/// Collects finished work into the registry; the log line, if any.
std::optional<std::string> collect_checkpoint_work(Registry& registry, Checkpointer& checkpointer);

/// Migration as a policy (serve --migration-policy on; Gandiva's "vacated
/// GPUs"): when a production job uses a GPU that an opportunistic job holds
/// memory on, and another GPU of the node holds no job's memory, the
/// opportunistic job is moved there instead of being spilled or paused
/// beside production. One move at a time, looked at every 200 ms; a job the
/// driver would not move is not tried again for 10 s. Every decision, and
/// every refusal, is a line in the log.
class MigrationPolicy {
 public:
  explicit MigrationPolicy(bool enabled) : enabled_(enabled) {}
  /// The log line of a decision, if one was made.
  std::optional<std::string> tick(Registry& registry, Checkpointer& checkpointer,
                                  std::uint64_t now_ns);

 private:
  bool enabled_;
  std::uint64_t next_ns_ = 0;
  std::map<std::uint64_t, std::uint64_t> refused_until_;  ///< job id -> not before
};

}  // namespace gpushare::coord::server
