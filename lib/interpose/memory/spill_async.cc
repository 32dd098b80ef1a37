// Stream-ordered allocation for an opportunistic job, backed by managed
// memory so that it can spill like the rest of the job's memory.
//
// cuMemAllocAsync and cuMemAllocFromPoolAsync promise memory that work
// queued on the stream after the call may use; cuMemFreeAsync promises that
// the memory stays valid for the work queued before it. Managed memory
// allocated at once (cuMemAllocManaged, advised to prefer the pool's
// device) keeps the first promise: it is valid earlier than required. The
// second needs the free deferred until the stream reaches it:
//
//   cuMemFreeAsync(p, s): the record leaves the allocation table (the spill
//     tick no longer moves it; a second free is refused as the driver
//     would), and an event is recorded on s into a slot of the deferred
//     table. Nothing blocks.
//   drain: at every later stream-ordered allocation or free and every tick
//     of the client thread, each slot whose event has completed is freed
//     (cuMemFree, in the allocation's context) and its charge given back.
//     A slot whose event reports an error (its context was destroyed, which
//     freed the memory) gives its charge back without a free.
//   reuse: an allocation on stream s of exactly the bytes a pending free on
//     s holds takes that memory back without waiting, as a pool reuses
//     memory freed on the same stream: everything queued on s before the
//     free precedes everything queued after the allocation.
//
// Until a deferred free is drained its bytes stay charged to the job (the
// memory is still held); an allocation drains what it can before it is
// charged. cuLaunchHostFunc is not used: its function may call no CUDA API,
// and the free is one. When no event can be made (no slot left, the driver
// refuses), the free waits for the stream instead: correct, but blocking,
// and only then.
#include <pthread.h>

#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "interpose/memory/spill.h"

namespace gpushare::interpose {

namespace {

struct DeferredFree {
  bool used = false;
  std::uint64_t pointer = 0;
  AllocationRecord record{0, -1, 0};
  CUevent event = nullptr;
  std::uint64_t stream = 0;  ///< the stream handle as the program named it
  bool per_thread = false;
};

constexpr std::size_t kMaxDeferred = 1024;
DeferredFree g_deferred[kMaxDeferred];
std::atomic<std::size_t> g_pending{0};
pthread_mutex_t g_deferred_mutex = PTHREAD_MUTEX_INITIALIZER;

class DeferredLock {
 public:
  DeferredLock() { pthread_mutex_lock(&g_deferred_mutex); }
  ~DeferredLock() { pthread_mutex_unlock(&g_deferred_mutex); }
  DeferredLock(const DeferredLock&) = delete;
  DeferredLock& operator=(const DeferredLock&) = delete;
};

void forget_after_fork() {
  for (DeferredFree& slot : g_deferred) slot = DeferredFree{};
  g_pending.store(0, std::memory_order_relaxed);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  __builtin_memcpy(&g_deferred_mutex, &fresh, sizeof fresh);
}

__attribute__((constructor)) void register_fork_handler() {
  pthread_atfork(nullptr, nullptr, &forget_after_fork);
}

CUstream stream_handle(std::uint64_t stream, bool per_thread) {
  // In a _ptsz call, stream 0 is the thread's default stream.
  if (per_thread && stream == 0) return CU_STREAM_PER_THREAD;
  return reinterpret_cast<CUstream>(stream);
}

// Gives back the charge of a freed (or context-freed) spillable allocation.
void release_charge(const AllocationRecord& record) {
  if (record.device < 0 || record.device >= g_runtime.device_count.load(std::memory_order_acquire))
    return;
  g_runtime.devices[record.device].budget.release(record.bytes);
  spill_forget(record);
}

// cuMemFree in the allocation's context, the caller's context restored.
CUresult free_in_context(std::uint64_t pointer, std::uint64_t context) {
  RealDriver& real = g_runtime.real;
  CUcontext before = nullptr;
  if (real.real_cuCtxGetCurrent != nullptr) real.real_cuCtxGetCurrent(&before);
  bool switched = context != 0 && reinterpret_cast<CUcontext>(context) != before;
  if (switched) real.real_cuCtxSetCurrent(reinterpret_cast<CUcontext>(context));
  CUresult result = real.real_cuMemFree_v2(static_cast<CUdeviceptr>(pointer));
  if (switched) real.real_cuCtxSetCurrent(before);
  return result;
}

void clear_locked(DeferredFree& slot) {
  if (slot.event != nullptr) g_runtime.real.real_cuEventDestroy_v2(slot.event);
  slot = DeferredFree{};
  g_pending.fetch_sub(1, std::memory_order_relaxed);
}

void drain_locked() {
  for (DeferredFree& slot : g_deferred) {
    if (!slot.used) continue;
    CUresult state = g_runtime.real.real_cuEventQuery(slot.event);
    if (state == CUDA_ERROR_NOT_READY) continue;
    if (state == CUDA_SUCCESS) {
      CUresult freed = free_in_context(slot.pointer, slot.record.context);
      if (freed != CUDA_SUCCESS) {
        GS_DEBUG("deferred free of 0x%llx failed: error %d",
                 static_cast<unsigned long long>(slot.pointer), static_cast<int>(freed));
      }
    }
    release_charge(slot.record);
    clear_locked(slot);
  }
}

// A pending free on `stream` of exactly `bytes` on `device`: taken back
// into the allocation table, its pointer in *pointer.
bool reuse_locked(CUdeviceptr* pointer, std::size_t bytes, int device, std::uint64_t stream,
                  bool per_thread) {
  for (DeferredFree& slot : g_deferred) {
    if (!slot.used || slot.stream != stream || slot.per_thread != per_thread ||
        slot.record.bytes != bytes || slot.record.device != device ||
        slot.record.context != current_context()) {
      continue;
    }
    if (!g_runtime.allocations.insert(slot.pointer, slot.record)) return false;
    *pointer = static_cast<CUdeviceptr>(slot.pointer);
    clear_locked(slot);
    return true;
  }
  return false;
}

bool try_charge(int device, std::size_t bytes) {
  return g_runtime.devices[device].budget.try_reserve(bytes, spillable_limit(device));
}

}  // namespace

void drain_deferred_frees() {
  if (g_pending.load(std::memory_order_relaxed) == 0) return;
  DeferredLock lock;
  drain_locked();
}

CUresult allocate_spillable_async(const char* api, CUdeviceptr* pointer, std::size_t bytes,
                                  int device, CUstream stream, bool per_thread) {
  {
    DeferredLock lock;
    if (g_pending.load(std::memory_order_relaxed) != 0) {
      if (reuse_locked(pointer, bytes, device, reinterpret_cast<std::uint64_t>(stream),
                       per_thread)) {
        return CUDA_SUCCESS;
      }
      drain_locked();
    }
  }
  if (!try_charge(device, bytes)) {
    GS_INFO("%s(%llu bytes) refused on device %d: holds %llu of %llu bytes", api,
            static_cast<unsigned long long>(bytes), device,
            static_cast<unsigned long long>(g_runtime.devices[device].budget.held()),
            static_cast<unsigned long long>(spillable_limit(device)));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  bool on_host = false;
  CUresult result = allocate_managed_backed(pointer, bytes, device, &on_host);
  if (result != CUDA_SUCCESS) {
    g_runtime.devices[device].budget.release(bytes);
    return result;
  }
  AllocationRecord record{bytes, device, current_context()};
  record.spillable = 1;
  record.on_host = on_host ? 1 : 0;
  if (!g_runtime.allocations.insert(*pointer, record)) {
    GS_WARN("%s: cannot record an allocation; its bytes stay charged", api);
  }
  return CUDA_SUCCESS;
}

bool free_spillable_async(CUdeviceptr pointer, CUstream stream, bool per_thread, CUresult* result) {
  AllocationRecord record{0, -1, 0};
  if (!g_runtime.allocations.find(pointer, &record) || record.spillable == 0) return false;
  if (!g_runtime.allocations.erase(pointer, &record)) return false;  // freed meanwhile
  RealDriver& real = g_runtime.real;
  CUstream handle = stream_handle(reinterpret_cast<std::uint64_t>(stream), per_thread);
  DeferredLock lock;
  drain_locked();
  DeferredFree* free_slot = nullptr;
  for (DeferredFree& slot : g_deferred) {
    if (!slot.used) {
      free_slot = &slot;
      break;
    }
  }
  CUevent event = nullptr;
  if (free_slot != nullptr &&
      real.real_cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
    if (real.real_cuEventRecord(event, handle) == CUDA_SUCCESS) {
      *free_slot = DeferredFree{
          true, pointer, record, event, reinterpret_cast<std::uint64_t>(stream), per_thread};
      g_pending.fetch_add(1, std::memory_order_relaxed);
      *result = CUDA_SUCCESS;
      return true;
    }
    real.real_cuEventDestroy_v2(event);
  }
  // No event: wait for the stream, then free.
  *result = real.real_cuStreamSynchronize(handle);
  if (*result == CUDA_SUCCESS) *result = free_in_context(pointer, record.context);
  if (*result == CUDA_SUCCESS) {
    release_charge(record);
  } else {
    g_runtime.allocations.insert(pointer, record);  // still allocated
  }
  return true;
}

}  // namespace gpushare::interpose
