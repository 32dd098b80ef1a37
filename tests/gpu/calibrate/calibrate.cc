// gpushare-gpu-calibrate: measures on a GPU what the simulated GPU assumes,
// and prints each measurement next to the simulator's default, as one JSON
// record (kind "gpu-calibration"). scripts/gpu-check runs it; see
// docs/validation.md.
//
//   gpushare-gpu-calibrate [--slice-ms MS] [--no-slices]
//
// Measured, in this order, each with the driver API alone:
//   context_memory_bytes   free memory lost to one more context (cuCtxCreate)
//   alloc_us, free_us      cuMemAlloc / cuMemFree of 2 MiB, median of 200
//   alloc_256mib_us        cuMemAlloc of 256 MiB, median of 20
//   launch_us              host time per cuLaunchKernel of an empty kernel
//   h2d_gb_per_s           cuMemcpyHtoD of 256 MiB from pinned memory, in GB/s
//                          (1e9 bytes, the unit of GPUSHARE_SIM_PCIE_GBPS)
//   time_slice_ms,         two processes' spinning kernels, their gaps
//   context_switch_us      analysed by slices.h
// It binds whatever libcuda.so.1 the loader finds: a real driver, or the
// simulated one (LD_LIBRARY_PATH=P/lib/gpushare/sim), where kernels compute
// nothing and so the time slice is reported as not measurable.
#include <cuda.h>
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernels_ptx.h"
#include "simgpu/config.h"
#include "slices.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using gpushare::gpucheck::median;
namespace sim = gpushare::simgpu;

constexpr std::uint64_t kSliceThresholdNs = 5000;  // %globaltimer ticks are ~1 us
constexpr std::uint64_t kSliceCapacity = 20000;

struct Options {
  long slice_ms = 400;
  bool slices = true;
};

// Failures of the driver end the program: it is a measurement, not a library.
void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "gpushare-gpu-calibrate: error: %s: %s\n", call,
               name != nullptr ? name : "unknown CUDA error");
  std::exit(1);
}

void progress(const char* what) { std::fprintf(stderr, "gpushare-gpu-calibrate: %s\n", what); }

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Gpu {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction spin = nullptr;
  CUfunction slices = nullptr;
};

Gpu open_gpu() {
  Gpu gpu;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&gpu.device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&gpu.context, gpu.device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(gpu.context), "cuCtxSetCurrent");
  check(cuModuleLoadData(&gpu.module, gpushare::gpucheck::kCalibratePtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&gpu.spin, gpu.module, "gpushare_spin"), "cuModuleGetFunction");
  check(cuModuleGetFunction(&gpu.slices, gpu.module, "gpushare_gpucheck_slices"),
        "cuModuleGetFunction");
  return gpu;
}

// The simulated driver exports this for its tests; no real driver does.
bool simulated() { return dlsym(RTLD_DEFAULT, "gpushare_sim_device_stats") != nullptr; }

std::uint64_t context_memory_bytes(const Gpu& gpu) {
  size_t free_before = 0, free_after = 0, total = 0;
  check(cuMemGetInfo(&free_before, &total), "cuMemGetInfo");
  CUcontext extra = nullptr;
  check(cuCtxCreate(&extra, nullptr, 0, gpu.device), "cuCtxCreate");
  check(cuMemGetInfo(&free_after, &total), "cuMemGetInfo");
  check(cuCtxDestroy(extra), "cuCtxDestroy");
  check(cuCtxSetCurrent(gpu.context), "cuCtxSetCurrent");
  return free_before > free_after ? free_before - free_after : 0;
}

struct AllocTimes {
  double alloc_us, free_us;
};

AllocTimes alloc_times(std::size_t bytes, int count) {
  std::vector<double> allocs, frees;
  for (int i = 0; i < count; ++i) {
    CUdeviceptr pointer = 0;
    Clock::time_point start = Clock::now();
    check(cuMemAlloc(&pointer, bytes), "cuMemAlloc");
    allocs.push_back(us_since(start));
    start = Clock::now();
    check(cuMemFree(pointer), "cuMemFree");
    frees.push_back(us_since(start));
  }
  return {median(allocs), median(frees)};
}

// Host time per launch, the median of batches of 200 (each drained before
// the next, so the queue never fills and blocks a launch).
double launch_us(const Gpu& gpu) {
  std::uint64_t zero = 0;
  void* params[] = {&zero};
  std::vector<double> per_launch;
  for (int batch = 0; batch < 25; ++batch) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < 200; ++i) {
      check(cuLaunchKernel(gpu.spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
            "cuLaunchKernel");
    }
    per_launch.push_back(us_since(start) / 200);
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  }
  return median(per_launch);
}

double h2d_gb_per_s() {
  const std::size_t bytes = 256u << 20;
  void* host = nullptr;
  CUdeviceptr device = 0;
  check(cuMemAllocHost(&host, bytes), "cuMemAllocHost");
  std::memset(host, 1, bytes);
  check(cuMemAlloc(&device, bytes), "cuMemAlloc");
  check(cuMemcpyHtoD(device, host, bytes), "cuMemcpyHtoD");  // warm-up
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) {
    Clock::time_point start = Clock::now();
    check(cuMemcpyHtoD(device, host, bytes), "cuMemcpyHtoD");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    rates.push_back(static_cast<double>(bytes) / 1e9 / (us_since(start) / 1e6));
  }
  check(cuMemFree(device), "cuMemFree");
  check(cuMemFreeHost(host), "cuMemFreeHost");
  return median(rates);
}

// --- time slices: two child processes, each one recording kernel ---------

// The child: set up, say "ready", wait for the parent's go (a byte on
// stdin), run the kernel, print "start end" then one "from to" per gap.
int slice_child(long slice_ms) {
  Gpu gpu = open_gpu();
  const std::size_t words = 3 + 2 * kSliceCapacity;
  CUdeviceptr out = 0;
  check(cuMemAlloc(&out, words * 8), "cuMemAlloc");
  check(cuMemsetD8(out, 0, words * 8), "cuMemsetD8");
  std::uint64_t spin_warm = 1000;
  void* warm[] = {&spin_warm};  // JIT and first-launch costs before the go
  check(cuLaunchKernel(gpu.spin, 1, 1, 1, 1, 1, 1, 0, nullptr, warm, nullptr), "cuLaunchKernel");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  std::printf("ready\n");
  std::fflush(stdout);
  char go = 0;
  if (read(STDIN_FILENO, &go, 1) != 1) return 1;
  std::uint64_t ns = static_cast<std::uint64_t>(slice_ms) * 1000000, threshold = kSliceThresholdNs,
                capacity = kSliceCapacity;
  void* params[] = {&ns, &threshold, &out, &capacity};
  check(cuLaunchKernel(gpu.slices, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
        "cuLaunchKernel");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<std::uint64_t> host(words);
  check(cuMemcpyDtoH(host.data(), out, words * 8), "cuMemcpyDtoH");
  std::uint64_t count = std::min<std::uint64_t>(host[0], kSliceCapacity);
  std::printf("%llu %llu\n", static_cast<unsigned long long>(host[1]),
              static_cast<unsigned long long>(host[2]));
  for (std::uint64_t i = 0; i < count; ++i) {
    std::printf("%llu %llu\n", static_cast<unsigned long long>(host[3 + 2 * i]),
                static_cast<unsigned long long>(host[4 + 2 * i]));
  }
  return 0;
}

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  int in = -1;
};

std::optional<Child> spawn_child(const std::string& self, long slice_ms) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0) return std::nullopt;
  if (pipe(from_child) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, to_child[1]);
  posix_spawn_file_actions_addclose(&actions, from_child[0]);
  std::string ms = std::to_string(slice_ms);
  char flag[] = "--slice-child";
  std::vector<char*> argv = {const_cast<char*>(self.c_str()), flag, ms.data(), nullptr};
  Child child;
  int failed = posix_spawn(&child.pid, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (failed != 0) {
    close(to_child[1]);
    close(from_child[0]);
    return std::nullopt;
  }
  child.in = to_child[1];
  child.out = fdopen(from_child[0], "r");
  return child;
}

bool read_record(Child& child, gpushare::gpucheck::SliceRecord* record) {
  unsigned long long from = 0, to = 0;
  if (std::fscanf(child.out, "%llu %llu", &from, &to) != 2) return false;
  record->start_ns = from;
  record->end_ns = to;
  while (std::fscanf(child.out, "%llu %llu", &from, &to) == 2) record->gaps.push_back({from, to});
  return true;
}

bool wait_child(Child& child) {
  if (child.out != nullptr) std::fclose(child.out);
  if (child.in >= 0) close(child.in);
  int status = 0;
  return waitpid(child.pid, &status, 0) == child.pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

// The time-slice record: the analysis, or why there is none.
nlohmann::ordered_json time_slices(const std::string& self, long slice_ms) {
  nlohmann::ordered_json result;
  std::optional<Child> a = spawn_child(self, slice_ms), b = spawn_child(self, slice_ms);
  if (!a || !b) return {{"error", "cannot start the two measuring processes"}};
  char line[64];
  bool ready = std::fgets(line, sizeof line, a->out) != nullptr &&
               std::fgets(line, sizeof line, b->out) != nullptr;
  gpushare::gpucheck::SliceRecord ra, rb;
  bool recorded = false;
  if (ready && write(a->in, "g", 1) == 1 && write(b->in, "g", 1) == 1) {
    recorded = read_record(*a, &ra) && read_record(*b, &rb);
  }
  bool exited = wait_child(*a);
  exited = wait_child(*b) && exited;
  if (!ready || !recorded || !exited) return {{"error", "a measuring process failed"}};
  auto analysis = gpushare::gpucheck::analyse_slices(ra, rb);
  if (!analysis) return {{"error", analysis.error().message}};
  return {{"window_ms", analysis->window_ms},
          {"switches", analysis->switches},
          {"runs", analysis->runs},
          {"slice_ms_median", analysis->slice_ms_median},
          {"slice_ms_min", analysis->slice_ms_min},
          {"slice_ms_max", analysis->slice_ms_max},
          {"switch_us", analysis->switch_us}};
}

// Three decimals are more than any of these measurements can claim.
double round3(double value) { return std::round(value * 1000) / 1000; }

nlohmann::ordered_json quantity(const char* name, std::optional<double> measured,
                                std::optional<double> sim_default, const char* setting,
                                const char* note) {
  nlohmann::ordered_json q = {{"name", name}};
  q["measured"] =
      measured ? nlohmann::ordered_json(round3(*measured)) : nlohmann::ordered_json(nullptr);
  q["sim_default"] =
      sim_default ? nlohmann::ordered_json(*sim_default) : nlohmann::ordered_json(nullptr);
  q["sim_setting"] = setting;
  q["note"] = note;
  return q;
}

int run(const Options& options, const std::string& self) {
  bool is_sim = false;
  // Children are started before this process touches the driver: a CUDA
  // context does not survive fork, and the children must not inherit one.
  nlohmann::ordered_json slice_result;
  if (options.slices) {
    progress("time slices: two processes' spinning kernels");
    slice_result = time_slices(self, options.slice_ms);
  }
  progress("context memory, allocation, launch and copy costs");
  Gpu gpu = open_gpu();
  is_sim = simulated();
  char name[256] = {};
  check(cuDeviceGetName(name, sizeof name, gpu.device), "cuDeviceGetName");
  int driver_version = 0;
  check(cuDriverGetVersion(&driver_version), "cuDriverGetVersion");

  double context_bytes = static_cast<double>(context_memory_bytes(gpu));
  AllocTimes small = alloc_times(2u << 20, 200);
  AllocTimes large = alloc_times(256u << 20, 20);
  double launch = launch_us(gpu);
  double bandwidth = h2d_gb_per_s();

  std::optional<double> slice_ms, switch_us;
  if (slice_result.contains("slice_ms_median")) {
    slice_ms = slice_result["slice_ms_median"].get<double>();
    switch_us = slice_result["switch_us"].get<double>();
  }
  if (is_sim && slice_result.contains("error")) {
    slice_result["error"] = "not measurable on the simulated GPU (its kernels compute nothing): " +
                            slice_result["error"].get<std::string>();
  }
  nlohmann::ordered_json record = {
      {"kind", "gpu-calibration"},
      {"version", 1},
      {"driver", is_sim ? "simulated" : "system"},
      {"device", name},
      {"driver_version", driver_version},
      {"quantities",
       {quantity("context_memory_bytes", context_bytes,
                 static_cast<double>(sim::kDefaultCtxOverheadBytes), "GPUSHARE_SIM_CTX_OVERHEAD",
                 "device memory one more context takes"),
        quantity("time_slice_ms", slice_ms, static_cast<double>(sim::kDefaultTimesliceNs) / 1e6,
                 "GPUSHARE_SIM_TIMESLICE",
                 "the time one process's kernels run before the next process's (milliseconds)"),
        quantity("context_switch_us", switch_us, static_cast<double>(sim::kDefaultSwitchNs) / 1e3,
                 "GPUSHARE_SIM_SWITCH_US", "the idle time between two processes' slices"),
        quantity("alloc_us", small.alloc_us, 0, "",
                 "cuMemAlloc of 2 MiB; the simulator's allocations take no simulated time"),
        quantity("free_us", small.free_us, 0, "", "cuMemFree of 2 MiB"),
        quantity("alloc_256mib_us", large.alloc_us, 0, "", "cuMemAlloc of 256 MiB"),
        quantity("launch_us", launch, 0, "",
                 "host time per launch; the simulator's launches take no simulated time"),
        quantity("h2d_gb_per_s", bandwidth, static_cast<double>(sim::kDefaultLinkBytesPerS) / 1e9,
                 "GPUSHARE_SIM_PCIE_GBPS",
                 "pinned cuMemcpyHtoD; the simulator charges this rate (in GB/s, 1e9 bytes) "
                 "to copies and managed-memory migrations")}},
      {"time_slices", slice_result}};
  std::cout << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  return 0;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr,
               "gpushare-gpu-calibrate: error: %s\n"
               "Try 'gpushare-gpu-calibrate --help' for more information.\n",
               message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--slice-child") == 0) {
    return slice_child(std::atol(argv[2]));
  }
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string option = argv[i];
    if (option == "-h" || option == "--help") {
      std::printf(
          "Usage: gpushare-gpu-calibrate [--slice-ms MS] [--no-slices]\n"
          "Measure what the simulated GPU assumes; print one JSON record.\n\n"
          "Options:\n"
          "  --slice-ms MS   length of the two time-slice kernels (default 400)\n"
          "  --no-slices     skip the time-slice measurement\n\n"
          "For more details see docs/validation.md.\n");
      return 0;
    }
    if (option == "--no-slices") {
      options.slices = false;
    } else if (option == "--slice-ms" && i + 1 < argc) {
      char* end = nullptr;
      options.slice_ms = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || options.slice_ms < 10 || options.slice_ms > 10000) {
        return usage_error("--slice-ms: '" + std::string(argv[i]) + "' is not 10 to 10000");
      }
    } else {
      return usage_error("unknown option or missing value: '" + option + "'");
    }
  }
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) {
    std::fprintf(stderr, "gpushare-gpu-calibrate: error: cannot find its own executable\n");
    return 1;
  }
  return run(options, self);
}
