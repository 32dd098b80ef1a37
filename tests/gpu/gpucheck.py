"""What every real-GPU check shares (docs/validation.md).

A check is a Python program, tests/gpu/check_NAME.py, that scripts/gpu-check
runs with these variables set:

  GPUSHARE_GPU_CHECK_PREFIX   the gpushare install prefix to test
  GPUSHARE_GPU_CHECK_SIM      1: run on the simulated GPU instead of a real one
  GPUSHARE_GPU_CHECK_SCRATCH  a private directory (the coordinator socket and
                              the simulated GPU's state file live there);
                              what a check writes under SCRATCH/NAME is kept
                              with its evidence
  GPUSHARE_CHECK_QUICK        1 under scripts/gpu-check --quick: run the
                              smaller set that fits the quick budget
  GPUSHARE_CHECK_BUDGET_S     the seconds this check has (it is stopped at
                              about 1.5 times that); plan the work to fit
  GPUSHARE_CHECK_EVIDENCE     OUTDIR/NAME: where what explains the verdict
                              goes (Context.run, Context.start and
                              Context.keep write there)
  GPUSHARE_COMPUTE_TRACE      EVIDENCE/compute-trace-%p.jsonl, inherited by
                              every job the check starts

It prints its progress on stderr and exactly one JSON record on stdout:

  {"kind":"gpu-check","version":1,"name":"workload-spin","status":"passed",
   "summary":"...","measurements":{...},"details":{...}}

status is one of passed, failed, skipped, not-built. What a check learns on
the way can be kept with Context.measure: if the check is stopped before
its record, scripts/gpu-check reports those measurements. Standard library
only: the machines this runs on have Python (for PyTorch) but nothing
promised beyond it.

  python3 gpucheck.py driver-info LIBRARY     the device, as one JSON value
"""

import json
import os
import subprocess
import sys
import time

STATUSES = ("passed", "failed", "skipped", "not-built")

TORCH_ON_SIM = ("PyTorch cannot run on the simulated GPU: the CUDA runtime checks the "
                "driver's integrity, which no simulator passes")


# A job's output kept as evidence is cut to its last this many bytes: a
# runaway log must not crowd out the others in the archive.
KEPT_BYTES = 2 << 20


class Context:
    """Where the check runs: the prefix, real or simulated, its scratch,
    its budget, and where its evidence goes."""

    def __init__(self, name):
        self.name = name
        self.prefix = os.environ.get("GPUSHARE_GPU_CHECK_PREFIX", "")
        self.sim = os.environ.get("GPUSHARE_GPU_CHECK_SIM", "0") == "1"
        self.scratch = os.environ.get("GPUSHARE_GPU_CHECK_SCRATCH", "")
        if not self.prefix or not self.scratch:
            sys.stderr.write(f"{name}: error: run through scripts/gpu-check "
                             "(GPUSHARE_GPU_CHECK_PREFIX and _SCRATCH are unset)\n")
            sys.exit(2)
        self.quick = os.environ.get("GPUSHARE_CHECK_QUICK", "0") == "1"
        try:
            self.budget_s = float(os.environ.get("GPUSHARE_CHECK_BUDGET_S", ""))
        except ValueError:
            self.budget_s = 300.0  # run by hand: the old per-check limit
        # Run by hand (as the e2e tests do), the evidence stays in scratch.
        self.evidence = os.environ.get("GPUSHARE_CHECK_EVIDENCE") or \
            os.path.join(self.scratch, "evidence", name)
        os.makedirs(self.evidence, exist_ok=True)
        self.libexec = os.path.join(self.prefix, "lib", "gpushare")
        self.started = time.monotonic()
        self.measured = {}
        self._kept = 0

    def path(self, *parts):
        return os.path.join(self.libexec, *parts)

    def bin(self, program):
        return os.path.join(self.prefix, "bin", program)

    def progress(self, message):
        sys.stderr.write(f"  {self.name}: {message}\n")
        sys.stderr.flush()

    def elapsed_s(self):
        return time.monotonic() - self.started

    def remaining_s(self):
        """Seconds left of the budget (negative once past it)."""
        return self.budget_s - self.elapsed_s()

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

    def _label(self, argv, label):
        """A file name for a job's evidence: NN-LABEL, numbered in the order
        the jobs ran."""
        self._kept += 1
        if label is None:
            # The program the job runs, past gpushare-run and its options;
            # for Python, the script.
            words = argv[argv.index("--") + 1:] if "--" in argv else list(argv)
            if len(words) > 1 and os.path.basename(words[0]).startswith("python"):
                words = words[1:]
            label = os.path.basename(words[0]) if words else "job"
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in label)
        return os.path.join(self.evidence, f"{self._kept:02d}-{safe}")

    def keep(self, label, text, suffix=".txt"):
        """Keeps TEXT (a job's stderr, a view) as evidence; its last
        KEPT_BYTES only."""
        path = self._label([], label) + suffix
        _write_kept(path, text)
        return path

    def run(self, argv, env=None, timeout=60, stdin=None, label=None):
        """Runs argv; returns (exit status, stdout, stderr), both kept as
        evidence (LABEL.out, LABEL.err). A timeout is a failure of the
        check, reported, not raised."""
        base = self._label(argv, label)
        try:
            done = subprocess.run(argv, env=env or dict(os.environ), capture_output=True,
                                  text=True, timeout=timeout, stdin=stdin,
                                  errors="replace")
            result = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as expired:
            result = 124, _text(expired.stdout), _text(expired.stderr) + \
                f"\n(timed out after {timeout} s)"
        except OSError as error:
            result = 127, "", f"cannot run {argv[0]}: {error}"
        _write_kept(base + ".cmd", " ".join(argv) + f"\nexit {result[0]}\n")
        _write_kept(base + ".out", result[1])
        _write_kept(base + ".err", result[2])
        return result

    def start(self, argv, env=None, label=None, stdin=subprocess.DEVNULL):
        """Starts argv in the background, its stdout and stderr written
        straight to the evidence (so a job killed with the check still left
        them); Job.wait() returns (exit status, stdout, stderr)."""
        return Job(self._label(argv, label), argv, env or dict(os.environ), stdin)

    def measure(self, key, value):
        """Keeps one measurement now (EVIDENCE/partial.json): a check stopped
        past its budget is reported with what it had measured."""
        self.measured[key] = value
        with open(os.path.join(self.evidence, "partial.json.tmp"), "w") as out:
            json.dump(self.measured, out)
        os.replace(os.path.join(self.evidence, "partial.json.tmp"),
                   os.path.join(self.evidence, "partial.json"))

    def finish(self, status, summary, measurements=None, **details):
        """Prints the check's record and exits (0 whatever the verdict: the
        verdict is in the record). Measurements kept with measure() are
        reported too, under those given here."""
        assert status in STATUSES, status
        record = {"kind": "gpu-check", "version": 1, "name": self.name, "status": status,
                  "summary": summary, "duration_s": round(self.elapsed_s(), 3),
                  "measurements": dict(self.measured, **(measurements or {})),
                  "details": details}
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
        sys.exit(0)


class Job:
    """A job started by Context.start."""

    def __init__(self, base, argv, env, stdin):
        self.base = base
        _write_kept(base + ".cmd", " ".join(argv) + "\n")
        with open(base + ".out", "w") as out, open(base + ".err", "w") as err:
            self.process = subprocess.Popen(argv, env=env, stdout=out, stderr=err, stdin=stdin)

    def wait(self, timeout=None):
        """(exit status, stdout, stderr); 124 when it had to be killed after
        TIMEOUT seconds."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = 124
        with open(self.base + ".cmd", "a") as cmd:
            cmd.write(f"exit {code}\n")
        with open(self.base + ".out", errors="replace") as out, \
                open(self.base + ".err", errors="replace") as err:
            return code, out.read(), err.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _write_kept(path, text):
    data = _text(text).encode(errors="replace")
    with open(path, "wb") as out:
        if len(data) > KEPT_BYTES:
            out.write(f"[first {len(data) - KEPT_BYTES} bytes left out]\n".encode())
            data = data[-KEPT_BYTES:]
        out.write(data)


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
