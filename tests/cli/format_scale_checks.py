#!/usr/bin/env python3
"""A layer's time does not hinge on how finely its scales are grouped.

Scales are a small fraction of a MoE layer's bytes (int4 weights: one fp32 per 32
weights is 25%; fp8: one per 128x128 block or per 32 of K at most 1/32 of a byte an
element) and AITER's kernels apply them inside the matrix instructions or the
epilogue. So, with AITER's kernels (`kernel.source: aiter`), the same DeepSeek-V3
layer in the same element formats but a different scale granularity runs within a
few percent: fp8 per-tensor, per-token, 1x128 blocks and MX 1x32; bf16 x int4
per-channel, group 32 and group 128. Checked at 1 token with the stage count fixed
(`kernel.stages` 1, the fused 1-stage kernel, and 2: AITER ships a 1-stage kernel
for some of these formats only, so the heuristic's own choice differs by format)
and at 128 tokens (2-stage) on mi300x and mi355x; every group's times within
TOLERANCE of each other. The 1-stage point pins the assembly kernel's tile
(subGU_n 256): AITER's per-token 1-stage kernels come in other widths than its
block-scale ones (plan::aiter_one_stage_kernels), so with the width left to the
plan the per-token layer runs another kernel, which is not what this checks. (A fused job once counted its scales as one weight block
of (2 cols + H) rows along (H + cols): group 32 came out 1.7x per-channel's time.)

    format_scale_checks.py TDMSIM WORKDIR
"""
import json
import os
import subprocess
import sys

TOLERANCE = 1.10
GROUPS = {
    "fp8 (OCP)": [("fp8_e4m3", "same", q) for q in ("per_tensor", "per_token", "block_128", "per_1x32")],
    "fp8 (FNUZ)": [("fp8_e4m3_fnuz", "same", q) for q in ("per_tensor", "per_token", "block_128")],
    "bf16 x int4": [("bf16", "int4", q) for q in ("per_token", "group_32", "group_128")],
}
MACHINES = ("mi300x", "mi355x")
# (tokens, kernel.stages or 0 for the heuristic's)
POINTS = ((1, 1), (1, 2), (128, 0))


def kernel_us(tdmsim, work, machine, dtype, weight, quant, tokens, stages):
    name = f"{machine}-{dtype}-{weight}-{quant}-{tokens}-s{stages}"
    scenario = os.path.join(work, name + ".yaml")
    with open(scenario, "w") as f:
        f.write(f"name: {name}\nmachine: {machine}\nmodel: deepseek-v3\ntokens: {tokens}\n"
                f"dtype: {dtype}\nweight_dtype: {weight}\nquant: {quant}\nseed: 1\npath: software\n"
                "routing:\n  router_stage: given\nkernel:\n  source: aiter\n"
                + (f"  stages: {stages}\n" if stages else "")
                # 128 bytes of activations a K step, as the plan's own 1-stage tile.
                + (f"  gate_up_tile: 256x32x256x{128 if dtype.startswith('fp8') else 64}\n" if stages == 1 else ""))
    out = os.path.join(work, name)
    r = subprocess.run([tdmsim, "run", scenario, "--quiet", "--force", "--output", out],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"{name}: exit {r.returncode}\n{r.stderr}")
    with open(os.path.join(out, "summary.json")) as f:
        path = json.load(f)["paths"][0]
    # The layer's kernels: what AITER's tuner times (no router, no sort).
    return sum(s["time_us"] for s in path["stages"] if s["stage"] not in ("routing", "sort"))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tdmsim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failed = []
    for machine in MACHINES:
        for group, formats in GROUPS.items():
            if machine == "mi355x" and "FNUZ" in group:
                continue  # MI355X runs OCP fp8 (FNUZ is widened to it: the same as OCP)
            for tokens, stages in POINTS:
                times = {q: kernel_us(tdmsim, work, machine, d, w, q, tokens, stages) for d, w, q in formats}
                spread = max(times.values()) / min(times.values())
                line = f"{machine} {group}, {tokens} tok, {stages or 'heuristic'} stage(s): " + ", ".join(
                    f"{q} {t:.1f} us" for q, t in times.items()) + f" (max/min {spread:.3f})"
                print(line)
                if spread > TOLERANCE:
                    failed.append(line)
    if failed:
        sys.exit("scale granularity moved a layer's time by more than "
                 f"{(TOLERANCE - 1) * 100:.0f}%:\n" + "\n".join(failed))


if __name__ == "__main__":
    main()
