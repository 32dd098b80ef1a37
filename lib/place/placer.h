// Algorithm 1 of AntMan (OSDI'20), as gpushare reads it: one job at a time,
// in input order, each placement changing the state the next job sees.
// The rules and every tie-break are in placer.cc and gpushare-place(1).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "place/cluster/cluster.h"
#include "place/job/job.h"

namespace gpushare::place {

enum class PlacementStatus { kPlaced, kReserved, kUnplaced };
std::string_view to_string(PlacementStatus status);

/// GPUs of one node a job was given (or reserved), by device index.
struct NodeGpus {
  std::string node;
  std::vector<int> gpus;

  bool operator==(const NodeGpus&) const = default;
};

/// Why GPUs were not chosen: one entry per run of GPUs on one node that
/// share the reason, so an explanation stays short on large nodes.
struct Rejection {
  std::string node;
  std::vector<int> gpus;
  std::string reason;  ///< a code: production, reserved, memory, utilisation, ranked-lower
  std::string detail;  ///< the reason in words, with the figures

  bool operator==(const Rejection&) const = default;
};

/// An opportunistic job placed beside one rank of a production job that
/// spans several GPUs (a gang: data parallel, one rank per GPU, all ranks
/// meeting at a collective every step). Whatever it takes from that rank
/// it takes from every rank: each step waits for the slowest.
struct BesideGang {
  std::string node;
  int gpu = 0;             ///< the chosen GPU the rank runs on
  std::string job;         ///< the production job's id
  std::size_t ranks = 0;   ///< the GPUs it spans, one rank each
  std::vector<NodeGpus> gang;  ///< those GPUs, by node name
  std::string detail;      ///< the above in words
};

struct Explanation {
  std::string class_reason;  ///< how the class was decided
  std::string choice;        ///< the rule that chose, or why nothing could be
  std::vector<Rejection> rejected;
  std::vector<BesideGang> beside;  ///< opportunistic: the gangs it shares GPUs with
};

struct Placement {
  std::optional<JobId> job;  ///< nullopt when the record had no usable id
  PlacementStatus status = PlacementStatus::kUnplaced;
  std::optional<Qos> job_class;  ///< the class decided; unset for bad input
  std::vector<NodeGpus> nodes;        ///< by node name; placed or reserved GPUs
  std::string reason;                 ///< why it was reserved or left unplaced
  bool input_error = false;           ///< the record itself was unusable
  std::string tenant;
  std::uint64_t mem_bytes = 0;
  std::optional<Explanation> explanation;
  /// Opportunistic, placed on a GPU a production job runs on: Slurm gives
  /// that GPU whole to the production job (gpu:N), and a GPU held whole
  /// has no shard for a second job (slurm_arguments asks for no GPU).
  bool beside_whole_gpu = false;
};

/// An unusable record as a placement, so output keeps one record per input.
Placement input_error(std::optional<JobId> job, std::string message);

class Placer {
 public:
  /// Takes a cluster as the loader checks it (names unique, tenants known,
  /// at most one production job per GPU).
  explicit Placer(Cluster cluster);
  ~Placer();
  Placer(Placer&&) noexcept;
  Placer& operator=(Placer&&) noexcept;

  /// Places one job and updates the state. With `explain`, the placement
  /// says why each GPU not chosen was rejected (O(GPUs) extra work).
  Placement place(const Job& job, bool explain = false);

  /// Takes a finished job off the cluster: its GPUs, memory and
  /// utilisation are free again. An Error if no job of that id runs.
  Status remove(const std::string& job_id);

  /// The cluster with every placement and reservation made so far.
  const Cluster& cluster() const;

  /// GPUs free of production jobs and reservations, per node (name order).
  std::vector<std::uint32_t> free_gpus_per_node() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace gpushare::place
