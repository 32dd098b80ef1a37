// gpushare-probe: measures what placement and limits need.
//
// main() parses into ProbeOptions and dispatches on the mode:
//   device        one JSON record per GPU (verb_device.cc)
//   memory        a job's memory curve, profile and speed under caps (verb_memory.cc)
//   interference  jobs alone and in pairs, uncontrolled and under QoS
//                 (verb_interference.cc)
//   node          this machine's GPUs as a cluster TOML fragment (verb_node.cc)
#include <string>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "probe.h"

namespace {

using probe_cmd::ProbeOptions;

void add_memory(CLI::App& app, ProbeOptions& options) {
  CLI::App* memory = app.add_subcommand("memory", "Profile a job's memory curve");
  // Options stop at the first word of the command, as with gpushare-run.
  memory->positionals_at_end();
  memory->add_flag("--sim", options.sim, "Run the job on the simulated GPU");
  memory->add_option("--interval", options.interval, "Sampling interval")
      ->type_name("DUR")
      ->capture_default_str();
  memory->add_option("--duration", options.duration, "Stop the job after this long")
      ->type_name("DUR");
  memory->add_option("--caps", options.caps, "Also measure speed under each memory cap")
      ->type_name("LIST");
  memory->add_option("--plot", options.plot, "Draw the curve (and caps) as SVG")->type_name("FILE");
  memory->add_flag("--summary", options.summary_only,
                   "Print only the profile record (a job for gpushare-place)");
  memory
      ->add_option("--format", options.format,
                    "Output: auto (text on a terminal, else jsonl), jsonl or text")
      ->check(CLI::IsMember({"auto", "jsonl", "text"}))
      ->capture_default_str();
  memory->add_option("--name", options.name, "Job name (default: the command's name)")
      ->type_name("NAME");
  memory->add_option("command", options.command, "The command and its arguments")
      ->required()
      ->type_name("COMMAND [ARG]");
}

void add_interference(CLI::App& app, ProbeOptions& options) {
  CLI::App* interference =
      app.add_subcommand("interference", "Measure jobs alone and co-located, in pairs");
  interference->add_flag("--sim", options.sim, "Run the jobs on the simulated GPU");
  interference->add_option("--job", options.jobs, "A job, as a shell command (two or more)")
      ->type_name("CMD")
      ->required()
      ->allow_extra_args(false);
  interference->add_option("--duration", options.run_duration, "How long each run lasts")
      ->type_name("DUR")
      ->capture_default_str();
  interference->add_option("--interval", options.interval, "Sampling interval")
      ->type_name("DUR")
      ->capture_default_str();
  interference
      ->add_option("--format", options.format,
                   "Output: auto (a table on a terminal, else jsonl), jsonl or table")
      ->check(CLI::IsMember({"auto", "jsonl", "table"}))
      ->capture_default_str();
  interference->add_option("--plot", options.plot, "Draw the matrices as an SVG heat map")
      ->type_name("FILE");
}

void add_node(CLI::App& app, ProbeOptions& options) {
  CLI::App* node = app.add_subcommand("node", "Print this machine's GPUs as cluster TOML");
  node->add_flag("--sim", options.sim, "Probe the installed simulated GPU");
  node->add_option("--name", options.name, "Node name (default: the host name)")->type_name("NAME");
  node->add_flag("--fragment", options.fragment,
                 "Print the [[node]] table only (no policy or tenant)");
  node->add_option("--window", options.window, "Utilisation window")
      ->type_name("DUR")
      ->capture_default_str();
}

int run(const ProbeOptions& options) {
  if (options.mode == "device") return probe_cmd::run_device(options);
  if (options.mode == "memory") return probe_cmd::run_memory(options);
  if (options.mode == "interference") return probe_cmd::run_interference(options);
  return probe_cmd::run_node(options);
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
  device
      ->add_option("--format", options.format,
                   "Output: auto (a table on a terminal, else jsonl), jsonl or table")
      ->check(CLI::IsMember({"auto", "jsonl", "table"}))
      ->capture_default_str();
  add_memory(app, options);
  add_interference(app, options);
  add_node(app, options);
  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  options.mode = app.get_subcommands().front()->get_name();
  return run(options);
}
