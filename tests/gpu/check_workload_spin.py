#!/usr/bin/env python3
"""workload-spin: gpushare-workload's PTX spin kernel lasts what it is asked.

Runs gpushare-workload directly (no gpushare) with one kernel per iteration
and reads each iteration's device time (events around the kernel). A
1000 us kernel must take 1000 us +- 5% (the median, and 90% of the
iterations), after 5 warm-up iterations (the first pays the PTX JIT); a
10 ms kernel is checked the same way, so an error that grows with length
shows.
"""
import gpucheck

TOLERANCE = 0.05
WARMUP = 5

ctx = gpucheck.Context("workload-spin")
measurements = {}
failures = []
for kernel_us, iterations in ((1000, 60), (10000, 15)):
    ctx.progress(f"{iterations} iterations of one {kernel_us} us kernel")
    code, out, err = ctx.run([ctx.path("gpushare-workload"), "--mem", "64MiB", "--verify", "1MiB",
                              "--iterations", str(iterations), "--kernels-per-iter", "1",
                              "--kernel-us", str(kernel_us), "--per-iteration",
                              "--label", "workload-spin"], env=ctx.direct_env())
    samples = [r["gpu_ms"] * 1000 for r in gpucheck.json_records(out, "workload-iteration")]
    if code != 0 or len(samples) != iterations:
        ctx.finish("failed", f"gpushare-workload failed (exit {code})", measurements,
                   stderr=gpucheck.tail(err))
    timed = samples[WARMUP:]
    middle = gpucheck.median(timed)
    within = sum(1 for us in timed if abs(us - kernel_us) <= TOLERANCE * kernel_us) / len(timed)
    measurements[f"kernel_{kernel_us}us"] = {
        "median_us": round(middle, 1), "min_us": round(min(timed), 1),
        "max_us": round(max(timed), 1),
        "median_error_pct": round((middle - kernel_us) / kernel_us * 100, 2),
        "within_5pct_fraction": round(within, 3), "samples": len(timed)}
    if abs(middle - kernel_us) > TOLERANCE * kernel_us or within < 0.9:
        failures.append(f"{kernel_us} us kernel: median {middle:.1f} us, "
                        f"{within * 100:.0f}% of iterations within 5%")

if failures:
    ctx.finish("failed", "; ".join(failures), measurements)
m = measurements["kernel_1000us"]
ctx.finish("passed", f"a 1000 us kernel takes {m['median_us']} us (median; "
           f"{m['median_error_pct']:+}%)", measurements)
