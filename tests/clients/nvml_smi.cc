// gpushare-nvml-smi: an nvidia-smi-like query client, written from NVML's
// API documentation, for the end-to-end tests: it loads libnvidia-ml.so.1
// at run time (as monitoring tools do) and prints one JSON line per device
// with what nvidia-smi shows: identity, PCI location, modes, memory (both
// nvmlMemory_t and nvmlMemory_v2_t), clocks, power, utilisation, and the
// compute processes with their memory and SM utilisation (from both
// nvmlDeviceGetProcessUtilization and nvmlDeviceGetProcessesUtilizationInfo).
//
//   gpushare-nvml-smi
//
// Exits 0 when every query succeeded, 1 when one failed (naming it and its
// NVML error), 2 on a bad command line.
#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

using Device = void*;

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct MemoryV2 {  // nvmlMemory_v2_t; version = sizeof | 2 << 24
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
struct PciInfo {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct Utilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};
struct ProcessInfo {  // nvmlProcessInfo_t (the _v3 calls)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
struct ProcessSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long timestamp_us;
  unsigned int sm, memory, encoder, decoder;
};
struct Sample {  // nvmlSample_t
  unsigned long long timestamp_us;
  union {
    double d;
    unsigned int ui;
    unsigned long long ull;
  } value;
};
struct ProcessUtilizationInfo {  // nvmlProcessUtilizationInfo_v1_t
  unsigned long long timestamp_us;
  unsigned int pid, sm, memory, encoder, decoder, jpeg, ofa;
};
struct ProcessesUtilizationInfo {  // nvmlProcessesUtilizationInfo_v1_t; version = sizeof | 1 << 24
  unsigned int version;
  unsigned int count;
  unsigned long long last_seen_us;
  ProcessUtilizationInfo* samples;
};

constexpr int kSuccess = 0;
constexpr int kNotFound = 6;
constexpr int kInsufficientSize = 7;

void* g_library = nullptr;
const char* (*g_error_string)(int) = nullptr;

template <class Function>
Function find(const char* name) {
  void* symbol = dlsym(g_library, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "gpushare-nvml-smi: error: libnvidia-ml.so.1 has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<Function>(symbol);
}

void require(int status, const char* what) {
  if (status == kSuccess) return;
  std::fprintf(stderr, "gpushare-nvml-smi: error: %s: %s (%d)\n", what, g_error_string(status),
               status);
  std::exit(1);
}

// Calls an entry point with the types of the arguments given (NVML's
// enums are int-sized), and fails the run if it does not succeed.
template <class... Args>
int call(const char* name, Args... args) {
  return find<int (*)(Args...)>(name)(args...);
}
#define QUERY(name, ...) require(call(#name __VA_OPT__(, ) __VA_ARGS__), #name)

}  // namespace

int main(int argc, char**) {
  if (argc != 1) {
    std::fprintf(stderr, "gpushare-nvml-smi: error: usage: gpushare-nvml-smi\n");
    return 2;
  }
  g_library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_library == nullptr) {
    std::fprintf(stderr, "gpushare-nvml-smi: error: %s\n", dlerror());
    return 1;
  }
  g_error_string = find<const char* (*)(int)>("nvmlErrorString");
  QUERY(nvmlInit_v2);
  char driver[80] = {};
  QUERY(nvmlSystemGetDriverVersion, driver, static_cast<unsigned>(sizeof driver));
  int cuda_version = 0;
  QUERY(nvmlSystemGetCudaDriverVersion_v2, &cuda_version);
  unsigned count = 0;
  QUERY(nvmlDeviceGetCount_v2, &count);
  for (unsigned index = 0; index < count; ++index) {
    Device device = nullptr;
    QUERY(nvmlDeviceGetHandleByIndex_v2, index, &device);
    char name[96] = {}, uuid[96] = {}, serial[32] = {};
    QUERY(nvmlDeviceGetName, device, name, static_cast<unsigned>(sizeof name));
    QUERY(nvmlDeviceGetUUID, device, uuid, static_cast<unsigned>(sizeof uuid));
    QUERY(nvmlDeviceGetSerial, device, serial, static_cast<unsigned>(sizeof serial));
    PciInfo pci{};
    QUERY(nvmlDeviceGetPciInfo_v3, device, &pci);
    unsigned minor = 0, mig_current = 0, mig_pending = 0, sm_clock = 0, memory_clock = 0, power = 0,
             power_limit = 0, temperature = 0;
    int compute_mode = -1;
    QUERY(nvmlDeviceGetMinorNumber, device, &minor);
    QUERY(nvmlDeviceGetComputeMode, device, &compute_mode);
    QUERY(nvmlDeviceGetMigMode, device, &mig_current, &mig_pending);
    QUERY(nvmlDeviceGetClockInfo, device, 1 /* NVML_CLOCK_SM */, &sm_clock);
    QUERY(nvmlDeviceGetClockInfo, device, 2 /* NVML_CLOCK_MEM */, &memory_clock);
    QUERY(nvmlDeviceGetPowerUsage, device, &power);
    QUERY(nvmlDeviceGetEnforcedPowerLimit, device, &power_limit);
    QUERY(nvmlDeviceGetTemperature, device, 0 /* NVML_TEMPERATURE_GPU */, &temperature);
    Memory memory{};
    QUERY(nvmlDeviceGetMemoryInfo, device, &memory);
    MemoryV2 memory_v2{};
    memory_v2.version = static_cast<unsigned>(sizeof(MemoryV2)) | (2u << 24);
    QUERY(nvmlDeviceGetMemoryInfo_v2, device, &memory_v2);
    Utilization utilization{};
    QUERY(nvmlDeviceGetUtilizationRates, device, &utilization);

    // Processes: size the list first, as the documentation says.
    unsigned process_count = 0;
    auto running =
        find<int (*)(Device, unsigned*, ProcessInfo*)>("nvmlDeviceGetComputeRunningProcesses_v3");
    int status = running(device, &process_count, nullptr);
    if (status != kSuccess && status != kInsufficientSize) {
      require(status, "nvmlDeviceGetComputeRunningProcesses_v3");
    }
    std::vector<ProcessInfo> processes(process_count + 4);
    process_count = static_cast<unsigned>(processes.size());
    require(running(device, &process_count, processes.data()),
            "nvmlDeviceGetComputeRunningProcesses_v3");
    processes.resize(process_count);

    // SM utilisation per process over the whole window (lastSeen 0).
    std::map<unsigned, unsigned> sm_by_pid;
    unsigned long long last_seen_us = 0;
    auto process_utilization = find<int (*)(Device, ProcessSample*, unsigned*, unsigned long long)>(
        "nvmlDeviceGetProcessUtilization");
    unsigned sample_count = 0;
    status = process_utilization(device, nullptr, &sample_count, 0);
    if (status == kInsufficientSize) {
      std::vector<ProcessSample> samples(sample_count + 4);
      sample_count = static_cast<unsigned>(samples.size());
      status = process_utilization(device, samples.data(), &sample_count, 0);
      if (status == kSuccess) {
        for (unsigned i = 0; i < sample_count; ++i) {
          sm_by_pid[samples[i].pid] = samples[i].sm;
          if (samples[i].timestamp_us > last_seen_us) last_seen_us = samples[i].timestamp_us;
        }
      }
    }
    if (status != kSuccess && status != kNotFound) {
      require(status, "nvmlDeviceGetProcessUtilization");
    }
    // Again, only for what happened since those samples (a monitor's loop).
    unsigned since_count = 0;
    int since_status = last_seen_us == 0
                           ? kNotFound
                           : process_utilization(device, nullptr, &since_count, last_seen_us);

    // GPU utilisation samples (NVML_GPU_UTILIZATION_SAMPLES): how many, and
    // the busiest, of unsigned int type (NVML_VALUE_TYPE_UNSIGNED_INT).
    auto get_samples = find<int (*)(Device, int, unsigned long long, int*, unsigned*, Sample*)>(
        "nvmlDeviceGetSamples");
    int value_type = -1;
    unsigned samples_count = 0;
    require(get_samples(device, 1, 0, &value_type, &samples_count, nullptr),
            "nvmlDeviceGetSamples");
    std::vector<Sample> util_samples(samples_count);
    unsigned util_max = 0;
    int samples_status =
        get_samples(device, 1, 0, &value_type, &samples_count, util_samples.data());
    if (samples_status == kSuccess && value_type == 1) {
      for (unsigned i = 0; i < samples_count; ++i) {
        if (util_samples[i].value.ui > util_max) util_max = util_samples[i].value.ui;
      }
    } else if (samples_status != kNotFound) {
      require(samples_status == kSuccess ? 999 : samples_status, "nvmlDeviceGetSamples");
    }

    // The same through the versioned call of NVML 12.3 and later.
    std::map<unsigned, unsigned> sm_by_pid_v1;
    auto processes_utilization =
        find<int (*)(Device, ProcessesUtilizationInfo*)>("nvmlDeviceGetProcessesUtilizationInfo");
    ProcessesUtilizationInfo info{};
    info.version = static_cast<unsigned>(sizeof info) | (1u << 24);
    status = processes_utilization(device, &info);
    if (status == kInsufficientSize) {
      std::vector<ProcessUtilizationInfo> samples(info.count + 4);
      info.count = static_cast<unsigned>(samples.size());
      info.samples = samples.data();
      status = processes_utilization(device, &info);
      if (status == kSuccess) {
        for (unsigned i = 0; i < info.count; ++i) sm_by_pid_v1[samples[i].pid] = samples[i].sm;
      }
    }
    if (status != kSuccess && status != kNotFound) {
      require(status, "nvmlDeviceGetProcessesUtilizationInfo");
    }

    std::printf(
        "{\"kind\":\"nvml-device\",\"version\":1,\"index\":%u,\"name\":\"%s\",\"uuid\":\"%s\","
        "\"serial\":\"%s\",\"pci_bus_id\":\"%s\",\"minor\":%u,\"compute_mode\":%d,"
        "\"mig_mode\":%u,\"driver\":\"%s\",\"cuda_version\":%d,"
        "\"memory\":{\"total_bytes\":%llu,\"used_bytes\":%llu,\"free_bytes\":%llu},"
        "\"memory_v2\":{\"total_bytes\":%llu,\"reserved_bytes\":%llu,\"used_bytes\":%llu,"
        "\"free_bytes\":%llu},\"sm_clock_mhz\":%u,\"memory_clock_mhz\":%u,\"power_mw\":%u,"
        "\"power_limit_mw\":%u,\"temperature_c\":%u,\"gpu_util_pct\":%u,"
        "\"util_samples\":%u,\"util_samples_max_pct\":%u,\"process_samples_since_status\":%d,"
        "\"process_samples_since\":%u,\"processes\":[",
        index, name, uuid, serial, pci.bus_id, minor, compute_mode, mig_current, driver,
        cuda_version, memory.total, memory.used, memory.free, memory_v2.total, memory_v2.reserved,
        memory_v2.used, memory_v2.free, sm_clock, memory_clock, power, power_limit, temperature,
        utilization.gpu, samples_status == kSuccess ? samples_count : 0u, util_max, since_status,
        since_count);
    for (std::size_t i = 0; i < processes.size(); ++i) {
      auto sm = sm_by_pid.find(processes[i].pid);
      auto sm_v1 = sm_by_pid_v1.find(processes[i].pid);
      std::printf(
          "%s{\"pid\":%u,\"used_bytes\":%llu,\"sm_util_pct\":%u,\"sm_util_pct_info_v1\":%u}",
          i == 0 ? "" : ",", processes[i].pid, processes[i].used_gpu_memory,
          sm == sm_by_pid.end() ? 0u : sm->second,
          sm_v1 == sm_by_pid_v1.end() ? 0u : sm_v1->second);
    }
    std::printf("]}\n");
  }
  QUERY(nvmlShutdown);
  return 0;
}
