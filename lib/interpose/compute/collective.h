// Collective kernels: how long each of a data-parallel job's ranks spends in
// them, which says which rank the others wait for (control_block.h,
// "Collectives"; docs/compute-sharing.md, "Which rank the others wait for").
//
// NCCL's all-reduce kernel spins on each rank's GPU from its start until
// every rank's has started, then moves the data: the slowest rank's kernel
// runs for the transfer alone, a rank that waits for it for its wait too.
// The host sees none of it (every rank's synchronisation returns when the
// collective ends), so the interposer times the kernels on the GPU: an
// event recorded on the kernel's stream just before the launch finishes
// when the stream's earlier work has (the kernel's start), one just after
// it when the kernel ends; the time between them is the span. Finished
// pairs are read at the next collective launch and at each
// synchronisation (never waited for), and summed per device into the
// telemetry counters.
//
// Which launches: those of functions whose names are NCCL's (collective_set.h),
// learnt when the program looks them up (hooks_launch.cc wraps the
// lookups). The launch path tests collective_function(f): one relaxed load
// in a process that never looked a collective up. A collective launch
// takes the slow path, which costs two event records and a query or two,
// a few microseconds against a collective's tens at least.
#pragma once

#include <cuda.h>

#include "interpose/compute/collective_set.h"

namespace gpushare::interpose {

extern CollectiveSet g_collective_functions;

/// Whether a launch of `f` must be timed as a collective.
inline bool collective_function(const void* f) {
  return g_collective_functions.count() != 0 && g_collective_functions.contains(f);
}

/// A looked-up function or kernel named `name` (null: ask the driver, when
/// it can tell: cuFuncGetName) may be a collective: learns it if so.
void learn_function(const void* handle, const char* name);
/// cuKernelGetFunction: the function of a known collective kernel is one.
void learn_kernel_function(const void* kernel, const void* function);

/// Around a collective's launch on `stream`: records the opening event
/// before and the closing one after (when the launch succeeded). Holds the
/// timing lock from one to the other (device >= 0).
struct CollectiveTicket {
  int device = -1;  ///< -1: no current device, nothing held
  int slot = -1;    ///< -1: not timed (no room, no events, another context)
};
CollectiveTicket collective_before(CUstream stream, bool per_thread);
void collective_after(const CollectiveTicket& ticket, CUstream stream, bool per_thread,
                      CUresult result);

/// Reads the finished pairs into the counters (at a synchronisation). One
/// load when no collective was ever timed.
void collective_reap();

}  // namespace gpushare::interpose
