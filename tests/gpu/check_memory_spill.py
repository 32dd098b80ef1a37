#!/usr/bin/env python3
"""memory-spill: production takes memory an opportunistic job holds; the
opportunistic job's memory spills to the host and its data survives.

The pair: an opportunistic job holds a third of the GPU and computes on it;
then a production job allocates three quarters of the GPU, more than is
left. Run three ways:

  1. without gpushare: production's allocation must fail, or the sizes test
     nothing (the pair would fit without a spill);
  2. under gpushare (the opportunistic job with --opportunistic): production
     must get its memory, the opportunistic job must have bytes on the host
     (gpushare-ctl show) and its data must be intact when production is done;
     the spill's GiB/s is the bytes spilled over production's allocation time;
  3. production alone without gpushare: its speed, against which production's
     speed next to the spilled job is reported (not judged: what the spill
     costs production is reported for the memory work to act on);
  4. with PyTorch, the host link's speed (pinned copies of up to 4 GiB each
     way, best of three, without gpushare): the spill must run at >= 0.7 of
     the device-to-host speed, counted over production's whole wait (its
     allocation's time), or the check fails "below target". The migrations'
     own rate (the bytes and time of the spill batches the opportunistic
     job's interposer logs at GPUSHARE_LOG=info) is reported beside it.

The coordinator's view is sampled from production's start until the spill
has ended (no migration under way, bytes on the host): the job must never
be shown stale (its memory work runs beside its heartbeat), and the bytes
the driver evicted by itself count as spilled (host-resident).

On a real GPU the jobs are PyTorch (torch_spill_job.py); on the simulated
GPU, where PyTorch cannot run, and on a GPU without PyTorch, they are
gpushare-cuda-client step lists with the same shape (on the simulator a
1.5 GiB GPU with eviction off, so only gpushare's spill makes room). GPUSHARE_SPILL=off in the environment keeps the opportunistic job's
memory on the device: the check must then fail.
"""
import json
import os
import re
import subprocess
import sys
import time

import gpucheck

MiB = 1 << 20
WAIT_S = 120
SIM_MEMORY = 1536 * MiB
SIM_CONTEXT = 128 * MiB

ctx = gpucheck.Context("memory-spill")
why_no_torch = gpucheck.torch_status(ctx)
use_torch = why_no_torch is None
here = os.path.dirname(os.path.abspath(__file__))
work = os.path.join(ctx.scratch, "memory-spill")
os.makedirs(work, exist_ok=True)


def device_memory():
    if ctx.sim:
        return SIM_MEMORY
    code, out, err = ctx.run([sys.executable, os.path.join(here, "gpucheck.py"), "driver-info",
                              "libcuda.so.1"])
    info = json.loads(out) if code == 0 and out.strip() else None
    if not info:
        ctx.finish("failed", "cannot read the device's memory through the driver",
                   stderr=gpucheck.tail(err))
    return info["mem_total_bytes"]


def environment(base):
    env = dict(base)
    if ctx.sim:
        # A simulated GPU of this check's own: small, and with eviction off
        # so that only gpushare's spill makes room.
        env.update({"GPUSHARE_SIM_STATE": os.path.join(work, "sim-state"),
                    "GPUSHARE_SIM_MEMORY": str(SIM_MEMORY),
                    "GPUSHARE_SIM_CTX_OVERHEAD": str(SIM_CONTEXT),
                    "GPUSHARE_SIM_EVICT": "off"})
    return env


def opportunistic_argv(size, ready, stop):
    if not use_torch:
        return [ctx.path("tests", "gpushare-cuda-client"), "init", "ctx", "kernel:spin",
                f"alloc:plain:{size}", "fill:7", "timed:10:1000", f"ready:{ready}",
                f"wait:{stop}", "timed:10:1000", "check:7"]
    return [sys.executable, os.path.join(here, "torch_spill_job.py"), "opportunistic", str(size),
            ready, stop]


def production_argv(size, allocated, go):
    if not use_torch:
        return [ctx.path("tests", "gpushare-cuda-client"), "init", "ctx", "kernel:spin",
                f"?alloc:plain:{size}", "fill:5", f"ready:{allocated}", f"wait:{go}",
                "timed:50:1000", "check:5"]
    return [sys.executable, os.path.join(here, "torch_spill_job.py"), "production", str(size),
            allocated, go]


def result_of(role, out):
    """The job's result as torch_spill_job.py reports it (from the client's
    steps on the simulated GPU); None when it printed none."""
    if use_torch:
        records = gpucheck.json_records(out, "torch-spill-job")
        return records[-1] if records else None
    steps = gpucheck.json_records(out)
    by_step = {}
    for step in steps:
        by_step.setdefault(step.get("step"), []).append(step)
    if "alloc" not in by_step:
        return None
    alloc = by_step["alloc"][0]
    checks = by_step.get("check", [])
    intact = bool(checks) and checks[-1].get("result") == "CUDA_SUCCESS"
    if role == "opportunistic":
        return {"bytes": alloc.get("bytes"), "passes": 10 * len(by_step.get("timed", [])),
                "intact": intact}
    if alloc.get("result") != "CUDA_SUCCESS":
        return {"allocated": False, "error": alloc.get("result")}
    timed = by_step.get("timed", [])
    return {"allocated": True, "bytes": alloc.get("bytes"), "alloc_s": alloc["wall_ms"] / 1000,
            "step_ms": timed[-1]["wall_ms"] / 50 if timed else None, "intact": intact}


class Job:
    def __init__(self, name, argv, env):
        self.name = name
        self.out_path = os.path.join(work, name + ".out")
        self.err_path = os.path.join(work, name + ".err")
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.process = subprocess.Popen(argv, env=env, stdout=out, stderr=err,
                                            stdin=subprocess.DEVNULL)

    def wait_for_file(self, path):
        """True once path exists; False when the job exited first or WAIT_S passed."""
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(path):
            if self.process.poll() is not None or time.monotonic() > deadline:
                return os.path.exists(path)
            time.sleep(0.01)  # a file the job creates: nothing to block on
        return True

    def finish(self):
        try:
            code = self.process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        with open(self.out_path) as out, open(self.err_path) as err:
            return code, out.read(), err.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def touch(path):
    open(path, "w").close()


def spill_view(name, env):
    code, out, _ = ctx.run([ctx.bin("gpushare-ctl"), "show", name], env=env, timeout=20)
    records = gpucheck.json_records(out)
    return records[-1] if code == 0 and records else None


SPILLED = re.compile(r"spilled \d+ allocations, (\d+) bytes, in ([0-9.]+) ms")


def spill_batches(stderr):
    """(bytes, seconds) of the spill batches the job's interposer logged."""
    moved, seconds = 0, 0.0
    for match in SPILLED.finditer(stderr):
        moved += int(match.group(1))
        seconds += float(match.group(2)) / 1000
    return (moved, seconds) if moved else None


def settled_view(name, env, started):
    """Samples the coordinator's view of the opportunistic job until its
    spill has ended (no migration under way, bytes on the host), at most
    WAIT_S. Returns (last view, states seen in order, seconds from
    production's start to the end of the spill as the samples saw it)."""
    states, view, deadline = [], None, time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        sample = spill_view(name, env)
        if sample:
            view = sample
            if not states or states[-1] != sample.get("state"):
                states.append(sample.get("state"))
            if sample.get("state") not in ("spilling", "restoring") and \
                    sample.get("mem_host_resident_bytes"):
                return view, states, time.monotonic() - started
        time.sleep(0.05)  # sampling a job's state: nothing to block on
    return view, states, None


def run_pair(label, under_gpushare, opp_size, prod_size, env):
    """Runs the pair; returns (opportunistic result, production result,
    coordinator's view of the opportunistic job, failure or None)."""
    files = {name: os.path.join(work, f"{label}-{name}")
             for name in ("ready", "stop", "allocated", "go")}
    opp_name = f"gc-spill-opp-{label}"
    wrap_opp = ctx.gpushare_run("--opportunistic", "--name", opp_name) if under_gpushare else []
    wrap_prod = ctx.gpushare_run("--name", f"gc-spill-prod-{label}") if under_gpushare else []
    job_env = env if under_gpushare else ctx.direct_env() | {k: env[k] for k in env
                                                             if k.startswith("GPUSHARE_SIM_")}
    ctx.progress(f"{label}: the opportunistic job takes {opp_size / 2**30:.2f} GiB")
    # At info, the job's interposer logs each spill batch's bytes and time
    # ("spilled N allocations, B bytes, in T ms"): the migration's own rate.
    opp_env = job_env | ({"GPUSHARE_LOG": "info"} if under_gpushare else {})
    opp = Job(f"{label}-opportunistic", wrap_opp + opportunistic_argv(
        opp_size, files["ready"], files["stop"]), opp_env)
    prod = None
    try:
        if not opp.wait_for_file(files["ready"]):
            opp.stop()
            code, out, err = opp.finish()
            return None, None, None, (f"{label}: the opportunistic job did not start computing "
                                      f"(exit {code}): {gpucheck.tail(err, 5)}")
        ctx.progress(f"{label}: the production job takes {prod_size / 2**30:.2f} GiB")
        started = time.monotonic()
        prod = Job(f"{label}-production", wrap_prod + production_argv(
            prod_size, files["allocated"], files["go"]), job_env)
        prod.wait_for_file(files["allocated"])
        view = None
        if under_gpushare:
            # The spill may go on after production has its memory (the
            # driver hands over pages as they leave): wait for its end.
            view, states, spill_s = settled_view(opp_name, env, started)
            view = dict(view or {}, states_seen=states, spill_end_s=spill_s)
        touch(files["go"])
        prod_code, prod_out, prod_err = prod.finish()
        touch(files["stop"])
        opp_code, opp_out, opp_err = opp.finish()
    finally:
        touch(files["go"])
        touch(files["stop"])
        for job in (opp, prod):
            if job is not None:
                job.stop()
    opp_result = result_of("opportunistic", opp_out)
    if opp_result is not None:
        opp_result["migrations"] = spill_batches(opp_err)
    prod_result = result_of("production", prod_out)
    if prod_result is None:
        return opp_result, None, view, (f"{label}: the production job reported nothing (exit "
                                        f"{prod_code}): {gpucheck.tail(prod_err, 5)}")
    if opp_result is None:
        return None, prod_result, view, (f"{label}: the opportunistic job reported nothing "
                                         f"(exit {opp_code}): {gpucheck.tail(opp_err, 5)}")
    return opp_result, prod_result, view, None


def production_alone(prod_size, env):
    files = {name: os.path.join(work, f"alone-{name}") for name in ("allocated", "go")}
    touch(files["go"])
    job_env = ctx.direct_env() | {k: env[k] for k in env if k.startswith("GPUSHARE_SIM_")}
    ctx.progress("production alone, without gpushare")
    prod = Job("alone-production", production_argv(prod_size, files["allocated"], files["go"]),
               job_env)
    code, out, err = prod.finish()
    return result_of("production", out), code, err


total = device_memory()
opp_size = total // 3 // MiB * MiB
prod_size = total * 3 // 4 // MiB * MiB
env = environment(os.environ)
measurements = {"device_bytes": total, "opportunistic_bytes": opp_size,
                "production_bytes": prod_size, "jobs": "pytorch" if use_torch else "cuda-client"}
if not use_torch:
    ctx.progress(f"driver-API jobs: {why_no_torch}")

# 1. Without gpushare the pair must not fit, or nothing here needs a spill.
_, plain_prod, _, failure = run_pair("plain", False, opp_size, prod_size, env)
if failure:
    ctx.finish("failed", failure, measurements)
measurements["production_without_gpushare"] = "allocated" if plain_prod["allocated"] else \
    f"refused ({plain_prod.get('error')})"
if plain_prod["allocated"]:
    ctx.finish("failed", "the pair fits without gpushare: these sizes test no spill",
               measurements)

# 2. Under gpushare production gets its memory and the spilled data survives.
opp, prod, view, failure = run_pair("gpushare", True, opp_size, prod_size, env)
if failure:
    ctx.finish("failed", failure, measurements)
spilled = (view or {}).get("mem_host_resident_bytes")
measurements.update({"production_allocated": prod["allocated"],
                     "spilled_bytes": spilled,
                     "opportunistic_intact": opp["intact"],
                     "opportunistic_passes": opp.get("passes")})
failures = []
if not prod["allocated"]:
    failures.append(f"production did not get its memory ({prod.get('error')})")
else:
    measurements["production_alloc_s"] = round(prod["alloc_s"], 4)
    if not prod["intact"]:
        failures.append("production's own data changed")
if not opp["intact"]:
    failures.append("the opportunistic job's data did not survive the spill")
if prod["allocated"] and not spilled:
    failures.append(f"production got its memory but the coordinator shows nothing spilled "
                    f"({json.dumps(view)})")
measurements["coordinator_states"] = view.get("states_seen")
measurements["spill_end_s"] = round(view["spill_end_s"], 3) if view.get("spill_end_s") else None
measurements["evicted_by_driver_bytes"] = view.get("mem_evicted_bytes", 0)
if "stale" in (view.get("states_seen") or []):
    failures.append(f"the coordinator showed the opportunistic job stale during the spill "
                    f"(states {view.get('states_seen')})")
if failures:
    ctx.finish("failed", "; ".join(failures), measurements)
rate = spilled / 2**30 / prod["alloc_s"] if prod["alloc_s"] > 0 else None
measurements["spill_gib_per_s"] = round(rate, 2) if rate else None
# The migrations alone, as the job timed them (its batches' bytes and time).
migrations = opp.get("migrations")
migration_rate = migrations[0] / 2**30 / migrations[1] if migrations and migrations[1] else None
measurements["spill_migration_gib_per_s"] = round(migration_rate, 2) if migration_rate else None

# 3. Production's speed next to the spilled job, against production alone.
alone, code, err = production_alone(prod_size, env)
if not alone or not alone.get("allocated"):
    ctx.finish("failed", f"production alone without gpushare failed (exit {code}): "
               f"{gpucheck.tail(err, 5)}", measurements)
measurements.update({"production_step_ms_alone": round(alone["step_ms"], 4),
                     "production_step_ms_beside_spilled": round(prod["step_ms"], 4),
                     "production_speed_fraction": round(alone["step_ms"] / prod["step_ms"], 3)})
# 4. The spill against the link, measured in the same run (PyTorch only: the
# driver-API jobs have no pinned-copy step, and the simulator's link is
# bench/memory's).
LINK_TARGET = 0.7
below_target = ""
if use_torch:
    ctx.progress("the host link's speed, pinned copies without gpushare")
    link_bytes = min(opp_size, 4 << 30)
    code, out, err = ctx.run([sys.executable, os.path.join(here, "torch_spill_job.py"), "link",
                              str(link_bytes)], env=ctx.direct_env(), timeout=WAIT_S)
    links = gpucheck.json_records(out, "torch-spill-job")
    if code != 0 or not links:
        ctx.finish("failed", f"the link measurement failed (exit {code}): "
                   f"{gpucheck.tail(err, 5)}", measurements)
    measurements.update({"link_htod_gib_per_s": links[-1]["htod_gib_per_s"],
                         "link_dtoh_gib_per_s": links[-1]["dtoh_gib_per_s"]})
    if rate:
        fraction = rate / links[-1]["dtoh_gib_per_s"]
        measurements["spill_fraction_of_link"] = round(fraction, 3)
        if migration_rate:
            measurements["spill_migration_fraction_of_link"] = round(
                migration_rate / links[-1]["dtoh_gib_per_s"], 3)
        if fraction < LINK_TARGET:
            below_target = (f"; below target: the spill ran at {fraction:.2f} of the link's "
                            f"{links[-1]['dtoh_gib_per_s']} GiB/s < {LINK_TARGET}")

ctx.finish("failed" if below_target else "passed",
           f"production got {prod_size / 2**30:.2f} GiB beside a "
           f"{opp_size / 2**30:.2f} GiB opportunistic job (refused without gpushare); "
           f"{spilled / 2**30:.2f} GiB spilled in {prod['alloc_s']:.3f} s "
           f"({measurements['spill_gib_per_s']} GiB/s), data intact; production at "
           f"{measurements['production_speed_fraction']:.2f} of its speed alone{below_target}",
           measurements)
