#include "simgpu/config.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "simgpu/collective.h"
#include "vocab/size.h"

namespace gpushare::simgpu {
namespace {

// Parses one size ("16GiB"); percentages make no sense for a device's size.
bool parse_one_size(std::string_view text, std::uint64_t* bytes, const char** why) {
  SizeSpec spec;
  std::string_view unit;
  SizeError error = parse_size_spec(text, &spec, &unit);
  if (error == SizeError::kNone) error = resolve_size(spec, false, 0, bytes);
  if (error != SizeError::kNone) {
    *why = size_error_reason(error);
    return false;
  }
  return true;
}

// A plain non-negative integer with no unit.
bool parse_count(std::string_view text, std::uint64_t* value, const char** why) {
  SizeSpec spec;
  std::string_view rest;
  SizeError error = parse_decimal_prefix(text, &spec, &rest);
  if (error != SizeError::kNone) {
    *why = size_error_reason(error);
    return false;
  }
  if (spec.has_fraction || !rest.empty()) {
    *why = "is not a whole number";
    return false;
  }
  *value = spec.whole;
  return true;
}

// Fractional factors such as "2.5", in thousandths.
bool parse_milli(std::string_view text, std::uint64_t* milli, const char** why) {
  SizeSpec spec;
  std::string_view rest;
  SizeError error = parse_decimal_prefix(text, &spec, &rest);
  if (error == SizeError::kNone && !rest.empty()) {
    *why = "is not a number";
    return false;
  }
  if (error == SizeError::kNone && !scale_decimal(spec, 1000, milli)) error = SizeError::kTooLarge;
  if (error != SizeError::kNone) {
    *why = size_error_reason(error);
    return false;
  }
  return true;
}

struct Reporter {
  char* error;
  std::size_t error_bytes;
  bool fail(const char* name, const char* value, const char* why) const {
    std::snprintf(error, error_bytes, "%s: '%s' %s", name, value, why);
    return false;
  }
  bool fail_range(const char* name, const char* value, const char* range) const {
    std::snprintf(error, error_bytes, "%s: '%s' is out of range (%s)", name, value, range);
    return false;
  }
};

enum class ListKind { kSize, kCount };

// "16GiB" or "16GiB,8GiB": one value per device, the last repeating.
bool parse_device_list(const char* name, const char* text, ListKind kind, std::uint64_t* values,
                       const Reporter& report) {
  std::string_view all(text);
  int index = 0;
  std::uint64_t last = 0;
  while (true) {
    std::size_t comma = all.find(',');
    // Not substr: it may throw, and this code links without libstdc++.
    std::string_view item(all.data(), comma == std::string_view::npos ? all.size() : comma);
    if (index == kMaxDevices) return report.fail_range(name, text, "at most 8 values");
    const char* why = nullptr;
    bool ok = kind == ListKind::kSize ? parse_one_size(item, &last, &why)
                                      : parse_count(item, &last, &why);
    if (!ok) return report.fail(name, text, why);
    values[index++] = last;
    if (comma == std::string_view::npos) break;
    all.remove_prefix(comma + 1);
  }
  for (; index < kMaxDevices; ++index) values[index] = last;
  return true;
}

bool read_count(EnvLookup lookup, void* context, const char* name, std::uint64_t low,
                std::uint64_t high, const char* range, std::uint64_t* value,
                const Reporter& report) {
  const char* text = lookup(name, context);
  if (text == nullptr) return true;
  const char* why = nullptr;
  if (!parse_count(text, value, &why)) return report.fail(name, text, why);
  if (*value < low || *value > high) return report.fail_range(name, text, range);
  return true;
}

// GPUSHARE_SIM_PCIE_GBPS, GPUSHARE_SIM_PCIE_LATENCY_US, GPUSHARE_SIM_DTOD_GBPS,
// GPUSHARE_SIM_MIGRATE_BANDWIDTH and GPUSHARE_SIM_EVICT.
bool read_link(EnvLookup lookup, void* context, SimConfig* config, const Reporter& report) {
  struct Speed {
    const char* name;
    std::uint64_t* bytes_per_s;
    std::uint64_t fallback;
  };
  const Speed speeds[] = {
      {"GPUSHARE_SIM_PCIE_GBPS", &config->link_bytes_per_s, kDefaultLinkBytesPerS},
      {"GPUSHARE_SIM_DTOD_GBPS", &config->local_bytes_per_s, kDefaultLocalBytesPerS}};
  for (const Speed& speed : speeds) {
    *speed.bytes_per_s = speed.fallback;
    const char* text = lookup(speed.name, context);
    if (text == nullptr) continue;
    const char* why = nullptr;
    std::uint64_t milli = 0;  // thousandths of a GB/s: MB/s
    if (!parse_milli(text, &milli, &why)) return report.fail(speed.name, text, why);
    if (milli < 1 || milli > 100'000'000) {
      return report.fail_range(speed.name, text, "0.001 to 100000 (GB/s)");
    }
    *speed.bytes_per_s = milli * 1'000'000;
  }
  std::uint64_t value = kDefaultLinkLatencyNs / 1000;
  if (!read_count(lookup, context, "GPUSHARE_SIM_PCIE_LATENCY_US", 0, 1000000, "0 to 1000000",
                  &value, report)) {
    return false;
  }
  config->link_latency_ns = static_cast<std::int64_t>(value) * 1000;

  config->migrate_bytes_per_s = 0;  // migrations run at the link's speed
  if (const char* text = lookup("GPUSHARE_SIM_MIGRATE_BANDWIDTH", context)) {
    const char* why = nullptr;
    std::uint64_t bytes = 0;
    if (!parse_one_size(text, &bytes, &why)) {
      return report.fail("GPUSHARE_SIM_MIGRATE_BANDWIDTH", text, why);
    }
    if (bytes < (1ull << 20)) {
      return report.fail_range("GPUSHARE_SIM_MIGRATE_BANDWIDTH", text, "at least 1MiB per second");
    }
    config->migrate_bytes_per_s = bytes;
  }

  config->evict = true;
  if (const char* text = lookup("GPUSHARE_SIM_EVICT", context)) {
    std::string_view word(text);
    if (word != "on" && word != "off") {
      return report.fail("GPUSHARE_SIM_EVICT", text, "is neither 'on' nor 'off'");
    }
    config->evict = word == "on";
  }
  return true;
}

// GPUSHARE_SIM_GPU_LINK and GPUSHARE_SIM_GPU_LINK_GBPS: the link between
// GPUs that collectives use (collective.h).
bool read_gpu_link(EnvLookup lookup, void* context, SimConfig* config, const Reporter& report) {
  config->gpu_link_bytes_per_s = kNvlinkBytesPerS;
  config->gpu_link_latency_ns = kNvlinkLatencyNs;
  if (const char* text = lookup("GPUSHARE_SIM_GPU_LINK", context)) {
    if (std::strcmp(text, "pcie") == 0) {
      config->gpu_link_bytes_per_s = kPcieP2pBytesPerS;
      config->gpu_link_latency_ns = kPcieP2pLatencyNs;
    } else if (std::strcmp(text, "nvlink") != 0) {
      return report.fail("GPUSHARE_SIM_GPU_LINK", text, "is neither 'nvlink' nor 'pcie'");
    }
  }
  if (const char* text = lookup("GPUSHARE_SIM_GPU_LINK_GBPS", context)) {
    const char* why = nullptr;
    std::uint64_t milli = 0;  // thousandths of a GB/s: MB/s
    if (!parse_milli(text, &milli, &why)) return report.fail("GPUSHARE_SIM_GPU_LINK_GBPS", text, why);
    if (milli < 1 || milli > 100'000'000) {
      return report.fail_range("GPUSHARE_SIM_GPU_LINK_GBPS", text, "0.001 to 100000 (GB/s)");
    }
    config->gpu_link_bytes_per_s = milli * 1'000'000;
  }
  return true;
}

// GPUSHARE_SIM_SCHED, GPUSHARE_SIM_TIMESLICE, GPUSHARE_SIM_SWITCH_US and
// GPUSHARE_SIM_SWITCH_COLD_US.
bool read_scheduling(EnvLookup lookup, void* context, SimConfig* config, const Reporter& report) {
  config->sched_policy = 0;
  if (const char* text = lookup("GPUSHARE_SIM_SCHED", context)) {
    if (std::strcmp(text, "fifo") == 0) {
      config->sched_policy = 1;
    } else if (std::strcmp(text, "timeslice") != 0) {
      return report.fail("GPUSHARE_SIM_SCHED", text, "is neither 'timeslice' nor 'fifo'");
    }
  }
  config->timeslice_ns = kDefaultTimesliceNs;
  if (const char* text = lookup("GPUSHARE_SIM_TIMESLICE", context)) {
    std::uint64_t micro = 0;  // thousandths of a millisecond
    const char* why = nullptr;
    if (!parse_milli(text, &micro, &why)) return report.fail("GPUSHARE_SIM_TIMESLICE", text, why);
    if (micro < 10 || micro > 1000000) {
      return report.fail_range("GPUSHARE_SIM_TIMESLICE", text, "0.01 to 1000 milliseconds");
    }
    config->timeslice_ns = static_cast<std::int64_t>(micro) * 1000;
  }
  std::uint64_t value = kDefaultSwitchNs / 1000;
  if (!read_count(lookup, context, "GPUSHARE_SIM_SWITCH_US", 0, 100000, "0 to 100000", &value,
                  report)) {
    return false;
  }
  config->switch_ns = static_cast<std::int64_t>(value) * 1000;
  std::uint64_t cold = kDefaultColdNs / 1000;
  if (!read_count(lookup, context, "GPUSHARE_SIM_SWITCH_COLD_US", 0, 100000, "0 to 100000", &cold,
                  report)) {
    return false;
  }
  config->cold_ns = static_cast<std::int64_t>(cold) * 1000;
  return true;
}

// In a directory of the user's own (gpushare-sim.UID): a predictable file name in /dev/shm
// could be created first by another user, who could then truncate it under
// the victim's processes.
void default_state_path(char* path) {
  const char* directory = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::snprintf(path, kPathBytes, "%s/gpushare-sim.%u/state", directory,
                static_cast<unsigned>(getuid()));
}

const char* lookup_environment(const char* name, void*) { return std::getenv(name); }

}  // namespace

bool load_config(EnvLookup lookup, void* context, SimConfig* config, char* error,
                 std::size_t error_bytes) {
  std::memset(config, 0, sizeof *config);
  Reporter report{error, error_bytes};
  if (error_bytes > 0) error[0] = '\0';

  const char* path = lookup("GPUSHARE_SIM_STATE", context);
  if (path != nullptr && path[0] == '\0') {
    return report.fail("GPUSHARE_SIM_STATE", path, "is empty");
  }
  if (path != nullptr && std::strlen(path) >= kPathBytes) {
    return report.fail("GPUSHARE_SIM_STATE", "...", "is too long");
  }
  if (path != nullptr) {
    std::snprintf(config->state_path, kPathBytes, "%s", path);
  } else {
    default_state_path(config->state_path);
    config->state_in_private_directory = true;
  }

  std::uint64_t count = 1;
  if (!read_count(lookup, context, "GPUSHARE_SIM_DEVICES", 1, kMaxDevices, "1 to 8", &count,
                  report)) {
    return false;
  }
  config->device_count = static_cast<int>(count);

  std::uint64_t memory[kMaxDevices];
  std::uint64_t overhead[kMaxDevices];
  std::uint64_t sms[kMaxDevices];
  for (int i = 0; i < kMaxDevices; ++i) {
    memory[i] = kDefaultMemoryBytes;
    overhead[i] = kDefaultCtxOverheadBytes;
    sms[i] = kDefaultSms;
  }
  if (const char* text = lookup("GPUSHARE_SIM_MEMORY", context)) {
    if (!parse_device_list("GPUSHARE_SIM_MEMORY", text, ListKind::kSize, memory, report)) {
      return false;
    }
    for (int i = 0; i < kMaxDevices; ++i) {
      // Below 1 MiB nothing useful fits; above 1 PiB sizes stop being sane.
      if (memory[i] < (1ull << 20) || memory[i] > (1ull << 50)) {
        return report.fail_range("GPUSHARE_SIM_MEMORY", text, "1MiB to 1PiB");
      }
    }
  }
  if (const char* text = lookup("GPUSHARE_SIM_CTX_OVERHEAD", context)) {
    if (!parse_device_list("GPUSHARE_SIM_CTX_OVERHEAD", text, ListKind::kSize, overhead, report)) {
      return false;
    }
  }
  if (const char* text = lookup("GPUSHARE_SIM_SMS", context)) {
    if (!parse_device_list("GPUSHARE_SIM_SMS", text, ListKind::kCount, sms, report)) return false;
    for (int i = 0; i < kMaxDevices; ++i) {
      if (sms[i] < 1 || sms[i] > 1024)
        return report.fail_range("GPUSHARE_SIM_SMS", text, "1 to 1024");
    }
  }
  for (int i = 0; i < kMaxDevices; ++i) {
    if (overhead[i] >= memory[i]) {
      std::snprintf(error, error_bytes,
                    "GPUSHARE_SIM_CTX_OVERHEAD: %llu bytes leaves nothing of device %d's %llu",
                    static_cast<unsigned long long>(overhead[i]), i,
                    static_cast<unsigned long long>(memory[i]));
      if (i < config->device_count) return false;
      overhead[i] = 0;  // an unused device; keep it consistent but harmless
      error[0] = '\0';
    }
    config->devices[i] = {memory[i], overhead[i], static_cast<std::uint32_t>(sms[i])};
  }

  if (!read_link(lookup, context, config, report)) return false;
  if (!read_gpu_link(lookup, context, config, report)) return false;

  config->managed_slowdown_milli = kDefaultManagedSlowdownMilli;
  if (const char* text = lookup("GPUSHARE_SIM_MANAGED_SLOWDOWN", context)) {
    const char* why = nullptr;
    std::uint64_t milli = 0;
    if (!parse_milli(text, &milli, &why))
      return report.fail("GPUSHARE_SIM_MANAGED_SLOWDOWN", text, why);
    if (milli > 1000000)
      return report.fail_range("GPUSHARE_SIM_MANAGED_SLOWDOWN", text, "0 to 1000");
    config->managed_slowdown_milli = static_cast<std::uint32_t>(milli);
  }

  if (!read_scheduling(lookup, context, config, report)) return false;

  std::uint64_t value = kDefaultDriverVersion;
  if (!read_count(lookup, context, "GPUSHARE_SIM_DRIVER_VERSION", 1000, 99999, "1000 to 99999",
                  &value, report)) {
    return false;
  }
  config->driver_version = static_cast<int>(value);

  value = kDefaultKernelNs / 1000;
  if (!read_count(lookup, context, "GPUSHARE_SIM_KERNEL_US", 0, 3600000000ull, "0 to 3600000000",
                  &value, report)) {
    return false;
  }
  config->default_kernel_ns = value * 1000;

  value = kDefaultMaxPending;
  if (!read_count(lookup, context, "GPUSHARE_SIM_MAX_PENDING", 1, 1 << 20, "1 to 1048576", &value,
                  report)) {
    return false;
  }
  config->max_pending = static_cast<std::uint32_t>(value);

  value = kDefaultUtilWindowNs / 1000000;
  if (!read_count(lookup, context, "GPUSHARE_SIM_UTIL_WINDOW_MS", 1, 3600000, "1 to 3600000",
                  &value, report)) {
    return false;
  }
  config->util_window_ns = static_cast<std::int64_t>(value) * 1000000;
  return true;
}

bool load_config_from_environment(SimConfig* config, char* error, std::size_t error_bytes) {
  return load_config(lookup_environment, nullptr, config, error, error_bytes);
}

}  // namespace gpushare::simgpu
