// gpushare-place: AntMan Algorithm 1 placements (roadmap step 5).
#include <string>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-place");
  CLI::App app{"Compute job placements from a TOML cluster file.", "gpushare-place"};
  gpushare::cli::configure(app, "gpushare-place");
  std::string cluster_file;
  app.add_option("--cluster", cluster_file, "Cluster description (TOML)");
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  gpushare::diag::error("placement is not built yet (roadmap step 5)");
  return gpushare::exit_status::kFailure;
}
