#!/usr/bin/env python3
"""Simulated vs measured GEMM time on the H200 over the measured grid
(validation/data/h200/microbench/gemm_graph.csv) restricted to M, N, K in SIZES.
Error = simulated time / measured time - 1. The measured times are CUDA-graph
replays of back-to-back products (gemm_graph.csv), so each includes the GPU-side
gap between dependent kernels; the simulated time is the kernel time plus the
h200 machine's launch.kernel_launch, which is that gap, measured separately
(validation/data/h200/microbench/launch.csv).
Prints per-point rows (with --points) and a summary: MAPE and worst error per
dtype and per regime (bandwidth-bound vs compute-bound by the roofline).
Usage: validation/microbench/compare_gemm.py [--tdmsim build/apps/tdmsim/tdmsim] [--points]"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402

SIZES = [16, 256, 1024, 4096]
MEASURED = "validation/data/h200/microbench/gemm_graph.csv"
PEAK = {"bf16": 1071e12, "fp8_e4m3": 2141e12}  # h200.yaml at 1980 MHz
HBM = 4.8e12


def simulate(tdmsim, dtype, m, n, k):
    s = tdmsimtools.microbench(tdmsim, "gemm", "h200", ["--M", m, "--N", n, "--K", k, "--dtype", dtype])
    return s["kernel_time_us"] + s["launch_overhead_us"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tdmsim", default="build/apps/tdmsim/tdmsim")
    ap.add_argument("--points", action="store_true")
    args = ap.parse_args()
    rows = []
    for r in csv.DictReader(open(MEASURED)):
        m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
        if m in SIZES and n in SIZES and k in SIZES:
            elem = 2 if r["dtype"] == "bf16" else 1
            ai = 2.0 * m * n * k / ((m * k + n * k) * elem + m * n * 2)
            regime = "compute" if ai > PEAK[r["dtype"]] / HBM else "bandwidth"
            sim = simulate(args.tdmsim, r["dtype"], m, n, k)
            meas = float(r["median_us"])
            rows.append((r["dtype"], m, n, k, regime, meas, sim, sim / meas - 1))
    if args.points:
        print("| dtype | M | N | K | regime | measured us | simulated us | error |")
        print("|---|---|---|---|---|---|---|---|")
        for d, m, n, k, reg, meas, sim, e in rows:
            print(f"| {d} | {m} | {n} | {k} | {reg} | {meas:.2f} | {sim:.2f} | {100 * e:+.0f}% |")
        print()
    print("| dtype | regime | points | MAPE | median error | worst |")
    print("|---|---|---|---|---|---|")
    for d in ("bf16", "fp8_e4m3"):
        for reg in ("bandwidth", "compute", "all"):
            es = sorted(r[7] for r in rows if r[0] == d and (reg == "all" or r[4] == reg))
            if not es:
                continue
            mape = 100 * sum(abs(e) for e in es) / len(es)
            worst = max(es, key=abs)
            print(f"| {d} | {reg} | {len(es)} | {mape:.0f}% | {100 * es[len(es) // 2]:+.0f}% | {100 * worst:+.0f}% |")


if __name__ == "__main__":
    main()
