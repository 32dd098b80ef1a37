// Copies held while the job is suspended (issue 11; suspend.h): each
// wrapper waits while a suspend is under way or in force, then calls the
// driver. Outside a suspend the cost is one relaxed load.
#include "interpose/hooks.h"
#include "interpose/suspend.h"

using namespace gpushare::interpose;

#define GS_HELD_COPY(symbol, dst_type, src_type)                   \
  CUresult gs_##symbol(dst_type dst, src_type src, size_t bytes) { \
    GS_REAL(symbol);                                               \
    hold_while_suspended();                                        \
    return real(dst, src, bytes);                                  \
  }
#define GS_HELD_COPY_ASYNC(symbol, dst_type, src_type)                              \
  CUresult gs_##symbol(dst_type dst, src_type src, size_t bytes, CUstream stream) { \
    GS_REAL(symbol);                                                                \
    hold_while_suspended();                                                         \
    return real(dst, src, bytes, stream);                                           \
  }

GS_HELD_COPY(cuMemcpy, CUdeviceptr, CUdeviceptr)
GS_HELD_COPY(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr)
GS_HELD_COPY(cuMemcpyHtoD_v2, CUdeviceptr, const void*)
GS_HELD_COPY(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void*)
GS_HELD_COPY(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr)
GS_HELD_COPY(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr)
GS_HELD_COPY_ASYNC(cuMemcpyAsync, CUdeviceptr, CUdeviceptr)
GS_HELD_COPY_ASYNC(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr)
GS_HELD_COPY_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void*)
GS_HELD_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void*)
GS_HELD_COPY_ASYNC(cuMemcpyDtoHAsync_v2, void*, CUdeviceptr)
GS_HELD_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void*, CUdeviceptr)
GS_HELD_COPY_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr)
GS_HELD_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr)
