// Launch hooks: the hot path. Budget: 25 ns added per launch
// (bench/interpose). before_launch() is one relaxed atomic increment on
// process-local memory and one load of the paused flag in the shared
// limits page; then a call through a pointer resolved at load time. No
// syscall, lock, getenv, IPC or NVML here (a paused job waits on a futex).
#include "interpose/hooks.h"

using namespace gpushare::interpose;

CUresult gs_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                           CUstream stream, void** params, void** extra) {
  GS_REAL(cuLaunchKernel);
  before_launch();
  return real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

CUresult gs_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int shared, CUstream stream, void** params,
                                void** extra) {
  GS_REAL(cuLaunchKernel_ptsz);
  before_launch();
  return real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

CUresult gs_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                             void** extra) {
  GS_REAL(cuLaunchKernelEx);
  before_launch();
  return real(config, f, params, extra);
}

CUresult gs_cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                  void** extra) {
  GS_REAL(cuLaunchKernelEx_ptsz);
  before_launch();
  return real(config, f, params, extra);
}

CUresult gs_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                      unsigned int gz, unsigned int bx, unsigned int by,
                                      unsigned int bz, unsigned int shared, CUstream stream,
                                      void** params) {
  GS_REAL(cuLaunchCooperativeKernel);
  before_launch();
  return real(f, gx, gy, gz, bx, by, bz, shared, stream, params);
}

CUresult gs_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                           unsigned int gz, unsigned int bx, unsigned int by,
                                           unsigned int bz, unsigned int shared, CUstream stream,
                                           void** params) {
  GS_REAL(cuLaunchCooperativeKernel_ptsz);
  before_launch();
  return real(f, gx, gy, gz, bx, by, bz, shared, stream, params);
}

CUresult gs_cuGraphLaunch(CUgraphExec graph, CUstream stream) {
  GS_REAL(cuGraphLaunch);
  before_launch();
  return real(graph, stream);
}

CUresult gs_cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream) {
  GS_REAL(cuGraphLaunch_ptsz);
  before_launch();
  return real(graph, stream);
}
