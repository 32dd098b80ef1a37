// What gpushare-run does before exec, as a pure function: from the request
// and the current environment to the variables to set and the argv to run.
// Keeping it free of exec and getenv makes every rule unit-testable.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "vocab/job.h"

namespace gpushare {

struct RunRequest {
  Qos qos = kQosProduction;
  std::optional<std::string> mem_limit;  ///< a size as the user wrote it
  std::optional<std::string> gpu;        ///< an index or a GPU UUID
  std::optional<std::string> name;
  std::optional<std::string> log_level;
  std::optional<std::string> compute;  ///< -p compute=N%: a cap on the share of GPU time
  bool sim = false;
  /// --suspendable: plain device memory backed so that `gpushare-ctl
  /// suspend` can free it (GPUSHARE_SUSPENDABLE=on).
  bool suspendable = false;
  /// --launch-queue: GPUSHARE_LAUNCH_QUEUE=on (the interposer queues the
  /// launches its gate holds; compute/launch_queue.h).
  bool launch_queue = false;
  /// --compute-trace PATH: GPUSHARE_COMPUTE_TRACE, made absolute ("%p":
  /// the pid of each process of the job).
  std::optional<std::string> compute_trace;
  std::vector<std::string> properties;  ///< KEY=VALUE, applied after the named options
  std::vector<std::string> command;
};

/// Where the installed pieces are.
struct InstallPaths {
  std::string interposer;  ///< libgpushare-interpose.so
  std::string sim_dir;     ///< directory holding the simulated libcuda.so.1
  std::string auditor;     ///< libgpushare-audit.so (LD_AUDIT), empty when not installed
};

struct LaunchPlan {
  std::vector<std::pair<std::string, std::string>> environment;  ///< to set, in order
  std::vector<std::string> argv;
};

using GetEnv = std::function<const char*(const char*)>;

/// Applies -p KEY=VALUE properties (common/properties.h: qos, mem-limit,
/// name, compute, gpu, log) to the request. An unknown key or a bad value
/// is an Error naming it.
Status apply_properties(RunRequest& request);

/// Validates the request and computes the environment and argv.
Result<LaunchPlan> plan_launch(const RunRequest& request, const InstallPaths& paths,
                               const GetEnv& getenv);

/// Finds the interposer and the simulated driver relative to the running
/// executable (like `mold -run`): GPUSHARE_INTERPOSER overrides; then
/// EXE_DIR/libgpushare-interpose.so, EXE_DIR/../lib/gpushare/, and
/// EXE_DIR/../<libdir>/gpushare/.
Result<InstallPaths> locate_install(const std::string& executable_path, const GetEnv& getenv,
                                    const std::function<bool(const std::string&)>& exists);

}  // namespace gpushare
