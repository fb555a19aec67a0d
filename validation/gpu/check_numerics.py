#!/usr/bin/env python3
"""Checks recorded GPU-vs-emulator numerics (issue 6 item 4) against the documented
per-dtype tolerances (docs/gpu-kernels.md "Numerics"): every numerics scenario of
validation/gpu/scenarios/index.csv has a row, no GPU value is non-finite, and each
relative Frobenius error is within its tolerance. Exit 1 on any failure.

check_numerics.py [NUMERICS_CSV]   (default: the newest validation/data/h200/moe/numerics-v*.csv)
"""
import csv
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Relative Frobenius error of y, GPU kernels against the emulator.
TOLERANCE = {("bf16", "none"): 1e-2, ("fp8_e4m3", "per_token"): 1e-2,
             ("fp8_e4m3", "block_128"): 1e-2}
MIN_SCENARIOS = 30  # issue 6 item 4


def newest_numerics():
    found = sorted(glob.glob(os.path.join(ROOT, "validation/data/h200/moe/numerics-v*.csv")),
                   key=lambda p: int(p.rsplit("-v", 1)[1].split(".")[0]))
    return found[-1] if found else None


def check(path):
    """Checks a numerics CSV. Returns (wanted, worst, bad): the numerics scenario
    names of index.csv, {(dtype, quant): (worst relative error, scenario, count)}
    and the list of failures."""
    rows = {r["name"]: r for r in csv.DictReader(open(path))}
    index = list(csv.DictReader(open(os.path.join(ROOT, "validation/gpu/scenarios/index.csv"))))
    wanted = [r["name"] for r in index if r["numerics"] == "1"]
    bad = []
    worst = {}
    for name in wanted:
        r = rows.get(name)
        if r is None:
            bad.append(f"{name}: no recorded row")
            continue
        key = (r["dtype"], r["quant"])
        rel = float(r["rel_frobenius"])
        w = worst.get(key, (0.0, None, 0))
        worst[key] = (rel, name, w[2] + 1) if rel >= w[0] else (w[0], w[1], w[2] + 1)
        if int(r["gpu_nonfinite"]) != 0:
            bad.append(f"{name}: {r['gpu_nonfinite']} non-finite GPU values")
        if key not in TOLERANCE:
            bad.append(f"{name}: no tolerance for {key}")
        elif not rel <= TOLERANCE[key]:
            bad.append(f"{name}: relative error {rel:.3e} > {TOLERANCE[key]:.0e} ({key[0]} {key[1]})")
    if len(wanted) < MIN_SCENARIOS:
        bad.append(f"only {len(wanted)} numerics scenarios (issue 6 asks for at least {MIN_SCENARIOS})")
    return wanted, worst, bad


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else newest_numerics()
    if not path or not os.path.isfile(path):
        print(f"{path or 'validation/data/h200/moe/numerics-v*.csv'}: not found", file=sys.stderr)
        return 1
    wanted, worst, bad = check(path)
    print(f"{os.path.relpath(path, ROOT)}: {len(wanted)} numerics scenarios")
    for key, w in sorted(worst.items()):
        print(f"  {key[0]:9s} {key[1]:10s} worst {w[0]:.2e} (tolerance {TOLERANCE.get(key, float('nan')):.0e})")
    for b in bad:
        print("FAIL", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
