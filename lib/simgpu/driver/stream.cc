// Streams and events on the simulated device.
//
// A stream only knows what its last work is (a Ready mark: its last
// kernel on the device's scheduler model, and a time for work off the
// model); queries and synchronisation ask the model (timeline.cc). The
// legacy default stream follows the CUDA rules: its work waits for all
// blocking streams of the context, and their work waits for it;
// non-blocking streams wait for nothing. The per-thread default stream
// (CU_STREAM_PER_THREAD, or 0 in a _ptsz/_ptds call) is an ordinary
// blocking stream, one per thread and context.
//
// An event records what the GPU must finish to reach it: the work before it
// on its stream, and the moment of the record. Its time is the later of
// that moment and the end of that work, once the model has settled it.
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

struct PerThreadStream {
  Context* ctx;
  Stream* stream;
  std::uint32_t generation;
};
constexpr int kPerThreadSlots = 16;
thread_local PerThreadStream t_streams[kPerThreadSlots];

bool is_blocking(const Stream* stream) {
  return stream->kind == StreamKind::kPerThread ||
         (stream->kind == StreamKind::kUser && (stream->flags & CU_STREAM_NON_BLOCKING) == 0);
}

Stream* per_thread_stream(Context* ctx) {
  PerThreadStream* empty = nullptr;
  for (PerThreadStream& entry : t_streams) {
    if (entry.ctx == ctx && entry.stream != nullptr && entry.stream->magic == kStreamMagic &&
        entry.stream->generation == entry.generation && entry.stream->ctx == ctx) {
      return entry.stream;
    }
    if (empty == nullptr && (entry.stream == nullptr || entry.stream->magic != kStreamMagic ||
                             entry.stream->generation != entry.generation)) {
      empty = &entry;
    }
  }
  Stream* stream = create_stream(ctx, StreamKind::kPerThread, 0, 0);
  if (stream != nullptr && empty != nullptr) *empty = {ctx, stream, stream->generation};
  return stream;
}

Event* lookup_event(CUevent handle) {
  Event* event = reinterpret_cast<Event*>(handle);
  if (event == nullptr || !sim().events.owns(event) || event->magic != kEventMagic) {
    return nullptr;
  }
  return context_alive(event->ctx) ? event : nullptr;
}

CUresult create_user_stream(CUstream* result, unsigned flags, int priority) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (result == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  // Priorities outside [greatest, least] = [-5, 0] are clamped, as documented.
  if (priority > 0) priority = 0;
  if (priority < -5) priority = -5;
  Stream* stream = create_stream(ctx, StreamKind::kUser, flags, priority);
  if (stream == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *result = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}

// Resolves a stream for a query: its handle in the current context.
CUresult stream_for_call(CUstream handle, bool per_thread, Stream** stream) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  return resolve_stream(ctx, handle, per_thread, stream);
}

CUresult stream_query(CUstream handle, bool per_thread) {
  LocalLock lock;
  Stream* stream = nullptr;
  if (CUresult status = stream_for_call(handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  CUresult status = CUDA_SUCCESS;
  if (ready_now(stream->ctx->device, stream->ready, &status)) return CUDA_SUCCESS;
  return status != CUDA_SUCCESS ? status : CUDA_ERROR_NOT_READY;
}

CUresult stream_synchronize(CUstream handle, bool per_thread) {
  Ready until;
  int device;
  {
    LocalLock lock;
    Stream* stream = nullptr;
    if (CUresult status = stream_for_call(handle, per_thread, &stream); status != CUDA_SUCCESS) {
      return status;
    }
    until = stream->ready;
    device = stream->ctx->device;
  }
  if (CUresult status = wait_ready(device, until); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  trim_pools_at_sync();
  return CUDA_SUCCESS;
}

CUresult stream_wait_event(CUstream handle, CUevent event_handle, unsigned flags, bool per_thread) {
  LocalLock lock;
  Stream* stream = nullptr;
  if (CUresult status = stream_for_call(handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  Event* event = lookup_event(event_handle);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 && flags != CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  // Waiting on a never-recorded event is a no-op, as in CUDA.
  if (!event->recorded) return CUDA_SUCCESS;
  if (event->device == stream->ctx->device) {
    stream_push(stream, event->mark);  // this process's kernels on one model
    return CUDA_SUCCESS;
  }
  // Another device's model: wait for its projected end (a later launch
  // there may still push the work back; the wait does not follow).
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  stream_push(stream, Ready{0, projected_time(shared.layout(), event->device, event->mark)});
  return CUDA_SUCCESS;
}

CUresult event_record(CUevent event_handle, CUstream handle, bool per_thread) {
  LocalLock lock;
  Stream* stream = nullptr;
  if (CUresult status = stream_for_call(handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  Event* event = lookup_event(event_handle);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (event->ctx != stream->ctx) return CUDA_ERROR_INVALID_HANDLE;
  event->mark = later(stream_earliest(stream), Ready{0, now_ns()});
  event->device = stream->ctx->device;
  event->recorded = true;
  // The record is work on the stream: it waits for what the legacy-stream
  // rules make it wait for, and a synchronisation of the stream waits for it.
  stream_push(stream, event->mark);
  return CUDA_SUCCESS;
}

CUresult add_host_callback(CUstream handle, bool per_thread, CUstreamCallback call,
                           CUhostFn host_fn, void* user_data) {
  // The callback runs in the calling thread once the stream's earlier work
  // is done: ordered as in CUDA, though the caller waits for it.
  Ready until;
  int device;
  {
    LocalLock lock;
    Stream* stream = nullptr;
    if (CUresult status = stream_for_call(handle, per_thread, &stream); status != CUDA_SUCCESS) {
      return status;
    }
    until = stream_earliest(stream);
    device = stream->ctx->device;
  }
  if (CUresult status = wait_ready(device, until); status != CUDA_SUCCESS) return status;
  if (call != nullptr) call(handle, CUDA_SUCCESS, user_data);
  if (host_fn != nullptr) host_fn(user_data);
  return CUDA_SUCCESS;
}

}  // namespace

namespace gpushare::simgpu::driver {

Stream* create_stream(Context* ctx, StreamKind kind, unsigned flags, int priority) {
  Driver& d = sim();
  Stream* stream = d.streams.acquire();
  if (stream == nullptr) return nullptr;
  stream->ctx = ctx;
  stream->kind = kind;
  stream->flags = flags;
  stream->priority = priority;
  stream->id = ++d.next_id;
  stream->ready = Ready{0, 0};
  stream->pending = nullptr;
  stream->pending_next = 0;
  stream->magic = kStreamMagic;
  return stream;
}

void destroy_stream(Stream* stream) {
  std::free(stream->pending);
  stream->pending = nullptr;
  sim().streams.release(stream);
}

CUresult resolve_stream(Context* ctx, CUstream handle, bool per_thread, Stream** result) {
  if (handle == nullptr) {
    *result = per_thread ? per_thread_stream(ctx) : ctx->legacy;
  } else if (handle == CU_STREAM_LEGACY) {
    *result = ctx->legacy;
  } else if (handle == CU_STREAM_PER_THREAD) {
    *result = per_thread_stream(ctx);
  } else {
    Stream* stream = reinterpret_cast<Stream*>(handle);
    if (!sim().streams.owns(stream) || stream->magic != kStreamMagic) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    // A stream of another context (or a dead one) is not this call's.
    if (stream->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
    *result = stream;
  }
  return *result != nullptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

Ready stream_earliest(const Stream* stream) {
  const Context* ctx = stream->ctx;
  if (stream->kind == StreamKind::kLegacy) return later(stream->ready, ctx->blocking_ready);
  if (is_blocking(stream)) return later(stream->ready, ctx->legacy->ready);
  return stream->ready;
}

void stream_push(Stream* stream, Ready ready) {
  stream->ready = later(stream->ready, ready);
  Context* ctx = stream->ctx;
  ctx->all_ready = later(ctx->all_ready, ready);
  if (is_blocking(stream)) ctx->blocking_ready = later(ctx->blocking_ready, ready);
}

void release_context_streams(Context* ctx) {
  Driver& d = sim();
  // Streams and events live in pools of chunks; walk every object.
  d.streams.for_each([&](Stream* stream) {
    if (stream->magic == kStreamMagic && stream->ctx == ctx) destroy_stream(stream);
  });
  d.events.for_each([&](Event* event) {
    if (event->magic == kEventMagic && event->ctx == ctx) d.events.release(event);
  });
  ctx->legacy = nullptr;
}

}  // namespace gpushare::simgpu::driver

SIM_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  return create_user_stream(stream, flags, 0);
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  return create_user_stream(stream, flags, priority);
}

SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Stream* stream = reinterpret_cast<Stream*>(handle);
  if (handle == nullptr || !sim().streams.owns(stream) || stream->magic != kStreamMagic ||
      stream->kind != StreamKind::kUser) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  // Work already queued still completes: the timeline keeps its reservation.
  destroy_stream(stream);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamDestroy(CUstream handle) { return cuStreamDestroy_v2(handle); }

SIM_EXPORT CUresult cuStreamQuery(CUstream stream) { return stream_query(stream, false); }
SIM_EXPORT CUresult cuStreamQuery_ptsz(CUstream stream) { return stream_query(stream, true); }
SIM_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  return stream_synchronize(stream, false);
}
SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) {
  return stream_synchronize(stream, true);
}

namespace {

// The simulator has no graph capture: a valid stream is never capturing.
CUresult stream_is_capturing(CUstream handle, CUstreamCaptureStatus* status, bool per_thread) {
  if (CUresult entered = enter(); entered != CUDA_SUCCESS) return entered;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Stream* stream = nullptr;
  if (CUresult found = stream_for_call(handle, per_thread, &stream); found != CUDA_SUCCESS) {
    return found;
  }
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

}  // namespace

SIM_EXPORT CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  return stream_is_capturing(stream, status, false);
}
SIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus* status) {
  return stream_is_capturing(stream, status, true);
}

SIM_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  return stream_wait_event(stream, event, flags, false);
}
SIM_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned int flags) {
  return stream_wait_event(stream, event, flags, true);
}

namespace {

// The stream getters: validate, find the stream under the local lock, read.
template <class Value, class Read>
CUresult read_stream(CUstream handle, bool per_thread, Value* out, Read read) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Stream* stream = nullptr;
  if (CUresult status = stream_for_call(handle, per_thread, &stream); status != CUDA_SUCCESS) {
    return status;
  }
  *out = read(*stream);
  return CUDA_SUCCESS;
}

}  // namespace

SIM_EXPORT CUresult cuStreamGetPriority(CUstream handle, int* priority) {
  return read_stream(handle, false, priority, [](const Stream& s) { return s.priority; });
}

SIM_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream handle, int* priority) {
  return read_stream(handle, true, priority, [](const Stream& s) { return s.priority; });
}

SIM_EXPORT CUresult cuStreamGetFlags(CUstream handle, unsigned int* flags) {
  return read_stream(handle, false, flags, [](const Stream& s) { return s.flags; });
}

SIM_EXPORT CUresult cuStreamGetId(CUstream handle, unsigned long long* id) {
  return read_stream(handle, false, id, [](const Stream& s) { return s.id; });
}

SIM_EXPORT CUresult cuStreamGetCtx(CUstream handle, CUcontext* ctx) {
  return read_stream(handle, false, ctx,
                     [](const Stream& s) { return reinterpret_cast<CUcontext>(s.ctx); });
}

SIM_EXPORT CUresult cuStreamGetDevice(CUstream handle, CUdevice* device) {
  return read_stream(handle, false, device,
                     [](const Stream& s) { return visible_device(s.ctx->device); });
}

SIM_EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* user_data) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return add_host_callback(stream, false, nullptr, fn, user_data);
}
SIM_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void* user_data) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return add_host_callback(stream, true, nullptr, fn, user_data);
}
SIM_EXPORT CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback callback, void* user_data,
                                        unsigned int flags) {
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return add_host_callback(stream, false, callback, nullptr, user_data);
}
SIM_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback callback,
                                             void* user_data, unsigned int flags) {
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return add_host_callback(stream, true, callback, nullptr, user_data);
}

// Events.

SIM_EXPORT CUresult cuEventCreate(CUevent* result, unsigned int flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  constexpr unsigned kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (result == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  Event* event = sim().events.acquire();
  if (event == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  event->ctx = ctx;
  event->flags = flags;
  event->magic = kEventMagic;
  *result = reinterpret_cast<CUevent>(event);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Event* event = lookup_event(handle);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  sim().events.release(event);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy(CUevent handle) { return cuEventDestroy_v2(handle); }

SIM_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  return event_record(event, stream, false);
}
SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
  return event_record(event, stream, true);
}
SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags) {
  if ((flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return event_record(event, stream, false);
}
SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream,
                                                unsigned int flags) {
  if ((flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return event_record(event, stream, true);
}

SIM_EXPORT CUresult cuEventQuery(CUevent handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Event* event = lookup_event(handle);
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!event->recorded) return CUDA_SUCCESS;
  CUresult status = CUDA_SUCCESS;
  if (ready_now(event->device, event->mark, &status)) return CUDA_SUCCESS;
  return status != CUDA_SUCCESS ? status : CUDA_ERROR_NOT_READY;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Ready until{0, 0};
  int device = 0;
  {
    LocalLock lock;
    Event* event = lookup_event(handle);
    if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (event->recorded) {
      until = event->mark;
      device = event->device;
    }
  }
  if (CUresult status = wait_ready(device, until); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  trim_pools_at_sync();
  return CUDA_SUCCESS;
}

static CUresult event_elapsed(float* milliseconds, CUevent start_handle, CUevent end_handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (milliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Event* start = lookup_event(start_handle);
  Event* end = lookup_event(end_handle);
  if (start == nullptr || end == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (start->ctx != end->ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
  CUresult status = CUDA_SUCCESS;
  std::int64_t now = now_ns();
  std::int64_t start_ns = ready_time(start->device, start->mark, &status);
  if (status != CUDA_SUCCESS) return status;
  std::int64_t end_ns = ready_time(end->device, end->mark, &status);
  if (status != CUDA_SUCCESS) return status;
  if (start_ns < 0 || end_ns < 0 || now < start_ns || now < end_ns) return CUDA_ERROR_NOT_READY;
  *milliseconds = static_cast<float>(static_cast<double>(end_ns - start_ns) / 1e6);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  return event_elapsed(milliseconds, start, end);
}
SIM_EXPORT CUresult cuEventElapsedTime_v2(float* milliseconds, CUevent start, CUevent end) {
  return event_elapsed(milliseconds, start, end);
}
