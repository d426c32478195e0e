#!/usr/bin/env bash
# cuswap as another project meets it: a plain Release build (no preset, the
# system's GCC, warnings not errors), `cmake --install` into a temporary
# prefix that is then moved (both package files must find it from where they
# are), tests/install/consumer built against it with find_package(cuswap),
# with pkg-config through CMake and with pkg-config alone, and run; the
# installed `cuswap` finding the installed libcuswap.so for `cuswap replay`;
# and the consumer compiled with cuswap's source tree added by
# add_subdirectory. Builds the library and the CLI only; --full builds the
# tests and the benchmarks too (the whole Release tree must build; CI builds
# them in the presets already) and links and runs the add_subdirectory
# consumer. Exits non-zero on any failure.
# Usage: scripts/install-check.sh [--full]
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="$PWD"
full=OFF
[ "${1:-}" = "--full" ] && full=ON

work="$(mktemp -d "${TMPDIR:-/tmp}/install-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
jobs="$(nproc)"
log="$work/log"
fail() {
  echo "install-check: FAILED: $*" >&2
  [ -s "$log" ] && tail -n 40 "$log" >&2
  exit 1
}
step() { echo "install-check: $*"; }
run() { "$@" >"$log" 2>&1 || fail "$*"; }

export CC="${CC:-gcc}" CXX="${CXX:-g++}"
step "configure and build (Release, CUSWAP_BUILD_TESTS=$full)"
run cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCUSWAP_BUILD_TESTS="$full" -DCUSWAP_BUILD_BENCH="$full"
run cmake --build "$work/build" -j "$jobs"

step "install, then move the prefix"
run cmake --install "$work/build" --prefix "$work/installed"
mv "$work/installed" "$work/prefix"
prefix="$(realpath "$work/prefix")"
for f in bin/cuswap include/cuswap/cuswap.h; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
shim="$(find "$prefix" -name libcuswap.so -type f)"
pc="$(find "$prefix" -name cuswap.pc)"
if [ -z "$shim" ] || [ -z "$pc" ]; then fail "libcuswap.so or cuswap.pc is not installed"; fi
version_line="$("$prefix/bin/cuswap" --version)" || fail "cuswap --version"

consumer() {  # NAME, then cmake options
  local name="$1"
  shift
  run cmake -S tests/install/consumer -B "$work/$name" "$@"
  run cmake --build "$work/$name"
  local version
  # Without a driver the shim logs once that it is inactive: into the log.
  version="$("$work/$name/consumer" 2>"$log")" || fail "$name: the consumer failed"
  case "$version_line" in
    "cuswap $version "*) ;;
    *) fail "$name: the library says $version, the CLI \"$version_line\"" ;;
  esac
}
step "consumer with find_package(cuswap)"
consumer find-package -DCMAKE_PREFIX_PATH="$prefix"
step "consumer with pkg-config (CMake)"
PKG_CONFIG_PATH="$(dirname "$pc")" consumer pkg-config -DCONSUMER_PKG_CONFIG=ON
step "consumer with pkg-config (cc)"
cflags="$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs cuswap)"
# shellcheck disable=SC2086 # pkg-config's words
run "$CC" tests/install/consumer/main.c $cflags -o "$work/consumer-cc"
LD_LIBRARY_PATH="$(dirname "$shim")" "$work/consumer-cc" >/dev/null 2>"$log" ||
  fail "the cc consumer failed"

step "installed cuswap finds the installed libcuswap.so"
# shellcheck disable=SC2016 # expanded by the stub
printf '#!/bin/sh\necho "$CUSWAP_REPLAY_SHIM"\n' >"$work/replay-stub"
chmod +x "$work/replay-stub"
found="$(env -u CUSWAP_REPLAY_SHIM CUSWAP_REPLAY="$work/replay-stub" \
  "$prefix/bin/cuswap" replay TRACE)" || fail "cuswap replay with a stub"
[ "$(realpath "$found")" = "$shim" ] || fail "cuswap replay passes \"$found\", not $shim"
if env -u CUSWAP_REPLAY "$prefix/bin/cuswap" replay TRACE 2>"$log"; then
  fail "cuswap replay without cuswap-replay succeeded"
fi
grep -q "an install does not" "$log" || fail "cuswap replay without cuswap-replay: $(cat "$log")"
run "$prefix/bin/cuswap" simulate "$source_dir/tests/data/tf1/lstm-l1-t32-b2.timeline.json.gz" --json

step "consumer with add_subdirectory"
run cmake -S tests/install/consumer -B "$work/subdirectory" -G "Unix Makefiles" \
  -DCONSUMER_CUSWAP_SOURCE="$source_dir" -DCMAKE_BUILD_TYPE=Release
if [ "$full" = ON ]; then
  run cmake --build "$work/subdirectory" -j "$jobs"
  "$work/subdirectory/consumer" >/dev/null 2>"$log" || fail "the add_subdirectory consumer failed"
else
  # Compiled, not linked: linking would build the library a second time.
  run cmake --build "$work/subdirectory" --target main.c.o
fi

step "ok ($version_line)"
