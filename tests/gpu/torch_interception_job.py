#!/usr/bin/env python3
"""The job check_torch_interception.py runs under gpushare-run --mem-limit
4GiB: what PyTorch sees, and whether the limit holds. Prints one JSON
object on stdout; every step is recorded, none raises out.

PyTorch reaches the driver through the CUDA runtime, which binds it with
cuGetProcAddress: this is the binding path the simulated GPU cannot test.
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

import torch

GIB = 1 << 30
result = {"torch": torch.__version__}
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


class NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


def nvml_total():
    """NVML's total for this device, read in this process (the interposer
    answers NVML here too): with pynvml when it is installed, else through
    libnvidia-ml.so.1 directly, which every NVIDIA driver installs."""
    index = torch.cuda.current_device()
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return {"via": "pynvml", "total_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)}
    except ImportError:
        pass
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    handle, memory = ctypes.c_void_p(), NvmlMemory()
    for call, status in (("nvmlInit_v2", nvml.nvmlInit_v2()),
                         ("nvmlDeviceGetHandleByIndex_v2",
                          nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle))),
                         ("nvmlDeviceGetMemoryInfo",
                          nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)))):
        if status != 0:
            return {"via": "libnvidia-ml.so.1", "error": call, "message": f"NVML error {status}"}
    return {"via": "libnvidia-ml.so.1", "total_bytes": memory.total}


def allocate(gib):
    return torch.empty(int(gib * GIB), dtype=torch.uint8, device="cuda")


held = {}


def within_limit():
    held["a"] = allocate(2.5)
    return {"ok": True, "reserved_bytes": torch.cuda.memory_reserved()}


def coordinator_view():
    """The coordinator's count of this job's memory, through gpushare-ctl:
    every byte PyTorch reserved must reach it, or an allocation escaped. The
    count travels through the job's telemetry, so it is polled (at most 5 s)
    until it covers what is reserved."""
    ctl = shutil.which("gpushare-ctl")
    if ctl is None:
        return {"skipped": "gpushare-ctl is not on PATH"}
    reserved = torch.cuda.memory_reserved()
    started = time.monotonic()
    seen = {"error": "not listed", "message": ""}
    while time.monotonic() - started < 5:
        done = subprocess.run([ctl, "ls"], capture_output=True, text=True, timeout=20)
        seen = {"error": "not listed", "message": done.stdout[-300:] + done.stderr[-300:]}
        for line in done.stdout.splitlines():
            job = json.loads(line)
            if job.get("pid") == os.getpid():
                seen = {"mem_used_bytes": job.get("mem_used_bytes"),
                        "mem_limit_bytes": job.get("mem_limit_bytes"), "reserved_bytes": reserved,
                        "waited_ms": round((time.monotonic() - started) * 1000)}
        if seen.get("mem_used_bytes", 0) >= reserved:
            break
        time.sleep(0.05)  # polling a count that has no event to wait on
    return seen


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
    tensor.fill_(7)  # memory that works, not only an address
    torch.cuda.synchronize()
    checksum = int(tensor[:: 1 << 20].sum().item())
    return {"ok": True, "checksum": checksum, "expected": 7 * (2 * GIB >> 20)}


step("mem_get_info", mem_get_info)
step("nvml", nvml_total)
step("within_limit", within_limit)
step("coordinator", coordinator_view)
step("past_limit", past_limit)
step("retry_smaller", retry_smaller)
result["cuda"] = torch.version.cuda
print(json.dumps(result))
