// The process checkpoint of the CUDA driver API (cuCheckpointProcess*):
// another process locks a CUDA process, checkpoints it (its device memory
// goes to host memory and it holds nothing on the GPU, contexts included),
// restores it (optionally onto other devices of the same chip type) and
// unlocks it. The job itself changes nothing and calls nothing.
//
// How the simulator does it. The real driver keeps a thread in every CUDA
// process that does the work when another process asks
// (cuCheckpointProcessGetRestoreThreadId names it); so does this one: cuInit
// starts a checkpoint thread, which sleeps on a futex word of the process's
// slot in the state file. A caller (the coordinator, a test) checks the
// request against the slot under the state lock (the state, the device
// pairs), writes it into the slot and wakes the thread; the thread answers
// through the slot and wakes the caller. Nobody spins: both sides sleep on
// futex words of the shared file (the caller looks up every 100 ms whether
// the process died).
//
//   lock        the thread takes the driver's process-local mutex, which
//               every call that launches work or manages resources holds
//               while it runs (LocalLock), waiting at most the timeout (then
//               CUDA_ERROR_NOT_READY, and the process stays running). Until
//               unlock those calls block on the mutex, as the real driver's
//               do; the thread keeps it across the steps below, the one
//               place where a driver lock is held while sleeping.
//   checkpoint  waits for the process's submitted work, then takes its
//               charges off every device (allocations and contexts: 0 bytes
//               left, and no context for NVML) and moves its managed memory
//               to the host; the time is the transfer of its data on each
//               device's link to the host (link.h). The simulator's device
//               memory is host memory of the process, so the bytes stay
//               where they are, at the same addresses.
//   restore     charges the saved bytes onto the devices the pairs name (or
//               the same ones) and puts its managed memory back as far as it
//               was, taking the link's time from the host; then remaps the
//               process's own objects (contexts, pools, events, allocations,
//               the CUdevice ordinals) onto the new devices, so that its
//               launches and allocations go there. Its earlier work all ended
//               before the checkpoint, so every completion mark is reset.
//               A device that cannot hold the bytes: CUDA_ERROR_OUT_OF_MEMORY,
//               changing nothing (the process stays checkpointed and can be
//               restored elsewhere).
//   unlock      releases the mutex: the blocked calls run, on the new device.
//
// The refusals follow the driver's documentation (a request out of order:
// CUDA_ERROR_ILLEGAL_STATE; a lock timeout: CUDA_ERROR_NOT_READY) and what
// users of CUDA 13 report of restores onto other GPUs: the pairs must name
// every device the process checkpointed, and a device it could not see
// (CUDA_VISIBLE_DEVICES) or of another chip type is refused with
// CUDA_ERROR_INVALID_VALUE. The devices a process sees are the devices it
// checkpoints, so a restore elsewhere is a permutation of them
// (docs/simulated-gpu.md, "The process checkpoint").
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "simgpu/driver/internal.h"

namespace gpushare::simgpu::driver {
namespace {

static_assert(sizeof(CUcheckpointGpuPair) == sizeof(UuidPair));
static_assert(static_cast<int>(CU_PROCESS_STATE_RUNNING) == kCheckpointRunning);
static_assert(static_cast<int>(CU_PROCESS_STATE_LOCKED) == kCheckpointLocked);
static_assert(static_cast<int>(CU_PROCESS_STATE_CHECKPOINTED) == kCheckpointCheckpointed);
static_assert(static_cast<int>(CU_PROCESS_STATE_FAILED) == kCheckpointFailed);

constexpr std::int64_t kCallerLookNs =
    100'000'000;  // how often a waiting caller checks the process

long futex(std::uint32_t* word, int op, std::uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, word, op, value, timeout, nullptr, 0);
}
void futex_wake_all(std::uint32_t* word) { futex(word, FUTEX_WAKE, INT_MAX, nullptr); }

std::uint32_t load(const std::uint32_t* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

ProcessSlot& own_slot() { return sim().state.layout()->processes[sim().slot]; }

// ------------------------------------------------ the process's own side

// Managed records moved to the host by the checkpoint, to put back.
struct SavedManaged {
  int index;
  std::uint64_t id;
  std::uint64_t resident_bytes;
};
SavedManaged* g_saved_managed = nullptr;
int g_saved_count = 0;
bool g_holding = false;  // the checkpoint thread holds the driver's mutex

void set_state(std::uint32_t state) {
  SharedLock shared;
  if (shared.ok()) __atomic_store_n(&own_slot().ckpt_state, state, __ATOMIC_RELEASE);
}

CUresult do_lock(std::uint32_t timeout_ms) {
  Driver& d = sim();
  if (timeout_ms == 0) {
    pthread_mutex_lock(&d.mutex);
  } else {
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += static_cast<long>(timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_nsec -= 1000000000;
      ++until.tv_sec;
    }
    if (pthread_mutex_clocklock(&d.mutex, CLOCK_MONOTONIC, &until) != 0) {
      return CUDA_ERROR_NOT_READY;  // left running, as documented
    }
  }
  g_holding = true;
  set_state(kCheckpointLocked);
  return CUDA_SUCCESS;
}

CUresult do_unlock() {
  set_state(kCheckpointRunning);
  g_holding = false;
  pthread_mutex_unlock(&sim().mutex);
  return CUDA_SUCCESS;
}

CUresult do_checkpoint() {
  Driver& d = sim();
  std::int64_t started = now_ns();
  // The work already submitted completes first (the mutex keeps more out).
  CUresult waited = CUDA_SUCCESS;
  d.contexts.for_each([&](Context* ctx) {
    if (ctx->magic != kContextMagic || waited != CUDA_SUCCESS) return;
    waited = wait_ready(ctx->device, ctx->all_ready);
  });
  if (waited != CUDA_SUCCESS) return waited;
  std::int64_t end = 0;
  {
    SharedLock shared;
    if (!shared.ok()) return kStateUnavailable;
    StateLayout* layout = shared.layout();
    std::uint64_t data[kMaxDevices] = {};
    checkpoint_release(layout, d.slot, data);
    int records = 0;
    for (std::uint32_t i = 0; i < managed_bound(layout); ++i) {
      records += layout->managed[i].pid == d.pid && layout->managed[i].resident_bytes > 0;
    }
    std::free(g_saved_managed);
    g_saved_managed = nullptr;
    g_saved_count = 0;
    if (records > 0) {
      g_saved_managed = static_cast<SavedManaged*>(std::calloc(records, sizeof(SavedManaged)));
      if (g_saved_managed == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (std::uint32_t i = 0; i < managed_bound(layout) && g_saved_count < records; ++i) {
      ManagedRecord& record = layout->managed[i];
      if (record.pid != d.pid || record.resident_bytes == 0) continue;
      g_saved_managed[g_saved_count++] =
          SavedManaged{static_cast<int>(i), record.id, record.resident_bytes};
      data[managed_device_index(record)] +=
          managed_migrate(layout, static_cast<int>(i), record.resident_bytes, false);
    }
    for (int device = 0; device < kMaxDevices; ++device) {
      if (data[device] == 0) continue;
      std::int64_t done = reserve_transfer(layout, device, kHostPlace, data[device], 0, false);
      if (done > end) end = done;
    }
  }
  if (end > 0) wait_transfer(end);
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  own_slot().ckpt_last_ns = now_ns() - started;
  __atomic_store_n(&own_slot().ckpt_state, kCheckpointCheckpointed, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

// The process's own objects follow its devices (the mutex is held).
void remap_objects(const std::int8_t map[kMaxDevices]) {
  Driver& d = sim();
  auto to = [&](int device) {
    return device >= 0 && device < kMaxDevices && map[device] >= 0 ? map[device] : device;
  };
  for (int i = 0; i < d.device_count; ++i) d.visible[i] = to(d.visible[i]);
  Context* primary[kMaxDevices];
  MemPool* default_pool[kMaxDevices];
  MemPool* current_pool[kMaxDevices];
  for (int i = 0; i < kMaxDevices; ++i) {
    primary[i] = d.primary[i];
    default_pool[i] = d.default_pool[i];
    current_pool[i] = d.current_pool[i];
    d.primary[i] = nullptr;
    d.default_pool[i] = nullptr;
    d.current_pool[i] = nullptr;
  }
  for (int i = 0; i < kMaxDevices; ++i) {
    if (primary[i] != nullptr) d.primary[to(i)] = primary[i];
    if (default_pool[i] != nullptr) d.default_pool[to(i)] = default_pool[i];
    if (current_pool[i] != nullptr) d.current_pool[to(i)] = current_pool[i];
  }
  // Every earlier piece of work ended before the checkpoint, and its marks
  // count kernels on the old device's timeline: done, all of them.
  d.contexts.for_each([&](Context* ctx) {
    ctx->device = to(ctx->device);
    ctx->all_ready = Ready{0, 0};
    ctx->blocking_ready = Ready{0, 0};
    ctx->managed_generation_seen = 0;
  });
  std::uint32_t max_pending = d.config.max_pending;
  d.streams.for_each([&](Stream* stream) {
    stream->ready = Ready{0, 0};
    if (stream->magic == kStreamMagic && stream->pending != nullptr) {
      for (std::uint32_t i = 0; i < max_pending; ++i) stream->pending[i] = 0;
    }
  });
  d.events.for_each([&](Event* event) {
    event->device = to(event->device);
    event->mark = Ready{0, 0};
  });
  d.pools.for_each([&](MemPool* pool) { pool->device = to(pool->device); });
  d.vmm_handles.for_each([&](VmmHandle* handle) { handle->device = to(handle->device); });
  d.arrays.for_each([&](ArrayObject* array) { array->device = to(array->device); });
  for (std::size_t i = 0; i < d.allocation_count; ++i) {
    d.allocations[i].device = to(d.allocations[i].device);
  }
}

CUresult do_restore() {
  Driver& d = sim();
  std::int64_t started = now_ns();
  std::int8_t map[kMaxDevices];
  std::int64_t end = 0;
  {
    SharedLock shared;
    if (!shared.ok()) return kStateUnavailable;
    StateLayout* layout = shared.layout();
    ProcessSlot& slot = own_slot();
    std::uint32_t physical = layout->header.device_count;
    for (int i = 0; i < kMaxDevices; ++i) {
      int to = slot.restore_map[i];
      map[i] =
          static_cast<std::int8_t>(to >= 0 && static_cast<std::uint32_t>(to) < physical ? to : -1);
    }
    std::uint64_t data[kMaxDevices] = {};
    for (int i = 0; i < kMaxDevices; ++i) {
      std::uint64_t overhead = static_cast<std::uint64_t>(slot.saved_contexts[i]) *
                               layout->devices[i].ctx_overhead_bytes;
      int to = map[i] >= 0 ? map[i] : i;
      if (slot.saved_bytes[i] > overhead) data[to] += slot.saved_bytes[i] - overhead;
    }
    if (!checkpoint_reacquire(layout, d.slot, map)) return CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < g_saved_count; ++i) {
      ManagedRecord* record =
          managed_find(layout, g_saved_managed[i].index, d.pid, g_saved_managed[i].id);
      if (record == nullptr) continue;
      int from = managed_device_index(*record);
      int to = map[from] >= 0 ? map[from] : from;
      if (to != from) {
        ++layout->devices[from].managed_generation;
        record->device = to;
      }
      data[to] += managed_migrate(layout, g_saved_managed[i].index,
                                  g_saved_managed[i].resident_bytes, true);
    }
    std::free(g_saved_managed);
    g_saved_managed = nullptr;
    g_saved_count = 0;
    for (int device = 0; device < kMaxDevices; ++device) {
      if (data[device] == 0) continue;
      std::int64_t done = reserve_transfer(layout, kHostPlace, device, data[device], 0, false);
      if (done > end) end = done;
    }
  }
  remap_objects(map);
  if (end > 0) wait_transfer(end);
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  own_slot().ckpt_last_ns = now_ns() - started;
  __atomic_store_n(&own_slot().ckpt_state, kCheckpointLocked, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

CUresult perform(std::uint32_t op) {
  ProcessSlot& slot = own_slot();
  switch (op) {
    case kCheckpointOpLock:
      return do_lock(slot.ckpt_timeout_ms);
    case kCheckpointOpCheckpoint:
      return g_holding ? do_checkpoint() : CUDA_ERROR_ILLEGAL_STATE;
    case kCheckpointOpRestore:
      return g_holding ? do_restore() : CUDA_ERROR_ILLEGAL_STATE;
    case kCheckpointOpUnlock:
      return g_holding ? do_unlock() : CUDA_ERROR_ILLEGAL_STATE;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

void* checkpoint_thread(void*) {
  ProcessSlot& slot = own_slot();
  {
    SharedLock shared;  // who answers checkpoint requests
    if (shared.ok()) slot.ckpt_tid = static_cast<std::int32_t>(syscall(SYS_gettid));
  }
  while (true) {
    std::uint32_t op = load(&slot.ckpt_request);
    if (op == kCheckpointOpNone) {
      futex(&slot.ckpt_request, FUTEX_WAIT, kCheckpointOpNone, nullptr);
      continue;
    }
    CUresult result = perform(op);
    // A checkpoint or restore that failed half-way (the state file could
    // not be locked) leaves the process in no state it can leave.
    if (result == kStateUnavailable &&
        (op == kCheckpointOpCheckpoint || op == kCheckpointOpRestore)) {
      __atomic_store_n(&slot.ckpt_state, kCheckpointFailed, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&slot.ckpt_result, static_cast<std::int32_t>(result), __ATOMIC_RELEASE);
    __atomic_store_n(&slot.ckpt_request, kCheckpointOpNone, __ATOMIC_RELEASE);
    __atomic_add_fetch(&slot.ckpt_done, 1, __ATOMIC_ACQ_REL);
    futex_wake_all(&slot.ckpt_done);
  }
  return nullptr;
}

// ------------------------------------------------------- the caller's side

CUresult check_reserved(const void* args, std::size_t offset, std::size_t bytes) {
  if (args == nullptr) return CUDA_SUCCESS;
  const unsigned char* raw = static_cast<const unsigned char*>(args) + offset;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (raw[i] != 0) return CUDA_ERROR_INVALID_VALUE;  // "must be zeroed"
  }
  return CUDA_SUCCESS;
}

CUresult request(int pid, std::uint32_t op, std::uint32_t timeout_ms, const UuidPair* pairs,
                 int pair_count) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  Driver& d = sim();
  // The caller is another process: a process cannot wait for itself.
  if (pid <= 0 || pid == d.pid) return CUDA_ERROR_INVALID_VALUE;
  ProcessSlot* slot = nullptr;
  std::uint64_t start_ticks = 0;
  std::uint32_t seen = 0;
  {
    SharedLock shared;
    if (!shared.ok()) return kStateUnavailable;
    StateLayout* layout = shared.layout();
    int index = find_process_slot(layout, pid);
    if (index < 0) return CUDA_ERROR_INVALID_VALUE;  // no CUDA process of that pid
    slot = &layout->processes[index];
    start_ticks = slot->start_ticks;
    if (!process_alive(pid, start_ticks)) return CUDA_ERROR_INVALID_VALUE;
    if (slot->ckpt_tid == 0) return CUDA_ERROR_NOT_SUPPORTED;
    if (load(&slot->ckpt_request) != kCheckpointOpNone) return CUDA_ERROR_NOT_READY;
    if (!checkpoint_op_allowed(load(&slot->ckpt_state), op)) return CUDA_ERROR_ILLEGAL_STATE;
    if (op == kCheckpointOpRestore) {
      std::int8_t map[kMaxDevices];
      if (plan_restore(layout, index, pairs, pair_count, map) != RestorePlan::kOk) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      for (int i = 0; i < kMaxDevices; ++i) slot->restore_map[i] = map[i];
    }
    slot->ckpt_timeout_ms = timeout_ms;
    seen = load(&slot->ckpt_done);
    __atomic_store_n(&slot->ckpt_request, op, __ATOMIC_RELEASE);
  }
  futex_wake_all(&slot->ckpt_request);
  while (load(&slot->ckpt_done) == seen) {
    timespec look{0, kCallerLookNs};
    futex(&slot->ckpt_done, FUTEX_WAIT, seen, &look);
    if (load(&slot->ckpt_done) != seen) break;
    if (__atomic_load_n(&slot->pid, __ATOMIC_ACQUIRE) != pid || !process_alive(pid, start_ticks)) {
      return CUDA_ERROR_INVALID_VALUE;  // it died meanwhile
    }
  }
  return static_cast<CUresult>(__atomic_load_n(&slot->ckpt_result, __ATOMIC_ACQUIRE));
}

}  // namespace

void start_checkpoint_thread() {
  Driver& d = sim();
  // The application's signal handlers never run on this thread.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pthread_t thread;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attributes, 256 * 1024);
  int failed = pthread_create(&thread, &attributes, checkpoint_thread, nullptr);
  pthread_attr_destroy(&attributes);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (failed != 0) {
    log_message("warning: no checkpoint thread (error %d): this process cannot be checkpointed",
                failed);
    return;
  }
  pthread_setname_np(thread, "cuda-ckpt");
  (void)d;
}

void publish_checkpoint_slot() {
  // Under the state lock (cuInit): the devices this process sees.
  Driver& d = sim();
  ProcessSlot& slot = own_slot();
  slot.ordinal_count = static_cast<std::uint32_t>(d.device_count);
  for (int i = 0; i < kMaxDevices; ++i) {
    slot.ordinal_device[i] = static_cast<std::int8_t>(i < d.device_count ? d.visible[i] : -1);
  }
}

}  // namespace gpushare::simgpu::driver

using namespace gpushare::simgpu;
using namespace gpushare::simgpu::driver;

SIM_EXPORT CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args) {
  if (CUresult status =
          check_reserved(args, offsetof(CUcheckpointLockArgs, reserved0),
                         sizeof(CUcheckpointLockArgs) - offsetof(CUcheckpointLockArgs, reserved0));
      status != CUDA_SUCCESS) {
    return status;
  }
  return request(pid, kCheckpointOpLock, args != nullptr ? args->timeoutMs : 0, nullptr, 0);
}

SIM_EXPORT CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args) {
  if (CUresult status = check_reserved(args, 0, sizeof(CUcheckpointCheckpointArgs));
      status != CUDA_SUCCESS) {
    return status;
  }
  return request(pid, kCheckpointOpCheckpoint, 0, nullptr, 0);
}

SIM_EXPORT CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args) {
  if (CUresult status = check_reserved(
          args, offsetof(CUcheckpointRestoreArgs, reserved),
          sizeof(CUcheckpointRestoreArgs) - offsetof(CUcheckpointRestoreArgs, reserved));
      status != CUDA_SUCCESS) {
    return status;
  }
  const UuidPair* pairs = nullptr;
  int count = 0;
  if (args != nullptr && args->gpuPairsCount > 0) {
    if (args->gpuPairs == nullptr || args->gpuPairsCount > static_cast<unsigned>(kMaxDevices)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    pairs = reinterpret_cast<const UuidPair*>(args->gpuPairs);
    count = static_cast<int>(args->gpuPairsCount);
  }
  return request(pid, kCheckpointOpRestore, 0, pairs, count);
}

SIM_EXPORT CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args) {
  if (CUresult status = check_reserved(args, 0, sizeof(CUcheckpointUnlockArgs));
      status != CUDA_SUCCESS) {
    return status;
  }
  return request(pid, kCheckpointOpUnlock, 0, nullptr, 0);
}

SIM_EXPORT CUresult cuCheckpointProcessGetState(int pid, CUprocessState* state) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (state == nullptr || pid <= 0) return CUDA_ERROR_INVALID_VALUE;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  int index = find_process_slot(shared.layout(), pid);
  if (index < 0) return CUDA_ERROR_INVALID_VALUE;
  std::uint32_t value = load(&shared.layout()->processes[index].ckpt_state);
  *state = static_cast<CUprocessState>(value <= kCheckpointFailed ? value : kCheckpointFailed);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int* tid) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (tid == nullptr || pid <= 0) return CUDA_ERROR_INVALID_VALUE;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  int index = find_process_slot(shared.layout(), pid);
  if (index < 0 || shared.layout()->processes[index].ckpt_tid == 0) return CUDA_ERROR_INVALID_VALUE;
  *tid = shared.layout()->processes[index].ckpt_tid;
  return CUDA_SUCCESS;
}

/// How long the last checkpoint or restore of process `pid` took
/// (nanoseconds), for tests and the coordinator's figures. Returns a CUresult.
SIM_EXPORT int gpushare_sim_checkpoint_ns(int pid, long long* ns) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (ns == nullptr) return CUDA_ERROR_INVALID_VALUE;
  SharedLock shared;
  if (!shared.ok()) return kStateUnavailable;
  int index = find_process_slot(shared.layout(), pid);
  if (index < 0) return CUDA_ERROR_INVALID_VALUE;
  *ns = shared.layout()->processes[index].ckpt_last_ns;
  return CUDA_SUCCESS;
}

/// For tests: holds this process's driver lock for `ms` milliseconds, as a
/// long call would, after calling `callback(argument)` with it held, so that
/// a checkpoint lock must wait (and time out). Returns the callback's value.
SIM_EXPORT int gpushare_sim_hold_driver_lock(int ms, int (*callback)(const char*),
                                             const char* argument) {
  if (CUresult status = enter(); status != CUDA_SUCCESS) return status;
  if (ms < 0) return CUDA_ERROR_INVALID_VALUE;
  LocalLock lock;
  int result = callback != nullptr ? callback(argument) : 0;
  sleep_until(now_ns() + static_cast<std::int64_t>(ms) * 1000000);
  return result;
}
