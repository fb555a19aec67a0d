#!/usr/bin/env bash
# Builds a libFuzzer target with clang straight from its sources (the main
# CMake build never needs clang) and runs it for a bounded time on seeds
# generated at start and, where there is one, its committed seed corpus
# (tests/fuzz/corpus/TARGET/).
#
#   tests/fuzz/run_fuzz.sh [OUT_DIR [SECONDS [TARGET]]]
#
# TARGET: moe_descriptor (default; the descriptor decoders, with a generated
# corpus of valid encodings added to the committed one) or yaml_config (the
# YAML configuration loader, seeded from today's shipped workloads/ files and
# the malformed-input corpus tests/data/bad/, so its seeds never go stale;
# exit 1 before fuzzing if a shipped file does not load in the target's tree).
# OUT_DIR (default build-fuzz/TARGET) keeps objects between runs, so a rerun
# only recompiles what changed; crash reproducers
# land there as crash-*. New inputs found go to OUT_DIR/corpus, never into the
# committed corpus.
# Environment: CLANGXX (default clang++), FUZZ_SEED (default 1, for
# reproducible CI runs), FUZZ_JOBS (parallel compiles, default 2).
# Exit codes: 0 no finding, 77 clang++ or its libFuzzer runtime is missing
# (CTest maps it to "skipped"), anything else a build failure or a finding.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${3:-moe_descriptor}
out=${1:-$root/build-fuzz/$target}
secs=${2:-20}
cxx=${CLANGXX:-clang++}
jobs=${FUZZ_JOBS:-2}

case "$target" in
  moe_descriptor)
    # The format sources that depend on nothing but the enums header (see
    # descriptors/format/sources.cmake).
    sources=()
    for s in descriptor_error crc32 tensor_descriptor tensor_mover tensor_file moe_layout moe_validate moe_codec; do
      sources+=("$root/descriptors/format/$s.cpp")
    done
    defines=()
    libs=()
    max_len=8192
    unity_except=
    ;;
  yaml_config)
    # The whole configuration library (workloads/); yaml-cpp and fmt are the
    # system's (not instrumented: the coverage that guides is our code's).
    sources=("$root"/workloads/config/*.cpp "$root"/workloads/specs/*.cpp "$root"/workloads/util/*.cpp)
    defines=(-DTDMSIM_WORKLOADS_DIR="\"$root/workloads\"")
    libs=(-lyaml-cpp -lfmt)
    # The largest shipped file (a machine) is under 8 KiB; room to grow.
    max_len=16384
    # All but the loader compile as one unity file, as the CMake build does
    # (tdmsim_workloads): the yaml-cpp, fmt and JSON headers are parsed once,
    # about 46 s of CPU against 90 s file by file; the loader, 60 s alone,
    # compiles beside it.
    unity_except="$root/workloads/config/loader.cpp"
    ;;
  *)
    echo "fuzz: unknown target '$target' (moe_descriptor or yaml_config)" >&2
    exit 2
    ;;
esac
# The tree's own faults first (exit 2), then the compiler's (exit 77: skipped),
# so that a missing source is reported on any host.
if [ -n "$unity_except" ] && [ ! -f "$unity_except" ]; then
  echo "fuzz: $unity_except, the source compiled beside the unity file, does not exist" >&2
  exit 2
fi
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
# Line tables only (-g1): symbolized crash stacks at half the build time of -g.
common=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -fno-sanitize-recover=undefined -I"$root")
lib_flags=("${common[@]}" "${defines[@]}" -fsanitize=fuzzer-no-link,address,undefined)

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
if [ -n "$unity_except" ]; then
  # The unity file is rewritten only when its list changes, so that an
  # unchanged tree still skips its compile.
  unity="$out/obj/unity.cpp"
  text=$(for s in "${sources[@]}"; do
           [ "$s" = "$unity_except" ] || printf '#include "%s"\n' "$s"
         done)
  if [ ! -f "$unity" ] || [ "$(cat "$unity")" != "$text" ]; then printf '%s\n' "$text" > "$unity"; fi
  sources=("$unity_except" "$unity")
fi
for src in "${sources[@]}"; do
  name=$(basename "$(dirname "$src")")_$(basename "$src" .cpp)
  compile "$src" "$out/obj/$name.o"
done
compile "$root/tests/fuzz/fuzz_$target.cpp" "$out/obj/fuzz_$target.o"
for p in "${pids[@]}"; do wait "$p"; done
bin="$out/fuzz_$target"
"$cxx" "${common[@]}" -fsanitize=fuzzer,address,undefined "${objs[@]}" "${libs[@]}" -o "$bin"
echo "fuzz: built $bin in $(( $(date +%s) - start ))s"

# A fresh working corpus each run (libFuzzer adds what it finds to the first
# folder); the committed seeds, where the target has any, are read from the
# second.
corpus="$out/corpus"
seeds="$root/tests/fuzz/corpus/$target"
rm -rf "$corpus"
mkdir -p "$corpus"
case "$target" in
  moe_descriptor) TDMSIM_FUZZ_WRITE_SEEDS="$corpus" "$bin" ;;
  yaml_config)
    # One seed per shipped and per malformed file of each kind: the kind's
    # digit (its byte modulo 6 picks machine, model, scenario, sweep, tenants
    # or kernel profile), a newline, then the file. Every shipped seed must
    # load in the target's tree (else the fuzzing would stop at loading):
    # checked first.
    shipped="$out/shipped"
    rm -rf "$shipped"
    mkdir -p "$shipped"
    # seed KIND FILE PREFIX: writes FILE's seed (a scenarios/ file of
    # `kind: tenants` as kind 4) and prints its path.
    seed() {
      local d=$1
      if [ "$d" = 2 ] && grep -q '^kind: *tenants' "$2"; then d=4; fi
      local to="$corpus/$d-$3$(basename "$2")"
      { printf '%s\n' "$d"; cat "$2"; } > "$to"
      echo "$to"
    }
    kinds=(machines models scenarios sweeps scenarios kernel-profiles)
    for k in 0 1 2 3 5; do
      for f in "$root/workloads/${kinds[$k]}"/*.yaml; do
        [ -f "$f" ] || continue
        cp "$(seed "$k" "$f" "")" "$shipped/"
      done
      for f in "$root/tests/data/bad/${kinds[$k]}"/*.yaml; do
        [ -f "$f" ] || continue
        seed "$k" "$f" bad- > /dev/null
      done
    done
    loads=$(TDMSIM_FUZZ_LOAD_REPORT=1 "$bin" "$shipped"/* 2>&1 | grep '^fuzz-load:' || true)
    total=$(ls "$shipped" | wc -l)
    # (libFuzzer may run an input more than once: any refusal fails.)
    accepted=$(printf '%s\n' "$loads" | grep -c '^fuzz-load: accepted' || true)
    refused=$(printf '%s\n' "$loads" | grep -c '^fuzz-load: refused' || true)
    if [ "$refused" != 0 ] || [ "$accepted" -lt "$total" ]; then
      echo "fuzz: of $total shipped files, $refused loads refused in the target's tree:" >&2
      printf '%s\n' "$loads" | grep -v accepted >&2
      exit 1
    fi
    echo "fuzz: all $total shipped files load in the target's tree"
    ;;
esac
dirs=("$corpus")
committed=0
if [ -d "$seeds" ]; then dirs+=("$seeds"); committed=$(ls "$seeds" | wc -l); fi
echo "fuzz: $(ls "$corpus" | wc -l) generated and $committed committed seeds; fuzzing for ${secs}s"
exec "$bin" "${dirs[@]}" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -max_len="$max_len" \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/"
