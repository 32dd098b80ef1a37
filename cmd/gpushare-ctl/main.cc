// gpushare-ctl: runs the node coordinator and talks to it.
//
// main() parses into CtlOptions and calls run(). The verbs arrive with the
// coordinator (roadmap step 4); until then each one says so and fails.
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"

namespace {

struct CtlOptions {
  std::string verb;
  std::string socket_path;
  std::string format = "json";
  std::string job;
  std::vector<std::string> properties;
  std::string mem_limit;
  std::string interval = "1s";
  std::string log_file;
};

int run(const CtlOptions& options) {
  gpushare::diag::error("'" + options.verb +
                        "' is not built yet: the node coordinator is roadmap step 4");
  return gpushare::exit_status::kFailure;
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-ctl");
  CLI::App app{"Run the gpushare node coordinator and adjust live limits.",
               "gpushare-ctl"};
  gpushare::cli::configure(app, "gpushare-ctl");
  app.require_subcommand(1);
  CtlOptions options;
  app.add_option("--socket", options.socket_path, "Coordinator socket (default: see FILES)");

  auto add_format = [&](CLI::App* verb) {
    verb->add_option("--format", options.format, "Output: json or table")
        ->check(CLI::IsMember({"json", "table"}))
        ->capture_default_str();
  };
  CLI::App* serve = app.add_subcommand("serve", "Run the node coordinator");
  serve->add_option("--log-file", options.log_file, "Log to this file instead of stderr");
  add_format(app.add_subcommand("ls", "List jobs"));
  CLI::App* show = app.add_subcommand("show", "Show one job");
  show->add_option("job", options.job, "Job id, name or pid")->required();
  add_format(show);
  add_format(app.add_subcommand("node", "Show devices and totals per class"));
  CLI::App* set = app.add_subcommand("set", "Change a job's limits");
  set->add_option("job", options.job, "Job id, name or pid")->required();
  set->add_option("--mem-limit", options.mem_limit, "New memory limit (SIZE)");
  set->add_option("properties", options.properties, "KEY=VALUE properties");
  for (const char* name : {"pause", "resume"}) {
    CLI::App* verb = app.add_subcommand(name, std::string(name) == "pause"
                                                  ? "Hold a job's kernel launches"
                                                  : "Let a paused job launch again");
    verb->add_option("job", options.job, "Job id, name or pid")->required();
  }
  CLI::App* watch = app.add_subcommand("watch", "Print job records at an interval");
  watch->add_option("--interval", options.interval, "Time between records")
      ->capture_default_str();
  add_format(watch);

  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  options.verb = app.get_subcommands().front()->get_name();
  return run(options);
}
