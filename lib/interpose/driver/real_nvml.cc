#include "interpose/driver/real_nvml.h"

#include <dlfcn.h>
#include <pthread.h>

#include "interpose/driver/real_dlsym.h"

namespace gpushare::interpose {
namespace {

RealNvml g_nvml;
pthread_once_t g_nvml_once = PTHREAD_ONCE_INIT;

template <class Function>
void resolve(Function* slot, const char* name) {
  *slot = reinterpret_cast<Function>(real_dlsym(g_nvml.library, name));
}

void load_nvml() {
  g_nvml.library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NODELETE);
  if (g_nvml.library == nullptr) return;
  resolve(&g_nvml.init, "nvmlInit_v2");
  resolve(&g_nvml.handle_by_uuid, "nvmlDeviceGetHandleByUUID");
  resolve(&g_nvml.uuid_of, "nvmlDeviceGetUUID");
  resolve(&g_nvml.running_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  resolve(&g_nvml.memory_info, "nvmlDeviceGetMemoryInfo");
  resolve(&g_nvml.memory_info_v2, "nvmlDeviceGetMemoryInfo_v2");
}

}  // namespace

const RealNvml& real_nvml() {
  pthread_once(&g_nvml_once, &load_nvml);
  return g_nvml;
}

}  // namespace gpushare::interpose
