#!/usr/bin/env bash
# Sets up, builds and runs cuswap's demo on the bundled default: one training
# step of ResNet-50 as captured on a V100 (tests/data/gpu), replayed through
# the CUDA driver on simcuda, the CPU stand-in for a GPU, with less device
# memory than the step needs. On the plain driver it runs out of memory; with
# cuswap preloaded it completes, evicting on demand (reactive) and following
# a plan it makes from the second iteration (online); every byte is checked.
# It ends by writing a report of the online run (build/demo-report.html):
# memory, copy lanes and every planner, and what cuswap moved as recorded.
# Arguments go to `cuswap replay` (try --link pcie3 or --device-memory 2GiB).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build
scripts/build.sh default cuswap cuswap-replay cuswap_shim simcuda >/dev/null

trace=tests/data/gpu/torch-resnet50-v100.trace.json.gz
out="$(mktemp -d)"
# Ten iterations: the first ones pin host memory for the evicted buffers and
# (online) learn the plan; the median of the nine after the first is the
# steady state a training job lives in.
common=(--device-memory 1600MiB --link pcie5 --iterations 10 "$@")
for policy in none reactive online; do
  echo "== replaying $trace: --policy $policy ${common[*]}"
  record=()
  [ "$policy" = online ] && record=(--cuswap-conf "record:$out/online.cst")
  build/cli/cuswap replay "$trace" --policy "$policy" "${common[@]}" "${record[@]}" --json \
    >"$out/$policy.json" 2> >(grep -v '^cuswap\[[0-9]*\]: stats' >&2) || true
done

python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
runs = {p: json.load(open(f"{out}/{p}.json")) for p in ("none", "reactive", "online")}
none = runs["none"]
mib = lambda b: b / (1 << 20)
print()
print(f"One training step of ResNet-50 needs {mib(none['workload_peak_bytes']):.0f} MiB of device memory; "
      f"the simulated GPU has {mib(none['device_memory_bytes']):.0f} MiB "
      f"and a {none['link']} link to the host.")
if none["completed"]:
    print("The plain driver ran it: give --device-memory less than the step's peak.")
else:
    print(f"Without cuswap the step fails: {none['error']}.")
inf = none["infinite_memory_ns"]
print(f"With memory to spare the step takes {inf / 1e6:.1f} ms.")
for policy, words in (("reactive", "evicting the least recently used buffers when memory runs out"),
                      ("online", "following the plan it made from the second iteration")):
    r = runs[policy]
    if not r["completed"]:
        print(f"With cuswap, {words}: it did not complete: {r['error']}.")
        continue
    lost = r["integrity_errors"] + r["hazards"]
    print(f"With cuswap, {words}: a step takes {r['iteration_ns'] / 1e6:.1f} ms (median of "
          f"{r['iterations'] - 1} after the first), "
          f"{r['iteration_ns'] / inf:.2f}x the time with memory to spare, moving "
          f"{r['h2d_bytes'] / 1e9:.2f} GB each way per step; "
          + ("nothing lost (every byte checked, no unordered access)." if lost == 0 else
             f"{r['integrity_errors']} wrong bytes and {r['hazards']} hazards!"))
ok = all(runs[p]["completed"] and runs[p]["integrity_errors"] == 0 and runs[p]["hazards"] == 0
         for p in ("reactive", "online"))
sys.exit(0 if ok else 1)
EOF

# The report: the recording, at the budget and link the run had.
read -r budget link < <(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(r["budget_bytes"], r["link"])' "$out/online.json")
build/cli/cuswap report "$out/online.cst" --budget "$budget" --link "$link" \
  -o build/demo-report.html
echo "The report of the online run: build/demo-report.html (open it in a browser)."
