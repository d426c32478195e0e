#!/usr/bin/env bash
# Sets up, builds and runs cuswap's demo on the bundled default: a training
# step whose activations need 4x the memory of a simulated 1 GiB device
# fails on the plain driver; then the same program runs with libcuswap.so
# preloaded and a budget of the device's memory, swapping activations to
# host memory, recording what it did; `cuswap inspect` shows the trace.
# Arguments go to the walk-through (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default cuswap-walkthrough cuswap_shim cuswap >/dev/null

echo "== the step on the plain driver"
build/bench/cuswap-walkthrough "$@"

trace="$(mktemp -d)/walkthrough.cst"
echo
echo "== the same program with cuswap preloaded, budget 1 GiB, recording to $trace"
CUSWAP_CONF="budget:1GiB,record:$trace,stats:true" LD_PRELOAD="$PWD/build/hooks/libcuswap.so" \
  build/bench/cuswap-walkthrough "$@" 2>&1 | grep -E "^result|stats: (evictions|prefetches|bytes_to|peak_device)"
echo
build/cli/cuswap inspect "$trace"
