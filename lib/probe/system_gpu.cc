// The GpuApi over the libcuda.so.1 and libnvidia-ml.so.1 the loader finds
// (or given paths), opened with dlopen so that the probe starts on machines
// without them and says why it cannot go on.
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include "probe/device_report.h"

namespace gpushare::probe {
namespace {

using NvmlDevice = void*;
struct NvmlMemoryRaw {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlProcessRaw {  // nvmlProcessInfo_v2_t (also what _v3 fills)
  unsigned int pid;
  unsigned long long used;
  unsigned int gpu_instance;
  unsigned int compute_instance;
};
struct NvmlUtilisationRaw {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
// NVML_VALUE_NOT_AVAILABLE for usedGpuMemory (no per-process accounting,
// e.g. under Windows WDDM or in some containers).
constexpr unsigned long long kNvmlNotAvailable = ~0ull;

template <class F>
bool bind(void* library, const char* name, F** slot) {
  *slot = reinterpret_cast<F*>(dlsym(library, name));
  return *slot != nullptr;
}

class SystemGpu final : public GpuApi {
 public:
  ~SystemGpu() override {
    if (nvml_initialised_) nvml_shutdown_();
    // The libraries stay loaded: the driver may have threads of its own.
  }

  Status load(const LibraryPaths& paths) {
    cuda_ = dlopen(paths.cuda.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (cuda_ == nullptr) {
      return make_error("cannot load " + paths.cuda + ": " + dlerror() +
                        " (no NVIDIA driver here? For the simulated GPU, use --sim or put "
                        "PREFIX/lib/gpushare/sim on LD_LIBRARY_PATH)");
    }
    bool ok = bind(cuda_, "cuInit", &init_) && bind(cuda_, "cuDeviceGetCount", &count_) &&
              bind(cuda_, "cuDeviceGet", &get_) && bind(cuda_, "cuDeviceGetName", &name_) &&
              bind(cuda_, "cuDeviceTotalMem_v2", &total_) &&
              bind(cuda_, "cuDeviceGetAttribute", &attribute_) &&
              bind(cuda_, "cuDevicePrimaryCtxRetain", &retain_) &&
              bind(cuda_, "cuDevicePrimaryCtxRelease_v2", &release_) &&
              bind(cuda_, "cuCtxSetCurrent", &set_current_) &&
              bind(cuda_, "cuMemGetInfo_v2", &mem_info_) &&
              (bind(cuda_, "cuDeviceGetUuid_v2", &uuid_) || bind(cuda_, "cuDeviceGetUuid", &uuid_));
    if (!ok) return make_error(paths.cuda + " lacks a driver entry point the probe needs");
    bind(cuda_, "cuGetErrorName", &error_name_);
    bind(cuda_, "gpushare_sim_device_stats", &sim_stats_);
    bind(cuda_, "gpushare_sim_last_error", &sim_last_error_);

    nvml_ = dlopen(paths.nvml.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (nvml_ != nullptr && bind(nvml_, "nvmlInit_v2", &nvml_init_) &&
        bind(nvml_, "nvmlShutdown", &nvml_shutdown_) &&
        bind(nvml_, "nvmlDeviceGetHandleByUUID", &nvml_by_uuid_) &&
        bind(nvml_, "nvmlDeviceGetMemoryInfo", &nvml_memory_)) {
      nvml_initialised_ = nvml_init_() == 0;
      if (!bind(nvml_, "nvmlDeviceGetComputeRunningProcesses_v3", &nvml_processes_)) {
        bind(nvml_, "nvmlDeviceGetComputeRunningProcesses_v2", &nvml_processes_);
      }
      bind(nvml_, "nvmlDeviceGetUtilizationRates", &nvml_utilisation_);
    }
    return {};
  }

  Status init() override { return check(init_(0), "cuInit"); }

  Result<int> device_count() override {
    int count = 0;
    if (Status status = check(count_(&count), "cuDeviceGetCount"); !status) return status.error();
    return count;
  }

  Result<DriverDevice> device(int index) override {
    CUdevice device = 0;
    std::string at = "(" + std::to_string(index) + ")";
    if (Status s = check(get_(&device, index), "cuDeviceGet" + at); !s) return s.error();
    DriverDevice result;
    char name[256] = "";
    CUuuid uuid{};
    size_t total = 0;
    Status status = check(name_(name, sizeof name, device), "cuDeviceGetName" + at);
    if (status) status = check(uuid_(&uuid, device), "cuDeviceGetUuid" + at);
    if (status) status = check(total_(&total, device), "cuDeviceTotalMem" + at);
    if (status) {
      status = check(attribute_(&result.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                     "cuDeviceGetAttribute" + at);
    }
    if (status) {
      status =
          check(attribute_(&result.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                "cuDeviceGetAttribute" + at);
    }
    if (status) {
      status =
          check(attribute_(&result.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                "cuDeviceGetAttribute" + at);
    }
    if (!status) return status.error();
    result.name = name;
    for (int i = 0; i < 16; ++i) result.uuid[i] = static_cast<std::uint8_t>(uuid.bytes[i]);
    result.mem_total_bytes = total;
    return result;
  }

  Result<std::uint64_t> driver_used_bytes(int index) override {
    size_t free_bytes = 0, total_bytes = 0;
    Status status = with_memory_info(index, &free_bytes, &total_bytes, [] {});
    if (!status) return status.error();
    return static_cast<std::uint64_t>(total_bytes - free_bytes);
  }

  bool has_nvml() const override { return nvml_initialised_; }

  Result<NvmlMemory> nvml_memory(const std::string& uuid) override {
    NvmlDevice device = nullptr;
    NvmlMemoryRaw memory{};
    if (int status = nvml_by_uuid_(uuid.c_str(), &device); status != 0) {
      return make_error("nvmlDeviceGetHandleByUUID(" + uuid + ") failed with " +
                        std::to_string(status));
    }
    if (int status = nvml_memory_(device, &memory); status != 0) {
      return make_error("nvmlDeviceGetMemoryInfo failed with " + std::to_string(status));
    }
    return NvmlMemory{memory.total, memory.used};
  }

  Result<std::vector<ProcessMemory>> nvml_processes(const std::string& uuid) override {
    if (!nvml_initialised_ || nvml_processes_ == nullptr) return GpuApi::nvml_processes(uuid);
    Result<NvmlDevice> device = handle(uuid);
    if (!device) return device.error();
    // The list changes between calls: grow the buffer while NVML says it
    // was too small (NVML_ERROR_INSUFFICIENT_SIZE, 7).
    std::vector<NvmlProcessRaw> raw(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned count = static_cast<unsigned>(raw.size());
      int status = nvml_processes_(*device, &count, raw.data());
      if (status == 7) {
        raw.resize(static_cast<std::size_t>(count) * 2 + 8);
        continue;
      }
      if (status != 0) {
        return make_error("nvmlDeviceGetComputeRunningProcesses failed with " +
                          std::to_string(status));
      }
      std::vector<ProcessMemory> out;
      for (unsigned i = 0; i < count && i < raw.size(); ++i) {
        unsigned long long used = raw[i].used == kNvmlNotAvailable ? 0 : raw[i].used;
        out.push_back({static_cast<int>(raw[i].pid), used});
      }
      return out;
    }
    return make_error("nvmlDeviceGetComputeRunningProcesses: the process list kept growing");
  }

  Result<unsigned> nvml_utilisation(const std::string& uuid) override {
    if (!nvml_initialised_ || nvml_utilisation_ == nullptr) return GpuApi::nvml_utilisation(uuid);
    Result<NvmlDevice> device = handle(uuid);
    if (!device) return device.error();
    NvmlUtilisationRaw rates{};
    if (int status = nvml_utilisation_(*device, &rates); status != 0) {
      return make_error("nvmlDeviceGetUtilizationRates failed with " + std::to_string(status));
    }
    return rates.gpu;
  }

  Result<std::uint64_t> context_bytes(int index, const std::string& uuid) override {
    // A context exists once it is current and used; cuMemGetInfo does both.
    size_t free_bytes = 0, total_bytes = 0;
    Result<std::vector<ProcessMemory>> processes = std::vector<ProcessMemory>{};
    Status status = with_memory_info(index, &free_bytes, &total_bytes,
                                     [&] { processes = nvml_processes(uuid); });
    if (!status) return status.error();
    if (!processes) return processes.error();
    for (const ProcessMemory& process : *processes) {
      if (process.pid == static_cast<int>(getpid())) return process.used_bytes;
    }
    return make_error("NVML does not list the probe's own context on " + uuid);
  }

  std::optional<SimStats> sim_stats(int index) override {
    if (sim_stats_ == nullptr) return std::nullopt;
    SimStats stats;
    unsigned long long used = 0, total = 0, busy = 0, kernels = 0;
    if (sim_stats_(index, &used, &total, &busy, &kernels) != 0) return std::nullopt;
    stats.used_bytes = used;
    stats.total_bytes = total;
    stats.busy_ns = busy;
    stats.kernels = kernels;
    return stats;
  }

 private:
  /// Retains device `index`'s primary context, makes it current, reads
  /// cuMemGetInfo, runs `while_current`, then releases the context.
  template <typename Inside>
  Status with_memory_info(int index, size_t* free_bytes, size_t* total_bytes,
                          Inside while_current) {
    CUcontext ctx = nullptr;
    std::string at = "(" + std::to_string(index) + ")";
    if (Status s = check(retain_(&ctx, index), "cuDevicePrimaryCtxRetain" + at); !s) return s;
    Status status = check(set_current_(ctx), "cuCtxSetCurrent");
    if (status) status = check(mem_info_(free_bytes, total_bytes), "cuMemGetInfo" + at);
    while_current();
    set_current_(nullptr);
    release_(index);
    return status;
  }

  Result<NvmlDevice> handle(const std::string& uuid) {
    NvmlDevice device = nullptr;
    if (int status = nvml_by_uuid_(uuid.c_str(), &device); status != 0) {
      return make_error("nvmlDeviceGetHandleByUUID(" + uuid + ") failed with " +
                        std::to_string(status));
    }
    return device;
  }

  Status check(CUresult result, const std::string& call) {
    if (result == CUDA_SUCCESS) return {};
    const char* name = nullptr;
    std::string text = "CUresult " + std::to_string(static_cast<int>(result));
    if (error_name_ != nullptr && error_name_(result, &name) == CUDA_SUCCESS && name != nullptr) {
      text = name;
    }
    std::string message = call + ": " + text;
    if (sim_last_error_ != nullptr && *sim_last_error_() != '\0') {
      message += " (" + std::string(sim_last_error_()) + ")";
    }
    return make_error(message);
  }

  void* cuda_ = nullptr;
  void* nvml_ = nullptr;
  CUresult (*init_)(unsigned) = nullptr;
  CUresult (*count_)(int*) = nullptr;
  CUresult (*get_)(CUdevice*, int) = nullptr;
  CUresult (*name_)(char*, int, CUdevice) = nullptr;
  CUresult (*uuid_)(CUuuid*, CUdevice) = nullptr;
  CUresult (*total_)(size_t*, CUdevice) = nullptr;
  CUresult (*attribute_)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*retain_)(CUcontext*, CUdevice) = nullptr;
  CUresult (*release_)(CUdevice) = nullptr;
  CUresult (*set_current_)(CUcontext) = nullptr;
  CUresult (*mem_info_)(size_t*, size_t*) = nullptr;
  CUresult (*error_name_)(CUresult, const char**) = nullptr;
  int (*sim_stats_)(int, unsigned long long*, unsigned long long*, unsigned long long*,
                    unsigned long long*) = nullptr;
  const char* (*sim_last_error_)() = nullptr;
  int (*nvml_init_)() = nullptr;
  int (*nvml_shutdown_)() = nullptr;
  int (*nvml_by_uuid_)(const char*, NvmlDevice*) = nullptr;
  int (*nvml_memory_)(NvmlDevice, NvmlMemoryRaw*) = nullptr;
  int (*nvml_processes_)(NvmlDevice, unsigned*, NvmlProcessRaw*) = nullptr;
  int (*nvml_utilisation_)(NvmlDevice, NvmlUtilisationRaw*) = nullptr;
  bool nvml_initialised_ = false;
};

}  // namespace

Result<std::unique_ptr<GpuApi>> open_system_gpu(const LibraryPaths& paths) {
  auto gpu = std::make_unique<SystemGpu>();
  if (Status status = gpu->load(paths); !status) return status.error();
  return std::unique_ptr<GpuApi>(std::move(gpu));
}

}  // namespace gpushare::probe
