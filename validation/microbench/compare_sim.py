#!/usr/bin/env python3
"""Runs the simulator's microbenchmarks and compares them with the reference
measurements recorded in docs/calibration.md (our H200 measurements under
validation/data/h200/microbench/, published MI300X figures in
docs/published-measurements.md). Prints a Markdown table.
Usage: validation/microbench/compare_sim.py [--tdmsim build/apps/tdmsim/tdmsim]"""
import argparse
import datetime
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402

# (machine, kind, extra args, reference value, unit, source, role)
POINTS = [
    ("h200", "copy", ["--bytes", "4GiB"], 3965.8, "GB/s", "measured, memory.csv", "held out"),
    ("h200", "copy", ["--bytes", "1GiB"], 3910.1, "GB/s", "measured, memory.csv", "calibration"),
    ("h200", "copy", ["--bytes", "256MiB"], 3719.2, "GB/s", "measured, memory.csv", "held out"),
    ("h200", "read", ["--bytes", "4GiB"], 3891.0, "GB/s", "measured, memory.csv", "held out"),
    ("h200", "read", ["--bytes", "1GiB"], 4242.0, "GB/s", "measured, memory.csv", "calibration"),
    ("h200", "chase", ["--footprint", "16MiB", "--hops", "200000"], 145.4, "ns", "measured, chase.csv", "calibration (L2 hit latency)"),
    ("h200", "chase", ["--footprint", "2GiB", "--hops", "200000"], 340.4, "ns", "measured, chase.csv", "calibration (HBM latency)"),
    ("h200", "gemm", ["--M", "8192", "--N", "8192", "--K", "8192"], 725.1, "TFLOP/s", "measured, gemm.csv", "held out"),
    ("h200", "gemm", ["--M", "8192", "--N", "8192", "--K", "8192", "--dtype", "fp8_e4m3"], 1367.0, "TFLOP/s", "measured, gemm.csv", "held out"),
    ("h200", "gemm", ["--M", "16", "--N", "16384", "--K", "16384"], 60.3, "TFLOP/s", "measured, gemm.csv", "held out"),
    ("h200", "gemm", ["--M", "1024", "--N", "1024", "--K", "1024"], None, "TFLOP/s", "see gemm.csv", "held out"),
    ("mi300x", "read", ["--bytes", "1GiB"], 4140.0, "GB/s", "published, SC25 artifact (gpu-stream read)", "calibration (HBM efficiency)"),
    ("mi300x", "copy", ["--bytes", "1GiB"], 4110.0, "GB/s", "published, BabelStream Copy (Azure ND MI300X v5)", "calibration (HBM efficiency)"),
    ("mi300x", "copy", ["--bytes", "1GiB"], 4260.0, "GB/s", "published, BabelStream Copy (AMD acceptance docs)", "held out"),
    ("mi300x", "copy", ["--bytes", "1GiB"], 3970.0, "GB/s", "published, SC25 artifact (gpu-stream scale)", "held out"),
    ("mi300x", "chase", ["--footprint", "1MiB", "--hops", "100000"], 101.0, "ns", "published, SC25 artifact", "calibration (L2 hit)"),
    ("mi300x", "chase", ["--footprint", "32MiB", "--hops", "300000"], 218.0, "ns", "published, SC25 artifact", "calibration (MALL hit)"),
    ("mi300x", "chase", ["--footprint", "2GiB", "--hops", "100000"], 415.0, "ns", "published, SC25 artifact", "calibration (HBM)"),
    ("mi300x", "gemm", ["--M", "8192", "--N", "8192", "--K", "8192"], 708.0, "TFLOP/s", "published, ROCm blog (max achievable)", "calibration (power.*: its clock and utilisation)"),
    ("mi355x", "copy", ["--bytes", "1GiB"], None, "GB/s", "no published measurement", "-"),
]


def run(tdmsim, machine, kind, extra):
    s = tdmsimtools.microbench(tdmsim, kind, machine, extra)
    metric = next(k for k in ("bandwidth", "throughput", "latency") if k in s)
    return s[metric]["value"], s["bound"]["value"], s["simulation_wall_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tdmsim", default="build/apps/tdmsim/tdmsim")
    args = ap.parse_args()
    print(f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.node()} "
          f"({os.cpu_count()} CPUs), Release build: `validation/microbench/compare_sim.py`.")
    print()
    print("| machine | benchmark | simulated | reference | error | bound | source | role | sim wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for machine, kind, extra, ref, unit, source, role in POINTS:
        value, bound, wall = run(args.tdmsim, machine, kind, extra)
        err = f"{100 * (value / ref - 1):+.1f}%" if ref else "-"
        refs = f"{ref:g} {unit}" if ref else "-"
        print(f"| {machine} | {kind} {' '.join(extra)} | {value:.1f} {unit} | {refs} | {err} | "
              f"{bound:.0f} | {source} | {role} | {wall:.2f} |", flush=True)


if __name__ == "__main__":
    main()
