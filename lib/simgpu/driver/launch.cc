// Kernel launches: the heart of the time model.
//
// A launch computes its duration (the module's, or for gpushare_spin the
// u64 nanoseconds of its first parameter), stretches it by the managed-
// memory cost model, and queues it on the device's scheduler model in the
// state file (timeslice.h: time slices between processes, or one FIFO
// queue under GPUSHARE_SIM_SCHED=fifo) as work of this process's context,
// not to start before the stream's dependencies off the model (managed
// migrations). Then it returns at once, as an asynchronous launch does; the
// stream remembers the kernel's sequence number, and synchronisation asks
// the model when that kernel ends (timeline.cc).
//
// Managed memory cost model: if a fraction f of the launching context's
// managed bytes on the device lives on the host, the kernel runs
// (1 + s * f) times longer, s being GPUSHARE_SIM_MANAGED_SLOWDOWN. The
// extra s * f of it is fault service, which a real GPU pays on shared
// resources, and so does the model:
//   - the link: the pages the kernel faults in (and as many evicted to make
//     room, the working set being oversubscribed) move over the host link
//     for the whole of that time, so the fault service reserves that
//     stretch on the device's "to" and "from" lanes (link.h) at the
//     earliest time the kernel could start; when other transfers hold the
//     link then, the kernel starts when its stretch does (not before it,
//     like a kernel behind a migration), so production's copies and the
//     kernel's faults queue behind one another;
//   - the GPU's time: the fault service is the kernel's hold (timeslice.h):
//     a context stalled on faults keeps the device past its slice, so other
//     contexts wait for its migrations too.
// Where the kernel really starts is only known once the scheduler settles;
// the stream's earliest start (or now) stands for it, which is exact on an
// idle device and early otherwise (the link is then reserved before the
// kernel could use it: errs toward charging the link sooner, not less).
//
// Collectives: the all-reduce kernel (collective.h) is queued as a gated
// kernel through collective_enqueue, which matches it with the other
// ranks' kernels; its parameters come from kernelParams only.
//
// Back-pressure: a stream holds at most GPUSHARE_SIM_MAX_PENDING kernels
// not yet complete; a further launch waits for the oldest, as a real
// launch blocks when the push buffer is full. The model holds at most
// kSchedContextPending unfinished kernels of a process and kSchedPending of
// all; a launch that finds its process's share full waits for its next
// kernel to finish, one that finds the device's full for any kernel.
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlocksPerSm = 32;

struct Dims {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
};

CUresult check_dims(const Dims& dims) {
  for (int i = 0; i < 3; ++i) {
    if (dims.grid[i] == 0 || dims.block[i] == 0) return CUDA_ERROR_INVALID_VALUE;
  }
  if (dims.grid[1] > 65535 || dims.grid[2] > 65535 || dims.grid[0] > 2147483647u) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (dims.block[2] > 64 || dims.block[0] > kMaxThreadsPerBlock ||
      dims.block[1] > kMaxThreadsPerBlock) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  unsigned long long threads = 1ull * dims.block[0] * dims.block[1] * dims.block[2];
  if (threads > kMaxThreadsPerBlock) return CUDA_ERROR_INVALID_VALUE;
  if (dims.shared_bytes > 166912) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// The spin kernel's first parameter, from kernelParams or from a packed
// CU_LAUNCH_PARAM_BUFFER_POINTER buffer in `extra`.
CUresult spin_duration(void** params, void** extra, std::int64_t* duration_ns) {
  std::uint64_t value = 0;
  if (params != nullptr && params[0] != nullptr) {
    std::memcpy(&value, params[0], sizeof value);
  } else if (extra != nullptr) {
    const void* buffer = nullptr;
    std::size_t size = 0;
    for (int i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
        std::memcpy(&size, extra[i + 1], sizeof size);
      }
    }
    if (buffer == nullptr || size < sizeof value) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(&value, buffer, sizeof value);
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // An hour at most: longer is surely a caller's unit mistake.
  if (value > 3600ull * 1000000000ull) return CUDA_ERROR_INVALID_VALUE;
  *duration_ns = static_cast<std::int64_t>(value);
  return CUDA_SUCCESS;
}

// The all-reduce kernel's parameters: (u64 bytes, u64 comm, u32 rank,
// u32 world_size), from kernelParams.
CUresult collective_call(void** params, CollectiveCall* call) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < 4; ++i) {
    if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(&call->bytes, params[0], sizeof call->bytes);
  std::memcpy(&call->comm, params[1], sizeof call->comm);
  std::memcpy(&call->rank, params[2], sizeof call->rank);
  std::memcpy(&call->world_size, params[3], sizeof call->world_size);
  return CUDA_SUCCESS;
}

CUresult refusal_status(CollectiveRefusal refusal) {
  switch (refusal) {
    case CollectiveRefusal::kBroken:
      return CUDA_ERROR_LAUNCH_FAILED;
    case CollectiveRefusal::kTableFull:
      return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// The fault service a kernel of `duration_ns` pays for the share of its
// context's managed memory that is on the host (0: none). Refreshes the
// context's cached totals when residency changed.
std::int64_t fault_cost(StateLayout* layout, Context* ctx, std::int64_t duration_ns) {
  const DeviceState& device = layout->devices[ctx->device];
  if (ctx->managed_generation_seen != device.managed_generation) {
    managed_totals(layout, sim().pid, ctx->device, ctx->serial, &ctx->managed_total_bytes,
                   &ctx->managed_host_bytes);
    ctx->managed_generation_seen = device.managed_generation;
  }
  if (ctx->managed_total_bytes == 0 || ctx->managed_host_bytes == 0) return 0;
  double host_fraction =
      static_cast<double>(ctx->managed_host_bytes) / static_cast<double>(ctx->managed_total_bytes);
  double extra = layout->header.managed_slowdown_milli / 1000.0 * host_fraction;
  return static_cast<std::int64_t>(static_cast<double>(duration_ns) * extra);
}

// Reserves the fault service's traffic (`fault_ns` of the link, at most
// ~4 s, its hold field's range) on the link from `start_ns` (see the file
// comment). Returns the service's length and sets *begin_ns to when its
// stretch starts.
std::int64_t fault_service(StateLayout* layout, int device, std::int64_t fault_ns,
                           std::int64_t start_ns, std::int64_t* begin_ns) {
  constexpr std::int64_t kMaxHoldNs = 4'000'000'000;
  *begin_ns = start_ns;
  if (fault_ns <= 0) return 0;
  if (fault_ns > kMaxHoldNs) fault_ns = kMaxHoldNs;
  const StateHeader& header = layout->header;
  std::uint64_t bytes = static_cast<std::uint64_t>(
      static_cast<double>(fault_ns) * static_cast<double>(header.link_bytes_per_s) / 1e9);
  DeviceLink& link = layout->devices[device].link;
  LinkQueue* lanes[2] = {&link.lanes[kLaneToDevice], &link.lanes[kLaneFromDevice]};
  *begin_ns = link_reserve(lanes, 2, now_ns(), start_ns, fault_ns, bytes).start_ns;
  return fault_ns;
}

// Queues the kernel, or says until when to wait (full stream or model).
// Requires the local lock.
CUresult enqueue(Context* ctx, Stream* stream, std::int64_t duration,
                 const CollectiveCall* collective, std::int64_t* wait_until) {
  Driver& d = sim();
  std::uint32_t max_pending = d.config.max_pending;
  if (stream->pending == nullptr) {
    stream->pending = static_cast<std::uint64_t*>(std::calloc(max_pending, sizeof(std::uint64_t)));
    if (stream->pending == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::uint64_t& oldest = stream->pending[stream->pending_next % max_pending];
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  SchedModel* model = settled_model(shared.layout(), ctx->device);
  if (!sched_finished(*model, d.slot, oldest)) {  // the stream's queue is full
    *wait_until = projected_time(shared.layout(), ctx->device, Ready{oldest, 0});
    return CUDA_SUCCESS;
  }
  Ready after = stream_earliest(stream);
  std::int64_t floor = after.floor_ns > model->now_ns ? after.floor_ns : 0;
  if (collective != nullptr) {
    CollectiveRefusal refusal = CollectiveRefusal::kNone;
    std::uint64_t seq = collective_enqueue(shared.layout(), *collective, d.slot, d.pid, ctx->device,
                                           now_ns(), floor, &refusal);
    if (seq == 0 && refusal != CollectiveRefusal::kQueueFull) return refusal_status(refusal);
    if (seq == 0) {
      std::int64_t next = sched_next_completion(*model, &scheduler_scratch());
      *wait_until = next > 0 ? next : model->now_ns + model->slice_ns;
      return CUDA_SUCCESS;
    }
    oldest = seq;
    ++stream->pending_next;
    stream_push(stream, Ready{seq, 0});
    *wait_until = 0;
    return CUDA_SUCCESS;
  }
  std::int64_t link_start = 0;
  std::int64_t hold =
      fault_service(shared.layout(), ctx->device, fault_cost(shared.layout(), ctx, duration),
                    floor > 0 ? floor : model->now_ns, &link_start);
  if (hold > 0 && link_start > model->now_ns && link_start > floor) floor = link_start;
  std::uint64_t seq = sched_launch(model, d.slot, model->now_ns, duration + hold, floor,
                                   static_cast<std::uint32_t>(hold));
  if (seq == 0) {  // a full queue: this process's (wait for its next end) or the device's
    std::uint64_t own = sched_first_pending(*model, d.slot);
    std::int64_t next =
        model->pending_of[d.slot] >= static_cast<std::uint32_t>(kSchedContextPending)
            ? projected_time(shared.layout(), ctx->device, Ready{own, 0})
            : sched_next_completion(*model, &scheduler_scratch());
    *wait_until = next > 0 ? next : model->now_ns + model->slice_ns;
    return CUDA_SUCCESS;
  }
  oldest = seq;
  ++stream->pending_next;
  stream_push(stream, Ready{seq, 0});
  *wait_until = 0;
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction handle, const Dims& dims, CUstream stream_handle, void** params,
                void** extra, bool per_thread, bool cooperative) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (CUresult status = check_dims(dims); status != CUDA_SUCCESS) return status;
  Driver& d = sim();
  while (true) {
    std::int64_t wait_until = 0;
    {
      LocalLock lock;
      Context* ctx = nullptr;
      if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
      Function* function = lookup_function(handle);
      if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
      Module* module = function->module;
      if (module->ctx != nullptr && module->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
      Stream* stream = nullptr;
      if (CUresult status = resolve_stream(ctx, stream_handle, per_thread, &stream);
          status != CUDA_SUCCESS) {
        return status;
      }
      if (cooperative) {
        unsigned long long blocks = 1ull * dims.grid[0] * dims.grid[1] * dims.grid[2];
        std::uint32_t sms = d.state.layout()->devices[ctx->device].sms;
        if (blocks > 1ull * sms * kMaxBlocksPerSm) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
      }
      std::int64_t duration = function->kernel.duration_ns;
      CollectiveCall call{};
      if (function->kernel.collective) {
        if (CUresult status = collective_call(params, &call); status != CUDA_SUCCESS) return status;
      }
      if (function->kernel.spin) {
        if (CUresult status = spin_duration(params, extra, &duration); status != CUDA_SUCCESS) {
          return status;
        }
      }
      if (CUresult status = enqueue(ctx, stream, duration,
                                    function->kernel.collective ? &call : nullptr, &wait_until);
          status != CUDA_SUCCESS) {
        return status;
      }
      if (wait_until == 0) return CUDA_SUCCESS;
    }
    sleep_until(wait_until);
  }
}

Dims dims_of(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
             unsigned shared) {
  return Dims{{gx, gy, gz}, {bx, by, bz}, shared};
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction function, void** params, void** extra,
                   bool per_thread) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs && config->attrs != nullptr; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
      cooperative = config->attrs[i].value.cooperative != 0;
    }
  }
  return launch(function,
                dims_of(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                        config->blockDimY, config->blockDimZ, config->sharedMemBytes),
                config->hStream, params, extra, per_thread, cooperative);
}

}  // namespace

SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz,
                                   unsigned int shared, CUstream stream, void** params,
                                   void** extra) {
  return launch(f, dims_of(gx, gy, gz, bx, by, bz, shared), stream, params, extra, false, false);
}

SIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shared, CUstream stream,
                                        void** params, void** extra) {
  return launch(f, dims_of(gx, gy, gz, bx, by, bz, shared), stream, params, extra, true, false);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                              unsigned int gz, unsigned int bx, unsigned int by,
                                              unsigned int bz, unsigned int shared, CUstream stream,
                                              void** params) {
  return launch(f, dims_of(gx, gy, gz, bx, by, bz, shared), stream, params, nullptr, false, true);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                   unsigned int gz, unsigned int bx,
                                                   unsigned int by, unsigned int bz,
                                                   unsigned int shared, CUstream stream,
                                                   void** params) {
  return launch(f, dims_of(gx, gy, gz, bx, by, bz, shared), stream, params, nullptr, true, true);
}

SIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                     void** extra) {
  return launch_ex(config, f, params, extra, false);
}

SIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                          void** extra) {
  return launch_ex(config, f, params, extra, true);
}
