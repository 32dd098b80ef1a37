// The interposer's log: stderr, "gpushare[PID]: message", at or below the
// level read once from GPUSHARE_LOG. One write(2) per message, so lines of
// concurrent threads never interleave.
#pragma once

#include "interpose/core/settings.h"

namespace gpushare::interpose {

bool log_enabled(LogLevel level);
void log_message(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace gpushare::interpose

#define GS_LOG(level, ...)                                                            \
  do {                                                                                \
    if (::gpushare::interpose::log_enabled(level))                                    \
      ::gpushare::interpose::log_message(level, __VA_ARGS__);                         \
  } while (0)
#define GS_DEBUG(...) GS_LOG(::gpushare::interpose::LogLevel::kDebug, __VA_ARGS__)
#define GS_INFO(...) GS_LOG(::gpushare::interpose::LogLevel::kInfo, __VA_ARGS__)
#define GS_WARN(...) GS_LOG(::gpushare::interpose::LogLevel::kWarning, __VA_ARGS__)
#define GS_ERROR(...) GS_LOG(::gpushare::interpose::LogLevel::kError, __VA_ARGS__)
