#!/usr/bin/env bash
# Sets up, builds and runs cuswap's demo on the bundled default: a training
# step whose activations need 4x the memory of a simulated 1 GiB device.
# Arguments go to the walk-through (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default cuswap-walkthrough >/dev/null
exec build/bench/cuswap-walkthrough "$@"
