#!/usr/bin/env python3
"""The job check_torch_interception.py runs under gpushare-run --mem-limit
4GiB: what PyTorch sees, and whether the limit holds. Prints one JSON
object on stdout; every step is recorded, none raises out.

PyTorch reaches the driver through the CUDA runtime, which binds it with
cuGetProcAddress: this is the binding path the simulated GPU cannot test.
"""
import json
import os
import shutil
import subprocess
import sys

import torch

GIB = 1 << 30
result = {"torch": torch.__version__, "cuda": torch.version.cuda}
OOM = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError


def step(name, action):
    sys.stderr.write(f"    job: {name}\n")
    try:
        result[name] = action()
    except Exception as error:  # the verdict is the parent's; record everything
        result[name] = {"error": type(error).__name__, "message": str(error)[:300]}


def mem_get_info():
    free, total = torch.cuda.mem_get_info()
    return {"free_bytes": free, "total_bytes": total}


def nvml_total():
    """NVML's total through pynvml when it is installed (in this process:
    the interposer answers NVML here too)."""
    try:
        import pynvml
    except ImportError:
        return {"skipped": "pynvml is not installed"}
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    return {"total_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)}


def allocate(gib):
    tensor = torch.empty(int(gib * GIB), dtype=torch.uint8, device="cuda")
    tensor.fill_(7)
    torch.cuda.synchronize()
    return tensor


held = {}


def within_limit():
    held["a"] = allocate(2.5)
    return {"ok": True, "reserved_bytes": torch.cuda.memory_reserved()}


def coordinator_view():
    """The coordinator's count of this job's memory, through gpushare-ctl:
    every byte PyTorch reserved must be in it, or an allocation escaped."""
    ctl = shutil.which("gpushare-ctl")
    if ctl is None:
        return {"skipped": "gpushare-ctl is not on PATH"}
    done = subprocess.run([ctl, "ls"], capture_output=True, text=True, timeout=20)
    for line in done.stdout.splitlines():
        job = json.loads(line)
        if job.get("pid") == os.getpid():
            return {"mem_used_bytes": job.get("mem_used_bytes"),
                    "mem_limit_bytes": job.get("mem_limit_bytes"),
                    "reserved_bytes": torch.cuda.memory_reserved()}
    return {"error": "not listed", "message": done.stdout[-300:] + done.stderr[-300:]}


def past_limit():
    try:
        held["b"] = allocate(2)
    except OOM as error:
        return {"raised": "OutOfMemoryError", "message": str(error)[:300]}
    return {"raised": None}


def retry_smaller():
    held.clear()
    torch.cuda.empty_cache()
    tensor = allocate(2)
    checksum = int(tensor[:: 1 << 20].sum().item())
    return {"ok": True, "checksum": checksum, "expected": 7 * (2 * GIB >> 20)}


step("mem_get_info", mem_get_info)
step("nvml", nvml_total)
step("within_limit", within_limit)
step("coordinator", coordinator_view)
step("past_limit", past_limit)
step("retry_smaller", retry_smaller)
print(json.dumps(result))
