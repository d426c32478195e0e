# Sourced by the scripts that need the CUDA toolkit's headers (setup.sh,
# gpu-check.sh, gpu-check-pack.sh): cuda_home prints the toolkit's root, the
# first of $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and /usr whose include/
# holds cuda.h, and fails, printing nothing, when none does.
# shellcheck shell=bash
cuda_home_looked_in='$CUDA_HOME, $CUDA_PATH, /usr/local/cuda, /usr'
cuda_home() {
  local dir
  for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr; do
    if [ -n "$dir" ] && [ -f "$dir/include/cuda.h" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}
