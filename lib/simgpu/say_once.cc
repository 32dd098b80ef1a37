#include "simgpu/say_once.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace gpushare::simgpu {

void say_once(int* said, const char* format, ...) {
  if (__atomic_exchange_n(said, 1, __ATOMIC_RELAXED) != 0) return;
  char line[256];
  va_list arguments;
  va_start(arguments, format);
  int length = std::vsnprintf(line, sizeof line, format, arguments);
  va_end(arguments);
  if (length <= 0) return;
  ssize_t ignored =
      ::write(2, line,
              static_cast<std::size_t>(length) < sizeof line ? static_cast<std::size_t>(length)
                                                             : sizeof line - 1);
  (void)ignored;
}

}  // namespace gpushare::simgpu
