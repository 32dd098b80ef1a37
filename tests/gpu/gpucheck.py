"""What every real-GPU check shares (docs/validation.md).

A check is a Python program, tests/gpu/check_NAME.py, that scripts/gpu-check
runs with these variables set:

  GPUSHARE_GPU_CHECK_PREFIX   the gpushare install prefix to test
  GPUSHARE_GPU_CHECK_SIM      1: run on the simulated GPU instead of a real one
  GPUSHARE_GPU_CHECK_SCRATCH  a private directory (the coordinator socket and
                              the simulated GPU's state file live there)

It prints its progress on stderr and exactly one JSON record on stdout:

  {"kind":"gpu-check","version":1,"name":"workload-spin","status":"passed",
   "summary":"...","measurements":{...},"details":{...}}

status is one of passed, failed, skipped, not-built. Standard library only:
the machines this runs on have Python (for PyTorch) but nothing promised
beyond it.
"""

import json
import os
import subprocess
import sys
import time

STATUSES = ("passed", "failed", "skipped", "not-built")

TORCH_ON_SIM = ("PyTorch cannot run on the simulated GPU: the CUDA runtime checks the "
                "driver's integrity, which no simulator passes")


class Context:
    """Where the check runs: the prefix, real or simulated, its scratch."""

    def __init__(self, name):
        self.name = name
        self.prefix = os.environ.get("GPUSHARE_GPU_CHECK_PREFIX", "")
        self.sim = os.environ.get("GPUSHARE_GPU_CHECK_SIM", "0") == "1"
        self.scratch = os.environ.get("GPUSHARE_GPU_CHECK_SCRATCH", "")
        if not self.prefix or not self.scratch:
            sys.stderr.write(f"{name}: error: run through scripts/gpu-check "
                             "(GPUSHARE_GPU_CHECK_PREFIX and _SCRATCH are unset)\n")
            sys.exit(2)
        self.libexec = os.path.join(self.prefix, "lib", "gpushare")
        self.started = time.monotonic()

    def path(self, *parts):
        return os.path.join(self.libexec, *parts)

    def bin(self, program):
        return os.path.join(self.prefix, "bin", program)

    def progress(self, message):
        sys.stderr.write(f"  {self.name}: {message}\n")
        sys.stderr.flush()

    def direct_env(self):
        """The environment of a job run without gpushare: on the simulated
        GPU it needs the simulated driver on the loader's path."""
        env = dict(os.environ)
        if self.sim:
            sim_dir = self.path("sim")
            env["LD_LIBRARY_PATH"] = sim_dir + (":" + env["LD_LIBRARY_PATH"]
                                                if env.get("LD_LIBRARY_PATH") else "")
        return env

    def gpushare_run(self, *options):
        """The words that run a job under gpushare-run with OPTIONS."""
        words = [self.bin("gpushare-run")]
        if self.sim:
            words.append("--sim")
        return words + list(options) + ["--"]

    def run(self, argv, env=None, timeout=60, stdin=None):
        """Runs argv; returns (exit status, stdout, stderr). A timeout is a
        failure of the check, reported, not raised."""
        try:
            done = subprocess.run(argv, env=env or dict(os.environ), capture_output=True,
                                  text=True, timeout=timeout, stdin=stdin,
                                  errors="replace")
            return done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as expired:
            return 124, _text(expired.stdout), _text(expired.stderr) + \
                f"\n(timed out after {timeout} s)"
        except OSError as error:
            return 127, "", f"cannot run {argv[0]}: {error}"

    def finish(self, status, summary, measurements=None, **details):
        """Prints the check's record and exits (0 whatever the verdict: the
        verdict is in the record)."""
        assert status in STATUSES, status
        record = {"kind": "gpu-check", "version": 1, "name": self.name, "status": status,
                  "summary": summary, "duration_s": round(time.monotonic() - self.started, 3),
                  "measurements": measurements or {}, "details": details}
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
        sys.exit(0)


def _text(data):
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def json_records(text, kind=None):
    """The JSON objects among the lines of text (other lines are ignored),
    those of one kind if given."""
    records = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and (kind is None or value.get("kind") == kind):
            records.append(value)
    return records


def median(values):
    ordered = sorted(values)
    if not ordered:
        return 0.0
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def torch_status(ctx):
    """None when PyTorch with CUDA can run here, else why not (a skip)."""
    if ctx.sim:
        return TORCH_ON_SIM
    code, out, err = ctx.run([sys.executable, "-c",
                              "import torch; print(torch.__version__, "
                              "torch.cuda.is_available())"], timeout=60)
    if code != 0:
        return "PyTorch is not installed for " + sys.executable
    if not out.strip().endswith("True"):
        return "PyTorch " + out.split()[0] + " sees no CUDA device"
    return None


def tail(text, lines=20):
    return "\n".join(text.splitlines()[-lines:])


def driver_info(library):
    """{gpu, gpus, cuda_driver_api, mem_total_bytes} of device 0 through the driver API of `library`, or
    None when it finds no device. The simulated driver is not taken for a
    real one when it is found as libcuda.so.1: it exports
    gpushare_sim_device_stats, which no NVIDIA driver does."""
    import ctypes
    try:
        cuda = ctypes.CDLL(library)
    except OSError:
        return None
    if library == "libcuda.so.1" and hasattr(cuda, "gpushare_sim_device_stats"):
        return None
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return None
    device = ctypes.c_int(0)
    name = ctypes.create_string_buffer(256)
    version = ctypes.c_int(0)
    if (cuda.cuDeviceGet(ctypes.byref(device), 0) != 0 or
            cuda.cuDeviceGetName(name, 256, device) != 0 or
            cuda.cuDriverGetVersion(ctypes.byref(version)) != 0):
        return None
    total = ctypes.c_size_t(0)
    cuda.cuDeviceTotalMem_v2(ctypes.byref(total), device)
    return {"gpu": name.value.decode(errors="replace"), "gpus": count.value,
            "cuda_driver_api": f"{version.value // 1000}.{version.value % 1000 // 10}",
            "mem_total_bytes": total.value}


if __name__ == "__main__":
    # python3 gpucheck.py driver-info LIBRARY: the device, as one JSON value.
    if len(sys.argv) == 3 and sys.argv[1] == "driver-info":
        print(json.dumps(driver_info(sys.argv[2])))
        sys.exit(0)
    sys.stderr.write("usage: gpucheck.py driver-info LIBRARY\n")
    sys.exit(2)
