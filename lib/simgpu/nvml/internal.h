// What the simulated NVML's files share: NVML's types (the toolkit has no
// nvml.h, so the few used are declared here with their documented
// layouts), the library's one global state, and the checks every entry
// point makes. Plain C-style code: it runs in arbitrary processes without
// libstdc++.
#pragma once

#include <pthread.h>

#include <cstdint>

#include "simgpu/config.h"
#include "simgpu/state.h"

namespace gpushare::simgpu::nvml {

using nvmlReturn_t = int;
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

struct DeviceHandle {
  int index;
};

struct Nvml {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  int references = 0;
  SimConfig config = {};
  StateFile state;
  int device_count = 0;
  DeviceHandle devices[kMaxDevices] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
};
extern Nvml g_nvml;

void log_error(const char* format, ...) __attribute__((format(printf, 1, 2)));

/// NVML_ERROR_UNINITIALIZED before nvmlInit, NVML_ERROR_INVALID_ARGUMENT
/// for a handle that is not one of ours; else sets *device.
nvmlReturn_t check(void* handle, int* device);

/// Copies a NUL-terminated value into a caller's buffer of `length` bytes.
nvmlReturn_t copy_string(const char* value, char* out, unsigned length);

/// Locks the state file (logging why not), reclaiming dead processes.
bool lock_state();
inline void unlock_state() { g_nvml.state.unlock(); }

/// Device busy share in percent (rounded) of [from_ns, to_ns): only process
/// slot `slot`'s kernels, or all when slot is -1. Requires the state lock
/// (it settles the scheduler model up to now).
unsigned busy_percent(int device, std::int64_t from_ns, std::int64_t to_ns, int slot);

/// CLOCK_REALTIME in microseconds: NVML's sample timestamps.
unsigned long long realtime_us();

}  // namespace gpushare::simgpu::nvml

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))
