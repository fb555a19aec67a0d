#!/usr/bin/env bash
# kernels.runner_build_scratch: scripts/build-gpu-runner.sh with a stand-in
# compiler (no hipcc or nvcc needed), checking what the script itself promises:
#  1. a scratch folder left by a killed build of the same OUTPUT is removed;
#  2. a good build leaves OUTPUT and no scratch folder, and the compilers saw a
#     private TMPDIR inside that scratch folder (not /tmp);
#  3. a failed link leaves no OUTPUT (not even a partial one), no scratch, rc 1.
#   runner_scratch_check.sh WORKDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:?usage: runner_scratch_check.sh WORKDIR}"
rm -rf "$work"; mkdir -p "$work/out"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The stand-in: -c SRC -o OBJ writes OBJ; a link writes half of OUTPUT and then
# fails when FAKE_LINK_FAIL is set. It records the TMPDIR it was given.
cat > "$work/fakecc" <<'CC'
#!/usr/bin/env bash
out=""; compile=0
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift ;; -c) compile=1 ;; esac; shift
done
echo "$TMPDIR" >> "$FAKE_LOG"
[ -d "$TMPDIR" ] || { echo "TMPDIR $TMPDIR missing" >&2; exit 3; }
# The stale folder planted before the build must be gone before any compile.
[ ! -e "$TMPDIR/stale-leftover" ] || { echo "a killed build's scratch was not removed first" >&2; exit 4; }
if [ "$compile" = 1 ]; then echo obj > "$out"; exit 0; fi
echo "half" > "$out"
[ -n "${FAKE_LINK_FAIL:-}" ] && exit 1
echo "whole" >> "$out"
CC
chmod +x "$work/fakecc"
export FAKE_LOG="$work/tmpdirs.log"
out="$work/out/tdmsim-gpu"
scratch="$work/out/.tdmsim-gpu.scratch"

# 1 and 2: a stale scratch folder, then a good build.
mkdir -p "$scratch/tmp/stale-leftover"
HIPCC="$work/fakecc" bash "$root/scripts/build-gpu-runner.sh" amd "$out" > "$work/good.log" 2>&1 \
  || { cat "$work/good.log"; fail "good build exited $?"; }
[ "$(cat "$out")" = "$(printf 'half\nwhole')" ] || fail "OUTPUT is not the linked file"
[ ! -e "$scratch" ] || fail "scratch folder left after a good build"
while read -r d; do
  case "$d" in "$scratch"/*) ;; *) fail "a compiler ran with TMPDIR=$d, outside $scratch" ;; esac
done < "$FAKE_LOG"
[ -s "$FAKE_LOG" ] || fail "the stand-in compiler never ran"

# 3: a failed link keeps the old OUTPUT away: none afterwards, nothing half-written.
rm -f "$out"
set +e
FAKE_LINK_FAIL=1 HIPCC="$work/fakecc" bash "$root/scripts/build-gpu-runner.sh" amd "$out" > "$work/bad.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a failed link exited 0"
[ ! -e "$out" ] || fail "a failed link left OUTPUT: $(cat "$out")"
[ ! -e "$scratch" ] || fail "scratch folder left after a failed link"
echo "runner_build_scratch: stale scratch removed, private TMPDIR, whole or no OUTPUT"
