// gpushare-ctl's options and verbs. main.cc parses; serve.cc runs the
// coordinator; verbs.cc talks to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpushare::ctl {

struct CtlOptions {
  std::string verb;
  std::string socket_path;  ///< empty: the default (GPUSHARE_SOCKET, ...)
  /// auto (a short table on a terminal, JSON Lines otherwise), json,
  /// wide (every column), table (wide's old name)
  std::string format = "auto";
  std::string timeout = "10s";  ///< client verbs: connect and each reply
  std::string job;
  std::vector<std::string> properties;
  std::optional<std::string> mem_limit;
  std::string interval = "1s";
  std::uint64_t count = 0;           ///< watch: rounds; 0 = until interrupted
  bool no_wait = false;              ///< suspend, resume: print the request's answer only
  std::string wait_timeout = "10m";  ///< suspend, resume: longest wait for the move
  // serve
  std::string log_file;
  std::string admin_group;
  bool idle_exit = false;
  std::string idle_grace = "60s";
  std::string on_violation = "warn";  ///< warn | pause | kill
  std::string compute_policy = "gpushare";
  std::string memory_tick = "25ms";  ///< the memory loop's period
  std::string host_pause = "on";  ///< on | off (checked by main)
  std::string gang_harvest = "off";  ///< on | off: use the waits of a gang's waiting ranks
  std::string checkpoint = "on";  ///< on | off: the driver's process checkpoint (migrate.h)
  std::string migration_policy = "off";  ///< on | off: move opportunistic jobs to idle GPUs
  std::string to;                 ///< migrate: the GPU, an index or a UUID
  std::string metrics_listen;  ///< HOST:PORT for /metrics; empty: none
  // tree-file
  std::string tree_path;
  std::string owner;  ///< UID[:GID]; empty: the caller
};

int serve(const CtlOptions& options);
int list(const CtlOptions& options);
int show(const CtlOptions& options);
int node(const CtlOptions& options);
int set(const CtlOptions& options);
int pause(const CtlOptions& options, bool pause);
int watch(const CtlOptions& options);
/// The node's state in Prometheus' text format (lib/coord/contract/metrics_text.h).
int metrics(const CtlOptions& options);
/// Suspend frees a job's device memory; resume brings it back
/// (and lets a paused job run). Both wait for the move unless --no-wait.
int suspend(const CtlOptions& options);
int resume(const CtlOptions& options);
/// Moves a running job to another GPU through the driver's process
/// checkpoint; waits for the move unless --no-wait.
int migrate(const CtlOptions& options);

/// Creates a job's tree file at a path, for another user (tree_file.cc):
/// what the Slurm Prolog makes so that a job's tasks are one job.
int tree_file(const CtlOptions& options);

/// Live view of the node (top.cc): refuses a stdout that is not a terminal.
int top(const CtlOptions& options);

/// "json", "short" or "wide": what --format means for this stdout.
std::string resolved_format(const std::string& format);
/// Columns of the terminal on stdout (100 when it cannot tell).
std::size_t terminal_width();

/// The socket to use: --socket, else the default rules of socket_path.h.
/// Empty when the default does not fit a socket address.
std::string socket_path(const CtlOptions& options, bool* private_directory = nullptr);

}  // namespace gpushare::ctl
