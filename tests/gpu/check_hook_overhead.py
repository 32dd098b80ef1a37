#!/usr/bin/env python3
"""hook-overhead: what the interposer adds to a launch and to an allocation.

Runs bench/interpose (gpushare-bench-interpose) against the driver in use:
the same measuring child alternately with and without the interposer
preloaded, the best of each side kept. Passes when the overheads are within
the budgets design.md sets (25 ns per launch, 300 ns per allocate+free).
"""
import gpucheck

ctx = gpucheck.Context("hook-overhead")
bench = ctx.path("bench", "gpushare-bench-interpose")
argv = [bench, "--iterations", "200000", "--repeats", "5"]
env = ctx.direct_env()
if not ctx.sim:
    argv.append("--real")
ctx.progress("launches and allocations, 5 rounds with and without the interposer")
code, out, err = ctx.run(argv, env=env, timeout=100)
records = gpucheck.json_records(out, "bench")
if code != 0 or not records:
    ctx.finish("failed", f"gpushare-bench-interpose failed (exit {code})",
               stderr=gpucheck.tail(err))
bench_record = records[-1]
keys = ("driver", "launch_ns_baseline", "launch_ns_interposed", "launch_overhead_ns",
        "launch_budget_ns", "alloc_free_ns_baseline", "alloc_free_ns_interposed",
        "alloc_overhead_ns", "alloc_budget_ns", "within_budget")
measurements = {key: bench_record.get(key) for key in keys}
summary = (f"{bench_record['launch_overhead_ns']} ns per launch (budget "
           f"{bench_record['launch_budget_ns']}), {bench_record['alloc_overhead_ns']} ns per "
           f"allocate+free (budget {bench_record['alloc_budget_ns']})")
ctx.finish("passed" if bench_record.get("within_budget") else "failed", summary, measurements)
