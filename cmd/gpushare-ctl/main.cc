// gpushare-ctl: runs the node coordinator and talks to it.
//
// main() parses into CtlOptions and hands the verb to its function: serve
// (serve.cc) runs the coordinator; ls, show, node, set, pause, resume,
// suspend, migrate, watch and metrics (verbs.cc) send one request each and print JSON Lines,
// or a table on a terminal; top (top.cc) draws the node live on a terminal;
// tree-file (tree_file.cc) makes a job's tree file for the Slurm Prolog.
//
// Exit status: 0 success; 1 failure at run time (no coordinator, unknown
// job, refused request); 2 usage error.
#include <string>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "ctl.h"

namespace {

namespace ctl = gpushare::ctl;

int run(const ctl::CtlOptions& options) {
  const std::string& verb = options.verb;
  if (verb == "serve") return ctl::serve(options);
  if (verb == "ls") return ctl::list(options);
  if (verb == "show") return ctl::show(options);
  if (verb == "node") return ctl::node(options);
  if (verb == "set") return ctl::set(options);
  if (verb == "pause") return ctl::pause(options, true);
  if (verb == "resume") return ctl::resume(options);  // a paused or a suspended job
  if (verb == "suspend") return ctl::suspend(options);
  if (verb == "migrate") return ctl::migrate(options);
  if (verb == "watch") return ctl::watch(options);
  if (verb == "metrics") return ctl::metrics(options);
  if (verb == "top") return ctl::top(options);
  if (verb == "tree-file") return ctl::tree_file(options);
  gpushare::diag::error("unknown verb '" + verb + "'");
  return gpushare::exit_status::kUsage;
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::diag::set_program_name("gpushare-ctl");
  CLI::App app{"Run the gpushare node coordinator and adjust live limits.", "gpushare-ctl"};
  gpushare::cli::configure(app, "gpushare-ctl");
  app.require_subcommand(1);
  ctl::CtlOptions options;
  app.add_option("--socket", options.socket_path, "Coordinator socket (default: see FILES)");
  app.add_option("--timeout", options.timeout, "Longest wait for the coordinator's answer")
      ->capture_default_str();

  auto add_format = [&](CLI::App* verb) {
    verb->add_option("--format", options.format,
                     "Output: auto (a table on a terminal, else json), json, wide or table")
        ->check(CLI::IsMember({"auto", "json", "wide", "table"}))
        ->capture_default_str();
  };
  auto add_job = [&](CLI::App* verb) {
    verb->add_option("job", options.job, "Job id, pid or name")->required();
  };

  CLI::App* serve = app.add_subcommand("serve", "Run the node coordinator");
  serve->add_option("--log-file", options.log_file, "Log to this file instead of stderr");
  serve->add_option("--admin-group", options.admin_group,
                    "Members of GROUP may act on every job, like root");
  serve->add_flag("--idle-exit", options.idle_exit,
                  "Exit when no job has been registered for the idle grace period");
  serve->add_option("--idle-grace", options.idle_grace, "Grace period for --idle-exit")
      ->capture_default_str();
  serve
      ->add_option("--on-violation", options.on_violation,
                   "What to do with a job NVML shows over its limit: warn, pause or kill")
      ->capture_default_str();
  serve
      ->add_option("--compute-policy", options.compute_policy,
                   "Compute sharing: gpushare, tgs or none")
      ->check(CLI::IsMember({"gpushare", "tgs", "none"}))
      ->capture_default_str();
  serve
      ->add_option("--gang-harvest", options.gang_harvest,
                   "Let opportunistic jobs use the waits of a 2-rank production job's rank that "
                   "waits for the other: on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  serve->add_option("--memory-tick", options.memory_tick,
                    "The memory loop's period (room requests and job ends run it at once)")
      ->capture_default_str();
  serve
      ->add_option("--host-pause", options.host_pause,
                   "Pause an opportunistic job whose memory is mostly on the host while "
                   "production runs: on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  serve
      ->add_option("--checkpoint", options.checkpoint,
                   "Use the driver's process checkpoint (migrate, and a suspend that frees "
                   "everything): on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  serve
      ->add_option("--migration-policy", options.migration_policy,
                   "Move an opportunistic job to an idle GPU when production uses its GPU: "
                   "on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  serve->add_option("--metrics-listen", options.metrics_listen,
                    "Serve Prometheus metrics at http://ADDR:PORT/metrics (default: off)");

  add_format(app.add_subcommand("ls", "List jobs"));
  CLI::App* show = app.add_subcommand("show", "Show one job");
  add_job(show);
  add_format(show);
  add_format(app.add_subcommand("node", "Show devices and totals per class"));

  CLI::App* set = app.add_subcommand("set", "Change a job's limits or class");
  add_job(set);
  set->add_option("--mem-limit", options.mem_limit, "New memory limit (SIZE, N%, or none)");
  set->add_option("properties", options.properties,
                  "KEY=VALUE properties (mem-limit, qos, name, compute)");
  add_format(set);
  for (const char* name : {"pause", "resume", "suspend"}) {
    std::string verb_name = name;
    const char* what = verb_name == "pause"    ? "Hold a job's kernel launches"
                       : verb_name == "resume" ? "Let a paused or suspended job run again"
                                               : "Move a job's device memory to the host";
    CLI::App* verb = app.add_subcommand(name, what);
    add_job(verb);
    add_format(verb);
    if (verb_name == "pause") continue;
    verb->add_flag("--no-wait", options.no_wait,
                   "Print the coordinator's answer without waiting for the move");
    verb->add_option("--wait-timeout", options.wait_timeout,
                     "Longest wait for the job's memory to move")
        ->capture_default_str();
  }
  CLI::App* migrate =
      app.add_subcommand("migrate", "Move a running job to another GPU (driver checkpoint)");
  add_job(migrate);
  migrate->add_option("--to", options.to, "The GPU: an index or a UUID")->required();
  add_format(migrate);
  migrate->add_flag("--no-wait", options.no_wait,
                    "Print the coordinator's answer without waiting for the move");
  migrate->add_option("--wait-timeout", options.wait_timeout, "Longest wait for the move")
      ->capture_default_str();
  CLI::App* watch = app.add_subcommand("watch", "Print job records at an interval");
  watch->add_option("--interval", options.interval, "Time between samples")->capture_default_str();
  watch->add_option("--count", options.count, "Stop after N samples (0: until interrupted)")
      ->capture_default_str();
  add_format(watch);
  app.add_subcommand("metrics", "Print the node's state as Prometheus metrics");
  CLI::App* top = app.add_subcommand("top", "Show the node's jobs live on a terminal");
  top->add_option("--interval", options.interval, "Time between refreshes")->capture_default_str();

  CLI::App* tree = app.add_subcommand(
      "tree-file", "Create a job's tree file for another user (the Slurm Prolog's)");
  tree->add_option("path", options.tree_path, "Where (a new file)")->required();
  tree->add_option("--owner", options.owner, "UID[:GID] of the job's user (default: the caller)");

  // Global options (--socket, --timeout) are taken after the verb too
  // ("gpushare-ctl serve --socket PATH"), as people write them both ways.
  for (CLI::App* verb : app.get_subcommands({})) verb->fallthrough();

  if (auto status = gpushare::cli::parse(app, argc, argv, gpushare::exit_status::kUsage)) {
    return *status;
  }
  options.verb = app.get_subcommands().front()->get_name();
  return run(options);
}
