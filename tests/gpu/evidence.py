"""What scripts/gpu-check keeps beside each check's verdict, so that a run
on a lent machine explains itself afterwards (docs/validation.md,
"Evidence"): the coordinator's files, `gpushare-ctl ls` sampled while the
check runs, what the check left in its scratch, and one archive of it all
small enough to carry back.

Standard library only, like the checks.

  python3 evidence.py archive DIR OUT [LIMIT-BYTES]   archive() on its own:
                                                    its result as JSON
"""

import io
import json
import os
import re
import shutil
import stat
import subprocess
import tarfile
import threading
import time
import zlib

ARCHIVE_LIMIT = 16 << 20
# Samples of `gpushare-ctl ls` stop at this size (with a note): two a second
# over a check's budget is far less in a healthy run.
SAMPLES_LIMIT = 4 << 20
# A file left in a check's scratch bigger than this (the simulated GPU's
# state, a dump) is named, not copied.
SCRATCH_FILE_LIMIT = 64 << 20


class LsSampler:
    """Runs `gpushare-ctl ls` every INTERVAL seconds in a thread while a
    check runs, one JSON line per sample in PATH:
    {"t_s": seconds since the start, "exit": status, "jobs": [ls records]}.
    Where no coordinator answers, one line says so until one does. Bounded
    by SAMPLES_LIMIT."""

    def __init__(self, ctl, env, path, interval=0.5):
        self.argv = [ctl, "ls", "--format", "json"]
        self.env, self.path, self.interval = env, path, interval
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.samples = 0

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=15)

    def _loop(self):
        started = time.monotonic()
        written = 0
        last_error = None
        with open(self.path, "w") as out:
            while not self.stopping.is_set():
                began = time.monotonic()
                try:
                    done = subprocess.run(self.argv, env=self.env, capture_output=True, text=True,
                                          timeout=5, errors="replace", stdin=subprocess.DEVNULL)
                    code, text, error = done.returncode, done.stdout, done.stderr.strip()
                except (OSError, subprocess.TimeoutExpired) as failure:
                    code, text, error = 124, "", str(failure)
                sample = {"t_s": round(began - started, 3), "exit": code}
                if code == 0:
                    sample["jobs"] = [json.loads(line) for line in text.splitlines()
                                      if line.startswith("{")]
                    last_error = None
                elif error != last_error:  # "no coordinator" once, not twice a second
                    sample["error"] = error[-300:]
                    last_error = error
                else:
                    sample = None
                if sample is not None:
                    line = json.dumps(sample) + "\n"
                    if written + len(line) > SAMPLES_LIMIT:
                        out.write(json.dumps({"t_s": sample["t_s"], "note": "sampling stopped: "
                                              f"{SAMPLES_LIMIT} bytes of samples"}) + "\n")
                        return
                    out.write(line)
                    out.flush()
                    written += len(line)
                    self.samples += 1
                self.stopping.wait(max(0.0, self.interval - (time.monotonic() - began)))


def collect_coordinator(run_dir, dest, coordinator_gone):
    """Copies the coordinator's files (its log, state, decisions; not its
    socket) from the per-user directory RUN_DIR into DEST. When the
    coordinator is gone its log is then removed, so that the next check's
    coordinator starts a log of its own."""
    if not os.path.isdir(run_dir):
        return []
    os.makedirs(dest, exist_ok=True)
    copied = []
    for leaf in sorted(os.listdir(run_dir)):
        source = os.path.join(run_dir, leaf)
        try:
            if not stat.S_ISREG(os.lstat(source).st_mode):
                continue
            shutil.copyfile(source, os.path.join(dest, leaf))
            copied.append(leaf)
            if coordinator_gone and leaf == "coordinator.log":
                os.unlink(source)
        except OSError:
            continue
    return copied


# The coordinator's notes of a job's registration and of a process leaving
# (lib/coord/server: server_requests.cc and server.cc).
_REGISTERED = re.compile(r"job (\d+) '([^']*)' registered: pid (\d+)")
_JOINED = re.compile(r"pid (\d+) joined job (\d+) '([^']*)'")
_LEFT = re.compile(r"job (\d+) '([^']*)' \(pid (\d+)\) (.+?)(; the job's other processes go on)?$")


def jobs_seen(evidence):
    """Writes EVIDENCE/jobs-seen.jsonl: one record per job the check's
    coordinator registered, as its log tells it (its id, name, pids, and how
    its last process left), with the number of `ls` samples that showed it.
    The log is the evidence that a job ran; the samples, taken every half
    second, may miss a job shorter than that, so a job's presence is never
    taken from them alone. Returns the records."""
    jobs = {}
    try:
        with open(os.path.join(evidence, "coordinator", "coordinator.log"),
                  errors="replace") as log:
            for line in log:
                line = line.rstrip("\n")
                if m := _REGISTERED.search(line):
                    jobs[int(m[1])] = {"kind": "job-seen", "version": 1, "job_id": int(m[1]),
                                       "name": m[2], "pids": [int(m[3])], "registered": True,
                                       "ended": None}
                elif (m := _JOINED.search(line)) and int(m[2]) in jobs:
                    jobs[int(m[2])]["pids"].append(int(m[1]))
                elif (m := _LEFT.search(line)) and int(m[1]) in jobs and not m[5]:
                    jobs[int(m[1])]["ended"] = m[4]
    except OSError:
        pass
    shown = {}
    try:
        with open(os.path.join(evidence, "ls-samples.jsonl"), errors="replace") as samples:
            for line in samples:
                try:
                    sample = json.loads(line)
                except ValueError:
                    continue
                for job in sample.get("jobs") or []:
                    if isinstance(job, dict) and isinstance(job.get("id"), int):
                        shown[job["id"]] = shown.get(job["id"], 0) + 1
    except OSError:
        pass
    records = [dict(job, ls_samples=shown.get(job_id, 0)) for job_id, job in sorted(jobs.items())]
    with open(os.path.join(evidence, "jobs-seen.jsonl"), "w") as out:
        out.writelines(json.dumps(record) + "\n" for record in records)
    return records


def copy_scratch(source, dest):
    """Copies the regular files a check left under SOURCE into DEST
    (sockets, pipes and files over SCRATCH_FILE_LIMIT are named in
    DEST/LEFT-OUT.txt instead)."""
    if not os.path.isdir(source):
        return
    left_out = []
    for top, _, leaves in os.walk(source):
        for leaf in sorted(leaves):
            path = os.path.join(top, leaf)
            relative = os.path.relpath(path, source)
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_size > SCRATCH_FILE_LIMIT:
                    left_out.append(f"{relative} ({info.st_size} bytes, not a small regular file)")
                    continue
                os.makedirs(os.path.join(dest, os.path.dirname(relative)), exist_ok=True)
                shutil.copyfile(path, os.path.join(dest, relative))
            except OSError as error:
                left_out.append(f"{relative} ({error.strerror})")
    if left_out:
        os.makedirs(dest, exist_ok=True)
        with open(os.path.join(dest, "LEFT-OUT.txt"), "w") as out:
            out.write("\n".join(left_out) + "\n")


def _files(root, skip):
    found = []
    for top, dirs, leaves in os.walk(root):
        dirs.sort()
        for leaf in sorted(leaves):
            path = os.path.join(top, leaf)
            if os.path.abspath(path) in skip or not os.path.isfile(path) or os.path.islink(path):
                continue
            found.append((os.path.relpath(path, root), os.path.getsize(path)))
    return found


def _compressed_size(path):
    """What gzip makes of the file, near enough to share out the limit."""
    packer = zlib.compressobj(6)
    size = 0
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            size += len(packer.compress(block))
    return size + len(packer.flush())


def _cut(path, keep):
    """The file's first and last KEEP/2 bytes, with a line saying so."""
    with open(path, "rb") as source:
        head = source.read(keep // 2)
        size = os.fstat(source.fileno()).st_size
        source.seek(max(size - keep // 2, keep // 2))
        tail = source.read()
    return head + f"\n[gpu-check: {size - len(head) - len(tail)} bytes cut here to keep the " \
        "archive within its limit]\n".encode() + tail


def archive(root, out_path, limit=ARCHIVE_LIMIT, prefix="evidence"):
    """Writes every file under ROOT (but OUT_PATH) into OUT_PATH, a
    .tar.gz of at most LIMIT bytes, under PREFIX/. When all of it would not
    fit, the limit is shared out: small files whole, the biggest cut to
    their first and last parts (marked in the file), and if that is still
    not enough the biggest left out; PREFIX/ARCHIVE-NOTES.txt names every
    file cut or left out. Returns {"bytes", "limit_bytes", "files", "cut",
    "left_out"}."""
    files = _files(root, {os.path.abspath(out_path), os.path.abspath(out_path) + ".tmp"})
    estimates = {name: _compressed_size(os.path.join(root, name)) for name, _ in files}
    # Room for the tar headers and gzip's framing, and an estimate that errs.
    share = limit * 0.9 - 1024 * len(files) - (64 << 10)
    for attempt in range(6):
        allowed, cut, left_out = {}, [], []
        room = share
        by_estimate = sorted(files, key=lambda f: estimates[f[0]])
        for index, (name, size) in enumerate(by_estimate):
            fair = room / (len(by_estimate) - index)  # water-filling: the small ones whole
            if estimates[name] <= fair:
                allowed[name] = size
                room -= estimates[name]
            elif attempt >= 3 or fair < 4096:
                left_out.append(name)
            else:
                allowed[name] = max(4096, int(size * fair / max(estimates[name], 1)))
                cut.append(name)
                room -= fair
        notes = []
        if cut or left_out:
            notes += [f"cut to {allowed[n]} bytes, its beginning and end (of "
                      f"{dict(files)[n]}): {n}" for n in cut]
            notes += [f"left out ({dict(files)[n]} bytes): {n}" for n in left_out]
        temporary = out_path + ".tmp"
        with tarfile.open(temporary, "w:gz") as tar:
            for name, size in files:
                if name in left_out:
                    continue
                full = os.path.join(root, name)
                if name in cut:
                    data = _cut(full, allowed[name])
                    info = tarfile.TarInfo(f"{prefix}/{name}")
                    info.size, info.mtime, info.mode = len(data), int(os.path.getmtime(full)), 0o644
                    tar.addfile(info, io.BytesIO(data))
                else:
                    tar.add(full, arcname=f"{prefix}/{name}", recursive=False)
            if notes:
                data = ("The evidence did not fit in " + str(limit) + " bytes:\n" +
                        "\n".join(notes) + "\n").encode()
                info = tarfile.TarInfo(f"{prefix}/ARCHIVE-NOTES.txt")
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                tar.addfile(info, io.BytesIO(data))
        size = os.path.getsize(temporary)
        if size <= limit:
            os.replace(temporary, out_path)
            return {"bytes": size, "limit_bytes": limit, "files": len(files) - len(left_out),
                    "cut": sorted(cut), "left_out": sorted(left_out)}
        share *= 0.6 * limit / size  # the estimates erred: aim lower
    os.unlink(temporary)
    raise RuntimeError(f"cannot fit the evidence in {limit} bytes")


if __name__ == "__main__":
    import sys
    if len(sys.argv) in (4, 5) and sys.argv[1] == "archive":
        print(json.dumps(archive(sys.argv[2], sys.argv[3],
                                 int(sys.argv[4]) if len(sys.argv) == 5 else ARCHIVE_LIMIT)))
        sys.exit(0)
    sys.stderr.write("usage: evidence.py archive DIR OUT [LIMIT-BYTES]\n")
    sys.exit(2)
