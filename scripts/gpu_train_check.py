#!/usr/bin/env python3
"""Step 4 of scripts/gpu-check.sh (docs/gpu-check.md): train a real PyTorch
ResNet-50 (torchvision, synthetic data, SGD) on the GPU, without cuswap at
the largest batch that fits in a fixed share of device memory, then at 2x
and 4x that batch with cuswap as that share's budget, two ways in: the
pluggable allocator (cuswap.torch.enable) under `cuswap run
--torch-pluggable`, and `cuswap run` alone (PyTorch without its caching
allocator). Prints images/s for each and one table.

Without cuswap the share is enforced by PyTorch itself
(torch.cuda.set_per_process_memory_fraction); with cuswap, by the budget.
A host needs about (4 - 1) x the share of free memory for the 4x runs.

Usage:
  gpu_train_check.py --cli BUILD/cli/cuswap --out DIR [--memory-gib 8]
  gpu_train_check.py --sim ...   checks this script and the package's imports,
                                 and prints the runs it would make, on a
                                 machine without a GPU (CI)
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
CHILD_TIMEOUT_S = 90  # a run takes seconds; ten of them must fit in the check's minutes
FIRST_BATCH = 16


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", help="the cuswap executable (cuswap run)")
    p.add_argument("--out", help="where the runs' output goes")
    p.add_argument("--memory-gib", type=float, default=8.0,
                   help="device memory the runs may use (stock: PyTorch's cap; cuswap: the budget)")
    p.add_argument("--sim", action="store_true", help="check without a GPU; train nothing")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    p.add_argument("--way", choices=("stock", "pluggable", "run"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --------------------------------------------------------------------------
# One run, in its own process (a process that ran out of device memory, or
# that changed PyTorch's allocator, cannot be reused).


def child(a):
    import torch
    import torchvision

    if a.way == "pluggable":
        import cuswap.torch
        cuswap.torch.enable()  # the budget comes from cuswap run's CUSWAP_CONF
    device = torch.device("cuda")
    if a.way == "stock":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.memory_gib * 2**30 / total))
    import cuswap  # marks iterations where the shim is loaded; a no-op where not

    torch.manual_seed(0)
    model = torchvision.models.resnet50().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(a.batch, 3, 224, 224, device=device)
    labels = torch.randint(0, 1000, (a.batch,), device=device)

    def step():
        cuswap.iteration()
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images), labels).backward()
        optimizer.step()

    result = {"batch": a.batch, "way": a.way}
    try:
        for _ in range(WARMUP_STEPS):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(TIMED_STEPS):
            step()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        result.update(completed=True, images_per_s=a.batch * TIMED_STEPS / seconds,
                      step_ms=1e3 * seconds / TIMED_STEPS)
    except torch.cuda.OutOfMemoryError as e:
        result.update(completed=False, error="out of memory: " + str(e).splitlines()[0][:120])
    result["cuswap"] = cuswap.stats()
    print(RESULT + json.dumps(result), flush=True)


# --------------------------------------------------------------------------
# The parent: which runs, and the table.


def command(a, way, batch):
    """The argv of one run and the environment it adds."""
    me = [sys.executable, os.path.abspath(__file__), "--child", "--way", way, "--batch",
          str(batch), "--memory-gib", str(a.memory_gib)]
    budget = f"{a.memory_gib:g}GiB"
    if way == "stock":
        return me
    run = [a.cli, "run", "--budget", budget, "--stats"]
    if way == "pluggable":
        run.append("--torch-pluggable")
    return run + ["--"] + me


def start(a, way, batch):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    argv = command(a, way, batch)
    name = f"{way}-b{batch}"
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"batch": batch, "way": way, "completed": False,
                "error": f"timed out after {CHILD_TIMEOUT_S} s"}
    if a.out:
        with open(os.path.join(a.out, f"train-{name}.log"), "w") as f:
            f.write(proc.stdout + proc.stderr)
    lines = [l for l in proc.stdout.splitlines() if l.startswith(RESULT)]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"batch": batch, "way": way, "completed": False,
                "error": f"exit {proc.returncode}: {tail[:160]}"}
    return json.loads(lines[-1][len(RESULT):])


def largest_stock_batch(a, say):
    """Doubling from FIRST_BATCH until a run fails, then halving the gap once."""
    best, batch = None, FIRST_BATCH
    while True:
        r = start(a, "stock", batch)
        say(f"stock batch {batch}: " + (f"{r['images_per_s']:.0f} images/s" if r["completed"]
                                        else r.get("error", "failed")))
        if not r["completed"]:
            break
        best, batch = r, batch * 2
    if best is None:
        return None
    middle = (best["batch"] + batch) // 2
    if middle > best["batch"]:
        r = start(a, "stock", middle)
        say(f"stock batch {middle}: " + (f"{r['images_per_s']:.0f} images/s" if r["completed"]
                                         else r.get("error", "failed")))
        if r["completed"]:
            best = r
    return best


def table(rows, reference):
    print(f"  {'run':<28} {'batch':>6} {'completed':<10} {'images/s':>9} {'x stock':>8} "
          f"{'step ms':>8} {'on-demand':>9}  note")
    for label, r in rows:
        ok = r.get("completed")
        ips = r.get("images_per_s")
        ratio = ips / reference if ok and reference else None
        stats = r.get("cuswap") or {}
        print(f"  {label:<28} {r['batch']:>6} {'yes' if ok else 'no':<10} "
              f"{'-' if ips is None else round(ips):>9} "
              f"{'-' if ratio is None else f'{ratio:.2f}':>8} "
              f"{'-' if not ok else round(r['step_ms'], 1):>8} "
              f"{stats.get('prefetches_on_demand', '-'):>9}  {r.get('error', '')}")


def parent(a):
    sys.path.insert(0, os.path.join(ROOT, "python"))

    def say(text):
        print("gpu-check: train: " + text, flush=True)

    if a.sim:
        # What CI can check without a GPU: this script and the package's imports.
        import cuswap
        import cuswap.torch  # noqa: F401  (imports torch only when called)
        for way in ("stock", "pluggable", "run"):
            say(f"would run: {' '.join(command(a, way, 2 * FIRST_BATCH))}")
        say(f"--sim: nothing trained (cuswap package {cuswap.__name__} imports)")
        return 0
    if not a.cli or not a.out:
        say("error: --cli and --out are needed")
        return 2
    os.makedirs(a.out, exist_ok=True)
    say(f"ResNet-50, synthetic 224x224 images, {a.memory_gib:g} GiB of device memory")
    stock = largest_stock_batch(a, say)
    if stock is None:
        say(f"error: even batch {FIRST_BATCH} does not fit in {a.memory_gib:g} GiB")
        return 1
    rows = [("stock (largest that fits)", stock)]
    failed = 0
    for scale in (2, 4):
        batch = stock["batch"] * scale
        for way, label in (("pluggable", "cuswap.torch.enable"), ("run", "cuswap run")):
            r = start(a, way, batch)
            say(f"{label} batch {batch}: " + (f"{r['images_per_s']:.0f} images/s"
                                              if r["completed"] else r.get("error", "failed")))
            rows.append((f"{label} x{scale}", r))
            failed |= not r["completed"]
    print("training: ResNet-50 (torchvision), SGD, synthetic data; images/s over "
          f"{TIMED_STEPS} steps after {WARMUP_STEPS}; x stock = against the largest stock batch")
    table(rows, stock["images_per_s"])
    return 1 if failed else 0


def main(argv):
    a = parse_args(argv)
    if a.child:
        child(a)
        return 0
    return parent(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
