#include "runner/launch.h"

#include <array>
#include <string_view>

#include "common/units.h"
#include "coord/job/client.h"

namespace gpushare {
namespace {

constexpr std::array<std::string_view, 4> kLogLevels = {"error", "warning", "info", "debug"};

std::string basename_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dirname_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// "VALUE" prepended to a colon-separated list, keeping what is there.
std::string prepend_path(const std::string& value, const char* existing) {
  if (existing == nullptr || *existing == '\0') return value;
  return value + ":" + existing;
}

// Job names travel in JSON and logs; keep them printable and short.
Status check_name(const std::string& name) {
  if (name.empty()) return make_error("job name must not be empty");
  if (name.size() > 128) return make_error("job name '" + name + "' is longer than 128 bytes");
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return make_error("job name contains a control character");
  }
  return {};
}

// CUDA_VISIBLE_DEVICES accepts indices and UUIDs ("GPU-..."); so does --gpu.
Status check_gpu(const std::string& gpu) {
  if (gpu.empty()) return make_error("--gpu needs a device index or UUID");
  if (gpu.rfind("GPU-", 0) == 0 || gpu.rfind("MIG-", 0) == 0) return {};
  for (char c : gpu) {
    if (c < '0' || c > '9') {
      return make_error("invalid GPU '" + gpu +
                        "': expected an index (0, 1, ...) or a UUID (GPU-...)");
    }
  }
  return {};
}

}  // namespace

const char* qos_name(Qos qos) {
  return qos == Qos::kOpportunistic ? "opportunistic" : "production";
}

Status apply_properties(RunRequest& request) {
  for (const std::string& property : request.properties) {
    std::size_t equals = property.find('=');
    if (equals == std::string::npos || equals == 0) {
      return make_error("invalid property '" + property + "': expected KEY=VALUE");
    }
    std::string key = property.substr(0, equals);
    std::string value = property.substr(equals + 1);
    if (key == "qos") {
      if (value == "production") {
        request.qos = Qos::kProduction;
      } else if (value == "opportunistic") {
        request.qos = Qos::kOpportunistic;
      } else {
        return make_error("invalid qos '" + value + "': expected production or opportunistic");
      }
    } else if (key == "mem-limit" || key == "mem") {
      request.mem_limit = value;
    } else if (key == "name") {
      request.name = value;
    } else if (key == "gpu") {
      request.gpu = value;
    } else if (key == "log") {
      request.log_level = value;
    } else if (key == "compute") {
      request.compute = value;
    } else {
      return make_error("unknown property '" + key +
                        "' (known: qos, mem-limit, name, gpu, log, compute)");
    }
  }
  return {};
}

Result<LaunchPlan> plan_launch(const RunRequest& request, const InstallPaths& paths,
                               const GetEnv& getenv) {
  if (request.command.empty()) return make_error("no command given");
  LaunchPlan plan;
  plan.argv = request.command;
  auto set = [&](std::string key, std::string value) {
    plan.environment.emplace_back(std::move(key), std::move(value));
  };

  set("LD_PRELOAD", prepend_path(paths.interposer, getenv("LD_PRELOAD")));
  // The audit module sees the bindings LD_PRELOAD cannot (RTLD_DEEPBIND,
  // dlmopen namespaces): gpushare-run(1), SECURITY.
  if (!paths.auditor.empty()) set("LD_AUDIT", prepend_path(paths.auditor, getenv("LD_AUDIT")));
  if (request.sim) set("LD_LIBRARY_PATH", prepend_path(paths.sim_dir, getenv("LD_LIBRARY_PATH")));
  set("GPUSHARE_QOS", qos_name(request.qos));
  if (request.suspendable) set("GPUSHARE_SUSPENDABLE", "on");

  if (request.mem_limit) {
    // Percentages are resolved by the interposer, which knows the device;
    // everything else is normalised to plain bytes here.
    const std::string& text = *request.mem_limit;
    if (is_percentage(text)) {
      Result<std::uint64_t> check = parse_size(text, 100);
      if (!check) return make_error("invalid --mem-limit: " + check.error().message);
      if (*check == 0) return make_error("invalid --mem-limit '" + text + "': must be above 0%");
      set("GPUSHARE_MEM_LIMIT", text);
    } else {
      Result<std::uint64_t> bytes = parse_size(text);
      if (!bytes) return make_error("invalid --mem-limit: " + bytes.error().message);
      if (*bytes == 0) return make_error("invalid --mem-limit '" + text + "': must be above 0");
      set("GPUSHARE_MEM_LIMIT", std::to_string(*bytes));
    }
  }

  std::string name = request.name ? *request.name : basename_of(request.command.front());
  if (Status ok = check_name(name); !ok) return ok.error();
  set("GPUSHARE_JOB", name);

  if (request.gpu) {
    if (Status ok = check_gpu(*request.gpu); !ok) return ok.error();
    set("CUDA_VISIBLE_DEVICES", *request.gpu);
  }
  if (request.compute) {
    // The grammar of gpushare-ctl set compute= (the interposer's own parser).
    std::uint64_t ppm = 0;
    if (!coord::parse_compute_cap(request.compute->c_str(), &ppm)) {
      return make_error("invalid compute share '" + *request.compute +
                        "': expected a percentage above 0 and at most 100 (e.g. 30%)");
    }
    set("GPUSHARE_COMPUTE", *request.compute);
  }
  if (request.log_level) {
    bool known = false;
    for (std::string_view level : kLogLevels) known = known || level == *request.log_level;
    if (!known) {
      return make_error("invalid log level '" + *request.log_level +
                        "': expected error, warning, info or debug");
    }
    set("GPUSHARE_LOG", *request.log_level);
  }
  return plan;
}

Result<InstallPaths> locate_install(const std::string& executable_path, const GetEnv& getenv,
                                    const std::function<bool(const std::string&)>& exists) {
  static constexpr const char* kInterposer = "libgpushare-interpose.so";
  std::string exe_dir = dirname_of(executable_path);
  InstallPaths paths;
  const char* override_path = getenv("GPUSHARE_INTERPOSER");
  std::vector<std::string> candidates;
  if (override_path != nullptr && *override_path != '\0') {
    candidates.push_back(override_path);
  } else {
    candidates = {exe_dir + "/" + kInterposer, exe_dir + "/../lib/gpushare/" + kInterposer,
                  exe_dir + "/../" GPUSHARE_INSTALL_LIBDIR "/gpushare/" + kInterposer};
  }
  for (const std::string& candidate : candidates) {
    if (exists(candidate)) {
      paths.interposer = candidate;
      paths.sim_dir = dirname_of(candidate) + "/sim";
      std::string auditor = dirname_of(candidate) + "/libgpushare-audit.so";
      if (exists(auditor)) paths.auditor = auditor;
      return paths;
    }
  }
  std::string tried;
  for (const std::string& candidate : candidates) tried += (tried.empty() ? "" : ", ") + candidate;
  return make_error("cannot find the interposer " + std::string(kInterposer) + " (looked at " +
                    tried + "; set GPUSHARE_INTERPOSER to its path)");
}

}  // namespace gpushare
