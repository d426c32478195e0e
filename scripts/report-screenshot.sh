#!/usr/bin/env bash
# Makes docs/report.png again: the report of ResNet-50's training step as
# captured on a V100 (tests/data/gpu), at half its peak on a PCIe 4 link,
# drawn by headless Chromium (docs/report.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh default cuswap >/dev/null
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || { echo "report-screenshot: chromium is not installed (scripts/setup.sh)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
build/cli/cuswap report tests/data/gpu/torch-resnet50-v100.trace.json.gz --budget 50% \
  --link pcie4 -o "$out/report.html"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1160,1480 \
  --user-data-dir="$out/profile" --screenshot="$out/report.png" "file://$out/report.html" \
  >/dev/null 2>&1
cp "$out/report.png" docs/report.png
echo "report-screenshot: wrote docs/report.png ($(stat -c %s docs/report.png) bytes)"
