// A long-running program's log file (gpushare-ctl serve --log-file): opened
// for appending without following a link planted at its name, and each line
// stamped with the UTC time, since a coordinator runs for days.
#pragma once

#include <cstdio>
#include <string>

#include "common/result.h"

namespace gpushare {

/// Opens `path` for appending (created 0600 when absent), line-buffered.
/// Refuses a symbolic link at the name (one planted there would make a
/// coordinator, root's included, write wherever it points) and anything
/// but a regular file. The caller closes the stream.
Result<std::FILE*> open_log_file(const std::string& path);

/// "2026-11-25T19:30:00.123Z message".
std::string utc_stamped(const std::string& message);

}  // namespace gpushare
