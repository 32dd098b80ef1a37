// The three ways gpushare-place prints a placement:
//
//   json   one JSON Lines record per job (the default):
//          {"kind":"placement","version":1,"job":"a","status":"placed",
//           "class":"production","tenant":"vision","node":"n1","gpus":[0,1]}
//   slurm  one line of sbatch/srun arguments per job, shell-quoted
//   env    shell assignments for one placed job, for eval "$(...)"
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "place/placer.h"

namespace gpushare::place {

enum class Format { kJson, kSlurm, kEnv };

/// The record's line, without the newline.
std::string placement_json(const Placement& placement);

/// sbatch/srun arguments. A placed job gets --nodelist and --gres (gpu:N
/// for production, shard:N for opportunistic, N the most GPUs it has on
/// one node); a reserved or unplaced one gets --hold, so sbatch queues it
/// held until someone releases it.
std::string slurm_arguments(const Placement& placement);

/// export lines for CUDA_VISIBLE_DEVICES, GPUSHARE_QOS, GPUSHARE_JOB,
/// GPUSHARE_NODE and, for an opportunistic job that stated its memory,
/// GPUSHARE_MEM_LIMIT. An Error when the job is not placed on one node.
Result<std::string> env_assignments(const Placement& placement);

/// The text as one shell word: unchanged when it is plain, else in single
/// quotes.
std::string shell_quote(std::string_view text);

}  // namespace gpushare::place
