#!/usr/bin/env bash
# The README's first command: installs what is missing, builds tdmsim (Release)
# and runs the main job on a shipped example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tdmsim -j "$(nproc)"
tdmsim=build/apps/tdmsim/tdmsim
example=workloads/scenarios/deepseek-v3-decode-mi355x.yaml
echo "== validating every shipped configuration file"
"$tdmsim" config validate --quiet workloads/machines/*.yaml workloads/models/*.yaml \
  workloads/scenarios/*.yaml workloads/sweeps/*.yaml
echo "== $example, fully resolved (machine and model included, derived peaks in _derived)"
"$tdmsim" config show "$example"
