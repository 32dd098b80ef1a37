// Records an event on a stream, on the per-thread default stream's entry
// point when the launch it follows came through a _ptsz variant: what the
// throttle's and the collective timer's events both need.
#pragma once

#include <cuda.h>

#include "interpose/core/runtime.h"

namespace gpushare::interpose {

inline CUresult record_event(CUevent event, CUstream stream, bool per_thread) {
  const RealDriver& real = g_runtime.real;
  if (per_thread && real.real_cuEventRecord_ptsz != nullptr) {
    return real.real_cuEventRecord_ptsz(event, stream);
  }
  return real.real_cuEventRecord(event, stream);
}

}  // namespace gpushare::interpose
