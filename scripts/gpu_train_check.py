#!/usr/bin/env python3
"""Step 4 of scripts/gpu-check.sh (docs/gpu-check.md): train a real PyTorch
ResNet-50 (torchvision, synthetic data, SGD) on the GPU, with and without
cuswap, and print the training table in Markdown.

The runs, each in its own process:
  - stock, capped: the largest batch B that fits in a fixed share of device
    memory (torch.cuda.set_per_process_memory_fraction), found by doubling
    from 16 and halving the last gap once, in one process; then timed in a
    fresh one (the reference at 1x);
  - stock with no cap at 2B and 4B: the true reference (step time, peak
    memory), where the GPU has the memory;
  - cuswap at B, 2B and 4B with the share as its budget, two ways in: the
    pluggable allocator (cuswap.torch.enable under `cuswap run
    --torch-pluggable`) and `cuswap run` alone (PyTorch without its caching
    allocator); one more at 2B with torch.backends.cudnn.benchmark = True.
Each row: images/s, the ratio to stock at the same batch, the link's bound
for the bytes cuswap moved (bytes each way / the probe's bandwidth, against
the stock step time at that batch) and, per step, cuswap's driver calls by
kind, host waits, evictions and prefetches (planned and on demand).
Past --time-limit-s no run is started (the row says so).

Usage:
  gpu_train_check.py --cli PACK/cli/cuswap --out DIR [--probe probe.json]
                     [--memory-gib 8] [--time-limit-s 200]
  gpu_train_check.py --sim --sim-driver DIR ...
                                 prints the runs it would make, and runs a
                                 two-layer net on the CPU without cuswap and
                                 under `cuswap run` on simcuda (CI)
  gpu_train_check.py --child ... one training run (what the parent starts)
Exits 1 when a run that should have completed did not.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT = "RESULT "
WARMUP_STEPS = 2
TIMED_STEPS = 5
CHILD_TIMEOUT_S = 60  # a run takes seconds to tens of seconds on an H200
MIN_RUN_S = 15        # no run is started with less time than this left
FIRST_BATCH = 16
WAYS = ("stock", "uncapped", "search", "pluggable", "run")
# Counters reported per timed step (allocator/swap_stats.h).
VMM = ("vmm_creates", "vmm_releases", "vmm_maps", "vmm_unmaps", "vmm_set_access",
       "vmm_reserves", "vmm_address_frees")
PER_STEP = VMM + ("event_records", "stream_waits", "host_waits", "host_wait_us", "evictions",
                  "prefetches_planned", "prefetches_on_demand", "bytes_to_host",
                  "bytes_to_device")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", help="the cuswap executable (cuswap run)")
    p.add_argument("--out", help="where the runs' output goes")
    p.add_argument("--probe", help="the driver probe's JSON (copy bandwidth for the link bound)")
    p.add_argument("--memory-gib", type=float, default=8.0,
                   help="device memory the runs may use (stock: PyTorch's cap; cuswap: the budget)")
    p.add_argument("--time-limit-s", type=float, default=200.0,
                   help="no run is started past this many seconds")
    p.add_argument("--sim", action="store_true",
                   help="check without a GPU: the commands, and a small net on the CPU")
    p.add_argument("--sim-driver", help="--sim: the folder of simcuda's libcuda.so.1")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    p.add_argument("--way", choices=WAYS, help=argparse.SUPPRESS)
    p.add_argument("--cudnn-benchmark", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --------------------------------------------------------------------------
# One run, in its own process (a process that ran out of device memory, or
# that changed PyTorch's allocator, cannot be reused).


def model_of(torch, smoke):
    """ResNet-50, or under --smoke (--sim's run on the CPU) a two-layer net."""
    if smoke:
        return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                   torch.nn.Linear(8, 1000))
    import torchvision
    return torchvision.models.resnet50()


def child(a):
    import torch

    if a.way == "pluggable":
        import cuswap.torch
        cuswap.torch.enable()  # the budget comes from cuswap run's CUSWAP_CONF
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    device = torch.device("cpu" if a.smoke else "cuda")
    if a.way in ("stock", "search"):
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.memory_gib * 2**30 / total))
    import cuswap  # marks iterations where the shim is loaded; a no-op where not

    size, warmup, timed = (32, 1, 1) if a.smoke else (224, WARMUP_STEPS, TIMED_STEPS)
    synchronize = (lambda: None) if a.smoke else torch.cuda.synchronize
    torch.manual_seed(0)
    model = model_of(torch, a.smoke).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(images, labels):
        cuswap.iteration()
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images), labels).backward()
        optimizer.step()

    def batch_of(n):
        return (torch.randn(n, 3, size, size, device=device),
                torch.randint(0, 1000, (n,), device=device))

    result = {"batch": a.batch, "way": a.way}
    if a.way == "search":
        result.update(completed=True, batch=search(torch, step, batch_of, optimizer))
        print(RESULT + json.dumps(result), flush=True)
        return
    try:
        images, labels = batch_of(a.batch)
        for _ in range(warmup):
            step(images, labels)
        synchronize()
        before = cuswap.stats()
        t0 = time.perf_counter()
        for _ in range(timed):
            step(images, labels)
        synchronize()
        seconds = time.perf_counter() - t0
        after = cuswap.stats()
        result.update(completed=True, images_per_s=a.batch * timed / seconds,
                      step_ms=1e3 * seconds / timed)
        if after:
            result["per_step"] = {k: (after.get(k, 0) - before.get(k, 0)) / timed
                                  for k in PER_STEP}
            result["peak_bytes"] = after.get("peak_device_bytes")
        elif a.way != "run" and not a.smoke:
            result["peak_bytes"] = torch.cuda.max_memory_reserved()
    except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one
        if not out_of_memory(e):
            raise
        result.update(completed=False, error="out of memory: " + str(e).splitlines()[0][:120])
    print(RESULT + json.dumps(result), flush=True)


def out_of_memory(e):
    """Whether an exception is the device running out of memory (PyTorch's own
    error, or a library's that says so)."""
    return "out of memory" in str(e).lower()


def search(torch, step, batch_of, optimizer):
    """The largest batch one step fits for: doubling from FIRST_BATCH, then the last gap halved."""
    import gc

    def fits(n):
        try:
            step(*batch_of(n))
            torch.cuda.synchronize()
            return True
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one
            if not out_of_memory(e):
                raise
        # Out of the except block, so that its traceback no longer holds the step's tensors.
        optimizer.zero_grad(set_to_none=True)
        gc.collect()
        torch.cuda.empty_cache()
        return False

    best, batch = 0, FIRST_BATCH
    while fits(batch):
        best, batch = batch, batch * 2
    middle = (best + batch) // 2
    if best and middle > best and fits(middle):
        best = middle
    return best


# --------------------------------------------------------------------------
# The parent: which runs, and the table.


def command(a, way, batch, cudnn_benchmark=False, smoke=False):
    """The argv of one run."""
    me = [sys.executable, os.path.abspath(__file__), "--child", "--way", way, "--batch",
          str(batch), "--memory-gib", str(a.memory_gib)]
    if cudnn_benchmark:
        me.append("--cudnn-benchmark")
    if smoke:
        me.append("--smoke")
    if way in ("stock", "uncapped", "search"):
        return me
    run = [a.cli, "run", "--budget", f"{a.memory_gib:g}GiB", "--stats"]
    if way == "pluggable":
        run.append("--torch-pluggable")
    return run + ["--"] + me


def plan(batch):
    """(label, way, batch, cudnn.benchmark) of every timed run, most wanted first."""
    runs = [("stock, capped", "stock", batch, False), ("stock, no cap", "uncapped", 2 * batch, False)]
    for scale in (1, 2, 4):
        if scale == 4:
            runs.append(("stock, no cap", "uncapped", 4 * batch, False))
        runs += [("cuswap.torch.enable", "pluggable", scale * batch, False),
                 ("cuswap run", "run", scale * batch, False)]
    runs.append(("cuswap.torch.enable, cudnn.benchmark", "pluggable", 2 * batch, True))
    return runs


class Runner:
    def __init__(self, a, say):
        self.a, self.say = a, say
        self.deadline = time.monotonic() + a.time_limit_s

    def start(self, label, way, batch, cudnn_benchmark=False):
        a = self.a
        left = self.deadline - time.monotonic()
        if left < MIN_RUN_S:
            r = {"batch": batch, "way": way, "completed": False, "skipped": True,
                 "error": f"not run: the step's {a.time_limit_s:g} s were spent"}
        else:
            r = self.run(way, batch, cudnn_benchmark, min(CHILD_TIMEOUT_S, left))
        text = f"{r['images_per_s']:.0f} images/s" if r.get("images_per_s") else r.get("error", "")
        self.say(f"{label} batch {batch}: {text or 'done'}")
        return r

    def run(self, way, batch, cudnn_benchmark, timeout_s):
        a = self.a
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        if a.sim_driver:  # --sim: the shim on simcuda, the model on the CPU
            env["LD_LIBRARY_PATH"] = a.sim_driver + os.pathsep + env.get("LD_LIBRARY_PATH", "")
        argv = command(a, way, batch, cudnn_benchmark, smoke=a.sim)
        name = f"{way}-b{batch}{'-cudnn-benchmark' if cudnn_benchmark else ''}"
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"batch": batch, "way": way, "completed": False,
                    "error": f"timed out after {timeout_s:.0f} s"}
        with open(os.path.join(a.out, f"train-{name}.log"), "w") as f:
            f.write(proc.stdout + proc.stderr)
        lines = [l for l in proc.stdout.splitlines() if l.startswith(RESULT)]
        if not lines:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return {"batch": batch, "way": way, "completed": False,
                    "error": f"exit {proc.returncode}: {tail[:160]}"}
        return json.loads(lines[-1][len(RESULT):])


def bandwidth(path):
    """(host->device, device->host) bytes/s from the probe's JSON, or None."""
    try:
        with open(path) as f:
            p = json.load(f)
        if p.get("h2d_bytes_per_s") and p.get("d2h_bytes_per_s"):
            return p["h2d_bytes_per_s"], p["d2h_bytes_per_s"]
    except (OSError, ValueError, TypeError):
        pass
    return None


def fmt(value, spec="{:.0f}"):
    return "-" if value is None else spec.format(value)


def tables(rows, references, link):
    """The Markdown tables: one row a run, then cuswap's counters per step."""
    print("| run | batch | images/s | x stock | step ms | peak GiB | link ms | x bound | note |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for label, r in rows:
        ok = r.get("completed")
        ref = references.get(r["batch"])
        ips, step_ms = r.get("images_per_s"), r.get("step_ms")
        per = r.get("per_step") or {}
        link_ms = bound = None
        if per and link:
            link_ms = 1e3 * max(per["bytes_to_device"] / link[0], per["bytes_to_host"] / link[1])
            if ref:
                bound = max(ref["step_ms"], link_ms)
        ratio = ips / ref["images_per_s"] if ok and ref and ref is not r else None
        print(f"| {label} | {r['batch']} | {fmt(ips)} | {fmt(ratio, '{:.2f}')} | "
              f"{fmt(step_ms, '{:.1f}')} | {fmt(r.get('peak_bytes') and r['peak_bytes'] / 2**30, '{:.2f}')} | "
              f"{fmt(link_ms, '{:.1f}')} | {fmt(bound and step_ms / bound, '{:.2f}')} | "
              f"{'' if ok else r.get('error', 'failed')} |")
    counted = [(label, r) for label, r in rows if r.get("per_step")]
    if not counted:
        return
    print()
    print("cuswap per step (over the timed steps): driver calls by kind, host waits, moves")
    print()
    print("| run | batch | create | release | map | unmap | access | reserve | addr free | "
          "event rec | stream wait | host waits | wait ms | evictions | prefetch planned | "
          "on demand | MB out | MB in |")
    print("|---|---:" + "|---:" * 16 + "|")
    for label, r in counted:
        p = r["per_step"]
        cells = [fmt(p[k], "{:g}") for k in VMM + ("event_records", "stream_waits", "host_waits")]
        cells += [fmt(p["host_wait_us"] / 1e3, "{:.1f}"), fmt(p["evictions"], "{:g}"),
                  fmt(p["prefetches_planned"], "{:g}"), fmt(p["prefetches_on_demand"], "{:g}"),
                  fmt(p["bytes_to_host"] / 1e6, "{:.0f}"), fmt(p["bytes_to_device"] / 1e6, "{:.0f}")]
        print(f"| {label} | {r['batch']} | " + " | ".join(cells) + " |")


def smoke(a, say):
    """What CI can check without a GPU: the runs' commands, the package's
    imports, and one run without and one under `cuswap run` (the shim on
    simcuda) of a two-layer net on the CPU, through the same child and table."""
    import cuswap
    import cuswap.torch  # noqa: F401  (imports torch only when called)
    say(f"would run: {' '.join(command(a, 'search', FIRST_BATCH))}")
    for label, way, batch, bench in plan(4 * FIRST_BATCH):
        say(f"would run ({label}): {' '.join(command(a, way, batch, bench))}")
    runner = Runner(a, say)
    rows = [("smoke, no cuswap", runner.start("smoke", "uncapped", 2)),
            ("smoke, cuswap run", runner.start("smoke", "run", 2))]
    references = {2: rows[0][1]} if rows[0][1].get("completed") else {}
    say(f"--sim: no GPU; ResNet-50 not trained (cuswap package {cuswap.__name__} imports)")
    print()
    tables(rows, references, bandwidth(a.probe) if a.probe else None)
    return 0 if all(r.get("completed") for _, r in rows) else 1


def parent(a):
    sys.path.insert(0, os.path.join(ROOT, "python"))

    def say(text):
        print("gpu-check: train: " + text, flush=True)

    if not a.cli or not a.out:
        say("error: --cli and --out are needed")
        return 2
    os.makedirs(a.out, exist_ok=True)
    if a.sim:
        return smoke(a, say)
    link = bandwidth(a.probe) if a.probe else None
    runner = Runner(a, say)
    found = runner.start("stock, capped (search)", "search", FIRST_BATCH)
    batch = found.get("batch") if found.get("completed") else 0
    if not batch:
        say(f"error: no batch from {FIRST_BATCH} up fits in {a.memory_gib:g} GiB "
            f"({found.get('error', 'none fits')})")
        return 1
    rows, references, failed = [], {}, 0
    for label, way, b, bench in plan(batch):
        r = runner.start(label, way, b, bench)
        rows.append((label, r))
        if way in ("stock", "uncapped") and r.get("completed"):
            references[b] = r
        # Stock with no cap may not fit a smaller GPU: only cuswap must complete.
        failed |= way in ("stock", "pluggable", "run") and not r.get("completed")
    print()
    print(f"Training: ResNet-50 (torchvision), SGD, synthetic 224x224 images, "
          f"{a.memory_gib:g} GiB (stock capped: PyTorch's cap; cuswap: the budget); images/s over "
          f"{TIMED_STEPS} steps after {WARMUP_STEPS}. x stock: against stock at the same batch "
          f"(capped at {batch}, no cap above). link ms: a step's bytes each way over the probe's "
          f"bandwidth ({'none' if not link else f'{link[0] / 1e9:.1f}/{link[1] / 1e9:.1f} GB/s'}); "
          f"x bound: step ms over max(stock step ms, link ms).")
    print()
    tables(rows, references, link)
    return 1 if failed else 0


def main(argv):
    a = parse_args(argv)
    if a.child:
        child(a)
        return 0
    return parent(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
