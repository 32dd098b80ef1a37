// Every entry point of the CUDA 13 driver, from the list generated at build
// time out of the toolkit's stub libcuda.so (lib/cudaapi).
//
// Two things are made from that list here, in a translation unit that does
// not see cuda.h (so that one plain declaration per name is possible):
//   - a weak definition of each name, which logs "NAME is not implemented
//     by the simulated driver" once and returns CUDA_ERROR_NOT_SUPPORTED;
//     the strong definitions in the other files replace it at link time,
//     so any program linked against the real driver loads and runs until it
//     calls something the simulator lacks;
//   - the table of this library's own addresses by name, which
//     cuGetProcAddress answers from. The library is linked -Bsymbolic, so
//     these addresses are ours even when another object (an interposer)
//     exports the same names.
#include "simgpu/driver/exports.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "simgpu/say_once.h"

namespace {

constexpr int kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED

void report_unimplemented(const char* name, int* logged) {
  gpushare::simgpu::say_once(logged,
                             "gpushare-sim[%d]: %s is not implemented by the simulated driver\n",
                             static_cast<int>(getpid()), name);
}

}  // namespace

#define GPUSHARE_DRIVER_EXPORT(name)                                   \
  extern "C" __attribute__((weak, visibility("default"))) int name() { \
    static int logged;                                                 \
    report_unimplemented(#name, &logged);                              \
    return kNotSupported;                                              \
  }
#include "driver_exports.inc"
#undef GPUSHARE_DRIVER_EXPORT

namespace {

struct ExportEntry {
  const char* name;
  void* address;
};

#define GPUSHARE_DRIVER_EXPORT(name) {#name, reinterpret_cast<void*>(&name)},
const ExportEntry kExports[] = {
#include "driver_exports.inc"
};
#undef GPUSHARE_DRIVER_EXPORT
constexpr std::size_t kExportCount = sizeof kExports / sizeof kExports[0];

}  // namespace

namespace gpushare::simgpu::driver {

void* export_address(const char* symbol) {
  // The generated list is sorted, so bisect.
  std::size_t low = 0, high = kExportCount;
  while (low < high) {
    std::size_t middle = low + (high - low) / 2;
    int order = std::strcmp(kExports[middle].name, symbol);
    if (order == 0) return kExports[middle].address;
    if (order < 0) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return nullptr;
}

}  // namespace gpushare::simgpu::driver
