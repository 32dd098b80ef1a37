#!/usr/bin/env python3
"""One side of a co-location pair for check_colocation.py: a PyTorch job
that prints one JSON record per step with t_ms (CLOCK_MONOTONIC, the clock
gpushare-workload's records use), so that rates are counted inside the
other job's window.

  torch_pair_job.py --model resnet50|matmul [--batch N] [--host-ms M] --duration S

resnet50: a torchvision ResNet-50 training step (bf16 autocast,
channels_last, SGD) on synthetic data; matmul: ten bf16 8192^3 products.
Each step ends with torch.cuda.synchronize(); --host-ms sleeps before each
step (the GPU idles, as while a real job loads its next batch).
"""
import argparse
import json
import sys
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--model", choices=["resnet50", "matmul"], required=True)
parser.add_argument("--batch", type=int, default=32)
parser.add_argument("--host-ms", type=float, default=0)
parser.add_argument("--duration", type=float, required=True)
parser.add_argument("--warmup", type=int, default=5)
options = parser.parse_args()

device = torch.device("cuda")
torch.backends.cudnn.benchmark = True
if options.model == "resnet50":
    import torchvision  # noqa: E402 (only this model needs it)
    model = torchvision.models.resnet50().to(device).to(memory_format=torch.channels_last)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(options.batch, 3, 224, 224, device=device).to(
        memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (options.batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimiser.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(inputs), labels)
        loss.backward()
        optimiser.step()
else:
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)

    def step():
        for _ in range(10):
            torch.mm(a, b)

for _ in range(options.warmup):
    step()
torch.cuda.synchronize()
end = time.monotonic() + options.duration
n = 0
while time.monotonic() < end:
    if options.host_ms > 0:
        time.sleep(options.host_ms / 1000)
    step()
    torch.cuda.synchronize()
    sys.stdout.write(json.dumps({"kind": "torch-pair-step", "version": 1, "step": n,
                                 "t_ms": round(time.monotonic() * 1000, 3)}) + "\n")
    sys.stdout.flush()
    n += 1
