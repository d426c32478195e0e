#!/usr/bin/env bash
# scripts/gpu-check.sh --sim, building nothing: against a build tree
# (gpu_check_test.sh SOURCE_DIR BUILD_DIR) or from a pack (gpu_check_test.sh
# SOURCE_DIR --from PACK). Fails if the script fails, or its Markdown summary
# lacks a completed row per trace and policy, the steps' times, the probe's
# costs as JSON, the training runs it would make, or the training table of
# the small CPU runs (one under cuswap, with its counters).
set -u
source_dir=$1
shift
out_dir=$(mktemp -d) log=$(mktemp)
trap 'rm -rf "$out_dir" "$log"' EXIT

if [ "${1:-}" = --from ]; then
  CUSWAP_GPU_CHECK_OUT=$out_dir "$source_dir/scripts/gpu-check.sh" --sim --from "$2" >"$log" 2>&1
else
  CUSWAP_GPU_CHECK_BUILD=$1 CUSWAP_GPU_CHECK_NO_BUILD=1 CUSWAP_GPU_CHECK_OUT=$out_dir \
    "$source_dir/scripts/gpu-check.sh" --sim >"$log" 2>&1
fi
rc=$?
cat "$log"
fail() { echo "FAIL (gpu-check --sim): $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "scripts/gpu-check.sh --sim exited with $rc"
grep -q '^| trace | policy | budget | completed |' "$log" || fail "no replay table"
for trace in resnet50 seq2seq; do
  for policy in none reactive online; do
    grep -Eq "^\| $trace x[0-9.]+ \| $policy \| [^|]+ \| yes \|" "$log" ||
      fail "no completed row for $trace $policy"
  done
done
grep -Eq '^  \{"h2d_gbps": [0-9.]+, ' "$log" || fail "no probe costs as JSON"
for way in "--way search" "--way stock" "--way uncapped" "--stats --torch-pluggable -- .* --way pluggable" \
           "--stats -- .* --way run" "--cudnn-benchmark"; do
  grep -Eq "^- \`would run.*$way" "$log" || fail "the summary does not say it would train with $way"
done
for run in "smoke, no cuswap" "smoke, cuswap run"; do
  grep -Eq "^\| $run \| 2 \| [0-9]+ \|" "$log" || fail "the CPU run \"$run\" did not complete"
done
grep -Eq '^\| smoke, cuswap run \| 2 \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \|' "$log" ||
  fail "no per-step counters for the run under cuswap (was the shim active on simcuda?)"
grep -Eq '^- steps: build ok \([0-9]+ s\), probe ok \([0-9]+ s\), replay ok \([0-9]+ s\), train ok \([0-9]+ s\)$' "$log" ||
  fail "a step did not pass, or the steps' times are missing"
echo "ok (gpu-check --sim)"
