// gpushare-place: job placements after AntMan's Algorithm 1, from a TOML
// cluster description and jobs as JSON Lines on stdin.
//
// main() parses into PlaceOptions and calls run(), which reads the cluster,
// places each job in input order, prints each placement as it is made, and
// writes the cluster's new state if asked. The rules live in lib/place.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "common/cli.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "place/cluster/cluster_toml.h"
#include "place/cluster/state_writer.h"
#include "place/format.h"
#include "place/job/job_reader.h"
#include "place/placer.h"
#include "replay_command.h"
#include "slurm_state.h"

namespace {

using gpushare::diag::error;
namespace exit_status = gpushare::exit_status;
namespace place = gpushare::place;

struct PlaceOptions {
  std::string cluster_file;
  std::string jobs_file = "-";
  place::Format format = place::Format::kJson;
  bool explain = false;
  std::string state_out;
  std::string slurm_state;  // --slurm-state DIR
};

/// Writes records in batches, but never holds one back while waiting for
/// input: a consumer in a pipeline sees each placement before the next job
/// is read, and a batch of 100,000 jobs costs hundreds of writes, not
/// 100,000.
class Output {
 public:
  explicit Output(std::streambuf* input) : input_(input) {}
  ~Output() { flush(); }

  void line(const std::string& text) {
    buffer_ += text;
    buffer_ += '\n';
    // Whitespace left after a record does not count as input waiting.
    while (input_->in_avail() > 0 && std::isspace(input_->sgetc())) input_->sbumpc();
    if (input_->in_avail() <= 0 || buffer_.size() >= kBatchBytes) flush();
  }

  void flush() {
    if (buffer_.empty()) return;
    std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
    std::fflush(stdout);
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kBatchBytes = 1 << 16;
  std::streambuf* input_;
  std::string buffer_;
};

/// Places one record; input errors become unplaced placements and are
/// reported on stderr, after the placements printed before them.
place::Placement place_record(place::Placer& placer, const place::JobRecord& record,
                              const place::JobReader& reader, bool explain, int* input_errors,
                              Output* output) {
  std::string message = record.error;
  if (record.job) {
    place::Placement placement = placer.place(*record.job, explain);
    if (!placement.input_error) return placement;
    message = reader.source_name() + ": record " + std::to_string(reader.record_number()) +
              ": job " + place::quoted(record.job->id) + ": " + placement.reason;
  }
  ++*input_errors;
  if (output != nullptr) output->flush();
  error(message);
  return place::input_error(record.id, "invalid: " + message);
}

/// --format env: exactly one job, printed only if placed on one node.
int run_env(place::Placer& placer, place::JobReader& reader) {
  place::JobRecord first;
  if (!reader.next(&first)) {
    error(reader.source_name() + ": no job to place (--format env takes exactly one)");
    return exit_status::kUsage;
  }
  place::JobRecord second;
  if (reader.next(&second)) {
    error(reader.source_name() + ": more than one job (--format env takes exactly one)");
    return exit_status::kUsage;
  }
  int input_errors = 0;
  place::Placement placement = place_record(placer, first, reader, false, &input_errors, nullptr);
  if (input_errors > 0) return exit_status::kUsage;
  auto text = place::env_assignments(placement);
  if (!text) {
    error(text.error().message);
    return exit_status::kFailure;
  }
  std::fwrite(text->data(), 1, text->size(), stdout);
  std::fflush(stdout);
  return exit_status::kSuccess;
}

int run(const PlaceOptions& options) {
  // The cluster first: no job can be placed without it.
  if (options.cluster_file.empty()) {
    error("no cluster file: give --cluster FILE or set GPUSHARE_CLUSTER");
    gpushare::diag::usage_hint();
    return exit_status::kUsage;
  }
  auto cluster = place::load_cluster(options.cluster_file);
  if (!cluster) {
    error(cluster.error().message);
    return exit_status::kUsage;
  }
  if (!options.slurm_state.empty()) {
    if (auto applied = gpushare::place_cmd::apply_slurm_dir(&*cluster, options.slurm_state);
        !applied) {
      error(applied.error().message);
      return exit_status::kUsage;
    }
  }
  place::Placer placer(std::move(*cluster));

  std::ifstream jobs_file;
  if (options.jobs_file != "-") {
    jobs_file.open(options.jobs_file, std::ios::binary);
    if (!jobs_file) {
      error(options.jobs_file + ": cannot open: " + std::strerror(errno));
      return exit_status::kUsage;
    }
  }
  std::istream& in = options.jobs_file == "-" ? std::cin : jobs_file;
  place::JobReader reader(in, options.jobs_file == "-" ? "stdin" : options.jobs_file);

  int status = exit_status::kSuccess;
  if (options.format == place::Format::kEnv) {
    status = run_env(placer, reader);
  } else {
    // Each job in input order, each seeing the placements before it.
    int input_errors = 0;
    place::JobRecord record;
    Output output(reader.input());
    while (reader.next(&record)) {
      place::Placement placement =
          place_record(placer, record, reader, options.explain, &input_errors, &output);
      output.line(options.format == place::Format::kSlurm ? place::slurm_arguments(placement)
                                                          : place::placement_json(placement));
    }
    output.flush();
    if (input_errors > 0) status = exit_status::kUsage;
  }

  // The state after placement, which a later run can start from.
  if (!options.state_out.empty() && status != exit_status::kFailure) {
    if (auto written = place::write_state(placer.cluster(), options.state_out); !written) {
      error(written.error().message);
      return exit_status::kFailure;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  gpushare::diag::set_program_name("gpushare-place");
  CLI::App app{"Place jobs (JSON Lines on stdin) on a TOML cluster, after AntMan's Algorithm 1.",
               "gpushare-place"};
  gpushare::cli::configure(app, "gpushare-place");
  PlaceOptions options;
  app.add_option("-c,--cluster", options.cluster_file, "Cluster description (TOML)")
      ->envname("GPUSHARE_CLUSTER")
      ->type_name("FILE");
  app.add_option("-j,--jobs", options.jobs_file, "Read jobs from FILE instead of stdin")
      ->type_name("FILE");
  std::string format = "json";
  app.add_option("-f,--format", format, "Output: json, slurm or env (one job)")
      ->check(CLI::IsMember({"json", "slurm", "env"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  app.add_flag("-e,--explain", options.explain, "Say why each GPU not chosen was rejected (json)");
  app.add_option("-s,--state-out", options.state_out,
                 "Write the cluster after placement to FILE (TOML)")
      ->type_name("FILE");

  app.add_option("--slurm-state", options.slurm_state,
                 "Lay Slurm's nodes and running jobs and the nodes' gpushare telemetry, read "
                 "from DIR (gpushare-slurm-state writes it), over the cluster file")
      ->type_name("DIR");

  gpushare::place_cmd::ReplayCommand replay;
  CLI::App* replay_app = gpushare::place_cmd::add_replay_subcommand(app, replay);
  app.require_subcommand(0, 1);

  if (auto status = gpushare::cli::parse(app, argc, argv, exit_status::kUsage)) return *status;
  if (*replay_app) return gpushare::place_cmd::run_replay(replay);

  options.format = format == "slurm" ? place::Format::kSlurm
                   : format == "env" ? place::Format::kEnv
                                     : place::Format::kJson;
  if (options.explain && options.format != place::Format::kJson) {
    error("--explain needs --format json");
    gpushare::diag::usage_hint();
    return exit_status::kUsage;
  }
  return run(options);
}
