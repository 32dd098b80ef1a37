// Command-line conventions shared by the four programs, over CLI11.
//
// - `--help` prints short help on stdout, exit 0, ending with a pointer to
//   the man page; `--version` prints "PROGRAM VERSION" and, when built from
//   a git checkout, " (commit HASH)".
// - A parse error prints "PROGRAM: error: WHAT" and "Try 'PROGRAM --help'
//   ..." on stderr and yields the program's usage status (125 for
//   gpushare-run, 2 for the others). CLI11's own 100+ codes never escape.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string_view>

namespace gpushare::cli {

/// Adds --version, the man-page footer and the house help layout.
void configure(CLI::App& app, std::string_view program);

/// Parses argv. Returns nullopt to go on, or the exit status to return now
/// (0 after --help/--version, `usage_status` after an error).
std::optional<int> parse(CLI::App& app, int argc, char** argv, int usage_status);

}  // namespace gpushare::cli
