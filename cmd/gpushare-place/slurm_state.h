// --slurm-state DIR: the cluster's live state from Slurm and the nodes'
// coordinators, read from files (gpushare-slurm-state collects them).
#pragma once

#include <string>

#include "common/result.h"
#include "place/cluster/cluster.h"

namespace gpushare::place_cmd {

/// Reads DIR/sinfo.json, DIR/squeue.json and every DIR/NODE.jsonl
/// (`gpushare-ctl ls` on NODE) and lays them over `cluster`; notes go to
/// stderr as warnings.
Status apply_slurm_dir(place::Cluster* cluster, const std::string& dir);

}  // namespace gpushare::place_cmd
