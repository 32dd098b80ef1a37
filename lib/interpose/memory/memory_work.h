// What the memory work shares, at the bottom of lib/interpose/memory: the
// lock that keeps the memory worker's rounds off (MemoryWorkLock), and the
// note that publishes a migration while it moves (MigrationNote). The
// spill and the suspend take them as they move memory; the worker
// (memory_worker.h), above them all, takes the lock for each round. So the
// movers need nothing of the worker, and the worker calls down into them.
//
// No libstdc++: pthreads and atomics only.
#pragma once

#include <cstdint>

namespace gpushare::interpose {

/// Holds the memory work off while it lives: the worker's round takes it,
/// and the client thread takes it when it stops with the memory away and
/// brings the memory back itself (suspend_before_retire).
class MemoryWorkLock {
 public:
  MemoryWorkLock();
  ~MemoryWorkLock();
  MemoryWorkLock(const MemoryWorkLock&) = delete;
  MemoryWorkLock& operator=(const MemoryWorkLock&) = delete;
};

/// Publishes a migration of `bytes` on `device` while it lives (control
/// block layout 6): the job's migration state (to the host or to the
/// device), its start, its bytes, so that the coordinator shows the job
/// spilling or restoring, with fresh telemetry all along. Notes nest (a
/// batch per device inside a spill round); the state clears when the last
/// one ends. Taken only under MemoryWorkLock (the worker's round, or the
/// client thread holding the lock): never from two threads at once.
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
