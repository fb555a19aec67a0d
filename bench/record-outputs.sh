#!/usr/bin/env bash
# Writes the outputs (summary.json, stats.json, config.json, trace.json) of every
# shipped scenario, on every path its machine has, to DIR, for a byte-for-byte
# comparison between two builds (a host-speed change must not move any byte):
#   bench/record-outputs.sh TDMSIM DIR        # e.g. build/apps/tdmsim/tdmsim /tmp/ref
#   bench/record-outputs.sh TDMSIM DIR2 && bench/compare-outputs.sh DIR DIR2
# Besides the shipped scenarios: repeated routing draws, a descriptor stream the
# TDM unit ran (written, then run back with --descriptors) and the calibration
# microbenchmarks. summary.json's simulation_wall_s (the host's wall time) is
# removed, since it differs run to run. Run from the repository root.
# scripts/golden-outputs.sh runs it for two builds and compares.
set -euo pipefail
# Machines named by name resolve under this checkout's workloads/ for every
# build (config.json records the file), not under each build's own checkout.
export TDMSIM_WORKLOADS=${TDMSIM_WORKLOADS:-$PWD/workloads}
bin=$1
out=$2
mkdir -p "$out"
run() {  # NAME ARGS...
  local name=$1; shift
  "$bin" run "$@" --trace --quiet --force --output "$out/$name"
  sed -i '/"simulation_wall_s"/d' "$out/$name/summary.json"
}
for f in workloads/scenarios/*.yaml; do
  s=$(basename "$f" .yaml)
  machine=$(sed -n 's/^machine: *\([^ #]*\).*/\1/p' "$f")
  if grep -q '^tdm:' "workloads/machines/$machine.yaml" 2>/dev/null; then
    run "$s.both" "$f" --path both
    run "$s.software" "$f" --path software
    run "$s.tdm" "$f" --path tdm
  else
    run "$s.default" "$f"
  fi
done
# The DeepSeek-V3 layers on the TDM machine as well (both paths).
for s in deepseek-v3-decode-mi355x deepseek-v3-prefill-mi355x; do
  run "$s.mi500x-tdm.both" "workloads/scenarios/$s.yaml" --machine mi500x-tdm --path both
done
# Repeated routing draws, and the TDM unit running a descriptor stream read back.
run deepseek-v3-decode-mi355x.repeat3 workloads/scenarios/deepseek-v3-decode-mi355x.yaml --repeat 3
run qwen3-30b-a3b-decode-mi500x-tdm.write workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml --path tdm \
  --write-descriptors "$out/qwen3-30b-a3b-decode-mi500x-tdm.tdmm"
# (read from one path beside DIR, the same for both builds, should an output name it)
stream="$(dirname "$(realpath "$out")")/record-outputs-stream.tdmm"
cp "$out/qwen3-30b-a3b-decode-mi500x-tdm.tdmm" "$stream"
run qwen3-30b-a3b-decode-mi500x-tdm.descriptors workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml \
  --path tdm --descriptors "$stream"
rm "$stream"
# The calibration microbenchmarks (stats.json, trace.json).
bench() {  # NAME ARGS...
  local name=$1; shift
  "$bin" microbench "$@" --trace --quiet --force --output "$out/$name"
  [[ ! -f "$out/$name/summary.json" ]] || sed -i '/"simulation_wall_s"/d' "$out/$name/summary.json"
}
bench microbench-copy-mi300x copy --machine mi300x --bytes 256MiB
bench microbench-chase-mi300x chase --machine mi300x --footprint 256MiB --hops 5000
bench microbench-gemm-h200 gemm --machine h200 --M 2048 --N 2048 --K 2048
