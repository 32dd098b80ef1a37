#!/usr/bin/env python3
"""colocation: a production and an opportunistic job on one GPU.

Two training-like gpushare-workload jobs (iterations of 4 x 2 ms kernels),
and, where PyTorch runs, two trainings (torch_train.py) the same way,
each first alone, then together without gpushare (plain time sharing by the
driver), then together under gpushare-run, one --production and one
--opportunistic. Speeds are medians of per-iteration times, so the edges of
a run, where one job ran alone, do not count. Reports the production job's
speed as a fraction of its solo speed and the opportunistic job's share of
its own solo speed, in both settings.

Whether gpushare controls compute (design.md roadmap 6) is detected, not
assumed: `gpushare-run -p compute=50%` is accepted only where it is built.
Without it the check reports plain sharing and passes when both jobs ran
and verified their data; with it, the production job must keep 95% of its
solo speed under gpushare (the workload's, and the training's where it ran).
"""
import os
import subprocess
import sys

import gpucheck

ITERATIONS = "100"
PRODUCTION_TARGET = 0.95

ctx = gpucheck.Context("colocation")
workload = [ctx.path("gpushare-workload"), "--mem", "256MiB", "--verify", "16MiB",
            "--iterations", ITERATIONS, "--kernels-per-iter", "4", "--kernel-us", "2000",
            "--per-iteration"]


def start(prefix, label, env):
    return subprocess.Popen(prefix + workload + ["--label", label], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(jobs):
    """{label: median iteration ms}, or the check fails naming the job."""
    results = {}
    for label, job in jobs:
        try:
            out, err = job.communicate(timeout=50)
        except subprocess.TimeoutExpired:
            job.kill()
            job.communicate()
            ctx.finish("failed", f"{label} did not finish within 50 s")
        times = [r["iteration_ms"] for r in gpucheck.json_records(out, "workload-iteration")]
        if job.returncode != 0 or len(times) != int(ITERATIONS):
            ctx.finish("failed", f"{label} failed (exit {job.returncode})",
                       stderr=gpucheck.tail(err))
        results[label] = gpucheck.median(times)
    return results


code, _, err = ctx.run(ctx.gpushare_run("--no-coordinator", "-p", "compute=50%") + ["true"])
compute_control = code == 0
ctx.progress("compute control: " + ("built" if compute_control else "not built (plain sharing)"))

direct = ctx.direct_env()
ctx.progress("each job alone")
solo = finish([("solo", start([], "solo", direct))])["solo"]
ctx.progress("both together, without gpushare")
plain = finish([("production", start([], "production", direct)),
                ("opportunistic", start([], "opportunistic", direct))])
ctx.progress("both together, under gpushare-run --production / --opportunistic")
shared = finish([("production", start(ctx.gpushare_run("--production", "--name", "gc-production"),
                                      "production", direct)),
                 ("opportunistic", start(ctx.gpushare_run("--opportunistic", "--name",
                                                          "gc-opportunistic"),
                                         "opportunistic", direct))])


def torch_colocation():
    """The same three settings with two PyTorch trainings (torch_train.py,
    synchronised per step): {setting_role: median step ms}."""
    train = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "torch_train.py"), "--steps", "300", "--per-step"]

    def launch(prefix):
        return subprocess.Popen(prefix + train, env=direct, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def medians(jobs):
        found = {}
        for label, job in jobs:
            try:
                out, err = job.communicate(timeout=55)
            except subprocess.TimeoutExpired:
                job.kill()
                job.communicate()
                ctx.finish("failed", f"PyTorch {label} did not finish within 55 s")
            records = gpucheck.json_records(out, "torch-train")
            if job.returncode != 0 or not records:
                ctx.finish("failed", f"PyTorch {label} failed (exit {job.returncode})",
                           stderr=gpucheck.tail(err))
            found[label] = gpucheck.median(records[-1]["step_ms_each"])
        return found

    ctx.progress("PyTorch: alone, together without gpushare, together under gpushare")
    alone = medians([("solo", launch([]))])["solo"]
    pair = medians([("production", launch([])), ("opportunistic", launch([]))])
    under = medians([("production", launch(ctx.gpushare_run("--production"))),
                     ("opportunistic", launch(ctx.gpushare_run("--opportunistic")))])
    return {"torch_solo_step_ms": round(alone, 3),
            "torch_plain_production_fraction": round(alone / pair["production"], 3),
            "torch_plain_opportunistic_share": round(alone / pair["opportunistic"], 3),
            "torch_gpushare_production_fraction": round(alone / under["production"], 3),
            "torch_gpushare_opportunistic_share": round(alone / under["opportunistic"], 3)}


measurements = {
    "solo_iteration_ms": round(solo, 3),
    "plain_production_fraction": round(solo / plain["production"], 3),
    "plain_opportunistic_share": round(solo / plain["opportunistic"], 3),
    "gpushare_production_fraction": round(solo / shared["production"], 3),
    "gpushare_opportunistic_share": round(solo / shared["opportunistic"], 3),
    "compute_control": compute_control,
}
torch_skipped = gpucheck.torch_status(ctx)
if torch_skipped:
    measurements["torch"] = "skipped: " + torch_skipped
else:
    measurements.update(torch_colocation())
summary = (f"production at {measurements['gpushare_production_fraction']:.2f} of solo speed "
           f"under gpushare (opportunistic {measurements['gpushare_opportunistic_share']:.2f}), "
           f"{measurements['plain_production_fraction']:.2f} without")
if not compute_control:
    ctx.finish("passed", summary + "; compute control not built: plain sharing", measurements)
if min(measurements["gpushare_production_fraction"],
       measurements.get("torch_gpushare_production_fraction", 1.0)) < PRODUCTION_TARGET:
    ctx.finish("failed", summary + f"; below the {PRODUCTION_TARGET:.0%} target", measurements)
ctx.finish("passed", summary, measurements)
