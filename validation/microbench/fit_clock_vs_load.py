#!/usr/bin/env python3
"""Fits the H200 clock governor's activity weights (machine `power:` section,
docs/simulator.md "Clocks under load") on the measured clock against load
(validation/data/h200/microbench/clock_vs_load.csv).

The reference load (bf16 8192^3) gives power.sustained_clock (its median SM
clock) and power.reference_utilisation (its TFLOP/s over the bf16 peak at that
clock). For every other load the governor predicts

    f = min(1980 MHz, sustained x (reference_utilisation / A)^(1/3)),
    A = w x u_matrix + hbm_activity x u_hbm

with u_matrix its TFLOP/s over its dtype's peak at its measured clock, u_hbm
its GB/s over the 4.8 TB/s HBM peak, w 1 for bf16 and narrow_matrix_activity
for fp8. A grid over (narrow_matrix_activity 0.80-2.00, hbm_activity 0-1, steps
of 0.01) keeps the pair with the least sum of squared log clock errors over the
ten loaded rows (the idle rows run no kernel).

fit_clock_vs_load.py [CSV]"""
import csv
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSV = os.path.join(ROOT, "validation", "data", "h200", "microbench", "clock_vs_load.csv")
# workloads/machines/h200.yaml: 132 SMs, 4096 bf16 FLOP per clock per SM (fp8
# twice), 1980 MHz maximum SM clock, 4.8 TB/s HBM.
SMS, BF16_PER_CLK, PEAK_MHZ, HBM_BPS = 132, 4096, 1980.0, 4.8e12
REFERENCE = "bf16_gemm_8192"


def loads(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["kind"] == "idle":
                continue
            mhz = float(r["sm_mhz_median"])
            narrow = r["load"].startswith("fp8")
            peak = SMS * BF16_PER_CLK * (2 if narrow else 1) * mhz * 1e6
            rows.append({"load": r["load"], "mhz": mhz, "narrow": narrow,
                         "u_matrix": float(r["tflops"]) * 1e12 / peak,
                         "u_hbm": float(r["gbps"]) * 1e9 / HBM_BPS})
    return rows


def predict(row, sustained, ref, narrow, hbm):
    a = (narrow if row["narrow"] else 1.0) * row["u_matrix"] + hbm * row["u_hbm"]
    if a <= 0:
        return PEAK_MHZ
    return min(PEAK_MHZ, sustained * (ref / a) ** (1 / 3))


def main():
    rows = loads(sys.argv[1] if len(sys.argv) > 1 else CSV)
    ref_row = next(r for r in rows if r["load"] == REFERENCE)
    sustained, ref = ref_row["mhz"], ref_row["u_matrix"]
    best = None
    for i in range(80, 201):
        for j in range(0, 101):
            narrow, hbm = i / 100, j / 100
            err = sum(math.log(predict(r, sustained, ref, narrow, hbm) / r["mhz"]) ** 2 for r in rows)
            if best is None or err < best[0] - 1e-12:
                best = (err, narrow, hbm)
    err, narrow, hbm = best
    print(f"sustained_clock {sustained:g}MHz, reference_utilisation {ref:.3f} ({REFERENCE})")
    print(f"narrow_matrix_activity {narrow:.2f}, hbm_activity {hbm:.2f}: "
          f"rms log clock error {math.sqrt(err / len(rows)):.4f}")
    print(f"{'load':28} {'u_matrix':>8} {'u_hbm':>6} {'MHz':>6} {'model':>6} {'error':>7}")
    for r in rows:
        p = predict(r, sustained, ref, narrow, hbm)
        print(f"{r['load']:28} {r['u_matrix']:8.3f} {r['u_hbm']:6.3f} {r['mhz']:6.0f} {p:6.0f} "
              f"{100 * (p - r['mhz']) / r['mhz']:+6.1f}%")


if __name__ == "__main__":
    main()
