#include "coord/server/memory/enforcement.h"

#include <dlfcn.h>
#include <signal.h>

#include <algorithm>
#include <set>

#include "common/saturate.h"
#include "common/units.h"
#include "coord/server/registry/registry.h"

namespace gpushare::coord::server {

Result<ViolationAction> parse_violation_action(std::string_view text) {
  if (text == "warn") return ViolationAction::kWarn;
  if (text == "pause") return ViolationAction::kPause;
  if (text == "kill") return ViolationAction::kKill;
  return make_error("invalid action '" + std::string(text) + "': expected warn, pause or kill");
}

const char* violation_action_name(ViolationAction action) {
  switch (action) {
    case ViolationAction::kPause:
      return "pause";
    case ViolationAction::kKill:
      return "kill";
    case ViolationAction::kWarn:
      break;
  }
  return "warn";
}

std::uint64_t violation_tolerance(std::uint64_t limit_bytes) {
  std::uint64_t share = limit_bytes / 32;
  return share > (64ull << 20) ? share : (64ull << 20);
}

namespace {

// The few NVML declarations needed (the toolkit ships no nvml.h).
struct NvmlProcessInfo {  // nvmlProcessInfo_t of the _v3 calls
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

class NvmlUsage final : public UsageSource {
 public:
  using Handle = void*;
  int (*by_uuid)(const char*, Handle*) = nullptr;
  int (*processes)(Handle, unsigned int*, NvmlProcessInfo*) = nullptr;

  bool usage(const std::string& uuid, std::map<pid_t, std::uint64_t>* by_pid) override {
    Handle handle = nullptr;
    if (by_uuid(uuid.c_str(), &handle) != kNvmlSuccess) return false;
    std::vector<NvmlProcessInfo> infos(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
      auto count = static_cast<unsigned int>(infos.size());
      int status = processes(handle, &count, infos.data());
      if (status == kNvmlInsufficientSize) {
        infos.resize(count + 16);
        continue;
      }
      if (status != kNvmlSuccess) return false;
      by_pid->clear();
      for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
        if (infos[i].used_gpu_memory == kNvmlValueNotAvailable) continue;
        (*by_pid)[static_cast<pid_t>(infos[i].pid)] += infos[i].used_gpu_memory;
      }
      return true;
    }
    return false;
  }
};

}  // namespace

Result<std::unique_ptr<UsageSource>> open_nvml_usage() {
  // Kept loaded for the coordinator's lifetime (RTLD_NODELETE).
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (library == nullptr) return make_error(std::string("no NVML: ") + dlerror());
  auto init = reinterpret_cast<int (*)()>(dlsym(library, "nvmlInit_v2"));
  auto usage = std::make_unique<NvmlUsage>();
  usage->by_uuid =
      reinterpret_cast<decltype(usage->by_uuid)>(dlsym(library, "nvmlDeviceGetHandleByUUID"));
  usage->processes = reinterpret_cast<decltype(usage->processes)>(
      dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (init == nullptr || usage->by_uuid == nullptr || usage->processes == nullptr) {
    return make_error("NVML lacks per-process usage (nvmlDeviceGetComputeRunningProcesses_v3)");
  }
  if (int status = init(); status != kNvmlSuccess) {
    return make_error("nvmlInit failed (NVML error " + std::to_string(status) + ")");
  }
  return std::unique_ptr<UsageSource>(std::move(usage));
}

Enforcer::Enforcer(ViolationAction action, std::unique_ptr<UsageSource> source, Sink warning)
    : action_(action), source_(std::move(source)), warning_(std::move(warning)) {}

std::uint64_t Enforcer::allowance(State& state, const JobDeviceView& device,
                                  std::uint64_t observed) {
  std::uint64_t limit = device.mem_limit_bytes;
  auto found = state.allowances.find(device.uuid);
  // First seen: the limit may already have been lowered from the start one.
  std::uint64_t before =
      found != state.allowances.end() ? found->second.limit : device.start_limit_bytes;
  Allowance& entry = state.allowances[device.uuid];
  if (found == state.allowances.end() || entry.limit != limit) {
    entry.bytes = limit < before ? std::max(limit, std::min(before, observed)) : limit;
    entry.limit = limit;
  }
  // Frees shrink it; a spill (device bytes gone, still reserved) does not.
  std::uint64_t held = std::max(observed, device.mem_used_bytes);
  entry.bytes = std::max(limit, std::min(entry.bytes, held));
  return entry.bytes;
}

void Enforcer::check(Registry& registry, std::uint64_t now_ns) {
  std::vector<JobView> jobs = registry.list(now_ns);
  // One query per device, shared by the jobs on it.
  std::map<std::string, std::map<pid_t, std::uint64_t>> usage;
  std::set<std::string> unknown;
  std::set<std::uint64_t> present;
  for (const JobView& job : jobs) {
    present.insert(job.id);
    State& state = states_[job.id];
    bool over = false;
    for (const JobDeviceView& device : job.devices) {
      if (device.mem_limit_bytes == kNoLimit || unknown.count(device.uuid) != 0) continue;
      auto found = usage.find(device.uuid);
      if (found == usage.end()) {
        std::map<pid_t, std::uint64_t> by_pid;
        if (!source_->usage(device.uuid, &by_pid)) {
          unknown.insert(device.uuid);
          continue;
        }
        found = usage.emplace(device.uuid, std::move(by_pid)).first;
      }
      // A job is a process tree: what all its processes hold counts.
      std::uint64_t observed = 0;
      for (std::int64_t pid : job.pids) {
        auto held = found->second.find(static_cast<pid_t>(pid));
        if (held != found->second.end()) observed = saturating_add(observed, held->second);
      }
      std::uint64_t limit = device.mem_limit_bytes;
      std::uint64_t allowed = allowance(state, device, observed);
      if (observed > allowed && observed - allowed > violation_tolerance(limit)) {
        over = true;
        state.violation =
            ViolationView{device.uuid, observed, limit, violation_action_name(action_)};
        break;
      }
    }
    if (!over) {
      state.over_checks = 0;
      state.acted = false;
      continue;
    }
    if (++state.over_checks < 2 || state.acted) continue;
    state.acted = true;
    const ViolationView& v = state.violation;
    std::string pids;
    for (std::int64_t pid : job.pids) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
    std::string what = "job " + std::to_string(job.id) + " '" + job.name + "' (pid " + pids +
                       ", uid " + std::to_string(job.uid) + ") holds " +
                       format_size(v.observed_bytes) + " on " + v.device + " against a limit of " +
                       format_size(v.limit_bytes) + ", as the driver reports it";
    if (action_ == ViolationAction::kPause) {
      registry.set_paused(job.id, true);  // all its processes
      warning_(what + "; paused");
    } else if (action_ == ViolationAction::kKill) {
      // The pids are registered processes: their pidfds keep the
      // registrations no longer than the processes live.
      for (std::int64_t pid : job.pids) kill(static_cast<pid_t>(pid), SIGKILL);
      warning_(what + "; killed");
    } else {
      warning_(what);
    }
  }
  for (auto it = states_.begin(); it != states_.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : states_.erase(it);
  }
}

void Enforcer::annotate(JobView& job) const {
  auto it = states_.find(job.id);
  if (it != states_.end() && it->second.over_checks >= 2) job.violation = it->second.violation;
}

void Enforcer::annotate(std::vector<JobView>& jobs) const {
  for (JobView& job : jobs) annotate(job);
}

}  // namespace gpushare::coord::server
