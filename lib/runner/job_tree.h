// The lifetime of a job's tree file, owned by
// gpushare-run: created before exec, removed by a janitor once no process
// of the job is left (job_tree.cc).
#pragma once

#include <string>

#include "common/result.h"

namespace gpushare {

/// Creates the job's tree file for the process that is about to exec the
/// job (this one), and starts its janitor: `program` (gpushare-run, which
/// calls tree_janitor_main first) exec'd in janitor mode, or with an empty
/// `program` (or when that exec fails) a forked copy of this process.
/// Returns the file's path, for GPUSHARE_TREE. An Error says why there is
/// none (the interposer then makes one itself, removed when the job's
/// first process exits).
Result<std::string> start_job_tree(const std::string& program);

/// The janitor's entry point, called first thing in gpushare-run's main:
/// -1 when the command line is not the janitor's ("gpushare-tree
/// --tree-janitor PATH", as start_job_tree execs it); otherwise it does
/// not return, unless its descriptors are not those start_job_tree sets
/// up (125).
int tree_janitor_main(int argc, char** argv);

}  // namespace gpushare
