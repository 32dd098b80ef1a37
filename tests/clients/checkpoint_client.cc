// gpushare-ckpt-client: the process checkpoint API (cuCheckpointProcess*)
// from both sides, for the end-to-end tests.
//
//   gpushare-ckpt-client job --mem BYTES --ready PATH (--seconds S | --stop FILE) [--kernel-us N]
//       a CUDA process: allocates BYTES on its device 0, fills them with a
//       pattern, writes PATH (its pid) once ready, then launches kernels and
//       synchronises for S seconds, or until FILE exists; then checks the pattern and
//       prints {"kind":"ckpt-job",...}: steps, the longest gap between two
//       steps (a lock blocks its calls), its device 0's UUID at the start and
//       at the end, and whether the data was intact.
//   gpushare-ckpt-client ACTION --pid PID [--timeout-ms N] [--pair OLD=NEW]...
//       ACTION is lock, checkpoint, restore, unlock, state or tid, called on
//       another process; OLD and NEW are ordinals of this process's devices
//       (run it with every device visible). Prints {"kind":"ckpt-ctl",...}
//       with the result's name; exits 0 on CUDA_SUCCESS, 1 otherwise.
//   gpushare-ckpt-client stats
//       per device of this process: used bytes and kernels ever launched
//       (the simulator's gpushare_sim_device_stats).
//   gpushare-ckpt-client hold --ms N --ready PATH
//       a CUDA process whose driver lock is held N ms by one of its own calls
//       (gpushare_sim_hold_driver_lock), so that a lock must time out.
#include <cuda.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/spin_ptx.h"

namespace {

long long now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

const char* name_of(CUresult status) {
  const char* name = nullptr;
  if (cuGetErrorName(status, &name) != CUDA_SUCCESS || name == nullptr) return "unknown";
  return name;
}

bool check(CUresult status, const char* what) {
  if (status == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "gpushare-ckpt-client: error: %s: %s\n", what, name_of(status));
  return false;
}

std::string uuid_text(CUdevice device) {
  CUuuid uuid;
  if (cuDeviceGetUuid_v2(&uuid, device) != CUDA_SUCCESS) return "?";
  char text[64];
  const unsigned char* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

const char* option(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

bool write_ready(const char* path) {
  std::string temporary = std::string(path) + ".tmp";
  FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) return false;
  std::fprintf(file, "%d\n", static_cast<int>(getpid()));
  std::fclose(file);
  return std::rename(temporary.c_str(), path) == 0;
}

int run_job(int argc, char** argv) {
  std::size_t bytes = std::strtoull(option(argc, argv, "--mem", "0"), nullptr, 10);
  const char* ready = option(argc, argv, "--ready", nullptr);
  double seconds = std::atof(option(argc, argv, "--seconds", "2"));
  const char* stop = option(argc, argv, "--stop", nullptr);
  unsigned long long kernel_ns =
      1000ull * std::strtoull(option(argc, argv, "--kernel-us", "2000"), nullptr, 10);
  if (ready == nullptr || bytes < 8) return 2;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction spin = nullptr;
  CUdeviceptr data = 0;
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !check(cuDevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
      !check(cuModuleLoadData(&module, gpushare::kernels::kSpinPtx), "cuModuleLoadData") ||
      !check(cuModuleGetFunction(&spin, module, gpushare::kernels::kSpinKernelName),
             "cuModuleGetFunction") ||
      !check(cuMemAlloc(&data, bytes), "cuMemAlloc")) {
    return 1;
  }
  std::vector<unsigned long long> host(bytes / 8);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = i * 2654435761ull + 7;
  if (!check(cuMemcpyHtoD(data, host.data(), host.size() * 8), "cuMemcpyHtoD")) return 1;
  std::string uuid_start = uuid_text(device);
  if (!write_ready(ready)) return 1;
  long long start = now_ms(), last = start, longest = 0;
  unsigned long long steps = 0;
  while (stop != nullptr ? access(stop, F_OK) != 0
                         : now_ms() - start < static_cast<long long>(seconds * 1000)) {
    void* params[] = {&kernel_ns};
    if (!check(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
               "cuLaunchKernel") ||
        !check(cuCtxSynchronize(), "cuCtxSynchronize")) {
      return 1;
    }
    ++steps;
    long long now = now_ms();
    if (now - last > longest) longest = now - last;
    last = now;
  }
  std::vector<unsigned long long> back(host.size());
  if (!check(cuMemcpyDtoH(back.data(), data, back.size() * 8), "cuMemcpyDtoH")) return 1;
  bool intact = back == host;
  std::printf(
      "{\"kind\":\"ckpt-job\",\"version\":1,\"steps\":%llu,\"longest_gap_ms\":%lld,"
      "\"uuid_start\":\"%s\",\"uuid_end\":\"%s\",\"intact\":%s}\n",
      steps, longest, uuid_start.c_str(), uuid_text(device).c_str(), intact ? "true" : "false");
  return intact ? 0 : 1;
}

int run_hold(int argc, char** argv) {
  int ms = std::atoi(option(argc, argv, "--ms", "1000"));
  const char* ready = option(argc, argv, "--ready", nullptr);
  if (ready == nullptr || !check(cuInit(0), "cuInit")) return 2;
  auto hold = reinterpret_cast<int (*)(int, int (*)(const char*), const char*)>(
      dlsym(RTLD_DEFAULT, "gpushare_sim_hold_driver_lock"));
  if (hold == nullptr) return 1;
  // The ready file is written by the callback, with the lock held.
  return hold(
             ms, [](const char* path) { return write_ready(path) ? 0 : 1; }, ready) == 0
             ? 0
             : 1;
}

int run_stats() {
  if (!check(cuInit(0), "cuInit")) return 1;
  auto stats = reinterpret_cast<int (*)(int, unsigned long long*, unsigned long long*,
                                        unsigned long long*, unsigned long long*)>(
      dlsym(RTLD_DEFAULT, "gpushare_sim_device_stats"));
  if (stats == nullptr) return 1;
  int count = 0;
  cuDeviceGetCount(&count);
  for (int i = 0; i < count; ++i) {
    unsigned long long used = 0, total = 0, busy = 0, kernels = 0;
    if (stats(i, &used, &total, &busy, &kernels) != 0) return 1;
    std::printf(
        "{\"kind\":\"ckpt-stats\",\"version\":1,\"device\":%d,\"uuid\":\"%s\","
        "\"used_bytes\":%llu,\"kernels\":%llu}\n",
        i, uuid_text(i).c_str(), used, kernels);
  }
  return 0;
}

int run_ctl(int argc, char** argv) {
  std::string action = argv[1];
  int pid = std::atoi(option(argc, argv, "--pid", "0"));
  if (!check(cuInit(0), "cuInit")) return 1;
  CUresult status = CUDA_ERROR_INVALID_VALUE;
  std::string extra;
  long long began = now_ms();
  if (action == "lock") {
    CUcheckpointLockArgs args{};
    args.timeoutMs = static_cast<unsigned>(std::atoi(option(argc, argv, "--timeout-ms", "0")));
    status = cuCheckpointProcessLock(pid, &args);
  } else if (action == "checkpoint") {
    status = cuCheckpointProcessCheckpoint(pid, nullptr);
  } else if (action == "unlock") {
    status = cuCheckpointProcessUnlock(pid, nullptr);
  } else if (action == "restore") {
    std::vector<CUcheckpointGpuPair> pairs;
    for (int i = 2; i + 1 < argc; ++i) {
      if (std::strcmp(argv[i], "--pair") != 0) continue;
      int from = 0, to = 0;
      if (std::sscanf(argv[i + 1], "%d=%d", &from, &to) != 2) return 2;
      CUcheckpointGpuPair pair{};
      if (!check(cuDeviceGetUuid_v2(&pair.oldUuid, from), "cuDeviceGetUuid") ||
          !check(cuDeviceGetUuid_v2(&pair.newUuid, to), "cuDeviceGetUuid")) {
        return 1;
      }
      pairs.push_back(pair);
    }
    CUcheckpointRestoreArgs args{};
    args.gpuPairs = pairs.empty() ? nullptr : pairs.data();
    args.gpuPairsCount = static_cast<unsigned>(pairs.size());
    status = cuCheckpointProcessRestore(pid, &args);
  } else if (action == "state") {
    CUprocessState state = CU_PROCESS_STATE_FAILED;
    status = cuCheckpointProcessGetState(pid, &state);
    const char* names[] = {"running", "locked", "checkpointed", "failed"};
    if (status == CUDA_SUCCESS) {
      extra = std::string(",\"state\":\"") + names[static_cast<int>(state) & 3] + "\"";
    }
  } else if (action == "tid") {
    int tid = 0;
    status = cuCheckpointProcessGetRestoreThreadId(pid, &tid);
    extra = ",\"tid\":" + std::to_string(tid);
  } else {
    return 2;
  }
  std::printf(
      "{\"kind\":\"ckpt-ctl\",\"version\":1,\"action\":\"%s\",\"result\":\"%s\","
      "\"wall_ms\":%lld%s}\n",
      action.c_str(), name_of(status), now_ms() - began, extra.c_str());
  return status == CUDA_SUCCESS ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string verb = argv[1];
  if (verb == "job") return run_job(argc, argv);
  if (verb == "hold") return run_hold(argc, argv);
  if (verb == "stats") return run_stats();
  return run_ctl(argc, argv);
}
