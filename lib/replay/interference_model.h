// How fast a job runs on a GPU it shares: the replay's interference model.
//
// A job's utilisation u is the share of a GPU's time it keeps busy when it
// runs alone at full speed. Given a share s of the GPU's time it runs at
// min(1, s / u) of full speed; sharing also costs through caches and memory
// bandwidth, which the model charges as a factor 1 - beta * (the others'
// utilisation, at most 1). Three ways of sharing a GPU:
//
// - plain packing (no control: Gandiva's packing, or any scheduler that just
//   co-locates): the jobs' demands D = sum of u; each gets u_i / max(1, D)
//   of the GPU, so all slow to 1/D once D > 1, and each pays interference;
// - gpushare's control (AntMan's local coordinator): the production job is
//   kept at its target and pays only `controlled_slowdown`; opportunistic
//   jobs split 1 - u_production in proportion to their demands and pay
//   interference among themselves and from the production job;
// - time slicing (Gandiva's suspend/resume): n jobs take turns of
//   `quantum_s`, each switch costing `switch_s`, so each runs at
//   (1 - switch_s / quantum_s) / n with no interference (one runs at a time).
//
// A job on several GPUs runs at its slowest GPU's pace. The defaults, and
// where each comes from, are in gpushare-place(1); none is tuned to a result.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpushare::replay {

struct InterferenceModel {
  /// beta: slowdown per unit of the co-runners' utilisation (plain packing
  /// and among opportunistic jobs).
  double beta = 0.25;
  /// Production jobs' slowdown under gpushare's control when they share.
  double controlled_slowdown = 0.02;
  /// Time slicing: the turn length and the cost of one suspend/resume.
  double quantum_s = 60.0;
  double switch_s = 1.0;
  /// At most this many jobs time-slice one GPU.
  int timeslice_max = 4;
  /// The cost of moving a running job to another GPU (Gandiva's migration).
  double migrate_s = 30.0;
  /// M: a GPU this busy (sum of its jobs' u) takes no opportunistic job.
  double ot_threshold = 0.8;
};

/// One job on a shared GPU, as the model sees it.
struct CoRunner {
  double util = 1.0;
  bool production = false;  ///< protected under gpushare's control
};

enum class Sharing { kPacked, kControlled, kTimesliced };

/// The speed (0..1] of `jobs[self]` on one GPU shared as `sharing`.
double shared_rate(const InterferenceModel& model, Sharing sharing,
                   const std::vector<CoRunner>& jobs, std::size_t self);

/// Reads `key = value` lines (TOML-compatible; '#' starts a comment) over
/// the defaults. An Error names the file, line and key.
Result<InterferenceModel> parse_interference(std::string_view text, std::string_view source);
Result<InterferenceModel> load_interference(const std::string& path);

}  // namespace gpushare::replay
