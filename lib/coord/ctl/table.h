// --format table: aligned columns for people, from the same records the
// JSON output prints.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace gpushare::ctl {

/// Job records (kind "job") as a table with a header line.
std::string job_table(const std::vector<nlohmann::ordered_json>& records);

/// Device records and the node summary as a table.
std::string node_table(const std::vector<nlohmann::ordered_json>& records);

}  // namespace gpushare::ctl
