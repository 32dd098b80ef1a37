// Exit status of every gpushare program (docs/design.md, "Exit status").
#pragma once

namespace gpushare::exit_status {

// The JSON tools: gpushare-ctl, gpushare-probe, gpushare-place.
inline constexpr int kSuccess = 0;
inline constexpr int kFailure = 1;  ///< failure at run time
inline constexpr int kUsage = 2;    ///< usage error or unusable input

// gpushare-run, like nice(1) and env(1): the command's own status, or these.
inline constexpr int kRunFailed = 125;      ///< gpushare-run itself failed, usage errors included
inline constexpr int kCannotExecute = 126;  ///< the command was found but could not run
inline constexpr int kNotFound = 127;       ///< the command was not found

}  // namespace gpushare::exit_status
