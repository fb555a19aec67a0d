#!/usr/bin/env bash
# Session 10 experiment 4: the review mends (e8dd40a: the producer's tail wait, a trap off sm_90a)
# against the measured kernels (16ce695), one round each on the experiment's scenarios.
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=e8dd40a
D=validation/data/h200/moe/persistent-2026-11-30/scenarios
O=/tmp/p4; rm -rf $O; mkdir -p $O
$TDMSIM gpu-case $D/mixtral-8x7b-256tok-ws-k2.yaml --output /tmp/case-k2 -q
mkdir -p /tmp/smoke; timeout 60 .gpucarry/tdmsim-gpu-fix /tmp/case-k2 --output /tmp/smoke --repeats 3 --warmup 1 > $O/smoke.log 2>&1; echo "smoke rc $?" >> $O/smoke.log
grep -q "smoke rc 0" $O/smoke.log || { cat $O/smoke.log; exit 1; }
for v in new fix; do
  num=--no-numerics; [ $v = fix ] && num=""
  TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-$v timeout 150 validation/gpu/run_batch.sh $O/$v --scenarios $D --repeats 30 --warmup 5 --jobs 12 $num > $O/$v.log 2>&1
  echo "$v rc $? $(date +%T)" >> $O/progress.txt
done
tar czf $OUT/p4.tgz -C /tmp p4
cat $O/progress.txt $O/smoke.log
