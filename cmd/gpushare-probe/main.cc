// gpushare-probe: measures what placement and limits need.
//
// main() parses into ProbeOptions and calls run(), which dispatches on the
// mode. `device` prints one JSON record per GPU; `memory` and
// `interference` arrive with their roadmap step and say so until then.
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "common/jsonl.h"
#include "probe/device.h"

namespace {

struct ProbeOptions {
  std::string mode;
  bool sim = false;  ///< device: use the installed simulated GPU
};

std::string executable_path() {
  char buffer[4096];
  ssize_t length = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return length > 0 ? std::string(buffer, static_cast<std::size_t>(length)) : std::string();
}

// Which libraries to open: the loader's choice, or the installed simulator.
gpushare::Result<gpushare::probe::LibraryPaths> library_paths(const ProbeOptions& options) {
  gpushare::probe::LibraryPaths paths;
  if (!options.sim) return paths;
  auto directory = gpushare::probe::locate_simulator(
      executable_path(), [](const std::string& path) { return access(path.c_str(), R_OK) == 0; });
  if (!directory) return directory.error();
  paths.cuda = *directory + "/libcuda.so.1";
  paths.nvml = *directory + "/libnvidia-ml.so.1";
  return paths;
}

int run_device(const ProbeOptions& options) {
  auto paths = library_paths(options);
  if (!paths) {
    gpushare::diag::error(paths.error().message);
    return gpushare::exit_status::kFailure;
  }
  auto gpu = gpushare::probe::open_system_gpu(*paths);
  if (!gpu) {
    gpushare::diag::error(gpu.error().message);
    return gpushare::exit_status::kFailure;
  }
  auto records = gpushare::probe::probe_devices(**gpu);
  if (!records) {
    gpushare::diag::error(records.error().message);
    return gpushare::exit_status::kFailure;
  }
  gpushare::JsonLinesWriter writer(std::cout);
  for (const auto& record : *records) {
    writer.write("device", 1, gpushare::probe::device_fields(record));
  }
  return gpushare::exit_status::kSuccess;
}

int run(const ProbeOptions& options) {
  if (options.mode == "device") return run_device(options);
  gpushare::diag::error("'" + options.mode +
                        "' is not built yet (roadmap step 8: memory curves and interference)");
  return gpushare::exit_status::kFailure;
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-probe");
  CLI::App app{"Profile GPUs, memory curves and interference.", "gpushare-probe"};
  gpushare::cli::configure(app, "gpushare-probe");
  app.require_subcommand(1);
  ProbeOptions options;
  CLI::App* device = app.add_subcommand("device", "Print one record per GPU");
  device->add_flag("--sim", options.sim, "Probe the installed simulated GPU");
  app.add_subcommand("memory", "Profile a job's memory curve (not built yet)");
  app.add_subcommand("interference", "Measure two jobs' solo and co-run speeds (not built yet)");
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  options.mode = app.get_subcommands().front()->get_name();
  return run(options);
}
