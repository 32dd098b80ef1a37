// The interposer's settings, read once from the environment at load time.
// Plain data with fixed buffers: the interposer may not use libstdc++.
#pragma once

#include <cstdint>

#include "vocab/job.h"
#include "vocab/size.h"

namespace gpushare::interpose {

enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

struct Settings {
  bool disabled = false;  ///< GPUSHARE_DISABLE=1: pass everything through
  LogLevel log_level = LogLevel::kError;
  Qos qos = kQosProduction;
  /// GPUSHARE_SPILL=off: an opportunistic job's allocations stay device
  /// memory (a hard wall, as before spill existed); on (the default): managed.
  bool spill = true;
  /// GPUSHARE_SUSPENDABLE=on (gpushare-run --suspendable): plain device
  /// allocations are backed by the VMM API so that `gpushare-ctl suspend`
  /// can free them (vmm_backing.h); off (the default): ordinary memory.
  bool suspendable = false;
  /// GPUSHARE_LAUNCH_QUEUE=on (gpushare-run --launch-queue): a launch the
  /// gate would hold is queued and the call returns (compute/launch_queue.h);
  /// off (the default): the gate holds the calling thread.
  bool launch_queue = false;
  /// GPUSHARE_MEM_LIMIT as parsed, handed at load to the job's limits'
  /// owner (coord/job/limits.h), which resolves it per device; nothing
  /// else reads it.
  bool has_mem_limit = false;
  SizeSpec mem_limit;
  /// GPUSHARE_COMPUTE: a static cap on the share of GPU time; kNoLimit: none.
  std::uint64_t compute_cap_ppm = kNoLimit;
  /// GPUSHARE_DEBUG non-empty: the coordinator client logs too.
  bool debug_client = false;
  char job_name[kMaxJobNameBytes + 1] = {};
  char socket_path[108] = {};
  /// GPUSHARE_LAUNCHED_FOR non-empty: the job was launched for a coordinator
  /// (by gpushare-run or the Slurm hooks) and says so when none answers.
  bool launched_for_coordinator = false;
  /// GPUSHARE_TREE: the job's tree file (tree.cc); empty when unset.
  char tree_path[128] = {};
  /// GPUSHARE_COMPUTE_TRACE: where the compute trace goes, "%p" for the
  /// pid (compute/compute_trace.h); empty: no trace.
  char compute_trace_path[256] = {};
  /// Non-empty when a setting is invalid: CUDA initialisation then fails
  /// with this message instead of running unlimited.
  char error[320] = {};
};

using GetEnvFunction = const char* (*)(const char*);

/// Reads the job's environment (vocab/env.h) once: GPUSHARE_DISABLE, _LOG,
/// _QOS, _MEM_LIMIT, _SPILL, _SUSPENDABLE, _LAUNCH_QUEUE, _COMPUTE, _COMPUTE_TRACE, _JOB, _TREE,
/// _SOCKET and _DEBUG. Nothing else in the job reads them (tree.cc's constructor writes
/// GPUSHARE_TREE, before this runs, when the job's first process has none).
/// Never fails: errors land in `error`.
void read_settings(GetEnvFunction getenv, Settings* settings);

}  // namespace gpushare::interpose
