// gpushare-bench-interpose: what the interposer adds to a kernel launch and
// to an allocation, measured against the same driver in one run.
//
// The hook costs nanoseconds; a real driver's launch costs microseconds and
// varies by more than the hook between two runs of the same program. So the
// parent runs the same measuring child REPEATS rounds, each round a pair of
// runs without and with the interposer preloaded, in ABBA order (round r
// runs the interposed side first when r is odd) so that a drift of the
// machine falls on both sides alike. Each child reports the median over
// batches (of 1000 launches, of 100 allocate+free pairs), which an
// interruption of one batch does not move. The overhead is the median of
// the rounds' paired differences; its spread is the distribution-free 95%
// confidence interval of that median (order statistics of the sorted
// differences). Budgets: on the simulator the design's absolute ones (10 ns
// per launch, 300 ns per allocate+free); on a real driver 1% of the
// driver's own cost (the baseline median), since there the driver's cost,
// not the hook's, is what a job pays. Within budget means the interval's
// upper end is within it: a measurement too noisy to tell is not a pass.
//
// The child binds the driver directly (as a program linked to libcuda
// does), so the interposed side pays exactly the hook: the call into our
// exported symbol, the hook's work, and the call through to the real driver.
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
#include <cmath>
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

double ns_since(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The median of sorted differences with its distribution-free 95% interval:
// the k-th smallest and k-th largest, k = n/2 - 0.98 sqrt(n) (at least the
// first, so a handful of rounds gives the whole range).
struct Paired {
  double median, low, high;
};

Paired paired(std::vector<double> differences) {
  std::sort(differences.begin(), differences.end());
  double n = static_cast<double>(differences.size());
  long k = static_cast<long>(std::floor(n / 2 - 0.98 * std::sqrt(n)));
  if (k < 0) k = 0;
  return {median(differences), differences[k], differences[differences.size() - 1 - k]};
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
  std::vector<double> per_launch;
  for (long done = 0; done < iterations; done += batch) {
    Clock::time_point start = Clock::now();
    for (long i = 0; i < batch; ++i) {
      cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
    }
    per_launch.push_back(ns_since(start) / batch);
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  }

  const long pair_batch = 100;
  long pairs = std::max(iterations / 10, pair_batch);
  std::vector<double> per_pair;
  for (long done = 0; done < pairs; done += pair_batch) {
    Clock::time_point start = Clock::now();
    for (long i = 0; i < pair_batch; ++i) {
      CUdeviceptr pointer;
      check(cuMemAlloc(&pointer, 4096), "cuMemAlloc");
      check(cuMemFree(pointer), "cuMemFree");
    }
    per_pair.push_back(ns_since(start) / pair_batch);
  }
  std::printf("%.3f %.3f\n", median(per_launch), median(per_pair));
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
    if (option == "--iterations")
      iterations = std::atol(argv[i + 1]);
    else if (option == "--repeats")
      repeats = std::atoi(argv[i + 1]);
    else if (option == "--interposer")
      interposer = argv[i + 1];
    else if (option == "--sim-dir")
      sim_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "gpushare-bench-interpose: error: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (iterations <= 0 || repeats <= 0) {
    std::fprintf(stderr,
                 "gpushare-bench-interpose: error: --iterations and --repeats must be positive\n");
    return 2;
  }
  std::vector<Sample> base(repeats), hooked(repeats);
  std::vector<double> launch_differences, alloc_differences;
  for (int r = 0; r < repeats; ++r) {
    if (r % 2 == 0) {
      base[r] = run_child(self, iterations, sim_dir, nullptr);
      hooked[r] = run_child(self, iterations, sim_dir, interposer.c_str());
    } else {
      hooked[r] = run_child(self, iterations, sim_dir, interposer.c_str());
      base[r] = run_child(self, iterations, sim_dir, nullptr);
    }
    launch_differences.push_back(hooked[r].launch_ns - base[r].launch_ns);
    alloc_differences.push_back(hooked[r].alloc_ns - base[r].alloc_ns);
  }
  auto side = [&](const std::vector<Sample>& samples, double Sample::*field) {
    std::vector<double> values;
    for (const Sample& sample : samples) values.push_back(sample.*field);
    return median(values);
  };
  double launch_base = side(base, &Sample::launch_ns);
  double alloc_base = side(base, &Sample::alloc_ns);
  Paired launch = paired(launch_differences);
  Paired alloc = paired(alloc_differences);
  bool real = sim_dir.empty();
  // Budgets: absolute on the simulator, 1% of the driver's own cost on a real one.
  double launch_budget = real ? launch_base / 100 : 10;
  double alloc_budget = real ? alloc_base / 100 : 300;
  bool within = launch.high <= launch_budget && alloc.high <= alloc_budget;
  std::printf(
      "{\"kind\":\"bench\",\"version\":2,\"name\":\"interpose-overhead\",\"driver\":\"%s\","
      "\"iterations\":%ld,\"repeats\":%d,\"budget_basis\":\"%s\","
      "\"launch_ns_baseline\":%.1f,\"launch_ns_interposed\":%.1f,\"launch_overhead_ns\":%.1f,"
      "\"launch_overhead_ns_low\":%.1f,\"launch_overhead_ns_high\":%.1f,\"launch_budget_ns\":%.1f,"
      "\"alloc_free_ns_baseline\":%.1f,\"alloc_free_ns_interposed\":%.1f,"
      "\"alloc_overhead_ns\":%.1f,\"alloc_overhead_ns_low\":%.1f,\"alloc_overhead_ns_high\":%.1f,"
      "\"alloc_budget_ns\":%.1f,"
      "\"within_budget\":%s}\n",
      real ? "system" : "simulated", iterations, repeats,
      real ? "1% of the driver's own cost" : "absolute (simulator)", launch_base,
      side(hooked, &Sample::launch_ns), launch.median, launch.low, launch.high, launch_budget,
      alloc_base, side(hooked, &Sample::alloc_ns), alloc.median, alloc.low, alloc.high,
      alloc_budget, within ? "true" : "false");
  return 0;
}
