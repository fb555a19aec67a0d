#!/usr/bin/env python3
"""Fits compute.matrix_efficiency of the h200 machine to measured GEMM times.

Calibration points: compute-bound shapes with M = N = 8192 (bf16 and fp8) from
validation/data/h200/microbench/gemm_graph.csv. They are disjoint from the
held-out grid of validation/microbench/compare_gemm.py (M, N, K in
{16, 256, 1024, 4096}), which is only reported after the fit.
Usage: validation/calibration/fit_matrix_efficiency.py [--tdmsim build/apps/tdmsim/tdmsim]"""
import argparse
import csv
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402

MEASURED = "validation/data/h200/microbench/gemm_graph.csv"
CALIBRATION = [(d, 8192, 8192, k) for d in ("bf16", "fp8_e4m3") for k in (1024, 4096, 8192)]
CANDIDATES = [1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7]


def measured():
    out = {}
    for r in csv.DictReader(open(MEASURED)):
        out[(r["dtype"], int(r["M"]), int(r["N"]), int(r["K"]))] = float(r["median_us"])
    return out


def simulate(tdmsim, machine, dtype, m, n, k):
    return tdmsimtools.microbench(tdmsim, "gemm", machine,
                                  ["--M", m, "--N", n, "--K", k, "--dtype", dtype])["kernel_time_us"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tdmsim", default="build/apps/tdmsim/tdmsim")
    args = ap.parse_args()
    meas = measured()
    base = os.path.abspath("workloads/machines/h200.yaml")
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        for eff in CANDIDATES:
            path = os.path.join(tmp, f"eff_{eff}.yaml")
            with open(path, "w") as f:
                f.write(f"kind: machine\nbase: {base}\nname: h200-fit\ncompute: {{matrix_efficiency: {eff}}}\n")
            errs = [simulate(args.tdmsim, path, *p) / meas[p] - 1 for p in CALIBRATION]
            mape = sum(abs(e) for e in errs) / len(errs)
            print(f"matrix_efficiency {eff}: calibration MAPE {100 * mape:.1f}% "
                  + " ".join(f"{100 * e:+.0f}%" for e in errs), file=sys.stderr)
            if best is None or mape < best[0]:
                best = (mape, eff, errs)
    mape, eff, errs = best
    print(f"best: matrix_efficiency {eff} (calibration MAPE {100 * mape:.1f}%)")
    print("| dtype | M | N | K | measured us | error at best |")
    print("|---|---|---|---|---|---|")
    for p, e in zip(CALIBRATION, errs):
        print(f"| {p[0]} | {p[1]} | {p[2]} | {p[3]} | {meas[p]:.1f} | {100 * e:+.1f}% |")


if __name__ == "__main__":
    main()
