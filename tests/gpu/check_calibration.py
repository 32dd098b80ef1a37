#!/usr/bin/env python3
"""calibration: what the simulated GPU assumes, measured on this GPU.

Runs gpushare-gpu-calibrate (tests/gpu/calibrate): the memory one more
context takes, cuMemAlloc/cuMemFree latency, the host cost of a launch,
host-to-device bandwidth, and the time slice and context-switch cost
between two processes' spinning kernels; each is reported next to the
simulator's default and the variable that sets it. The record names the
defaults that are more than 25% off what was measured, and gives the
settings (in each variable's own unit) that make the simulator match this
device. Passes when every measurement was made (on the simulated GPU the
time slice cannot be: its kernels compute nothing, and that is reported,
not failed).
"""
import gpucheck

# A default this far from the measurement (either way) is called out.
DIFFERS_BY = 0.25

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


def setting_value(name, measured):
    """The measurement in the unit of the variable that sets it."""
    if name == "context_memory_bytes":
        return str(int(measured))  # a size; plain bytes
    if name == "h2d_gb_per_s":
        return f"{measured:.1f}"  # GB/s (1e9 bytes), as measured
    if name == "time_slice_ms":
        return f"{measured:.2f}"  # milliseconds
    if name == "context_switch_us":
        return str(max(0, round(measured)))  # whole microseconds
    return None


def number(value):
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# The settings that make the simulator match this device, and the defaults
# that differ from it.
settings = {}
differs = []
for name, values in measurements.items():
    measured, default, variable = values["measured"], values["sim_default"], values["sim_setting"]
    if measured is None or not variable:
        continue
    value = setting_value(name, measured)
    if value is not None:
        settings[variable] = value
    if default and abs(measured / default - 1) > DIFFERS_BY:
        differs.append(f"{variable} {number(default)} (measured {number(measured)})")
details["sim_settings"] = settings
details["defaults_differ"] = differs
for quantity in record["quantities"]:
    ctx.progress(f"{quantity['name']}: measured {quantity['measured']}, "
                 f"simulator {quantity['sim_default']}")
differ_text = ("; defaults off by more than 25%: " + ", ".join(differs)) if differs else \
    "; every default within 25%"
slice_missing = {"time_slice_ms", "context_switch_us"}
if ctx.sim and set(missing) <= slice_missing:
    ctx.finish("passed", "measured on the simulated GPU; time slices not measurable there "
               "(its kernels compute nothing)" + differ_text, measurements, **details)
if missing:
    ctx.finish("failed", "not measured: " + ", ".join(missing) +
               (f" ({slices['error']})" if "error" in slices else ""), measurements, **details)
ctx.finish("passed", f"time slice {measurements['time_slice_ms']['measured']} ms, switch "
           f"{measurements['context_switch_us']['measured']} us, context "
           f"{measurements['context_memory_bytes']['measured'] / 2**20:.0f} MiB, host-to-device "
           f"{measurements['h2d_gb_per_s']['measured']} GB/s" + differ_text,
           measurements, **details)
