// Publishing the job's memory residency and migrations (control block
// layout 6): what the client thread copies into the telemetry page.
//
// The interposer counts where it put the job's managed memory
// (device_resident_bytes, host_resident_bytes) and, apart, the bytes the
// driver has evicted by itself since (evicted_bytes, read from the driver
// by interpose/memory/residency.h). The page shows where the memory is:
// the evicted bytes leave the device's count for the host's. Kept apart
// in the job so that the spill decides on what it placed (a page the
// driver evicted comes back by itself when the program touches it, as it
// prefers the device) while the coordinator sees the truth.
//
// No libstdc++: header-only, atomics and arithmetic.
#pragma once

#include "coord/contract/control_block.h"
#include "coord/job/local_counters.h"

namespace gpushare::coord::job {

/// Copies device `i`'s residency, the driver's evictions applied.
inline void copy_residency(const LocalCounters& c, int i, TelemetryPage* page) {
  std::uint64_t device = c.device_resident_bytes[i].load(std::memory_order_relaxed);
  std::uint64_t host = c.host_resident_bytes[i].load(std::memory_order_relaxed);
  std::uint64_t evicted = c.evicted_bytes[i].load(std::memory_order_relaxed);
  if (evicted > device) evicted = device;  // a free raced the reading: never below zero
  page->device_resident_bytes[i].store(device - evicted, std::memory_order_relaxed);
  page->host_resident_bytes[i].store(host + evicted < host ? kNoLimit : host + evicted,
                                     std::memory_order_relaxed);
  page->evicted_bytes[i].store(evicted, std::memory_order_relaxed);
  page->migrating_bytes[i].store(c.migrating_bytes[i].load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
}

/// Copies the migration under way (kMigration*) and when it began.
inline void copy_migration(const LocalCounters& c, TelemetryPage* page) {
  page->migration_started_ns.store(c.migration_started_ns.load(std::memory_order_relaxed),
                                   std::memory_order_relaxed);
  page->migration.store(c.migration.load(std::memory_order_acquire), std::memory_order_relaxed);
}

}  // namespace gpushare::coord::job
