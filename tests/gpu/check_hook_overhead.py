#!/usr/bin/env python3
"""hook-overhead: what the interposer costs a job.

The headline is what a job sees: PyTorch's step time (torch_train.py) with
and without gpushare-run, in TORCH_ROUNDS interleaved pairs (ABBA order), the
median of the paired relative differences; within 1%. Beneath it, the
interposer's cost per launch and per allocate+free, from bench/interpose
(gpushare-bench-interpose): many interleaved rounds (61 on the simulator,
41 on a GPU) of the same child with
and without the interposer preloaded, the median of the paired differences
and its 95% interval, within 1% of the driver's own cost on a real GPU and
within the design's absolute budgets on the simulator (10 ns per launch,
300 ns per allocate+free). A budget is met when the interval's upper end is
within it; a measurement too noisy to tell fails and says so. On the
simulated GPU the PyTorch part cannot run and is reported as such.
"""
import os
import sys

import gpucheck

# Paired rounds of the bench: a child costs about 0.1 s on the simulator and
# about 1 s on a real GPU (its context); these fit the check's time and
# narrow the interval below the budgets on a quiet machine.
BENCH_ROUNDS_SIM = 61
BENCH_ROUNDS_REAL = 41
TORCH_ROUNDS = 4
TORCH_BUDGET = 0.01

ctx = gpucheck.Context("hook-overhead")
bench_rounds = BENCH_ROUNDS_SIM if ctx.sim else BENCH_ROUNDS_REAL
measurements = {}
failures = []
headline = []

# What a job sees: PyTorch's step time.
why_not = gpucheck.torch_status(ctx)
if why_not:
    measurements["torch_step"] = "not measured: " + why_not
else:
    train = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "torch_train.py"), "--steps", "200"]
    sides = (("plain", []), ("gpushare", ctx.gpushare_run("--name", "gc-overhead")))
    step_ms = {"plain": [], "gpushare": []}
    for round_number in range(TORCH_ROUNDS):
        order = sides if round_number % 2 == 0 else sides[::-1]
        for side, prefix in order:
            ctx.progress(f"PyTorch round {round_number + 1} of {TORCH_ROUNDS}: {side}")
            code, out, err = ctx.run(prefix + train, timeout=60)
            records = gpucheck.json_records(out, "torch-train")
            if code != 0 or not records:
                ctx.finish("failed", f"the {side} training failed (exit {code})",
                           stderr=gpucheck.tail(err))
            step_ms[side].append(records[-1]["step_ms"])
    relative = [shared / plain - 1 for plain, shared in zip(step_ms["plain"], step_ms["gpushare"])]
    slowdown = gpucheck.median(relative)
    measurements.update({
        "torch_step_ms_plain": [round(v, 4) for v in step_ms["plain"]],
        "torch_step_ms_gpushare": [round(v, 4) for v in step_ms["gpushare"]],
        "torch_step_slowdown_pct": round(slowdown * 100, 3),
        "torch_step_slowdown_pct_range": [round(min(relative) * 100, 3),
                                          round(max(relative) * 100, 3)]})
    headline.append(f"PyTorch step {slowdown * 100:+.2f}% under gpushare (median of "
                    f"{TORCH_ROUNDS} paired rounds)")
    if slowdown > TORCH_BUDGET:
        failures.append(f"PyTorch steps {slowdown * 100:.2f}% slower under gpushare "
                        f"(budget {TORCH_BUDGET * 100:.0f}%)")

# The interposer's own cost, against the driver in use.
bench = ctx.path("bench", "gpushare-bench-interpose")
# A tenth as many allocate+free pairs as launches: on the simulator, where
# both are cheap, enough of each to steady a child's medians.
iterations = 200000 if ctx.sim else 50000
argv = [bench, "--iterations", str(iterations), "--repeats", str(bench_rounds)]
if not ctx.sim:
    argv.append("--real")
ctx.progress(f"launches and allocations: {bench_rounds} paired rounds with and without the "
             "interposer")
code, out, err = ctx.run(argv, env=ctx.direct_env(), timeout=200)
records = gpucheck.json_records(out, "bench")
if code != 0 or not records:
    ctx.finish("failed", f"gpushare-bench-interpose failed (exit {code})",
               stderr=gpucheck.tail(err))
bench_record = records[-1]
keys = ("driver", "budget_basis", "repeats",
        "launch_ns_baseline", "launch_ns_interposed", "launch_overhead_ns",
        "launch_overhead_ns_low", "launch_overhead_ns_high", "launch_budget_ns",
        "alloc_free_ns_baseline", "alloc_free_ns_interposed", "alloc_overhead_ns",
        "alloc_overhead_ns_low", "alloc_overhead_ns_high", "alloc_budget_ns", "within_budget")
measurements.update({key: bench_record.get(key) for key in keys})
for what, prefix in (("launch", "launch"), ("allocate+free", "alloc")):
    median, low, high = (bench_record[f"{prefix}_overhead_ns"],
                         bench_record[f"{prefix}_overhead_ns_low"],
                         bench_record[f"{prefix}_overhead_ns_high"])
    budget = bench_record[f"{prefix}_budget_ns"]
    headline.append(f"{median:+.1f} ns per {what} (95% {low:+.1f} to {high:+.1f}; budget "
                    f"{budget:.1f})")
    if median > budget:
        failures.append(f"{median:.1f} ns per {what}, over its budget of {budget:.1f} ns")
    elif high > budget:
        failures.append(f"cannot tell the {what} overhead from noise: its 95% interval reaches "
                        f"{high:.1f} ns, past the budget of {budget:.1f} ns")
summary = "; ".join(headline)
ctx.finish("failed" if failures else "passed",
           ("; ".join(failures) + " (" + summary + ")") if failures else summary, measurements)
