#!/usr/bin/env python3
"""A small, deterministic training loop for check_torch_training.py: a
convnet on synthetic data with a fixed seed. Prints one JSON object: the
loss of every step and the time per step after warm-up.

  torch_train.py [--steps N] [--warmup W] [--seed S] [--per-step]

--per-step synchronises after every step and adds each step's time
("step_ms_each"), for co-location, where the median step shows the shared
speed whatever ran alone at the edges.
"""
import argparse
import json
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402 (after the cuBLAS setting, which it reads at load)

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--warmup", type=int, default=30)
parser.add_argument("--seed", type=int, default=1234)
parser.add_argument("--per-step", action="store_true")
options = parser.parse_args()

torch.manual_seed(options.seed)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

device = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(128, 128, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(), torch.nn.Linear(128, 10)).to(device)
optimiser = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
generator = torch.Generator(device=device).manual_seed(options.seed)
batches = [(torch.randn(128, 3, 32, 32, device=device, generator=generator),
            torch.randint(0, 10, (128,), device=device, generator=generator)) for _ in range(8)]
loss_fn = torch.nn.CrossEntropyLoss()

losses = []
each = []
start = None
for step in range(options.steps):
    if step == options.warmup:
        torch.cuda.synchronize()
        start = time.perf_counter()
    began = time.perf_counter()
    inputs, labels = batches[step % len(batches)]
    optimiser.zero_grad(set_to_none=True)
    loss = loss_fn(model(inputs), labels)
    loss.backward()
    optimiser.step()
    losses.append(loss.detach())
    if options.per_step:
        torch.cuda.synchronize()
        if step >= options.warmup:
            each.append((time.perf_counter() - began) * 1000)
torch.cuda.synchronize()
elapsed = time.perf_counter() - start
record = {"kind": "torch-train", "version": 1,
          "losses": [float(x) for x in torch.stack(losses).cpu()],
          "step_ms": elapsed * 1000 / (options.steps - options.warmup),
          "max_memory_reserved_bytes": torch.cuda.max_memory_reserved()}
if options.per_step:
    record["step_ms_each"] = each
print(json.dumps(record))
