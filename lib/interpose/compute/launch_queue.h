// The launch queue (GPUSHARE_LAUNCH_QUEUE=on, gpushare-run --launch-queue):
// a launch the gate would hold is copied here and the call returns at once,
// so that the program goes on to its next operator while production has the
// GPU; a thread of ours submits the queued launches in order, each through
// the gate as the launching thread would have (throttle.h).
//
// Why. A framework driven by Python dispatches an operator only when the
// previous launch call has returned. Held in the gate, its Python waits
// with the GPU, and when production's gap opens it has nothing ready: it
// fills the gap at Python's pace. On the simulator, a GPT-2 stand-in that
// behaves so (gpushare-workload --pace host) harvests 0.64-0.74 of what it
// gets beside the same production job without gpushare, and 0.78-0.90
// with this queue (docs/colocation.md, "A stand-in paced by its host").
//
// Order is the whole difficulty. A queued launch has not reached the driver,
// so anything the process asks of the driver after it must wait until the
// queue is empty: every wrapper drains it first (GS_REAL, hooks.h), and so
// does a launch that cannot be queued. The interposer wraps the entry points
// that put work on a stream, wait for it or query it, free memory, and
// change what a queued kernel would see (hooks.def, "stream order"). An
// entry point it does not wrap is not ordered, which is why the queue is
// off by default: a program that calls one (an array copy, an external
// semaphore, a batched copy of CUDA 12.8) with launches queued could see
// that call overtake them.
//
// What is queued: cuLaunchKernel (not its per-thread-default-stream twin)
// on the legacy stream or a stream of the caller's, not being captured,
// whose arguments can be sized (cuFuncGetParamInfo or cuKernelGetParamInfo,
// CUDA 12.4 and later; or a packed CU_LAUNCH_PARAM_BUFFER_POINTER buffer),
// at most kQueueArgBytes of them. Everything else is held as before.
// Errors: a queued launch's error is returned by the process's next driver
// call that drains the queue, as an asynchronous error is. Bounds: 4096
// launches and 4 MiB of arguments; beyond, the launching thread waits for
// room. At exit, launches still queued are dropped (a program that needs
// its work synchronises first).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

namespace gpushare::interpose {

/// Launches queued and not yet submitted: the drain's fast test.
extern std::atomic<long> g_launch_queue_depth;

inline bool launch_queue_busy() {
  return g_launch_queue_depth.load(std::memory_order_acquire) > 0;
}

/// Queues a cuLaunchKernel; false when it cannot be queued (the caller
/// gates it as before, after draining).
bool launch_queue_push(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                       unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                       CUstream stream, void** params, void** extra);

/// Waits until every queued launch has been submitted. Returns the first
/// error a queued launch met since the last drain (CUDA_SUCCESS if none).
/// On the submitting thread it returns at once.
CUresult launch_queue_drain();

/// Counters for the compute trace and tests: launches queued, and gated
/// launches that could not be (held as before).
std::uint64_t launch_queue_queued_total();
std::uint64_t launch_queue_refused_total();

/// In a forked child: the parent's queue and thread are not ours.
void launch_queue_after_fork();

}  // namespace gpushare::interpose
