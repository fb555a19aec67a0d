#!/usr/bin/env bash
# The simulator's table of our AMD kernels' main-loop mix (generated at build
# time from the committed validation/data/amd/kernels-<target>.csv) against
# summaries made now from the code objects that kernels.compile_for_amd left
# in OUTDIR/obj: fails when the kernels and the model drift apart, even before
# anyone re-commits the summaries.
#   scripts/check-cdna-mix-table.sh OUTDIR TARGETS SIM_TEST_BINARY
# Exit 77 (CTest "skipped") when there are no objects or tools.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: check-cdna-mix-table.sh OUTDIR TARGETS SIM_TEST_BINARY}"
targets="${2:?targets}"
tests="${3:?sim test binary}"
if [ ! -f "$out/targets" ] || [ "$(cat "$out/targets")" != "$targets" ]; then
  echo "no AMD objects for $targets in $out (kernels.compile_for_amd skipped or failed): skipping"
  exit 77
fi
IFS=',;' read -r -a list <<< "$targets"
# kernels.disassemble_amd (scripts/check-amd-kernels.sh), which runs first,
# leaves the summaries of these objects in OUTDIR/fresh-summaries, newer than
# OUTDIR/targets (written when the compile finished) and than the summary
# script. Where any is missing or not newer than both (that test was not run,
# the objects were compiled since, or the script changed), every target's is
# made here, in a folder of this test's own.
fresh="$out/fresh-summaries"
reuse=1
for t in "${list[@]}"; do
  if [ ! "$fresh/kernels-$t.csv" -nt "$out/targets" ] ||
     [ ! "$fresh/kernels-$t.csv" -nt "$root/scripts/amd-kernel-summary.py" ]; then
    reuse=0
  fi
done
if [ "$reuse" = 0 ]; then
  fresh="$out/fresh-summaries-cdna-mix"
  rm -rf "$fresh"
  mkdir -p "$fresh"
  for t in "${list[@]}"; do
    # (A failed kernel check still writes the summary; the table is compared anyway.)
    python3 "$root"/scripts/amd-kernel-summary.py --objects "$out/obj" --target "$t" \
      --out "$fresh/kernels-$t.csv" || rc=$?
    if [ "${rc:-0}" -eq 77 ]; then exit 77; fi
  done
else
  echo "the summaries kernels.disassemble_amd made of these objects: $fresh"
fi
for t in gfx90a gfx940; do
  [ -f "$fresh/kernels-$t.csv" ] || { echo "no fresh summary for $t (the model's table has one)"; exit 1; }
done
TDMSIM_AMD_SUMMARY_DIR="$fresh" "$tests" "[cdna-mix-table]"
