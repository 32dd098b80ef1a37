// The memory worker: the thread on which the job's memory work runs.
//
// The spill, suspend and resume move memory by prefetches (or copies) that
// the thread waits for: moving 14 GiB over a busy link takes seconds. They
// used to run on the coordinator client's thread, which also copies the
// telemetry and its heartbeat every 10 ms; a long migration held both back,
// and the coordinator saw the job stale, with its memory still counted on
// the device, exactly while production waited for it. Now the client
// thread's tick (LocalCounters::memory_tick) only wakes this worker, which
// runs one round of the work and sleeps until the next wake. A round, here
// in memory_worker.cc: the suspend's step when a suspend or resume is
// asked for or under way (suspend.h), else the spill's step toward each
// device's target (spill.h); then the driver's view of residency
// (residency.h). The tick
// comes every 10 ms and at once when the coordinator changes a target, so
// the work starts as soon as it did; a wake that comes while a round runs
// makes one more round after it, never a queue.
//
// While a batch moves, MigrationNote (memory_work.h) publishes it
// (migration, its bytes, when it began: control_block.h layout 6), so the
// coordinator shows the job spilling or restoring, with fresh telemetry all
// along.
//
// The worker starts at the first tick (on the client thread, whose signal
// mask, all blocked, it inherits) and again in a forked child that starts
// a client of its own. If it cannot start, the tick runs the work itself,
// as before. MemoryWorkLock (memory_work.h) excludes the work: each round
// takes it, and the client thread takes it when it stops with the memory
// away and brings the memory back itself (suspend_before_retire).
//
// The worker stands on top of the room: it calls down into the suspend,
// the spill and the residency, which share only memory_work.h with it.
//
// No libstdc++: pthreads and atomics only.
#pragma once

namespace gpushare::interpose {

/// The client thread's tick: wakes the memory worker (starting it the
/// first time); returns at once.
void memory_tick();

}  // namespace gpushare::interpose
