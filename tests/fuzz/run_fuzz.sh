#!/usr/bin/env bash
# Builds the descriptor libFuzzer target with clang straight from the format
# sources (the main CMake build never needs clang) and runs it for a bounded
# time on a seed corpus of valid encodings.
#
#   tests/fuzz/run_fuzz.sh [OUT_DIR [SECONDS]]
#
# OUT_DIR (default build-fuzz/) keeps objects between runs, so a rerun only
# recompiles what changed; crash reproducers land there as crash-*.
# Environment: CLANGXX (default clang++), FUZZ_SEED (default 1, for
# reproducible CI runs), FUZZ_JOBS (parallel compiles, default 2).
# Exit codes: 0 no finding, 77 clang++ or its libFuzzer runtime is missing
# (CTest maps it to "skipped"), anything else a build failure or a finding.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-fuzz}
secs=${2:-20}
cxx=${CLANGXX:-clang++}
jobs=${FUZZ_JOBS:-2}

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found; skipping"
  exit 77
fi
mkdir -p "$out/obj"
probe="$out/obj/probe"
if ! printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' |
     "$cxx" -x c++ -fsanitize=fuzzer,address,undefined -o "$probe" - >/dev/null 2>&1; then
  echo "fuzz: $cxx cannot link libFuzzer with ASan/UBSan; skipping"
  exit 77
fi

# The format sources that depend on nothing but the enums header (see
# descriptors/format/sources.cmake).
sources=(descriptor_error crc32 tensor_descriptor tdm_engine tensor_file moe_layout moe_validate moe_codec)
# Line tables only (-g1): symbolized crash stacks at half the build time of -g.
common=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -fno-sanitize-recover=undefined -I"$root")
lib_flags=("${common[@]}" -fsanitize=fuzzer-no-link,address,undefined)

# Recompile an object when its source or any header it includes is newer
# (the dependency lists come from -MMD).
stale() {
  local obj=$1 dep=$2
  [ -f "$obj" ] && [ -f "$dep" ] || return 0
  local f
  for f in $(sed -e 's/\\$//' -e 's/^[^:]*://' "$dep"); do
    [ "$f" -nt "$obj" ] && return 0
  done
  return 1
}

objs=()
pids=()
compile() {
  local src=$1 obj=$2
  if stale "$obj" "${obj%.o}.d"; then
    "$cxx" "${lib_flags[@]}" -MMD -MF "${obj%.o}.d" -c "$src" -o "$obj" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  fi
  objs+=("$obj")
}
start=$(date +%s)
for s in "${sources[@]}"; do compile "$root/descriptors/format/$s.cpp" "$out/obj/$s.o"; done
compile "$root/tests/fuzz/fuzz_moe_descriptor.cpp" "$out/obj/fuzz_moe_descriptor.o"
for p in "${pids[@]}"; do wait "$p"; done
bin="$out/fuzz_moe_descriptor"
"$cxx" "${common[@]}" -fsanitize=fuzzer,address,undefined "${objs[@]}" -o "$bin"
echo "fuzz: built $bin in $(( $(date +%s) - start ))s"

# A fresh corpus of valid encodings each run; findings are kept as artifacts.
corpus="$out/corpus"
rm -rf "$corpus"
mkdir -p "$corpus"
TDMSIM_FUZZ_WRITE_SEEDS="$corpus" "$bin"
echo "fuzz: $(ls "$corpus" | wc -l) seeds; fuzzing for ${secs}s"
exec "$bin" "$corpus" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -max_len=8192 \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/"
