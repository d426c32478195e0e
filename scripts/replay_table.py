#!/usr/bin/env python3
"""Runs `cuswap replay --json` over traces, device memories, links and
policies, and prints each run's steady-state iteration time as a ratio to
the same replay with memory to spare.

    scripts/replay_table.py [--cuswap build/cli/cuswap] [--memory 60%]
                            [--links pcie3,pcie5]
                            [--policies none,reactive,online,cuswap,seed,vdnn,capuchin]
                            [--json out.json] [trace ...]

`--memory` is the simulated device's memory as a share of the iteration's
peak (or a size); the budget is all of it. Without traces it takes the real
GPU captures in tests/data/gpu that hold ops and the committed models at
batch 4 (one file per model and format).

Columns: `bound` is the simulator's plan-independent lower bound; a
policy's cell is its iteration time / infinite memory, `x` where it did not
complete, with `(p N%)` for planners: how far the replay is from what the
simulator predicted for the same plan. Any integrity error or hazard is
printed after the table: there should be none.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from cuswap._conf import size_bytes  # noqa: E402  (sizes as docs/configuration.md reads them)


def default_traces():
    traces = [p for p in sorted(glob.glob(os.path.join(ROOT, "tests/data/gpu/*.gz")))
              if ".snapshot." not in p]  # a memory snapshot has no ops to replay
    for folder in ("tf1", "tf2", "torch"):
        for path in sorted(glob.glob(os.path.join(ROOT, "tests/data", folder, "*-b4.*.gz"))):
            if ".memory_profile." in path or ".timeline." in path:
                continue
            traces.append(path)
    return [os.path.relpath(p, ROOT) for p in traces]


def peak_bytes(cuswap, trace):
    proc = subprocess.run([cuswap, "replay", "--policy", "none", "--iterations", "1", "--json",
                           trace], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        return None
    return json.loads(proc.stdout)["workload_peak_bytes"]


def run(cuswap, trace, memory_bytes, link, policy):
    proc = subprocess.run(
        [cuswap, "replay", "--json", "--policy", policy, "--link", link, "--device-memory",
         str(memory_bytes), trace], cwd=ROOT, capture_output=True, text=True)
    if not proc.stdout.strip():
        return {"completed": False, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuswap", default=os.path.join(ROOT, "build/cli/cuswap"))
    parser.add_argument("--memory", default="60%")
    parser.add_argument("--links", default="pcie3,pcie5")
    parser.add_argument("--policies", default="none,reactive,online,cuswap,seed,vdnn,capuchin")
    parser.add_argument("--json", help="also write every result here")
    parser.add_argument("traces", nargs="*")
    args = parser.parse_args()
    policies = args.policies.split(",")
    # A size is checked before any trace is read; a share needs each peak.
    share = memory = None
    try:
        if args.memory.endswith("%"):
            share = float(args.memory[:-1])
        else:
            memory = size_bytes(args.memory)
    except ValueError as e:
        sys.exit("--memory: %s; expected a size (1434MiB) or a share of the peak (60%%)" % e)
    results = {}
    problems = []
    for trace in args.traces or default_traces():
        peak = peak_bytes(args.cuswap, trace)
        if not peak:
            print("%s: cannot replay, skipped" % trace, file=sys.stderr)
            continue
        if share is not None:
            memory = int(peak * share / 100) // (1 << 20) * (1 << 20)
        for link in args.links.split(","):
            row = {}
            for policy in policies:
                r = run(args.cuswap, trace, memory, link, policy)
                row[policy] = r
                if r.get("integrity_errors") or r.get("hazards"):
                    problems.append("%s %s %s: %s integrity errors, %s hazards" % (
                        trace, link, policy, r["integrity_errors"], r["hazards"]))
                print("%s %s %s: %s" % (os.path.basename(trace), link, policy,
                                        "ok" if r["completed"] else r["error"]), file=sys.stderr)
            results["%s|%s" % (trace, link)] = {"memory_bytes": memory, "peak_bytes": peak,
                                                "runs": row}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)

    print("| trace | link | memory | bound | " + " | ".join(policies) + " |")
    print("|---|---|---|---|" + "---|" * len(policies))
    for key, cell in results.items():
        trace, link = key.split("|")
        runs = cell["runs"]
        some = next(iter(runs.values()))
        inf = some.get("infinite_memory_ns") or 0
        bound = some.get("lower_bound_ns") or 0
        cells = []
        for policy in policies:
            r = runs[policy]
            if not r["completed"] or not inf:
                cells.append("x")
                continue
            text = "%.2f" % (r["iteration_ns"] / inf)
            if r.get("predicted_ns"):
                text += " (p %+.0f%%)" % (100.0 * (r["iteration_ns"] / r["predicted_ns"] - 1))
            cells.append(text)
        print("| %s | %s | %.0f%% | %s | %s |" % (
            os.path.basename(trace), link, 100.0 * cell["memory_bytes"] / cell["peak_bytes"],
            "%.2f" % (bound / inf) if inf else "-", " | ".join(cells)))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
