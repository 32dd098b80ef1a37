#include "interpose/core/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

#include "interpose/core/runtime.h"

namespace gpushare::interpose {

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(g_runtime.settings.log_level);
}

void log_message(LogLevel level, const char* format, ...) {
  static const char* const kLevelNames[] = {"error: ", "warning: ", "", ""};
  char line[1024];
  int prefix = std::snprintf(line, sizeof line, "gpushare[%d]: %s", static_cast<int>(getpid()),
                             kLevelNames[static_cast<int>(level)]);
  va_list arguments;
  va_start(arguments, format);
  int body = std::vsnprintf(line + prefix, sizeof line - prefix - 1, format, arguments);
  va_end(arguments);
  std::size_t length = static_cast<std::size_t>(prefix) + (body < 0 ? 0 : static_cast<std::size_t>(body));
  if (length > sizeof line - 2) length = sizeof line - 2;
  line[length++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, length);
  (void)ignored;
}

}  // namespace gpushare::interpose
