#!/usr/bin/env bash
# Session 9 experiment 3: raster group one doubling beyond an expert's blocks, interleaved in each round (TMA runner).
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=84c4413+tma
D=validation/data/h200/moe/tma-2026-11-30/raster
O=/tmp/ras; rm -rf $O; mkdir -p $O
for r in 1 2 3; do
  TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-tma timeout 250 validation/gpu/run_batch.sh $O/r$r --scenarios $D --repeats 30 --warmup 5 --jobs 12 --no-numerics > $O/r$r.log 2>&1
  echo "r$r rc $? $(date +%T)" >> $O/progress.txt
  tar czf $OUT/ras.tgz -C /tmp ras
done
cat $O/progress.txt
