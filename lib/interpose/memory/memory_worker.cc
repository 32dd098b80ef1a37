// The memory worker's thread and the migration notes (memory_worker.h).
#include "interpose/memory/memory_worker.h"

#include <pthread.h>
#include <string.h>

#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "interpose/memory/residency.h"
#include "interpose/memory/spill.h"
#include "interpose/memory/suspend.h"

namespace gpushare::interpose {

namespace {

// The wake: a flag under a mutex with a condition variable (the worker
// sleeps on it; a wake during a round leaves the flag set: one more round).
pthread_mutex_t g_wake_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER;
bool g_woken = false;
// 0: not started, 1: running, -1: could not start (the tick works itself).
int g_started = 0;
// Held for each round, and by MemoryWorkLock.
pthread_mutex_t g_work_mutex = PTHREAD_MUTEX_INITIALIZER;
// Nesting of MigrationNote (the worker's, or the client thread's while it
// holds MemoryWorkLock: never both at once).
int g_notes = 0;

void one_round() {
  pthread_mutex_lock(&g_work_mutex);
  memory_work();
  residency_refresh();
  pthread_mutex_unlock(&g_work_mutex);
}

void* worker(void*) {
  for (;;) {
    pthread_mutex_lock(&g_wake_mutex);
    while (!g_woken) pthread_cond_wait(&g_wake, &g_wake_mutex);
    g_woken = false;
    pthread_mutex_unlock(&g_wake_mutex);
    one_round();
  }
  return nullptr;
}

// A forked child has no worker (only the forking thread survives) and a
// copy of the locks as they were: start over.
void after_fork_in_child() {
  pthread_mutex_t fresh_mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
  memcpy(&g_wake_mutex, &fresh_mutex, sizeof fresh_mutex);
  memcpy(&g_work_mutex, &fresh_mutex, sizeof fresh_mutex);
  memcpy(&g_wake, &fresh_cond, sizeof fresh_cond);
  g_woken = false;
  g_started = 0;
  g_notes = 0;
  g_counters.migration.store(coord::kMigrationNone, std::memory_order_relaxed);
  for (auto& bytes : g_counters.migrating_bytes) bytes.store(0, std::memory_order_relaxed);
}

__attribute__((constructor)) void register_fork_handler() {
  pthread_atfork(nullptr, nullptr, &after_fork_in_child);
}

bool start() {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int error = pthread_create(&thread, &attributes, worker, nullptr);
  pthread_attr_destroy(&attributes);
  if (error != 0) {
    GS_WARN("cannot start the memory worker (%s): migrations run on the coordinator client's "
            "thread, whose heartbeat they hold back",
            strerror(error));
    return false;
  }
  return true;
}

}  // namespace

void memory_tick() {
  // Only the client thread ticks, so g_started needs no lock.
  if (g_started == 0) g_started = start() ? 1 : -1;
  if (g_started < 0) {
    one_round();
    return;
  }
  pthread_mutex_lock(&g_wake_mutex);
  g_woken = true;
  pthread_cond_signal(&g_wake);
  pthread_mutex_unlock(&g_wake_mutex);
}

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
