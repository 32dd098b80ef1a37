// Diagnostics: the one module that writes messages for people, to stderr.
//
//   gpushare-place: error: cluster.toml:3:7: unknown key 'utl'
//   gpushare-run: warning: ...
//
// Only the programs in cmd/ call it; code in lib/ returns Errors instead.
// Each line is formatted whole and written with one call, so lines from
// several threads never interleave.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace gpushare::diag {

enum class Verbosity { kQuiet = 0, kNormal = 1, kVerbose = 2, kDebug = 3 };

/// Sets the prefix, e.g. "gpushare-place". Call first thing in main().
void set_program_name(std::string_view name);
/// The prefix set (progress lines on a terminal start with it).
const std::string& program_name();

/// kQuiet hides warnings and notes; errors are always shown.
void set_verbosity(Verbosity level);

/// Redirects output (tests); nullptr restores stderr.
void set_stream(std::FILE* stream);

void error(std::string_view message);
void warning(std::string_view message);
void note(std::string_view message);   ///< shown at kVerbose and above
void debug(std::string_view message);  ///< shown at kDebug

/// "Try 'PROGRAM --help' for more information." after a usage error.
void usage_hint();

/// `text` safe for a terminal: control characters (but tab), DEL, the C1
/// controls and bytes that are not UTF-8 become escapes ("\n", "\x1b",
/// "\xff"); printable UTF-8 is kept. Messages quote input, and input may
/// be binary or hostile: error() and the others apply it to every line.
std::string printable(std::string_view text);

/// "FILE:LINE:COL: MESSAGE", the location format of input-file errors.
std::string at(std::string_view file, long line, long column, std::string_view message);

/// The offending source line and a caret under COLUMN (1-based, counted
/// in characters), two lines indented by two spaces, for appending below
/// an error. The line is made printable, and the caret still points at
/// the character it named.
std::string excerpt(std::string_view source_line, long column);

}  // namespace gpushare::diag
