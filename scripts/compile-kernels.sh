#!/usr/bin/env bash
# Compiles the HIP sources under kernels/ for NVIDIA (nvcc, sm_90) through the
# project's mapping header, without running them: CI has nvcc but no GPU.
# Builds the microbenchmarks and the whole GPU runner (kernels + link).
# Exit 77 (CTest "skipped") when nvcc is not installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
if [ ! -x "$nvcc" ]; then
  echo "nvcc not found: skipping the kernel compile check"
  exit 77
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for src in "$root"/kernels/microbench/*.hip; do
  echo "nvcc -arch=sm_90 $(basename "$src")"
  "$nvcc" -x cu -arch=sm_90 -O3 -std=c++17 -I"$root" "$src" -o "$out/$(basename "$src" .hip)"
done
NVCC="$nvcc" "$root"/scripts/build-gpu-runner.sh nvidia "$out/tdmsim-gpu"
echo "kernels: all compiled"
