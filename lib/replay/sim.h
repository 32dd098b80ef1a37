// The replay's state, shared by its event loop (replay.cc) and its
// policies (policies.cc); not a public interface.
//
// Everything is indexed: jobs by their place in the trace, GPUs by a flat
// id, nodes by their place in the cluster. A GPU records the jobs on it,
// which one (if any) owns it as production, which job reserved it, and the
// sum of its jobs' utilisation and memory. Counts the policies ask for at
// every decision (empty GPUs per node and in all) are kept up to date as
// jobs come and go, so a decision that cannot succeed costs O(1).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "replay/interference_model.h"
#include "replay/replay.h"

namespace gpushare::replay {

enum class JobState : std::uint8_t { kPending, kQueued, kRunning, kDone };

struct SimJob {
  const TraceJob* trace = nullptr;
  int tenant = 0;
  int gpus = 1;
  double util = 0.6;
  double mem_gib = 1;
  double batch_ms = 100;
  JobState state = JobState::kPending;
  bool production = true;
  bool timesliced = false;
  double remaining_s = 0;  ///< work left, in seconds at full speed
  double rate = 1.0;
  double start_s = -1, end_s = -1;
  double prod_wall_s = 0, prod_work_s = 0;  ///< while production
  bool ever_reserved = false;
  std::vector<std::uint32_t> on;  ///< its GPUs while running
  std::vector<std::uint32_t> reserved;
};

struct SimGpu {
  std::uint32_t node = 0;
  std::int32_t owner = -1;        ///< production (or exclusive) job
  std::int32_t reserved_by = -1;  ///< antman: a production job's reservation
  bool timesliced = false;
  double util = 0, mem_gib = 0;
  std::vector<std::int32_t> jobs;
};

using GpuFilter = std::function<bool(const SimGpu&)>;

struct Sim {
  ReplayOptions options;
  bool multi_node = true;
  double gpu_mem_gib = 16;
  std::vector<SimJob> jobs;
  std::vector<SimGpu> gpus;
  std::vector<std::vector<std::uint32_t>> node_gpus;
  std::vector<int> node_empty;  ///< GPUs with no job and no reservation
  std::int64_t empty = 0;
  std::int64_t unowned = 0;  ///< GPUs with no owner and no reservation
  std::int64_t busy = 0;     ///< GPUs with at least one job
  std::int64_t open = 0;     ///< GPUs under the opportunistic threshold M
  int largest_node = 0;

  /// Queued jobs in submit order: one queue, or one per tenant (yarn-cs).
  std::vector<std::deque<std::int32_t>> queues;
  std::vector<std::int64_t> quota;     ///< per tenant
  std::vector<std::int64_t> prod;      ///< production + reserved GPUs per tenant
  std::vector<std::int32_t> reserver;  ///< per tenant: its reserving job or -1
  std::vector<std::int64_t> waiting;   ///< queued jobs per tenant
  /// Per tenant, while it has jobs waiting: seconds, and effective
  /// GPU-seconds received (GPUs * speed), for fairness.
  std::vector<double> backlog_s, backlog_gpu_s;
  std::vector<double> tenant_gpu_s;       ///< effective GPU-seconds per tenant, whole run
  std::vector<std::string> tenant_names;  ///< by tenant index
  double work_gpu_s = 0;                  ///< effective GPU-seconds done, all jobs
  std::vector<std::int32_t> running;
  double now = 0;
  /// The next time a policy wants to look again (antman conversions).
  double timer = 0;
  ReplayMetrics metrics;

  /// k GPUs passing `ok`: on the node with the fewest that fit (then the
  /// lowest), else over as few nodes as possible; within a node the
  /// lowest-loaded first. Empty when there are not k.
  /// With `least_loaded`, one GPU is the least loaded anywhere (AntMan's
  /// opportunistic rule) rather than on the best-fitting node.
  std::vector<std::uint32_t> choose(int k, const GpuFilter& ok, bool least_loaded = false) const;
  /// Whether k empty GPUs exist where a job may use them.
  bool fits_empty(int k) const;

  void start(std::int32_t j, const std::vector<std::uint32_t>& on, bool production,
             bool timesliced);
  void finish(std::int32_t j);
  void reserve(std::int32_t j, const std::vector<std::uint32_t>& on);
  void unreserve(std::int32_t j);
  /// Makes a running opportunistic job the owner of its GPUs.
  void upgrade(std::int32_t j);
  /// Moves running job j from GPU `from` to the empty GPU `to`.
  void move(std::int32_t j, std::uint32_t from, std::uint32_t to);

 private:
  void attach(std::int32_t j, std::uint32_t g);
  void detach(std::int32_t j, std::uint32_t g);
  void count_empty(std::uint32_t g, int sign);
};

/// One scheduling pass of the options' policy at `sim.now`.
void schedule(Sim& sim);

/// antman, for one queued job, as a pass offers it (Algorithm 1 for one
/// job: production within quota, else a gang reservation; opportunistic on
/// GPUs under M when over quota or queued too long). True if it started.
/// For the test that holds the policy against the placer.
bool offer_antman_once(Sim& sim, std::int32_t j);

/// The metrics of a finished replay (output.cc).
ReplayMetrics summarise(const Sim& sim, double busy_gpu_s, double frag_gpu_s);

}  // namespace gpushare::replay
