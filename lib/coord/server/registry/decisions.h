// The coordinator's state file: what it decided for each job (limits set
// live, class, name, pause), so that a restarted coordinator restores them
// when the jobs register again (see Registry::remember).
//
// One JSON object per line, kind "job-decision". Written by atomic replace
// (a temporary file beside it, fsync, rename), so a crash leaves the old
// file or the new one, never half of either. The file is the coordinator's
// own: read only when it is a regular file (not a link) owned by the
// coordinator's user and writable by nobody else.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

/// Reads the state file. A missing file is an empty list; a file that is
/// not the coordinator's own, or not readable as decisions, is an Error
/// (the caller logs it and starts afresh: nothing in it is trusted).
Result<std::vector<Decision>> load_decisions(const std::string& path);

/// Replaces the state file with `decisions`.
Status save_decisions(const std::string& path, const std::vector<Decision>& decisions);

}  // namespace gpushare::coord::server
