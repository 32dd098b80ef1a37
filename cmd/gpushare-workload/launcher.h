// gpushare-workload --launch N: starts N ranks of the same job, as torchrun
// --nproc-per-node N does, and waits for them.
#pragma once

#include <string>
#include <vector>

namespace gpushare::workload {

/// Starts this program (/proc/self/exe) N times with `arguments` plus
/// --rank R --world-size N --rendezvous NAME, rank R on device R unless the
/// arguments name a device; their output goes to ours. When a rank fails,
/// the others are stopped (SIGTERM), as torchrun stops a job whose rank
/// failed; a rank also gets SIGTERM when the launcher dies. Returns 0 when
/// every rank succeeded, else the first failure's exit status (1 for a
/// rank killed by a signal, or when a rank could not be started). With
/// `bind`, rank R sees only the R-th GPU the launcher sees
/// (CUDA_VISIBLE_DEVICES narrowed to it, and --device 0), as Slurm's
/// srun --gpu-bind=single:1 binds each task.
int launch_ranks(const std::vector<std::string>& arguments, int ranks,
                 const std::string& rendezvous, bool bind);

}  // namespace gpushare::workload
