// The memory work's lock and migration notes (memory_work.h).
#include "interpose/memory/memory_work.h"

#include <pthread.h>
#include <string.h>

#include "interpose/core/clock.h"
#include "interpose/core/runtime.h"

namespace gpushare::interpose {

namespace {

// Held for each round of the worker, and by MemoryWorkLock.
pthread_mutex_t g_work_mutex = PTHREAD_MUTEX_INITIALIZER;
// Nesting of MigrationNote (the worker's, or the client thread's while it
// holds MemoryWorkLock: never both at once).
int g_notes = 0;

// A forked child has a copy of the lock as it was (perhaps held by a thread
// that did not survive) and of a migration under way that is not its own:
// start over.
void after_fork_in_child() {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&g_work_mutex, &fresh, sizeof fresh);
  g_notes = 0;
  g_counters.migration.store(coord::kMigrationNone, std::memory_order_relaxed);
  for (auto& bytes : g_counters.migrating_bytes) bytes.store(0, std::memory_order_relaxed);
}

__attribute__((constructor)) void register_fork_handler() {
  pthread_atfork(nullptr, nullptr, &after_fork_in_child);
}

}  // namespace

MemoryWorkLock::MemoryWorkLock() { pthread_mutex_lock(&g_work_mutex); }
MemoryWorkLock::~MemoryWorkLock() { pthread_mutex_unlock(&g_work_mutex); }

MigrationNote::MigrationNote(int device, std::uint64_t bytes, bool to_host)
    : device_(device), bytes_(bytes) {
  if (device_ < 0 || device_ >= kMaxDevices) return;
  g_counters.migrating_bytes[device_].fetch_add(bytes_, std::memory_order_relaxed);
  if (g_notes++ == 0) g_counters.migration_started_ns.store(monotonic_ns(), std::memory_order_relaxed);
  // Release: a reader that sees the state sees the bytes and the start.
  g_counters.migration.store(to_host ? coord::kMigrationToHost : coord::kMigrationToDevice,
                             std::memory_order_release);
}

MigrationNote::~MigrationNote() {
  if (device_ < 0 || device_ >= kMaxDevices) return;
  std::atomic<std::uint64_t>& bytes = g_counters.migrating_bytes[device_];
  std::uint64_t held = bytes.load(std::memory_order_relaxed);
  while (!bytes.compare_exchange_weak(held, held > bytes_ ? held - bytes_ : 0,
                                      std::memory_order_relaxed)) {
  }
  if (--g_notes == 0) g_counters.migration.store(coord::kMigrationNone, std::memory_order_release);
}

}  // namespace gpushare::interpose
