#!/usr/bin/env python3
"""probe-memory: gpushare-probe memory measures a training job's memory as
the framework itself reports it, and gpushare-probe interference measures
the resnet pair.

1. `gpushare-probe memory --summary` on a PyTorch training job
   (torch_spill_job.py train: an int32 pattern beside a small MLP): its
   floor and its ceiling must lie within 10% of what PyTorch reports
   (torch.cuda.max_memory_reserved of the same deterministic run, without
   gpushare) plus the job's context memory as the probe measured it. On
   the simulated GPU (and without PyTorch) the stand-in is gpushare-workload
   with a 512 MiB working set that grows by 256 MiB in every iteration:
   floor 512 MiB and ceiling 768 MiB plus the context.
2. `gpushare-probe interference` on the resnet pair of the colocation check
   (torch_pair_job.py resnet50, batch 32 beside batch 128; on the simulator
   gpushare-workload replaying the ResNet-50 kernel traces): both jobs
   measured alone and together, each slowdown a number. Its relative speeds
   are reported beside the colocation check's, not judged against them.
"""
import json
import os
import shlex
import sys

import gpucheck

MiB = 1 << 20
WAIT_S = 240
TOLERANCE = 0.10

ctx = gpucheck.Context("probe-memory")
why_no_torch = gpucheck.torch_status(ctx)
use_torch = why_no_torch is None
here = os.path.dirname(os.path.abspath(__file__))
work = os.path.join(ctx.scratch, "probe-memory")
os.makedirs(work, exist_ok=True)
sim = ["--sim"] if ctx.sim else []
env = dict(os.environ)
if ctx.sim:
    env.update({"GPUSHARE_SIM_STATE": os.path.join(work, "sim-state"),
                "GPUSHARE_SIM_MEMORY": str(4 << 30),
                "GPUSHARE_SIM_CTX_OVERHEAD": str(256 * MiB)})
measurements = {"jobs": "pytorch" if use_torch else "gpushare-workload"}
failures = []

# 1. The memory curve against the framework's own figure.
if use_torch:
    # 4 GiB of pattern: what the framework holds beyond its reserved memory
    # and a bare context (its kernels' modules, cuBLAS) stays a few per cent.
    job = [sys.executable, os.path.join(here, "torch_spill_job.py"), "train", str(4096 * MiB),
           "-", "-"]
    ctx.progress("PyTorch's own figure: the training run alone")
    code, out, err = ctx.run(job, env=ctx.direct_env(), timeout=WAIT_S)
    records = gpucheck.json_records(out, "torch-spill-job")
    if code != 0 or not records:
        ctx.finish("failed", f"the training job failed alone (exit {code})",
                   stderr=gpucheck.tail(err))
    reserved = records[-1]["max_reserved_bytes"]
    expected_floor = expected_ceiling = reserved
else:
    ctx.progress(f"driver-API stand-in: {why_no_torch}")
    job = [ctx.path("gpushare-workload"), "--mem", "512MiB", "--grow", "256MiB", "--kernel-us",
           "2000", "--host-us", "3000", "--iterations", "150"]
    reserved = None
    expected_floor, expected_ceiling = 512 * MiB, 768 * MiB
ctx.progress("gpushare-probe memory on the same job")
code, out, err = ctx.run([ctx.bin("gpushare-probe"), "memory", "--summary"] + sim + ["--"] + job,
                         env=env, timeout=WAIT_S)
profiles = [r for r in gpucheck.json_records(out) if "floor_mem_bytes" in r]
if code != 0 or not profiles:
    ctx.finish("failed", f"gpushare-probe memory failed (exit {code})", stderr=gpucheck.tail(err))
profile = profiles[-1]
context = profile.get("context_mem_bytes") or 0
measurements.update({"torch_max_reserved_bytes": reserved, "context_mem_bytes": context,
                     "floor_mem_bytes": profile["floor_mem_bytes"],
                     "ceiling_mem_bytes": profile["ceiling_mem_bytes"],
                     "peak_mem_bytes": profile.get("peak_mem_bytes"),
                     "iterations": profile.get("iterations")})
for what, measured, expected in (("floor", profile["floor_mem_bytes"], expected_floor + context),
                                 ("ceiling", profile["ceiling_mem_bytes"],
                                  expected_ceiling + context)):
    error = abs(measured - expected) / expected
    measurements[f"{what}_error"] = round(error, 4)
    if error > TOLERANCE:
        failures.append(f"{what} {measured / MiB:.0f} MiB, expected {expected / MiB:.0f} MiB "
                        f"({'PyTorch reserved' if use_torch else 'the working set'} plus the "
                        f"context): off by {error:.0%}")

# 2. Interference on the resnet pair.
vision = use_torch and ctx.run([sys.executable, "-c", "import torchvision"],
                               env=ctx.direct_env())[0] == 0
if vision:
    pair = [[sys.executable, os.path.join(here, "torch_pair_job.py"), "--model", "resnet50",
             "--batch", batch, "--duration", "600"] for batch in ("32", "128")]
else:
    pair = [[ctx.path("gpushare-workload"), "--mem", "64MiB", "--trace",
             ctx.path("bench", "traces", f"resnet50-{batch}.csv"), "--launch-scale", "0.4",
             "--duration", "600"] for batch in ("32", "128")]
ctx.progress("gpushare-probe interference on the resnet pair")
code, out, err = ctx.run([ctx.bin("gpushare-probe"), "interference"] + sim +
                         ["--duration", "3s" if ctx.sim else "5s"] +
                         [word for words in pair for word in ("--job", shlex.join(words))],
                         env=env, timeout=WAIT_S)
records = gpucheck.json_records(out)
pairs = [r for r in records if "relative_speed" in r]
if code != 0 or not pairs:
    failures.append(f"gpushare-probe interference failed (exit {code}): {gpucheck.tail(err, 3)}")
else:
    measurements["interference"] = [{k: r.get(k) for k in ("setting", "jobs", "relative_speed",
                                                           "slowdown")} for r in pairs]
    for r in pairs:
        if any(value is None for value in r.get("relative_speed", [None])):
            failures.append(f"a pair without a speed: {json.dumps(r)[:200]}")
if failures:
    ctx.finish("failed", "; ".join(failures), measurements)
ctx.finish("passed", f"floor {profile['floor_mem_bytes'] / MiB:.0f} MiB and ceiling "
           f"{profile['ceiling_mem_bytes'] / MiB:.0f} MiB within {TOLERANCE:.0%} of "
           f"{'PyTorch reserved' if use_torch else 'the working set'} plus the context; "
           f"interference measured for {len(pairs)} settings", measurements)
