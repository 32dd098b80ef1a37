// Reading the cluster description (TOML) strictly.
//
// Every key is known and every value has the right type and range, or the
// result is an Error "FILE:LINE:COL: message" followed by the source line
// and a caret, pointing at the offending key or value. Cross-references
// (a job's tenant, a duplicate node name, two production jobs on one GPU)
// are checked too, after the whole file is read, so the order of sections
// does not matter. The format is documented in gpushare-place(1).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "place/cluster/cluster.h"

namespace gpushare::place {

/// Parses and checks a cluster description; `source_name` names it in errors.
Result<Cluster> parse_cluster(std::string_view text, std::string_view source_name);

/// Reads the file at `path` and parses it.
Result<Cluster> load_cluster(const std::string& path);

}  // namespace gpushare::place
