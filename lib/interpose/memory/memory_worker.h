// The memory worker: the thread on which the job's memory work runs.
//
// The spill, suspend and resume move memory by prefetches (or copies) that
// the thread waits for: moving 14 GiB over a busy link takes seconds. They
// used to run on the coordinator client's thread, which also copies the
// telemetry and its heartbeat every 10 ms; a long migration held both back,
// and the coordinator saw the job stale, with its memory still counted on
// the device, exactly while production waited for it. Now the client
// thread's tick (LocalCounters::memory_tick) only wakes this worker, which
// runs one round of the work (suspend.h memory_work, then the driver's
// view of residency, residency.h) and sleeps until the next wake. The tick
// comes every 10 ms and at once when the coordinator changes a target, so
// the work starts as soon as it did; a wake that comes while a round runs
// makes one more round after it, never a queue.
//
// While a batch moves, MigrationNote publishes it (migration, its bytes,
// when it began: control_block.h layout 6), so the coordinator shows the
// job spilling or restoring, with fresh telemetry all along.
//
// The worker starts at the first tick (on the client thread, whose signal
// mask, all blocked, it inherits) and again in a forked child that starts
// a client of its own. If it cannot start, the tick runs the work itself,
// as before. MemoryWorkLock excludes the work: the client thread takes it
// when it stops with the memory away and brings the memory back itself
// (suspend_before_retire).
//
// No libstdc++: pthreads and atomics only.
#pragma once

#include <cstdint>

namespace gpushare::interpose {

/// The client thread's tick: wakes the memory worker (starting it the
/// first time); returns at once.
void memory_tick();

/// Holds the memory work off while it lives (the worker waits).
class MemoryWorkLock {
 public:
  MemoryWorkLock();
  ~MemoryWorkLock();
  MemoryWorkLock(const MemoryWorkLock&) = delete;
  MemoryWorkLock& operator=(const MemoryWorkLock&) = delete;
};

/// Publishes a migration of `bytes` on `device` while it lives: the job's
/// migration state (to the host or to the device), its start, its bytes.
/// Notes nest (a batch per device inside a spill round); the state clears
/// when the last one ends.
class MigrationNote {
 public:
  MigrationNote(int device, std::uint64_t bytes, bool to_host);
  ~MigrationNote();
  MigrationNote(const MigrationNote&) = delete;
  MigrationNote& operator=(const MigrationNote&) = delete;

 private:
  int device_;
  std::uint64_t bytes_;
};

}  // namespace gpushare::interpose
