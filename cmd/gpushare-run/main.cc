// gpushare-run: runs a command under the interposer, with a QoS class and
// limits. It execs (like nice(1) and env(1)), so the command keeps this
// process's pid, signals and exit status.
//
// Exit status: the command's own; 125 when gpushare-run fails itself, usage
// errors included; 126 when the command cannot run; 127 when it is not found.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "runner/coordinator.h"
#include "runner/devices.h"
#include "runner/job_tree.h"
#include "runner/launch.h"

namespace {

namespace exit_status = gpushare::exit_status;

struct RunOptions {
  gpushare::RunRequest request;
  bool no_coordinator = false;
  bool movable = false;  ///< --movable: every other GPU visible after --gpu's
};

std::string own_executable() {
  std::vector<char> buffer(4096);
  ssize_t length = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (length <= 0) return {};
  return std::string(buffer.data(), static_cast<std::size_t>(length));
}

// A clean absolute path for LD_PRELOAD and messages ("/p/lib/..." rather
// than "/p/bin/../lib/...").
std::string canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

bool file_exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// Makes sure a coordinator listens where the job will look for one,
// starting a per-user one if needed. Never fatal: without a coordinator the
// job still enforces the limits it starts with.
void ensure_coordinator(const std::string& executable, gpushare::LaunchPlan* plan) {
  gpushare::Result<gpushare::CoordinatorPlan> coordinator = gpushare::plan_coordinator();
  if (!coordinator) {
    gpushare::diag::warning(coordinator.error().message);
    return;
  }
  if (!coordinator->warning.empty()) gpushare::diag::warning(coordinator->warning);
  if (coordinator->start) {
    std::string ctl = executable.substr(0, executable.rfind('/')) + "/gpushare-ctl";
    const char* grace = std::getenv("GPUSHARE_COORDINATOR_IDLE_GRACE");
    gpushare::Status started =
        gpushare::start_coordinator(ctl, *coordinator, grace != nullptr ? grace : "", 2000);
    if (!started) gpushare::diag::warning(started.error().message);
  }
  plan->environment.emplace_back("GPUSHARE_SOCKET", coordinator->socket_path);
  // Keeps a coordinator that exits when idle while the job lives, even
  // before the job registers (lib/coord/server/launched_jobs.h).
  plan->environment.emplace_back("GPUSHARE_LAUNCHED_FOR", coordinator->socket_path);
}

// The job's tree file: one memory limit per device for all the processes
// the job starts, and one job in the coordinator's view. Never fatal.
void set_up_job_tree(const std::string& executable, gpushare::LaunchPlan* plan) {
  if (std::getenv("GPUSHARE_DISABLE") != nullptr) return;
  gpushare::Result<std::string> tree = gpushare::start_job_tree(executable);
  if (!tree) {
    gpushare::diag::warning(tree.error().message);
    plan->environment.emplace_back("GPUSHARE_TREE", "");  // not an enclosing job's
    return;
  }
  plan->environment.emplace_back("GPUSHARE_TREE", *tree);
}

int exec_command(const gpushare::LaunchPlan& plan) {
  for (const auto& [key, value] : plan.environment) setenv(key.c_str(), value.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& word : plan.argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  // Only reached when exec failed.
  int error = errno;
  gpushare::diag::error("'" + plan.argv[0] + "': " + std::strerror(error));
  return error == ENOENT ? exit_status::kNotFound : exit_status::kCannotExecute;
}

int run(RunOptions& options) {
  // Properties (-p KEY=VALUE) refine the named options.
  if (gpushare::Status ok = gpushare::apply_properties(options.request); !ok) {
    gpushare::diag::error(ok.error().message);
    return exit_status::kRunFailed;
  }
  // Find the interposer next to this executable, as installed.
  std::string executable = own_executable();
  gpushare::Result<gpushare::InstallPaths> paths =
      gpushare::locate_install(executable, std::getenv, file_exists);
  if (!paths) {
    gpushare::diag::error(paths.error().message);
    return exit_status::kRunFailed;
  }
  paths->interposer = canonical(paths->interposer);
  if (!paths->auditor.empty()) paths->auditor = canonical(paths->auditor);
  paths->sim_dir = paths->interposer.substr(0, paths->interposer.rfind('/')) + "/sim";
  if (options.request.sim && !file_exists(paths->sim_dir + "/libcuda.so.1")) {
    gpushare::diag::error("--sim: the simulated GPU is not installed (no " + paths->sim_dir +
                          "/libcuda.so.1)");
    return exit_status::kRunFailed;
  }
  // Decide the environment; every setting is validated before exec.
  gpushare::Result<gpushare::LaunchPlan> plan =
      gpushare::plan_launch(options.request, *paths, std::getenv);
  if (!plan) {
    gpushare::diag::error(plan.error().message);
    return exit_status::kRunFailed;
  }
  // A GPU that does not exist fails here, with our status, not at cuInit.
  if (options.request.gpu) {
    std::string nvml = options.request.sim ? paths->sim_dir + "/libnvidia-ml.so.1"
                                           : std::string("libnvidia-ml.so.1");
    if (gpushare::Status ok = gpushare::check_gpu_exists(*options.request.gpu, nvml); !ok) {
      gpushare::diag::error("--gpu: " + ok.error().message);
      return exit_status::kRunFailed;
    }
    // Movable: the driver restores a checkpointed process only onto GPUs
    // it sees, so the job sees the others too, after its own (it is
    // counted only on the GPUs it uses, docs/memory.md).
    if (options.movable) {
      gpushare::Result<std::string> visible =
          gpushare::movable_visible_devices(*options.request.gpu, nvml);
      if (!visible) {
        gpushare::diag::error(visible.error().message);
        return exit_status::kRunFailed;
      }
      for (auto& [name, value] : plan->environment) {
        if (name == "CUDA_VISIBLE_DEVICES") value = *visible;
      }
    }
  } else if (options.movable) {
    gpushare::diag::error(
        "--movable needs --gpu: a job started without it sees every GPU and can move already");
    return exit_status::kRunFailed;
  }
  // A coordinator for live limits, started per user when none is running.
  if (!options.no_coordinator) {
    ensure_coordinator(executable, &*plan);
  } else {
    plan->environment.emplace_back("GPUSHARE_LAUNCHED_FOR", "");  // not an enclosing job's
  }
  set_up_job_tree(executable, &*plan);
  return exec_command(*plan);
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-run");
  // The janitor of a job's tree file is this program, exec'd again.
  if (int janitor = gpushare::tree_janitor_main(argc, argv); janitor >= 0) {
    gpushare::diag::error("--tree-janitor is gpushare-run's own, for the janitor it starts");
    return janitor;
  }
  CLI::App app{"Run a command on a shared GPU, with a QoS class and limits.", "gpushare-run"};
  gpushare::cli::configure(app, "gpushare-run");
  // Options stop at the first word of the command (getopt's "+").
  app.positionals_at_end();
  RunOptions options;
  gpushare::RunRequest& request = options.request;
  bool production = false;
  bool opportunistic = false;
  CLI::Option* production_flag =
      app.add_flag("--production", production, "Keep solo speed (the default)");
  app.add_flag("--opportunistic", opportunistic, "Harvest idle GPU time and memory; yield")
      ->excludes(production_flag);
  app.add_option("--mem-limit", request.mem_limit, "Memory limit: 8GiB, 512MiB, bytes or 50%")
      ->type_name("SIZE");
  app.add_option("--gpu", request.gpu, "Run on this GPU (index or UUID)")->type_name("N");
  app.add_option("--name", request.name, "Job name (default: the command's name)")
      ->type_name("NAME");
  app.add_flag("--sim", request.sim, "Use the simulated GPU");
  app.add_flag("--suspendable", request.suspendable,
               "Back device memory so that gpushare-ctl suspend can free it");
  app.add_flag("--launch-queue", request.launch_queue,
               "Queue the launches the gate holds, so that the program runs on (opportunistic)");
  app.add_option("--compute-trace", request.compute_trace,
                 "Record compute admission decisions as JSON Lines (%p: the pid)")
      ->type_name("PATH");
  app.add_flag("--movable", options.movable,
               "With --gpu: let the job see the other GPUs too, so that it can be migrated");
  app.add_flag("--no-coordinator", options.no_coordinator,
               "Do not start a per-user coordinator when none is running");
  // One value per -p: a vector option would otherwise swallow the command.
  app.add_option("-p,--property", request.properties, "Set a property (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  app.add_option("command", request.command, "The command and its arguments")
      ->required()
      ->type_name("COMMAND [ARG]");

  if (auto status = gpushare::cli::parse(app, argc, argv, exit_status::kRunFailed)) {
    return *status;
  }
  request.qos = opportunistic ? gpushare::kQosOpportunistic : gpushare::kQosProduction;
  return run(options);
}
