#!/usr/bin/env bash
# Installs what cuswap needs to build and test: Debian packages (Chromium and
# a font only for the test that renders a report), and for the Python
# package's tests (tests/python) TensorFlow and PyTorch from PyPI, pinned in
# scripts/requirements-test.txt. With --build, only the Debian packages the
# build needs (what scripts/demo.sh runs). Idempotent; prints nothing when
# everything is there.
set -euo pipefail

build_only=false
case "${1:-}" in
  --build) build_only=true ;;
  "") ;;
  *) echo "setup: error: unknown option \"$1\" (--build: only what the build needs)" >&2; exit 2 ;;
esac

packages=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libjemalloc-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libsimdjson-dev libprotobuf-dev protobuf-compiler zlib1g-dev
  python3
)
$build_only || packages+=(python3-pip chromium fonts-dejavu-core)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# The CUDA toolkit provides cuda.h; nothing here runs on a GPU.
source "$(dirname "$0")/cuda-home.sh"
if ! cuda_home >/dev/null; then
  echo "setup: cuda.h not found (looked in $cuda_home_looked_in): install the CUDA toolkit" >&2
  exit 1
fi

$build_only && exit 0

# tests/python: TensorFlow, tf_keras, PyTorch and setuptools.
if ! python3 -c 'import tensorflow, tf_keras, torch, setuptools' 2>/dev/null; then
  echo "setup: installing scripts/requirements-test.txt with pip"
  requirements="$(dirname "$0")/requirements-test.txt"
  # A Debian python3 is externally managed: then into the user's site.
  python3 -m pip install --quiet -r "$requirements" ||
    python3 -m pip install --quiet --user --break-system-packages -r "$requirements"
fi
