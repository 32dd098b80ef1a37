// Suspend and resume in the job's client thread (the algorithm is in
// suspend.h).
#include "interpose/memory/suspend.h"

#include <time.h>

#include "coord/job/limits.h"
#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "interpose/memory/memory_work.h"
#include "interpose/memory/spill.h"
#include "interpose/memory/vmm_backing.h"

namespace gpushare::interpose {

namespace {

// Scratch for one pass over the allocation table (client thread only): an
// mmap'd array that grows with the table, so that every allocation is seen
// however many the job makes (no libstdc++ here).
std::uint64_t* g_keys = nullptr;
std::size_t g_keys_capacity = 0;
int g_ticks = 0;

// Copies the table's keys into g_keys and their number into *count; false
// when out of memory for the copy (the caller then refuses or retries).
bool scan_keys(std::size_t* count) {
  *count = 0;
  std::size_t wanted = g_runtime.allocations.size() + 64;
  if (wanted > g_keys_capacity) {
    std::size_t capacity = wanted * 2;
    void* grown = host_copy_allocate(capacity * sizeof(std::uint64_t));
    if (grown == nullptr) return false;
    host_copy_free(g_keys, g_keys_capacity * sizeof(std::uint64_t));
    g_keys = static_cast<std::uint64_t*>(grown);
    g_keys_capacity = capacity;
  }
  *count = g_runtime.allocations.keys(g_keys, g_keys_capacity);
  return true;
}

std::atomic<std::uint64_t>& state() { return g_counters.suspend_state; }

void take(std::atomic<std::uint64_t>& counter, std::uint64_t bytes) {
  std::uint64_t held = counter.load(std::memory_order_relaxed);
  while (!counter.compare_exchange_weak(held, held > bytes ? held - bytes : 0,
                                        std::memory_order_relaxed)) {
  }
}

bool make_current(const AllocationRecord& record) {
  return record.context != 0 && g_runtime.real.real_cuCtxSetCurrent(
                                    reinterpret_cast<CUcontext>(record.context)) == CUDA_SUCCESS;
}

// What the job holds that a suspend cannot move (control_block.h kBlocks*).
std::uint64_t blockers() {
  std::uint64_t mask = 0;
  if (g_runtime.handles.size() != 0) mask |= coord::kBlocksArrays;
  if (ipc_exported()) mask |= coord::kBlocksIpc;
  if (program_vmm_mappings() != 0) mask |= coord::kBlocksProgramVmm;
  if (pools_hold_memory()) mask |= coord::kBlocksPools;
  std::size_t count = 0;
  if (!scan_keys(&count)) return mask | coord::kBlocksPlain;  // cannot tell: refuse
  for (std::size_t i = 0; i < count; ++i) {
    AllocationRecord record;
    if (!g_runtime.allocations.find(g_keys[i], &record)) continue;
    if (record.spillable == 0 && record.vmm_backed == 0) mask |= coord::kBlocksPlain;
  }
  return mask;
}

// Waits for the work queued on every context that owns memory.
bool drain() {
  std::size_t count = 0;
  if (!scan_keys(&count)) return false;
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < count; ++i) {
    AllocationRecord record;
    if (!g_runtime.allocations.find(g_keys[i], &record) || record.context == last) continue;
    last = record.context;
    if (!make_current(record) || g_runtime.real.real_cuCtxSynchronize() != CUDA_SUCCESS) {
      return false;
    }
  }
  return true;
}

// Managed-backed memory: advice and a prefetch, waited for.
bool move_managed(std::uint64_t key, AllocationRecord record, bool to_host) {
  if (move_residency(key, record, to_host) != CUDA_SUCCESS) return false;
  record.on_host = to_host ? 1 : 0;
  record.suspended = to_host ? 1 : 0;
  if (!g_runtime.allocations.replace(key, record)) return true;  // freed meanwhile
  std::atomic<std::uint64_t>& device = g_counters.device_resident_bytes[record.device];
  std::atomic<std::uint64_t>& host = g_counters.host_resident_bytes[record.device];
  take(to_host ? device : host, record.bytes);
  (to_host ? host : device).fetch_add(record.bytes, std::memory_order_relaxed);
  return true;
}

// Managed memory comes back as far as the job's device-resident target
// allows; the rest stays on the host, where the job runs on (slower) and
// spill.cc brings it back when the target rises: an opportunistic job's
// resume never waits for a production job's room.
void resume_managed(std::uint64_t key, AllocationRecord record) {
  std::uint64_t target = coord::job::device_resident_target(record.device);
  std::uint64_t resident =
      g_counters.device_resident_bytes[record.device].load(std::memory_order_relaxed);
  bool fits = target == kNoLimit || resident + record.bytes <= target;
  if (fits && make_current(record) && move_managed(key, record, false)) return;
  record.suspended = 0;  // on the host, as a spill leaves it
  g_runtime.allocations.replace(key, record);
}

// VMM-backed memory: copy out, unmap, release (or create, map, copy in).
bool move_vmm(std::uint64_t key, AllocationRecord record, bool to_host) {
  RealDriver& real = g_runtime.real;
  CUdeviceptr pointer = static_cast<CUdeviceptr>(key);
  if (to_host) {
    void* copy = host_copy_allocate(record.bytes);
    if (copy == nullptr) return false;
    if (real.real_cuMemcpyDtoH_v2(copy, pointer, record.bytes) != CUDA_SUCCESS ||
        vmm_release_physical(pointer, record.bytes, record.link, record.device) != CUDA_SUCCESS) {
      host_copy_free(copy, record.bytes);
      return false;
    }
    record.link = reinterpret_cast<std::uintptr_t>(copy);
    record.suspended = 1;
    g_counters.suspended_bytes[record.device].fetch_add(record.bytes, std::memory_order_relaxed);
  } else {
    std::uint64_t handle = 0;
    void* copy = reinterpret_cast<void*>(record.link);
    if (vmm_map_physical(pointer, record.bytes, record.device, &handle) != CUDA_SUCCESS) {
      return false;
    }
    if (real.real_cuMemcpyHtoD_v2(pointer, copy, record.bytes) != CUDA_SUCCESS) {
      vmm_release_physical(pointer, record.bytes, handle, record.device);
      return false;
    }
    host_copy_free(copy, record.bytes);
    record.link = handle;
    record.suspended = 0;
    take(g_counters.suspended_bytes[record.device], record.bytes);
  }
  g_runtime.allocations.replace(key, record);
  return true;
}

enum class Step { kDone, kMore, kFailed };

// Moves allocations not yet where `to_host` says until none is left (kDone),
// `budget_ns` has passed (kMore: the next tick goes on, so telemetry stays
// fresh and shows the progress), or a move fails (what moved stays moved).
Step move_some(bool to_host, std::uint64_t budget_ns) {
  std::uint64_t deadline = monotonic_ns() + budget_ns;
  std::size_t count = 0;
  if (!scan_keys(&count)) return Step::kFailed;
  Step step = Step::kDone;
  for (std::size_t i = 0; i < count && step == Step::kDone; ++i) {
    if (monotonic_ns() >= deadline) {
      step = Step::kMore;
      break;
    }
    vmm_lock();  // a free of this allocation waits for its move
    AllocationRecord record;
    if (g_runtime.allocations.find(g_keys[i], &record) && (record.suspended != 0) != to_host &&
        record.device >= 0 && record.device < kMaxDevices) {
      bool ok = true;
      MigrationNote note(record.device, record.bytes, to_host);  // shown while it moves
      if (record.vmm_backed != 0) {
        ok = make_current(record) && move_vmm(g_keys[i], record, to_host);
      } else if (record.spillable != 0 && to_host && record.on_host == 0) {
        ok = make_current(record) && move_managed(g_keys[i], record, true);
      } else if (record.spillable != 0 && !to_host) {
        resume_managed(g_keys[i], record);
      }
      if (!ok) step = Step::kFailed;
    }
    vmm_unlock();
  }
  g_runtime.real.real_cuCtxSetCurrent(nullptr);
  return step;
}

// How long one tick moves memory (at 25 GB/s, about 6 GiB): long enough
// that the 10 ms between ticks adds a few per cent, short enough that the
// telemetry (and the heartbeat the coordinator checks) stays fresh.
constexpr std::uint64_t kTickBudgetNs = 250'000'000;
// This suspend waited for the queued work (atomic: suspend_memory_away
// reads it on the client thread while the worker suspends).
std::atomic<bool> g_drained{false};

void suspend_step() {
  if (!g_drained) {
    std::uint64_t mask = blockers();
    g_counters.suspend_blockers.store(mask, std::memory_order_relaxed);
    if (mask != 0) {
      GS_INFO("suspend refused: the job holds memory that cannot leave the device (mask %llu)",
              static_cast<unsigned long long>(mask));
      state().store(coord::kSuspendRefused, std::memory_order_relaxed);
      return;
    }
    if (!drain()) {
      GS_WARN("suspend failed: cannot wait for the job's queued work");
      state().store(coord::kSuspendRefused, std::memory_order_relaxed);
      return;
    }
    g_drained = true;
  }
  Step step = move_some(true, kTickBudgetNs);
  if (step == Step::kMore) return;
  g_drained = false;
  if (step == Step::kFailed) {
    GS_WARN("suspend failed; bringing back what moved");
    while (move_some(false, kTickBudgetNs) == Step::kMore) {
    }
    state().store(coord::kSuspendRefused, std::memory_order_relaxed);
    return;
  }
  state().store(coord::kSuspendSuspended, std::memory_order_relaxed);
}

// True once everything is back; false: more to move, or too little room.
bool resume_step() {
  if (move_some(false, kTickBudgetNs) != Step::kDone) return false;
  state().store(coord::kSuspendRunning, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool suspend_round() {
  std::uint64_t now = state().load(std::memory_order_relaxed);
  bool wanted = coord::job::suspend_requested();
  if (wanted) {
    // Shown as suspending for a tick before the work starts.
    if (now == coord::kSuspendRunning || now == coord::kSuspendResuming) {
      state().store(coord::kSuspendSuspending);  // a resume cut short: the rest moves
    }
    if (now == coord::kSuspendSuspending) suspend_step();
    return true;  // suspended or refused: nothing moves until the request changes
  }
  if (now == coord::kSuspendSuspended) {
    state().store(coord::kSuspendResuming);
    return true;
  }
  if (now == coord::kSuspendResuming) {
    resume_step();
    return true;
  }
  if (now == coord::kSuspendSuspending && g_drained) {  // withdrawn mid-way: back first
    g_drained = false;
    state().store(coord::kSuspendResuming);
    return true;
  }
  if (now != coord::kSuspendRunning) state().store(coord::kSuspendRunning);
  if (++g_ticks % 10 == 0 || g_ticks == 1) {
    g_counters.suspend_blockers.store(blockers(), std::memory_order_relaxed);
  }
  return false;  // running: the round goes on to the spill
}

void wait_while_suspended_slow() {
  for (;;) {
    std::uint64_t state = g_counters.suspend_state.load(std::memory_order_acquire);
    if (state == coord::kSuspendRunning || state == coord::kSuspendRefused) return;
    timespec step{0, 1'000'000};
    nanosleep(&step, nullptr);
  }
}

bool suspend_memory_away() {
  std::uint64_t now = state().load(std::memory_order_relaxed);
  return now == coord::kSuspendSuspended || now == coord::kSuspendResuming ||
         (now == coord::kSuspendSuspending && g_drained);
}

void suspend_before_retire() {
  MemoryWorkLock lock;  // the worker is not moving memory meanwhile
  std::uint64_t now = state().load(std::memory_order_relaxed);
  g_drained = false;
  if (now == coord::kSuspendRunning || now == coord::kSuspendRefused) {
    state().store(coord::kSuspendRunning, std::memory_order_relaxed);
    return;
  }
  GS_INFO("the coordinator went away while the job was suspended: resuming");
  for (;;) {  // launches stay held on the old page until everything fits again
    Step step = move_some(false, kTickBudgetNs);
    if (step == Step::kDone) break;
    if (step == Step::kFailed) {  // no room yet: another job holds it
      timespec wait{0, 100'000'000};
      nanosleep(&wait, nullptr);
    }
  }
  state().store(coord::kSuspendRunning, std::memory_order_relaxed);
}

}  // namespace gpushare::interpose
