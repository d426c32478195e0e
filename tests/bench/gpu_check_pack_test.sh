#!/usr/bin/env bash
# The GPU check's pack, as a GPU machine would get it: `scripts/gpu-check.sh
# --pack PACK` builds it (in build-pack, or $CUSWAP_PACK_BUILD), then this
# checks that PACK is at most 48 MiB, that its MANIFEST names this commit and
# every file it holds with its size, that every executable and library in it
# resolves its libraries inside PACK or from glibc, libstdc++, libgcc and the
# driver with an empty LD_LIBRARY_PATH (and that the check catches a pack
# without its carried library), and runs `scripts/gpu-check.sh --sim --from
# PACK` (tests/bench/gpu_check_test.sh). Prints the pack's size and each
# step's time. Usage: gpu_check_pack_test.sh SOURCE_DIR PACK
set -euo pipefail
source_dir=$(cd "$1" && pwd)
pack=$2
fail() { echo "FAIL (gpu-check pack): $*"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

t0=$(date +%s)
"$source_dir/scripts/gpu-check.sh" --pack "$pack" || fail "scripts/gpu-check.sh --pack $pack failed"
pack=$(cd "$pack" && pwd)
built_s=$(($(date +%s) - t0))

bytes=$(du -sb "$pack" | cut -f1)
[ "$bytes" -le $((48 << 20)) ] || fail "$pack is $bytes bytes, over 48 MiB"

manifest=$pack/MANIFEST
commit=$(git -C "$source_dir" rev-parse HEAD)
grep -q "^commit: $commit" "$manifest" || fail "MANIFEST does not name commit $commit"
listed=0
while read -r size _ path; do
  [ -f "$pack/$path" ] || fail "MANIFEST lists $path, which the pack lacks"
  [ "$(stat -c %s "$pack/$path")" = "$size" ] || fail "MANIFEST gives $path $size bytes, the pack holds another size"
  listed=$((listed + 1))
done < <(sed -n '/^files/,$p' "$manifest" | tail -n +2)
held=$(find "$pack" -type f ! -name MANIFEST | wc -l)
[ "$listed" = "$held" ] || fail "MANIFEST lists $listed files, the pack holds $held"
for f in cli/cuswap hooks/libcuswap.so bench/replay/cuswap-replay bench/cuswap-driver-probe \
         bench/replay/cuswap_replay_kernels.fatbin tests/simcuda/libcuda.so.1 python/cuswap/torch.py \
         scripts/gpu-check.sh scripts/gpu_train_check.py; do
  [ -f "$pack/$f" ] || fail "the pack lacks $f"
done
grep -Eq '^cuda: .*sm_80.*sm_90' "$manifest" || fail "MANIFEST names no sm_80 and sm_90 kernels"

"$source_dir/scripts/gpu-check-pack.sh" check "$pack" || fail "a library resolves outside the pack"
# The check must be able to fail: the same pack without the library it carries.
cp -r "$pack" "$scratch/pack"
rm "$scratch"/pack/lib/*
if out=$("$source_dir/scripts/gpu-check-pack.sh" check "$scratch/pack" 2>&1); then
  fail "the check passed a pack whose lib/ is empty"
fi
grep -q "libsimdjson" <<<"$out" || fail "the check of a pack without lib/ does not name libsimdjson: $out"

t1=$(date +%s)
"$source_dir/tests/bench/gpu_check_test.sh" "$source_dir" --from "$pack" ||
  fail "scripts/gpu-check.sh --sim --from $pack"
echo "ok (gpu-check pack): $(awk -v b="$bytes" 'BEGIN { printf "%.1f MiB", b / 1048576 }'), built in ${built_s} s, --sim --from in $(($(date +%s) - t1)) s"
