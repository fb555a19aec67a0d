#!/usr/bin/env python3
"""Measured H200 layer times (tdmsim-gpu runs.jsonl) against the simulator's
prediction on the `h200` machine, per scenario, with error statistics per split
(calibration / held-out, fixed in validation/gpu/scenarios/index.csv).

compare_timing.py TDMSIM [--runs validation/data/h200/moe/timing-vN.jsonl (newest)]
                  [--filter REGEX] [--max-tokens N] [--csv OUT.csv]

The measured time compared is the layer as the simulator models it: the kernels of
h200_data.COMPARED_KERNELS (all the runner times: y zeroing, sort, gate/up, split-K
reduce, fp8 intermediate quantisation, down, or the 1-stage kernel). Prints one row per scenario and, per split: MAPE, the largest error,
Spearman rank correlation. validation/report.py writes the same comparison, with
plots, into docs/validation.md.
"""
import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h200_data  # noqa: E402  (COMPARED_KERNELS, the data files, spearman, predict)

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tdmsim")
    ap.add_argument("--runs", default=h200_data.newest("timing", "jsonl"),
                    help="timing-vN.jsonl (default: the newest)")
    ap.add_argument("--filter", default=".*")
    ap.add_argument("--max-tokens", type=int, default=1 << 30)
    ap.add_argument("--csv")
    a = ap.parse_args()
    index = h200_data.load_index()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for j in h200_data.load_runs(a.runs):
            name = j["case"]
            if not re.search(a.filter, name) or int(index[name]["tokens"]) > a.max_tokens:
                continue
            measured = h200_data.measured_us(j)
            pred = h200_data.predict(a.tdmsim, name, tmp)["predicted_us"]
            err = (pred - measured) / measured
            rows.append((name, index[name]["split"], measured, pred, err))
            print(f"{name:40s} {index[name]['split']:11s} measured {measured:10.1f} us  "
                  f"predicted {pred:10.1f} us  {100 * err:+7.1f}%", flush=True)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("name,split,measured_us,predicted_us,error\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]:.2f},{r[3]:.2f},{r[4]:.4f}\n")
    for split in ("calibration", "heldout"):
        sel = [r for r in rows if r[1] == split]
        if len(sel) < 2:
            continue
        mape = 100 * sum(abs(r[4]) for r in sel) / len(sel)
        worst = max(sel, key=lambda r: abs(r[4]))
        rho = h200_data.spearman([r[2] for r in sel], [r[3] for r in sel])
        print(f"{split}: {len(sel)} scenarios, MAPE {mape:.1f}%, worst {worst[0]} {100 * worst[4]:+.1f}%, "
              f"Spearman {rho:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
