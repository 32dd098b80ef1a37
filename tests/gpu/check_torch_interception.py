#!/usr/bin/env python3
"""torch-interception: PyTorch under gpushare-run --mem-limit 4GiB.

Runs torch_interception_job.py under gpushare-run with the interposer's
debug log and passes when:
  - torch.cuda.mem_get_info() reports a total of exactly 4 GiB;
  - NVML agrees: in the job (pynvml, or libnvidia-ml.so.1 directly) and
    nvidia-smi under gpushare-run (when present) report 4 GiB;
  - 2.5 GiB fit; 2 GiB more raise torch.OutOfMemoryError; after
    torch.cuda.empty_cache() a 2 GiB retry succeeds and its data is right;
  - the coordinator counts at least what PyTorch reserved;
  - the log shows no memory, context or launch entry point passed through
    unwrapped (nothing escaped the interposer).
With --sim the job runs on the simulated GPU with a stand-in for PyTorch
(standin/torch), so this logic is tested in CI.
"""
import json
import os
import re
import sys

import gpucheck

LIMIT = 4 << 30
# Entry points that must never reach the driver unwrapped: what takes or
# gives back device memory, reports capacity, makes contexts or launches
# kernels (lib/interpose/driver/hooks.def wraps each). The CUDA runtime resolves
# its whole table at start, so every other entry point passing through is
# normal and only counted.
GUARDED = {
    "cuInit", "cuMemAlloc", "cuMemAllocPitch", "cuMemAllocManaged", "cuMemAllocAsync",
    "cuMemAllocFromPoolAsync", "cuMemCreate", "cuMemFree", "cuMemFreeAsync", "cuMemRelease",
    "cuMemGetInfo", "cuDeviceTotalMem", "cuArrayCreate", "cuArray3DCreate", "cuArrayDestroy",
    "cuMipmappedArrayCreate", "cuMipmappedArrayDestroy", "cuCtxCreate", "cuCtxDestroy",
    "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset",
    "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuGraphLaunch",
}


def base_name(symbol):
    """cuMemAlloc_v2 -> cuMemAlloc, cuLaunchKernel_ptsz -> cuLaunchKernel."""
    return re.sub(r"(_v[0-9]+)?(_ptsz|_ptds)?$", "", symbol)


ctx = gpucheck.Context("torch-interception")
env = dict(os.environ)
standin = None
if ctx.sim:
    # The real PyTorch cannot run on the simulated GPU; a stand-in for the
    # few calls the job makes, binding the driver as the CUDA runtime does
    # (standin/torch), runs the same job and this same verdict there.
    standin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin")
    env["PYTHONPATH"] = standin + os.pathsep + env.get("PYTHONPATH", "")
else:
    why_not = gpucheck.torch_status(ctx)
    if why_not:
        ctx.finish("skipped", why_not)

run = ctx.gpushare_run("--mem-limit", "4GiB", "--name", "gc-interception", "-p", "log=debug")
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_interception_job.py")
ctx.progress("PyTorch under gpushare-run --mem-limit 4GiB")
code, out, log = ctx.run(run + [sys.executable, job], env=env, timeout=90)
records = [r for r in gpucheck.json_records(out) if "mem_get_info" in r]
if code != 0 or not records:
    ctx.finish("failed", f"the PyTorch job failed (exit {code})", log=gpucheck.tail(log, 40))
job_result = records[-1]

failures = []
measurements = {"torch": job_result.get("torch"), "limit_bytes": LIMIT}
total = job_result["mem_get_info"].get("total_bytes")
measurements["mem_get_info_total_bytes"] = total
if total != LIMIT:
    failures.append(f"mem_get_info total {total}, expected {LIMIT}")

nvml = job_result.get("nvml", {})
measurements["nvml_total_bytes"] = nvml.get("total_bytes")
if nvml.get("total_bytes") != LIMIT:
    failures.append(f"NVML in the job ({nvml.get('via')}): " +
                    (f"total {nvml['total_bytes']}" if "total_bytes" in nvml else json.dumps(nvml)))
code, smi, err = ctx.run(ctx.gpushare_run("--mem-limit", "4GiB") +
                         ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits",
                          "-i", "0"], timeout=30)
if ctx.sim or code == 127 or code == 126:  # no nvidia-smi (none runs on the simulator)
    measurements["nvidia_smi_total_mib"] = None
elif code != 0 or not smi.strip().isdigit():
    failures.append(f"nvidia-smi under gpushare-run failed (exit {code})")
else:
    measurements["nvidia_smi_total_mib"] = int(smi.strip())
    if int(smi.strip()) != LIMIT >> 20:
        failures.append(f"nvidia-smi total {smi.strip()} MiB, expected {LIMIT >> 20}")

if job_result["within_limit"].get("ok") is not True:
    failures.append("2.5 GiB within the limit failed: " + json.dumps(job_result["within_limit"]))
past = job_result["past_limit"]
measurements["past_limit_raised"] = past.get("raised") or past.get("error")
if past.get("raised") != "OutOfMemoryError":
    failures.append("2 GiB past the limit did not raise torch.OutOfMemoryError: " + json.dumps(past))
retry = job_result["retry_smaller"]
if retry.get("ok") is not True or retry.get("checksum") != retry.get("expected"):
    failures.append("the retry after empty_cache failed: " + json.dumps(retry))

coordinator = job_result.get("coordinator", {})
if "mem_used_bytes" in coordinator:
    measurements["coordinator_mem_used_bytes"] = coordinator["mem_used_bytes"]
    measurements["torch_reserved_bytes"] = coordinator["reserved_bytes"]
    measurements["coordinator_waited_ms"] = coordinator.get("waited_ms")
    if coordinator["mem_used_bytes"] < coordinator["reserved_bytes"]:
        failures.append("the coordinator counts less than PyTorch reserved: an allocation escaped")
elif "error" in coordinator:
    failures.append("the job is not known to the coordinator: " + json.dumps(coordinator))

escaped, passed = set(), set()
for line in log.splitlines():
    match = re.search(r"cuGetProcAddress\((\w+), [^)]*\): (.*)$", line) or \
        re.search(r"dlsym\((\w+)\): (.*)$", line)
    if match and "passed through" in match.group(2):
        (escaped if base_name(match.group(1)) in GUARDED else passed).add(match.group(1))
measurements["escaped_entry_points"] = sorted(escaped)
measurements["other_entry_points_passed_through"] = len(passed)
measurements["wrapped_lines"] = sum(1 for line in log.splitlines() if ": wrapped" in line)
if escaped:
    failures.append("passed through unwrapped: " + ", ".join(sorted(escaped)))
if measurements["wrapped_lines"] == 0:
    failures.append("the log shows no wrapped entry point: was the interposer loaded?")

who = "the PyTorch stand-in (simulated GPU)" if standin else "PyTorch"
if failures:
    ctx.finish("failed", "; ".join(failures), measurements, log=gpucheck.tail(log, 40),
               torch_standin=bool(standin))
ctx.finish("passed", f"{who} saw 4 GiB, hit OutOfMemoryError past it and recovered; "
           "nothing escaped", measurements, torch_standin=bool(standin))
