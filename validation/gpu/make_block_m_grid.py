#!/usr/bin/env python3
"""Writes H200 batch scenarios with kernel.block_m fixed, for measuring a layer
at several block sizes in one call (compare_block_m.py reads the result).

make_block_m_grid.py OUT --m 16,32,64,128 NAME [NAME ...]

For every NAME of validation/gpu/scenarios/ (its index.csv) and every M:
OUT/scenarios/NAME-mM.yaml, the batch's scenario with `block_m: M` added to its
kernel block, and OUT/scenarios/index.csv with the batch's split, numerics off.
A NAME whose scenario already fixes a tile, block_m or stage count is refused:
the grid is over the heuristic's own choice. Exit 2 on bad input.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h200_data  # noqa: E402  (SCENARIO_DIR)


def with_block_m(text, m, source):
    lines = [f"# {source} with block_m {m} fixed (make_block_m_grid.py)"]
    kernel_seen = False
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if line.startswith("name: "):
            line = f"{line}-m{m}"
        lines.append(line)
        if line == "kernel:":
            kernel_seen = True
            lines.append(f"  block_m: {m}")
    if not kernel_seen:
        lines += ["kernel:", f"  block_m: {m}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--m", default="16,32,64,128", help="block sizes, comma-separated (default 16,32,64,128)")
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    try:
        ms = [int(x) for x in a.m.split(",")]
    except ValueError:
        print(f"make_block_m_grid.py: --m {a.m}: not a comma-separated list of integers", file=sys.stderr)
        return 2
    bad_m = [m for m in ms if m not in (16, 32, 64, 128)]
    if bad_m or not ms:
        print(f"make_block_m_grid.py: --m {a.m}: block sizes are 16, 32, 64 or 128", file=sys.stderr)
        return 2
    index_path = os.path.join(h200_data.SCENARIO_DIR, "index.csv")
    with open(index_path) as f:
        index = {r["name"]: r for r in csv.DictReader(f)}
    rows, files = [], {}
    for name in a.names:
        if name not in index:
            print(f"make_block_m_grid.py: {name}: not a scenario of {index_path}", file=sys.stderr)
            return 2
        path = os.path.join(h200_data.SCENARIO_DIR, name + ".yaml")
        with open(path) as f:
            text = f.read()
        fixed = [k for k in ("block_m:", "gate_up_tile:", "down_tile:", "stages:") if f"  {k}" in text]
        if fixed or index[name]["tile"] != "auto":
            print(f"make_block_m_grid.py: {path}: its kernel is fixed ({', '.join(fixed) or index[name]['tile']}); "
                  "the grid varies the heuristic's own choice", file=sys.stderr)
            return 2
        for m in ms:
            files[f"{name}-m{m}.yaml"] = with_block_m(text, m, os.path.relpath(path, h200_data.ROOT))
            r = dict(index[name], name=f"{name}-m{m}", numerics="0")
            rows.append(r)
    out = os.path.join(a.out, "scenarios")
    os.makedirs(out, exist_ok=True)
    for f, t in files.items():
        with open(os.path.join(out, f), "w") as fh:
            fh.write(t)
    with open(os.path.join(out, "index.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} scenarios to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
