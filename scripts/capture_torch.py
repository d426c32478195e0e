#!/usr/bin/env python3
"""Captures one PyTorch training step as trace files cuswap can read.

For one model at one batch size it writes, under --out:
  torch/<name>-b<batch>.trace.json.gz      profiler Chrome trace (profile_memory, record_shapes)
  torch/<name>-b<batch>.snapshot.json.gz   CUDA caching-allocator history (CUDA only)

Warm-up steps run untraced; the profiler records exactly the last step
(forward, backward, optimizer), so a file holds one training step.

The memory snapshot is torch.cuda.memory._snapshot() taken after
_record_memory_history(), converted to JSON as is (the pickle's dicts and
lists map one to one; frames are kept). There is no CPU equivalent: on
--device cpu it is skipped, and the script says so.

Every output is parsed back before the script exits; a trace without
"[memory]" events for the device is an error.

Usage: capture_torch.py --model resnet50 --batch 4 [--device cpu|cuda] --out tests/data
"""

import argparse
import gzip
import json
import os
import sys
import tempfile

MODELS = ("resnet50", "transformer", "lstm")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--device", default="cuda" if _cuda_available() else "cpu", choices=("cpu", "cuda"))
    p.add_argument("--out", default="tests/data", help="root folder; torch/ goes under it")
    p.add_argument("--name", help="file stem before -b<batch> (default: from the model and its knobs)")
    p.add_argument("--warmup", type=int, default=1, help="untraced steps before the traced one")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=1, help="LSTM layers (lstm) or encoder blocks (transformer)")
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    return p.parse_args(argv)


def _cuda_available():
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def default_name(a):
    if a.model == "resnet50":
        return f"resnet50-{a.image_size}px"
    if a.model == "lstm":
        return f"lstm-l{a.layers}-t{a.seq_len}"
    return f"transformer-l{a.layers}"


def build(torch, a):
    """Returns (model, make_batch() -> (input, target), loss(output, target))."""
    nn = torch.nn
    dev = torch.device(a.device)
    b, t, v, h = a.batch, a.seq_len, a.vocab, a.hidden
    if a.model == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(weights=None, num_classes=a.classes)
        s = a.image_size

        def make_batch():
            return torch.randn(b, 3, s, s, device=dev), torch.randint(0, a.classes, (b,), device=dev)

        return model.to(dev), make_batch, nn.functional.cross_entropy

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(v, h)
            if a.model == "lstm":
                self.body = nn.LSTM(h, h, num_layers=a.layers, batch_first=True)
            else:
                self.pos = nn.Parameter(torch.randn(t, h) * 0.02)
                layer = nn.TransformerEncoderLayer(h, a.heads, 4 * h, dropout=0.0, batch_first=True, norm_first=True)
                self.body = nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
            self.head = nn.Linear(h, v)

        def forward(self, tokens):
            x = self.embed(tokens)
            if a.model == "lstm":
                x, _ = self.body(x)
            else:
                x = self.body(x + self.pos)
            return self.head(x)

    def make_batch():
        return torch.randint(0, v, (b, t), device=dev), torch.randint(0, v, (b, t), device=dev)

    def loss(out, target):
        return nn.functional.cross_entropy(out.reshape(-1, v), target.reshape(-1))

    return LM().to(dev), make_batch, loss


def write_gz(path, data):
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(data)


def fail(msg):
    print(f"capture_torch: error: {msg}", file=sys.stderr)
    sys.exit(1)


def main(argv):
    a = parse_args(argv)
    import torch
    from torch.profiler import ProfilerActivity, profile

    if a.device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda: this PyTorch sees no CUDA device")
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model, make_batch, loss_fn = build(torch, a)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        x, y = make_batch()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        return loss.item()

    for _ in range(a.warmup):
        step()

    snapshot = None
    if a.device == "cuda":
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=200000)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device == "cuda" else [])
    with profile(activities=activities, profile_memory=True, record_shapes=True) as prof:
        step()
    if a.device == "cuda":
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
    else:
        print("capture_torch: note: --device cpu has no caching-allocator history; no snapshot written")

    dest = os.path.join(a.out, "torch")
    os.makedirs(dest, exist_ok=True)
    stem = f"{a.name or default_name(a)}-b{a.batch}"
    with tempfile.TemporaryDirectory(prefix="capture-torch-") as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as f:
            write_gz(os.path.join(dest, f"{stem}.trace.json.gz"), f.read())
    if snapshot is not None:
        write_gz(os.path.join(dest, f"{stem}.snapshot.json.gz"), json.dumps(snapshot, default=str).encode())

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fixture_facts

    facts = fixture_facts.torch_profiler_facts(os.path.join(dest, f"{stem}.trace.json.gz"))
    if facts["tensors"] == 0 or facts["reported_peak_bytes"] == 0:
        fail(f"{dest}/{stem}.trace.json.gz: no [memory] events with Total Allocated for {a.device}")
    print(f"{dest}/{stem}: torch ok: {facts['ops']} ops, {facts['tensors']} allocations on {facts['allocator']}, "
          f"peak {facts['reported_peak_bytes']} bytes")
    if snapshot is not None:
        s = fixture_facts.torch_snapshot_facts(os.path.join(dest, f"{stem}.snapshot.json.gz"))
        if s["tensors"] == 0:
            fail(f"{dest}/{stem}.snapshot.json.gz: no alloc actions in device_traces")
        print(f"{dest}/{stem}: snapshot ok: {s['tensors']} allocations")


if __name__ == "__main__":
    main(sys.argv[1:])
