// Residency as the driver sees it (the reasoning is in residency.h).
#include "interpose/memory/residency.h"

#include <cuda.h>

#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "interpose/driver/real_dlsym.h"
#include "interpose/memory/spill.h"
#include "interpose/memory/suspend.h"

namespace gpushare::interpose {

namespace {

using RangeAttribute = CUresult (*)(void*, size_t, CUmem_range_attribute, CUdeviceptr, size_t);

constexpr std::uint64_t kRefreshPeriodNs = 100'000'000;
constexpr std::size_t kMaxRead = 4096;  // allocations read per refresh

// Memory worker only.
std::uint64_t g_last_refresh_ns = 0;
bool g_nvml_counts_managed[kMaxDevices] = {};
std::uint64_t g_keys[kMaxRead];
RangeAttribute g_range_attribute = nullptr;
bool g_resolved = false;

RangeAttribute range_attribute() {
  if (!g_resolved && g_runtime.libcuda != nullptr) {
    g_range_attribute =
        reinterpret_cast<RangeAttribute>(real_dlsym(g_runtime.libcuda, "cuMemRangeGetAttribute"));
    g_resolved = true;
  }
  return g_range_attribute;
}

// Where the driver says the program last prefetched `key`; false when it
// cannot say or the program never prefetched all of it. The preferred
// location is no evidence: advice moves nothing by itself, and pages the
// program advised away that did leave show in NVML's figure
// (read_evictions).
bool program_location(std::uint64_t key, const AllocationRecord& record, bool* on_host) {
  RangeAttribute query = range_attribute();
  RealDriver& real = g_runtime.real;
  if (query == nullptr || record.context == 0 ||
      real.real_cuCtxSetCurrent(reinterpret_cast<CUcontext>(record.context)) != CUDA_SUCCESS) {
    return false;
  }
  int last = CU_DEVICE_INVALID;
  if (query(&last, sizeof last, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
            static_cast<CUdeviceptr>(key), record.bytes) != CUDA_SUCCESS ||
      last == CU_DEVICE_INVALID) {
    return false;
  }
  *on_host = last == CU_DEVICE_CPU;
  return true;
}

// The program's own managed allocations, where the interposer does not
// place memory (a production job, or the spill off): counted where the
// program put them.
void read_program_locations() {
  if (managed_backing()) return;
  std::size_t count = g_runtime.allocations.keys(g_keys, kMaxRead);
  bool switched = false;
  for (std::size_t i = 0; i < count; ++i) {
    AllocationRecord record;
    if (!g_runtime.allocations.find(g_keys[i], &record)) continue;
    if (record.spillable == 0 || record.suspended != 0) continue;
    bool on_host = false;
    switched = true;
    if (program_location(g_keys[i], record, &on_host)) note_residency(g_keys[i], on_host);
  }
  if (switched) g_runtime.real.real_cuCtxSetCurrent(nullptr);
}

// The driver's evictions of what the interposer placed on each device.
void read_evictions() {
  int devices = g_runtime.device_count.load(std::memory_order_acquire);
  for (int d = 0; d < devices && d < kMaxDevices; ++d) {
    std::uint64_t placed = g_counters.device_resident_bytes[d].load(std::memory_order_relaxed);
    std::uint64_t host = g_counters.host_resident_bytes[d].load(std::memory_order_relaxed);
    std::uint64_t used = 0;
    if (placed < kMinEvictedBytes || !process_device_usage(d, &used)) {
      g_counters.evicted_bytes[d].store(0, std::memory_order_relaxed);
      continue;
    }
    // What the process holds on the device that is not managed memory.
    std::uint64_t own = g_runtime.devices[d].budget.own();
    std::uint64_t away = host + placed +
                         g_counters.suspended_bytes[d].load(std::memory_order_relaxed);
    std::uint64_t other = own > away ? own - away : 0;
    std::uint64_t managed_on_device = used > other ? used - other : 0;
    if (!g_nvml_counts_managed[d]) {
      // Seen to count managed memory: most of what was placed shows.
      if (managed_on_device < placed / 2 || managed_on_device < kMinEvictedBytes) {
        g_counters.evicted_bytes[d].store(0, std::memory_order_relaxed);
        continue;
      }
      g_nvml_counts_managed[d] = true;
      GS_DEBUG("device %d: NVML's per-process figure counts managed memory; evictions are read "
               "from it",
               d);
    }
    std::uint64_t evicted = placed > managed_on_device ? placed - managed_on_device : 0;
    if (evicted < kMinEvictedBytes) evicted = 0;
    std::uint64_t before = g_counters.evicted_bytes[d].exchange(evicted, std::memory_order_relaxed);
    if (before != evicted) {
      GS_INFO("device %d: the driver holds %llu of the %llu managed bytes placed on the device "
              "on the host",
              d, static_cast<unsigned long long>(evicted), static_cast<unsigned long long>(placed));
    }
  }
}

}  // namespace

void residency_refresh() {
  std::uint64_t now = monotonic_ns();
  if (now - g_last_refresh_ns < kRefreshPeriodNs) return;
  g_last_refresh_ns = now;
  // A suspend's memory is where the suspend put it: nothing to read.
  if (suspend_memory_away()) return;
  read_program_locations();
  read_evictions();
}

void count_program_managed(std::uint64_t key) {
  AllocationRecord record;
  if (!g_runtime.allocations.find(key, &record) || record.device < 0 ||
      record.device >= kMaxDevices) {
    return;
  }
  // Counted before it is marked, so that a free racing with this takes
  // back what was added (spill_forget), never more.
  std::atomic<std::uint64_t>& resident = g_counters.device_resident_bytes[record.device];
  resident.fetch_add(record.bytes, std::memory_order_relaxed);
  record.spillable = 1;
  record.on_host = 0;
  if (!g_runtime.allocations.replace(key, record)) {  // freed meanwhile
    resident.fetch_sub(record.bytes, std::memory_order_relaxed);
  }
}

}  // namespace gpushare::interpose
