#!/usr/bin/env bash
# Checks the AMD code objects that scripts/compile-kernels-amd.sh left in
# OUTDIR/obj against validation/data/amd/kernels-<target>.csv, one target at a
# time (scripts/amd-kernel-summary.py has the checks).
#   scripts/check-amd-kernels.sh OUTDIR [TARGETS]     (exit 77: nothing to check)
# TDMSIM_AMD_SUMMARY_WRITE=1 rewrites the committed summaries instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: check-amd-kernels.sh OUTDIR [TARGETS]}"
targets="${2:-gfx90a,gfx940}"
if [ ! -f "$out/targets" ] || [ "$(cat "$out/targets")" != "$targets" ]; then
  echo "no AMD objects for $targets in $out (kernels.compile_for_amd skipped or failed): skipping"
  exit 77
fi
# The fresh summaries stay in OUTDIR/fresh-summaries, written after OUTDIR/targets,
# so that cdna_mix.table_matches_code_objects (scripts/check-cdna-mix-table.sh)
# reads them instead of disassembling the same objects again.
fresh="$out/fresh-summaries"
rm -rf "$fresh"
mkdir -p "$fresh"
status=0
IFS=',;' read -r -a list <<< "$targets"
for t in "${list[@]}"; do
  csv="$root/validation/data/amd/kernels-$t.csv"
  rc=0
  if [ "${TDMSIM_AMD_SUMMARY_WRITE:-0}" = 1 ]; then
    python3 "$root"/scripts/amd-kernel-summary.py --objects "$out/obj" --target "$t" --out "$csv" || rc=$?
    [ "$rc" -ne 0 ] || cp "$csv" "$fresh/kernels-$t.csv"
  else
    python3 "$root"/scripts/amd-kernel-summary.py --objects "$out/obj" --target "$t" --check "$csv" \
      --out "$fresh/kernels-$t.csv" || rc=$?
  fi
  # 77: no tools or objects, for every target alike. A failed check goes on to
  # the next target, so that every target's fresh summary is left.
  [ "$rc" -ne 77 ] || exit 77
  [ "$status" -ne 0 ] || status=$rc
done
exit "$status"
