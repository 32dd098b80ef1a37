// gpushare-cuda-client: a driver-API program for tests, driven by steps on
// its command line, printing one JSON line per step.
//
//   gpushare-cuda-client [--bind direct|dlsym|resolver] [--per-thread] STEP...
//
// A step is NAME[:ARG]...; a leading '?' lets it fail without stopping the
// client. The client exits 0 when every step without '?' succeeded, 1 at the
// first one that did not (after printing it), 2 on a malformed command line.
//
//   init | version | devices             cuInit, cuDriverGetVersion, device count
//   ctx[:DEV] | ctx-create[:DEV]         primary context made current | cuCtxCreate
//   ctx-destroy | ctx-release[:DEV]      destroy the created context | release primary
//   ctx-reset[:DEV]                      cuDevicePrimaryCtxReset: the primary context
//                                        and everything allocated in it are gone
//   ctx-unset                            cuCtxSetCurrent(NULL): no current context
//   info | total[:DEV] | sms[:DEV]       cuMemGetInfo | cuDeviceTotalMem | SM count
//   alloc:KIND:SIZE                      KIND: plain pitch managed managed-host async
//                                        pool vmm host; reports wall_ms
//   free | free-all                      the last allocation | all of them
//   refree                               free the last freed allocation again
//   fill:SEED | check:SEED | memset:BYTE write, verify or memset the last allocation
//   advise:preferred-device|preferred-host|accessed-by   on the last allocation
//   prefetch:device|host                 the last (managed) allocation
//   copy:htod|dtoh|dtod:SIZE[:async]     a copy between a host buffer and the last
//                                        allocation (dtod: its first SIZE bytes to the
//                                        next); reports wall_ms
//   copies:COUNT:SIZE[:async]            COUNT HtoD copies; reports wall_ms
//   managed-stats                        this process's managed bytes: total and on the
//                                        device (the simulator's gpushare_sim_managed_stats)
//   mark | elapsed                       record an event on the stream | record another,
//                                        wait for it, report elapsed_ms since the mark
//   stream-elapsed                       two events on the stream, cuStreamSynchronize (no
//                                        event sync), then their elapsed time; reports wall_ms
//   stream | sync | stream-sync | query  new stream | cuCtxSynchronize | ... | cuStreamQuery
//                                        (the syncs report wall_ms)
//   stream:blocking|non-blocking|legacy|per-thread   new stream of those flags, or use
//                                        the CU_STREAM_LEGACY / CU_STREAM_PER_THREAD handle
//   stream-priority:P                    new non-blocking stream of priority P; reports
//                                        the priority it got
//   kernel:spin|library|text:NAME:US     what launches run: gpushare_spin from a module
//                                        or a library, or NAME of a text module
//   kernel:ptx:NAME                      NAME, an empty PTX kernel (no duration of its own)
//   launch-mode:plain|ex|coop            cuLaunchKernel, cuLaunchKernelEx, cooperative
//   launch:COUNT:US                      COUNT gpushare_spin kernels of US microseconds;
//                                        reports wall_ms (launches wait on a full stream)
//   timed:COUNT:US                       ... each followed by a stream sync; reports wall_ms
//   events:US[:LEAD_US]                  elapsed time of one kernel between two events;
//                                        after a LEAD_US kernel, everything is queued
//                                        ahead of the host, so host delays do not count
//   resolve:NAME:VERSION[:FLAGS]         cuGetProcAddress_v2; reports the symbol found
//   nvml                                 NVML memory and processes of device 0
//   stub:NAME                            call NAME with no arguments through dlsym; only
//                                        for entry points a simulator leaves unimplemented
//   ready[:FILE] | wait:FILE | hold      signal, wait for a file (60 s), wait for stdin EOF
//   exit:N                               _exit(N) at once, without any cleanup
#include <dlfcn.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "client_api.h"
#include "client_state.h"
#include "common/units.h"
#include "copy_steps.h"
#include "nvml_api.h"
#include "kernels/spin_ptx.h"

namespace {

using gpushare::clients::Api;
using namespace gpushare::clients;

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t colon = text.find(':', start);
    parts.push_back(
        text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) return parts;
    start = colon + 1;
  }
}

CUresult load_spin(Client& client) {
  if (client.spin != nullptr) return CUDA_SUCCESS;
  CUresult status = client.api.cuModuleLoadData(&client.module, gpushare::kernels::kSpinPtx);
  if (status != CUDA_SUCCESS) return status;
  return client.api.cuModuleGetFunction(&client.spin, client.module,
                                        gpushare::kernels::kSpinKernelName);
}

// The kernel launches run: gpushare_spin from a module unless chosen.
CUresult ensure_kernel(Client& client) {
  if (client.function != nullptr) return CUDA_SUCCESS;
  CUresult status = load_spin(client);
  if (status == CUDA_SUCCESS) client.function = client.spin;
  return status;
}

CUresult launch_spin(Client& client, unsigned long long micros) {
  if (CUresult status = ensure_kernel(client); status != CUDA_SUCCESS) return status;
  unsigned long long nanos = micros * 1000;
  void* params[] = {&nanos};
  switch (client.mode) {
    case LaunchMode::kEx: {
      CUlaunchConfig config{};
      config.gridDimX = config.gridDimY = config.gridDimZ = 1;
      config.blockDimX = config.blockDimY = config.blockDimZ = 1;
      config.hStream = client.stream;
      return client.api.cuLaunchKernelEx(&config, client.function, params, nullptr);
    }
    case LaunchMode::kCooperative:
      return client.api.cuLaunchCooperativeKernel(client.function, 1, 1, 1, 1, 1, 1, 0,
                                                  client.stream, params);
    case LaunchMode::kPlain:
      break;
  }
  return client.api.cuLaunchKernel(client.function, 1, 1, 1, 1, 1, 1, 0, client.stream, params,
                                   nullptr);
}

// kernel:spin | kernel:library | kernel:text:NAME:US
CUresult choose_kernel(Client& client, const std::vector<std::string>& args) {
  const Api& api = client.api;
  if (args[1] == "spin") {
    CUresult status = load_spin(client);
    if (status == CUDA_SUCCESS) client.function = client.spin;
    return status;
  }
  if (args[1] == "library") {
    CUlibrary library = nullptr;
    CUkernel kernel = nullptr;
    CUresult status = api.cuLibraryLoadData(&library, gpushare::kernels::kSpinPtx, nullptr,
                                            nullptr, 0, nullptr, nullptr, 0);
    if (status == CUDA_SUCCESS) {
      status = api.cuLibraryGetKernel(&kernel, library, gpushare::kernels::kSpinKernelName);
    }
    // A CUkernel may be launched where a CUfunction is expected.
    if (status == CUDA_SUCCESS) client.function = reinterpret_cast<CUfunction>(kernel);
    return status;
  }
  // PTX whose kernel takes no duration parameter, or the simulator's own
  // text module format.
  std::string image = args[1] == "ptx"
                          ? ".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry " +
                                args[2] + "()\n{\n\tret;\n}\n"
                          : "gpushare-sim-module 1\nkernel " + args[2] + " " + args[3] + "\n";
  CUmodule module = nullptr;
  CUresult status = api.cuModuleLoadData(&module, image.c_str());
  if (status == CUDA_SUCCESS)
    status = api.cuModuleGetFunction(&client.function, module, args[2].c_str());
  return status;
}

CUresult resolve(Client& client, const std::vector<std::string>& args) {
  unsigned long long version = 0, flags = 0;
  if (args.size() < 3 || !parse_number(args[2], &version) ||
      (args.size() > 3 && !parse_number(args[3], &flags))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* address = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult result = client.api.cuGetProcAddress_v2(args[1].c_str(), &address,
                                                   static_cast<int>(version), flags, &status);
  field(client, "status", static_cast<unsigned long long>(status));
  Dl_info info{};
  if (address != nullptr && dladdr(address, &info) != 0 && info.dli_sname != nullptr) {
    field(client, "symbol", std::string(info.dli_sname));
    field(client, "library", std::string(info.dli_fname));
  } else {
    field_raw(client, "symbol", "null");
  }
  return result;
}

CUresult query_nvml(Client& client) {
  gpushare::clients::Nvml nvml;
  std::string error;
  if (!gpushare::clients::load_nvml(&nvml, &error)) {
    field(client, "error", error);
    return CUDA_ERROR_NOT_FOUND;
  }
  gpushare::clients::NvmlDevice device = nullptr;
  gpushare::clients::NvmlMemory memory{};
  unsigned count = 64;
  gpushare::clients::NvmlProcessInfo processes[64];
  gpushare::clients::NvmlUtilization utilization{};
  int status = nvml.init();
  if (status == 0) status = nvml.handle_by_index(0, &device);
  if (status == 0) status = nvml.memory_info(device, &memory);
  if (status == 0) status = nvml.running_processes(device, &count, processes);
  if (status == 0) status = nvml.utilization(device, &utilization);
  if (status != 0) {
    field(client, "nvml_status", static_cast<unsigned long long>(status));
    return CUDA_ERROR_UNKNOWN;
  }
  field(client, "nvml_total_bytes", memory.total);
  field(client, "nvml_used_bytes", memory.used);
  field(client, "nvml_free_bytes", memory.free);
  field(client, "gpu_util_pct", utilization.gpu);
  std::string list = "[";
  for (unsigned i = 0; i < count; ++i) {
    if (i > 0) list += ",";
    list += "{\"pid\":" + std::to_string(processes[i].pid) +
            ",\"used_bytes\":" + std::to_string(processes[i].used_gpu_memory) + "}";
  }
  field_raw(client, "processes", list + "]");
  nvml.shutdown();
  return CUDA_SUCCESS;
}

bool wait_for_file(const std::string& path) {
  for (int i = 0; i < 6000; ++i) {  // 60 s at most
    struct stat info;
    if (stat(path.c_str(), &info) == 0) return true;
    timespec pause{0, 10000000};
    nanosleep(&pause, nullptr);
  }
  return false;
}

bool run_step(Client& client, const std::vector<std::string>& args, CUresult* result) {
  const Api& api = client.api;
  const std::string& name = args[0];
  unsigned long long a = 0, b = 0;
  auto number_arg = [&](std::size_t index, unsigned long long fallback, unsigned long long* out) {
    if (args.size() <= index) {
      *out = fallback;
      return true;
    }
    return parse_number(args[index], out);
  };
  if (std::optional<bool> memory = run_memory_step(client, args, result)) return *memory;
  if (name == "init") {
    *result = api.cuInit(0);
  } else if (name == "version") {
    int version = 0;
    *result = api.cuDriverGetVersion(&version);
    field(client, "driver_version", static_cast<unsigned long long>(version));
  } else if (name == "devices") {
    int count = 0;
    *result = api.cuDeviceGetCount(&count);
    field(client, "devices", static_cast<unsigned long long>(count));
  } else if (name == "ctx" || name == "ctx-create") {
    if (!number_arg(1, 0, &a)) return false;
    *result = api.cuDeviceGet(&client.device, static_cast<int>(a));
    CUcontext ctx = nullptr;
    if (*result == CUDA_SUCCESS && name == "ctx") {
      *result = api.cuDevicePrimaryCtxRetain(&ctx, client.device);
      if (*result == CUDA_SUCCESS) *result = api.cuCtxSetCurrent(ctx);
    } else if (*result == CUDA_SUCCESS) {
      *result = api.cuCtxCreate_v4(&client.created, nullptr, 0, client.device);
    }
  } else if (name == "ctx-destroy") {
    *result = api.cuCtxDestroy_v2(client.created);
  } else if (name == "ctx-release") {
    if (!number_arg(1, 0, &a)) return false;
    *result = api.cuDevicePrimaryCtxRelease_v2(static_cast<CUdevice>(a));
  } else if (name == "ctx-reset") {
    if (!number_arg(1, 0, &a)) return false;
    *result = api.cuDevicePrimaryCtxReset_v2(static_cast<CUdevice>(a));
  } else if (name == "info") {
    std::size_t free_bytes = 0, total_bytes = 0;
    *result = api.cuMemGetInfo_v2(&free_bytes, &total_bytes);
    field(client, "free_bytes", free_bytes);
    field(client, "total_bytes", total_bytes);
  } else if (name == "total" || name == "sms") {
    if (!number_arg(1, 0, &a)) return false;
    if (name == "total") {
      std::size_t total_bytes = 0;
      *result = api.cuDeviceTotalMem_v2(&total_bytes, static_cast<CUdevice>(a));
      field(client, "total_bytes", total_bytes);
    } else {
      int sms = 0;
      *result = api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                         static_cast<CUdevice>(a));
      field(client, "sms", static_cast<unsigned long long>(sms));
    }
  } else if (name == "ctx-unset") {
    *result = api.cuCtxSetCurrent(nullptr);
  } else if (name == "stub") {
    if (args.size() != 2) return false;
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void* address = library != nullptr ? dlsym(library, args[1].c_str()) : nullptr;
    if (address == nullptr) return false;
    *result = reinterpret_cast<CUresult (*)()>(address)();
  } else if (name == "mark" || name == "elapsed") {
    CUevent end = nullptr;
    float elapsed = 0;
    bool first = name == "mark";
    if (!first && client.mark == nullptr) return false;
    *result = api.cuEventCreate(first ? &client.mark : &end, CU_EVENT_DEFAULT);
    if (*result == CUDA_SUCCESS)
      *result = api.cuEventRecord(first ? client.mark : end, client.stream);
    if (!first && *result == CUDA_SUCCESS) *result = api.cuEventSynchronize(end);
    if (!first && *result == CUDA_SUCCESS)
      *result = api.cuEventElapsedTime(&elapsed, client.mark, end);
    if (!first) field_raw(client, "elapsed_ms", std::to_string(elapsed));
  } else if (name == "stream-elapsed") {
    // What a stream synchronisation alone promises: the events recorded on
    // the stream before it are complete, so their elapsed time is known.
    CUevent start = nullptr, end = nullptr;
    float elapsed = 0;
    auto begin = std::chrono::steady_clock::now();
    *result = api.cuEventCreate(&start, CU_EVENT_DEFAULT);
    if (*result == CUDA_SUCCESS) *result = api.cuEventCreate(&end, CU_EVENT_DEFAULT);
    if (*result == CUDA_SUCCESS) *result = api.cuEventRecord(start, client.stream);
    if (*result == CUDA_SUCCESS) *result = api.cuEventRecord(end, client.stream);
    if (*result == CUDA_SUCCESS) *result = api.cuStreamSynchronize(client.stream);
    field_raw(client, "wall_ms", std::to_string(wall_ms_since(begin)));
    if (*result == CUDA_SUCCESS) *result = api.cuEventElapsedTime(&elapsed, start, end);
    field_raw(client, "elapsed_ms", std::to_string(elapsed));
  } else if (name == "stream") {
    if (args.size() > 2) return false;
    std::string which = args.size() == 2 ? args[1] : "blocking";
    *result = CUDA_SUCCESS;
    if (which == "blocking") {
      *result = api.cuStreamCreate(&client.stream, CU_STREAM_DEFAULT);
    } else if (which == "non-blocking") {
      *result = api.cuStreamCreate(&client.stream, CU_STREAM_NON_BLOCKING);
    } else if (which == "legacy") {
      client.stream = CU_STREAM_LEGACY;
    } else if (which == "per-thread") {
      client.stream = CU_STREAM_PER_THREAD;
    } else {
      return false;
    }
  } else if (name == "stream-priority") {
    long long priority = 0;
    if (args.size() != 2) return false;
    char* end = nullptr;
    priority = std::strtoll(args[1].c_str(), &end, 10);
    if (*end != '\0') return false;
    *result = api.cuStreamCreateWithPriority(&client.stream, CU_STREAM_NON_BLOCKING,
                                             static_cast<int>(priority));
    int actual = 0;
    if (*result == CUDA_SUCCESS) *result = api.cuStreamGetPriority(client.stream, &actual);
    field_raw(client, "priority", std::to_string(actual));
  } else if (name == "kernel") {
    if (args.size() < 2 ||
        (args[1] != "spin" && args[1] != "library" && (args[1] != "text" || args.size() != 4) &&
         (args[1] != "ptx" || args.size() != 3))) {
      return false;
    }
    *result = choose_kernel(client, args);
  } else if (name == "launch-mode") {
    if (args.size() != 2) return false;
    if (args[1] == "plain") {
      client.mode = LaunchMode::kPlain;
    } else if (args[1] == "ex") {
      client.mode = LaunchMode::kEx;
    } else if (args[1] == "coop") {
      client.mode = LaunchMode::kCooperative;
    } else {
      return false;
    }
    *result = CUDA_SUCCESS;
  } else if (name == "sync" || name == "stream-sync") {
    auto start = std::chrono::steady_clock::now();
    *result = name == "sync" ? api.cuCtxSynchronize() : api.cuStreamSynchronize(client.stream);
    field_raw(client, "wall_ms", std::to_string(wall_ms_since(start)));
  } else if (name == "query") {
    *result = api.cuStreamQuery(client.stream);
  } else if (name == "launch" || name == "timed") {
    if (!number_arg(1, 1, &a) || !number_arg(2, 1000, &b)) return false;
    auto start = std::chrono::steady_clock::now();
    *result = CUDA_SUCCESS;
    for (unsigned long long i = 0; i < a && *result == CUDA_SUCCESS; ++i) {
      *result = launch_spin(client, b);
      if (*result == CUDA_SUCCESS && name == "timed")
        *result = api.cuStreamSynchronize(client.stream);
    }
    field(client, "kernels", a);
    field(client, "kernel_us", b);
    field_raw(client, "wall_ms", std::to_string(wall_ms_since(start)));
  } else if (name == "events") {
    if (!number_arg(1, 1000, &a) || !number_arg(2, 0, &b)) return false;
    CUevent start = nullptr, end = nullptr;
    float elapsed = 0;
    // Loaded first, so the module load does not fall between the events.
    *result = ensure_kernel(client);
    if (*result == CUDA_SUCCESS) *result = api.cuEventCreate(&start, CU_EVENT_DEFAULT);
    // A lead kernel queues both events and the kernel ahead of the host, so
    // the host's own delays (a loaded machine) do not fall between them.
    if (*result == CUDA_SUCCESS && b > 0) *result = launch_spin(client, b);
    if (*result == CUDA_SUCCESS) *result = api.cuEventCreate(&end, CU_EVENT_DEFAULT);
    if (*result == CUDA_SUCCESS) *result = api.cuEventRecord(start, client.stream);
    if (*result == CUDA_SUCCESS) *result = launch_spin(client, a);
    if (*result == CUDA_SUCCESS) *result = api.cuEventRecord(end, client.stream);
    if (*result == CUDA_SUCCESS) *result = api.cuEventSynchronize(end);
    if (*result == CUDA_SUCCESS) *result = api.cuEventElapsedTime(&elapsed, start, end);
    field_raw(client, "elapsed_ms", std::to_string(elapsed));
  } else if (name == "resolve") {
    *result = resolve(client, args);
  } else if (name == "nvml") {
    *result = query_nvml(client);
  } else if (name == "ready") {
    *result = CUDA_SUCCESS;
    if (args.size() > 1) {
      std::string temporary = args[1] + ".tmp";
      FILE* file = std::fopen(temporary.c_str(), "w");
      if (file == nullptr || std::fclose(file) != 0 ||
          std::rename(temporary.c_str(), args[1].c_str()) != 0) {
        *result = CUDA_ERROR_UNKNOWN;
      }
    }
  } else if (name == "wait") {
    if (args.size() != 2) return false;
    *result = wait_for_file(args[1]) ? CUDA_SUCCESS : CUDA_ERROR_TIMEOUT;
  } else if (name == "hold") {
    char buffer[256];
    while (read(0, buffer, sizeof buffer) > 0) {
    }
    *result = CUDA_SUCCESS;
  } else if (name == "exit") {
    if (!number_arg(1, 0, &a)) return false;
    std::fflush(stdout);
    _exit(static_cast<int>(a));
  } else {
    return false;
  }
  return true;
}

int usage(const char* message) {
  std::fprintf(stderr, "gpushare-cuda-client: error: %s\n", message);
  std::fprintf(
      stderr,
      "usage: gpushare-cuda-client [--bind direct|dlsym|resolver] [--per-thread] STEP...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  gpushare::clients::Binding binding = gpushare::clients::Binding::kDirect;
  bool per_thread = false;
  int first = 1;
  for (; first < argc && std::strncmp(argv[first], "--", 2) == 0; ++first) {
    std::string option = argv[first];
    if (option == "--bind" && first + 1 < argc) {
      std::string value = argv[++first];
      if (value == "direct") {
        binding = gpushare::clients::Binding::kDirect;
      } else if (value == "dlsym") {
        binding = gpushare::clients::Binding::kDlsym;
      } else if (value == "resolver") {
        binding = gpushare::clients::Binding::kResolver;
      } else {
        return usage("--bind takes direct, dlsym or resolver");
      }
    } else if (option == "--per-thread") {
      per_thread = true;
    } else {
      return usage(("unknown option " + option).c_str());
    }
  }
  if (first == argc) return usage("no steps");

  Client client;
  std::string error;
  if (!gpushare::clients::bind_api(binding, per_thread, &client.api, &error)) {
    std::fprintf(stderr, "gpushare-cuda-client: error: %s\n", error.c_str());
    return 1;
  }
  for (int i = first; i < argc; ++i) {
    std::string step = argv[i];
    bool may_fail = !step.empty() && step[0] == '?';
    if (may_fail) step.erase(0, 1);
    std::vector<std::string> args = split(step);
    CUresult result = CUDA_SUCCESS;
    client.json.clear();
    if (!run_step(client, args, &result)) return usage(("bad step '" + step + "'").c_str());
    std::printf("{\"step\":\"%s\",\"result\":\"%s\"%s}\n", args[0].c_str(),
                gpushare::clients::result_name(client.api, result).c_str(), client.json.c_str());
    std::fflush(stdout);
    if (result != CUDA_SUCCESS && !may_fail) return 1;
  }
  return 0;
}
