// The cluster as TOML again, after placement (--state-out): the same
// format the loader reads, with every value written out (mem_bytes and
// mem_used_bytes in bytes, utilisation exactly), so loading it back gives
// an equal Cluster and placing more jobs on it gives what placing them in
// the first run would have.
#pragma once

#include <string>

#include "common/result.h"
#include "place/cluster/cluster.h"

namespace gpushare::place {

std::string cluster_to_toml(const Cluster& cluster);

/// Writes the TOML to `path` through a temporary file and a rename, so a
/// reader never sees half a file.
Status write_state(const Cluster& cluster, const std::string& path);

}  // namespace gpushare::place
