#!/usr/bin/env bash
# Builds the unit tests of the libraries below the simulator (workloads, isa,
# descriptors: plan, format, emulator; the kernels' host-side code; the CLI's
# output handling) with AddressSanitizer + UndefinedBehaviorSanitizer in
# build-asan/ and runs them; any finding fails (UBSan does not recover).
# The SystemC tests stay out: SystemC switches coroutine stacks, which ASan
# cannot follow (false stack-overflow and use-after-return reports), and the
# CLI tests run the Release binary. Called by `scripts/test.sh --sanitize`.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(tdmsim_unit_tests tdmsim_plan_tests tdmsim_format_tests tdmsim_emulator_tests
         tdmsim_kernels_tests tdmsim_output_tests)
start=$(date +%s)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDMSIM_BUILD_TESTS=ON \
      -DTDMSIM_SANITIZE=ON -DTDMSIM_PYTHON=OFF "$@" >/dev/null
cmake --build build-asan -j "$(nproc)" --target "${targets[@]}"
built=$(date +%s)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
for t in "${targets[@]}"; do
  echo "== $t (ASan+UBSan)"
  if ! (cd build-asan/tests && "./$t"); then
    failed=1
  fi
done
echo "sanitize: built in $((built - start)) s, ran in $(( $(date +%s) - built )) s"
exit "$failed"
