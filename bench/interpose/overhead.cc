// gpushare-bench-interpose: what the interposer adds to a kernel launch and
// to an allocation, measured against the same driver in one run.
//
// The parent runs the same measuring child alternately without and with
// the interposer preloaded, REPEATS times each, and keeps each side's best
// (the minimum is the least disturbed by the machine's other work). The
// child binds the driver directly (as a program linked to libcuda does),
// so the interposed side pays exactly the hook: the call into our exported
// symbol, the hook's work, and the call through to the real driver.
//
//   gpushare-bench-interpose [--iterations N] [--repeats R] [--interposer SO]
//                            [--sim-dir DIR | --real]
//
// prints one JSON record (kind "bench"). Defaults find the installed
// interposer and simulated driver relative to this executable; --real
// measures against the system's driver instead. The program is linked to
// libcuda.so.1, so run it with LD_LIBRARY_PATH=P/lib/gpushare/sim where no
// driver is installed.
#include <cuda.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "gpushare-bench-interpose: error: %s: CUDA error %d\n", call,
                 static_cast<int>(result));
    std::exit(1);
  }
}

const char kSpinPtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry gpushare_spin(.param .u64 duration_ns)\n{\n  ret;\n}\n";

// The child: ns per launch and per allocate+free pair.
int measure(long iterations) {
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUfunction function;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  check(cuModuleLoadData(&module, kSpinPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&function, module, "gpushare_spin"), "cuModuleGetFunction");
  std::uint64_t duration_ns = 0;
  void* params[] = {&duration_ns};

  // Launches, timed in batches; the synchronise between batches is not timed.
  const long batch = 1000;
  Clock::duration launching{};
  for (long done = 0; done < iterations; done += batch) {
    Clock::time_point start = Clock::now();
    for (long i = 0; i < batch; ++i) {
      cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
    }
    launching += Clock::now() - start;
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  }
  long launches = (iterations + batch - 1) / batch * batch;

  long pairs = iterations / 10 > 0 ? iterations / 10 : 1;
  Clock::time_point start = Clock::now();
  for (long i = 0; i < pairs; ++i) {
    CUdeviceptr pointer;
    check(cuMemAlloc(&pointer, 4096), "cuMemAlloc");
    check(cuMemFree(pointer), "cuMemFree");
  }
  Clock::duration allocating = Clock::now() - start;
  std::printf("%.3f %.3f\n",
              std::chrono::duration<double, std::nano>(launching).count() / static_cast<double>(launches),
              std::chrono::duration<double, std::nano>(allocating).count() / static_cast<double>(pairs));
  return 0;
}

struct Sample {
  double launch_ns;
  double alloc_ns;
};

// Runs this program as a child, with LD_PRELOAD=preload (or none).
Sample run_child(const std::string& self, long iterations, const std::string& sim_dir,
                 const char* preload) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "LD_PRELOAD=", 11) == 0) continue;
    if (std::strncmp(*entry, "LD_LIBRARY_PATH=", 16) == 0) continue;
    environment.emplace_back(*entry);
  }
  if (!sim_dir.empty()) {
    environment.push_back("LD_LIBRARY_PATH=" + sim_dir);
  } else if (const char* inherited = std::getenv("LD_LIBRARY_PATH")) {
    environment.push_back(std::string("LD_LIBRARY_PATH=") + inherited);
  }
  if (preload != nullptr) environment.push_back(std::string("LD_PRELOAD=") + preload);
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string count = std::to_string(iterations);
  char child_flag[] = "--child";
  std::vector<char*> argv = {const_cast<char*>(self.c_str()), child_flag, count.data(), nullptr};

  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) std::exit(1);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid;
  if (posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) {
    std::fprintf(stderr, "gpushare-bench-interpose: error: cannot start %s\n", self.c_str());
    std::exit(1);
  }
  close(pipe_fds[1]);
  char output[256] = {};
  ssize_t length = read(pipe_fds[0], output, sizeof output - 1);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Sample sample{};
  if (length <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(output, "%lf %lf", &sample.launch_ns, &sample.alloc_ns) != 2) {
    std::fprintf(stderr, "gpushare-bench-interpose: error: the %s run failed\n",
                 preload ? "interposed" : "baseline");
    std::exit(1);
  }
  return sample;
}

std::string directory_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--child") == 0) return measure(std::atol(argv[2]));
  long iterations = 200000;
  int repeats = 5;
  char self_buffer[4096] = {};
  if (readlink("/proc/self/exe", self_buffer, sizeof self_buffer - 1) <= 0) return 1;
  std::string self = self_buffer;
  std::string libdir = directory_of(directory_of(self));  // P/lib/gpushare
  std::string interposer = libdir + "/libgpushare-interpose.so";
  std::string sim_dir = libdir + "/sim";
  for (int i = 1; i < argc; i += 2) {
    std::string option = argv[i];
    if (option == "--real") {
      sim_dir.clear();
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gpushare-bench-interpose: error: %s needs a value\n", argv[i]);
      return 2;
    }
    if (option == "--iterations") iterations = std::atol(argv[i + 1]);
    else if (option == "--repeats") repeats = std::atoi(argv[i + 1]);
    else if (option == "--interposer") interposer = argv[i + 1];
    else if (option == "--sim-dir") sim_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "gpushare-bench-interpose: error: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (iterations <= 0 || repeats <= 0) {
    std::fprintf(stderr, "gpushare-bench-interpose: error: --iterations and --repeats must be positive\n");
    return 2;
  }
  Sample best_base{1e18, 1e18}, best_hooked{1e18, 1e18};
  for (int r = 0; r < repeats; ++r) {
    Sample base = run_child(self, iterations, sim_dir, nullptr);
    Sample hooked = run_child(self, iterations, sim_dir, interposer.c_str());
    best_base = {std::min(best_base.launch_ns, base.launch_ns), std::min(best_base.alloc_ns, base.alloc_ns)};
    best_hooked = {std::min(best_hooked.launch_ns, hooked.launch_ns),
                   std::min(best_hooked.alloc_ns, hooked.alloc_ns)};
  }
  double launch_overhead = best_hooked.launch_ns - best_base.launch_ns;
  double alloc_overhead = best_hooked.alloc_ns - best_base.alloc_ns;
  std::printf(
      "{\"kind\":\"bench\",\"version\":1,\"name\":\"interpose-overhead\",\"driver\":\"%s\","
      "\"iterations\":%ld,\"repeats\":%d,"
      "\"launch_ns_baseline\":%.1f,\"launch_ns_interposed\":%.1f,\"launch_overhead_ns\":%.1f,"
      "\"launch_budget_ns\":10,"
      "\"alloc_free_ns_baseline\":%.1f,\"alloc_free_ns_interposed\":%.1f,\"alloc_overhead_ns\":%.1f,"
      "\"alloc_budget_ns\":300,\"within_budget\":%s}\n",
      sim_dir.empty() ? "system" : "simulated", iterations, repeats, best_base.launch_ns, best_hooked.launch_ns, launch_overhead,
      best_base.alloc_ns, best_hooked.alloc_ns, alloc_overhead,
      launch_overhead <= 10 && alloc_overhead <= 300 ? "true" : "false");
  return 0;
}
