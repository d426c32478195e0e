#!/usr/bin/env bash
# The GPU check kit (docs/gpu-check.md): on a machine with one NVIDIA GPU,
# probes the driver (copy bandwidth, VMM call costs, whether cuMemUnmap
# waits), replays ResNet-50 and Seq2Seq under the policies none, reactive
# and online at a budget below the peak, trains PyTorch's ResNet-50 with and
# without cuswap at 1x, 2x and 4x the batch that fits without it, then prints
# a summary in Markdown to paste into a note. Runs from a pack built
# elsewhere (--pack, --from) or builds a Release tree here. Every step has
# its own time limit; a step that fails says why and the rest still run.
# Exits non-zero if any step failed, after the summary.
#
# Usage: scripts/gpu-check.sh [--sim] [--from DIR]
#        scripts/gpu-check.sh --pack DIR
#   --pack DIR  build everything the check runs into DIR (scripts/gpu-check-pack.sh):
#               no library the GPU machine lacks, at most 48 MiB
#   --from DIR  run from the pack in DIR, building nothing (the default when
#               this script is the pack's own copy)
#   --sim       every step on simcuda (tests/simcuda) instead of the GPU
# Environment:
#   CUSWAP_GPU_CHECK_BUILD     the build tree without --from (default build-gpu);
#                              configured here unless it has a CMakeCache.txt
#   CUSWAP_GPU_CHECK_NO_BUILD  1: use the tree as it is, build nothing
#   CUSWAP_GPU_CHECK_ARCHS     GPU architectures for the replay's kernels
#                              (default: nvidia-smi's compute capability, else 90)
#   CUSWAP_GPU_CHECK_OUT       where the results go (default BUILD/gpu-check,
#                              or gpu-check-out beside the pack)
#   CUSWAP_GPU_CHECK_JOBS      build jobs (default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode=gpu from=""
[ -f "$root/MANIFEST" ] && from=$root  # this is a pack's own copy
while [ $# -gt 0 ]; do
  case "$1" in
    --sim) mode=sim ;;
    --from) [ $# -ge 2 ] || { echo "gpu-check: error: --from needs a folder" >&2; exit 2; }
            from=$2; shift ;;
    --pack) [ $# -ge 2 ] || { echo "gpu-check: error: --pack needs a folder" >&2; exit 2; }
            exec "$root/scripts/gpu-check-pack.sh" build "$2" ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: error: unknown option \"$1\" (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$from" ]; then
  [ -d "$from" ] || { echo "gpu-check: error: --from $from: no such folder" >&2; exit 2; }
  from=$(cd "$from" && pwd)
  [ -f "$from/MANIFEST" ] ||
    { echo "gpu-check: error: $from/MANIFEST is missing: not a pack (scripts/gpu-check.sh --pack DIR)" >&2; exit 2; }
  build=$from kit=$from
  out=${CUSWAP_GPU_CHECK_OUT:-$(dirname "$from")/gpu-check-out}
else
  build=${CUSWAP_GPU_CHECK_BUILD:-build-gpu}
  [[ $build = /* ]] || build=$root/$build
  kit=$root
  out=${CUSWAP_GPU_CHECK_OUT:-$build/gpu-check}
fi
jobs=${CUSWAP_GPU_CHECK_JOBS:-$(nproc)}
started_s=$(date +%s)

# Time limits (s): the whole check must fit in 6 minutes on an H200. A
# replay takes seconds and a training run well under a minute there.
probe_limit_s=60
replay_limit_s=40     # one replay
replays_limit_s=100   # all of them: later ones are skipped past it
train_limit_s=200     # the training step: later runs are skipped past it
iterations=10  # the first ones pin host memory and (online) learn the plan
if [ "$mode" = sim ]; then
  # simcuda replays on the CPU: ResNet-50 reactive at 60% takes about 14 s
  # alone on two cores, and three times that beside other tests: the limits
  # are four times the GPU's.
  replay_limit_s=$((replay_limit_s * 4)) replays_limit_s=$((replays_limit_s * 4))
fi
# NAME|TRACE|BATCH SCALE|BUDGET (% of the workload's peak). Seq2Seq's
# largest ops need about 77% of its peak at once (op 127, TanhGrad, 332 MB of
# 432 MB at batch scale 4), so no policy can run it at 60%: it gets 90%.
traces=(
  "resnet50|tests/data/gpu/torch-resnet50-v100.trace.json.gz|1|60"
  "seq2seq|tests/data/tf1/seq2seq-t100-b4.step_stats.pb.gz|4|90"
)

needed_files=("$build/bench/replay/cuswap-replay" "$build/hooks/libcuswap.so"
              "$build/bench/cuswap-driver-probe" "$build/cli/cuswap")
if [ "$mode" = sim ]; then
  needed_files+=("$build/tests/simcuda/libcuda.so.1")
else
  needed_files+=("$build/bench/replay/cuswap_replay_kernels.fatbin")
fi

declare -A step_status=() step_seconds=()
say() { echo "gpu-check: $*"; }
step() { echo; echo "== gpu-check: $*"; }

# --- step 1: the build -------------------------------------------------------

source scripts/cuda-home.sh
cuda_home=""
find_cuda() { cuda_home=$(cuda_home); }

nvcc=""
find_nvcc() {
  nvcc=$(command -v nvcc || true)
  [ -n "$nvcc" ] || { [ -x "$cuda_home/bin/nvcc" ] && nvcc=$cuda_home/bin/nvcc; } || true
  [ -n "$nvcc" ]
}

# The Debian packages scripts/setup.sh would install; never installs any
# (the GPU machine has no network), only names what is missing.
missing_packages() {
  local packages=(cmake ninja-build g++ libfmt-dev libjemalloc-dev libgtest-dev libgmock-dev
                  libbenchmark-dev libcli11-dev libsimdjson-dev libprotobuf-dev
                  protobuf-compiler zlib1g-dev)
  local missing=()
  if command -v dpkg-query >/dev/null; then
    for p in "${packages[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        missing+=("$p")
    done
  else
    for c in cmake ninja g++ protoc; do command -v "$c" >/dev/null || missing+=("$c"); done
  fi
  echo "${missing[*]}"
}

gpu_archs() {
  if [ -n "${CUSWAP_GPU_CHECK_ARCHS:-}" ]; then echo "$CUSWAP_GPU_CHECK_ARCHS"; return; fi
  local cap
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  echo "${cap:-90}"
}

# Only the targets the check runs (tests and benchmarks must be configured:
# bench/ exists only where the tests are, but nothing else is built).
build_targets() {
  local targets=(cuswap-replay cuswap_shim cuswap-driver-probe cuswap)
  [ "$mode" = sim ] && targets+=(simcuda)
  echo "${targets[*]}"
}

# Where cmake cannot run, the probe alone (Note [A standalone probe]).
build_probe_alone() {
  [ -n "$cuda_home" ] && command -v g++ >/dev/null || return 1
  say "building cuswap-driver-probe alone with g++ (no cuswap-replay: step 3 will not run)"
  mkdir -p "$build/bench"
  g++ -std=c++20 -O2 -I"$root" -isystem "$cuda_home/include" bench/driver_probe.cpp -ldl \
    -o "$build/bench/cuswap-driver-probe"
}

# The commit the pack was built at, from its MANIFEST.
pack_commit() { sed -n 's/^commit: \([0-9a-f]*\).*/\1/p' "$from/MANIFEST"; }

# From a pack: its files are there, its libraries resolve on this machine
# and its executables run (a glibc older than the pack needs shows here).
step_pack() {
  step "1. pack ($from)"
  sed -n '2,5p' "$from/MANIFEST" | sed 's/^/gpu-check: /'
  local commit here
  commit=$(pack_commit)
  here=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
  [ -z "$here" ] || [ "$here" = "$commit" ] ||
    say "note: the pack was built at ${commit:0:12}, this checkout is at ${here:0:12}"
  local f ok=0
  for f in "${needed_files[@]}"; do [ -e "$f" ] || { say "error: $f is missing from the pack"; ok=1; }; done
  "$from/scripts/gpu-check-pack.sh" check "$from" | sed 's/^/gpu-check: /' || ok=1
  "$from/cli/cuswap" --version >/dev/null 2>"$out/pack.err" ||
    { say "error: $from/cli/cuswap does not run here: $(tail -1 "$out/pack.err")"; ok=1; }
  return $ok
}

step_build() {
  step "1. build ($build)"
  local t0 targets
  t0=$(date +%s)
  if [ "${CUSWAP_GPU_CHECK_NO_BUILD:-0}" = 1 ]; then
    say "CUSWAP_GPU_CHECK_NO_BUILD=1: using $build as it is"
  else
    if ! find_cuda; then
      say "error: cuda.h not found (looked in $cuda_home_looked_in): install the CUDA toolkit"
      return 1
    fi
    local missing
    missing=$(missing_packages)
    if [ -n "$missing" ]; then
      say "error: missing Debian packages: $missing"
      say "install them (apt-get install $missing) or run scripts/setup.sh where there is a network; this script installs nothing"
      build_probe_alone || true
      return 1
    fi
    if [ ! -f "$build/CMakeCache.txt" ]; then
      local cuda_args=() archs
      if find_nvcc; then
        archs=$(gpu_archs)
        cuda_args=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUSWAP_REPLAY_CUDA_ARCHS="$archs")
        say "nvcc: $nvcc, replay kernels for sm_$archs"
      elif [ "$mode" = gpu ]; then
        say "error: nvcc not found: the replay's GPU kernels (cuswap_replay_kernels.fatbin) cannot be built"
      fi
      cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCUSWAP_BUILD_TESTS=ON -DCUSWAP_BUILD_BENCH=ON -DCUDAToolkit_ROOT="$cuda_home" \
        "${cuda_args[@]}" >"$out/configure.log" 2>&1 ||
        { say "error: configure failed (last lines of $out/configure.log):"; tail -15 "$out/configure.log"
          build_probe_alone || true; return 1; }
    fi
    targets=$(build_targets)
    say "building $targets with -j$jobs"
    # shellcheck disable=SC2086  # the targets are words
    cmake --build "$build" -- -j"$jobs" $targets >"$out/build.log" 2>&1 ||
      { say "error: build failed (last lines of $out/build.log):"; tail -20 "$out/build.log"; return 1; }
  fi
  local f ok=0
  for f in "${needed_files[@]}"; do [ -e "$f" ] || { say "error: $f was not built"; ok=1; }; done
  say "build took $(($(date +%s) - t0)) s"
  return $ok
}

# --- step 2: the driver probe ------------------------------------------------

# The environment that picks the driver: simcuda under --sim, else the system's.
with_driver() {
  if [ "$mode" = sim ]; then
    LD_LIBRARY_PATH="$build/tests/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      SIMCUDA_CONF="memory:2GiB" "$@"
  else
    "$@"
  fi
}

step_probe() {
  step "2. driver probe"
  local probe=$build/bench/cuswap-driver-probe
  [ -x "$probe" ] || { say "error: $probe is missing (step 1)"; return 1; }
  local rc=0
  with_driver timeout "$probe_limit_s" "$probe" --json >"$out/probe.json" 2>"$out/probe.err" || rc=$?
  [ "$rc" = 124 ] && { say "error: the probe timed out after $probe_limit_s s"; return 1; }
  [ "$rc" = 0 ] || { say "error: the probe failed (exit $rc): $(tail -1 "$out/probe.err")"; return 1; }
  say "done (the figures are in the summary)"
}

# --- step 3: the replays -----------------------------------------------------

# replay NAME TRACE POLICY [cuswap-replay options...]: one run, its JSON in
# $out/replay-NAME-POLICY.json and its exit code beside it.
replay() {
  local name=$1 trace=$2 policy=$3 label=$4
  shift 4
  local base=$out/replay-$name-$label driver_args=()
  if [ "$mode" = sim ]; then
    driver_args=(--simcuda "$build/tests/simcuda")
  else
    driver_args=(--real-driver)
  fi
  local rc=0 spent=$(($(date +%s) - replays_started_s))
  if [ "$spent" -ge "$replays_limit_s" ]; then
    printf '%s\t%s\t%s\t%s\n' "$name" "$label" skipped "$*" >>"$out/replays.tsv"
    say "$name $label: skipped (the replays' $replays_limit_s s are spent)"
    return 1
  fi
  timeout "$replay_limit_s" "$build/bench/replay/cuswap-replay" "$kit/$trace" --policy "$policy" \
    --iterations "$iterations" --json --shim "$build/hooks/libcuswap.so" "${driver_args[@]}" "$@" \
    >"$base.json" 2>"$base.err" || rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$label" "$rc" "$*" >>"$out/replays.tsv"
  say "$name $label: exit $rc$([ "$rc" = 124 ] && echo " (timed out after $replay_limit_s s)")"
  return "$rc"
}

# The peak of a trace (bytes), from the reference run's JSON.
peak_bytes() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workload_peak_bytes"])' "$1"
}

step_replay() {
  step "3. replays ($iterations iterations each, the first a warm-up)"
  [ -x "$build/bench/replay/cuswap-replay" ] || { say "error: cuswap-replay is missing (step 1)"; return 1; }
  : >"$out/replays.tsv"
  replays_started_s=$(date +%s)
  local entry name trace scale pct peak failed=0
  for entry in "${traces[@]}"; do
    IFS='|' read -r name trace scale pct <<<"$entry"
    # The infinite-memory reference: no cuswap, no budget (a GPU's memory
    # cannot be shrunk, so this is also the only meaningful `none` there).
    replay "$name" "$trace" none none --batch-scale "$scale" || failed=1
    if [ "$mode" = sim ] && peak=$(peak_bytes "$out/replay-$name-none.json" 2>/dev/null); then
      # simcuda can be shrunk: `none` with the budget as device memory,
      # expected to run out of it (so its exit code is not a failure).
      replay "$name" "$trace" none none-limited --batch-scale "$scale" \
        --device-memory $((peak * pct / 100)) || true
    fi
    replay "$name" "$trace" reactive reactive --batch-scale "$scale" --budget "$pct%" || failed=1
    replay "$name" "$trace" online online --batch-scale "$scale" --budget "$pct%" || failed=1
  done
  return $failed
}

# --- step 4: training a real model --------------------------------------------

# PyTorch's ResNet-50 at the largest batch that fits in 8 GiB without
# cuswap, then at 2x and 4x with cuswap (scripts/gpu_train_check.py). Under
# --sim, only whether the script and the Python package load.
step_train() {
  step "4. training (PyTorch ResNet-50)"
  local args=(--cli "$build/cli/cuswap" --out "$out" --time-limit-s "$train_limit_s"
              --probe "$out/probe.json")
  [ "$mode" = sim ] && args+=(--sim --sim-driver "$build/tests/simcuda")
  # The script stops starting runs past its limit; this stops a run that hangs.
  timeout $((train_limit_s + 60)) python3 "$kit/scripts/gpu_train_check.py" "${args[@]}" 2>&1 |
    tee "$out/train.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 124 ] && say "error: training timed out after $((train_limit_s + 60)) s"
  return "$rc"
}

# --- step 5: the table and the summary ----------------------------------------

steps=(build probe replay train)

step_report() {
  step "5. summary (paste into a note)"
  local status="" commit
  for s in "${steps[@]}"; do
    status+="$s ${step_status[$s]:-not run} (${step_seconds[$s]:-0} s), "
  done
  if [ -n "$from" ]; then
    commit=$(pack_commit)
    commit=${commit:0:12}
  else
    commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo -)
  fi
  python3 "$kit/scripts/gpu_check_report.py" "$out" "$mode" "${status%, }" \
    "$(($(date +%s) - started_s))" "${commit:--}"
}

run_step() {
  local name=$1 t0=$(date +%s) fn=step_$1
  [ "$name" = build ] && [ -n "$from" ] && fn=step_pack
  if "$fn"; then step_status[$name]=ok; else step_status[$name]=FAILED; fi
  step_seconds[$name]=$(($(date +%s) - t0))
}

main() {
  mkdir -p "$out"
  say "mode $mode, $([ -n "$from" ] && echo "pack $from" || echo "build tree $build"), results in $out"
  if [ "$mode" = gpu ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader \
      >"$out/gpu.txt" 2>/dev/null ||
      say "warning: nvidia-smi sees no GPU (run with --sim to check the script on simcuda)"
  else
    echo "simcuda (tests/simcuda, CPU)" >"$out/gpu.txt"
  fi
  local s rc=0
  for s in "${steps[@]}"; do run_step "$s"; done
  step_report || rc=1
  for s in "${steps[@]}"; do [ "${step_status[$s]}" = ok ] || rc=1; done
  say "total $(($(date +%s) - started_s)) s; $([ $rc = 0 ] && echo PASS || echo FAIL)"
  return $rc
}

main
