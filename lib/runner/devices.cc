#include "runner/devices.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace gpushare {
namespace {

using NvmlDevice = struct NvmlDeviceOpaque*;

// The few NVML entry points needed (the toolkit ships no nvml.h).
struct Nvml {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*by_index)(unsigned, NvmlDevice*) = nullptr;
  int (*uuid)(NvmlDevice, char*, unsigned) = nullptr;
};

template <class Function>
bool resolve(void* library, Function* slot, const char* name) {
  *slot = reinterpret_cast<Function>(dlsym(library, name));
  return *slot != nullptr;
}

// NVML loaded and initialised, or null (shut down and closed by the caller
// through close_nvml).
void* open_nvml(const std::string& nvml_library, Nvml* nvml) {
  void* library = dlopen(nvml_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return nullptr;
  if (!resolve(library, &nvml->init, "nvmlInit_v2") ||
      !resolve(library, &nvml->shutdown, "nvmlShutdown") ||
      !resolve(library, &nvml->count, "nvmlDeviceGetCount_v2") ||
      !resolve(library, &nvml->by_index, "nvmlDeviceGetHandleByIndex_v2") ||
      !resolve(library, &nvml->uuid, "nvmlDeviceGetUUID") || nvml->init() != 0) {
    dlclose(library);
    return nullptr;
  }
  return library;
}

std::string uuid_of(const Nvml& nvml, unsigned index) {
  NvmlDevice device = nullptr;
  char uuid[96] = {};
  if (nvml.by_index(index, &device) != 0 || nvml.uuid(device, uuid, sizeof uuid) != 0) return "";
  return uuid;
}

}  // namespace

Result<std::string> movable_visible_devices(const std::string& gpu,
                                            const std::string& nvml_library) {
  Nvml nvml;
  void* library = open_nvml(nvml_library, &nvml);
  if (library == nullptr) {
    return make_error("--movable needs NVML to list this machine's GPUs (" + nvml_library +
                      " could not be loaded or initialised)");
  }
  unsigned count = 0;
  Result<std::string> visible = make_error("--movable: NVML could not count the GPUs");
  if (nvml.count(&count) == 0) {
    bool by_uuid = gpu.rfind("GPU-", 0) == 0 || gpu.rfind("MIG-", 0) == 0;
    std::string list = gpu;
    for (unsigned i = 0; i < count; ++i) {
      std::string other = by_uuid ? uuid_of(nvml, i) : std::to_string(i);
      bool same = by_uuid ? !other.empty() && other.rfind(gpu, 0) == 0 : other == gpu;
      if (!other.empty() && !same) list += "," + other;
    }
    visible = list;
  }
  nvml.shutdown();
  dlclose(library);
  return visible;
}

Status check_gpu_exists(const std::string& gpu, const std::string& nvml_library) {
  void* library = dlopen(nvml_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return {};  // no NVML here: cuInit will tell
  Nvml nvml;
  if (!resolve(library, &nvml.init, "nvmlInit_v2") ||
      !resolve(library, &nvml.shutdown, "nvmlShutdown") ||
      !resolve(library, &nvml.count, "nvmlDeviceGetCount_v2") ||
      !resolve(library, &nvml.by_index, "nvmlDeviceGetHandleByIndex_v2") ||
      !resolve(library, &nvml.uuid, "nvmlDeviceGetUUID") || nvml.init() != 0) {
    return {};
  }
  unsigned count = 0;
  Status result;
  if (nvml.count(&count) == 0) {
    bool by_uuid = gpu.rfind("GPU-", 0) == 0 || gpu.rfind("MIG-", 0) == 0;
    if (!by_uuid) {
      unsigned long index = std::strtoul(gpu.c_str(), nullptr, 10);
      if (index >= count) {
        result = make_error(
            "no GPU " + gpu + ": this machine has " + std::to_string(count) + " (" +
            (count == 0 ? std::string("none") : "0 to " + std::to_string(count - 1)) + ")");
      }
    } else {
      // CUDA_VISIBLE_DEVICES takes a UUID or a unique prefix of one.
      unsigned matches = 0;
      for (unsigned i = 0; i < count; ++i) {
        NvmlDevice device = nullptr;
        char uuid[96] = {};
        if (nvml.by_index(i, &device) == 0 && nvml.uuid(device, uuid, sizeof uuid) == 0 &&
            std::strncmp(uuid, gpu.c_str(), gpu.size()) == 0) {
          ++matches;
        }
      }
      if (matches == 0) result = make_error("no GPU has the UUID " + gpu);
      if (matches > 1) result = make_error("the UUID prefix " + gpu + " names several GPUs");
    }
  }
  nvml.shutdown();
  return result;
}

}  // namespace gpushare
