#!/usr/bin/env python3
"""probe-device: gpushare-probe device describes this GPU as its driver does.

gpushare-probe reads the device through the driver API and NVML, loaded at
run time. Passes when it lists as many devices as the driver counts, and
device 0 has the driver's name and total memory (cuDeviceTotalMem), and is
marked simulated exactly when it is.
"""
import json
import os
import sys

import gpucheck

ctx = gpucheck.Context("probe-device")
library = ctx.path("sim", "libcuda.so.1") if ctx.sim else "libcuda.so.1"
ctx.progress("the driver's view, then gpushare-probe device")
# Both views of every device: NVML ignores CUDA_VISIBLE_DEVICES, the driver does not.
env = dict(os.environ)
env.pop("CUDA_VISIBLE_DEVICES", None)
code, out, err = ctx.run([sys.executable, os.path.join(os.path.dirname(
    os.path.abspath(__file__)), "gpucheck.py"), "driver-info", library], env=env)
driver = json.loads(out) if code == 0 and out.strip() else None
if not driver:
    ctx.finish("failed", f"the driver shows no device through {library}", stderr=gpucheck.tail(err))
code, out, err = ctx.run([ctx.bin("gpushare-probe"), "device"] + (["--sim"] if ctx.sim else []),
                         env=env)
devices = gpucheck.json_records(out, "device")
if code != 0 or not devices:
    ctx.finish("failed", f"gpushare-probe device failed (exit {code})", stderr=gpucheck.tail(err))
first = devices[0]
measurements = {"devices": len(devices), "driver_devices": driver["gpus"],
                "name": first.get("name"), "driver_name": driver["gpu"],
                "mem_total_bytes": first.get("mem_total_bytes"),
                "driver_mem_total_bytes": driver["mem_total_bytes"],
                "mem_source": first.get("mem_source"), "simulated": first.get("simulated")}
failures = []
if len(devices) != driver["gpus"]:
    failures.append(f"{len(devices)} devices listed, the driver counts {driver['gpus']}")
if first.get("name") != driver["gpu"]:
    failures.append(f"name '{first.get('name')}', the driver says '{driver['gpu']}'")
if first.get("mem_total_bytes") != driver["mem_total_bytes"]:
    failures.append(f"{first.get('mem_total_bytes')} bytes, the driver says "
                    f"{driver['mem_total_bytes']}")
if first.get("simulated") is not ctx.sim:
    failures.append(f"simulated is {first.get('simulated')}")
if failures:
    ctx.finish("failed", "; ".join(failures), measurements)
ctx.finish("passed", f"{first['name']}, {first['mem_total_bytes'] / 2**30:.1f} GiB, as the driver "
           "says", measurements)
