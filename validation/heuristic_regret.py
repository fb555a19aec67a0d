#!/usr/bin/env python3
"""The kernel heuristic's block_m against every fixed block_m, in the timing model.

For each layer of a grid (machines x models x formats x token counts x kernel
sources), the layer is simulated with the heuristic's choice and with every
block_m from the machine's smallest (kernels.min_block_m: 32 on the AMD files, 16
on h200) up to 128 fixed in the scenario. The regret is the heuristic's time over
the fastest fixed one. Prints a Markdown summary (geometric mean, worst, layers
more than 5% and 10% off) and the layers more than 5% off; --csv keeps every row.
Every figure is a prediction of the timing model, not a measurement
(validation/data/h200/moe/blockm-2026-12-05 measures nine pairs on the H200).

    validation/heuristic_regret.py TDMSIM [--machines mi300x,mi355x] [--models M,...]
        [--formats F,...] [--tokens 16,128,1024,4096] [--sources tdmsim,aiter]
        [--jobs N] [--csv FILE]

Exit 0, 2 on bad usage or when a layer does not simulate.
"""
import argparse
import csv
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

# name: (activation dtype, weight dtype, quant)
FORMATS = {
    "bf16": ("bf16", "bf16", "none"),
    "fp8-per-token": ("fp8_e4m3", "fp8_e4m3", "per_token"),
    "fp8-block": ("fp8_e4m3", "fp8_e4m3", "block_128"),
    "mxfp8": ("fp8_e4m3", "fp8_e4m3", "per_1x32"),
    "mxfp4": ("mxfp4", "mxfp4", "per_1x32"),
    "a16w4": ("bf16", "mxfp4", "per_1x32"),
    "a8w4": ("fp8_e4m3", "mxfp4", "per_1x32"),
    "bf16-int4": ("bf16", "int4", "group_128"),
}
SMALLEST_M = {"h200": 16}  # kernels.min_block_m of the shipped files; 32 elsewhere


class DoesNotFit(RuntimeError):
    """A fixed block_m whose kernel does not fit on a CU (tdmsim's exit 2 saying so)."""


def simulate(tdmsim, work, machine, model, tokens, fmt, source, block_m):
    """(total_us, block_m) of one layer; block_m None: the heuristic's."""
    dtype, weight, quant = FORMATS[fmt]
    name = f"{machine}-{model}-{tokens}-{fmt}-{source}-{block_m or 'auto'}"
    scenario = os.path.join(work, name + ".yaml")
    with open(scenario, "w") as f:
        f.write(f"name: {name}\nmachine: {machine}\nmodel: {model}\ntokens: {tokens}\n"
                f"dtype: {dtype}\nweight_dtype: {weight}\nquant: {quant}\nseed: 1\npath: software\n"
                f"routing:\n  router_stage: given\nkernel:\n  source: {source}\n"
                + (f"  block_m: {block_m}\n" if block_m else ""))
    out = os.path.join(work, name)
    r = subprocess.run([tdmsim, "run", scenario, "--quiet", "--force", "--output", out],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 2 and "does not fit on a CU" in r.stderr:
        raise DoesNotFit(f"{name}: {r.stderr.strip()}")
    if r.returncode != 0:
        raise RuntimeError(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return s["paths"][0]["total_us"], s["layer"]["block_m"]


def regret(tdmsim, work, machine, model, tokens, fmt, source):
    """One layer: the heuristic's M and time, every fixed M's time (an M whose kernel
    does not fit on a CU, e.g. our fused kernel at M 128 in MI300X's LDS, is left out),
    the best M."""
    chosen_us, chosen_m = simulate(tdmsim, work, machine, model, tokens, fmt, source, None)
    fixed = {}
    for m in (16, 32, 64, 128):
        if m < SMALLEST_M.get(machine, 32):
            continue
        try:
            fixed[m] = simulate(tdmsim, work, machine, model, tokens, fmt, source, m)[0]
        except DoesNotFit:
            pass
    best = min(fixed, key=fixed.get)
    return dict(machine=machine, model=model, tokens=tokens, format=fmt, source=source, chosen_m=chosen_m,
                chosen_us=chosen_us, best_m=best, best_us=fixed[best], regret=chosen_us / fixed[best],
                fixed=fixed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tdmsim")
    ap.add_argument("--machines", default="mi300x,mi355x")
    ap.add_argument("--models", default="deepseek-v3,qwen3-30b-a3b")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--tokens", default="16,128,1024,4096")
    ap.add_argument("--sources", default="tdmsim,aiter")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--csv")
    a = ap.parse_args()
    formats = a.formats.split(",")
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        print(f"heuristic_regret.py: --formats: unknown {', '.join(unknown)} (known: {', '.join(FORMATS)})",
              file=sys.stderr)
        return 2
    try:
        tokens = [int(t) for t in a.tokens.split(",")]
    except ValueError:
        print(f"heuristic_regret.py: --tokens: not a list of integers: {a.tokens}", file=sys.stderr)
        return 2
    grid = [g for g in itertools.product(a.machines.split(","), a.models.split(","), tokens, formats,
                                         a.sources.split(","))
            if not (g[0] == "h200" and g[4] == "aiter")]  # AITER's kernels do not run on the H200
    t0 = time.time()
    rows = []
    with tempfile.TemporaryDirectory() as work, ThreadPoolExecutor(max(1, a.jobs)) as pool:
        futures = [pool.submit(regret, a.tdmsim, work, *g) for g in grid]
        for n, f in enumerate(futures, 1):
            try:
                rows.append(f.result())
            except RuntimeError as e:
                print(f"heuristic_regret.py: {e}", file=sys.stderr)
                return 2
            print(f"\rheuristic_regret.py: {n}/{len(grid)} layers, {time.time() - t0:.0f} s", end="",
                  file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["machine", "model", "tokens", "format", "source", "chosen_m", "chosen_us", "best_m",
                        "best_us", "regret"])
            for r in rows:
                w.writerow([r[k] for k in ("machine", "model", "tokens", "format", "source", "chosen_m")] +
                           [f"{r['chosen_us']:.1f}", r["best_m"], f"{r['best_us']:.1f}", f"{r['regret']:.3f}"])
    v = [r["regret"] for r in rows]
    geo = math.exp(sum(math.log(x) for x in v) / len(v))
    worst = max(rows, key=lambda r: r["regret"])
    print(f"{len(rows)} layers ({a.machines}; {a.models}; {a.tokens} tokens; {a.sources}), "
          f"{time.time() - t0:.0f} s with --jobs {a.jobs}.\n")
    print("| geometric-mean regret | worst | more than 5% off | more than 10% off |")
    print("|---|---|---|---|")
    print(f"| {geo:.3f} | {worst['regret']:.2f}x ({worst['machine']} {worst['model']} {worst['format']} "
          f"{worst['tokens']} tokens, {worst['source']}) | {sum(x > 1.05 for x in v)} | {sum(x > 1.10 for x in v)} |")
    off = sorted((r for r in rows if r["regret"] > 1.05), key=lambda r: -r["regret"])
    if off:
        print("\n| machine | model | format | tokens | kernels | picked M | best M | regret |")
        print("|---|---|---|---|---|---|---|---|")
        for r in off:
            print(f"| {r['machine']} | {r['model']} | {r['format']} | {r['tokens']} | {r['source']} | "
                  f"{r['chosen_m']} | {r['best_m']} | {r['regret']:.3f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
