#!/usr/bin/env bash
# The README's second command (and CI's): installs what is missing, builds and
# runs the whole test suite through CTest.
#
#   scripts/test.sh              the suite (Release build in build/)
#   scripts/test.sh --sanitize   the suite, then the library unit tests again
#                                under AddressSanitizer + UndefinedBehaviorSanitizer
#                                (build-asan/), and the SystemC tests and every
#                                recorded output under UBSan alone (build-ubsan/;
#                                scripts/sanitize-tests.sh, docs/reliability.md)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=0
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    *) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTDMSIM_BUILD_TESTS=ON >/dev/null
cmake --build build -j "$(nproc)"
(cd build && ctest --output-on-failure -j "$(nproc)")
if [ "$sanitize" = 1 ]; then
  scripts/sanitize-tests.sh
fi
