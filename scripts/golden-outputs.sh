#!/usr/bin/env bash
# The golden check of a host-speed change: every output of a fixed set of runs
# (bench/record-outputs.sh: the shipped scenarios on each path their machine
# has, the DeepSeek-V3 layers on mi500x-tdm, repeated draws, a descriptor
# stream, the microbenchmarks; summary.json, stats.json, config.json,
# trace.json) written by a reference build and by the build under test, then
# compared byte for byte (bench/compare-outputs.sh). Exit 0: identical.
#   scripts/golden-outputs.sh REF_TDMSIM NEW_TDMSIM [WORKDIR]
# e.g. a build of main copied aside, and this checkout's:
#   scripts/golden-outputs.sh /tmp/main-tdmsim build/apps/tdmsim/tdmsim /tmp/golden
# Run from the repository root (the scenarios' relative paths). WORKDIR
# (default: a new temporary folder) keeps both output trees for a look.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 REF_TDMSIM NEW_TDMSIM [WORKDIR]" >&2
  exit 2
fi
ref=$(realpath "$1")
new=$(realpath "$2")
work=${3:-$(mktemp -d)}
rm -rf "$work/ref" "$work/new"
mkdir -p "$work"
here=$(dirname "$0")
"$here/../bench/record-outputs.sh" "$ref" "$work/ref"
"$here/../bench/record-outputs.sh" "$new" "$work/new"
"$here/../bench/compare-outputs.sh" "$work/ref" "$work/new"
