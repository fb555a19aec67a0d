#!/usr/bin/env python3
"""Checks of validation/report.py, without the simulator but for `mi` (CTest validation.report_*):

  full WORKDIR      the whole H200 report from the committed predictions
                    (docs/validation/h200-predictions.csv, --no-sim) into WORKDIR: exit 0,
                    every section, one time row per measured scenario, the PASS/FAIL lines,
                    the four figures, no temporary file left, the MI300X section skipped
                    when its measured file is absent, the item-7 rows of the scenarios
                    run as the plan configures them (no `kernel:` key) counted right, the
                    commit stamp taken from TDMSIM_COMMIT
  errors WORKDIR    a missing timing file, a missing prediction and a bad --filter exit 2
                    naming the problem and leave no document behind
  mi WORKDIR TDMSIM the MI355X section simulated on tests/data/aiter/mi355x-fixture.csv
                    (invented times): its figure is a PNG shown before its per-row table

Usage: report_checks.py MODE WORKDIR [TDMSIM]"""
import csv
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "validation", "report.py")
PREDICTIONS = os.path.join(ROOT, "docs", "validation", "h200-predictions.csv")
SECTIONS = ("# Validation: MoE layer times against measurements",
            "## H200: the project's HIP kernels against the simulator's `h200` machine",
            "### Accuracy per split", "Issue 6's bounds on the held-out half", "**Overall: ",
            "### Error by model", "### Kernel quality (issue 6 item 7)",
            "Against issue 6 item 7's targets", "### Numerics against the emulator",
            "### Per scenario: time", "## MI300X, AITER CK 2-stage fused MoE")
FIGURES = ("h200-predicted-vs-measured.png", "h200-error-by-tokens.png", "h200-error-by-model.png",
           "h200-kernels-vs-floor.png")


def report(args, expect, env=None):
    cmd = [sys.executable, REPORT, "--quiet", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=None if env is None else {**os.environ, **env})
    if r.returncode != expect:
        sys.exit(f"FAILED: exit {r.returncode}, expected {expect}: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r


def newest_timing():
    d = os.path.join(ROOT, "validation", "data", "h200", "moe")
    files = [f for f in os.listdir(d) if f.startswith("timing-v") and f.endswith(".jsonl")]
    return os.path.join(d, max(files, key=lambda f: int(f[8:-6])))


def fresh(work):
    """An empty WORKDIR with the committed H200 predictions in its figures folder:
    (document path, figures folder)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    figs = os.path.join(work, "validation")
    os.makedirs(figs)
    shutil.copy(PREDICTIONS, figs)
    return os.path.join(work, "validation.md"), figs


def full(work):
    out, figs = fresh(work)
    report(["--no-sim", "--output", out, "--mi300x-csv", os.path.join(work, "absent.csv"),
            "--mi355x-csv", os.path.join(work, "absent.csv")], 0, env={"TDMSIM_COMMIT": "cafe123"})
    text = open(out).read()
    if "commit cafe123" not in text:
        sys.exit("FAILED: the document does not record the commit given in TDMSIM_COMMIT")
    for s in SECTIONS:
        if s not in text:
            sys.exit(f"FAILED: {out} lacks {s!r}")
    if text.count("**Skipped:**") != 2:
        sys.exit("FAILED: the MI300X and MI355X sections are not marked skipped without their measured files")
    if "**PASS**" not in text and "**FAIL**" not in text:
        sys.exit("FAILED: no PASS/FAIL verdict")
    runs = [json.loads(line)["case"] for line in open(newest_timing()) if line.strip()]
    part = text.split("### Per scenario: time", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in part.splitlines() if line.startswith("| ") and not line.startswith("| scenario")]
    if len(rows) != len(runs):
        sys.exit(f"FAILED: {len(rows)} per-scenario rows, {len(runs)} measured scenarios")
    for name in runs:
        if f"| {name} |" not in part:
            sys.exit(f"FAILED: no row for {name}")
    for f in FIGURES:
        p = os.path.join(figs, f)
        if not os.path.isfile(p) or os.path.getsize(p) < 1000 or open(p, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            sys.exit(f"FAILED: {p} is not a PNG")
        if f"validation/{f}" not in text:
            sys.exit(f"FAILED: the document does not show {f}")
    left = [f for d in (work, figs) for f in os.listdir(d) if f.startswith(".")]
    if left:
        sys.exit(f"FAILED: temporary files left: {left}")
    configured(text)
    print(f"ok: {len(runs)} scenarios, {len(SECTIONS)} sections, {len(FIGURES)} figures")


def configured(text):
    """The item-7 rows "as the plan configures them" count the bf16 scenarios whose YAML
    has no top-level `kernel:` key (h200_data.forces_kernel), counted here independently."""
    sys.path.insert(0, os.path.join(ROOT, "validation", "gpu"))
    import h200_data
    if not h200_data.forces_kernel("mixtral-8x7b-4096tok-rg1") or h200_data.forces_kernel("mixtral-8x7b-4096tok"):
        sys.exit("FAILED: forces_kernel misreads the -rg1 twin (kernel: raster_group 1) or its default")
    try:
        h200_data.forces_kernel("no-such-scenario")
        sys.exit("FAILED: forces_kernel accepted a scenario without a YAML file")
    except h200_data.DataError:
        pass
    scen = os.path.join(ROOT, "validation", "gpu", "scenarios")
    with open(os.path.join(scen, "index.csv")) as f:
        bf16 = [r["name"] for r in csv.DictReader(f) if r["dtype"] == "bf16"]
    free = [n for n in bf16 if not any(line.split("#")[0].rstrip() == "kernel:"
                                       for line in open(os.path.join(scen, n + ".yaml")))]
    row = next((line for line in text.splitlines() if line.startswith("| the same, as the plan configures them (")),
               None)
    if row is None or f" of {len(free)} |" not in row:
        sys.exit(f"FAILED: the 'as the plan configures them' row does not count {len(free)} scenarios: {row}")


def errors(work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "validation.md")
    common = ["--output", out, "--skip-mi300x", "--skip-mi355x", "--no-plots"]
    r = report(["--no-sim", "--timing", os.path.join(work, "timing-v9.jsonl"), *common], 2)
    if "timing-v9.jsonl: not found" not in r.stderr:
        sys.exit(f"FAILED: missing timing file not named: {r.stderr}")
    one = os.path.join(work, "one.csv")
    with open(PREDICTIONS) as f, open(one, "w") as g:
        lines = [line for line in f if not line.startswith("#")]
        rows = list(csv.DictReader(lines))
        g.write(lines[0] + next(line for line in lines[1:] if line.startswith(rows[0]["name"] + ",")))
    r = report(["--predictions", one, *common], 2)
    if "no prediction for" not in r.stderr:
        sys.exit(f"FAILED: missing prediction not named: {r.stderr}")
    r = report(["--no-sim", "--filter", "(", *common], 2)
    if "--filter" not in r.stderr:
        sys.exit(f"FAILED: bad filter not named: {r.stderr}")
    if os.path.exists(out):
        sys.exit(f"FAILED: {out} written by a failing run")
    # and the single-scenario report that the fixture does cover
    report(["--predictions", one, "--filter", f"^{rows[0]['name']}$", *common], 0)
    if "| " + rows[0]["name"] + " |" not in open(out).read():
        sys.exit("FAILED: the filtered report lacks its scenario")
    print("ok: errors exit 2 and write nothing")


def mi(work, tdmsim):
    """The MI355X section on a made-up fixture (invented times), simulated: its figure
    (simulated vs published, error by token count) is a PNG shown before the per-row
    table; the skipped MI300X section has none."""
    out, figs = fresh(work)
    fixture = os.path.join(ROOT, "tests", "data", "aiter", "mi355x-fixture.csv")
    report(["--no-sim", "--sim-mi355x", "--tdmsim", tdmsim, "--jobs", "2", "--output", out, "--skip-mi300x",
            "--mi355x-csv", fixture], 0)
    text = open(out).read()
    png = os.path.join(figs, "mi355x-simulated-vs-published.png")
    if not os.path.isfile(png) or open(png, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"FAILED: {png} is not a PNG")
    section = text.split("## MI355X, AITER fused MoE", 1)[1]
    link = "(validation/mi355x-simulated-vs-published.png)"
    if link not in section or section.index(link) > section.index("### Per row"):
        sys.exit("FAILED: the MI355X section does not show its figure before the per-row table")
    if os.path.exists(os.path.join(figs, "mi300x-simulated-vs-published.png")) or "mi300x-simulated" in text:
        sys.exit("FAILED: a skipped MI300X section has a figure")
    print("ok: the MI355X figure")


if __name__ == "__main__":
    modes = {"full": (full, 3), "errors": (errors, 3), "mi": (mi, 4)}
    if len(sys.argv) < 2 or sys.argv[1] not in modes or len(sys.argv) != modes[sys.argv[1]][1]:
        sys.exit(__doc__)
    modes[sys.argv[1]][0](os.path.abspath(sys.argv[2]), *sys.argv[3:])
