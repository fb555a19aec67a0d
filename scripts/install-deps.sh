#!/usr/bin/env bash
# Installs the Debian packages tdmsim needs, only those missing (idempotent; fast when all present).
# Usage: scripts/install-deps.sh            (as root on Debian bookworm)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ca-certificates
  libsystemc-dev libyaml-cpp-dev
  catch2 libbenchmark-dev nlohmann-json3-dev libfmt-dev libcli11-dev libtbb-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
  libeigen3-dev
  python3 python3-yaml python3-matplotlib
  # the Python module (python/, built and tested by scripts/test.sh)
  python3-dev pybind11-dev python3-pybind11 python3-numpy
  # HIP 5.2 on LLVM 15: compiles the kernels for AMD CDNA (gfx90a, gfx940) in
  # CI (kernels.compile_for_amd, kernels.disassemble_amd); no AMD GPU needed.
  hipcc libamdhip64-dev rocm-device-libs
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
