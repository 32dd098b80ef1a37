// Synchronisation hooks: the progress signal (control_block.h). A
// synchronising call that returns after at least one launch since the
// previous one is an iteration boundary: training loops synchronise once
// per step (a loss read back, an event waited on), so boundaries count
// steps, and their times give the step period the coordinator protects.
// The cost, after the real call (which waits for the GPU anyway): the sum
// of the per-thread launch counters, an exchange, and at a boundary an
// increment and a clock read (vDSO).
#include <time.h>

#include "coord/job/yield.h"
#include "interpose/core/clock.h"
#include "interpose/hooks/hooks.h"
#include "interpose/memory/suspend.h"
#include "interpose/compute/collective.h"
#include "interpose/compute/throttle.h"

using namespace gpushare::interpose;

namespace {

std::atomic<std::uint64_t> g_launches_at_last_sync{0};

void after_sync(CUresult result) {
  if (result != CUDA_SUCCESS || g_runtime.settings.disabled) return;
  // The work waited for is finished: opportunistic jobs may use the GPU
  // (a job with work left on other streams is taken as idle too; the
  // loop's share still guards its speed).
  gpushare::coord::job::yield_clear_busy();
  std::uint64_t launches = launches_total();
  if (g_launches_at_last_sync.exchange(launches, std::memory_order_relaxed) != launches) {
    g_counters.kernels_completed.store(launches, std::memory_order_relaxed);
    g_counters.last_iteration_ns.store(gpushare::interpose::monotonic_ns(),
                                       std::memory_order_relaxed);
    g_counters.iterations.fetch_add(1, std::memory_order_relaxed);
  }
  throttle_reap_all();
  collective_reap();  // the collectives' spans (compute/collective.h)
}

CUresult observed(CUresult result) {
  after_sync(result);
  return result;
}

}  // namespace

CUresult gs_cuCtxSynchronize() {
  GS_REAL(cuCtxSynchronize);
  throttle_before_sync();  // times the burst's tail (throttle.h)
  gpushare::coord::job::yield_before_sync();  // the queue's tail (yield.h)
  return observed(real());
}

CUresult gs_cuCtxSynchronize_v2(CUcontext context) {
  GS_REAL(cuCtxSynchronize_v2);
  throttle_before_sync();  // times the burst's tail (throttle.h)
  gpushare::coord::job::yield_before_sync();  // the queue's tail (yield.h)
  return observed(real(context));
}

CUresult gs_cuStreamSynchronize(CUstream stream) {
  GS_REAL(cuStreamSynchronize);
  throttle_before_sync();  // times the burst's tail (throttle.h)
  gpushare::coord::job::yield_before_sync();  // the queue's tail (yield.h)
  return observed(real(stream));
}

CUresult gs_cuStreamSynchronize_ptsz(CUstream stream) {
  GS_REAL(cuStreamSynchronize_ptsz);
  throttle_before_sync();  // times the burst's tail (throttle.h)
  gpushare::coord::job::yield_before_sync();  // the queue's tail (yield.h)
  return observed(real(stream));
}

CUresult gs_cuEventSynchronize(CUevent event) {
  GS_REAL(cuEventSynchronize);
  throttle_before_sync();  // times the burst's tail (throttle.h)
  gpushare::coord::job::yield_before_sync();  // the queue's tail (yield.h)
  return observed(real(event));
}

CUresult gs_cuMemcpyDtoH_v2(void* host, CUdeviceptr device, size_t bytes) {
  GS_REAL(cuMemcpyDtoH_v2);
  hold_while_suspended();  // suspend.h
  throttle_before_sync();  // times the burst's tail (throttle.h)
  gpushare::coord::job::yield_before_sync();  // the queue's tail (yield.h)
  return observed(real(host, device, bytes));
}

CUresult gs_cuMemcpyDtoH_v2_ptds(void* host, CUdeviceptr device, size_t bytes) {
  GS_REAL(cuMemcpyDtoH_v2_ptds);
  hold_while_suspended();  // suspend.h
  throttle_before_sync();  // times the burst's tail (throttle.h)
  gpushare::coord::job::yield_before_sync();  // the queue's tail (yield.h)
  return observed(real(host, device, bytes));
}
