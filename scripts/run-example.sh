#!/usr/bin/env bash
# The README's first command: installs what is missing, builds tdmsim (Release)
# and runs the main job on a shipped example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tdmsim -j "$(nproc)"
tdmsim=build/apps/tdmsim/tdmsim
example=workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml
echo "== validating every shipped configuration file"
"$tdmsim" config validate --quiet workloads/machines/*.yaml workloads/models/*.yaml \
  workloads/scenarios/*.yaml workloads/sweeps/*.yaml
echo "== $example: one MoE layer, software fused-MoE kernels vs the TDM MoE unit"
# This script's own folder: one written before output folders carried their
# .tdmsim-output marker (which --force needs to replace a folder) goes first.
[ -e build/example-run/.tdmsim-output ] || rm -rf build/example-run
"$tdmsim" run "$example" --path both --output build/example-run --force
echo "(summary.json, stats.json, config.json in build/example-run; add --trace for trace.json)"
