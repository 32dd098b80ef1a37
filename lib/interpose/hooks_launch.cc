// Launch hooks: the hot path. Budget: at most 10 ns added per launch when
// the job is neither paused nor throttled (bench/interpose). before_launch()
// is one relaxed increment of a process-local counter and two relaxed loads
// of one cache line of the shared limits page (paused, throttle); then a
// call through a pointer resolved at load time. No syscall, lock, getenv,
// IPC or NVML there. Only a gated launch takes the slow path (throttle.h):
// it may wait, and is tracked with events.
#include "interpose/hooks.h"
#include "interpose/throttle.h"

using namespace gpushare::interpose;

// The call to the real entry point, through the gate when gated.
#define GS_LAUNCH(stream, per_thread, call)                \
  if (!before_launch()) return call;                       \
  LaunchTicket ticket = throttle_gate(stream, per_thread); \
  CUresult result = call;                                  \
  throttle_after(&ticket, result);                         \
  return result

namespace {
CUstream config_stream(const CUlaunchConfig* config) {
  return config != nullptr ? config->hStream : nullptr;
}
}  // namespace

CUresult gs_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                           CUstream stream, void** params, void** extra) {
  GS_REAL(cuLaunchKernel);
  GS_LAUNCH(stream, false, real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra));
}

CUresult gs_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int shared, CUstream stream, void** params, void** extra) {
  GS_REAL(cuLaunchKernel_ptsz);
  GS_LAUNCH(stream, true, real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra));
}

CUresult gs_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                             void** extra) {
  GS_REAL(cuLaunchKernelEx);
  GS_LAUNCH(config_stream(config), false, real(config, f, params, extra));
}

CUresult gs_cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                  void** extra) {
  GS_REAL(cuLaunchKernelEx_ptsz);
  GS_LAUNCH(config_stream(config), true, real(config, f, params, extra));
}

CUresult gs_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                      unsigned int gz, unsigned int bx, unsigned int by,
                                      unsigned int bz, unsigned int shared, CUstream stream,
                                      void** params) {
  GS_REAL(cuLaunchCooperativeKernel);
  GS_LAUNCH(stream, false, real(f, gx, gy, gz, bx, by, bz, shared, stream, params));
}

CUresult gs_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                           unsigned int gz, unsigned int bx, unsigned int by,
                                           unsigned int bz, unsigned int shared, CUstream stream,
                                           void** params) {
  GS_REAL(cuLaunchCooperativeKernel_ptsz);
  GS_LAUNCH(stream, true, real(f, gx, gy, gz, bx, by, bz, shared, stream, params));
}

CUresult gs_cuGraphLaunch(CUgraphExec graph, CUstream stream) {
  GS_REAL(cuGraphLaunch);
  GS_LAUNCH(stream, false, real(graph, stream));
}

CUresult gs_cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream) {
  GS_REAL(cuGraphLaunch_ptsz);
  GS_LAUNCH(stream, true, real(graph, stream));
}
