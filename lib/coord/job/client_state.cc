// The client's shared state and its small helpers (client_state.h). No
// libstdc++: libc only.
#include "coord/job/client_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gpushare::coord::job::client_detail {

constinit Config g_config{};
constinit State g_state{};

namespace {

// Where the client's messages go: the interposer's log when it gave one,
// else stderr (GPUSHARE_DEBUG).
void write_log(const char* message) {
  if (g_config.log != nullptr) {
    g_config.log(message);
  } else {
    dprintf(2, "gpushare[%d]: coord: %s\n", static_cast<int>(getpid()), message);
  }
}

}  // namespace

void log_line(const char* format, ...) {
  if (g_config.log == nullptr && !g_config.debug) return;
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  write_log(message);
}

void warn_line(const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (g_config.warn != nullptr) {
    g_config.warn(message);
  } else if (g_config.log != nullptr || g_config.debug) {
    write_log(message);  // as log_line would, without formatting it again
  }
}

int remaining_ms(std::uint64_t deadline_ns) {
  std::uint64_t now = now_ns();
  if (now >= deadline_ns) return 0;
  return static_cast<int>((deadline_ns - now + 999999) / 1000000);
}

long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace gpushare::coord::job::client_detail
