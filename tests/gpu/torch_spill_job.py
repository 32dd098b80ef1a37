#!/usr/bin/env python3
"""The two PyTorch jobs of check_memory_spill.py.

  torch_spill_job.py opportunistic BYTES READY STOP
  torch_spill_job.py production BYTES ALLOCATED GO
  torch_spill_job.py link BYTES
  torch_spill_job.py train BYTES READY STOP   (check_suspend.py: see train())

opportunistic: holds BYTES of int32 (x[i] = i mod 65521), computes on all of
it (x += 1, again and again) from the moment it has created READY until STOP
exists, then checks that every element is its pattern plus the number of
passes.

production: allocates BYTES in one tensor (timed), writes it, creates
ALLOCATED, waits for GO, then times matrix multiplications on tensors it
allocated first, and checks its own bytes. An allocation that does not fit
is reported ("allocated": false), not raised.

link: the host link's speed, what a spill is judged against: BYTES copied
between pinned host memory and the device, each way, best of three.

Each prints one JSON object (kind "torch-spill-job"). The files are waited
for 120 s at most; a job that waits longer fails.
"""
import json
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic losses (train)
import torch  # noqa: E402 (after the cuBLAS setting, which it reads at load)

PATTERN = 65521
CHUNK = 16 << 20  # elements per chunk: what the pattern's check holds at a time
WAIT_S = 120


def wait_for(path):
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"torch_spill_job: error: {path} did not appear in {WAIT_S} s")
        time.sleep(0.01)  # a file another process creates: nothing to block on


def synchronize():
    torch.cuda.synchronize()


def opportunistic(size, ready, stop):
    elements = size // 4
    data = torch.empty(elements, dtype=torch.int32, device="cuda")
    for start in range(0, elements, CHUNK):
        end = min(start + CHUNK, elements)
        data[start:end] = (torch.arange(start, end, device="cuda") % PATTERN).to(torch.int32)
    synchronize()
    passes = 0
    open(ready, "w").close()
    started = time.monotonic()
    while not os.path.exists(stop):
        data.add_(1)
        synchronize()
        passes += 1
    seconds = time.monotonic() - started
    intact = True
    for start in range(0, elements, CHUNK):
        end = min(start + CHUNK, elements)
        expected = (torch.arange(start, end, device="cuda") % PATTERN + passes).to(torch.int32)
        if not torch.equal(data[start:end], expected):
            intact = False
            break
    return {"bytes": elements * 4, "passes": passes, "compute_s": round(seconds, 3),
            "intact": intact}


def production(size, allocated, go):
    n = 4096
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")
    synchronize()
    started = time.monotonic()
    try:
        block = torch.empty(size, dtype=torch.uint8, device="cuda")
        synchronize()
    except torch.OutOfMemoryError as error:
        open(allocated, "w").close()
        return {"allocated": False, "error": "OutOfMemoryError", "message": str(error)[:200]}
    alloc_s = time.monotonic() - started
    block.fill_(5)
    synchronize()
    open(allocated, "w").close()
    wait_for(go)
    for _ in range(10):  # warm-up
        torch.matmul(a, b, out=c)
    synchronize()
    steps = 100
    started = time.monotonic()
    for _ in range(steps):
        torch.matmul(a, b, out=c)
    synchronize()
    step_ms = (time.monotonic() - started) * 1000 / steps
    # In 64 MiB pieces: a comparison's result takes memory the GPU may not have.
    piece = 64 << 20
    intact = all(bool((block[start:start + piece] == 5).all().item())
                 for start in range(0, size, piece))
    return {"allocated": True, "bytes": size, "alloc_s": round(alloc_s, 4),
            "step_ms": round(step_ms, 4), "intact": intact}


def train(size, ready, stop):
    """A small deterministic training job for check_suspend.py: BYTES of
    int32 pattern beside an MLP trained on fixed data (seed 0) for a fixed
    number of steps (600), and on until STOP exists ("-": no more). READY
    (with the tensors' addresses) once the first 100 steps ran; the steps
    after it may be held by a suspend. The losses of every step are
    reported: the first 600 compare with a run that was never suspended."""
    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    elements = size // 4
    data = torch.empty(elements, dtype=torch.int32, device="cuda")
    for start in range(0, elements, CHUNK):  # in chunks: no temporary of the whole size
        end = min(start + CHUNK, elements)
        data[start:end] = (torch.arange(start, end, device="cuda") % PATTERN).to(torch.int32)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 10)).cuda()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(256, 1024, device="cuda")
    labels = torch.randint(0, 10, (256,), device="cuda")
    addresses = {"data": data.data_ptr(), "weight": model[0].weight.data_ptr()}
    losses = []
    steps, announce_at = 600, 100
    step = 0
    while step < steps or (stop != "-" and not os.path.exists(stop)):
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())  # a synchronisation per step, as training has
        if step == announce_at and ready != "-":
            with open(ready + ".tmp", "w") as out:
                json.dump(addresses, out)
            os.rename(ready + ".tmp", ready)
        step += 1
    synchronize()
    intact = all(torch.equal(data[start:min(start + CHUNK, elements)],
                             (torch.arange(start, min(start + CHUNK, elements), device="cuda")
                              % PATTERN).to(torch.int32))
                 for start in range(0, elements, CHUNK))
    after = {"data": data.data_ptr(), "weight": model[0].weight.data_ptr()}
    return {"bytes": elements * 4, "losses": losses, "intact": intact,
            "addresses_before": addresses, "addresses_after": after,
            "max_reserved_bytes": torch.cuda.max_memory_reserved()}


def link(size):
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(size, dtype=torch.uint8, device="cuda")
    host.fill_(3)
    best = {"htod": float("inf"), "dtoh": float("inf")}
    for _ in range(3):
        for direction, (to, source) in (("htod", (device, host)), ("dtoh", (host, device))):
            synchronize()
            started = time.monotonic()
            to.copy_(source, non_blocking=True)
            synchronize()
            best[direction] = min(best[direction], time.monotonic() - started)
    return {"bytes": size,
            "htod_gib_per_s": round(size / 2**30 / best["htod"], 2),
            "dtoh_gib_per_s": round(size / 2**30 / best["dtoh"], 2)}


def main():
    roles = {"opportunistic": (opportunistic, 5), "production": (production, 5), "link": (link, 3),
             "train": (train, 5)}
    if len(sys.argv) < 3 or sys.argv[1] not in roles or len(sys.argv) != roles[sys.argv[1]][1]:
        sys.stderr.write("usage: torch_spill_job.py opportunistic|production|train BYTES FILE FILE\n"
                         "       torch_spill_job.py link BYTES\n")
        return 2
    role, size = sys.argv[1], int(sys.argv[2])
    result = roles[role][0](size, *sys.argv[3:])
    result.update({"kind": "torch-spill-job", "version": 1, "role": role})
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
