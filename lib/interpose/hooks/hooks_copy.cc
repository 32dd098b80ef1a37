// Copies and memsets held while the job is suspended (suspend.h): each
// wrapper waits while a suspend is under way or in force, then calls the
// driver. Outside a suspend the cost is one relaxed load.
#include "interpose/hooks/hooks.h"
#include "interpose/memory/suspend.h"

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

// Memsets: D8/D16/D32, their 2D forms, and the asynchronous ones.
#define GS_HELD_MEMSET(symbol, value_type)                                \
  CUresult gs_##symbol(CUdeviceptr dst, value_type value, size_t count) { \
    GS_REAL(symbol);                                                      \
    hold_while_suspended();                                               \
    return real(dst, value, count);                                       \
  }
#define GS_HELD_MEMSET_ASYNC(symbol, value_type)                                           \
  CUresult gs_##symbol(CUdeviceptr dst, value_type value, size_t count, CUstream stream) { \
    GS_REAL(symbol);                                                                       \
    hold_while_suspended();                                                                \
    return real(dst, value, count, stream);                                                \
  }
#define GS_HELD_MEMSET_2D(symbol, value_type)                                         \
  CUresult gs_##symbol(CUdeviceptr dst, size_t pitch, value_type value, size_t width, \
                       size_t height) {                                               \
    GS_REAL(symbol);                                                                  \
    hold_while_suspended();                                                           \
    return real(dst, pitch, value, width, height);                                    \
  }
#define GS_HELD_MEMSET_2D_ASYNC(symbol, value_type)                                   \
  CUresult gs_##symbol(CUdeviceptr dst, size_t pitch, value_type value, size_t width, \
                       size_t height, CUstream stream) {                              \
    GS_REAL(symbol);                                                                  \
    hold_while_suspended();                                                           \
    return real(dst, pitch, value, width, height, stream);                            \
  }
#define GS_HELD_MEMSETS(width, value_type)                       \
  GS_HELD_MEMSET(cuMemsetD##width##_v2, value_type)              \
  GS_HELD_MEMSET(cuMemsetD##width##_v2_ptds, value_type)         \
  GS_HELD_MEMSET_ASYNC(cuMemsetD##width##Async, value_type)      \
  GS_HELD_MEMSET_ASYNC(cuMemsetD##width##Async_ptsz, value_type) \
  GS_HELD_MEMSET_2D(cuMemsetD2D##width##_v2, value_type)         \
  GS_HELD_MEMSET_2D(cuMemsetD2D##width##_v2_ptds, value_type)    \
  GS_HELD_MEMSET_2D_ASYNC(cuMemsetD2D##width##Async, value_type) \
  GS_HELD_MEMSET_2D_ASYNC(cuMemsetD2D##width##Async_ptsz, value_type)

GS_HELD_MEMSETS(8, unsigned char)
GS_HELD_MEMSETS(16, unsigned short)
GS_HELD_MEMSETS(32, unsigned int)

// 2D and 3D copies (described by a struct) and peer copies.
#define GS_HELD_DESCRIBED(symbol, descriptor)    \
  CUresult gs_##symbol(const descriptor* copy) { \
    GS_REAL(symbol);                             \
    hold_while_suspended();                      \
    return real(copy);                           \
  }
#define GS_HELD_DESCRIBED_ASYNC(symbol, descriptor)               \
  CUresult gs_##symbol(const descriptor* copy, CUstream stream) { \
    GS_REAL(symbol);                                              \
    hold_while_suspended();                                       \
    return real(copy, stream);                                    \
  }
#define GS_HELD_PEER(symbol)                                                    \
  CUresult gs_##symbol(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, \
                       CUcontext src_context, size_t bytes) {                   \
    GS_REAL(symbol);                                                            \
    hold_while_suspended();                                                     \
    return real(dst, dst_context, src, src_context, bytes);                     \
  }
#define GS_HELD_PEER_ASYNC(symbol)                                              \
  CUresult gs_##symbol(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, \
                       CUcontext src_context, size_t bytes, CUstream stream) {  \
    GS_REAL(symbol);                                                            \
    hold_while_suspended();                                                     \
    return real(dst, dst_context, src, src_context, bytes, stream);             \
  }

GS_HELD_DESCRIBED(cuMemcpy2D_v2, CUDA_MEMCPY2D)
GS_HELD_DESCRIBED(cuMemcpy2D_v2_ptds, CUDA_MEMCPY2D)
GS_HELD_DESCRIBED(cuMemcpy2DUnaligned_v2, CUDA_MEMCPY2D)
GS_HELD_DESCRIBED(cuMemcpy2DUnaligned_v2_ptds, CUDA_MEMCPY2D)
GS_HELD_DESCRIBED_ASYNC(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D)
GS_HELD_DESCRIBED_ASYNC(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D)
GS_HELD_DESCRIBED(cuMemcpy3D_v2, CUDA_MEMCPY3D)
GS_HELD_DESCRIBED(cuMemcpy3D_v2_ptds, CUDA_MEMCPY3D)
GS_HELD_DESCRIBED_ASYNC(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D)
GS_HELD_DESCRIBED_ASYNC(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D)
GS_HELD_DESCRIBED(cuMemcpy3DPeer, CUDA_MEMCPY3D_PEER)
GS_HELD_DESCRIBED(cuMemcpy3DPeer_ptds, CUDA_MEMCPY3D_PEER)
GS_HELD_DESCRIBED_ASYNC(cuMemcpy3DPeerAsync, CUDA_MEMCPY3D_PEER)
GS_HELD_DESCRIBED_ASYNC(cuMemcpy3DPeerAsync_ptsz, CUDA_MEMCPY3D_PEER)
GS_HELD_PEER(cuMemcpyPeer)
GS_HELD_PEER(cuMemcpyPeer_ptds)
GS_HELD_PEER_ASYNC(cuMemcpyPeerAsync)
GS_HELD_PEER_ASYNC(cuMemcpyPeerAsync_ptsz)
