#!/usr/bin/env python3
"""calibration: what the simulated GPU assumes, measured on this GPU.

Runs gpushare-gpu-calibrate (tests/gpu/calibrate): the memory one more
context takes, cuMemAlloc/cuMemFree latency, the host cost of a launch,
host-to-device bandwidth, and the time slice and context-switch cost
between two processes' spinning kernels; each is reported next to the
simulator's default and the setting that holds it. Passes when every
measurement was made (on the simulated GPU the time slice cannot be:
its kernels compute nothing, and that is reported, not failed).
"""
import gpucheck

ctx = gpucheck.Context("calibration")
ctx.progress("measuring (about 10 s)")
code, out, err = ctx.run([ctx.path("tests", "gpushare-gpu-calibrate")], env=ctx.direct_env(),
                         timeout=100)
records = gpucheck.json_records(out, "gpu-calibration")
if code != 0 or not records:
    ctx.finish("failed", f"gpushare-gpu-calibrate failed (exit {code})", stderr=gpucheck.tail(err))
record = records[-1]
measurements = {}
missing = []
for quantity in record["quantities"]:
    measurements[quantity["name"]] = {"measured": quantity["measured"],
                                      "sim_default": quantity["sim_default"],
                                      "sim_setting": quantity["sim_setting"]}
    if quantity["measured"] is None:
        missing.append(quantity["name"])
slices = record.get("time_slices", {})
details = {"driver": record["driver"], "device": record["device"],
           "time_slices": slices, "notes": {q["name"]: q["note"] for q in record["quantities"]}}
# The settings that would make the simulator match this device, where it
# has one (the time slice waits for the simulator to slice time).
settings = {}
context = measurements["context_memory_bytes"]["measured"]
if context:
    settings["GPUSHARE_SIM_CTX_OVERHEAD"] = str(int(context))
bandwidth = measurements["h2d_gib_per_s"]["measured"]
if bandwidth:
    settings["GPUSHARE_SIM_MIGRATE_BANDWIDTH"] = str(int(bandwidth * 2**30))
details["sim_settings"] = settings
for quantity in record["quantities"]:
    ctx.progress(f"{quantity['name']}: measured {quantity['measured']}, "
                 f"simulator {quantity['sim_default']}")
slice_missing = {"time_slice_ms", "context_switch_us"}
if ctx.sim and set(missing) <= slice_missing:
    ctx.finish("passed", "measured on the simulated GPU; time slices not measurable there "
               "(its kernels compute nothing)", measurements, **details)
if missing:
    ctx.finish("failed", "not measured: " + ", ".join(missing) +
               (f" ({slices['error']})" if "error" in slices else ""), measurements, **details)
ctx.finish("passed", f"time slice {measurements['time_slice_ms']['measured']} ms, switch "
           f"{measurements['context_switch_us']['measured']} us, context "
           f"{measurements['context_memory_bytes']['measured'] / 2**20:.0f} MiB",
           measurements, **details)
