#!/usr/bin/env bash
# The README's second command (and CI's): installs what is missing, builds and
# runs the whole test suite through CTest.
#
#   scripts/test.sh              the suite (Release build in build/)
#   scripts/test.sh --sanitize   the suite, then the library unit tests again
#                                under AddressSanitizer + UndefinedBehaviorSanitizer
#                                (their own build in build-asan/; docs/reliability.md)
#   scripts/test.sh --python     the suite, then the Python module built and tested
#                                (its own -fPIC build in build-py/; docs/api.md "Python")
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=0
python=0
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --python) python=1 ;;
    *) echo "usage: scripts/test.sh [--sanitize] [--python]" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTDMSIM_BUILD_TESTS=ON >/dev/null
cmake --build build -j "$(nproc)"
(cd build && ctest --output-on-failure -j "$(nproc)")
if [ "$python" = 1 ]; then
  cmake -S . -B build-py -DCMAKE_BUILD_TYPE=Release -DTDMSIM_BUILD_TESTS=ON -DTDMSIM_PYTHON=ON >/dev/null
  cmake --build build-py -j "$(nproc)" --target tdmsim tdmsim_python
  (cd build-py && ctest --output-on-failure -R '^python\.')
fi
if [ "$sanitize" = 1 ]; then
  scripts/sanitize-tests.sh
fi
