#!/usr/bin/env bash
# Session 10 experiment 3: the v16 batch again with the same runner (16ce695), timing and PyTorch
# baselines only, to see how far the item-7 comparisons move from one batch to the next.
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=16ce695
mkdir -p /tmp/repeat
TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-new timeout 420 validation/gpu/run_batch.sh /tmp/repeat --torch --no-numerics --repeats 30 --warmup 5 --jobs 12 > /tmp/repeat/batch.log 2>&1
echo "repeat rc $? $(date +%T)" >> /tmp/repeat/batch.log
tar czf $OUT/repeat.tgz -C /tmp repeat
tail -3 /tmp/repeat/batch.log
