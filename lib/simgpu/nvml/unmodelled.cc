// Every public NVML entry point the simulator does not model. The build
// generates nvml_unmodelled.inc from the reference list of NVML's API
// (lib/simgpu/CMakeLists.txt): one weak definition per name, so the
// modelled entry points in the other files, strong definitions, replace
// theirs at link time and the library exports exactly the reference list.
//
// Each returns NVML_ERROR_NOT_SUPPORTED, what a real GPU answers for a
// feature it lacks, and says so once per name on stderr. Defined without
// parameters: under the x86-64 and AArch64 C calling conventions the
// caller owns its arguments, so ignoring any number of them is safe.
#include <unistd.h>

#include <cstdio>

#include "simgpu/nvml/internal.h"
#include "simgpu/say_once.h"

using namespace gpushare::simgpu::nvml;

namespace {

nvmlReturn_t not_modelled(const char* name, int* said) {
  gpushare::simgpu::say_once(said,
                             "gpushare-sim-nvml[%d]: note: %s is not modelled by the simulated "
                             "NVML (NVML_ERROR_NOT_SUPPORTED)\n",
                             static_cast<int>(getpid()), name);
  return NVML_ERROR_NOT_SUPPORTED;
}

}  // namespace

#define GPUSHARE_NVML_UNMODELLED(name)                                          \
  extern "C" __attribute__((weak, visibility("default"))) nvmlReturn_t name() { \
    static int said = 0;                                                        \
    return not_modelled(#name, &said);                                          \
  }
#include "nvml_unmodelled.inc"
