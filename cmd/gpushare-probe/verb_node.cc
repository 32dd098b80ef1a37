// `gpushare-probe node`: this machine's GPUs, their live memory and their
// utilisation over a window, as cluster TOML that gpushare-place reads (one
// [[node]] with its [[node.gpu]] tables), so a person can place on the
// machine they have. By default a whole cluster file (the user as its one
// tenant); with --fragment the node alone, to concatenate several.
#include <pwd.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "common/clock.h"
#include "common/diag.h"
#include "common/exit_status.h"
#include "probe.h"

namespace probe_cmd {
namespace {

namespace exit_status = gpushare::exit_status;
using gpushare::monotonic_ms;

// A TOML basic string.
std::string toml_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string host_name() {
  char name[256] = "";
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string user_name() {
  if (passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_name != nullptr) {
    return entry->pw_name;
  }
  return "uid" + std::to_string(getuid());
}

// Each device's busy share over the window: the simulator's busy counter
// where it exists (exact), else NVML's utilisation read every 100 ms.
std::vector<double> utilisation(gpushare::probe::GpuApi& api,
                                const std::vector<gpushare::probe::DeviceRecord>& devices,
                                double window_ms) {
  std::size_t n = devices.size();
  std::vector<double> start_busy(n, -1), sums(n, 0);
  std::vector<long> readings(n, 0);
  for (std::size_t d = 0; d < n; ++d) {
    if (auto stats = api.sim_stats(static_cast<int>(d))) {
      start_busy[d] = static_cast<double>(stats->busy_ns);
    }
  }
  double start = monotonic_ms();
  for (double next = start; monotonic_ms() - start < window_ms; next += 100) {
    for (std::size_t d = 0; d < n; ++d) {
      if (start_busy[d] >= 0) continue;
      if (auto util = api.nvml_utilisation(devices[d].uuid)) {
        sums[d] += *util / 100.0;
        ++readings[d];
      }
    }
    double wake = std::min(next + 100, start + window_ms);
    double wait = wake - monotonic_ms();
    if (wait > 0) {
      timespec pause{static_cast<time_t>(wait / 1e3),
                     static_cast<long>(std::fmod(wait, 1e3) * 1e6)};
      nanosleep(&pause, nullptr);
    }
  }
  double elapsed_ms = monotonic_ms() - start;
  std::vector<double> out(n, 0);
  for (std::size_t d = 0; d < n; ++d) {
    if (start_busy[d] >= 0) {
      auto stats = api.sim_stats(static_cast<int>(d));
      double busy = stats ? static_cast<double>(stats->busy_ns) - start_busy[d] : 0;
      out[d] = std::clamp(busy / 1e6 / elapsed_ms, 0.0, 1.0);
    } else if (readings[d] > 0) {
      out[d] = std::clamp(sums[d] / static_cast<double>(readings[d]), 0.0, 1.0);
    }
  }
  return out;
}

}  // namespace

int run_node(const ProbeOptions& options) {
  auto parsed = parse_arguments(options);
  if (!parsed) {
    gpushare::diag::error(parsed.error().message);
    gpushare::diag::usage_hint();
    return exit_status::kUsage;
  }
  std::string name = options.name ? *options.name : host_name();
  if (name.empty()) {
    gpushare::diag::error("--name must not be empty");
    gpushare::diag::usage_hint();
    return exit_status::kUsage;
  }
  auto gpu = open_gpu(options.sim);
  if (!gpu) {
    gpushare::diag::error(gpu.error().message);
    return exit_status::kFailure;
  }
  auto records = gpushare::probe::probe_devices(**gpu);
  if (!records) {
    gpushare::diag::error(records.error().message);
    return exit_status::kFailure;
  }
  std::vector<double> util = utilisation(**gpu, *records, parsed->window_ms);
  // Memory after the window, so it is as fresh as the utilisation.
  auto fresh = gpushare::probe::probe_devices(**gpu);
  if (fresh) records = std::move(fresh);

  std::ostringstream out;
  out << "# " << records->size() << " GPU(s) of " << name
      << ", from gpushare-probe node: memory now, utilisation over the last "
      << std::lround(parsed->window_ms) << " ms\n";
  if (!options.fragment) {
    // A whole cluster of one machine: its user is the one tenant, with a
    // quota of every GPU, so jobs without a tenant are placed as hers.
    std::string tenant = user_name();
    out << "[policy]\ndefault_tenant = " << toml_string(tenant)
        << "\n\n[[tenant]]\nname = " << toml_string(tenant) << "\nquota_gpus = " << records->size()
        << "\n\n";
  }
  out << "[[node]]\nname = " << toml_string(name) << "\n";
  for (std::size_t d = 0; d < records->size(); ++d) {
    const gpushare::probe::DeviceRecord& r = (*records)[d];
    char util_text[16];
    std::snprintf(util_text, sizeof util_text, "%.3f", util[d]);
    out << "\n[[node.gpu]]\nindex = " << r.index << "\nmodel = " << toml_string(r.name)
        << "\nmem_bytes = " << r.mem_total_bytes << "\nmem_used_bytes = " << r.mem_used_bytes
        << "\nutil = " << util_text << "\n";
  }
  std::cout << out.str() << std::flush;
  return exit_status::kSuccess;
}

}  // namespace probe_cmd
