#!/usr/bin/env bash
# Sets up, builds and runs cuswap's demo on the bundled default: a training
# step whose activations need 4x the memory of a simulated 1 GiB device
# fails on the plain driver; then the same program runs with libcuswap.so
# preloaded, recording what it did, and `cuswap inspect` shows the trace.
# Arguments go to the walk-through (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default cuswap-walkthrough cuswap_shim cuswap >/dev/null

echo "== the step on the plain driver"
build/bench/cuswap-walkthrough "$@"

trace="$(mktemp -d)/walkthrough.cst"
echo
echo "== the same program with cuswap preloaded, recording to $trace"
CUSWAP_CONF="record:$trace" LD_PRELOAD="$PWD/build/hooks/libcuswap.so" \
  build/bench/cuswap-walkthrough "$@" >/dev/null
build/cli/cuswap inspect "$trace"
