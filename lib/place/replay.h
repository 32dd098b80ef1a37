// Trace replay: run a job trace through the placer, over simulated time,
// and measure what the policy gives (reference placement.md §4).
//
// The model, kept deliberately small and stated in full in
// gpushare-place(1):
//
// - Jobs arrive at their submit times into one FIFO queue. At every arrival
//   or completion, the first `window` queued jobs are offered to the placer
//   in order; each placed job starts at once.
// - "exclusive": every job is production and nothing is reserved, so a GPU
//   runs one job and jobs that do not fit wait (a YARN-CS-like baseline).
//   "antman": jobs are "auto" against per-tenant quotas; within quota they
//   are production (and reserve GPUs when they fit only in part), over quota
//   they share GPUs opportunistically.
// - Speed: a production job runs at full speed, as AntMan's local
//   coordinator keeps it. On a GPU whose production job uses utilisation U,
//   k opportunistic jobs share the remaining 1 - U equally (1/k each without
//   a production job). A job on several GPUs runs at its slowest GPU's rate.
//   Each job adds U to its GPUs' utilisation as the placer sees it.
// - Running jobs are never moved, paused or upgraded.
//
// Metrics, defined as in the Alibaba v2020 simulator: JCT = end - submit,
// wait = start - submit, makespan = last end - first submit, gpu_util =
// GPU-seconds with at least one job / (GPUs * makespan), frag_gpus = the
// time-weighted mean number of GPUs free of production jobs on nodes that
// have fewer such GPUs than the median request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "place/cluster.h"
#include "place/trace.h"

namespace gpushare::place {

enum class ReplayPolicy { kExclusive, kAntman };

std::string_view to_string(ReplayPolicy policy);
std::optional<ReplayPolicy> parse_replay_policy(std::string_view text);

struct ReplayOptions {
  ReplayPolicy policy = ReplayPolicy::kAntman;
  /// Sum of the tenants' quotas as a share of the cluster's GPUs, split
  /// evenly between the trace's tenants (antman).
  double quota_share = 1.0;
  /// U: the utilisation each job puts on its GPUs.
  double job_util = 0.6;
  /// Queued jobs offered to the placer at each event.
  std::size_t window = 64;
  /// antman: an auto job queued this long runs opportunistic.
  std::optional<std::chrono::nanoseconds> queue_threshold;
};

struct ReplayMetrics {
  std::string policy;
  double avg_jct_s = 0;
  double p95_jct_s = 0;
  double makespan_s = 0;
  double avg_wait_s = 0;
  double gpu_util = 0;
  double frag_gpus = 0;
  std::int64_t ot_jobs = 0;       ///< jobs that started opportunistic
  std::int64_t reservations = 0;  ///< jobs that held a reservation at some point
  std::int64_t jobs = 0;          ///< jobs replayed
  std::int64_t skipped = 0;       ///< jobs larger than the cluster can ever hold
};

/// Replays `trace` on the nodes and GPUs of `cluster` (its jobs,
/// reservations, utilisation and tenants are not used: the replay starts
/// from an idle cluster with one tenant per trace tenant).
Result<ReplayMetrics> replay(const Cluster& cluster, const std::vector<TraceJob>& trace,
                             const ReplayOptions& options);

/// "policy,avg_jct,p95_jct,makespan,avg_wait,gpu_util,frag_gpus,ot_jobs,
/// reservations,jobs,skipped"
std::string replay_csv_header();
std::string replay_csv(const ReplayMetrics& metrics);
/// The same as one JSON record (kind "replay").
std::string replay_json(const ReplayMetrics& metrics);

}  // namespace gpushare::place
