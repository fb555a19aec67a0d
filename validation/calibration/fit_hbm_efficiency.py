#!/usr/bin/env python3
"""Fits the two HBM efficiency parameters of a machine (memory.hbm.refresh_time
and memory.hbm.turnaround) to measured streaming bandwidth, by grid search.

Calibration points are the measurements named in CALIBRATION below; the
held-out points (HELD_OUT) are only reported, never used by the fit.
Usage: validation/calibration/fit_hbm_efficiency.py [--tdmsim build/apps/tdmsim/tdmsim]
Prints a table and the best (refresh_time, turnaround); docs/calibration.md
records the result and this command."""
import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile

# H200 measurements, validation/data/h200/microbench/memory.csv (2026-11-29).
CALIBRATION = [("copy", "1GiB", 3910.1), ("read", "1GiB", 4242.0)]
HELD_OUT = [("copy", "4GiB", 3965.8), ("read", "4GiB", 3891.0), ("copy", "256MiB", 3719.2)]
REFRESH = ["350ns", "500ns", "600ns", "700ns", "800ns", "900ns"]
TURNAROUND = ["0ns", "5ns", "10ns", "20ns"]


def simulate(tdmsim, machine_file, kind, size):
    out = subprocess.run([tdmsim, "microbench", kind, "--machine", machine_file, "--bytes", size],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r": ([0-9.]+) GB/s", out).group(1))


def variant(base, refresh, turnaround, folder):
    path = os.path.join(folder, f"fit_{refresh}_{turnaround}.yaml")
    with open(path, "w") as f:
        f.write(f"kind: machine\nbase: {base}\nname: h200-fit\n"
                f"memory: {{hbm: {{refresh_time: {refresh}, turnaround: {turnaround}}}}}\n")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tdmsim", default="build/apps/tdmsim/tdmsim")
    ap.add_argument("--machine", default=os.path.abspath("workloads/machines/h200.yaml"))
    args = ap.parse_args()
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        for r, t in itertools.product(REFRESH, TURNAROUND):
            m = variant(args.machine, r, t, tmp)
            errs = [abs(simulate(args.tdmsim, m, k, s) / ref - 1) for k, s, ref in CALIBRATION]
            score = sum(e * e for e in errs)
            print(f"refresh {r:>6} turnaround {t:>5}: calibration errors "
                  + ", ".join(f"{100 * e:.1f}%" for e in errs), file=sys.stderr)
            if best is None or score < best[0]:
                best = (score, r, t)
        _, r, t = best
        m = variant(args.machine, r, t, tmp)
        print(f"best: refresh_time {r}, turnaround {t}")
        print("| point | measured GB/s | simulated GB/s | error | role |")
        print("|---|---|---|---|---|")
        for role, points in (("calibration", CALIBRATION), ("held out", HELD_OUT)):
            for k, s, ref in points:
                sim = simulate(args.tdmsim, m, k, s)
                print(f"| {k} {s} | {ref:.0f} | {sim:.0f} | {100 * (sim / ref - 1):+.1f}% | {role} |")


if __name__ == "__main__":
    main()
