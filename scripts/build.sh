#!/usr/bin/env bash
# Configures and builds one preset (default: "default"; also "asan").
# Usage: scripts/build.sh [preset] [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
shift || true
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -- "$@"
