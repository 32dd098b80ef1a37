// The cluster as Slurm sees it, laid over the static inventory.
//
// The cluster file (cluster_toml.h) describes what Slurm does not know: the
// policy, the tenants, each GPU's model, memory and topology. Slurm knows
// what changes: which nodes take jobs, and which running job holds which
// GPU. apply_slurm_state() replaces, on every node Slurm reports, the
// resident jobs by Slurm's running jobs (from `squeue --json`, whose
// `gres_detail` names the GPU indices each job holds on each node), drops
// the nodes Slurm will not schedule on (down, drained, failing, or not
// reported), and then raises each job's memory to what the node's
// coordinator reports it using (`gpushare-ctl ls` on that node; its jobs
// are named slurm-<jobid> by the Slurm hooks).
//
// A job's class: a "gpushare:CLASS[,mem=SIZE]" comment wins; else a job on
// whole GPUs (gres gpu) is production and one on shards opportunistic, as
// the hooks decide (gpushare-slurm(7)).
//
// Inputs are Slurm 22.05's JSON (OpenAPI v0.0.38: `sinfo --json`,
// `squeue --json`); `scontrol show nodes --json` does not exist there.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "place/cluster/cluster.h"

namespace gpushare::place {

struct SlurmState {
  std::string sinfo_json;   ///< `sinfo --json`
  std::string squeue_json;  ///< `squeue --json`
  /// Per node: its name and its coordinator's `gpushare-ctl ls` (JSON Lines).
  std::vector<std::pair<std::string, std::string>> telemetry;
};

/// Lays `state` over `cluster`. Returns notes for people (a node dropped
/// and why, a job on a GPU the cluster file does not have), or an Error
/// naming the input and what in it is wrong.
Result<std::vector<std::string>> apply_slurm_state(Cluster* cluster, const SlurmState& state);

/// Expands a Slurm hostlist ("n[1-3,5],gpu01") into names.
Result<std::vector<std::string>> expand_hostlist(std::string_view text);

}  // namespace gpushare::place
