#!/usr/bin/env python3
"""Measured H200 layer times (tdmsim-gpu runs.jsonl) against the simulator's
prediction on the `h200` machine, per scenario, with error statistics per split
(calibration / held-out, fixed in validation/gpu/scenarios/index.csv).

compare_timing.py TDMSIM [--runs validation/data/h200/moe/timing-vN.jsonl (newest)]
                  [--filter REGEX] [--max-tokens N] [--csv OUT.csv] [--jobs N]
                  [--check GUARD.json]

--check re-predicts every scenario of the guard's runs file and exits 1 when the
held-out half is less accurate than the guard records (MAPE, worst error,
Spearman), so that a model change that loses accuracy fails CI without a GPU,
or when any scenario's measured kernel configuration (block_m, tiles, stages,
split-K, pipeline depth, raster group) differs from the one the heuristic picks
now: such a prediction is of another kernel than the one measured. It
also prints whether the issue's bounds (MAPE <= 10%, Spearman >= 0.95, none off
by more than 30%) hold.

The measured time compared is the layer as the simulator models it: the kernels of
h200_data.COMPARED_KERNELS (all the runner times: y zeroing, sort, gate/up, split-K
reduce, fp8 intermediate quantisation, down, or the 1-stage kernel). Prints one row per scenario and, per split: MAPE, the largest error,
Spearman rank correlation. validation/report.py writes the same comparison, with
plots, into docs/validation.md.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h200_data  # noqa: E402  (COMPARED_KERNELS, the data files, spearman, predict)

ISSUE_BOUNDS = dict(mape=0.10, spearman=0.95, worst=0.30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tdmsim")
    ap.add_argument("--runs", default=h200_data.newest("timing", "jsonl"),
                    help="timing-vN.jsonl (default: the newest)")
    ap.add_argument("--filter", default=".*")
    ap.add_argument("--max-tokens", type=int, default=1 << 30)
    ap.add_argument("--csv")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--check", help="guard JSON: fail when the held-out half is less accurate")
    a = ap.parse_args()
    guard = None
    if a.check:
        try:
            with open(a.check) as f:
                guard = json.load(f)
            a.runs = os.path.join(h200_data.ROOT, guard["runs"])
            g = guard["heldout"]
            for key in ("n", "mape_max", "worst_max", "spearman_min"):
                float(g[key])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise h200_data.DataError(f"{a.check}: not a readable accuracy guard "
                                      f"(needs runs and heldout.n/mape_max/worst_max/spearman_min): {e!r}")
        a.filter, a.max_tokens = ".*", 1 << 30
    index = h200_data.load_index()
    runs = [j for j in h200_data.load_runs(a.runs)
            if re.search(a.filter, j["case"]) and int(index[j["case"]]["tokens"]) <= a.max_tokens]
    preds = h200_data.predict_many(a.tdmsim, [j["case"] for j in runs], a.jobs, quiet=not sys.stderr.isatty())
    rows, mismatched = [], []
    for j in runs:
        name = j["case"]
        differs = h200_data.kernel_mismatch(j, preds[name])
        if differs:
            mismatched.append(f"{name} ({', '.join(differs)})")
        measured = h200_data.measured_us(j)
        pred = preds[name]["predicted_us"]
        err = (pred - measured) / measured
        rows.append((name, index[name]["split"], measured, pred, err))
        print(f"{name:40s} {index[name]['split']:11s} measured {measured:10.1f} us  "
              f"predicted {pred:10.1f} us  {100 * err:+7.1f}%", flush=True)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("name,split,measured_us,predicted_us,error\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]:.2f},{r[3]:.2f},{r[4]:.4f}\n")
    stats = {}
    for split in ("calibration", "heldout"):
        sel = [r for r in rows if r[1] == split]
        if len(sel) < 2:
            continue
        st = h200_data.error_stats([(r[2], r[3]) for r in sel])
        stats[split] = st
        worst = max(sel, key=lambda r: abs(r[4]))
        print(f"{split}: {len(sel)} scenarios, MAPE {100 * st['mape']:.1f}%, worst {worst[0]} "
              f"{100 * worst[4]:+.1f}%, Spearman {st['spearman']:.3f}")
    h = stats.get("heldout")
    if h:
        ok = {k: (h[k] >= v if k == "spearman" else h[k] <= v) for k, v in ISSUE_BOUNDS.items()}
        print("issue bounds on the held-out half: " + ", ".join(
            f"{k} {'PASS' if v else 'FAIL'}" for k, v in ok.items()))
    if mismatched:
        print(f"WARNING: {len(mismatched)} scenario(s) measured with another kernel configuration than "
              f"the heuristic picks now (re-measure them): " + "; ".join(mismatched))
    if guard:
        g = guard["heldout"]
        bad = []
        if mismatched:
            bad.append(f"{len(mismatched)} scenario(s) of {guard['runs']} ran another kernel configuration "
                       "than the one predicted now: the guard must move to data of the current heuristic")
        if h is None or h["n"] != g["n"]:
            bad.append(f"expected {g['n']} held-out scenarios")
        else:
            if h["mape"] > g["mape_max"]:
                bad.append(f"MAPE {100 * h['mape']:.1f}% > {100 * g['mape_max']:.1f}%")
            if h["worst"] > g["worst_max"]:
                bad.append(f"worst {100 * h['worst']:.1f}% > {100 * g['worst_max']:.1f}%")
            if h["spearman"] < g["spearman_min"]:
                bad.append(f"Spearman {h['spearman']:.3f} < {g['spearman_min']:.3f}")
        if bad:
            print(f"FAIL: held-out accuracy below the guard {a.check}: " + "; ".join(bad))
            return 1
        print(f"guard {os.path.relpath(a.check, h200_data.ROOT)}: held-out accuracy holds")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except h200_data.DataError as e:
        print(f"compare_timing: error: {e}", file=sys.stderr)
        sys.exit(2)
