// A training-like job on the CUDA driver API: a working set, an iteration
// loop of spin kernels with one synchronisation per iteration, optional
// memory growth and shrinkage inside each iteration, and a checksum of its
// data verified at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/kernel_trace.h"
#include "common/result.h"

namespace gpushare::workload {

enum class AllocKind { kPlain, kManaged, kAsync };

struct WorkloadOptions {
  int device = 0;
  std::uint64_t mem_bytes = 256ull << 20;
  std::uint64_t grow_bytes = 0;
  std::uint64_t verify_bytes = 64ull << 20;
  long iterations = 100;
  /// When > 0, run iterations until this many seconds have passed
  /// instead of a fixed count.
  double duration_s = 0;
  /// Host-side time per iteration (data loading, optimizer on the CPU)
  /// before its kernels are launched: the GPU is idle meanwhile.
  long host_us = 0;
  long kernels_per_iteration = 4;
  long kernel_us = 1000;
  unsigned blocks = 1;
  AllocKind alloc = AllocKind::kPlain;
  /// The working set is this many equal allocations (a framework's
  /// allocator holds many blocks, and memory spills whole allocations).
  long chunks = 1;
  /// When > 0, the data check also runs after every this many iterations.
  long verify_every = 0;
  /// When set, iterations stop once this file exists (checked once per
  /// iteration), whatever the count or duration says.
  std::string stop_file;
  /// When set, each iteration replays the next step of this trace (in a
  /// cycle) instead of kernels_per_iteration spins of kernel_us: every
  /// kernel a spin of its recorded duration, launched at its recorded
  /// offset from the step's first launch times launch_scale (at once when
  /// the job is behind), then one synchronisation.
  const KernelTrace* trace = nullptr;
  double launch_scale = 1.0;
  /// With a trace: what a launch that blocked (held by a gate, or by a
  /// full launch queue) does to the launches after it. false (the
  /// schedule): they keep their offsets from the step's start, so a job
  /// behind launches at once until it is on time again, as a program that
  /// prepared its work ahead. true (the host): the time between two
  /// launches is host work that starts when the earlier launch returns, so
  /// the block delays every launch after it, as in a framework driven by
  /// Python, whose next operator is dispatched only once the call returns.
  bool host_paced = false;
  /// A framework's start-up before the first iteration (not recorded as
  /// iterations): this many steps, each the first half of a step's
  /// kernels, a host pause of startup_pause_us with them queued (no
  /// synchronisation across it, as a library initialises or a module
  /// loads on a kernel's first launch), the other half, then a
  /// synchronisation (as an autotuning trial ends).
  long startup_steps = 0;
  long startup_pause_us = 300000;
  /// Synchronise after every this many iterations (the others end once
  /// their kernels are launched); with several, the job moves to the next
  /// every sync_switch_s seconds, in a cycle, at a synchronisation.
  std::vector<long> sync_every = {1};
  double sync_switch_s = 0;
  /// A rank of a data-parallel job (world_size > 1, or rank given): each
  /// iteration ends its kernels with an all-reduce of allreduce_bytes on
  /// communicator `comm` (the simulated GPU's all-reduce kernel, NCCL's
  /// stand-in; a real GPU refuses it), before the synchronisation.
  int rank = -1;  ///< -1: not a rank of a multi-process job
  int world_size = 1;
  std::uint64_t comm = 0;
  std::uint64_t allreduce_bytes = 0;
};

struct IterationSample {
  long iteration;
  double iteration_ms;  ///< host wall time: host work, launch, synchronisation if any
  double t_ms;          ///< CLOCK_MONOTONIC at its end, to line up jobs' records
  /// Between events at the start of the iterations since the last
  /// synchronisation and at this one's end; 0 when it did not synchronise.
  double gpu_ms;
  std::uint64_t mem_bytes;
  long sync_every;  ///< the synchronisation pattern the iteration ran under
  bool synced;      ///< it ended with a synchronisation
  /// With an all-reduce: host time from its launch to the end of the
  /// iteration's synchronisation (the all-reduce and what was queued
  /// before it); 0 without.
  double allreduce_wait_ms;
};

struct WorkloadResult {
  std::vector<double> iteration_ms;
  double elapsed_ms = 0;
  double startup_ms = 0;  ///< the start-up steps, before the first iteration
  double gpu_ms_total = 0;
  std::uint64_t peak_mem_bytes = 0;
  std::uint64_t verified_bytes = 0;
  std::uint64_t checksum = 0;
  long kernels = 0;
  long verifications = 0;  ///< data checks passed, the last one included
  long allreduces = 0;
};

/// The communicator id of a rendezvous name (FNV-1a, never 0): ranks that
/// name the same rendezvous meet.
std::uint64_t comm_of(const std::string& rendezvous);

/// Called after each iteration (for --per-iteration output).
using IterationCallback = std::function<void(const IterationSample&)>;

/// Runs the workload. A CUDA failure is an Error naming the call and the
/// result, e.g. "cuMemAlloc_v2(3221225472 bytes): CUDA_ERROR_OUT_OF_MEMORY";
/// a checksum mismatch names the offset.
Result<WorkloadResult> run_workload(const WorkloadOptions& options,
                                    const IterationCallback& on_iteration);

struct Summary {
  double iterations_per_s;
  double iteration_ms_mean;
  double iteration_ms_p99;
};

/// Mean and 99th percentile (nearest rank) of the iteration times.
Summary summarise(const WorkloadResult& result);

}  // namespace gpushare::workload
