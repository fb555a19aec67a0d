#!/usr/bin/env bash
# The C API's gpu backend on a GPU host (docs/api.md "The gpu backend"): builds
# libtdmsim_gpu.so from the HIP kernels with nvcc, then runs the check program
# (validation/gpu/capi_gpu_check.c) with backend gpu against backend emulate:
# the seed's weights, caller host weights and caller device weights. Prints
# "capi_gpu_check: PASS" or "capi_gpu_check: FAIL (why)" last; exit 0 / 1.
#
#   validation/gpu/capi_gpu_check.sh [WORKDIR] [--strict]
#
# Run from the repository root. The check program needs libtdmsim, built on
# the host (the GPU machine reaches no package registry, see run_batch.sh):
#   TDMSIM_CAPI_GPU_CHECK=PATH   the program as built on the host (CMake target
#       tdmsim_capi_gpu_check, build/validation/gpu/capi_gpu_check), with its
#       shared libraries (SystemC, yaml-cpp, fmt, TBB) on LD_LIBRARY_PATH;
#   otherwise, when cmake and those libraries are present here, the script
#       builds it in WORKDIR/build.
# TDMSIM_GPU_ARCH as for scripts/build-gpu-runner.sh (default sm_90a).
# --strict also requires max |diff| <= 1e-4 (seed 000's figure; see the .c).
set -uo pipefail
work=""; strict=""
for a in "$@"; do
  case "$a" in
    --strict) strict="--strict" ;;
    -*) echo "capi_gpu_check.sh: unknown option $a" >&2; exit 2 ;;
    *) work="$a" ;;
  esac
done
root="$(pwd)"
[ -f "$root/validation/gpu/capi_gpu_check.c" ] || { echo "capi_gpu_check: FAIL (run from the repository root)"; exit 1; }
work="${work:-$(mktemp -d /tmp/tdmsim-capi-gpu.XXXX)}"
mkdir -p "$work"
fail() { echo "capi_gpu_check: FAIL ($1)"; exit 1; }

echo "== device"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"

echo "== libtdmsim_gpu.so (nvcc)"
t0=$(date +%s)
scripts/build-gpu-runner.sh nvidia "$work/libtdmsim_gpu.so" || fail "building libtdmsim_gpu.so"
echo "built in $(( $(date +%s) - t0 )) s"

echo "== check program"
check="${TDMSIM_CAPI_GPU_CHECK:-}"
if [ -z "$check" ]; then
  command -v cmake >/dev/null || fail "no TDMSIM_CAPI_GPU_CHECK and no cmake to build it"
  cmake -S "$root" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DTDMSIM_BUILD_TESTS=OFF \
        -DTDMSIM_PYTHON=OFF >"$work/configure.log" 2>&1 || fail "configuring (see $work/configure.log)"
  cmake --build "$work/build" --target tdmsim_capi_gpu_check -j "$(nproc)" >"$work/build.log" 2>&1 \
    || fail "building the check program (see $work/build.log)"
  check="$work/build/validation/gpu/capi_gpu_check"
fi
[ -x "$check" ] || fail "$check is not an executable"

echo "== gpu vs emulate"
export TDMSIM_GPU_LIBRARY="$work/libtdmsim_gpu.so" TDMSIM_WORKLOADS="$root/workloads"
"$check" "$root/examples/c/tiny-moe-h200-bf16.yaml" $strict 2>&1 | tee "$work/check.log"
rc=${PIPESTATUS[0]}
grep -q "^capi_gpu_check: PASS$" "$work/check.log" && [ "$rc" -eq 0 ] && exit 0
grep -q "^capi_gpu_check: FAIL" "$work/check.log" || echo "capi_gpu_check: FAIL (the check program exited $rc)"
exit 1
