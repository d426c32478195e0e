#!/usr/bin/env bash
# scripts/gpu-check.sh --sim against an existing build tree, building
# nothing: usage: gpu_check_test.sh SOURCE_DIR BUILD_DIR. Fails if the script
# fails or prints no table with a row per trace and cuswap policy, or step 4
# (training) does not load.
set -u
source_dir=$1 build_dir=$2
out_dir=$(mktemp -d) log=$(mktemp)
trap 'rm -rf "$out_dir" "$log"' EXIT

CUSWAP_GPU_CHECK_BUILD=$build_dir CUSWAP_GPU_CHECK_NO_BUILD=1 CUSWAP_GPU_CHECK_OUT=$out_dir \
  "$source_dir/scripts/gpu-check.sh" --sim >"$log" 2>&1
rc=$?
cat "$log"
fail() { echo "FAIL (gpu_check.sim): $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "scripts/gpu-check.sh --sim exited with $rc"
grep -q '^  trace  *policy  *budget  .*completed' "$log" || fail "no table"
for trace in resnet50 seq2seq; do
  for policy in none reactive online; do
    grep -Eq "^  $trace x[0-9.]+ +$policy +.* yes " "$log" || fail "no completed row for $trace $policy"
  done
done
grep -q '^gpu-check: train: would run: .* run --budget 8GiB --stats --torch-pluggable -- ' "$log" ||
  fail "step 4 does not say what it would train"
grep -q '^steps: build=ok probe=ok replay=ok train=ok' "$log" || fail "a step did not pass"
echo "ok (gpu_check.sim)"
