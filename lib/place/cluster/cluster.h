// The cluster gpushare-place works on: the policy, the tenants and their
// quotas, the nodes, their GPUs, and the jobs already on those GPUs.
//
// This is plain data. The TOML loader (cluster_toml.h) fills it and checks
// it; the placer (placer.h) reads it and keeps it up to date as it places
// jobs; the state writer (state_writer.h) prints it back as TOML.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vocab/job.h"

namespace gpushare::place {

// AntMan's two job classes are the QoS classes of vocab/job.h: resource-
// guarantee (production) jobs own their GPUs; opportunistic jobs share
// whatever the production jobs leave idle.

/// binpack fills the most used place first; spread the least used.
enum class Order { kBinpack, kSpread };

std::string_view to_string(Qos job_class);
std::string_view to_string(Order order);
/// "production" or "opportunistic".
std::optional<Qos> parse_job_class(std::string_view text);
/// "binpack" or "spread".
std::optional<Order> parse_order(std::string_view text);

/// [policy]: the knobs of Algorithm 1.
struct Policy {
  /// M: a GPU whose 10 s mean utilisation is at or above this takes no
  /// opportunistic job.
  double util_threshold = 0.8;
  /// Among topology domains that fit a production job.
  Order node_order = Order::kBinpack;
  /// Among GPUs within a domain, and among opportunistic candidates.
  Order gpu_order = Order::kSpread;
  /// Whether one job may span several nodes.
  bool multi_node = true;
  /// Whether a production job that fits only in part reserves what fits
  /// (AntMan's gang reservation), or is simply left unplaced.
  bool reserve = true;
  /// The tenant of jobs that name none; empty: jobs must name theirs.
  std::string default_tenant;
  /// An "auto" job queued at least this long runs opportunistic.
  std::optional<std::chrono::nanoseconds> queue_threshold;

  bool operator==(const Policy&) const = default;
};

/// [[tenant]]: a team with a quota of production GPUs.
struct Tenant {
  std::string name;
  std::int64_t quota_gpus = 0;

  bool operator==(const Tenant&) const = default;
};

/// [[node.gpu.job]]: a job already on a GPU. A job on several GPUs appears
/// once on each, with the same id.
struct ResidentJob {
  std::string id;
  Qos job_class = kQosOpportunistic;
  std::string tenant;
  std::uint64_t mem_bytes = 0;

  bool operator==(const ResidentJob&) const = default;
};

/// GPUs held back for a production job that could be placed only in part.
struct Reservation {
  std::string job;
  std::string tenant;

  bool operator==(const Reservation&) const = default;
};

/// [[node.gpu]].
struct Gpu {
  int index = 0;  ///< the device ordinal on its node (CUDA_VISIBLE_DEVICES)
  std::string model;
  std::uint64_t mem_bytes = 0;  ///< capacity
  double util = 0.0;            ///< mean utilisation over the last 10 s, 0..1
  std::uint64_t mem_used_bytes = 0;
  std::optional<int> nvlink_group;
  std::optional<int> numa;
  std::optional<Reservation> reservation;
  std::vector<ResidentJob> jobs;

  bool operator==(const Gpu&) const = default;
};

/// [[node]].
struct Node {
  std::string name;
  std::vector<Gpu> gpus;

  bool operator==(const Node&) const = default;
};

struct Cluster {
  Policy policy;
  std::vector<Tenant> tenants;
  std::vector<Node> nodes;

  bool operator==(const Cluster&) const = default;
};

/// The production job on a GPU, or nullptr.
const ResidentJob* production_job(const Gpu& gpu);

/// Where the first control character (U+0000-U+001F, U+007F) of `text`
/// is, if it has one. Names and ids are printed one to a line, quoted
/// for the shell (--format slurm, env) and in messages: a newline there
/// would split a record, so no name or id may hold one.
std::optional<std::size_t> control_character(std::string_view text);

/// "must not contain control characters (U+000A at byte 3)", for the
/// message that rejects `text`, whose byte `at` is one.
std::string control_character_message(std::string_view text, std::size_t at);

/// a + b, or the largest value where that would wrap. Memory totals are
/// sums of figures from input: a wrapped total would make a full GPU look
/// empty, so every such sum saturates instead.
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

}  // namespace gpushare::place
