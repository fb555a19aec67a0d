#!/usr/bin/env bash
# Session 9 experiment 2: decode block_m 16 / pipeline depth, and Mixtral 1024-4096 tile variants (TMA runner).
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=84c4413+tma
D=validation/data/h200/moe/tma-2026-11-30/decode
O=/tmp/dec; rm -rf $O; mkdir -p $O
for r in 1 2; do
  TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-tma timeout 250 validation/gpu/run_batch.sh $O/r$r --scenarios $D --repeats 30 --warmup 5 --jobs 12 --no-numerics > $O/r$r.log 2>&1
  echo "r$r rc $? $(date +%T)" >> $O/progress.txt
  tar czf $OUT/dec.tgz -C /tmp dec
done
cat $O/progress.txt
