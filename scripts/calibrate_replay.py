#!/usr/bin/env python3
"""The replay's calibration against what an H200 showed (docs/replay.md,
Calibration): PyTorch's ResNet-50 trace, op times scaled to an H200, under
a budget of 100% of the workload's 1x peak, of the device memory the stock
run needs at 1x (`stock`), and of 110% of the peak, at 1x, 2x and 4x the
batch, each way PyTorch allocates under cuswap (stream: cuMemAllocAsync;
sync: `cuswap run`; pluggable: the pluggable allocator), reactive and
online, against the stock run (`none`, the driver's stream-ordered pool,
with memory to spare) and the link's bound. Prints one Markdown table.

  scripts/calibrate_replay.py [--cuswap build/cli/cuswap] [--shim PATH] [--json]
      [--batches 1,2,4] [--budgets 100,stock,110] [--paths stream,sync,pluggable]
      [--policies reactive,online] [--iterations 8]

--shim picks the libcuswap.so to measure (for example one built at an
earlier commit), so a before and an after can be set side by side. The
110% budget is run at 1x only: above the peak, only the batch that fits
is asked about.

The peak is the most the trace's tensors hold at once, in bytes asked for.
No allocator on the driver reaches it: the driver gives an allocation of
1 MiB or more whole 2 MiB pages, and so does cuswap. `stock` is the peak
device memory of the stock run allocating each tensor with cuMemAlloc
(`none` on the sync path), the least device memory it completes in: the
budget at which the batch just fits without cuswap.
"""
import argparse
import json
import subprocess
import sys

TRACE = "tests/data/gpu/torch-resnet50-v100.trace.json.gz"
# The H200 trained ResNet-50 at batch 64 in 33.1 ms a step (1931 images/s,
# docs/gpu-check.md); the V100 trace's step at batch 32 replays in 116 ms:
# half the H200's step over the V100's.
TIME_SCALE = 0.143
# PyTorch's own host time per op besides its driver calls (Note [Replay
# host time]).
HOST_OP_US = 5
LINK = "pcie5"


def replay(cuswap, args):
    cmd = [cuswap, "replay", TRACE, "--link", LINK, "--time-scale", str(TIME_SCALE),
           "--host-op-us", str(HOST_OP_US), "--json"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"calibrate_replay: {' '.join(cmd)}: no JSON ({out.stderr.strip()[-300:]})")


def csv(kind):
    return lambda text: [kind(x) for x in text.split(",") if x]


def budget_key(text):
    if text == "stock":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"budget {text!r}: a percentage or 'stock'")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuswap", default="build/cli/cuswap")
    parser.add_argument("--shim", help="libcuswap.so to measure (default: the build's)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--batches", type=csv(int), default=[1, 2, 4])
    parser.add_argument("--budgets", type=csv(budget_key), default=[100, "stock", 110],
                        help="percentages of the 1x peak, or stock: the device memory the "
                             "stock run needs at 1x")
    parser.add_argument("--paths", type=csv(str), default=["stream", "sync", "pluggable"])
    parser.add_argument("--policies", type=csv(str), default=["reactive", "online"])
    parser.add_argument("--iterations", type=int, default=8,
                        help="iterations a run replays (the second half is the steady state)")
    o = parser.parse_args()
    stock = replay(o.cuswap, ["--policy", "none", "--alloc-path", "sync", "--iterations", "2"])
    if not stock["completed"]:
        sys.exit(f"calibrate_replay: the stock run failed: {stock['error']}")
    peak = stock["workload_peak_bytes"]
    stock_bytes = stock["peak_device_bytes"]
    rows = []
    for batch in o.batches:
        none_ns = replay(o.cuswap, ["--policy", "none", "--batch-scale", str(batch),
                                    "--device-memory", "64GiB"])["iteration_ns"]
        for key in o.budgets:
            budget = stock_bytes if key == "stock" else peak * key // 100
            if key != "stock" and key > 100 and batch > 1:
                continue
            for path in o.paths:
                for policy in o.policies:
                    # simcuda backs device memory with host memory: no more
                    # than the budget needs, so that 4x fits beside its host
                    # copies on a machine like the CI's.
                    args = ["--policy", policy, "--alloc-path", path,
                            "--budget", str(budget), "--batch-scale", str(batch),
                            "--device-memory", str(budget + (512 << 20)),
                            "--iterations", str(o.iterations)]
                    if o.shim:
                        args += ["--shim", o.shim]
                    r = replay(o.cuswap, args)
                    it = r["iteration_ns"]
                    rows.append({
                        "batch_scale": batch, "budget": key,
                        "budget_pct": round(100 * budget / peak, 1), "alloc_path": path,
                        "policy": policy, "completed": r["completed"], "iteration_ns": it,
                        "none_ns": none_ns,
                        "ratio_to_none": it / none_ns if it and none_ns else None,
                        "lower_bound_ns": r["lower_bound_ns"],
                        "ratio_to_bound": it / r["lower_bound_ns"] if it else None,
                        "vmm_calls": r["vmm_calls"], "host_syncs": r["host_syncs"],
                        "cuswap_host_waits": r["cuswap_host_waits"],
                        "h2d_bytes": r["h2d_bytes"], "integrity_errors": r["integrity_errors"],
                        "hazards": r["hazards"]})
    if o.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"ResNet-50 (V100 trace) x{TIME_SCALE} time, {LINK}, host {HOST_OP_US} us/op, "
          f"budgets as % of the 1x peak ({peak / 2**20:.0f} MiB; stock needs "
          f"{stock_bytes / 2**20:.0f} MiB, {100 * stock_bytes / peak:.1f}%), "
          f"{o.iterations} iterations, per steady-state iteration")
    print()
    print("| batch | budget | path | policy | ms | x none | x bound | VMM calls | host syncs | "
          "cuswap host waits | MB to device | integrity | hazards |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ms = f"{r['iteration_ns'] / 1e6:.1f}" if r["iteration_ns"] else "failed"
        ratio = f"{r['ratio_to_none']:.2f}" if r["ratio_to_none"] else "-"
        bound = f"{r['ratio_to_bound']:.2f}" if r["ratio_to_bound"] else "-"
        waits = "-" if r["cuswap_host_waits"] is None else f"{r['cuswap_host_waits']:.1f}"
        budget = (f"stock ({r['budget_pct']}%)" if r["budget"] == "stock"
                  else f"{r['budget_pct']:g}%")
        print(f"| {r['batch_scale']}x | {budget} | {r['alloc_path']} | {r['policy']} | "
              f"{ms} | {ratio} | {bound} | {r['vmm_calls']:.0f} | {r['host_syncs']:.1f} | "
              f"{waits} | {r['h2d_bytes'] / 1e6:.0f} | {r['integrity_errors']} | "
              f"{r['hazards']} |")


if __name__ == "__main__":
    main()
