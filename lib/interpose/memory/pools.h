// What the memory hooks share with the pool hooks (hooks_pool.cc): frees
// of pool allocations by any free entry point, and the ordinary free.
#pragma once

#include <cstdint>

#include "interpose/core/runtime.h"
#include "interpose/memory/spill.h"

namespace gpushare::interpose {

/// Takes the record of an allocation made from a pool; false when
/// `pointer` is not one (the caller frees it as an ordinary allocation).
bool pool_take(std::uint64_t pointer, AllocationRecord* record);
/// After the driver's free of a pool allocation: settles its pool, or puts
/// the record back when the free failed.
void pool_after_free(std::uint64_t pointer, const AllocationRecord& record, bool freed);

/// Frees an ordinary charged allocation with `free_it` and gives its charge
/// back once the driver's free succeeded; memory we never charged passes
/// through.
template <class Free>
CUresult free_charged(std::uint64_t pointer, Free free_it) {
  AllocationRecord record{0, -1, 0};
  if (!g_runtime.allocations.erase(pointer, &record)) return free_it();
  CUresult result = free_it();
  if (result != CUDA_SUCCESS) {
    g_runtime.allocations.insert(pointer, record);  // still allocated
  } else if (record.device >= 0 &&
             record.device < g_runtime.device_count.load(std::memory_order_acquire)) {
    g_runtime.devices[record.device].budget.release(record.bytes);
    spill_forget(record);
  }
  return result;
}

}  // namespace gpushare::interpose
