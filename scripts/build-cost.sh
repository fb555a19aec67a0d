#!/usr/bin/env bash
# The cost of a full build from scratch (docs/performance.md "Build"): a fresh
# build folder configured without ccache, then `cmake --build` of every target
# (libraries, tdmsim, benchmarks, test executables). Prints CPU time (user +
# sys of the build and every compiler and linker it ran) and wall time; on a
# shared machine only the CPU time is comparable between runs. The HIP kernels
# are not part of it: CTest compiles them (label `compile`).
#   scripts/build-cost.sh [BUILD_DIR] [JOBS] [CMAKE_ARGS...]
#     (default: build-cost, nproc; e.g. -DTDMSIM_PCH=OFF to compare without the
#     precompiled headers)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build-cost}"
jobs="${2:-$(nproc)}"
shift $(( $# < 2 ? $# : 2 ))
rm -rf "$dir"
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTDMSIM_BUILD_TESTS=ON \
      -UCMAKE_CXX_COMPILER_LAUNCHER -UCMAKE_C_COMPILER_LAUNCHER "$@" >/dev/null
export CCACHE_DISABLE=1
/usr/bin/time -o "$dir/build-cost.txt" -f "%U %S %e" cmake --build "$dir" -j "$jobs" >"$dir/build-cost.log"
read -r user sys wall <"$dir/build-cost.txt"
awk -v u="$user" -v s="$sys" -v w="$wall" -v j="$jobs" 'BEGIN {
  printf "full build, -j%d: CPU %.0f s (user %.0f + sys %.0f), wall %.0f s\n", j, u + s, u, s, w }'
