#!/usr/bin/env bash
# Measures the H200 figures the simulator is calibrated and validated against,
# in one call on the GPU machine (see docs/calibration.md):
#   device.txt     device, driver, clocks, toolchain, date, commit
#   memory.csv     streaming copy/read bandwidth and pointer-chase latency (kernels/microbench)
#   gemm.csv       bf16 and fp8 GEMM roofline through the vendor BLAS
# Usage (GPU machine, repository root): validation/microbench/run_h200.sh OUTDIR
set -euo pipefail
out="${1:?usage: run_h200.sh OUTDIR}"
mkdir -p "$out"
{
  echo "date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit=${TDMSIM_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total,pstate,clocks.sm,clocks.mem,power.limit --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda); p=torch.cuda.get_device_properties(0); print("sms", p.multi_processor_count, "l2", p.L2_cache_size)'
} > "$out/device.txt" 2>&1
nvcc -x cu -arch=sm_90 -O3 -std=c++17 -I. kernels/microbench/memory_bench.hip -o /tmp/memory_bench
/tmp/memory_bench all > "$out/memory.csv"
PYTHONUNBUFFERED=1 python3 validation/microbench/gemm_roofline.py > "$out/gemm.csv"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$out/device.txt"
echo "done: $(wc -l < "$out/memory.csv") memory rows, $(wc -l < "$out/gemm.csv") gemm rows"
