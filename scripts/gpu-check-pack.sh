#!/usr/bin/env bash
# The GPU check's pack (docs/gpu-check.md, "The pack"): everything
# scripts/gpu-check.sh runs on a GPU, built here into one folder that needs
# nothing on the GPU machine but glibc, libstdc++, libgcc and the NVIDIA
# driver: the shim, `cuswap`, `cuswap-replay` with its kernels (sm_75, sm_80,
# sm_90 and PTX for newer GPUs), the driver probe, simcuda (for --sim), the
# Python package, the check's scripts and traces, and a MANIFEST. Protobuf and
# zlib are linked in statically; a library Debian ships only as a shared
# object (simdjson) is carried in DIR/lib and found through an $ORIGIN run
# path. The folder keeps the build tree's layout, so `cuswap` finds the shim
# and cuswap-replay beside it as in a build tree.
#
# Usage: scripts/gpu-check-pack.sh build DIR     (scripts/gpu-check.sh --pack DIR)
#        scripts/gpu-check-pack.sh check PATH...  every ELF file under each PATH
#                                                 resolves its libraries inside its
#                                                 pack or from the allowed system set
# Environment:
#   CUSWAP_PACK_BUILD  the Release tree the pack is built in (default build-pack)
#   CUSWAP_PACK_JOBS   build jobs (default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/cuda-home.sh

max_bytes=$((48 << 20))
say() { echo "gpu-check pack: $*"; }
die() { echo "gpu-check pack: error: $*" >&2; exit 1; }

# What a GPU machine is sure to have: the C library and the loader, the C++
# runtime and the NVIDIA driver (libcuda), loaded from the system.
allowed_system='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda)\.so'

# The files of the pack, by their place in the build tree (the pack's too).
pack_files=(cli/cuswap hooks/libcuswap.so bench/replay/cuswap-replay
            bench/replay/cuswap_replay_kernels.fatbin bench/cuswap-driver-probe
            tests/simcuda/libcuda.so.1)
source_files=(scripts/gpu-check.sh scripts/gpu-check-pack.sh scripts/cuda-home.sh
              scripts/gpu_train_check.py
              scripts/gpu_check_report.py
              tests/data/gpu/torch-resnet50-v100.trace.json.gz
              tests/data/tf1/seq2seq-t100-b4.step_stats.pb.gz)

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# libraries FILE: one line per library FILE loads, "NAME PATH", as ldd
# finds them with an empty LD_LIBRARY_PATH (PATH "-": not found); fails,
# with ldd's words on stdout, when ldd does.
libraries() {
  local listing line path
  listing=$(env -u LD_LIBRARY_PATH ldd "$1" 2>&1) || { echo "$listing"; return 1; }
  while IFS= read -r line; do
    line=${line#"${line%%[![:space:]]*}"}
    case "$line" in
      "" | "statically linked") ;;
      *"=> not found"*) echo "${line%% *} -" ;;
      *" => "*) path=${line#*=> }; echo "${line%% =>*} ${path%% (*}" ;;
      *) path=${line%% (*}; echo "${path##*/} $path" ;;
    esac
  done <<<"$listing"
}

# check_file FILE PACK: prints one line per library that does not resolve
# inside PACK or from the allowed system set; returns 1 if any.
check_file() {
  local file=$1 pack=$2 name path bad=0 listing
  listing=$(libraries "$file") || { echo "$file: ldd failed: $listing"; return 1; }
  while read -r name path; do
    [ -n "$name" ] || continue
    if [ "$path" = - ]; then echo "$file: $name not found"; bad=1; continue; fi
    if [[ $(realpath -m "$path") != "$pack"/* && ! ${name##*/} =~ $allowed_system ]]; then
      echo "$file: $name comes from $path, outside the pack and not a system library the GPU machine has"
      bad=1
    fi
  done <<<"$listing"
  return $bad
}

# check PATH...: each PATH a pack folder or one file (whose pack is its
# folder's MANIFEST holder, else the file's folder).
check() {
  local target pack file failed=0 n=0
  for target in "$@"; do
    [ -e "$target" ] || die "$target: no such file or folder"
    target=$(realpath "$target")
    if [ -d "$target" ]; then
      pack=$target
      while IFS= read -r -d '' file; do
        is_elf "$file" || continue
        n=$((n + 1))
        check_file "$file" "$pack" || failed=1
      done < <(find "$target" -type f -print0 | sort -z)
    else
      pack=$(dirname "$target")
      while [ "$pack" != / ] && [ ! -f "$pack/MANIFEST" ]; do pack=$(dirname "$pack"); done
      [ -f "$pack/MANIFEST" ] || pack=$(dirname "$target")
      n=$((n + 1))
      check_file "$target" "$pack" || failed=1
    fi
  done
  [ "$failed" = 0 ] || { say "libraries: FAILED (above)"; return 1; }
  say "libraries: $n ELF files resolve every library inside the pack or from glibc, libstdc++, libgcc and the driver"
}

# The newest symbol version FILES need from PREFIX (GLIBC, GLIBCXX, CXXABI).
needs() {
  local prefix=$1
  shift
  objdump -T "$@" 2>/dev/null | grep -o "${prefix}_[0-9][0-9.]*" | sort -u -V | tail -1
}

build() {
  local dir=$1
  [ -n "$dir" ] || die "build needs a folder: scripts/gpu-check.sh --pack DIR"
  local tree=${CUSWAP_PACK_BUILD:-build-pack} jobs=${CUSWAP_PACK_JOBS:-$(nproc)} t0 cuda_home
  [[ $tree = /* ]] || tree=$root/$tree
  [[ $dir = /* ]] || dir=$(pwd)/$dir
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/MANIFEST" ]; then
    die "$dir exists, is not empty and holds no MANIFEST: not replacing what is not a pack"
  fi
  cuda_home=$(cuda_home) || die "cuda.h not found (looked in $cuda_home_looked_in)"
  local nvcc
  nvcc=$(command -v nvcc || echo "$cuda_home/bin/nvcc")
  [ -x "$nvcc" ] || die "nvcc not found: the replay's GPU kernels cannot be built"

  t0=$(date +%s)
  mkdir -p "$tree"
  if [ ! -f "$tree/CMakeCache.txt" ]; then
    say "configuring $tree (Release; protobuf and zlib static; run path \$ORIGIN)"
    # $ORIGIN/../lib for cli/ and hooks/, $ORIGIN/../../lib for bench/replay/
    # and tests/simcuda/: the pack keeps the tree's layout.
    cmake -S "$root" -B "$tree" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCUSWAP_BUILD_TESTS=ON -DCUSWAP_BUILD_BENCH=ON -DCUSWAP_INSTALL=OFF \
      -DCUSWAP_WERROR="$([ "${CI:-}" = true ] && echo ON || echo OFF)" \
      -DProtobuf_USE_STATIC_LIBS=ON -DZLIB_USE_STATIC_LIBS=ON \
      -DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$cuda_home" \
      '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib;$ORIGIN/../../lib' >"$tree/pack-configure.log" 2>&1 ||
      { tail -20 "$tree/pack-configure.log" >&2; die "configure failed ($tree/pack-configure.log)"; }
  fi
  say "building cuswap, cuswap-replay, the shim, the probe and simcuda in $tree (-j$jobs)"
  cmake --build "$tree" -j "$jobs" --target cuswap cuswap-replay cuswap_shim cuswap-driver-probe \
    simcuda >"$tree/pack-build.log" 2>&1 ||
    { tail -30 "$tree/pack-build.log" >&2; die "build failed ($tree/pack-build.log)"; }

  rm -rf "$dir"
  mkdir -p "$dir/lib"
  local f
  for f in "${pack_files[@]}"; do
    [ -f "$tree/$f" ] || die "$tree/$f was not built"
    mkdir -p "$dir/$(dirname "$f")"
    cp "$tree/$f" "$dir/$f"
    if is_elf "$dir/$f"; then strip --strip-unneeded "$dir/$f"; fi
  done
  for f in "${source_files[@]}"; do
    mkdir -p "$dir/$(dirname "$f")"
    cp "$root/$f" "$dir/$f"
  done
  mkdir -p "$dir/python"
  (cd "$root/python" && find cuswap -name '*.py' -print0 | xargs -0 cp --parents -t "$dir/python")

  # Carry every library outside the allowed set, by its soname.
  local name path listing
  for f in "${pack_files[@]}"; do
    is_elf "$dir/$f" || continue
    listing=$(libraries "$dir/$f") || die "$dir/$f: ldd failed: $listing"
    while read -r name path; do
      [[ $path == /* ]] || continue
      [[ $name =~ $allowed_system ]] && continue
      [[ $(realpath "$path") = "$dir"/* ]] && continue
      [ -f "$dir/lib/$name" ] || { cp -L "$path" "$dir/lib/$name"; strip --strip-unneeded "$dir/lib/$name"; }
    done <<<"$listing"
  done

  write_manifest "$dir" "$tree" "$nvcc"
  local bytes
  bytes=$(du -sb "$dir" | cut -f1)
  say "$dir: $(awk -v b="$bytes" 'BEGIN { printf "%.1f MiB", b / 1048576 }'), built in $(($(date +%s) - t0)) s"
  [ "$bytes" -le "$max_bytes" ] || die "$dir is $bytes bytes, over the $max_bytes allowed"
  check "$dir"
  say "run it: scripts/gpu-check.sh --from $dir   (--sim --from $dir: the same on simcuda)"
}

write_manifest() {
  local dir=$1 tree=$2 nvcc=$3 elfs=() f commit cuda
  while IFS= read -r -d '' f; do is_elf "$f" && elfs+=("$f"); done < <(find "$dir" -type f -print0)
  cuda=$("$nvcc" --version | grep -o 'release [0-9.]*' | head -1 | cut -d' ' -f2)
  commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
  [ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit+=" (with uncommitted changes)"
  {
    echo "cuswap gpu-check pack"
    echo "commit: $commit"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(g++ --version | head -1)"
    echo "cuda: $cuda, kernels for sm_$(grep -E '^CUSWAP_REPLAY_CUDA_ARCHS' "$tree/CMakeCache.txt" | cut -d= -f2 | sed 's/;/, sm_/g') and PTX"
    echo "needs: $(needs GLIBC "${elfs[@]}"), $(needs GLIBCXX "${elfs[@]}"), $(needs CXXABI "${elfs[@]}"), an NVIDIA driver for CUDA $cuda or newer"
    echo "files (bytes, sha256, path):"
    (cd "$dir" && find . -type f ! -name MANIFEST -printf '%P\n' | sort | while IFS= read -r f; do
      printf '%10d  %s  %s\n' "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)" "$f"
    done)
  } >"$dir/MANIFEST"
}

case "${1:-}" in
  build) build "${2:-}" ;;
  check) shift; [ $# -gt 0 ] || die "check needs a pack folder or files"; check "$@" ;;
  -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command \"${1:-}\" (build DIR, check PATH...; try --help)" ;;
esac
