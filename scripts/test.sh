#!/usr/bin/env bash
# Sets up, builds and runs every test, checks a plain Release build's install
# (scripts/install-check.sh), then runs the sanitizer (ASan+UBSan) build's
# tests, and the threaded tests built with ThreadSanitizer (the shim
# preloaded into threaded programs among them). Exits non-zero on any
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

jobs="$(nproc)"
echo "== build (default)"
scripts/build.sh default
echo "== test (default)"
ctest --preset default -j "$jobs"

echo "== install check (Release, no preset)"
scripts/install-check.sh

echo "== build (asan)"
scripts/build.sh asan
echo "== test (asan)"
ctest --preset asan -j "$jobs"

echo "== build (tsan: the threaded tests)"
scripts/build.sh tsan
echo "== test (tsan)"
ctest --preset tsan -j "$jobs"
