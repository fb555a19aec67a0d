#!/usr/bin/env bash
# Session 10 experiment 2: the adopted kernels (16ce695: persistent gate/up with the fast logistic,
# down one job a workgroup) against 466781a (base), then the v16 batch and an ncu profile.
set -u
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib TDMSIM=$PWD/.gpucarry/tdmsim TDMSIM_COMMIT=16ce695
D=validation/data/h200/moe/persistent-2026-11-30/scenarios
O=/tmp/p2; rm -rf $O; mkdir -p $O/ncu
pack() { tar czf $OUT/p2.tgz -C /tmp p2; }
ok=1
for c in mixtral-8x7b-1024tok mixtral-8x7b-256tok-ws-k2; do
  $TDMSIM gpu-case $D/$c.yaml --output /tmp/case-$c -q
  mkdir -p /tmp/smoke-$c
  timeout 60 .gpucarry/tdmsim-gpu-new /tmp/case-$c --output /tmp/smoke-$c --repeats 3 --warmup 1 >> $O/smoke.log 2>&1
  rc=$?; echo "smoke new $c rc $rc" >> $O/smoke.log; [ $rc = 0 ] || ok=0
done
pack
[ $ok = 1 ] || { cat $O/smoke.log; exit 1; }
for r in 1 2; do
  for v in base new; do
    num=--no-numerics; [ $r = 1 ] && [ $v = new ] && num=""
    TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-$v timeout 150 validation/gpu/run_batch.sh $O/$v$r --scenarios $D --repeats 30 --warmup 5 --jobs 12 $num > $O/$v$r.log 2>&1
    echo "$v$r rc $? $(date +%T)" >> $O/progress.txt
    pack
  done
done
mkdir -p /tmp/v16
TDMSIM_GPU_RUNNER=.gpucarry/tdmsim-gpu-new timeout 330 validation/gpu/run_batch.sh /tmp/v16 --torch --repeats 30 --warmup 5 --jobs 12 > $O/v16.log 2>&1
echo "v16 rc $? $(date +%T)" >> $O/progress.txt
tar czf $OUT/v16.tgz -C /tmp v16
$TDMSIM gpu-case $D/mixtral-8x7b-4096tok.yaml --output /tmp/case-m4096 -q
mkdir -p /tmp/ncu-out
timeout 90 /usr/local/cuda/bin/ncu --set full --import-source yes -k regex:gate_up_ws --launch-count 1 -o $O/ncu/m4096-new .gpucarry/tdmsim-gpu-new /tmp/case-m4096 --output /tmp/ncu-out --warmup 0 --repeats 1 > $O/ncu/m4096-new.log 2>&1
/usr/local/cuda/bin/ncu -i $O/ncu/m4096-new.ncu-rep --page details > $O/ncu/m4096-new-gate_up.txt 2>&1
/usr/local/cuda/bin/ncu -i $O/ncu/m4096-new.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/ncu/m4096-new-gate_up-sass.csv.gz
rm -f $O/ncu/m4096-new.ncu-rep
echo "ncu $(date +%T)" >> $O/progress.txt
pack
cat $O/progress.txt $O/smoke.log; tail -3 $O/v16.log
