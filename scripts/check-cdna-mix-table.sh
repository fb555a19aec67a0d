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
# the objects were compiled since, or the script changed), that script makes
# them here as that test does, every target's.
fresh="$out/fresh-summaries"
reuse=1
for t in "${list[@]}"; do
  if [ ! "$fresh/kernels-$t.csv" -nt "$out/targets" ] ||
     [ ! "$fresh/kernels-$t.csv" -nt "$root/scripts/amd-kernel-summary.py" ]; then
    reuse=0
  fi
done
if [ "$reuse" = 0 ]; then
  # Its comparison with the committed summaries is kernels.disassemble_amd's
  # verdict, not this test's: a failed one still leaves every target's fresh
  # summary, and the table is compared with those anyway. Its output goes to a
  # log beside them.
  rc=0
  TDMSIM_AMD_SUMMARY_WRITE=0 bash "$root"/scripts/check-amd-kernels.sh "$out" "$targets" \
    > "$out/cdna-mix-summaries.log" 2>&1 || rc=$?
  [ "$rc" -ne 77 ] || { cat "$out/cdna-mix-summaries.log"; exit 77; }
  echo "summaries made of these objects by scripts/check-amd-kernels.sh (its log: $out/cdna-mix-summaries.log)"
else
  echo "the summaries kernels.disassemble_amd made of these objects: $fresh"
fi
for t in gfx90a gfx940; do
  [ -f "$fresh/kernels-$t.csv" ] || { echo "no fresh summary for $t (the model's table has one)"; exit 1; }
done
TDMSIM_AMD_SUMMARY_DIR="$fresh" "$tests" "[cdna-mix-table]"
