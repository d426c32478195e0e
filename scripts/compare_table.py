#!/usr/bin/env python3
"""Runs `cuswap compare --json` over traces, budgets and links, and prints
each planner's iteration time as a ratio to infinite memory.

    scripts/compare_table.py [--cuswap build/cli/cuswap] [--budgets 75%,50%,30%]
                             [--links pcie3,pcie5] [--json out.json]
                             [--against before.json] [trace ...]

Without traces it takes every real GPU capture in tests/data/gpu and every
committed model at batch 4 (tests/data/{tf1,tf2,torch}, one file per model
and format). A trace whose iteration holds no device memory is skipped with
a note on stderr. `--against` adds, per cell, the ratio of the same run
made earlier (a --json file), as "before→now".

Columns: `bound` is the plan-independent lower bound (`lower_bound_ns` of
the comparison; older CLIs reported one per planner, the first is taken);
a planner's cell is its iteration time / infinite memory, with `!` where its
plan does not fit the budget.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_traces():
    traces = sorted(glob.glob(os.path.join(ROOT, "tests/data/gpu/*.gz")))
    for folder in ("tf1", "tf2", "torch"):
        for path in sorted(glob.glob(os.path.join(ROOT, "tests/data", folder, "*-b4.*.gz"))):
            if ".memory_profile." in path:  # no ops to plan
                continue
            traces.append(path)
    return [os.path.relpath(p, ROOT) for p in traces]


def run(cuswap, trace, budget, link):
    proc = subprocess.run(
        [cuswap, "compare", "--json", "--budget", budget, "--link", link, trace],
        cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1:] or ["exit %d" % proc.returncode]
    return json.loads(proc.stdout), None


def cell_key(trace, budget, link):
    return "%s|%s|%s" % (trace, budget, link)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuswap", default=os.path.join(ROOT, "build/cli/cuswap"))
    parser.add_argument("--budgets", default="75%,50%,30%")
    parser.add_argument("--links", default="pcie3,pcie5")
    parser.add_argument("--json", help="also write every result here")
    parser.add_argument("--against", help="a --json file of an earlier run to compare with")
    parser.add_argument("traces", nargs="*")
    args = parser.parse_args()
    traces = args.traces or default_traces()
    before = {}
    if args.against:
        with open(args.against) as f:
            before = json.load(f)
    results = {}
    planners = []
    for trace in traces:
        for link in args.links.split(","):
            for budget in args.budgets.split(","):
                out, error = run(args.cuswap, trace, budget, link)
                if error:
                    print("%s %s %s: %s" % (trace, budget, link, error[0]), file=sys.stderr)
                    break
                if out["infinite_memory_peak_bytes"] == 0:
                    print("%s: no device memory in the iteration, skipped" % trace,
                          file=sys.stderr)
                    break
                results[cell_key(trace, budget, link)] = out
                for p in out["planners"]:
                    if p["planner"] not in planners:
                        planners.append(p["planner"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)

    def ratios(out):
        inf = out["infinite_memory_ns"] or 1
        bound = out.get("lower_bound_ns", out["planners"][0]["lower_bound_ns"])
        row = {"bound": bound / inf}
        for p in out["planners"]:
            row[p["planner"]] = (p["iteration_ns"] / inf, p["fits"])
        return row

    print("| trace | link | budget | bound | " + " | ".join(planners) + " |")
    print("|---|---|---|---|" + "---|" * len(planners))
    for key, out in results.items():
        trace, budget, link = key.split("|")
        now = ratios(out)
        old = ratios(before[key]) if key in before else None
        cells = []
        bound = "%.2f" % now["bound"]
        if old:
            bound = "%.2f→%s" % (old["bound"], bound)
        for name in planners:
            if name not in now:
                cells.append("")
                continue
            ratio, fits = now[name]
            text = "%.2f%s" % (ratio, "" if fits else "!")
            if old and name in old:
                text = "%.2f%s→%s" % (old[name][0], "" if old[name][1] else "!", text)
            cells.append(text)
        print("| %s | %s | %s | %s | %s |" % (os.path.basename(trace), link, budget, bound,
                                             " | ".join(cells)))


if __name__ == "__main__":
    main()
