#!/usr/bin/env python3
"""hook-overhead: what the interposer costs a job, within the check's budget.

The headline is what a job sees: PyTorch's step time (torch_train.py) with
and without gpushare-run, in interleaved pairs (ABBA order), the median of
the paired relative differences; within 1%. Beneath it, the interposer's
cost per launch and per allocate+free, from bench/interpose
(gpushare-bench-interpose): blocks of two paired rounds (ABBA) of the same
child with and without the interposer preloaded, the median of the blocks'
differences and its distribution-free 95% interval, within 1% of the
driver's own cost on a real GPU and within the design's absolute budgets on
the simulator (10 ns per launch, 300 ns per allocate+free). A budget is met
when the interval's upper end is within it; a measurement too noisy to tell
fails and says so. On the simulated GPU the PyTorch part cannot run and is
reported as such.

What dominates is each process's start (PyTorch's import and CUDA context;
a bench child's context), not the measuring: on an H200 the old fixed 4
PyTorch pairs and 41 bench rounds (82 contexts) did not fit 120 s. So the
rounds follow the time: PyTorch pairs while they fit TORCH_SHARE of the
budget (at least MIN_TORCH_ROUNDS), then bench blocks while they fit the
rest (at least MIN_BLOCKS), each phase's time and the time per process
reported (phase_s, torch_run_s, bench_child_s) so that the next run shows
where the time went.
"""
import math
import os
import sys
import time

import gpucheck

TORCH_BUDGET = 0.01
TORCH_SHARE = 0.4
MIN_TORCH_ROUNDS, MAX_TORCH_ROUNDS = 2, 4
TORCH_STEPS = 150
MIN_BLOCKS = 3
# Blocks of two rounds each: 30 (60 rounds) on the simulator, where a child
# costs about 0.1 s; 20 on a GPU, where its context costs most of a second.
MAX_BLOCKS_SIM, MAX_BLOCKS_REAL = 30, 20
# Launches per child (a tenth as many allocate+free pairs): enough batches
# of 1000 for a steady median, little next to the child's start.
ITERATIONS_SIM, ITERATIONS_REAL = 200000, 20000
# The verdict needs this much of the budget left at the end.
RESERVE_S = 3

ctx = gpucheck.Context("hook-overhead")
measurements = {}
failures = []
headline = []


def fits(spent, count, until_s):
    """Whether one more of what took SPENT seconds for COUNT fits before
    the check's elapsed time reaches UNTIL_S."""
    return ctx.elapsed_s() + spent / max(count, 1) <= until_s


def sign_interval(values):
    """The median of VALUES and its distribution-free 95% interval: the
    k-th smallest and largest, k = n/2 - 0.98 sqrt(n) (as the bench does)."""
    ordered = sorted(values)
    n = len(ordered)
    k = max(0, int(math.floor(n / 2 - 0.98 * math.sqrt(n))))
    return gpucheck.median(ordered), ordered[k], ordered[n - 1 - k]


# What a job sees: PyTorch's step time.
why_not = gpucheck.torch_status(ctx)
torch_started = time.monotonic()
if why_not:
    measurements["torch_step"] = "not measured: " + why_not
else:
    train = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "torch_train.py"), "--steps", str(TORCH_STEPS)]
    sides = (("plain", []), ("gpushare", ctx.gpushare_run("--name", "gc-overhead")))
    step_ms = {"plain": [], "gpushare": []}
    round_number = 0
    while round_number < MAX_TORCH_ROUNDS and (
            round_number < MIN_TORCH_ROUNDS or
            fits(time.monotonic() - torch_started, round_number, ctx.budget_s * TORCH_SHARE)):
        order = sides if round_number % 2 == 0 else sides[::-1]
        for side, prefix in order:
            ctx.progress(f"PyTorch round {round_number + 1}: {side}")
            code, out, err = ctx.run(prefix + train, timeout=60, label=f"torch-{side}")
            records = gpucheck.json_records(out, "torch-train")
            if code != 0 or not records:
                ctx.finish("failed", f"the {side} training failed (exit {code})",
                           measurements, stderr=gpucheck.tail(err))
            step_ms[side].append(records[-1]["step_ms"])
        round_number += 1
        ctx.measure("torch_step_ms_plain", [round(v, 4) for v in step_ms["plain"]])
        ctx.measure("torch_step_ms_gpushare", [round(v, 4) for v in step_ms["gpushare"]])
    relative = [shared / plain - 1 for plain, shared in zip(step_ms["plain"], step_ms["gpushare"])]
    slowdown = gpucheck.median(relative)
    measurements.update({
        "torch_rounds": round_number,
        "torch_run_s": round((time.monotonic() - torch_started) / (2 * round_number), 2),
        "torch_step_slowdown_pct": round(slowdown * 100, 3),
        "torch_step_slowdown_pct_range": [round(min(relative) * 100, 3),
                                          round(max(relative) * 100, 3)]})
    headline.append(f"PyTorch step {slowdown * 100:+.2f}% under gpushare (median of "
                    f"{round_number} paired rounds)")
    if slowdown > TORCH_BUDGET:
        failures.append(f"PyTorch steps {slowdown * 100:.2f}% slower under gpushare "
                        f"(budget {TORCH_BUDGET * 100:.0f}%)")
torch_s = time.monotonic() - torch_started

# The interposer's own cost, against the driver in use: blocks of two
# paired rounds (one each way round) while they fit the budget.
bench = ctx.path("bench", "gpushare-bench-interpose")
iterations = ITERATIONS_SIM if ctx.sim else ITERATIONS_REAL
max_blocks = MAX_BLOCKS_SIM if ctx.sim else MAX_BLOCKS_REAL
argv = [bench, "--iterations", str(iterations), "--repeats", "2"] + ([] if ctx.sim else ["--real"])
ctx.progress(f"launches and allocations: up to {max_blocks} blocks of 2 paired rounds with and "
             "without the interposer")
blocks = []
bench_started = time.monotonic()
while len(blocks) < max_blocks and (
        len(blocks) < MIN_BLOCKS or
        fits(time.monotonic() - bench_started, len(blocks), ctx.budget_s - RESERVE_S)):
    code, out, err = ctx.run(argv, env=ctx.direct_env(), timeout=120, label="bench")
    records = gpucheck.json_records(out, "bench")
    if code != 0 or not records:
        ctx.finish("failed", f"gpushare-bench-interpose failed (exit {code})", measurements,
                   stderr=gpucheck.tail(err))
    blocks.append(records[-1])
    ctx.measure("launch_overhead_ns_blocks", [b["launch_overhead_ns"] for b in blocks])
    ctx.measure("alloc_overhead_ns_blocks", [b["alloc_overhead_ns"] for b in blocks])
bench_s = time.monotonic() - bench_started

first = blocks[0]
measurements.update({"driver": first["driver"], "budget_basis": first["budget_basis"],
                     "iterations": iterations, "blocks": len(blocks), "repeats": 2 * len(blocks),
                     "phase_s": {"torch": round(torch_s, 2), "bench": round(bench_s, 2)},
                     "bench_child_s": round(bench_s / (4 * len(blocks)), 3)})
within = True
for what, prefix, cost in (("launch", "launch", "launch"), ("allocate+free", "alloc", "alloc_free")):
    baseline = gpucheck.median([b[f"{cost}_ns_baseline"] for b in blocks])
    interposed = gpucheck.median([b[f"{cost}_ns_interposed"] for b in blocks])
    middle, low, high = sign_interval([b[f"{prefix}_overhead_ns"] for b in blocks])
    # On a real driver 1% of its own cost (the blocks' median); on the
    # simulator the bench's absolute budget.
    budget = baseline / 100 if not ctx.sim else first[f"{prefix}_budget_ns"]
    measurements.update({
        f"{cost}_ns_baseline": round(baseline, 1), f"{cost}_ns_interposed": round(interposed, 1),
        f"{prefix}_overhead_ns": round(middle, 1), f"{prefix}_overhead_ns_low": round(low, 1),
        f"{prefix}_overhead_ns_high": round(high, 1), f"{prefix}_budget_ns": round(budget, 1)})
    headline.append(f"{middle:+.1f} ns per {what} (95% {low:+.1f} to {high:+.1f}; budget "
                    f"{budget:.1f})")
    within = within and high <= budget
    if middle > budget:
        failures.append(f"{middle:.1f} ns per {what}, over its budget of {budget:.1f} ns")
    elif high > budget:
        failures.append(f"cannot tell the {what} overhead from noise: its 95% interval reaches "
                        f"{high:.1f} ns, past the budget of {budget:.1f} ns")
measurements["within_budget"] = within
summary = "; ".join(headline) + f" ({2 * len(blocks)} bench rounds)"
ctx.finish("failed" if failures else "passed",
           ("; ".join(failures) + " (" + summary + ")") if failures else summary, measurements)
