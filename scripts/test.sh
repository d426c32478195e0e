#!/usr/bin/env bash
# Sets up, builds and runs every test, then the sanitizer (ASan+UBSan)
# build's tests. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

jobs="$(nproc)"
echo "== build (default)"
scripts/build.sh default
echo "== test (default)"
ctest --preset default -j "$jobs"

echo "== build (asan)"
scripts/build.sh asan
echo "== test (asan)"
ctest --preset asan -j "$jobs"
