// Stream-order hooks: entry points that put work on a stream, wait for it,
// ask about it, or change what a queued kernel would see. Each wrapper only
// drains the launch queue (GS_REAL, compute/launch_queue.h), so that the
// call reaches the driver after every launch the program made before it.
// With the queue empty (always, unless GPUSHARE_LAUNCH_QUEUE=on) the cost is
// one relaxed load.
#include "interpose/hooks/hooks.h"

using namespace gpushare::interpose;

#define GS_ORDERED(symbol, parameters, arguments) \
  CUresult gs_##symbol parameters {               \
    GS_REAL_SLOT(real_##symbol);                  \
    return real arguments;                        \
  }

GS_ORDERED(cuEventRecord, (CUevent event, CUstream stream), (event, stream))
GS_ORDERED(cuEventRecord_ptsz, (CUevent event, CUstream stream), (event, stream))
GS_ORDERED(cuEventRecordWithFlags, (CUevent event, CUstream stream, unsigned int flags),
           (event, stream, flags))
GS_ORDERED(cuEventRecordWithFlags_ptsz, (CUevent event, CUstream stream, unsigned int flags),
           (event, stream, flags))
GS_ORDERED(cuEventQuery, (CUevent event), (event))
GS_ORDERED(cuStreamQuery, (CUstream stream), (stream))
GS_ORDERED(cuStreamQuery_ptsz, (CUstream stream), (stream))
GS_ORDERED(cuStreamWaitEvent, (CUstream stream, CUevent event, unsigned int flags),
           (stream, event, flags))
GS_ORDERED(cuStreamWaitEvent_ptsz, (CUstream stream, CUevent event, unsigned int flags),
           (stream, event, flags))
GS_ORDERED(cuLaunchHostFunc, (CUstream stream, CUhostFn function, void* data),
           (stream, function, data))
GS_ORDERED(cuLaunchHostFunc_ptsz, (CUstream stream, CUhostFn function, void* data),
           (stream, function, data))
GS_ORDERED(cuStreamAddCallback,
           (CUstream stream, CUstreamCallback callback, void* data, unsigned int flags),
           (stream, callback, data, flags))
GS_ORDERED(cuStreamAddCallback_ptsz,
           (CUstream stream, CUstreamCallback callback, void* data, unsigned int flags),
           (stream, callback, data, flags))
GS_ORDERED(cuStreamBeginCapture_v2, (CUstream stream, CUstreamCaptureMode mode), (stream, mode))
GS_ORDERED(cuStreamBeginCapture_v2_ptsz, (CUstream stream, CUstreamCaptureMode mode),
           (stream, mode))
GS_ORDERED(cuStreamDestroy_v2, (CUstream stream), (stream))
GS_ORDERED(cuModuleUnload, (CUmodule module), (module))
GS_ORDERED(cuLibraryUnload, (CUlibrary library), (library))
GS_ORDERED(cuFuncSetAttribute, (CUfunction function, CUfunction_attribute attribute, int value),
           (function, attribute, value))
GS_ORDERED(cuKernelSetAttribute,
           (CUfunction_attribute attribute, int value, CUkernel kernel, CUdevice device),
           (attribute, value, kernel, device))
GS_ORDERED(cuMemPrefetchAsync, (CUdeviceptr pointer, size_t bytes, CUdevice device, CUstream stream),
           (pointer, bytes, device, stream))
GS_ORDERED(cuMemPrefetchAsync_ptsz,
           (CUdeviceptr pointer, size_t bytes, CUdevice device, CUstream stream),
           (pointer, bytes, device, stream))
GS_ORDERED(cuMemPrefetchAsync_v2,
           (CUdeviceptr pointer, size_t bytes, CUmemLocation location, unsigned int flags,
            CUstream stream),
           (pointer, bytes, location, flags, stream))
GS_ORDERED(cuMemPrefetchAsync_v2_ptsz,
           (CUdeviceptr pointer, size_t bytes, CUmemLocation location, unsigned int flags,
            CUstream stream),
           (pointer, bytes, location, flags, stream))
GS_ORDERED(cuStreamWaitValue32_v2,
           (CUstream stream, CUdeviceptr address, cuuint32_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamWaitValue32_v2_ptsz,
           (CUstream stream, CUdeviceptr address, cuuint32_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamWaitValue64_v2,
           (CUstream stream, CUdeviceptr address, cuuint64_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamWaitValue64_v2_ptsz,
           (CUstream stream, CUdeviceptr address, cuuint64_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamWriteValue32_v2,
           (CUstream stream, CUdeviceptr address, cuuint32_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamWriteValue32_v2_ptsz,
           (CUstream stream, CUdeviceptr address, cuuint32_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamWriteValue64_v2,
           (CUstream stream, CUdeviceptr address, cuuint64_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamWriteValue64_v2_ptsz,
           (CUstream stream, CUdeviceptr address, cuuint64_t value, unsigned int flags),
           (stream, address, value, flags))
GS_ORDERED(cuStreamBatchMemOp_v2,
           (CUstream stream, unsigned int count, CUstreamBatchMemOpParams* operations,
            unsigned int flags),
           (stream, count, operations, flags))
GS_ORDERED(cuStreamBatchMemOp_v2_ptsz,
           (CUstream stream, unsigned int count, CUstreamBatchMemOpParams* operations,
            unsigned int flags),
           (stream, count, operations, flags))
GS_ORDERED(cuMemFreeHost, (void* pointer), (pointer))
GS_ORDERED(cuMemHostUnregister, (void* pointer), (pointer))
