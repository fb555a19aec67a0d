#!/usr/bin/env bash
# Session 10 experiment 5: exp4 again, interleaved, fix first: fix new fix new (timing only).
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=e8dd40a
D=validation/data/h200/moe/persistent-2026-11-30/scenarios
O=/tmp/p5; rm -rf $O; mkdir -p $O
for r in 1 2; do
  for v in fix new; do
    TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-$v timeout 100 validation/gpu/run_batch.sh $O/$v$r --scenarios $D --repeats 30 --warmup 5 --jobs 12 --no-numerics > $O/$v$r.log 2>&1
    echo "$v$r rc $? $(date +%T)" >> $O/progress.txt
  done
done
tar czf $OUT/p5.tgz -C /tmp p5
cat $O/progress.txt
