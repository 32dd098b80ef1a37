// Moving an opportunistic job's managed-backed memory toward its targets
// (the algorithm is in spill.h).
#include "interpose/memory/spill.h"

#include <time.h>

#include "coord/job/limits.h"
#include "coord/job/local_counters.h"
#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "interpose/memory/memory_work.h"
#include "interpose/memory/spill_batch.h"

namespace gpushare::interpose {

namespace {

// The tick's scratch: keys of the allocation table, largest-first order,
// what the planner sees of them, and which ones a batch moved. Only the
// client thread uses it (spill_tick is not reentrant).
constexpr std::size_t kMaxScanned = kMaxBatch;
std::uint64_t g_keys[kMaxScanned];
AllocationRecord g_records[kMaxScanned];
MigrationCandidate g_candidates[kMaxScanned];
std::size_t g_chosen[kMaxScanned];
std::size_t g_group[kMaxScanned];
bool g_moved[kMaxScanned];
bool g_done[kMaxScanned];

// Subtracts, never below zero (frees race with the tick).
void take(std::atomic<std::uint64_t>& counter, std::uint64_t bytes) {
  std::uint64_t held = counter.load(std::memory_order_relaxed);
  while (!counter.compare_exchange_weak(held, held > bytes ? held - bytes : 0,
                                        std::memory_order_relaxed)) {
  }
}

void move_counter(int device, std::uint64_t bytes, bool to_host) {
  std::atomic<std::uint64_t>& from =
      to_host ? g_counters.device_resident_bytes[device] : g_counters.host_resident_bytes[device];
  std::atomic<std::uint64_t>& to =
      to_host ? g_counters.host_resident_bytes[device] : g_counters.device_resident_bytes[device];
  take(from, bytes);
  to.fetch_add(bytes, std::memory_order_relaxed);
}

// Records that scratch entry `i` moved (unless it was freed meanwhile).
void note_moved(std::size_t i, bool to_host) {
  AllocationRecord before;
  if (!g_runtime.allocations.set_on_host(g_keys[i], to_host, &before)) return;
  if ((before.on_host != 0) != to_host)
    move_counter(g_records[i].device, g_records[i].bytes, to_host);
}

// Moves the `count` chosen scratch entries in batches, one per context
// (allocations of one device may belong to several), and logs the rate.
void move_chosen(std::size_t count, bool to_host) {
  if (count == 0) return;
  RealDriver& real = g_runtime.real;
  std::uint64_t started = monotonic_ns(), bytes = 0;
  std::size_t moved = 0;
  for (std::size_t i = 0; i < count; ++i) g_done[i] = false;
  for (std::size_t first = 0; first < count; ++first) {
    if (g_done[first]) continue;
    std::uint64_t context = g_records[g_chosen[first]].context;
    std::size_t group = 0;
    for (std::size_t i = first; i < count; ++i) {
      if (g_done[i] || g_records[g_chosen[i]].context != context) continue;
      g_done[i] = true;
      g_group[group++] = g_chosen[i];
    }
    if (context == 0 ||
        real.real_cuCtxSetCurrent(reinterpret_cast<CUcontext>(context)) != CUDA_SUCCESS) {
      continue;
    }
    std::uint64_t group_bytes = 0;
    for (std::size_t i = 0; i < group; ++i) group_bytes += g_records[g_group[i]].bytes;
    {
      // Shown while it moves (memory_work.h): the heartbeat goes on meanwhile.
      MigrationNote note(g_records[g_group[0]].device, group_bytes, to_host);
      run_batch(g_keys, g_records, g_candidates, g_group, group, to_host, g_moved);
    }
    real.real_cuCtxSetCurrent(nullptr);
    for (std::size_t i = 0; i < group; ++i) {
      std::size_t index = g_group[i];
      if (!g_moved[index]) {
        GS_DEBUG("moving %llu bytes at 0x%llx to the %s failed",
                 static_cast<unsigned long long>(g_records[index].bytes),
                 static_cast<unsigned long long>(g_keys[index]), to_host ? "host" : "device");
        continue;
      }
      note_moved(index, to_host);
      bytes += g_records[index].bytes;
      ++moved;
    }
  }
  std::uint64_t elapsed = monotonic_ns() - started;
  // What the bench reads as the transfer alone, and when it ended by the
  // wall clock, which other processes can compare with (bench/memory).
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  GS_INFO("%s %zu allocations, %llu bytes, in %.3f ms (%.2f GiB/s), ended at %lld.%03ld ms",
          to_host ? "spilled" : "restored", moved, static_cast<unsigned long long>(bytes),
          static_cast<double>(elapsed) / 1e6,
          elapsed > 0
              ? static_cast<double>(bytes) / 1073741824.0 / (static_cast<double>(elapsed) / 1e9)
              : 0.0,
          static_cast<long long>(wall.tv_sec) * 1000 + wall.tv_nsec / 1000000,
          (wall.tv_nsec / 1000) % 1000);
}

// The device's free memory as the driver sees it, in `context`.
bool device_room(std::uint64_t context, std::uint64_t* room) {
  RealDriver& real = g_runtime.real;
  if (context == 0 || real.real_cuMemGetInfo_v2 == nullptr ||
      real.real_cuCtxSetCurrent(reinterpret_cast<CUcontext>(context)) != CUDA_SUCCESS) {
    return false;
  }
  std::size_t free = 0, total = 0;
  CUresult result = real.real_cuMemGetInfo_v2(&free, &total);
  real.real_cuCtxSetCurrent(nullptr);
  *room = free;
  return result == CUDA_SUCCESS;
}

// The spillable records of `device` in the scratch arrays, largest first.
std::size_t collect(int device) {
  std::size_t total = g_runtime.allocations.keys(g_keys, kMaxScanned), count = 0;
  for (std::size_t i = 0; i < total; ++i) {
    AllocationRecord record;
    if (!g_runtime.allocations.find(g_keys[i], &record)) continue;
    if (record.spillable == 0 || record.device != device) continue;
    g_keys[count] = g_keys[i];
    g_records[count] = record;
    ++count;
  }
  // Insertion sort by size, descending: a few hundred allocations at most
  // in practice, and no libstdc++ here.
  for (std::size_t i = 1; i < count; ++i) {
    std::uint64_t key = g_keys[i];
    AllocationRecord record = g_records[i];
    std::size_t j = i;
    for (; j > 0 && g_records[j - 1].bytes < record.bytes; --j) {
      g_keys[j] = g_keys[j - 1];
      g_records[j] = g_records[j - 1];
    }
    g_keys[j] = key;
    g_records[j] = record;
  }
  for (std::size_t i = 0; i < count; ++i) {
    g_candidates[i] = MigrationCandidate{g_records[i].bytes, g_records[i].on_host != 0};
  }
  return count;
}

void settle_device(int device, std::uint64_t target) {
  std::uint64_t resident = g_counters.device_resident_bytes[device].load(std::memory_order_relaxed);
  std::uint64_t on_host = g_counters.host_resident_bytes[device].load(std::memory_order_relaxed);
  if (resident <= target && (on_host == 0 || resident == target)) return;
  std::size_t count = collect(device);
  if (resident > target) {  // spill, largest first
    move_chosen(choose_spill(g_candidates, count, resident, target, g_chosen), true);
    return;
  }
  // Restore what fits under the target and in the device's free memory
  // now: the arbiter knows only registered jobs (not a production job that
  // has not registered again after a coordinator restart, nor memory the
  // driver has yet to take back from a killed process), and a prefetch to a
  // full device would leave pages on the host while we count them back.
  std::uint64_t room = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!g_candidates[i].on_host) continue;
    if (!device_room(g_records[i].context, &room)) return;
    move_chosen(choose_restore(g_candidates, count, resident, target, room, g_chosen), false);
    return;
  }
}

}  // namespace

void note_residency(std::uint64_t key, bool on_host) {
  AllocationRecord before;
  if (!g_runtime.allocations.set_on_host(key, on_host, &before)) return;
  if (before.spillable == 0 || before.device < 0 || before.device >= kMaxDevices) return;
  if ((before.on_host != 0) != on_host) move_counter(before.device, before.bytes, on_host);
}

bool managed_backing() {
  const Runtime& rt = g_runtime;
  return coord::job::qos() == kQosOpportunistic && rt.settings.spill &&
         rt.real.real_cuMemAllocManaged != nullptr && rt.real.real_cuMemAdvise != nullptr &&
         rt.real.real_cuMemPrefetchAsync != nullptr && rt.real.real_cuCtxSetCurrent != nullptr &&
         rt.real.real_cuStreamSynchronize != nullptr;
}

CUresult allocate_managed_backed(CUdeviceptr* pointer, std::size_t bytes, int device,
                                 bool* on_host) {
  RealDriver& real = g_runtime.real;
  // Where it can live now: the device when its free memory holds it (the
  // driver would otherwise place its pages on the host while we counted
  // them on the device), else the host.
  std::size_t free = 0, total = 0;
  *on_host = real.real_cuMemGetInfo_v2 != nullptr &&
             real.real_cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS && free < bytes;
  CUresult result = real.real_cuMemAllocManaged(pointer, bytes, CU_MEM_ATTACH_GLOBAL);
  if (result != CUDA_SUCCESS) return result;
  // Advice failing (a driver without it) leaves ordinary managed memory.
  real.real_cuMemAdvise(*pointer, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                        *on_host ? CU_DEVICE_CPU : device);
  if (*on_host) real.real_cuMemPrefetchAsync(*pointer, bytes, CU_DEVICE_CPU, 0);
  (*on_host ? g_counters.host_resident_bytes : g_counters.device_resident_bytes)[device].fetch_add(
      bytes, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

std::uint64_t spillable_limit(int device) {
  std::uint64_t start = coord::job::start_mem_limit(device), now = effective_limit(device);
  if (start == kNoLimit || now == kNoLimit) return kNoLimit;
  return start > now ? start : now;
}

void spill_forget(const AllocationRecord& record) {
  if (record.spillable == 0 || record.device < 0 || record.device >= kMaxDevices) return;
  take(record.on_host != 0 ? g_counters.host_resident_bytes[record.device]
                           : g_counters.device_resident_bytes[record.device],
       record.bytes);
}

void notice_freed(std::uint64_t bytes) {
  constexpr std::uint64_t kNoticeBytes = 2ull << 20;
  if (bytes < kNoticeBytes || !coord::job::registered() ||
      coord::job::qos() != kQosProduction) {
    return;
  }
  coord::job::wake_client();
}

bool may_wait_for_room(int device) {
  return device >= 0 && device < kMaxDevices && coord::job::registered() &&
         coord::job::qos() == kQosProduction;
}

std::uint64_t request_room(int device, std::uint64_t reserved, std::uint64_t unreserved,
                           bool wanted) {
  if (!wanted) {
    take(g_counters.mem_request_bytes[device], unreserved);
    take(g_counters.mem_waiting_bytes[device], reserved);
    return 0;
  }
  g_counters.mem_request_bytes[device].fetch_add(unreserved, std::memory_order_relaxed);
  g_counters.mem_waiting_bytes[device].fetch_add(reserved, std::memory_order_relaxed);
  // After the bytes (release): the client thread copies them with the number.
  std::uint64_t seq =
      g_counters.mem_request_seq[device].fetch_add(1, std::memory_order_release) + 1;
  GS_INFO(
      "an allocation waits for room on device %d: %llu bytes reserved, %llu more asked (wait %llu)",
      device, static_cast<unsigned long long>(reserved),
      static_cast<unsigned long long>(unreserved), static_cast<unsigned long long>(seq));
  coord::job::wake_client();  // the coordinator hears of it now, not at its next tick
  return seq;
}

bool wait_for_room_step(int device, std::uint64_t seq, std::uint64_t deadline_ns) {
  if (monotonic_ns() >= deadline_ns) return false;
  if (coord::job::mem_refused_seq(device) == seq) return false;  // no room coming
  timespec step{0, 1000000};
  nanosleep(&step, nullptr);
  return true;
}

void spill_tick() {
  drain_deferred_frees();
  if (!managed_backing()) return;
  int count = g_runtime.device_count.load(std::memory_order_acquire);
  for (int device = 0; device < count && device < kMaxDevices; ++device) {
    settle_device(device, coord::job::device_resident_target(device));
  }
}

CUresult move_residency(std::uint64_t key, const AllocationRecord& record, bool to_host) {
  RealDriver& real = g_runtime.real;
  CUdevice target = to_host ? CU_DEVICE_CPU : static_cast<CUdevice>(record.device);
  CUdeviceptr pointer = static_cast<CUdeviceptr>(key);
  CUresult result =
      real.real_cuMemAdvise(pointer, record.bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, target);
  if (result == CUDA_SUCCESS)
    result = real.real_cuMemPrefetchAsync(pointer, record.bytes, target, 0);
  if (result == CUDA_SUCCESS) result = real.real_cuStreamSynchronize(0);
  return result;
}

}  // namespace gpushare::interpose
