// The driver's process checkpoint from the coordinator (migrate.h).
#include "coord/server/migrate.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/saturate.h"
#include "coord/server/registry/authorize.h"
#include "vocab/uuid.h"

namespace gpushare::coord::server {

// ------------------------------------------------------------ the driver

namespace {

// The few declarations of cuda.h and nvml.h needed here (the coordinator
// builds without the toolkit's headers); layouts as in CUDA 13's cuda.h.
struct CuUuid {
  unsigned char bytes[16];
};
struct CuLockArgs {
  unsigned int timeout_ms;
  unsigned int reserved0;
  std::uint64_t reserved1[7];
};
struct CuGpuPair {
  CuUuid old_uuid;
  CuUuid new_uuid;
};
struct CuRestoreArgs {
  CuGpuPair* pairs;
  unsigned int pair_count;
  char reserved[52 - sizeof(CuGpuPair*)];
  std::uint64_t reserved1;
};
static_assert(sizeof(CuLockArgs) == 64 && sizeof(CuRestoreArgs) == 64);
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
constexpr int kAttributeSms = 16;           // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttributeMajor = 75;         // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttributeMinor = 76;         // ..._MINOR
constexpr unsigned kLockTimeoutMs = 10000;  // a job's driver call that takes longer is stuck

std::string uuid_text(const CuUuid& uuid) {
  char text[kUuidTextBytes];
  format_uuid(uuid.bytes, text);
  return text;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as format_uuid writes it.
bool parse_uuid_text(const std::string& text, CuUuid* uuid) {
  std::size_t at = text.find('-');
  if (at == std::string::npos) return false;
  int got = 0;
  for (std::size_t i = at + 1; i < text.size() && got < 32; ++i) {
    char c = text[i];
    if (c == '-') continue;
    int value = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (value < 0) return false;
    if (got % 2 == 0)
      uuid->bytes[got / 2] = static_cast<unsigned char>(value << 4);
    else
      uuid->bytes[got / 2] |= static_cast<unsigned char>(value);
    ++got;
  }
  return got == 32;
}

}  // namespace

struct CheckpointDriver::Table {
  void* cuda = nullptr;
  void* nvml = nullptr;
  int (*init)(unsigned) = nullptr;
  int (*device_count)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_uuid)(CuUuid*, int) = nullptr;
  int (*device_name)(char*, int, int) = nullptr;
  int (*device_attribute)(int*, int, int) = nullptr;
  int (*error_name)(int, const char**) = nullptr;
  int (*lock)(int, CuLockArgs*) = nullptr;
  int (*checkpoint)(int, void*) = nullptr;
  int (*restore)(int, CuRestoreArgs*) = nullptr;
  int (*unlock)(int, void*) = nullptr;
  int (*get_state)(int, int*) = nullptr;
  int (*nvml_by_uuid)(const char*, void**) = nullptr;
  int (*nvml_memory)(void*, NvmlMemory*) = nullptr;
};

CheckpointDriver::~CheckpointDriver() = default;  // the libraries stay loaded (RTLD_NODELETE)

Result<std::unique_ptr<CheckpointDriver>> CheckpointDriver::open() {
  std::unique_ptr<CheckpointDriver> driver(new CheckpointDriver());
  auto table = std::make_unique<Table>();
  table->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (table->cuda == nullptr) return make_error(std::string("no CUDA driver: ") + dlerror());
  auto find = [&](auto** slot, const char* name) {
    *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(dlsym(table->cuda, name));
    return *slot != nullptr;
  };
  if (!find(&table->init, "cuInit") || !find(&table->device_count, "cuDeviceGetCount") ||
      !find(&table->device_get, "cuDeviceGet") ||
      !find(&table->device_uuid, "cuDeviceGetUuid_v2") ||
      !find(&table->device_name, "cuDeviceGetName") ||
      !find(&table->device_attribute, "cuDeviceGetAttribute") ||
      !find(&table->error_name, "cuGetErrorName") ||
      !find(&table->lock, "cuCheckpointProcessLock") ||
      !find(&table->checkpoint, "cuCheckpointProcessCheckpoint") ||
      !find(&table->restore, "cuCheckpointProcessRestore") ||
      !find(&table->unlock, "cuCheckpointProcessUnlock") ||
      !find(&table->get_state, "cuCheckpointProcessGetState")) {
    return make_error(
        "the CUDA driver has no process checkpoint (cuCheckpointProcess*: "
        "driver 570 or later)");
  }
  if (int status = table->init(0); status != 0) {
    return make_error("cuInit failed (CUDA error " + std::to_string(status) + ")");
  }
  table->nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (table->nvml != nullptr) {
    auto init = reinterpret_cast<int (*)()>(dlsym(table->nvml, "nvmlInit_v2"));
    table->nvml_by_uuid = reinterpret_cast<decltype(table->nvml_by_uuid)>(
        dlsym(table->nvml, "nvmlDeviceGetHandleByUUID"));
    table->nvml_memory = reinterpret_cast<decltype(table->nvml_memory)>(
        dlsym(table->nvml, "nvmlDeviceGetMemoryInfo"));
    if (init == nullptr || init() != 0) table->nvml_memory = nullptr;
  }
  driver->table_ = std::move(table);
  return driver;
}

Result<std::string> CheckpointDriver::resolve_device(const std::string& name) const {
  int count = 0;
  if (table_->device_count(&count) != 0) return make_error("cuDeviceGetCount failed");
  for (int i = 0; i < count; ++i) {
    int device = 0;
    CuUuid uuid{};
    if (table_->device_get(&device, i) != 0 || table_->device_uuid(&uuid, device) != 0) continue;
    std::string text = uuid_text(uuid);
    if (name == std::to_string(i) || name == text) return text;
  }
  return make_error("no GPU '" + name + "' on this node (" + std::to_string(count) +
                    " GPUs: an index from 0, or a UUID GPU-...)");
}

std::string CheckpointDriver::chip_difference(const std::string& a, const std::string& b) const {
  struct Chip {
    std::string name;
    int sms = 0, major = 0, minor = 0;
  };
  auto chip_of = [&](const std::string& uuid, Chip* chip) {
    int count = 0;
    table_->device_count(&count);
    for (int i = 0; i < count; ++i) {
      int device = 0;
      CuUuid id{};
      if (table_->device_get(&device, i) != 0 || table_->device_uuid(&id, device) != 0 ||
          uuid_text(id) != uuid) {
        continue;
      }
      char name[256] = "";
      table_->device_name(name, sizeof name, device);
      chip->name = name;
      table_->device_attribute(&chip->sms, kAttributeSms, device);
      table_->device_attribute(&chip->major, kAttributeMajor, device);
      table_->device_attribute(&chip->minor, kAttributeMinor, device);
      return true;
    }
    return false;
  };
  Chip first, second;
  if (!chip_of(a, &first) || !chip_of(b, &second))
    return "one of them is not visible to the driver";
  auto describe = [](const Chip& chip) {
    return chip.name + ", compute capability " + std::to_string(chip.major) + "." +
           std::to_string(chip.minor) + ", " + std::to_string(chip.sms) + " SMs";
  };
  if (first.name == second.name && first.sms == second.sms && first.major == second.major &&
      first.minor == second.minor) {
    return "";
  }
  return describe(second) + " against " + describe(first);
}

std::optional<std::uint64_t> CheckpointDriver::free_bytes(const std::string& uuid) const {
  if (table_->nvml_memory == nullptr || table_->nvml_by_uuid == nullptr) return std::nullopt;
  void* device = nullptr;
  NvmlMemory memory{};
  if (table_->nvml_by_uuid(uuid.c_str(), &device) != 0 ||
      table_->nvml_memory(device, &memory) != 0) {
    return std::nullopt;
  }
  return memory.free;
}

int CheckpointDriver::lock(pid_t pid, unsigned timeout_ms) const {
  CuLockArgs args{};
  args.timeout_ms = timeout_ms;
  return table_->lock(static_cast<int>(pid), &args);
}
int CheckpointDriver::checkpoint(pid_t pid) const {
  return table_->checkpoint(static_cast<int>(pid), nullptr);
}
int CheckpointDriver::state(pid_t pid) const {
  int value = -1;
  return table_->get_state(static_cast<int>(pid), &value) == 0 ? value : -1;
}

int CheckpointDriver::unlock(pid_t pid) const {
  return table_->unlock(static_cast<int>(pid), nullptr);
}

int CheckpointDriver::restore(pid_t pid,
                              const std::vector<std::pair<std::string, std::string>>& pairs) const {
  std::vector<CuGpuPair> raw(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (!parse_uuid_text(pairs[i].first, &raw[i].old_uuid) ||
        !parse_uuid_text(pairs[i].second, &raw[i].new_uuid)) {
      return 1;  // CUDA_ERROR_INVALID_VALUE
    }
  }
  CuRestoreArgs args{};
  args.pairs = raw.empty() ? nullptr : raw.data();
  args.pair_count = static_cast<unsigned>(raw.size());
  return table_->restore(static_cast<int>(pid), &args);
}

std::string CheckpointDriver::error_name(int code) const {
  const char* name = nullptr;
  if (table_->error_name(code, &name) == 0 && name != nullptr) return name;
  return "CUDA error " + std::to_string(code);
}

// ------------------------------------------------------------- the work

CheckpointOutcome run_plan(const CheckpointDriver& driver, const CheckpointPlan& plan) {
  auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 started)
        .count();
  };
  // Where each process stands: 0 running, 1 locked, 2 checkpointed, 3
  // restored (locked) on the target, 4 restored in place.
  enum Stage { kRunning, kLocked, kCheckpointed, kMoved };
  std::size_t n = plan.processes.size();
  bool resuming = plan.work == CheckpointWork::kResuming;
  std::vector<Stage> stage(n, resuming ? kCheckpointed : kRunning);
  auto describe = [&](const char* what, std::size_t i, int code) {
    return std::string(what) + " process " + std::to_string(plan.processes[i].pid) + ": " +
           driver.error_name(code);
  };
  auto reversed = [](const std::vector<std::pair<std::string, std::string>>& pairs) {
    std::vector<std::pair<std::string, std::string>> back;
    for (const auto& [from, to] : pairs) back.emplace_back(to, from);
    return back;
  };
  // Undoes what was done: moved processes go back, checkpointed ones are
  // restored in place (a resume that failed leaves them checkpointed: the
  // job stays suspended), and every locked one is unlocked.
  auto undo = [&](std::string error) {
    for (std::size_t i = n; i-- > 0;) {
      pid_t pid = plan.processes[i].pid;
      if (stage[i] == kMoved) {
        if (driver.checkpoint(pid) == 0 &&
            driver.restore(pid, reversed(plan.processes[i].pairs)) == 0) {
          stage[i] = kLocked;
        } else {
          error += "; and could not move process " + std::to_string(pid) + " back";
          continue;
        }
      }
      if (stage[i] == kCheckpointed && !resuming) {
        if (driver.restore(pid, {}) != 0) {
          error += "; and could not restore process " + std::to_string(pid) + " in place";
          continue;
        }
        stage[i] = kLocked;
      }
      if (stage[i] == kLocked && resuming && driver.checkpoint(pid) == 0) {
        stage[i] = kCheckpointed;  // the rest of the job is still checkpointed
        continue;
      }
      if (stage[i] == kLocked) driver.unlock(pid);
    }
    return CheckpointOutcome{error, elapsed()};
  };
  if (!resuming) {
    for (std::size_t i = 0; i < n; ++i) {
      if (int code = driver.lock(plan.processes[i].pid, kLockTimeoutMs); code != 0) {
        return undo(describe("could not lock", i, code));
      }
      stage[i] = kLocked;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (int code = driver.checkpoint(plan.processes[i].pid); code != 0) {
        return undo(describe("could not checkpoint", i, code));
      }
      stage[i] = kCheckpointed;
    }
    if (plan.work == CheckpointWork::kSuspending) return CheckpointOutcome{"", elapsed()};
  }
  if (resuming) {
    // As the driver has each process: a resume also mends what a
    // coordinator that died left (a process locked only, or running).
    for (std::size_t i = 0; i < n; ++i) {
      int now = driver.state(plan.processes[i].pid);
      if (now == 1) stage[i] = kLocked;
      if (now == 0) stage[i] = kRunning;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (stage[i] != kCheckpointed) continue;
    const auto& pairs = plan.work == CheckpointWork::kMigrating
                            ? plan.processes[i].pairs
                            : std::vector<std::pair<std::string, std::string>>{};
    if (int code = driver.restore(plan.processes[i].pid, pairs); code != 0) {
      std::string where = plan.work == CheckpointWork::kMigrating ? " on " + plan.to : "";
      return undo(describe(("the driver refused to restore" + where + ":").c_str(), i, code));
    }
    stage[i] = plan.work == CheckpointWork::kMigrating ? kMoved : kLocked;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (stage[i] != kRunning) driver.unlock(plan.processes[i].pid);
  }
  return CheckpointOutcome{"", elapsed()};
}

Checkpointer::~Checkpointer() {
  if (worker_.joinable()) worker_.join();
}

Result<CheckpointDriver*> Checkpointer::driver() {
  if (!enabled_) return make_error("the coordinator runs with --checkpoint off");
  if (!opened_) {
    opened_ = true;
    Result<std::unique_ptr<CheckpointDriver>> opened = CheckpointDriver::open();
    if (opened) {
      driver_ = std::move(*opened);
    } else {
      open_error_ = opened.error();
    }
  }
  if (!driver_) return open_error_;
  return driver_.get();
}

void Checkpointer::start(CheckpointPlan plan) {
  running_ = true;
  busy_job_ = plan.job_id;
  finished_ = false;
  plan_ = std::move(plan);
  worker_ = std::thread([this] {
    outcome_ = run_plan(*driver_, plan_);
    finished_.store(true, std::memory_order_release);
  });
}

std::optional<std::pair<CheckpointPlan, CheckpointOutcome>> Checkpointer::poll() {
  if (!running_ || !finished_.load(std::memory_order_acquire)) return std::nullopt;
  worker_.join();
  running_ = false;
  busy_job_ = 0;
  return std::make_pair(std::move(plan_), std::move(outcome_));
}

// ---------------------------------------------------------- the requests

namespace {

std::string describe_job(const Job& job) {
  return "job " + std::to_string(job.id) + " '" + job.name + "'";
}

Error refuse(std::string* reason, const char* why, const std::string& message) {
  if (reason != nullptr) *reason = why;
  return Error{message};
}

// What stops any checkpoint of the job, before the driver is asked.
std::optional<Error> common_refusal(const Registry& registry, const Job& job,
                                    Checkpointer& checkpointer, std::string* reason) {
  if (checkpointer.busy()) {
    return refuse(reason, kReasonBusy,
                  "another checkpoint operation is under way (job " +
                      std::to_string(checkpointer.busy_job()) + "); try again when it ends");
  }
  std::uint64_t blockers = 0;
  for (std::uint64_t key : job.processes) {
    blockers |=
        registry.process(key)->block->telemetry().suspend_blockers.load(std::memory_order_relaxed);
  }
  if ((blockers & kBlocksIpc) != 0) {
    return refuse(reason, kReasonNotMovable,
                  describe_job(job) +
                      " holds memory exported by cuIpcGetMemHandle, which the driver's "
                      "checkpoint does not take");
  }
  return std::nullopt;
}

CheckpointPlan plan_for(const Registry& registry, const Job& job, CheckpointWork work) {
  CheckpointPlan plan;
  plan.job_id = job.id;
  plan.work = work;
  for (std::uint64_t key : job.processes) {
    plan.processes.push_back(CheckpointPlan::Step{registry.process(key)->pid, {}});
  }
  return plan;
}

}  // namespace

Result<JobView> start_migration(Registry& registry, Checkpointer& checkpointer,
                                const MigrateRequest& request, const Caller& caller,
                                std::uint64_t now_ns, std::string* reason) {
  Result<const Job*> found = registry.find_for(request.job, caller, reason);
  if (!found) return found.error();
  const Job& job = **found;
  Result<CheckpointDriver*> driver = checkpointer.driver();
  if (!driver) {
    return refuse(reason, kReasonNotMovable,
                  "cannot migrate: " + driver.error().message +
                      " (the coordinator moves jobs through the driver's process checkpoint)");
  }
  Result<std::string> to = (*driver)->resolve_device(request.to);
  if (!to) return refuse(reason, kReasonInvalid, to.error().message);
  if (job.checkpoint_work != CheckpointWork::kNone || job.checkpointed || job.suspend_requested ||
      job.resuming) {
    return refuse(reason, kReasonBusy,
                  describe_job(job) + " is suspended or being moved; migrate a running job");
  }
  if (std::optional<Error> refusal = common_refusal(registry, job, checkpointer, reason)) {
    return *refusal;
  }
  // The GPU the job is on: where its memory is (one GPU), else its first.
  JobView view = registry.view_of(job, now_ns);
  std::string from;
  std::uint64_t holds = 0;
  for (const JobDeviceView& device : view.devices) {
    if (device.mem_used_bytes == 0) continue;
    if (!from.empty()) {
      return refuse(reason, kReasonNotMovable,
                    describe_job(job) + " uses GPUs " + from + " and " + device.uuid +
                        "; migrate moves a job that uses one");
    }
    from = device.uuid;
    holds = device.mem_used_bytes;
  }
  if (from.empty()) {  // no memory anywhere yet: where it is counted (registry.h)
    const Process& first = *registry.process(job.processes.front());
    from = first.devices.at(first_counted(first)).uuid;
  }
  if (from == *to) {
    JobView unchanged = view;
    unchanged.note = "already on " + *to;
    return unchanged;
  }
  CheckpointPlan plan = plan_for(registry, job, CheckpointWork::kMigrating);
  plan.from = from;
  plan.to = *to;
  for (std::size_t i = 0; i < job.processes.size(); ++i) {
    const Process& process = *registry.process(job.processes[i]);
    bool sees_from = false, sees_to = false;
    for (const DeviceRegistration& device : process.devices) {
      sees_from = sees_from || device.uuid == from;
      sees_to = sees_to || device.uuid == *to;
      std::string target = device.uuid == from ? *to : device.uuid == *to ? from : device.uuid;
      plan.processes[i].pairs.emplace_back(device.uuid, target);
    }
    if (!sees_to || !sees_from) {
      std::string seen;
      for (const DeviceRegistration& device : process.devices) {
        seen += (seen.empty() ? "" : ", ") + device.uuid;
      }
      return refuse(reason, kReasonNotMovable,
                    "cannot migrate " + describe_job(job) + " to " + *to + ": its process " +
                        std::to_string(process.pid) + " sees only " + seen +
                        " (CUDA_VISIBLE_DEVICES), and the driver restores a process only onto "
                        "GPUs it sees; to make a job movable, start it seeing both: gpushare-run "
                        "--gpu N --movable, gpushare-run without --gpu, or CUDA_VISIBLE_DEVICES "
                        "listing its GPU first and the target after (it is counted only on the "
                        "GPU it uses)");
    }
  }
  if (std::string difference = (*driver)->chip_difference(from, *to); !difference.empty()) {
    return refuse(reason, kReasonNotMovable,
                  "cannot migrate " + describe_job(job) + " to " + *to + ": another chip type (" +
                      difference + ")");
  }
  if (std::optional<std::uint64_t> free = (*driver)->free_bytes(*to); free && *free < holds) {
    return refuse(reason, kReasonNotMovable,
                  "cannot migrate " + describe_job(job) + " to " + *to + ": it holds " +
                      std::to_string(holds) + " bytes on " + from + ", and " + *to + " has " +
                      std::to_string(*free) + " bytes free");
  }
  registry.begin_checkpoint_work(job.id, CheckpointWork::kMigrating);
  checkpointer.start(std::move(plan));
  return registry.view_of(*registry.find(job.id), now_ns);
}

bool start_checkpoint_suspend(Registry& registry, Checkpointer& checkpointer,
                              const SuspendRequest& request, const Caller& caller,
                              std::uint64_t now_ns, std::string* reason, Result<JobView>* answer) {
  Result<const Job*> found = registry.find_for(request.job, caller, reason);
  if (!found) return false;  // the memory path gives the same refusal
  const Job& job = **found;
  if (job.checkpointed || job.checkpoint_work == CheckpointWork::kSuspending) {
    JobView unchanged = registry.view_of(job, now_ns);
    unchanged.note = job.checkpointed ? "already suspended" : "already suspending";
    *answer = std::move(unchanged);
    return true;
  }
  if (job.checkpoint_work != CheckpointWork::kNone) {
    *answer = refuse(reason, kReasonBusy, describe_job(job) + " is being moved; suspend it after");
    return true;
  }
  if (job.suspend_requested || job.resuming || !checkpointer.driver()) return false;
  std::string ignored;
  if (common_refusal(registry, job, checkpointer, &ignored)) return false;
  registry.begin_checkpoint_work(job.id, CheckpointWork::kSuspending);
  checkpointer.start(plan_for(registry, job, CheckpointWork::kSuspending));
  *answer = registry.view_of(*registry.find(job.id), now_ns);
  return true;
}

bool start_checkpoint_resume(Registry& registry, Checkpointer& checkpointer,
                             const PauseRequest& request, const Caller& caller,
                             std::uint64_t now_ns, std::string* reason, Result<JobView>* answer) {
  if (request.pause) return false;
  Result<const Job*> found = registry.find_for(request.job, caller, reason);
  if (!found) return false;
  const Job& job = **found;
  if (job.checkpoint_work == CheckpointWork::kResuming) {
    JobView unchanged = registry.view_of(job, now_ns);
    unchanged.note = "already resuming";
    *answer = std::move(unchanged);
    return true;
  }
  if (job.checkpoint_work == CheckpointWork::kSuspending ||
      (job.checkpointed && checkpointer.busy())) {
    *answer =
        refuse(reason, kReasonBusy, describe_job(job) + " is being suspended; resume it after");
    return true;
  }
  if (!job.checkpointed) {
    // Left locked or checkpointed by a coordinator that died?
    if (job.checkpoint_work != CheckpointWork::kNone || checkpointer.busy() ||
        !checkpointer.driver()) {
      return false;
    }
    const CheckpointDriver& driver = **checkpointer.driver();
    bool left = false;
    for (std::uint64_t key : job.processes) {
      int state = driver.state(registry.process(key)->pid);
      left = left || state == 1 || state == 2;
    }
    if (!left) return false;
  }
  if (!checkpointer.driver()) {
    *answer = refuse(reason, kReasonInternal, "the CUDA driver went away");
    return true;
  }
  registry.begin_checkpoint_work(job.id, CheckpointWork::kResuming);
  checkpointer.start(plan_for(registry, job, CheckpointWork::kResuming));
  *answer = registry.view_of(*registry.find(job.id), now_ns);
  return true;
}

std::optional<std::string> collect_checkpoint_work(Registry& registry, Checkpointer& checkpointer) {
  std::optional<std::pair<CheckpointPlan, CheckpointOutcome>> done = checkpointer.poll();
  if (!done) return std::nullopt;
  const CheckpointPlan& plan = done->first;
  const CheckpointOutcome& outcome = done->second;
  registry.end_checkpoint_work(plan.job_id, plan.from, plan.to, outcome.elapsed_ms, outcome.error);
  const Job* job = registry.find(plan.job_id);
  if (plan.work == CheckpointWork::kSuspending && !outcome.error.empty() && job != nullptr) {
    // Today's path, where the driver could not: the caller was authorised
    // when the suspend began.
    std::string reason;
    Result<JobView> fallback = registry.suspend(SuspendRequest{std::to_string(plan.job_id)},
                                                Caller{0, 0, 0, {}}, 0, &reason);
    std::string how = fallback ? "suspending it by moving its memory instead"
                               : "and not by moving its memory either: " + fallback.error().message;
    return describe_job(*job) + " could not be checkpointed (" + outcome.error + "); " + how;
  }
  std::string who = job != nullptr ? describe_job(*job) : "job " + std::to_string(plan.job_id);
  std::string took = " in " + std::to_string(outcome.elapsed_ms) + " ms";
  switch (plan.work) {
    case CheckpointWork::kMigrating:
      return outcome.error.empty()
                 ? who + " migrated from " + plan.from + " to " + plan.to + took
                 : who + " not migrated to " + plan.to + ", nothing lost: " + outcome.error;
    case CheckpointWork::kSuspending:
      return outcome.error.empty() ? who + " suspended through the driver's checkpoint" + took +
                                         ": nothing left on the GPU"
                                   : who + " could not be checkpointed (" + outcome.error + ")";
    case CheckpointWork::kResuming:
      return outcome.error.empty()
                 ? who + " restored from its checkpoint" + took
                 : who + " could not be restored, still suspended: " + outcome.error;
    case CheckpointWork::kNone:
      break;
  }
  return std::nullopt;
}

// ------------------------------------------------------------ the policy

std::optional<std::string> MigrationPolicy::tick(Registry& registry, Checkpointer& checkpointer,
                                                 std::uint64_t now_ns) {
  constexpr std::uint64_t kEveryNs = 200'000'000;
  constexpr std::uint64_t kRetryNs = 10'000'000'000;
  if (!enabled_ || now_ns < next_ns_ || checkpointer.busy()) return std::nullopt;
  next_ns_ = now_ns + kEveryNs;
  std::vector<JobView> jobs = registry.list(now_ns);
  // Which GPUs hold some job's memory, and which a production job uses.
  std::map<std::string, bool> used, production;
  for (const JobView& job : jobs) {
    for (const JobDeviceView& device : job.devices) {
      if (device.mem_used_bytes == 0) continue;
      used[device.uuid] = true;
      bool runs = job.state != "paused" && job.state != "suspended" && job.state != "suspending";
      if (job.qos == kQosProduction && runs) production[device.uuid] = true;
    }
  }
  std::vector<std::string> idle;
  for (const DeviceView& device : registry.node(now_ns).devices) {
    if (!used.count(device.uuid)) idle.push_back(device.uuid);
  }
  if (idle.empty()) return std::nullopt;
  for (const JobView& job : jobs) {
    if (job.qos != kQosOpportunistic || job.state == "suspended" || job.state == "migrating") {
      continue;
    }
    auto refused = refused_until_.find(job.id);
    if (refused != refused_until_.end() && now_ns < refused->second) continue;
    std::string on;
    int devices = 0;
    for (const JobDeviceView& device : job.devices) {
      if (device.mem_used_bytes == 0) continue;
      on = device.uuid;
      ++devices;
    }
    if (devices != 1 || !production.count(on)) continue;
    std::string reason;
    Result<JobView> started = start_migration(registry, checkpointer,
                                              MigrateRequest{std::to_string(job.id), idle.front()},
                                              Caller{0, 0, 0, {}}, now_ns, &reason);
    std::string who = "job " + std::to_string(job.id) + " '" + job.name + "'";
    if (!started) {
      refused_until_[job.id] = now_ns + kRetryNs;
      return "migration policy: a production job uses " + on + "; not moving opportunistic " + who +
             " to idle " + idle.front() + ": " + started.error().message;
    }
    refused_until_.erase(job.id);
    return "migration policy: a production job uses " + on + "; moving opportunistic " + who +
           " to idle " + idle.front() + " instead of spilling or pausing it there";
  }
  return std::nullopt;
}

}  // namespace gpushare::coord::server
