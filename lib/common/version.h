#pragma once

namespace gpushare {

/// The project's version, e.g. "0.1.0", from CMake's project(VERSION).
const char* version();

/// The git commit the build was made from, e.g. "0123456789ab" or
/// "0123456789ab-dirty" (tracked files differed from it), or "" when it was
/// not built from a git checkout.
const char* build_commit();

/// What --version prints after the program's name: "0.1.0", or
/// "0.1.0 (commit 0123456789ab)" when the build commit is known.
const char* version_line();

}  // namespace gpushare
