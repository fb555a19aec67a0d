#!/usr/bin/env python3
"""Guards the MI355X and MI300X accuracy figures of docs/validation.md: a handful of cheap
rows of the published AITER tables (../shared/calibration, read at run time) are simulated
again with the shipped machine files and compared with the per-row tables that
validation/report.py wrote there. A change of the model or of a fitted value that moves
these rows fails until docs/validation.md is regenerated.

  mi_fit_checks.py TDMSIM   # exit 0 ok, 1 drift, 77 (skipped) without the data files

Rows: one per format and kind of kernel (decode-sized, so the whole check takes seconds).
The checked figures are the simulated stage times (within 1%) and the errors against the
measured times (within 1 percentage point)."""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "validation", "calibration"))
import aiter_mi300x  # noqa: E402
import aiter_mi355x  # noqa: E402

DOC = os.path.join(ROOT, "docs", "validation.md")
# CSV lines of the MI355X file: MXFP4 at 1 and 256 tokens, MXFP8, bf16, fp8 block-scale 2-stage,
# and fp8 block-scale 1-stage (AITER's assembly kernel).
MI355X_LINES = (27, 35, 122, 178, 13, 14)
# (tp, tokens) of the MI300X file; TP4 at 4 tokens names a v1 down kernel whose one LDS
# buffer (kernel.down_lds_buffers 1) gives it 9% more time than two would.
MI300X_ROWS = ((8, 1), (4, 16), (4, 4))


def pct(cell):
    return float(cell.strip().rstrip("%"))


def section_rows(text, heading):
    """The per-row table's cells of the level-2 section whose heading starts with `heading`."""
    start = text.find("\n## " + heading)
    if start < 0:
        raise SystemExit(f"FAIL: {DOC} has no section '## {heading}'")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end > 0 else len(text)]
    table = body[body.find("### Per row"):]
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in table.splitlines() if re.match(r"\| \d", line)]


def close(sim, doc, rel=0.01):
    return abs(sim - doc) <= rel * max(abs(doc), 1.0)


def main():
    tdmsim = sys.argv[1]
    if not (os.path.exists(aiter_mi355x.DEFAULT_CSV) and os.path.exists(aiter_mi300x.DEFAULT_CSV)):
        print("skipped: the calibration files are not in ../shared/calibration")
        return 77
    text = open(DOC).read()
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        doc = {int(c[0]): c for c in section_rows(text, "MI355X")}
        rows = {r["line"]: r for r in aiter_mi355x.rows_of(aiter_mi355x.DEFAULT_CSV, tdmsim)}
        for line in MI355X_LINES:
            if line not in doc:
                bad.append(f"MI355X line {line}: not in the per-row table of {DOC}")
                continue
            c = doc[line]
            r = aiter_mi355x.simulate(tdmsim, tmp, rows[line])
            e1 = 100 * aiter_mi300x.err(r["sim1"], r["us1"])
            et = 100 * aiter_mi300x.err(r["simt"], r["us"])
            ok = close(r["sim1"], float(c[9])) and close(r["sim2"], float(c[11])) and \
                abs(e1 - pct(c[10])) <= 1 and abs(et - pct(c[13])) <= 1
            print(f"MI355X line {line}: sim {r['sim1']:.1f} / {r['sim2']:.1f} us, total {et:+.0f}% "
                  f"(docs: {c[9]} / {c[11]} us, {c[13]})")
            if not ok:
                bad.append(f"MI355X line {line}: simulated {r['sim1']:.1f} / {r['sim2']:.1f} us ({et:+.1f}%), "
                           f"docs/validation.md says {c[9]} / {c[11]} us ({c[13]})")
        doc3 = {(int(c[0]), int(c[1])): c for c in section_rows(text, "MI300X")}
        rows3 = {(r["tp"], r["tokens"]): r for r in aiter_mi300x.rows_of(aiter_mi300x.DEFAULT_CSV, tdmsim)}
        for key in MI300X_ROWS:
            c = doc3[key]
            r = aiter_mi300x.simulate(tdmsim, tmp, rows3[key])
            e = 100 * aiter_mi300x.err(r["sim1"] + r["sim2"], r["us1"] + r["us2"])
            ok = close(r["sim1"], float(c[4])) and close(r["sim2"], float(c[6])) and abs(e - pct(c[8])) <= 1
            print(f"MI300X tp{key[0]} {key[1]} tokens: sim {r['sim1']:.1f} / {r['sim2']:.1f} us, total {e:+.0f}% "
                  f"(docs: {c[4]} / {c[6]} us, {c[8]})")
            if not ok:
                bad.append(f"MI300X tp{key[0]} {key[1]} tokens: simulated {r['sim1']:.1f} / {r['sim2']:.1f} us "
                           f"({e:+.1f}%), docs/validation.md says {c[4]} / {c[6]} us ({c[8]})")
    for b in bad:
        print("FAIL: " + b + " (regenerate with validation/report.py)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
