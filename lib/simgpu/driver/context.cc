// Contexts: primary (retained and released per device, one handle for the
// process's lifetime) and ordinary ones, each charged the device's context
// overhead while active; and each thread's current-context stack.
#include "simgpu/driver/internal.h"

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

namespace {

constexpr int kMaxDepth = 64;

struct ContextStack {
  Context* entries[kMaxDepth];
  int depth;
};
thread_local ContextStack t_stack;

constexpr std::size_t kDefaultLimits[] = {
    1024,     // CU_LIMIT_STACK_SIZE
    1 << 20,  // CU_LIMIT_PRINTF_FIFO_SIZE
    8 << 20,  // CU_LIMIT_MALLOC_HEAP_SIZE
    2,        // CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH
    2048,     // CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT
    64,       // CU_LIMIT_MAX_L2_FETCH_GRANULARITY
    0,        // CU_LIMIT_PERSISTING_L2_CACHE_SIZE
    0,        // CU_LIMIT_SHMEM_SIZE
    0,        // CU_LIMIT_CIG_ENABLED
    0,        // CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED
};
constexpr int kLimitCount = sizeof kDefaultLimits / sizeof kDefaultLimits[0];

void count_context(int device, int delta) {
  SharedLock shared;
  if (!shared.ok()) return;
  std::uint32_t& contexts = shared.layout()->processes[sim().slot].contexts[device];
  contexts = delta > 0 ? contexts + 1 : (contexts > 0 ? contexts - 1 : 0);
}

// Makes a (new or primary) context usable: its charge, its legacy stream.
CUresult activate(Context* ctx) {
  Driver& d = sim();
  std::uint64_t overhead = d.state.layout()->devices[ctx->device].ctx_overhead_bytes;
  if (overhead > 0) {
    if (CUresult status = charge_device(ctx->device, overhead); status != CUDA_SUCCESS) {
      return status;
    }
  }
  ctx->overhead_charged = overhead > 0;
  ctx->legacy = create_stream(ctx, StreamKind::kLegacy, 0, 0);
  if (ctx->legacy == nullptr) {
    if (ctx->overhead_charged) uncharge_device(ctx->device, overhead);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ctx->all_ready = Ready{0, 0};
  ctx->blocking_ready = Ready{0, 0};
  ctx->managed_generation_seen = ~0ull;
  for (int i = 0; i < kLimitCount; ++i) ctx->limits[i] = kDefaultLimits[i];
  ctx->magic = kContextMagic;
  count_context(ctx->device, +1);
  return CUDA_SUCCESS;
}

// Frees everything the context holds and marks it dead. A context object
// is never reused, so a stale handle stays recognisably dead.
void deactivate(Context* ctx) {
  release_context_modules(ctx);
  release_context_memory(ctx);
  release_context_streams(ctx);
  if (ctx->overhead_charged) {
    uncharge_device(ctx->device, sim().state.layout()->devices[ctx->device].ctx_overhead_bytes);
    ctx->overhead_charged = false;
  }
  count_context(ctx->device, -1);
  ctx->magic = 0;
}

CUresult create_context(int device, unsigned flags, Context** out) {
  Driver& d = sim();
  Context* ctx = d.contexts.acquire();
  if (ctx == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx->device = device;
  ctx->flags = flags;
  ctx->serial = ++d.next_serial;
  if (CUresult status = activate(ctx); status != CUDA_SUCCESS) {
    d.contexts.release(ctx);
    return status;
  }
  *out = ctx;
  return CUDA_SUCCESS;
}

// Validates an API ordinal and replaces it with the device's index in the
// state file, which contexts keep.
CUresult check_device(CUdevice& device) {
  int physical = 0;
  CUresult status = physical_device(device, &physical);
  if (status == CUDA_SUCCESS) device = physical;
  return status;
}

CUresult push(Context* ctx) {
  if (t_stack.depth == kMaxDepth) return CUDA_ERROR_INVALID_VALUE;
  t_stack.entries[t_stack.depth++] = ctx;
  return CUDA_SUCCESS;
}

CUresult create_and_push(CUcontext* result, unsigned flags, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = create_context(device, flags, &ctx); status != CUDA_SUCCESS) return status;
  if (CUresult status = push(ctx); status != CUDA_SUCCESS) {
    deactivate(ctx);
    return status;
  }
  *result = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

// The context named by a handle, or the current one for a null handle.
CUresult context_or_current(CUcontext handle, Context** ctx) {
  if (handle == nullptr) return require_context(ctx);
  Context* found = lookup_context(handle);
  if (!context_alive(found)) return CUDA_ERROR_INVALID_CONTEXT;
  *ctx = found;
  return CUDA_SUCCESS;
}

CUresult synchronize(Context* ctx) {
  Ready until;
  int device;
  {
    LocalLock lock;
    if (!context_alive(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    until = ctx->all_ready;
    device = ctx->device;
  }
  if (CUresult status = wait_ready(device, until); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  trim_pools_at_sync();
  return CUDA_SUCCESS;
}

CUresult primary_release(CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = sim().primary[device];
  if (ctx == nullptr || ctx->primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx->primary_refs == 0) deactivate(ctx);
  return CUDA_SUCCESS;
}

CUresult primary_reset(CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = sim().primary[device];
  if (ctx != nullptr && ctx->primary_refs > 0) {
    deactivate(ctx);
    ctx->primary_refs = 0;
  }
  return CUDA_SUCCESS;
}

CUresult primary_set_flags(CUdevice device, unsigned flags) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context*& ctx = sim().primary[device];
  if (ctx == nullptr) {
    ctx = sim().contexts.acquire();
    if (ctx == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    ctx->device = device;
    ctx->primary = true;
    ctx->serial = ++sim().next_serial;
  }
  ctx->flags = flags;
  return CUDA_SUCCESS;
}

}  // namespace

namespace gpushare::simgpu::driver {

bool context_alive(const Context* ctx) { return ctx != nullptr && ctx->magic == kContextMagic; }

Context* lookup_context(CUcontext handle) {
  Context* ctx = reinterpret_cast<Context*>(handle);
  if (ctx == nullptr || !sim().contexts.owns(ctx)) return nullptr;
  return ctx;
}

Context* current_context() {
  if (t_stack.depth == 0) return nullptr;
  Context* ctx = t_stack.entries[t_stack.depth - 1];
  return context_alive(ctx) ? ctx : nullptr;
}

CUresult require_context(Context** ctx) {
  *ctx = current_context();
  return *ctx != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

}  // namespace gpushare::simgpu::driver

SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice device) {
  return create_and_push(ctx, flags, device);
}

SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext* ctx, CUexecAffinityParam*, int, unsigned int flags,
                                   CUdevice device) {
  return create_and_push(ctx, flags, device);
}

SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams*, unsigned int flags,
                                   CUdevice device) {
  return create_and_push(ctx, flags, device);
}

SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = lookup_context(handle);
  if (!context_alive(ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  deactivate(ctx);
  if (t_stack.depth > 0 && t_stack.entries[t_stack.depth - 1] == ctx) --t_stack.depth;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  LocalLock lock;
  Context* ctx = lookup_context(handle);
  if (!context_alive(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return push(ctx);
}

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* popped) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (t_stack.depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  Context* ctx = t_stack.entries[--t_stack.depth];
  if (popped != nullptr) *popped = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr) {
    if (t_stack.depth > 0) --t_stack.depth;
    return CUDA_SUCCESS;
  }
  LocalLock lock;
  Context* ctx = lookup_context(handle);
  if (!context_alive(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_stack.depth == 0) return push(ctx);
  t_stack.entries[t_stack.depth - 1] = ctx;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext* handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *handle =
      t_stack.depth > 0 ? reinterpret_cast<CUcontext>(t_stack.entries[t_stack.depth - 1]) : nullptr;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  *device = visible_device(ctx->device);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = context_or_current(handle, &ctx); status != CUDA_SUCCESS) return status;
  *device = visible_device(ctx->device);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize(void) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  return synchronize(ctx);
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext handle) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Context* ctx = nullptr;
  {
    LocalLock lock;
    if (CUresult status = context_or_current(handle, &ctx); status != CUDA_SUCCESS) return status;
  }
  return synchronize(ctx);
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetFlags(unsigned int flags) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  ctx->flags = flags;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetId(CUcontext handle, unsigned long long* id) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = context_or_current(handle, &ctx); status != CUDA_SUCCESS) return status;
  *id = ctx->serial;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext handle, unsigned int* version) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = nullptr;
  if (CUresult status = context_or_current(handle, &ctx); status != CUDA_SUCCESS) return status;
  *version = 3020;  // what real drivers report for contexts made through the _v2 API
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetLimit(size_t* value, CUlimit limit) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  if (value == nullptr || limit < 0 || limit >= kLimitCount) return CUDA_ERROR_INVALID_VALUE;
  *value = ctx->limits[limit];
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Context* ctx = nullptr;
  if (CUresult status = require_context(&ctx); status != CUDA_SUCCESS) return status;
  if (limit < 0 || limit >= kLimitCount) return CUDA_ERROR_INVALID_VALUE;
  ctx->limits[limit] = value;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache* config) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *config = CU_FUNC_CACHE_PREFER_NONE;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache) {
  Context* ctx = nullptr;
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  return require_context(&ctx);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* result, CUdevice device) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Driver& d = sim();
  Context*& ctx = d.primary[device];
  if (ctx == nullptr) {
    ctx = d.contexts.acquire();
    if (ctx == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    ctx->device = device;
    ctx->primary = true;
    ctx->serial = ++d.next_serial;
  }
  if (ctx->primary_refs == 0) {
    if (CUresult status = activate(ctx); status != CUDA_SUCCESS) return status;
  }
  ++ctx->primary_refs;
  *result = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  return primary_release(device);
}
SIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return primary_release(device); }
SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice device) { return primary_reset(device); }
SIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice device) { return primary_reset(device); }

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned int flags) {
  return primary_set_flags(device, flags);
}
SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice device, unsigned int flags) {
  return primary_set_flags(device, flags);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  if (CUresult status = check_device(device); status != CUDA_SUCCESS) return status;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  Context* ctx = sim().primary[device];
  *flags = ctx != nullptr ? ctx->flags : 0;
  *active = ctx != nullptr && ctx->primary_refs > 0;
  return CUDA_SUCCESS;
}
