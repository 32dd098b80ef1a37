// Production jobs that span several GPUs (a gang): which GPUs the compute
// loop controls together, and which rank the others wait for.
//
// A data-parallel job runs one process (rank) per GPU, and every rank
// waits for the others at the collective that ends each step, so the job
// goes at its slowest rank's pace: an opportunistic job that slows one
// rank by 5% slows the whole job by 5%. Controlled one GPU at a time (one
// controller per device, each judging production by what it sees there),
// a gang loses on three counts (bench/share/results.md, "A data-parallel
// job on 2 and 4 GPUs"):
//   - a device's controller that profiles the gang's speed "alone" holds
//     only its own GPU's opportunistic jobs, while those beside the other
//     ranks slow the gang on: the solo speed it learns is the slowed one,
//     and it protects that;
//   - a measurement on one GPU sees the gang slowed by another GPU's
//     opportunistic job and cuts its own, which cost nothing;
//   - each controller raises its level on its own schedule, so the gang
//     pays every GPU's probing in turn (a step waits for the worst rank).
// So the loop controls a gang's GPUs as one group: one controller for the
// union of the GPUs of every gang that shares a GPU (and any other job on
// those GPUs), which profiles with every opportunistic job of the group
// held, judges production by the gang's step rate (the slowest rank's,
// which every rank's iterations show), and sets one level whose share each
// opportunistic job gets on its own GPU (split by weight among the jobs of
// that GPU only: compute_control.h, ComputeJobInput::share_group).
//
// Which rank the others wait for is not named yet: the group's controller
// protects every rank, since any may be the slow one. Naming it needs each
// rank's GPU time in its collectives (a waiting rank's collective kernel
// spins from its start until the slowest rank's starts; the slowest
// rank's runs for the transfer alone), which the interposer does not
// measure: docs/compute-sharing.md, "Production jobs on several GPUs",
// says how it would on the simulator and with NCCL, and what a gang gets
// without it.
//
// Pure: the loop (compute_loop.cc) reads the registry and passes plain
// values; tests/unit/coord_compute_gang_test.cc covers it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpushare::coord::server {

/// One process as the gang logic needs it.
struct GangProcess {
  std::uint64_t key = 0;     ///< the registry's process key
  std::uint64_t job_id = 0;  ///< the job (process tree) it belongs to
  bool production = false;
  /// Every GPU it registered (UUIDs), and those it holds memory on: a
  /// rank's own GPU (torchrun's ranks register every GPU they see).
  std::vector<std::string> registered;
  std::vector<std::string> used;
};

/// A production job whose processes use two GPUs or more, each process
/// that uses a GPU being a rank.
struct Gang {
  std::uint64_t job_id = 0;
  std::vector<std::uint64_t> ranks;  ///< process keys
  std::vector<std::string> gpus;     ///< the GPUs its ranks use, sorted
};

std::vector<Gang> find_gangs(const std::vector<GangProcess>& processes);

/// The compute loop's control groups: each registered GPU's group key.
/// A GPU no gang uses is its own group (its key is its UUID, as one
/// controller per device had it); the GPUs of gangs that share a GPU, and
/// the GPUs any process registered beside one of them, are merged: the
/// key is their sorted UUIDs joined by '+'.
std::map<std::string, std::string> control_groups(const std::vector<GangProcess>& processes,
                                                  const std::vector<Gang>& gangs);

}  // namespace gpushare::coord::server
