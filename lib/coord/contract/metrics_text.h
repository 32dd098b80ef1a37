// The node's state in Prometheus' text exposition format (version 0.0.4),
// made from the records `gpushare-ctl ls` and `node` print: the same text
// comes from `gpushare-ctl metrics` (records fetched over the socket) and
// from the coordinator's /metrics endpoint (records made in place), so the
// two cannot drift apart. The metric names are listed in gpushare-ctl(1),
// METRICS.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::coord {

/// The records of a job list and a node report (kinds "job", "device" and
/// "node"; others are ignored), as exposition text: HELP and TYPE lines for
/// every family, each family's samples together.
std::string prometheus_text(const std::vector<nlohmann::ordered_json>& records);

/// A label value as the format wants it: backslash, double quote and line
/// feed escaped.
std::string escape_label_value(std::string_view value);

}  // namespace gpushare::coord
