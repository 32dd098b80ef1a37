// The lifetime of a job's tree file (issue 18, item 5), owned by
// gpushare-run: created before exec, removed by a janitor once no process
// of the job is left (job_tree.cc).
#pragma once

#include <string>

#include "common/result.h"

namespace gpushare {

/// Creates the job's tree file for the process that is about to exec the
/// job (this one), and starts its janitor. Returns the file's path, for
/// GPUSHARE_TREE. An Error says why there is none (the interposer then
/// makes one itself, removed when the job's first process exits).
Result<std::string> start_job_tree();

}  // namespace gpushare
