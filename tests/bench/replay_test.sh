#!/usr/bin/env bash
# End-to-end checks of cuswap-replay on simcuda: usage: replay_test.sh REPLAY DATA_DIR CASE
# Each case checks the exit code and fields of the JSON report (no timings).
set -u
replay=$1 data=$2 case=$3
lstm=$data/tf1/lstm-l1-t32-b2.step_stats.pb.gz
seq2seq=$data/tf1/seq2seq-t100-b4.step_stats.pb.gz
resnet=$data/tf2/resnet50-32px-b4.xplane.pb.gz
snapshot=$data/gpu/torch-transformer-adamw.snapshot.json.gz
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

fail() { echo "FAIL ($case): $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; head -20 "$err"; exit 1; }
field() { grep -o "\"$1\": [^,]*" "$out" | head -1 | sed "s/\"$1\": //"; }
vmm_each() { grep -o '"vmm_calls_each": \[[^]]*\]' "$out" | sed 's/.*\[//; s/\]//'; }
expect_exit() { [ "$rc" -eq "$1" ] || fail "exit code $rc, expected $1"; }
expect() { local v; v=$(field "$1"); [ "$v" = "$2" ] || fail "$1 is $v, expected $2"; }
expect_positive() { local v; v=$(field "$1"); [ -n "$v" ] && [ "$v" != null ] && [ "$v" -gt 0 ] || fail "$1 is '$v', expected > 0"; }
expect_above() { local v; v=$(field "$1"); awk -v v="$v" -v m="$2" 'BEGIN { exit !(v + 0 > m + 0) }' || fail "$1 is '$v', expected > $2"; }
# A run that completed with every byte checked: integrity 0, hazards 0.
expect_clean() { expect_exit 0; expect completed true; expect integrity_errors 0; expect hazards 0; }

case $case in
  none_fits)
    "$replay" "$lstm" --policy none --iterations 3 --json >"$out" 2>"$err"; rc=$?
    expect_exit 0; expect completed true; expect integrity_errors 0; expect hazards 0
    expect error null; expect_positive iteration_ns; expect_positive infinite_memory_ns ;;
  none_out_of_memory)
    "$replay" "$seq2seq" --policy none --device-memory 60MiB --iterations 2 --json >"$out" 2>"$err"; rc=$?
    expect_exit 1; expect completed false; expect iteration_ns null
    grep -q '"error": "out of memory at op [0-9]* (.*) allocating [0-9]* bytes"' "$out" ||
      fail "the error does not name the op and the size" ;;
  reactive)
    "$replay" "$seq2seq" --policy reactive --batch-scale 4 --budget 90% --iterations 2 --json \
      >"$out" 2>"$err"; rc=$?
    expect_exit 0; expect completed true; expect integrity_errors 0; expect hazards 0
    expect_positive h2d_bytes; expect_positive d2h_bytes ;;
  planner)
    "$replay" "$seq2seq" --policy cuswap --batch-scale 4 --budget 90% --iterations 2 --json \
      >"$out" 2>"$err"; rc=$?
    expect_exit 0; expect completed true; expect integrity_errors 0; expect hazards 0
    expect_positive predicted_ns ;;
  online_waits_less)
    # ResNet-50 at 60% of its peak on pcie3: online planning fetches far
    # fewer buffers on demand than reactive eviction, losing nothing.
    "$replay" "$resnet" --policy reactive --device-memory 190MiB --link pcie3 --json \
      >"$out" 2>"$err"; rc=$?
    expect_exit 0; expect completed true; expect integrity_errors 0; expect hazards 0
    reactive=$(field prefetches_on_demand)
    "$replay" "$resnet" --policy online --device-memory 190MiB --link pcie3 --json \
      >"$out" 2>"$err"; rc=$?
    expect_exit 0; expect completed true; expect integrity_errors 0; expect hazards 0
    grep -q "takes over" "$err" || fail "online planning did not take over"
    online=$(field prefetches_on_demand)
    awk -v o="$online" -v r="$reactive" 'BEGIN { exit !(o < r) }' ||
      fail "online fetched $online buffers on demand per iteration, reactive $reactive" ;;
  alloc_sync)
    # PyTorch without its caching allocator: cuMemAlloc and cuMemFree. With
    # no cuswap every free waits for the device; under cuswap none does.
    "$replay" "$seq2seq" --policy none --alloc-path sync --iterations 2 --json >"$out" 2>"$err"; rc=$?
    expect_clean; expect alloc_path '"sync"'; expect_above host_syncs 10
    "$replay" "$seq2seq" --policy reactive --alloc-path sync --batch-scale 4 --budget 90% \
      --iterations 3 --json >"$out" 2>"$err"; rc=$?
    expect_clean; expect_positive h2d_bytes; expect vmm_calls "$(field cuswap_vmm_calls)" ;;
  alloc_pluggable)
    "$replay" "$seq2seq" --policy online --alloc-path pluggable --batch-scale 4 --budget 90% \
      --iterations 4 --json >"$out" 2>"$err"; rc=$?
    expect_clean; expect alloc_path '"pluggable"'; expect_positive h2d_bytes ;;
  pluggable_needs_cuswap)
    "$replay" "$lstm" --policy none --alloc-path pluggable >"$out" 2>"$err"; rc=$?
    expect_exit 2; grep -q -- "--alloc-path pluggable" "$err" || fail "the error does not name --alloc-path" ;;
  bad_alloc_path)
    "$replay" "$lstm" --alloc-path later >"$out" 2>"$err"; rc=$?
    expect_exit 2; grep -q -- "--alloc-path.*later" "$err" || fail "the error does not name --alloc-path" ;;
  workspaces)
    # A cuDNN-like workspace per convolution, under a budget below the peak.
    "$replay" "$resnet" --policy reactive --workspaces --budget 70% --iterations 3 --json \
      >"$out" 2>"$err"; rc=$?
    expect_clean; expect_positive workspaces_added ;;
  snapshot)
    # A PyTorch memory snapshot's allocation stream, below its peak.
    for policy in none reactive online; do
      budget=60%; [ $policy = none ] && budget=100%
      "$replay" "$snapshot" --policy $policy --budget $budget --iterations 4 --json \
        >"$out" 2>"$err"; rc=$?
      expect_clean
      [ $policy = none ] || expect_positive h2d_bytes
      # One count of VMM calls per iteration; with cuswap the first
      # iteration maps the memory those after it reuse.
      each=$(vmm_each)
      [ "$(echo "$each" | tr ',' '\n' | grep -c .)" = 4 ] || fail "vmm_calls_each is '$each', expected 4 counts"
      [ $policy = none ] || [ "${each%%,*}" -gt 0 ] ||
        fail "vmm_calls_each starts with '${each%%,*}', expected > 0"
    done ;;
  snapshot_settles)
    # The same at its peak: once the step is known, each large allocation
    # goes where its like went a step earlier, and the second half of 16
    # steps makes no VMM call (Note [Placed as a step ago]).
    for policy in reactive online; do
      "$replay" "$snapshot" --policy $policy --budget 100% --iterations 16 --json \
        >"$out" 2>"$err"; rc=$?
      expect_clean
      expect vmm_calls 0
      each=$(vmm_each)
      [ "$(echo "$each" | tr ',' '\n' | tail -8 | tr -d ' ' | sort -u)" = 0 ] ||
        fail "vmm_calls_each is '$each', expected 0 in the last 8"
    done ;;
  fitted_batch)
    # Traces at batches 2 and 4, replayed at batch 64 of the fitted model
    # (Note [Replay at a fitted batch]), under cuswap's plan at 80%: the
    # peak is the fitted one, below batch 4's scaled up 16 times.
    lstm4=$data/tf1/lstm-l4-t32-b4.step_stats.pb.gz
    "$replay" "$lstm4" --policy none --batch-scale 16 --device-memory 1GiB --iterations 2 --json \
      >"$out" 2>"$err"; rc=$?
    expect_clean; scaled=$(field workload_peak_bytes)
    "$replay" "$data/tf1/lstm-l4-t32-b2.step_stats.pb.gz" "$lstm4" --batch 64 --policy cuswap \
      --budget 80% --iterations 3 --json >"$out" 2>"$err"; rc=$?
    expect_clean; expect_positive predicted_ns; expect_positive h2d_bytes
    fitted=$(field workload_peak_bytes)
    awk -v f="$fitted" -v s="$scaled" 'BEGIN { exit !(f > 0 && f < s) }' ||
      fail "the fitted peak at batch 64 is $fitted bytes, batch 4 scaled 16 times $scaled" ;;
  batch_needs_traces)
    "$replay" "$lstm" --batch 8 >"$out" 2>"$err"; rc=$?
    expect_exit 2; grep -q -- "--batch: needs traces of one model at two or more" "$err" ||
      fail "the error does not say what --batch needs"
    "$replay" "$lstm" "$data/tf1/lstm-l1-t32-b4.step_stats.pb.gz" >"$out" 2>"$err"; rc=$?
    expect_exit 2; grep -q -- "--batch: two or more traces" "$err" ||
      fail "the error does not ask for --batch" ;;
  missing_trace)
    "$replay" "$data/no-such-trace.json" --json >"$out" 2>"$err"; rc=$?
    expect_exit 2; grep -q "no-such-trace.json" "$err" || fail "the error does not name the file" ;;
  unknown_policy)
    "$replay" "$lstm" --policy sometimes >"$out" 2>"$err"; rc=$?
    expect_exit 2; grep -q -- "--policy.*sometimes" "$err" || fail "the error does not name --policy" ;;
  bad_plan)
    plan=$(mktemp --suffix=.json); echo '{"version": 7}' >"$plan"
    "$replay" "$lstm" --policy "plan:$plan" >"$out" 2>"$err"; rc=$?
    rm -f "$plan"
    expect_exit 2; grep -q "$(basename "$plan").*version" "$err" || fail "the error does not name the file and key" ;;
  bad_size)
    "$replay" "$lstm" --device-memory lots >"$out" 2>"$err"; rc=$?
    expect_exit 2; grep -q -- "--device-memory" "$err" || fail "the error does not name --device-memory" ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
echo "ok ($case)"
