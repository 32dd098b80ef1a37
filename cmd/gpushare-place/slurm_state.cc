#include "slurm_state.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/diag.h"
#include "place/cluster/cluster_slurm.h"

namespace gpushare::place_cmd {
namespace {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path.string() + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(path.string() + ": cannot read");
  return text.str();
}

}  // namespace

Status apply_slurm_dir(place::Cluster* cluster, const std::string& dir) {
  place::SlurmState state;
  auto sinfo = read_file(std::filesystem::path(dir) / "sinfo.json");
  if (!sinfo) return sinfo.error();
  auto squeue = read_file(std::filesystem::path(dir) / "squeue.json");
  if (!squeue) return squeue.error();
  state.sinfo_json = std::move(*sinfo);
  state.squeue_json = std::move(*squeue);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".jsonl") continue;
    auto lines = read_file(entry.path());
    if (!lines) return lines.error();
    state.telemetry.emplace_back(entry.path().stem().string(), std::move(*lines));
  }
  if (ec) return make_error(dir + ": cannot list: " + ec.message());
  auto notes = place::apply_slurm_state(cluster, state);
  if (!notes) return make_error(dir + ": " + notes.error().message);
  for (const std::string& note : *notes) diag::warning(diag::printable(note));
  return {};
}

}  // namespace gpushare::place_cmd
