#!/usr/bin/env python3
"""Does the down kernel's combine overlap its matrix work? A two-term reading of the
published prefill stage-2 times, no simulator involved.

Each 2-stage row of at least --min-tokens tokens gives its stage-2 time (us2), the bytes
its combine adds (every routed row's H-wide bf16 output: tokens x topk x H x 2) and its
down GEMM's FLOPs (tokens x topk x 2 x I x H) over its slower operand's matrix peak. Two
readings are fitted by grid search on the mean absolute percentage error:

    added:   us2 = combine bytes / R + FLOPs / (e x peak)
    larger:  us2 = max(combine bytes / R, FLOPs / (e x peak))

If the atomic adds ran beside the matrix work (the larger), rows of the same combine
bytes would take the same time until the matrix work outgrows it; if they do not
overlap (added), the time grows with the intermediate size at any combine size.
docs/moe-timing.md ("AITER's 1-stage kernels and the combine (MI-series)", its item on how the atomic units are shared) reads the result.

    validation/calibration/combine_overlap.py [--min-tokens 4096] [--markdown FILE]
        [FILE.csv ...]

Default files: the two calibration tables in ../shared/calibration. Exit 2, naming the
file and line, on a file that cannot be read, lacks a column or holds a bad value.
"""
import argparse
import csv
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_FILES = [os.path.join(ROOT, "..", "shared", "calibration", name)
                 for name in ("mi300x_fused_moe_qwen3_235b_bf16.csv", "mi355x_fused_moe_aiter_tuned.csv")]

# Dense matrix peaks (FLOP/s) by cu_num and dtype: the rates of the isa tables at the
# machine files' peak clocks (MI300X 304 CUs at 2.1 GHz; MI355X 256 CUs at 2.4 GHz), as
# docs/calibration.md gives them. A row runs at its slower operand's rate (fp8 x fp4 at
# the fp8 rate); a row with an operand dtype not here is left out.
PEAK = {
    304: {"bfloat16": 1307.4e12, "float8_e4m3fnuz": 2614.9e12, "float8_e4m3fn": 2614.9e12},
    256: {"bfloat16": 2516.6e12, "float8_e4m3fn": 5033.2e12, "float4_e2m1fn_x2": 10066.3e12},
}
NAMES = {304: "MI300X", 256: "MI355X"}
REQUIRED = ("cu_num", "token", "model_dim", "inter_dim", "topk", "q_dtype_a", "q_dtype_w", "q_type", "us2",
            "run_1stage")


class InputError(ValueError):
    pass


def rows_of(path, min_tokens):
    """Per 2-stage row of at least min_tokens with known peaks and a stage-2 time: its
    machine, file:line, shape, combine MB, matrix us at the full peak and published us2
    (matrix_us, mb, us2, ...). The fp8 block-scale
    rows are left out (their CK down kernel's cost is not a combine bound:
    docs/calibration.md)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = [h.strip() for h in reader.fieldnames or []]
            reader.fieldnames = header
            missing = [c for c in REQUIRED if c not in header]
            if missing:
                raise InputError(f"{path}:1: missing column(s) {', '.join(missing)}")
            rows = [(reader.line_num, r) for r in reader]  # (the file's line: blank lines skipped)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    out, seen = [], set()
    for line, r in rows:
        try:
            cu, tokens = int(r["cu_num"]), int(r["token"])
            h, i, topk = int(r["model_dim"]), int(r["inter_dim"]), int(r["topk"])
            us2 = float(r["us2"])
            dtypes = [r[c].strip().replace("torch.", "") for c in ("q_dtype_a", "q_dtype_w")]
            one_stage, q_type = r["run_1stage"].strip() == "1", r["q_type"]
        except (ValueError, TypeError, AttributeError) as e:  # (a short row's missing cells are None)
            raise InputError(f"{path}:{line}: {type(e).__name__}: {e}") from None
        if not math.isfinite(us2) or min(tokens, h, i, topk) < 1:
            raise InputError(f"{path}:{line}: us2 {r['us2']!r}, or a size below 1")
        peaks = [PEAK.get(cu, {}).get(d) for d in dtypes]
        if None in peaks or tokens < min_tokens or one_stage or us2 <= 0 or "per_1x128" in q_type:
            continue
        # A time published twice for one shape (the calibration table has tables whose rows
        # repeat another's us2 value for value) is counted once.
        key = (cu, tokens, h, i, us2)
        if key in seen:
            continue
        seen.add(key)
        out.append(dict(machine=NAMES[cu], line=f"{os.path.basename(path)}:{line}", tokens=tokens, h=h, i=i,
                        topk=topk, mb=tokens * topk * h * 2 / 1e6,
                        matrix_us=tokens * topk * 2.0 * i * h / min(peaks) * 1e6, us2=us2))
    return out


RATES = [x / 100 for x in range(20, 801, 5)]      # TB/s
EFFICIENCIES = [x / 100 for x in range(5, 101)]  # of the peak


def fit(rows, reading):
    def predict(r, rate, eff):
        a, b = r["mb"] / rate, r["matrix_us"] / eff  # MB / (TB/s) = us
        return a + b if reading == "added" else max(a, b)
    best = None
    for rate in RATES:
        for eff in EFFICIENCIES:
            err = sum(abs(predict(r, rate, eff) / r["us2"] - 1) for r in rows) / len(rows)
            if best is None or err < best[0]:
                best = (err, rate, eff)
    err, rate, eff = best
    worst = max(rows, key=lambda r: abs(predict(r, rate, eff) / r["us2"] - 1))
    return dict(mape=err, rate=rate, eff=eff, worst=predict(worst, rate, eff) / worst["us2"] - 1,
                worst_line=worst["line"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="*", default=DEFAULT_FILES)
    ap.add_argument("--min-tokens", type=int, default=4096)
    ap.add_argument("--markdown", help="write the table here instead of stdout")
    a = ap.parse_args()
    try:
        rows = [r for path in a.csv for r in rows_of(path, a.min_tokens)]
    except InputError as e:
        print(f"combine_overlap.py: {e}", file=sys.stderr)
        return 2
    lines = ["Generated by the command below; do not edit by hand.", "",
             "    validation/calibration/combine_overlap.py " + " ".join(sys.argv[1:]), "",
             f"Run {time.strftime('%Y-%m-%d')}. Published 2-stage rows of at least {a.min_tokens} tokens "
             "(fp8 block-scale rows aside; a stage-2 time repeated for the same tokens, H and I counted once); "
             "combine at one rate R, the down GEMM at one fraction e of its slower operand's dense peak; "
             "grid R 0.2-8 TB/s by 0.05, e 0.05-1 by 0.01.", "",
             "| machine | rows | reading | MAPE of us2 | R (TB/s) | e | worst |", "|---|---|---|---|---|---|---|"]
    for machine in sorted({r["machine"] for r in rows}):
        sel = [r for r in rows if r["machine"] == machine]
        for reading in ("added", "larger"):
            f = fit(sel, reading)
            lines.append(f"| {machine} | {len(sel)} | {reading} | {100 * f['mape']:.1f}% | {f['rate']:.2f} | "
                         f"{f['eff']:.2f} | {100 * f['worst']:+.0f}% ({f['worst_line']}) |")
    if not rows:
        lines.append("| (no rows) | 0 | | | | | |")
    text = "\n".join(lines) + "\n"
    if a.markdown:
        tmp = a.markdown + ".tmp." + str(os.getpid())
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.markdown)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
