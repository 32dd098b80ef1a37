#!/usr/bin/env python3
"""colocation: a production and an opportunistic job on one GPU, windowed.

Two pairs, as issue-level targets define them:
  resnet   production ResNet-50 batch 32 with 25 ms of host time per step,
           opportunistic ResNet-50 batch 128 back to back;
  matmul   production ten bf16 8192^3 products then 15 ms of host time,
           opportunistic the products back to back.
On a real GPU with PyTorch (and torchvision for resnet) the jobs are
PyTorch (torch_pair_job.py); on the simulated GPU, or where PyTorch is
missing, gpushare-workload stands in (the resnet pair replays the H100
step timelines in lib/gpushare/bench/traces; the matmul pair runs ten
1.4-ms spins then 15 ms of host time).

Each job first alone (its solo rate), the opportunistic one alone under
gpushare-run --opportunistic (with a coordinator: must keep >= 0.99 of its
plain speed), then the pair under gpushare-run --production /
--opportunistic. Rates are steps whose records' t_ms fall inside the
production job's window (its first record + a warm-up, to its last), over
that span: never a median of per-step times, which hides waiting.

Targets (fail below): resnet production >= 0.97 of solo and opportunistic
>= 0.6 of its solo; matmul production >= 0.97 and opportunistic >= 0.4;
alone >= 0.99.
"""
import os
import subprocess
import sys

import gpucheck

TARGETS = {"resnet": (0.97, 0.6), "matmul": (0.97, 0.4)}
ALONE_TARGET = 0.99

ctx = gpucheck.Context("colocation")
duration = 5.0 if ctx.sim else 12.0
warmup_ms = 1500.0 if ctx.sim else 3000.0
torch_skipped = gpucheck.torch_status(ctx)
here = os.path.dirname(os.path.abspath(__file__))


def torch_vision():
    code, _, _ = ctx.run([sys.executable, "-c", "import torchvision"], env=ctx.direct_env())
    return code == 0


def job_words(pair, role):
    """argv of one job of a pair, and the kind of its step records."""
    if not torch_skipped and (pair == "matmul" or torch_vision()):
        script = [sys.executable, os.path.join(here, "torch_pair_job.py")]
        if pair == "resnet":
            extra = ["--model", "resnet50", "--batch", "32" if role == "production" else "128"]
        else:
            extra = ["--model", "matmul"]
        if role == "production":
            extra += ["--host-ms", "25" if pair == "resnet" else "15"]
        return script + extra + ["--duration"], "torch-pair-step"
    workload = [ctx.path("gpushare-workload"), "--mem", "64MiB", "--verify", "1MiB",
                "--per-iteration"]
    if pair == "resnet":
        trace = "resnet50-32" if role == "production" else "resnet50-128"
        workload += ["--trace", ctx.path("bench", "traces", trace + ".csv"), "--launch-scale", "0.4"]
        if role == "production":
            workload += ["--host-us", "25000"]
    else:
        workload += ["--kernels-per-iter", "10", "--kernel-us", "1400"]
        if role == "production":
            workload += ["--host-us", "15000"]
    return workload + ["--duration"], "workload-iteration"


def start(prefix, pair, role, seconds):
    words, kind = job_words(pair, role)
    job = subprocess.Popen(prefix + words + [str(seconds)], env=ctx.direct_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return job, kind


def times(label, started):
    """The t_ms of every step record of a finished job; the check fails
    naming the job when it failed."""
    job, kind = started
    try:
        out, err = job.communicate(timeout=duration * 3 + 120)
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        ctx.finish("failed", f"{label} did not finish")
    stamps = [r["t_ms"] for r in gpucheck.json_records(out, kind)]
    if job.returncode != 0 or len(stamps) < 3:
        ctx.finish("failed", f"{label} failed (exit {job.returncode})", stderr=gpucheck.tail(err))
    return stamps


def rate(stamps, start_ms, end_ms):
    inside = [t for t in stamps if start_ms <= t <= end_ms]
    return len(inside) / ((end_ms - start_ms) / 1000) if end_ms > start_ms else 0.0


def window(stamps):
    return stamps[0] + warmup_ms, stamps[-1]


def solo_rate(prefix, pair, role):
    stamps = times(f"{pair} {role} alone", start(prefix, pair, role, duration))
    return rate(stamps, *window(stamps))


measurements = {"jobs": "pytorch" if not torch_skipped else "gpushare-workload"}
failures = []
under = ctx.gpushare_run
for pair, (prod_target, opp_target) in TARGETS.items():
    ctx.progress(f"{pair}: each job alone, the opportunistic one alone under gpushare")
    prod_solo = solo_rate([], pair, "production")
    opp_solo = solo_rate([], pair, "opportunistic")
    opp_alone = solo_rate(under("--opportunistic", "--name", "gc-alone"), pair, "opportunistic")
    ctx.progress(f"{pair}: the pair under gpushare-run --production / --opportunistic")
    opp_job = start(under("--opportunistic", "--name", "gc-opp"), pair, "opportunistic",
                    duration + 4)
    prod_stamps = times(f"{pair} production", start(under("--production", "--name", "gc-prod"),
                                                    pair, "production", duration))
    opp_stamps = times(f"{pair} opportunistic", opp_job)
    low, high = window(prod_stamps)
    found = {"production_fraction": round(rate(prod_stamps, low, high) / prod_solo, 3),
             "opportunistic_fraction": round(rate(opp_stamps, low, high) / opp_solo, 3),
             "alone_fraction": round(opp_alone / opp_solo, 3),
             "window_s": round((high - low) / 1000, 3)}
    measurements[pair] = found
    if found["production_fraction"] < prod_target:
        failures.append(f"{pair} production {found['production_fraction']:.3f} < {prod_target}")
    if found["opportunistic_fraction"] < opp_target:
        failures.append(f"{pair} opportunistic {found['opportunistic_fraction']:.3f} < {opp_target}")
    if found["alone_fraction"] < ALONE_TARGET:
        failures.append(f"{pair} alone {found['alone_fraction']:.3f} < {ALONE_TARGET}")

summary = "; ".join(f"{pair}: production {m['production_fraction']:.2f}, opportunistic "
                    f"{m['opportunistic_fraction']:.2f}, alone {m['alone_fraction']:.2f}"
                    for pair, m in measurements.items() if isinstance(m, dict))
if failures:
    ctx.finish("failed", summary + "; below target: " + ", ".join(failures), measurements)
ctx.finish("passed", summary, measurements)
