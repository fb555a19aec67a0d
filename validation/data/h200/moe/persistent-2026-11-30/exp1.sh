#!/usr/bin/env bash
# Session 10 experiment 1: persistent warp-specialized kernels with the epilogue from registers (pers),
# + fast activation (fast), against HEAD 466781a (base).
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=466781a+persistent
D=validation/data/h200/moe/persistent-2026-11-30/scenarios
O=/tmp/pers; rm -rf $O; mkdir -p $O/ncu
pack() { tar czf $OUT/pers.tgz -C /tmp pers; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/device.txt 2>&1
# Smoke: each new runner on two warp-specialized cases (one split-K), bounded in time.
ok=1
for c in mixtral-8x7b-1024tok mixtral-8x7b-256tok-ws-k2; do
  $TDMSIM gpu-case $D/$c.yaml --output /tmp/case-$c -q
  for v in pers fast; do
    mkdir -p /tmp/smoke-$v-$c
    timeout 60 .gpucarry/tdmsim-gpu-$v /tmp/case-$c --output /tmp/smoke-$v-$c --repeats 3 --warmup 1 >> $O/smoke.log 2>&1
    rc=$?; echo "smoke $v $c rc $rc" >> $O/smoke.log; [ $rc = 0 ] || ok=0
  done
done
pack
for r in 1 2; do
  for v in base pers fast; do
    [ $ok = 1 ] || [ $v = base ] || continue
    num=--no-numerics; [ $r = 1 ] && [ $v != base ] && num=""
    TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-$v timeout 200 validation/gpu/run_batch.sh $O/$v$r --scenarios $D --repeats 30 --warmup 5 --jobs 12 $num > $O/$v$r.log 2>&1
    echo "$v$r rc $? $(date +%T)" >> $O/progress.txt
    pack
  done
  if [ $r = 1 ] && [ $ok = 1 ]; then
    $TDMSIM gpu-case $D/mixtral-8x7b-4096tok.yaml --output /tmp/case-m4096 -q
    for v in pers; do
      mkdir -p /tmp/ncu-out-$v
      timeout 150 /usr/local/cuda/bin/ncu --set full --import-source yes -k regex:_ws_kernel --launch-count 2 -o $O/ncu/m4096-$v .gpucarry/tdmsim-gpu-$v /tmp/case-m4096 --output /tmp/ncu-out-$v --warmup 0 --repeats 1 > $O/ncu/m4096-$v.log 2>&1
      /usr/local/cuda/bin/ncu -i $O/ncu/m4096-$v.ncu-rep --page details > $O/ncu/m4096-$v.txt 2>&1
      /usr/local/cuda/bin/ncu -i $O/ncu/m4096-$v.ncu-rep --page source --csv --print-source sass -k regex:gate_up 2>/dev/null | gzip > $O/ncu/m4096-$v-gate_up-sass.csv.gz
      rm -f $O/ncu/m4096-$v.ncu-rep
      echo "ncu $v $(date +%T)" >> $O/progress.txt
      pack
    done
  fi
done
pack
cat $O/progress.txt $O/smoke.log | grep -v "^$" | tail -30
