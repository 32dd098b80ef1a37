#include "runner/launch.h"

#include <unistd.h>

#include <array>
#include <string_view>

#include "common/properties.h"
#include "common/units.h"
#include "vocab/env.h"

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

Status apply_properties(RunRequest& request) {
  Result<JobProperties> set = parse_job_properties(request.properties, PropertiesFor::kStart);
  if (!set) return set.error();
  if (set->qos) request.qos = *set->qos;
  if (set->mem_limit) request.mem_limit = std::move(set->mem_limit);
  if (set->name) request.name = std::move(set->name);
  if (set->gpu) request.gpu = std::move(set->gpu);
  if (set->log) request.log_level = std::move(set->log);
  if (set->compute) request.compute = std::move(set->compute);
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
  set(env::kQos, qos_name(request.qos));
  if (request.suspendable) set(env::kSuspendable, "on");
  if (request.launch_queue) set(env::kLaunchQueue, "on");
  if (request.compute_trace) {
    // Absolute: the job may change directory before its first record.
    std::string path = *request.compute_trace;
    if (path.empty()) return make_error("--compute-trace: the path is empty");
    if (path.front() != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof cwd) == nullptr) {
        return make_error("--compute-trace: cannot resolve '" + path + "': no working directory");
      }
      path = std::string(cwd) + "/" + path;
    }
    set(env::kComputeTrace, path);
  }

  if (request.mem_limit) {
    // Parsed once here. Percentages are resolved by the interposer, which
    // knows the device; everything else is normalised to plain bytes.
    Result<MemLimit> limit = parse_mem_limit(*request.mem_limit);
    if (!limit) return limit.error();
    std::uint64_t bytes = 0;
    if (!limit->none && !limit->spec.percent) resolve_size(limit->spec, false, 0, &bytes);
    if (!limit->none) {
      set(env::kMemLimit, limit->spec.percent ? *request.mem_limit : std::to_string(bytes));
    }
  }

  std::string name = request.name ? *request.name : basename_of(request.command.front());
  if (Status ok = check_job_name_property(name); !ok) return ok.error();
  set(env::kJob, name);

  if (request.gpu) {
    if (Status ok = check_gpu(*request.gpu); !ok) return ok.error();
    set("CUDA_VISIBLE_DEVICES", *request.gpu);
  }
  if (request.compute) {
    // The grammar of gpushare-ctl set compute= and of the interposer.
    Result<std::uint64_t> share = parse_compute_share(*request.compute);
    if (!share) return share.error();
    if (*share != kNoLimit) set(env::kCompute, *request.compute);
  }
  if (request.log_level) {
    bool known = false;
    for (std::string_view level : kLogLevels) known = known || level == *request.log_level;
    if (!known) {
      return make_error("invalid log level '" + *request.log_level +
                        "': expected error, warning, info or debug");
    }
    set(env::kLog, *request.log_level);
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
