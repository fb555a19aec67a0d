#!/usr/bin/env python3
"""Checks of validation/calibration/aiter_mi355x.py on a made-up fixture
(tests/data/aiter/mi355x-fixture.csv: invented times, not measurements).

  aiter_model_checks.py TDMSIM report   # the report: rows simulated, halves, formats
  aiter_model_checks.py TDMSIM bad      # an unmapped format: exit 2 naming file and line
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "validation", "calibration", "aiter_mi355x.py")
DATA = os.path.join(ROOT, "tests", "data", "aiter")


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    tdmsim, mode = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.md")
        if mode == "bad":
            csv = os.path.join(DATA, "mi355x-bad-format.csv")
            p = subprocess.run([sys.executable, SCRIPT, "--csv", csv, "--tdmsim", tdmsim, "--jobs", "1",
                                "--markdown", out], capture_output=True, text=True)
            if p.returncode != 2:
                fail(f"exit {p.returncode}, expected 2: {p.stderr}")
            if "mi355x-bad-format.csv:5:" not in p.stderr or "per_1x64" not in p.stderr:
                fail(f"the error does not name the file, line and format: {p.stderr}")
            if os.path.exists(out):
                fail("a report was written despite the error")
            return 0
        csv = os.path.join(DATA, "mi355x-fixture.csv")
        p = subprocess.run([sys.executable, SCRIPT, "--csv", csv, "--tdmsim", tdmsim, "--jobs", "1",
                            "--markdown", out], capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"exit {p.returncode}: {p.stderr}")
        text = open(out).read()
        # Every format the simulator accepts is simulated (MXFP4 included); an AITER pair it
        # refuses (bf16 x fp8 per-token, line 7) is listed as not simulated, with the reason.
        rows = [l for l in text.splitlines() if l.startswith("| ") and "fixture_" in l]
        if len(rows) != 5:
            fail(f"{len(rows)} per-row lines, expected 5:\n{text}")
        refused = "| torch.bfloat16 / torch.float8_e4m3fn / QuantType.per_Token | AITER quantisation"
        if refused not in text or "dtype bf16 pairs with" not in text or "| 1 (1 / 0) |" not in text:
            fail(f"the refused bf16 x fp8 row is not listed with its reason:\n{text}")
        # Halves alternate per source table: the first row of each is calibration.
        roles = {l.split("|")[1].strip(): l.rstrip(" |").split("|")[-1].strip() for l in rows}
        if roles.get("2") != "calibration" or roles.get("3") != "held out" or roles.get("4") != "calibration":
            fail(f"calibration / held-out split is not alternate per source: {roles}")
        # A 1-stage row runs AITER's assembly tile, and has no stage 2.
        one = [l for l in rows if l.split("|")[1].strip() == "4"][0]
        if "AITER 1-stage" not in one or "| 1 |" not in one:
            fail(f"the run_1stage row is not a 1-stage layer: {one}")
        for head in ("### Per stage", "### Against a plain roofline", "format bf16", "regime decode"):
            if head not in text:
                fail(f"the report lacks '{head}':\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
