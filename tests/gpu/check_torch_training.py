#!/usr/bin/env python3
"""torch-training: a real training loop gives the same losses with and
without gpushare, at the same speed.

Runs torch_train.py (a convnet on synthetic data, fixed seed, deterministic
algorithms) three times plainly and three times under gpushare-run,
alternating, so drifts of the machine hit both sides. Passes when every
run's loss curve equals the first plain run's (relative difference at most
1e-6 at every step) and the best step time under gpushare is within 1% of
the best without.
"""
import os
import sys

import gpucheck

ROUNDS = 3
SPEED_TOLERANCE = 0.01
LOSS_TOLERANCE = 1e-6

ctx = gpucheck.Context("torch-training")
why_not = gpucheck.torch_status(ctx)
if why_not:
    ctx.finish("skipped", why_not)

train = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "torch_train.py")]
sides = {"plain": [], "gpushare": []}
for round_number in range(ROUNDS):
    for side, prefix in (("plain", []), ("gpushare", ctx.gpushare_run("--name", "gc-train"))):
        ctx.progress(f"round {round_number + 1} of {ROUNDS}: {side}")
        code, out, err = ctx.run(prefix + train, timeout=60)
        records = gpucheck.json_records(out, "torch-train")
        if code != 0 or not records:
            ctx.finish("failed", f"the {side} training failed (exit {code})",
                       stderr=gpucheck.tail(err))
        sides[side].append(records[-1])

reference = sides["plain"][0]["losses"]
worst = 0.0
for run in sides["plain"] + sides["gpushare"]:
    if len(run["losses"]) != len(reference):
        ctx.finish("failed", "runs of different lengths")
    for a, b in zip(run["losses"], reference):
        worst = max(worst, abs(a - b) / max(abs(b), 1e-12))
plain_ms = min(r["step_ms"] for r in sides["plain"])
shared_ms = min(r["step_ms"] for r in sides["gpushare"])
slowdown = shared_ms / plain_ms - 1
measurements = {
    "steps": len(reference), "first_loss": reference[0], "last_loss": reference[-1],
    "max_relative_loss_difference": worst,
    "step_ms_plain": [round(r["step_ms"], 4) for r in sides["plain"]],
    "step_ms_gpushare": [round(r["step_ms"], 4) for r in sides["gpushare"]],
    "slowdown_pct": round(slowdown * 100, 2)}
failures = []
if worst > LOSS_TOLERANCE:
    failures.append(f"loss curves differ (relative {worst:.2e})")
if slowdown > SPEED_TOLERANCE:
    failures.append(f"{slowdown * 100:.2f}% slower under gpushare")
summary = (f"losses {'identical' if worst == 0 else f'within {worst:.1e}'}; step "
           f"{shared_ms:.3f} ms under gpushare vs {plain_ms:.3f} ms ({slowdown * 100:+.2f}%)")
ctx.finish("failed" if failures else "passed", "; ".join(failures) or summary, measurements)
