#!/usr/bin/env bash
# Two sanitizer builds, each RelWithDebInfo in its own folder; any finding
# fails (UBSan does not recover). Called by `scripts/test.sh --sanitize`.
#   scripts/sanitize-tests.sh [asan|ubsan] [CMAKE ARGS...]   (default: both)
# asan: the unit tests of the libraries below the simulator (workloads, isa,
#   descriptors: plan, format, emulator; the kernels' host-side code; the
#   CLI's output handling) with AddressSanitizer + UndefinedBehaviorSanitizer,
#   in build-asan/. The SystemC tests stay out of it: SystemC switches
#   coroutine stacks, which ASan cannot follow (false stack-overflow and
#   use-after-return reports).
# ubsan: the SystemC tests (CTest's sim.*) and the simulator's command with
#   UndefinedBehaviorSanitizer alone, which follows those switches, in
#   build-ubsan/; the command runs every output of bench/record-outputs.sh
#   (every shipped scenario on every path, repeated draws, a descriptor
#   stream, the microbenchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
stages=(asan ubsan)
if [[ $# -gt 0 && ( $1 == asan || $1 == ubsan ) ]]; then
  stages=("$1")
  shift
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
for stage in "${stages[@]}"; do
  start=$(date +%s)
  if [[ $stage == asan ]]; then
    targets=(tdmsim_unit_tests tdmsim_plan_tests tdmsim_format_tests tdmsim_emulator_tests
             tdmsim_kernels_tests tdmsim_output_tests)
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDMSIM_BUILD_TESTS=ON \
          -DTDMSIM_SANITIZE=ON -DTDMSIM_PYTHON=OFF "$@" >/dev/null
    cmake --build build-asan -j "$(nproc)" --target "${targets[@]}"
    built=$(date +%s)
    for t in "${targets[@]}"; do
      echo "== $t (ASan+UBSan)"
      if ! (cd build-asan/tests && "./$t"); then
        failed=1
      fi
    done
  else
    cmake -S . -B build-ubsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDMSIM_BUILD_TESTS=ON \
          -DTDMSIM_SANITIZE_UNDEFINED=ON -DTDMSIM_PYTHON=OFF "$@" >/dev/null
    cmake --build build-ubsan -j "$(nproc)" --target tdmsim_sim_tests tdmsim
    built=$(date +%s)
    echo "== sim.* (UBSan)"
    if ! (cd build-ubsan && ctest -j "$(nproc)" -R '^sim\.' --output-on-failure); then
      failed=1
    fi
    echo "== bench/record-outputs.sh with the UBSan command"
    rm -rf build-ubsan/outputs
    if ! bench/record-outputs.sh build-ubsan/apps/tdmsim/tdmsim build-ubsan/outputs >/dev/null; then
      failed=1
    fi
  fi
  echo "sanitize $stage: built in $((built - start)) s, ran in $(( $(date +%s) - built )) s"
done
exit "$failed"
