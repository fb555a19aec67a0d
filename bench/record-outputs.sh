#!/usr/bin/env bash
# Writes the outputs (summary.json, stats.json, config.json, trace.json) of every
# shipped scenario, on every path its machine has, to DIR, for a byte-for-byte
# comparison between two builds (a host-speed change must not move any byte):
#   bench/record-outputs.sh TDMSIM DIR        # e.g. build/apps/tdmsim/tdmsim /tmp/ref
#   bench/record-outputs.sh TDMSIM DIR2 && bench/compare-outputs.sh DIR DIR2
# summary.json's simulation_wall_s (the host's wall time) is removed, since it
# differs run to run. Run from the repository root.
set -euo pipefail
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
