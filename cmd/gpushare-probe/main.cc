// gpushare-probe: measures what placement and limits need.
//
// main() parses into ProbeOptions and calls run(). Each mode arrives with its
// roadmap step; until then it says so and fails.
#include <string>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"

namespace {

struct ProbeOptions {
  std::string mode;
};

int run(const ProbeOptions& options) {
  gpushare::diag::error("'" + options.mode + "' is not built yet");
  return gpushare::exit_status::kFailure;
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-probe");
  CLI::App app{"Profile GPUs, memory curves and interference.", "gpushare-probe"};
  gpushare::cli::configure(app, "gpushare-probe");
  app.require_subcommand(1);
  app.add_subcommand("device", "Print one record per GPU");
  app.add_subcommand("memory", "Profile a job's memory curve");
  app.add_subcommand("interference", "Measure two jobs' solo and co-run speeds");
  ProbeOptions options;
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  options.mode = app.get_subcommands().front()->get_name();
  return run(options);
}
