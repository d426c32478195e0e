#!/usr/bin/env python3
"""The summary of scripts/gpu-check.sh (docs/gpu-check.md), from its results
folder: probe.json, replays.tsv, one replay-NAME-LABEL.json per run, and
train.txt (step 4's output, whose table is already Markdown).

Usage: gpu_check_report.py OUT_DIR MODE STEP_STATUS ELAPSED_S COMMIT
Prints one Markdown block meant to be pasted into a note; exits 1 when the
replay table has no row (nothing was replayed).
"""
import datetime
import json
import os
import socket
import sys

NOTES = {
    "none": "no cuswap, no budget: the infinite-memory reference",
    "none-limited": "no cuswap, the budget as simcuda's device memory: expected to run out",
    "reactive": "cuswap with CUSWAP_CONF=budget:B,online:false",
    "online": "cuswap with CUSWAP_CONF=budget:B (plans online from the second iteration)",
}


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def print_probe(out_dir):
    p = load_json(os.path.join(out_dir, "probe.json"))
    print()
    if not p:
        print("**Probe**: no result")
        return
    print(f"**Probe**: driver {p['driver']} (version {p['driver_version']}), device "
          f"{p['device'] or '-'}, clock {p['clock']}")
    print()
    if p["h2d_bytes_per_s"]:
        print(f"- pinned copies of 64 MiB, median of 10: host->device "
              f"{p['h2d_bytes_per_s'] / 1e9:.1f} GB/s, device->host "
              f"{p['d2h_bytes_per_s'] / 1e9:.1f} GB/s")
    calls = ["cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemUnmap", "cuMemRelease",
             "cuMemAddressReserve", "cuMemAddressFree"]
    for v in p["vmm"] or []:
        print(f"- VMM calls at {v['size_bytes'] >> 20} MiB, median of 20 (us): " +
              ", ".join(f"{c} {v.get(c + '_us', 0):.1f}" for c in calls) +
              (" (simcuda's virtual clock: its configured costs)" if p["clock"] == "virtual" else ""))
    for g in p.get("ranges", []):
        print(f"- a range of {g['handles']} 2 MiB handles: {g['handles']} maps "
              f"{g['cuMemMap_all_us']:.1f} us, one cuMemSetAccess {g['cuMemSetAccess_us']:.1f} us, "
              f"one cuMemUnmap {g['cuMemUnmap_us']:.1f} us")
    if "ordering_us" in p:
        o = p["ordering_us"]
        print("- on finished work (us): " +
              ", ".join(f"{name} {value:.2f}" for name, value in o.items()))
    if "pin_us_per_mib" in p:
        print(f"- pinning host memory: {p['pin_us_per_mib']:.1f} us/MiB, unpinning "
              f"{p['unpin_us_per_mib']:.1f} us/MiB")
    if p.get("simcuda_conf"):
        costs = dict(kv.split(":", 1) for kv in p["simcuda_conf"].split(","))
        print("- these costs as simcuda's configuration (tests/simcuda/README.md, Host time; "
              "its defaults are updated from it):")
        print()
        print("  ```json")
        print("  " + json.dumps({k: float(v) for k, v in costs.items()}))
        print("  ```")
    waits = p.get("unmap_waits")
    if "unmap_during_kernel_us" in p:
        verdict = {True: "yes", False: "no", None: "unclear"}[waits]
        print(f"- cuMemUnmap waits for a kernel on another stream: {verdict} "
              f"(unmap {p['unmap_during_kernel_us']:.1f} us, release "
              f"{p['release_during_kernel_us']:.1f} us during a {p['kernel_ms']:.0f} ms kernel, "
              f"wall clock)")
    if p.get("error"):
        print(f"- error: {p['error']}")


def cell_completed(r, label):
    if r["completed"]:
        return "yes"
    return "no (expected)" if label == "none-limited" else "NO"


def cell_budget(r, label):
    peak = r["workload_peak_bytes"]
    if label == "none" or not peak:
        return "-"
    limit = r["device_memory_bytes"] if label == "none-limited" else r["budget_bytes"]
    return f"{limit / peak:.0%} ({limit / 1e6:.0f} MB)"


def print_table(out_dir, mode):
    rows = []
    try:
        with open(os.path.join(out_dir, "replays.tsv")) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    except OSError:
        pass
    header = ["trace", "policy", "budget", "completed", "iter ms", "x inf", "h2d MB/it", "d2h MB/it",
              "integrity", "hazards", "on-demand", "exit"]
    table, errors = [], []
    simulated = mode == "sim"
    for name, label, rc, args in rows:
        if rc == "skipped":
            table.append([name, label, "-", "skipped"] + ["-"] * 7 + [rc])
            errors.append(f"error: {name} {label}: not run, the replays' time was spent")
            continue
        r = load_json(os.path.join(out_dir, f"replay-{name}-{label}.json"))
        if not r:
            table.append([name, label, "-", "no result"] + ["-"] * 7 + [rc])
            errors.append(f"error: {name} {label}: exit {rc}, no JSON (see replay-{name}-{label}.err)")
            continue
        ns, inf = r["iteration_ns"], r["infinite_memory_ns"]
        on_demand = r["prefetches_on_demand"]
        table.append([
            f"{name} x{r['batch_scale']:g}", label, cell_budget(r, label), cell_completed(r, label),
            f"{ns / 1e6:.2f}" if ns else "-",
            f"{ns / inf:.2f}" if ns and inf else "-",
            f"{r['h2d_bytes'] / 1e6:.1f}" if simulated else "n/a",
            f"{r['d2h_bytes'] / 1e6:.1f}" if simulated else "n/a",
            str(r["integrity_errors"]),
            str(r["hazards"]) if simulated else "n/a",
            "-" if on_demand is None else f"{on_demand:g}",
            rc,
        ])
        if r.get("error"):
            kind = "expected" if label == "none-limited" else "error"
            text = r["error"] if len(r["error"]) <= 140 else r["error"][:137] + "..."
            errors.append(f"{kind}: {name} {label}: {text}")
    print()
    if not table:
        print("**Replays**: no table (nothing was replayed)")
        return False
    clock = "simcuda virtual time" if simulated else "wall clock"
    print(f"**Replays**: iteration = median of the steady-state iterations ({clock}); "
          f"x inf = against the same replay with no cuswap and memory to spare; "
          f"budget = share of the workload's peak")
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in table:
        print("| " + " | ".join(row) + " |")
    print()
    for label in dict.fromkeys(row[1] for row in table):
        print(f"- {label}: {NOTES.get(label, '')}")
    if not simulated:
        print("- n/a: bytes moved and hazards are counted by simcuda only")
    for e in errors:
        print(f"- {e}")
    return True


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    out_dir, mode, status, elapsed_s, commit = argv[1:]
    try:
        with open(os.path.join(out_dir, "gpu.txt")) as f:
            gpu = f.read().strip() or "unknown"
    except OSError:
        gpu = "unknown (nvidia-smi failed)"
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print(f"#### cuswap gpu-check{' --sim' if mode == 'sim' else ''}, commit {commit}, "
          f"{socket.gethostname()}, {now}, {elapsed_s} s")
    print()
    print(f"- device: {gpu}")
    print(f"- steps: {status.strip()}")
    print_probe(out_dir)
    ok = print_table(out_dir, mode)
    print()
    print("**Training**")
    print()
    prefix = "gpu-check: train: "
    try:
        with open(os.path.join(out_dir, "train.txt")) as f:
            # The table and its notes; of the progress lines (all in train.txt)
            # only errors and, under --sim, the runs it would make.
            for line in f.read().rstrip().splitlines():
                if not line.startswith(prefix):
                    print(line)
                elif any(word in line for word in ("error", "would run", "--sim")):
                    print(f"- `{line[len(prefix):]}`")
    except OSError:
        print("not run")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
