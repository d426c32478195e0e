#!/usr/bin/env bash
# Times cuswap's hooks on the launch path against nulldriver (a driver that
# does nothing): without cuswap, with cuswap passing through, and with cuswap
# recording a launch that touches 4 of 100,000 live buffers, with and
# without timing it on the device (record_timing, Note [Device durations]),
# and under a budget, the allocator owning every buffer (nulldriver maps
# nothing; the launch prepares and finishes its 4 buffers). Prints medians.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh default hook_bench cuswap_shim >/dev/null
bench=build/bench/hook_bench
shim=$(ls build/hooks/libcuswap.so)
args=(--benchmark_min_time=0.2 --benchmark_format=console)
median() { grep '_median' | awk '{print $1, $2, $3}'; }
echo "== without cuswap";   "$bench" "${args[@]}" 2>/dev/null | median
echo "== pass-through";     LD_PRELOAD="$shim" CUSWAP_CONF= "$bench" "${args[@]}" 2>/dev/null | median
echo "== recording, untimed"; LD_PRELOAD="$shim" CUSWAP_CONF=record:/dev/null,record_timing:false "$bench" "${args[@]}" 2>/dev/null | median
echo "== recording, timed";  LD_PRELOAD="$shim" CUSWAP_CONF=record:/dev/null "$bench" "${args[@]}" 2>/dev/null | median
echo "== budget, reactive";  LD_PRELOAD="$shim" CUSWAP_CONF=budget:64GiB,online:false "$bench" "${args[@]}" 2>/dev/null | median
