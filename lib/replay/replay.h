// Trace replay: a job trace through a scheduling policy over simulated
// time, and what the policy gives (reference placement.md §4). The model
// is stated in full in gpushare-place(1); in short:
//
// - Jobs arrive at their submit times. Each job has a GPU count and a
//   duration (its run time alone at full speed) from the trace, and a
//   utilisation, memory and mini-batch time drawn from a seeded
//   distribution (drawn in replay.cc), unless the options fix them.
// - A policy (policies.cc) decides at each event which queued jobs
//   start, where, and how they share; the interference model
//   (interference_model.h) turns what shares each GPU into each job's speed.
// - Policies: exclusive (global FIFO, a window of queued jobs offered in
//   order, whole GPUs), yarn-cs (per-tenant capacity queues, FIFO within a
//   queue, whole GPUs), gandiva (whole GPUs while they last, then packing
//   by profile, migration to defragment, time slicing) and antman
//   (Algorithm 1 with quotas, reservations, opportunistic jobs on GPUs
//   under M, upgrades and queue-too-long conversions, shared GPUs under
//   gpushare's control).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "place/cluster/cluster.h"
#include "replay/interference_model.h"
#include "replay/trace.h"

namespace gpushare::replay {

enum class ReplayPolicy { kExclusive, kYarnCs, kGandiva, kAntman };

std::string_view to_string(ReplayPolicy policy);
std::optional<ReplayPolicy> parse_replay_policy(std::string_view text);
/// Every policy, in the order a comparison prints them.
std::vector<ReplayPolicy> all_replay_policies();

struct ReplayOptions {
  ReplayPolicy policy = ReplayPolicy::kAntman;
  /// Sum of the tenants' quotas as a share of the cluster's GPUs, split
  /// evenly between the trace's tenants (yarn-cs capacities, antman quotas).
  double quota_share = 1.0;
  /// A fixed utilisation for every job instead of the distribution.
  std::optional<double> job_util;
  /// A fixed memory for every job, as a share of a GPU's, instead of the
  /// distribution.
  std::optional<double> job_mem_share;
  /// Queued jobs offered at each event (exclusive, gandiva, antman).
  std::size_t window = 64;
  /// antman: a job queued this long runs opportunistic.
  std::optional<double> queue_threshold_s;
  /// Seed of the job property distribution.
  std::uint64_t seed = 1;
  InterferenceModel model;
};

/// Jobs' completion times, for the JCT CDF and for tests.
struct ReplayJobResult {
  double submit_s = 0, start_s = 0, end_s = 0;
};

struct ReplayMetrics {
  std::string policy;
  double avg_jct_s = 0, p50_jct_s = 0, p95_jct_s = 0, p99_jct_s = 0;
  double avg_wait_s = 0, p90_wait_s = 0, p95_wait_s = 0;
  double makespan_s = 0;
  /// GPU-seconds with at least one job / (GPUs * makespan).
  double gpu_util = 0;
  /// GPU-seconds of work done (duration * GPUs * utilisation of finished
  /// jobs) / (GPUs * makespan): the computation the GPUs delivered.
  double gpu_compute = 0;
  /// Time-weighted mean of free GPUs on nodes with fewer free GPUs than the
  /// median request (weighted by GPUs, capped at a node's size).
  double frag_gpus = 0;
  /// Share of production jobs whose mini-batch grew by at most 10 ms.
  double prod_within_10ms = 0;
  /// Jain's index over the tenants that ever waited of (the GPUs they
  /// received on average while they had jobs waiting / their quota).
  double fairness = 0;
  /// Effective GPU-seconds of work done (GPUs * speed, integrated): equals
  /// the trace's GPU-seconds plus migrations' cost (not printed).
  double work_gpu_s = 0;
  std::int64_t ot_jobs = 0;              ///< jobs that started opportunistic
  std::int64_t upgrades = 0;             ///< opportunistic jobs made production
  std::int64_t conversions = 0;          ///< jobs run opportunistic for queueing too long
  std::int64_t reservations = 0;         ///< jobs that held a reservation at some point
  std::int64_t packed = 0;               ///< jobs started packed beside another
  std::int64_t timesliced = 0;           ///< jobs started time-slicing a GPU
  std::int64_t migrations = 0;           ///< jobs moved to defragment
  std::int64_t jobs = 0;                 ///< jobs replayed
  std::vector<ReplayJobResult> results;  ///< per job, in trace order
  /// Per tenant, by name: its share of all GPU-time delivered against its
  /// share of the quotas, and while it had jobs waiting, the GPUs it
  /// received on average / its quota (the term of `fairness`; -1 when it
  /// never waited).
  struct TenantShare {
    std::string tenant;
    double gpu_share = 0, quota_share = 0, backlog_ratio = -1;
  };
  std::vector<TenantShare> tenants;
};

/// An Error naming the first job that asks for more GPUs than the cluster
/// can give one job (all of them, or one node's when jobs may not span).
Status check_fits(const place::Cluster& cluster, const std::vector<TraceJob>& trace);

/// Replays `trace` on the nodes and GPUs of `cluster` (its jobs,
/// reservations, utilisation and tenants are not used: the replay starts
/// from an idle cluster with one tenant per trace tenant). An Error if a
/// job asks for more GPUs than the cluster can give one job.
Result<ReplayMetrics> replay(const place::Cluster& cluster, const std::vector<TraceJob>& trace,
                             const ReplayOptions& options);

std::string replay_csv_header();
std::string replay_csv(const ReplayMetrics& metrics);
/// The same as one JSON record (kind "replay").
std::string replay_json(const ReplayMetrics& metrics);
/// An SVG of each policy's JCT CDF (log time axis).
std::string replay_plot_svg(const std::vector<ReplayMetrics>& runs);

}  // namespace gpushare::replay
