// What the simulated driver makes of a module image (cuModuleLoadData and
// friends): which kernels it holds and how long each one runs.
//
//   - The simulator's own text format: a first line
//       gpushare-sim-module 1
//     then one line per kernel, "kernel NAME MICROSECONDS"; blank lines and
//     lines starting with '#' are ignored.
//   - PTX (text with a .version directive): every .entry is a kernel of the
//     default duration.
//   - cubin (ELF) and fatbin images: opaque; every name is a kernel of the
//     default duration.
// Whatever the format, a kernel named gpushare_spin runs for the number of
// nanoseconds in its first (u64) parameter, and one named
// ncclDevKernel_AllReduce_Sum_f32_RING_LL (NCCL's name) is a collective
// across ranks (collective.h).
//
// Plain C-style code, no libstdc++: it runs inside libcuda.so.1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpushare::simgpu {

inline constexpr char kTextModuleMagic[] = "gpushare-sim-module 1";
inline constexpr char kSpinKernelName[] = "gpushare_spin";
inline constexpr std::size_t kKernelNameBytes = 128;

enum class ImageKind { kText, kPtx, kCubin, kFatbin };

/// Why an image was refused: as CUDA_ERROR_INVALID_IMAGE or _INVALID_PTX.
enum class ImageError { kNone, kInvalidImage, kInvalidPtx };

struct KernelInfo {
  char name[kKernelNameBytes];
  std::int64_t duration_ns;
  bool spin;  ///< gpushare_spin: the duration is its first parameter
  /// The all-reduce (u64 bytes, u64 comm, u32 rank, u32 world_size): a
  /// collective (collective.h), NCCL's all-reduce stand-in.
  bool collective;
};

struct ModuleImage {
  ImageKind kind;
  bool any_name;  ///< opaque binary: every name resolves (default duration)
  int kernel_count;
  KernelInfo* kernels;  ///< malloc'd; release_module_image frees it
};

/// Parses a NUL-terminated text image or a binary one. On failure returns
/// the error and writes "line 3: ..." style detail to `message`.
ImageError parse_module_image(const void* image, std::int64_t default_kernel_ns,
                              ModuleImage* module, char* message, std::size_t message_bytes);

/// Looks a kernel up; for opaque images `scratch` receives a default one.
/// nullptr when the module has no such kernel.
const KernelInfo* find_kernel(const ModuleImage& module, const char* name,
                              std::int64_t default_kernel_ns, KernelInfo* scratch);

void release_module_image(ModuleImage* module);

}  // namespace gpushare::simgpu
