// The interposer's settings, read once from the environment at load time.
// Plain data with fixed buffers: the interposer may not use libstdc++.
#pragma once

#include <cstdint>

#include "common/size_core.h"

namespace gpushare::interpose {

enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };
enum class QosClass : int { kProduction = 0, kOpportunistic = 1 };

inline constexpr std::uint64_t kNoLimit = ~0ull;

struct Settings {
  bool disabled = false;  ///< GPUSHARE_DISABLE=1: pass everything through
  LogLevel log_level = LogLevel::kError;
  QosClass qos = QosClass::kProduction;
  /// GPUSHARE_SPILL=off: an opportunistic job's allocations stay device
  /// memory (a hard wall, as before issue 11); on (the default): managed.
  bool spill = true;
  /// GPUSHARE_SUSPENDABLE=on (gpushare-run --suspendable): plain device
  /// allocations are backed by the VMM API so that `gpushare-ctl suspend`
  /// can free them (vmm_backing.h); off (the default): ordinary memory.
  bool suspendable = false;
  bool has_mem_limit = false;
  SizeSpec mem_limit;  ///< resolved per device: a percentage needs its capacity
  char job_name[129] = {};
  char socket_path[108] = {};
  /// Non-empty when a setting is invalid: CUDA initialisation then fails
  /// with this message instead of running unlimited.
  char error[320] = {};
};

using GetEnvFunction = const char* (*)(const char*);

/// Reads GPUSHARE_DISABLE, GPUSHARE_LOG, GPUSHARE_QOS, GPUSHARE_MEM_LIMIT,
/// GPUSHARE_SPILL, GPUSHARE_SUSPENDABLE, GPUSHARE_JOB and GPUSHARE_SOCKET. Never fails: errors land in `error`.
void read_settings(GetEnvFunction getenv, Settings* settings);

/// The job's limit on a device of `physical_total` bytes, or kNoLimit.
std::uint64_t mem_limit_for(const Settings& settings, std::uint64_t physical_total);

const char* qos_name(QosClass qos);

}  // namespace gpushare::interpose
