// The memory worker's thread and its round (memory_worker.h).
#include "interpose/memory/memory_worker.h"

#include <pthread.h>
#include <string.h>

#include "interpose/core/log.h"
#include "interpose/core/runtime.h"
#include "interpose/memory/memory_work.h"
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

// One round of the memory work, under MemoryWorkLock. The suspend comes
// first: while one is asked for, under way or being undone, it alone moves
// memory; otherwise the spill moves each device toward its target. Then
// the driver's own evictions are read (residency.h), after what this round
// moved.
void one_round() {
  MemoryWorkLock lock;
  if (!suspend_round()) spill_tick();
  residency_refresh();
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
  // (memory_work.cc starts its lock and notes over in the same way.)
  pthread_mutex_t fresh_mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
  memcpy(&g_wake_mutex, &fresh_mutex, sizeof fresh_mutex);
  memcpy(&g_wake, &fresh_cond, sizeof fresh_cond);
  g_woken = false;
  g_started = 0;
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

}  // namespace gpushare::interpose
