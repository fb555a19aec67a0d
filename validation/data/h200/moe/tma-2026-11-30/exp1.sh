#!/usr/bin/env bash
# Session 9 experiment 1: TMA B tiles (tma), + fast activation (fast), against HEAD 84c4413 (base).
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=84c4413+tma
D=validation/data/h200/moe/tma-2026-11-30/scenarios
O=/tmp/tma; rm -rf $O; mkdir -p $O/ncu
pack() { tar czf $OUT/tma.tgz -C /tmp tma; }
# Smoke: the TMA runner on one warp-specialized case, bounded in time.
$TDMSIM gpu-case $D/mixtral-8x7b-1024tok.yaml --output /tmp/case-m1024 -q
mkdir -p /tmp/smoke; timeout 60 .gpucarry/tdmsim-gpu-tma /tmp/case-m1024 --output /tmp/smoke --repeats 3 --warmup 1 > $O/smoke.log 2>&1; echo "smoke rc $?" >> $O/smoke.log
ok=1; grep -q "smoke rc 0" $O/smoke.log || ok=0
for r in 1 2; do
  for v in base tma fast; do
    [ $ok = 1 ] || [ $v = base ] || continue
    num=--no-numerics; [ $r = 1 ] && [ $v != base ] && num=""
    TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-$v timeout 200 validation/gpu/run_batch.sh $O/$v$r --scenarios $D --repeats 30 --warmup 5 --jobs 12 $num > $O/$v$r.log 2>&1
    echo "$v$r rc $? $(date +%T)" >> $O/progress.txt
    pack
  done
  if [ $r = 1 ] && [ $ok = 1 ]; then
    $TDMSIM gpu-case $D/mixtral-8x7b-4096tok.yaml --output /tmp/case-m4096 -q
    for v in tma fast; do
      mkdir -p /tmp/ncu-out-$v
      timeout 120 /usr/local/cuda/bin/ncu --set full --import-source yes -k regex:gate_up --launch-count 1 -o $O/ncu/m4096-$v .gpucarry/tdmsim-gpu-$v /tmp/case-m4096 --output /tmp/ncu-out-$v --warmup 0 --repeats 1 > $O/ncu/m4096-$v.log 2>&1
      /usr/local/cuda/bin/ncu -i $O/ncu/m4096-$v.ncu-rep --page details > $O/ncu/m4096-$v-gate_up.txt 2>&1
      /usr/local/cuda/bin/ncu -i $O/ncu/m4096-$v.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/ncu/m4096-$v-gate_up-sass.csv.gz
      rm -f $O/ncu/m4096-$v.ncu-rep
      echo "ncu $v $(date +%T)" >> $O/progress.txt
      pack
    done
  fi
done
pack
cat $O/progress.txt
