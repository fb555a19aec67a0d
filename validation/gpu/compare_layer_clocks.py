#!/usr/bin/env python3
"""The simulator's clock against the SM clock measured while the same layers ran
(validation/gpu/clock_during_layers.py): for each scenario of the measured file, runs
`tdmsim run` on it and reports the simulated clock of its stages, weighted by their time,
beside the measured sustained clock (median after the first second of a ~6 s back-to-back
run) and the clock the 30-repeat validation burst ran at (median of its samples drawing
over 150 W, i.e. while kernels ran; blank where the burst was too short to sample).

Usage: validation/gpu/compare_layer_clocks.py TDMSIM [--measured CSV] [--output CSV]"""
import argparse
import csv
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "validation", "data", "h200", "microbench")


def simulated_clock(tdmsim, scenario, work):
    out = os.path.join(work, os.path.basename(scenario))
    stages = tdmsimtools.run(tdmsim, scenario, out)["paths"][0]["stages"]
    total = sum(s["time_us"] for s in stages)
    return sum(s["time_us"] * s["clock_mhz"] for s in stages) / total, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tdmsim")
    ap.add_argument("--measured", default=os.path.join(DATA, "clock_during_layers.csv"))
    ap.add_argument("--output", default="-")
    a = ap.parse_args()
    samples_path = a.measured.replace(".csv", "_samples.csv")
    busy = {}
    with open(samples_path) as f:
        for r in csv.DictReader(f):
            if float(r["power_w"]) > 150:
                busy.setdefault(r["span"], []).append(float(r["sm_mhz"]))
    rows = list(csv.DictReader(open(a.measured)))
    names = sorted({r["scenario"] for r in rows}, key=lambda n: [r["scenario"] for r in rows].index(n))
    lines = ["scenario,simulated_mhz,simulated_us,measured_sustained_mhz,measured_burst_mhz,measured_validation_us"]
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            scen = os.path.join(ROOT, "validation", "gpu", "scenarios", name + ".yaml")
            mhz, us = simulated_clock(a.tdmsim, scen, work)
            sus = next(r for r in rows if r["scenario"] == name and r["mode"] == "sustained")
            val = next(r for r in rows if r["scenario"] == name and r["mode"] == "validation")
            burst = busy.get(f"{name}/validation", [])
            lines.append(f"{name},{mhz:.0f},{us:.1f},{sus['sm_mhz_median']},"
                         f"{statistics.median(burst):.0f}," if burst else
                         f"{name},{mhz:.0f},{us:.1f},{sus['sm_mhz_median']},,")
            lines[-1] += val["layer_us_median"]
    text = "\n".join(lines) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
