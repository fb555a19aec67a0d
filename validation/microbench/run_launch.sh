#!/usr/bin/env bash
# Measures kernel launch and workgroup dispatch overheads on the GPU machine
# (kernels/microbench/launch_bench.hip) for the `launch:` section of a machine:
#   launch.csv    stream / graph / grid rows (see the benchmark's header)
#   device.txt    device, driver, clocks, toolchain, date, commit
# Usage (GPU machine, repository root): validation/microbench/run_launch.sh OUTDIR
set -euo pipefail
out="${1:?usage: run_launch.sh OUTDIR}"
mkdir -p "$out"
{
  echo "date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit=${TDMSIM_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,pstate,power.limit --format=csv
  nvcc --version | tail -2
} > "$out/device_launch.txt" 2>&1
nvcc -x cu -arch=sm_90 -O3 -std=c++17 -I. kernels/microbench/launch_bench.hip -o /tmp/launch_bench
for run in 1 2 3; do /tmp/launch_bench | sed "s/^/$run,/"; done | sed '1s/^1,mode/run,mode/; /^[23],mode/d' > "$out/launch.csv"
cat "$out/launch.csv"
