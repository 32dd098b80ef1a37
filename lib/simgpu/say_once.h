// One line on stderr, once: how the simulated driver and the simulated NVML
// say that a program called an entry point they do not implement or model
// (driver/exports.cc, nvml/unmodelled.cc), without repeating it at every
// call. A library loaded into someone else's program has no caller to
// return a diagnostic to, so it writes the line itself (docs/style.md,
// Errors). libc only: no allocation, one write(2).
#pragma once

namespace gpushare::simgpu {

/// The first call with `*said` at 0 sets it and writes the formatted line
/// (at most 255 bytes; the caller ends it with '\n') to stderr; later calls
/// write nothing. Safe from any thread.
void say_once(int* said, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace gpushare::simgpu
