#!/usr/bin/env python3
"""The timing model's 1-stage against 2-stage time where AITER's rule chooses between them.

AITER's fused_moe.py (000621842c, the version tdmsim follows) runs a layer in one kernel
or two by a fixed rule per format and GPU (`fused_moe_1stage_dict` and the token
thresholds in `get_2stage_cfgs`; docs/moe-plan.md "AITER's heuristics"). The rule is
AITER's developers' own reading of their kernels' speed: where it says 1-stage, AITER's
assembly fused kernel is the faster one on their GPUs, or close. Nothing here is a
measurement: for each layer of a grid (machines x models x tensor-parallel shards x
formats x token counts, `kernel.source: aiter` with `kernel.heuristic: aiter`), the layer
is simulated twice: as the rule chooses, and with the other stage count forced in
`kernel.stages` (block_m and split-K then AITER's for that count, as `get_2stage_cfgs`
takes them once run_1stage is known; tiles and the block-major grid as for any
`kernel.source: aiter` layer). Times are the kernels' own (gate/up with its split-K
reduction and the intermediate's quantisation, or the fused kernel; down with its
combine), without the sort and the launch overhead, as AITER's tuner times us1 + us2
(validation/calibration/aiter_mi355x.py sums the same stages). A layer
*disagrees* where the stage count the rule picks is more than --tolerance slower in the
model than the other one: there the model ranks AITER's kernels otherwise than AITER
does, and a published row of that kind is a risk.

Only formats with a 1-stage kernel in AITER's dictionary for the machine's GPU are in the
grid (otherwise the rule has nothing to choose), so the default grid is MI300X (gfx942:
fp8 per-token, fp8 block-scale, INT8 per-token) and MI355X (gfx950: fp8 block-scale,
MXFP4 with SiLU).

    validation/stage_choice.py TDMSIM [--machines mi300x,mi355x] [--models M,...]
        [--tp 1,8] [--formats F,...] [--tokens 32,128,512,2048] [--tolerance 0.10]
        [--jobs N] [--csv FILE] [--markdown FILE]

Exit 0; 2 on bad usage or when a layer does not simulate.
"""
import argparse
import csv
import itertools
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tdmsimtools import report as treport  # noqa: E402
from tdmsimtools import runner  # noqa: E402

# name: (activation dtype, weight dtype, quant) per machine: AITER's fp8 is FNUZ on gfx942
# and OCP on gfx950 (a scenario of either flavour matches its dictionary).
FORMATS = {
    "fp8-per-token": {"mi300x": ("fp8_e4m3_fnuz", "fp8_e4m3_fnuz", "per_token")},
    "fp8-block": {"mi300x": ("fp8_e4m3_fnuz", "fp8_e4m3_fnuz", "block_128"),
                  "mi355x": ("fp8_e4m3", "fp8_e4m3", "block_128")},
    "int8-per-token": {"mi300x": ("int8", "int8", "per_token")},
    "mxfp4": {"mi355x": ("mxfp4", "mxfp4", "per_1x32")},
}
MODELS = "mixtral-8x7b,mixtral-8x22b,llama4-maverick,deepseek-v3,qwen3-235b-a22b,qwen3-30b-a3b"


# The stages AITER's tuner times (us1 + us2): everything but the sort.
TIMED_STAGES = ("gate_up", "reduce", "quant_inter", "fused", "down", "combine")


def simulate(tdmsim, work, machine, model, tp, tokens, fmt, stages):
    """(kernel time in us without sort and launch, stages run, block_m, kernel line) of one
    layer; stages None: the rule's. RuntimeError where it does not simulate."""
    dtype, weight, quant = FORMATS[fmt][machine]
    name = f"{machine}-{model}-tp{tp}-{tokens}-{fmt}-{stages or 'rule'}"
    scenario = runner.write_text(
        os.path.join(work, name + ".yaml"),
        f"name: {name}\nmachine: {machine}\nmodel: {model}\ntokens: {tokens}\n"
        f"dtype: {dtype}\nweight_dtype: {weight}\nquant: {quant}\nseed: 1\npath: software\n"
        f"parallel:\n  tp: {tp}\n"
        f"routing:\n  source: uniform\n  router_stage: given\n"
        f"kernel:\n  source: aiter\n  heuristic: aiter\n" + (f"  stages: {stages}\n" if stages else ""))
    try:
        s = runner.run(tdmsim, scenario, os.path.join(work, name), label=name)  # (RunError: a RuntimeError)
        us = sum(t for st, t in runner.stage_times(s, kernel_only=True).items() if st in TIMED_STAGES)
        return us, s["layer"]["stages"], s["layer"]["block_m"], s["layer"]["kernel_reason"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError) as e:
        raise RuntimeError(f"{name}: {type(e).__name__}: {e}") from None


def layer(tdmsim, work, machine, model, tp, tokens, fmt):
    """One layer: the rule's stage count, and both stage counts' times and block_m."""
    us, rule, block_m, reason = simulate(tdmsim, work, machine, model, tp, tokens, fmt, None)
    other = simulate(tdmsim, work, machine, model, tp, tokens, fmt, 3 - rule)
    if other[1] != 3 - rule:  # (a kernel.stages not taken would compare a count with itself)
        raise RuntimeError(f"{machine}-{model}-tp{tp}-{tokens}-{fmt}: kernel.stages {3 - rule} ran {other[1]} stages")
    ran = {rule: (us, block_m), 3 - rule: other[0::2]}
    return dict(machine=machine, model=model, tp=tp, tokens=tokens, format=fmt, rule=rule,
                us1=ran[1][0], us2=ran[2][0], m1=ran[1][1], m2=ran[2][1], ratio=us / other[0],
                why=reason.split(";")[0])


class Usage(ValueError):
    """Bad usage: exit 2 with this message."""


def parse_list(text, what, cast=str):
    try:
        return [cast(x) for x in text.split(",") if x]
    except ValueError:
        raise Usage(f"{what}: not a list of integers: {text}") from None


def markdown(rows, args, seconds):
    tol = args.tolerance
    out = [f"{len(rows)} layers ({args.machines}; {args.models}; tp {args.tp}; {args.tokens} tokens), "
           f"{seconds:.0f} s with --jobs {args.jobs}. Ratio: the time of the stage count AITER's rule "
           f"picks over the other one's, in the model (> 1: the model has the other one faster).\n"]
    out.append("| machine | format | layers | rule picks 1-stage | of those, the model has 2-stage "
               f"faster by > {tol:.0%} | rule picks 2-stage | of those, the model has 1-stage faster by > "
               f"{tol:.0%} | worst ratio |")
    out.append("|---|---|---|---|---|---|---|---|")
    for (machine, fmt), group in itertools.groupby(sorted(rows, key=lambda r: (r["machine"], r["format"])),
                                                   key=lambda r: (r["machine"], r["format"])):
        g = list(group)
        ones = [r for r in g if r["rule"] == 1]
        twos = [r for r in g if r["rule"] == 2]
        worst = max(g, key=lambda r: r["ratio"])
        out.append(f"| {machine} | {fmt} | {len(g)} | {len(ones)} | {sum(r['ratio'] > 1 + tol for r in ones)} | "
                   f"{len(twos)} | {sum(r['ratio'] > 1 + tol for r in twos)} | {worst['ratio']:.2f} "
                   f"({worst['model']} tp{worst['tp']}, {worst['tokens']} tokens) |")
    off = sorted((r for r in rows if r["ratio"] > 1 + tol), key=lambda r: -r["ratio"])
    if off:
        out.append(f"\nLayers where the model disagrees (ratio > {1 + tol:.2f}):\n")
        out.append("| machine | format | model | tp | tokens | rule | 1-stage us (block_m) | 2-stage us (block_m) "
                   "| ratio |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for r in off:
            out.append(f"| {r['machine']} | {r['format']} | {r['model']} | {r['tp']} | {r['tokens']} | "
                       f"{r['rule']}-stage | {r['us1']:.1f} ({r['m1']}) | {r['us2']:.1f} ({r['m2']}) | "
                       f"{r['ratio']:.2f} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tdmsim")
    ap.add_argument("--machines", default="mi300x,mi355x")
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--tp", default="1,8", help="tensor-parallel shards (parallel.tp)")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--tokens", default="32,128,512,2048")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--csv")
    ap.add_argument("--markdown", help="write the report here instead of stdout")
    a = ap.parse_args()
    try:
        return run(a)
    except Usage as e:
        print(f"stage_choice.py: {e}", file=sys.stderr)
        return 2


def run(a):
    formats = parse_list(a.formats, "--formats")
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        print(f"stage_choice.py: --formats: unknown {', '.join(unknown)} (known: {', '.join(FORMATS)})",
              file=sys.stderr)
        return 2
    tokens = parse_list(a.tokens, "--tokens", int)
    tps = parse_list(a.tp, "--tp", int)
    machines = parse_list(a.machines, "--machines")
    known = sorted({m for per in FORMATS.values() for m in per})
    unknown = [m for m in machines if m not in known]
    if unknown:
        raise Usage(f"--machines: {', '.join(unknown)}: no format here has a 1-stage kernel of AITER's on it "
                    f"(machines: {', '.join(known)})")
    if not (0 <= a.tolerance < 10):
        print(f"stage_choice.py: --tolerance: {a.tolerance} is not in [0, 10)", file=sys.stderr)
        return 2
    # (each layer once, whatever the lists repeat: its files are named after it)
    grid = list(dict.fromkeys(
        (m, model, tp, t, f) for m, model, tp, t, f in
        itertools.product(machines, parse_list(a.models, "--models"), tps, tokens, formats)
        if m in FORMATS[f]))  # only formats with a 1-stage kernel on the machine's GPU
    if not grid:
        print("stage_choice.py: no layer: none of --formats has a 1-stage kernel on --machines "
              f"({', '.join(f'{f}: {sorted(FORMATS[f])}' for f in formats)})", file=sys.stderr)
        return 2
    t0 = time.time()
    with tempfile.TemporaryDirectory() as work:
        try:
            rows = treport.parallel(lambda g: layer(a.tdmsim, work, *g), grid, a.jobs, "stage_choice.py",
                                    noun="layers", t0=t0)
        except RuntimeError as e:
            print(f"stage_choice.py: {e}", file=sys.stderr)
            return 2
    # (in the grid's order, whatever order they finished in: the report is the same at any --jobs)
    order = {g: i for i, g in enumerate(grid)}
    rows.sort(key=lambda r: order[(r["machine"], r["model"], r["tp"], r["tokens"], r["format"])])
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["machine", "model", "tp", "tokens", "format", "rule_stages", "us_1stage", "us_2stage",
                        "block_m_1stage", "block_m_2stage", "ratio", "rule"])
            for r in rows:
                w.writerow([r["machine"], r["model"], r["tp"], r["tokens"], r["format"], r["rule"],
                            f"{r['us1']:.1f}", f"{r['us2']:.1f}", r["m1"], r["m2"], f"{r['ratio']:.3f}", r["why"]])
    text = markdown(rows, a, time.time() - t0)
    if a.markdown:
        text = treport.generated_header(treport.script_command("validation/stage_choice.py")) + text
    treport.emit(text, a.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
