#!/usr/bin/env bash
# Compiles every HIP kernel source and the GPU runner for AMD CDNA with hipcc
# (Debian bookworm: HIP 5.2 on LLVM 15), without running anything: no AMD GPU
# here. The objects stay in OUTDIR/obj for kernels.disassemble_amd.
#   scripts/compile-kernels-amd.sh OUTDIR [TARGETS]
# TARGETS: comma- or semicolon-separated (default gfx90a,gfx940; LLVM 15 has
# no gfx942/gfx950). Exit 77 (CTest "skipped") when hipcc is not installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: compile-kernels-amd.sh OUTDIR [TARGETS]}"
targets="${2:-gfx90a,gfx940}"
hipcc="${HIPCC:-$(command -v hipcc || true)}"
if [ -z "$hipcc" ] || [ ! -x "$hipcc" ]; then
  echo "hipcc not found: skipping the AMD kernel compile (scripts/install-deps.sh installs it)"
  exit 77
fi
mkdir -p "$out"
rm -f "$out/tdmsim-gpu" "$out/targets"
start=$(date +%s)
HIPCC="$hipcc" TDMSIM_GPU_ARCH="$targets" TDMSIM_GPU_OBJDIR="$out/obj" \
  "$root"/scripts/build-gpu-runner.sh amd "$out/tdmsim-gpu"
echo "$targets" > "$out/targets"
echo "kernels: all compiled for $targets in $(( $(date +%s) - start )) s"
