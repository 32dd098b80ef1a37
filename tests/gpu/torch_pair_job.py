#!/usr/bin/env python3
"""One side of a co-location pair for check_colocation.py: a PyTorch job
that prints one JSON record per step with t_ms (CLOCK_MONOTONIC, the clock
gpushare-workload's records use), so that rates are counted inside the
other job's window.

  torch_pair_job.py --model resnet50|gpt2|matmul [--batch N] [--host-ms M]
                    [--sync-every N[,M...]] [--sync-switch-s S]
                    [--stop-file FILE] --duration S

resnet50: a torchvision ResNet-50 training step (bf16 autocast,
channels_last, SGD) on synthetic data; gpt2: a GPT-2 small shaped decoder
(12 layers, width 768, 12 heads, 512 tokens, AdamW) built from torch.nn, so
that no other package is needed; matmul: ten bf16 8192^3 products.
--host-ms sleeps before each step (the GPU idles, as while a real job loads
its next batch). A step ends with torch.cuda.synchronize() every
--sync-every steps; with several counts each is used in turn for
--sync-switch-s seconds, as gpushare-workload(1) does, and each record
says the count in force (sync_every), whether it synchronised (synced)
and, when it did, the GPU time since the last synchronisation (gpu_ms,
between CUDA events: on a shared GPU it includes the other job's slices).
The job's start-up (model, cuDNN autotuning in the warm-up steps) is what
PyTorch does; the summary record's startup_ms is its time from the
process start to the first step.
"""
import argparse
import json
import sys
import time

started = time.monotonic()
import torch  # noqa: E402 (timed as part of the start-up)

parser = argparse.ArgumentParser()
parser.add_argument("--model", choices=["resnet50", "gpt2", "matmul"], required=True)
parser.add_argument("--batch", type=int, default=32)
parser.add_argument("--host-ms", type=float, default=0)
parser.add_argument("--duration", type=float, required=True)
parser.add_argument("--warmup", type=int, default=5)
parser.add_argument("--sync-every", default="1")
parser.add_argument("--sync-switch-s", type=float, default=0)
parser.add_argument("--stop-file", default="")
options = parser.parse_args()
patterns = [int(n) for n in options.sync_every.split(",")]

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
elif options.model == "gpt2":
    tokens, width, vocab = 512, 768, 50257

    class Gpt2(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(vocab, width)
            self.wpe = torch.nn.Embedding(tokens, width)
            layer = torch.nn.TransformerEncoderLayer(width, 12, 4 * width, dropout=0.1,
                                                     activation="gelu", batch_first=True,
                                                     norm_first=True)
            self.blocks = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
            self.ln_f = torch.nn.LayerNorm(width)
            self.mask = torch.nn.Transformer.generate_square_subsequent_mask(tokens)

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(torch.arange(tokens, device=ids.device))
            x = self.blocks(x, mask=self.mask.to(ids.device), is_causal=True)
            return self.ln_f(x) @ self.wte.weight.t()

    model = Gpt2().to(device)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, vocab, (options.batch, tokens), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimiser.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
            loss = loss_fn(logits[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1))
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
run_start = time.monotonic()
end = run_start + options.duration
group_start = torch.cuda.Event(enable_timing=True)
group_end = torch.cuda.Event(enable_timing=True)
every = patterns[0]
in_group = 0
n = 0
while time.monotonic() < end:
    if options.stop_file:
        try:
            open(options.stop_file).close()
            break
        except OSError:
            pass
    if in_group == 0:
        if len(patterns) > 1 and options.sync_switch_s > 0:
            phase = int((time.monotonic() - run_start) / options.sync_switch_s)
            every = patterns[phase % len(patterns)]
        group_start.record()
    if options.host_ms > 0:
        time.sleep(options.host_ms / 1000)
    step()
    in_group += 1
    synced = in_group >= every
    gpu_ms = 0.0
    if synced:
        group_end.record()
        torch.cuda.synchronize()
        gpu_ms = group_start.elapsed_time(group_end)
        in_group = 0
    sys.stdout.write(json.dumps({"kind": "torch-pair-step", "version": 1, "step": n,
                                 "t_ms": round(time.monotonic() * 1000, 3),
                                 "sync_every": every, "synced": synced,
                                 "gpu_ms": round(gpu_ms, 3)}) + "\n")
    sys.stdout.flush()
    n += 1
torch.cuda.synchronize()
sys.stdout.write(json.dumps({"kind": "torch-pair-summary", "version": 1, "steps": n,
                             "startup_ms": round((run_start - started) * 1000, 3)}) + "\n")
