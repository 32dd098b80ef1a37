// Whether the GPU that --gpu names exists, asked of NVML before exec, so a
// typo fails at once with gpushare-run's own status (125) instead of later
// inside the job at cuInit. NVML is loaded at run time (the simulated one
// with --sim); where it cannot be loaded or initialised the check is
// skipped, and the job finds out at cuInit as without gpushare.
#pragma once

#include <string>

#include "common/result.h"

namespace gpushare {

/// `gpu` is an index or a (prefix of a) GPU UUID, as --gpu takes it;
/// `nvml_library` the NVML to ask ("libnvidia-ml.so.1", or the simulated
/// one's path).
Status check_gpu_exists(const std::string& gpu, const std::string& nvml_library);

/// For --gpu GPU --movable: the CUDA_VISIBLE_DEVICES that puts `gpu` first
/// (the job's device 0, as with --gpu alone) and every other GPU of the
/// machine after it, in the form `gpu` has (indices, or UUIDs), so that the
/// driver's process checkpoint can restore the job onto another GPU
/// (gpushare-ctl migrate). An error where NVML cannot list the GPUs.
Result<std::string> movable_visible_devices(const std::string& gpu,
                                            const std::string& nvml_library);

}  // namespace gpushare
