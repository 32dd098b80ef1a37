#!/usr/bin/env python3
"""suspend: gpushare-ctl suspend frees a computing job's device memory and
resume brings it back, its data and its training intact.

A job started `gpushare-run --suspendable` computes; once it runs,
`gpushare-ctl suspend` (which returns once the job is suspended) must leave
its process holding no more than its context on the device, as the driver's
own per-process figure says (nvidia-smi on a GPU, NVML through
gpushare-nvml-smi on the simulator); `gpushare-ctl resume` must bring the
memory back at the same addresses (the job's tensors keep theirs) and the
job must end with its data intact.

On a GPU with PyTorch the job is torch_spill_job.py train: an int32 pattern
and a small MLP trained on fixed data (seed 0) until the check says stop,
600 steps at least; the losses of its first 600 steps must equal those of
the same run never suspended (without gpushare).
The suspend's and the resume's times are set against the host link's speed
(pinned copies, torch_spill_job.py link), reported, not judged. On the
simulated GPU (and without PyTorch) the stand-in is gpushare-workload with a
verified working set on its own 4 GiB simulated GPU.
"""
import json
import os
import subprocess
import sys
import time

import gpucheck

MiB = 1 << 20
GiB = 1 << 30
WAIT_S = 120

ctx = gpucheck.Context("suspend")
why_no_torch = gpucheck.torch_status(ctx)
use_torch = why_no_torch is None
here = os.path.dirname(os.path.abspath(__file__))
work = os.path.join(ctx.scratch, "suspend")
os.makedirs(work, exist_ok=True)
NAME = "gc-suspend"


def environment():
    env = dict(os.environ)
    if ctx.sim:
        env.update({"GPUSHARE_SIM_STATE": os.path.join(work, "sim-state"),
                    "GPUSHARE_SIM_MEMORY": str(4 * GiB),
                    "GPUSHARE_SIM_CTX_OVERHEAD": str(256 * MiB)})
    return env


def process_bytes(pid, env):
    """The device memory the driver counts for pid (None: not listed)."""
    if ctx.sim:
        code, out, _ = ctx.run([ctx.path("tests", "gpushare-nvml-smi")],
                               env=ctx.direct_env() | {k: v for k, v in env.items()
                                                       if k.startswith("GPUSHARE_SIM_")})
        for device in gpucheck.json_records(out):
            for process in device.get("processes", []):
                if process.get("pid") == pid:
                    return process.get("used_bytes")
        return None
    code, out, _ = ctx.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                            "--format=csv,noheader,nounits"])
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and fields[0] == str(pid) and fields[1].isdigit():
            return int(fields[1]) * MiB
    return None


def show(env):
    code, out, _ = ctx.run([ctx.bin("gpushare-ctl"), "show", NAME], env=env, timeout=20)
    records = gpucheck.json_records(out)
    return records[-1] if code == 0 and records else None


def timed_ctl(verb, env):
    started = time.monotonic()
    code, out, err = ctx.run([ctx.bin("gpushare-ctl"), verb, NAME], env=env, timeout=WAIT_S)
    records = gpucheck.json_records(out)
    return code, (records[-1] if records else None), time.monotonic() - started, err


def device_bytes():
    if ctx.sim:
        return 4 * GiB
    # In a process of its own: the check's own process keeps no CUDA state.
    code, out, _ = ctx.run([sys.executable, os.path.join(here, "gpucheck.py"), "driver-info",
                            "libcuda.so.1"])
    info = json.loads(out) if code == 0 and out.strip() else None
    if not info:
        ctx.finish("failed", "cannot read the device's memory through the driver")
    return info["mem_total_bytes"]


env = environment()
size = 1 * GiB if ctx.sim else min(8 * GiB, device_bytes() // 8) // MiB * MiB
ready, stop = os.path.join(work, "ready"), os.path.join(work, "stop")
measurements = {"bytes": size, "jobs": "pytorch" if use_torch else "gpushare-workload"}
if not use_torch:
    ctx.progress(f"driver-API stand-in: {why_no_torch}")
    argv = [ctx.path("gpushare-workload"), "--mem", str(size), "--verify", str(size),
            "--duration", "8"]
else:
    argv = [sys.executable, os.path.join(here, "torch_spill_job.py"), "train", str(size), ready,
            stop]

reference = None
if use_torch:
    ctx.progress("the same training never suspended, without gpushare")
    code, out, err = ctx.run(argv[:4] + ["-", "-"], env=ctx.direct_env(), timeout=WAIT_S)
    records = gpucheck.json_records(out, "torch-spill-job")
    if code != 0 or not records:
        ctx.finish("failed", f"the reference run failed (exit {code})", stderr=gpucheck.tail(err))
    reference = records[-1]

ctx.progress(f"a --suspendable job of {size / GiB:.2f} GiB computes")
out_path, err_path = os.path.join(work, "job.out"), os.path.join(work, "job.err")
with open(out_path, "w") as out, open(err_path, "w") as err:
    job = subprocess.Popen(ctx.gpushare_run("--suspendable", "--name", NAME) + argv, env=env,
                           stdout=out, stderr=err, stdin=subprocess.DEVNULL)
failures = []
try:
    deadline = time.monotonic() + WAIT_S
    while True:  # running: the job's file (PyTorch) or its launches (the stand-in)
        view = show(env)
        if (os.path.exists(ready) if use_torch else view and view.get("launches", 0) > 0):
            break
        if job.poll() is not None or time.monotonic() > deadline:
            ctx.finish("failed", "the job did not start computing",
                       stderr=gpucheck.tail(open(err_path).read()))
        time.sleep(0.05)  # a job's start: nothing to block on
    pid = job.pid
    view = show(env) or {}
    pid = view.get("pid", pid)
    before = process_bytes(pid, env)
    ctx.progress("suspend")
    code, suspended, suspend_s, err = timed_ctl("suspend", env)
    during = process_bytes(pid, env)
    if code != 0 or not suspended or suspended.get("state") != "suspended":
        failures.append(f"suspend failed (exit {code}): {gpucheck.tail(err, 3)}")
    ctx.progress("resume")
    code, resumed, resume_s, err = timed_ctl("resume", env)
    after = process_bytes(pid, env)
    if code != 0 or not resumed or resumed.get("state") != "running":
        failures.append(f"resume failed (exit {code}): {gpucheck.tail(err, 3)}")
    open(stop, "w").close()  # the PyTorch job trains on until its steps are done and this exists
    job_code = job.wait(timeout=WAIT_S)
finally:
    open(stop, "w").close()
    if job.poll() is None:
        job.kill()
        job.wait()
out_text, err_text = open(out_path).read(), open(err_path).read()
moved = (suspended or {}).get("mem_host_resident_bytes") or 0
measurements.update({"suspend_s": round(suspend_s, 3), "resume_s": round(resume_s, 3),
                     "moved_bytes": moved, "process_bytes_before": before,
                     "process_bytes_suspended": during, "process_bytes_resumed": after,
                     # "checkpoint" (the driver's process checkpoint: nothing left on
                     # the device, the context included) or "memory" (the fallback).
                     "suspend_path": (suspended or {}).get("suspend_path")})
if moved and suspend_s > 0:
    measurements["suspend_gib_per_s"] = round(moved / GiB / suspend_s, 2)
    measurements["resume_gib_per_s"] = round(moved / GiB / resume_s, 2)
if before is None or during is None or after is None:
    failures.append("the driver does not list the job's process "
                    f"(before {before}, suspended {during}, resumed {after})")
else:
    if before - during < size * 0.9:
        failures.append(f"suspended, the process still holds {during} bytes "
                        f"(of {before} before): its memory did not leave the device")
    if after < before - size * 0.1:
        failures.append(f"resumed, the process holds {after} bytes of {before}")
if job_code != 0:
    failures.append(f"the job failed (exit {job_code}): {gpucheck.tail(err_text, 3)}")
elif use_torch:
    result = (gpucheck.json_records(out_text, "torch-spill-job") or [{}])[-1]
    if not result.get("intact"):
        failures.append("the job's data changed across the suspend")
    if result.get("addresses_before") != result.get("addresses_after"):
        failures.append("the job's tensors moved")
    steps = len(reference.get("losses", []))
    same = (result.get("losses") or [])[:steps] == reference.get("losses")
    if not same:
        failures.append(f"the losses of the first {steps} steps differ from the run never "
                        "suspended")
    measurements["losses_equal"] = same
    measurements["steps"] = len(result.get("losses") or [])
    ctx.progress("the host link's speed, pinned copies without gpushare")
    code, out, err = ctx.run([sys.executable, os.path.join(here, "torch_spill_job.py"), "link",
                              str(min(size, 4 * GiB))], env=ctx.direct_env(), timeout=WAIT_S)
    links = gpucheck.json_records(out, "torch-spill-job")
    if links and measurements.get("suspend_gib_per_s"):
        measurements["link_dtoh_gib_per_s"] = links[-1]["dtoh_gib_per_s"]
        measurements["link_htod_gib_per_s"] = links[-1]["htod_gib_per_s"]
        measurements["suspend_fraction_of_link"] = round(
            measurements["suspend_gib_per_s"] / links[-1]["dtoh_gib_per_s"], 3)
        measurements["resume_fraction_of_link"] = round(
            measurements["resume_gib_per_s"] / links[-1]["htod_gib_per_s"], 3)
else:
    summary = (gpucheck.json_records(out_text, "workload-summary") or [{}])[-1]
    if not summary.get("verified_bytes"):
        failures.append(f"the stand-in verified nothing: {json.dumps(summary)[:200]}")
if failures:
    ctx.finish("failed", "; ".join(failures), measurements)
ctx.finish("passed", f"{moved / GiB:.2f} GiB suspended in {suspend_s:.2f} s and resumed in "
           f"{resume_s:.2f} s; the process held {during} bytes while suspended; data intact",
           measurements)
