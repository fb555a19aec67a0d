#!/usr/bin/env bash
# CPU time (user + system, every thread) of whole `tdmsim run` commands, for
# one or more builds run in turn, round after round (so that the machine's
# load falls on all of them alike); prints the best and the median per build.
#   bench/run-cpu-time.sh ROUNDS SCENARIO TDMSIM [TDMSIM...]
# e.g. bench/run-cpu-time.sh 10 workloads/scenarios/deepseek-v3-decode-mi355x.yaml build/apps/tdmsim/tdmsim
# Each run: tdmsim run SCENARIO --path software --output DIR --quiet --force.
set -euo pipefail
rounds=$1
scenario=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; ++r)); do
  i=0
  for bin in "$@"; do
    /usr/bin/time -f "%U %S" -a -o "$out/times.$i" "$bin" run "$scenario" --path software \
      --output "$out/run" --quiet --force
    i=$((i + 1))
  done
done
i=0
for bin in "$@"; do
  awk '{ print $1 + $2 }' "$out/times.$i" | sort -g | awk -v bin="$bin" '{ t[NR] = $1 } END {
    printf "%s: %d runs, CPU (user+sys) best %.3f s, median %.3f s\n", bin, NR, t[1],
      (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }'
  i=$((i + 1))
done
