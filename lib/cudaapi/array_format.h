// Bytes per channel of a CUDA array format, for everything that sizes
// arrays the driver's way (the interposer charges them, the simulated
// driver allocates them). Header-only; needs cuda.h on the include path.
#pragma once

#include <cuda.h>

namespace gpushare::cudaapi {

/// Bytes per channel of `format`, or 0 for the packed, compressed and video
/// formats whose size is not a whole number of bytes per channel.
constexpr unsigned array_format_bytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;
  }
}

}  // namespace gpushare::cudaapi
