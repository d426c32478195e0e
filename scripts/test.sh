#!/usr/bin/env bash
# Sets up, builds and runs every test, checks a plain Release build's install
# (scripts/install-check.sh), builds the GPU check's pack and runs it on
# simcuda (tests/bench/gpu_check_pack_test.sh), then runs the sanitizer
# (ASan+UBSan) build's tests, and the threaded tests built with
# ThreadSanitizer (the shim preloaded into threaded programs among them).
# Prints each stage's time at the end. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

stages=()
started=$(date +%s)
report() {
  local rc=$?
  echo "== stage times"
  printf '  %s\n' "${stages[@]}"
  echo "  total $(($(date +%s) - started)) s$([ "$rc" = 0 ] || echo " (failed)")"
}
trap report EXIT
stage() {  # NAME COMMAND...: runs it, timed
  local name=$1 t0
  shift
  echo "== $name"
  t0=$(date +%s)
  "$@"
  stages+=("$(printf '%-44s %5d s' "$name" $(($(date +%s) - t0)))")
}

jobs="$(nproc)"
stage "setup" scripts/setup.sh
stage "build (default)" scripts/build.sh default
stage "test (default)" ctest --preset default -j "$jobs"
stage "install check (Release, no preset)" scripts/install-check.sh
stage "gpu-check pack (Release) and --sim --from" \
  tests/bench/gpu_check_pack_test.sh . build-pack/pack
stage "build (asan)" scripts/build.sh asan
stage "test (asan)" ctest --preset asan -j "$jobs"
stage "build (tsan: the threaded tests)" scripts/build.sh tsan
stage "test (tsan)" ctest --preset tsan -j "$jobs"
