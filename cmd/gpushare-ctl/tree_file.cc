// gpushare-ctl tree-file PATH --owner UID[:GID]: a job's tree file, made
// for a job whose processes do not descend from one another.
//
// A job is the process tree that shares one tree file (design.md, "The tree
// file"): gpushare-run makes it and every descendant inherits its path.
// Slurm starts each task of a job (the batch script, each srun task) from
// slurmstepd, as a tree of its own, so a data-parallel job's ranks would be
// as many jobs. The Slurm Prolog, as root, once per job and node, makes
// the file here, owned by the job's user and private to it, in a directory
// only root writes; the TaskProlog hands its path to every task
// (GPUSHARE_TREE), and the Epilog removes it. The user's processes and the
// coordinator accept only a private file of the user's own, so another
// user who names the path joins nothing (gpushare-slurm(7), SECURITY).
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

#include "common/diag.h"
#include "common/exit_status.h"
#include "coord/contract/tree_file.h"
#include "ctl.h"

namespace gpushare::ctl {
namespace {

bool parse_id(std::string_view text, unsigned* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

int tree_file(const CtlOptions& options) {
  unsigned uid = geteuid(), gid = getegid();
  if (!options.owner.empty()) {
    std::string_view owner = options.owner;
    std::size_t colon = owner.find(':');
    bool ok = parse_id(owner.substr(0, colon), &uid);
    if (colon != std::string_view::npos) ok = ok && parse_id(owner.substr(colon + 1), &gid);
    if (!ok) {
      diag::error("--owner '" + options.owner + "': expected UID or UID:GID (numbers)");
      return exit_status::kUsage;
    }
  }
  if (coord::create_tree_file_at(options.tree_path.c_str(), static_cast<uid_t>(uid),
                                 static_cast<gid_t>(gid)) != 0) {
    diag::error("cannot create the tree file " + options.tree_path + ": " +
                std::strerror(errno));
    return exit_status::kFailure;
  }
  return exit_status::kSuccess;
}

}  // namespace gpushare::ctl
