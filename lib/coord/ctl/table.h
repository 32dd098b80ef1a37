// Tables for people, from the same records the JSON output prints: the
// short one a terminal gets (job_table_short, fitted to its width), every
// column (--format wide, and its old name table), the node's, and the
// cells gpushare-ctl top shares with them. Every string cell is escaped
// for the terminal (job names are other users' input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::ctl {

/// Job records (kind "job") as a table with a header line, every column.
std::string job_table(const std::vector<nlohmann::ordered_json>& records);

/// Job records as the terminal's table: ID, NAME, CLASS, GPU, MEMORY
/// (used/limit), SPEED, SOLO/FREE (production: speed as a percentage of
/// its solo speed; opportunistic: its share of the free GPU time), HOLD,
/// STATE; the names shrink first so that lines fit `width` columns.
std::string job_table_short(const std::vector<nlohmann::ordered_json>& records,
                            std::size_t width = 100);

/// Device records and the node summary as a table.
std::string node_table(const std::vector<nlohmann::ordered_json>& records);

/// The cells of the short table, for top.
std::string class_word(const nlohmann::ordered_json& record);       ///< prod, opp
std::string memory_cell(const nlohmann::ordered_json& record);      ///< "1.5GiB/8GiB"
std::string speed_cell(const nlohmann::ordered_json& record);       ///< "41.2 it/s"
std::string solo_or_free_cell(const nlohmann::ordered_json& record);  ///< "98% solo", "62% free"
/// The state, with pause reasons and the rank waited for or whose wait is used.
std::string state_cell(const nlohmann::ordered_json& record);

/// Terminal columns `text` takes: one per UTF-8 character.
std::size_t display_width(std::string_view text);
/// `text` cut to `width` columns, its last one '~' when cut.
std::string fit(std::string_view text, std::size_t width);
/// A size for a narrow cell: "1.5GiB", "512MiB", "16GiB" (truncated).
std::string short_size(std::uint64_t bytes);
/// Three significant digits or so: "41.2", "812", "3.05".
std::string short_number(double value);
/// Rows as columns two spaces apart, each line fitted to `width`: column
/// `squeeze` gives up its width first (down to `min_squeeze`), then lines
/// are cut.
std::string render_fitted(const std::vector<std::vector<std::string>>& rows, std::size_t width,
                          std::size_t squeeze, std::size_t min_squeeze = 8);

}  // namespace gpushare::ctl
