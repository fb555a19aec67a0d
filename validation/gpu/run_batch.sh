#!/usr/bin/env bash
# Builds, checks and times a batch of cross-validation scenarios on the GPU
# machine in one call (issue 6). Run from the repository root:
#
#   validation/gpu/run_batch.sh OUTDIR [--filter REGEX] [--no-numerics] [--no-timing]
#                                      [--repeats N] [--warmup N] [--jobs N] [--torch]
#                                      [--torch-repeats N] [--scenarios DIR]
#
# TDMSIM_GPU_RUNNER=PATH uses a runner built before instead of building one.
# Needs: nvcc, python3 with numpy, and a host-built `tdmsim` (for gpu-case and
# emulate) as $TDMSIM, with its shared libraries on LD_LIBRARY_PATH (the GPU
# machine reaches no package registry: carry them, see docs/gpu-kernels.md).
# Scenarios: validation/gpu/scenarios/index.csv (--scenarios DIR: DIR/index.csv and
# DIR/NAME.yaml instead, for ad-hoc experiments). Writes into OUTDIR:
#   runs.jsonl     one tdmsim-gpu run.json per scenario (one line each)
#   numerics.csv   GPU y against the emulator's y (numerics scenarios)
#   baselines.csv  --torch: PyTorch per-expert loop and grouped-GEMM times
#                  (bf16 scenarios), and the dense bf16 GEMM rate in device.txt
#   device.txt     nvidia-smi snapshot before and after, commit, date
#   log.txt        everything printed
set -uo pipefail
out="${1:?usage: run_batch.sh OUTDIR [options]}"; shift
filter=".*"; scendir="validation/gpu/scenarios"; numerics=1; timing=1; repeats=50; warmup=10; jobs=4; torch=0; torch_repeats=30
while [ $# -gt 0 ]; do
  case "$1" in
    --filter) filter="$2"; shift 2 ;;
    --no-numerics) numerics=0; shift ;;
    --no-timing) timing=0; shift ;;
    --repeats) repeats="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --torch) torch=1; shift ;;
    --torch-repeats) torch_repeats="$2"; shift 2 ;;
    --scenarios) scendir="$2"; shift 2 ;;
    *) echo "run_batch.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
root="$(pwd)"
tdmsim="${TDMSIM:?set TDMSIM to a host-built tdmsim}"
export TDMSIM_WORKLOADS="$root/workloads"
mkdir -p "$out"
work="$(mktemp -d /tmp/tdmsim-batch.XXXX)"
exec > >(tee -a "$out/log.txt") 2>&1
{
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit ${TDMSIM_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
} > "$out/device.txt"

echo "== build"
t0=$(date +%s)
if [ -n "${TDMSIM_GPU_RUNNER:-}" ]; then  # a runner built before (e.g. a variant)
  cp "$TDMSIM_GPU_RUNNER" "$work/tdmsim-gpu"
else
  scripts/build-gpu-runner.sh nvidia "$work/tdmsim-gpu" || exit 1
fi
echo "build took $(( $(date +%s) - t0 )) s"

mapfile -t rows < <(tail -n +2 "$scendir/index.csv" | grep -E "^($filter)," )
echo "== ${#rows[@]} scenarios"
: > "$out/runs.jsonl"
for row in "${rows[@]}"; do
  IFS=, read -r name split num model dtype tokens routing tile <<< "$row"
  scen="$scendir/$name.yaml"
  "$tdmsim" gpu-case "$scen" --output "$work/case/$name" -q || { echo "$name: gpu-case failed"; continue; }
  mkdir -p "$work/gpu/$name"
  args=(--repeats "$repeats" --warmup "$warmup")
  [ "$timing" -eq 1 ] || args=(--no-time)
  [ "$numerics" -eq 1 ] && [ "$num" = 1 ] && args+=(--save-y)
  "$work/tdmsim-gpu" "$work/case/$name" --output "$work/gpu/$name" "${args[@]}"
  rc=$?
  if [ -f "$work/gpu/$name/run.json" ]; then
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['rc']=int(sys.argv[2]); j['split']=sys.argv[3]; print(json.dumps(j))" \
      "$work/gpu/$name/run.json" "$rc" "$split" >> "$out/runs.jsonl"
  else
    echo "{\"case\": \"$name\", \"rc\": $rc, \"split\": \"$split\"}" >> "$out/runs.jsonl"
  fi
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> "$out/device.txt"

if [ "$torch" -eq 1 ]; then
  echo "== PyTorch baselines"
  python3 - >> "$out/device.txt" <<'PY'
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(5): a @ b
torch.cuda.synchronize()
ts = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); a @ b; e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
ts.sort()
print(f"dense_bf16_8192_tflops_median {2 * 8192**3 / (ts[len(ts)//2] * 1e-3) / 1e12:.1f}")
PY
  cases=()
  for row in "${rows[@]}"; do
    IFS=, read -r name split num model dtype rest <<< "$row"
    [ -d "$work/case/$name" ] && cases+=("$work/case/$name")
  done
  python3 validation/gpu/torch_baselines.py "${cases[@]}" --repeats "$torch_repeats" > "$out/baselines.csv"
fi

if [ "$numerics" -eq 1 ]; then
  echo "== numerics against the emulator"
  echo "name,dtype,quant,tokens,rel_frobenius,max_abs,ref_rms,gpu_nonfinite" > "$out/numerics.csv"
  emulate_one() {
    local name="$1"
    [ -f "$work/gpu/$name/y.npy" ] || { echo "$name: no GPU output"; return; }
    "$tdmsim" emulate "$scendir/$name.yaml" --output "$work/emu/$name" -q \
      --max-memory 48 || { echo "$name: emulate failed"; return; }
    python3 validation/gpu/compare.py "$name" "$work/emu/$name/y.npy" "$work/gpu/$name/y.npy" \
      >> "$out/numerics.csv.part.$name"
    rm -rf "$work/emu/$name"
  }
  export -f emulate_one; export work tdmsim out scendir
  for row in "${rows[@]}"; do
    IFS=, read -r name split num rest <<< "$row"
    [ "$num" = 1 ] && echo "$name"
  done | xargs -P "$jobs" -I{} bash -c 'emulate_one {}'
  cat "$out"/numerics.csv.part.* >> "$out/numerics.csv" 2>/dev/null
  rm -f "$out"/numerics.csv.part.*
fi
rm -rf "$work"
echo "== done"
