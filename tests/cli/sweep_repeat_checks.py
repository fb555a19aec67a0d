#!/usr/bin/env python3
"""Checks of repeated sweeps (`repeat: N`) and one-at-a-time sensitivity sweeps (`mode: oat`).

  stats WORKDIR              the fixture sweep in WORKDIR/ref (sweep_checks.py reference): every
                             row keeps its N draws with seeds seed..seed+N-1; total_us is their
                             mean; the interval is mean -/+ t(0.975, N-1) sd / sqrt(N); the speedup
                             is the mean of per-draw ratios; a draw is `tdmsim run` at its seed
  bands WORKDIR              tdmsim plot draws a shaded band (a PolyCollection in the SVG) for a
                             repeated sweep, for the time and for --speedup, and none without repeat
  sensitivity WORKDIR SPEC   a reduced oat sweep: --quiet prints nothing; sensitivity.csv and .json
                             well-formed and ranked by swing; a 100x TDM descriptor fetch latency lowers the
                             speedup; no noise floor without jitter; the tornado is drawn, with a
                             noise band where the CSV has a floor; a re-run resumes with the same ranking
  jitter WORKDIR             an oat sweep with `jitter`: results.csv ends with a `jitter` column, yes
                             on exactly the x0.99 / x1.01 rows; --dry-run marks those points; the noise
                             floor is the largest distance of their speedups from the base's

Usage: sweep_repeat_checks.py TDMSIM MODE WORKDIR [SPEC]"""
import csv
import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

# Student's t 0.975 quantiles (any statistics table): the fixture has 3 draws, df = 2.
T975 = {1: 12.7062047, 2: 4.30265273, 3: 3.18244631, 4: 2.77644511}


def run(cmd, expect=0):
    return tdmsimtools.expect_exit(cmd[0], *cmd[1:], rc=expect)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def stats(tdmsim, work):
    ref = os.path.join(work, "ref")
    rows = tdmsimtools.outputs.read_results_jsonl(ref)
    table = tdmsimtools.outputs.read_results_csv(ref)
    assert len(rows) == len(table) == 8, (len(rows), len(table))
    header = list(table[0].keys())
    assert header[-7:] == ["repeat", "total_us_sd", "total_us_ci95_low", "total_us_ci95_high", "tdm_speedup",
                           "tdm_speedup_ci95_low", "tdm_speedup_ci95_high"], header
    spread = 0
    for row, line in zip(rows, table):
        rep = row["repeat"]
        n = rep["n"]
        assert n == 3 and len(row["draws"]) == 3, row.keys()
        seed0 = rep["seeds"][0]
        assert rep["seeds"] == [seed0 + r for r in range(n)], rep["seeds"]
        assert [d["seed"] for d in row["draws"]] == rep["seeds"]
        x = [d["metrics"]["total_us"] for d in row["draws"]]
        mean = sum(x) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1))
        half = T975[n - 1] * sd / math.sqrt(n)
        t = rep["total_us"]
        assert close(t["mean"], mean) and close(t["sd"], sd), (t, mean, sd)
        assert close(t["ci95_low"], mean - half, 1e-6) and close(t["ci95_high"], mean + half, 1e-6), (t, half)
        assert close(row["metrics"]["total_us"], mean), "total_us is not the mean of the draws"
        assert close(float(line["total_us"]), mean) and close(float(line["total_us_ci95_high"]), mean + half, 1e-6)
        assert int(line["repeat"]) == 3
        spread += max(x) - min(x)
    # Paired speedup: both rows of a point carry the mean of software / tdm per draw.
    by_point = {}
    for row in rows:
        by_point.setdefault(row["point"], {})[row["path"]] = row
    for p, paths in by_point.items():
        sw, tdm = paths["software"], paths["tdm"]
        ratios = [a["metrics"]["total_us"] / b["metrics"]["total_us"] for a, b in zip(sw["draws"], tdm["draws"])]
        assert close(sw["repeat"]["tdm_speedup"]["mean"], sum(ratios) / len(ratios)), p
        assert sw["repeat"]["tdm_speedup"] == tdm["repeat"]["tdm_speedup"]
    assert spread > 0, "every draw gave the same times: the draws do not differ"
    # A draw is exactly `tdmsim run` of the point's scenario at its seed (a fresh process).
    row = next(r for r in rows if r["path"] == "tdm" and r["tokens"] == 16)
    scen = os.path.join(work, "draw2.yaml")
    base = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "workloads", "scenarios",
                                        "qwen3-30b-a3b-decode-mi500x-tdm.yaml"))
    with open(scen, "w") as f:
        f.write(f"base: {base}\nname: draw2\ntokens: 16\nseed: {row['draws'][2]['seed']}\n")
    out = os.path.join(work, "draw2-run")
    shutil.rmtree(out, ignore_errors=True)
    run([tdmsim, "run", scen, "--quiet", "--output", out])
    summary = tdmsimtools.read_summary(out)
    tdm_us = next(p["total_us"] for p in summary["paths"] if p["path"] == "tdm")
    assert close(tdm_us, row["draws"][2]["metrics"]["total_us"]), (tdm_us, row["draws"][2]["metrics"]["total_us"])
    print(f"8 rows of 3 draws: means, sd and Student-t intervals agree; draw 2 of point "
          f"{row['point']} = tdmsim run at seed {row['draws'][2]['seed']} ({tdm_us:.3f} us)")


def svg_bands(tdmsim, csv_path, out, args):
    fig = os.path.join(out, "fig.svg")
    run([tdmsim, "plot", csv_path, *args, "--output", fig, "--force"])
    return open(fig).read().count("PolyCollection")


def bands(tdmsim, work):
    ref = os.path.join(work, "ref", "results.csv")
    out = os.path.join(work, "bands")
    os.makedirs(out, exist_ok=True)
    assert svg_bands(tdmsim, ref, out, ["--x", "tokens", "--y", "total_us", "--hue", "path"]) == 2, "no band per path"
    assert svg_bands(tdmsim, ref, out, ["--x", "tokens", "--speedup"]) == 1, "no speedup band"
    png = os.path.join(out, "time.png")
    run([tdmsim, "plot", ref, "--x", "tokens", "--speedup", "--output", png, "--force"])
    assert open(png, "rb").read(8).startswith(b"\x89PNG")
    # The same sweep without repeat has no interval columns, so no band.
    plain = os.path.join(out, "plain.csv")
    with open(ref) as f, open(plain, "w", newline="") as g:
        r = csv.DictReader(f)
        keep = [c for c in r.fieldnames if c not in ("repeat", "total_us_sd") and "ci95" not in c and c != "tdm_speedup"]
        w = csv.DictWriter(g, keep, extrasaction="ignore")
        w.writeheader()
        w.writerows(r)
    assert svg_bands(tdmsim, plain, out, ["--x", "tokens", "--y", "total_us", "--hue", "path"]) == 0
    print("bands drawn for the repeated sweep (time and speedup), none without repeat")


def sensitivity(tdmsim, work, spec):
    out = os.path.join(work, "sens")
    shutil.rmtree(out, ignore_errors=True)
    r = run([tdmsim, "sweep", spec, "--output", out, "-j", "2", "--quiet"])
    assert r.stdout == "" and r.stderr == "", f"--quiet printed: {r.stdout!r} {r.stderr!r}"
    rows = tdmsimtools.outputs.read_sensitivity(out)
    ranking = json.load(open(os.path.join(out, "sensitivity.json")))
    params = ["machine.tdm.descriptor_fetch_latency", "machine.compute.clock", "machine.tdm.decode_latency"]
    assert sorted(r["parameter"] for r in rows) == sorted(params), rows
    assert [int(r["rank"]) for r in rows] == [1, 2, 3]
    swings = [float(r["swing"]) for r in rows]
    assert swings == sorted(swings, reverse=True), swings
    base = float(rows[0]["base_speedup"])
    assert base > 0 and all(float(r["base_speedup"]) == base for r in rows)
    for r in rows:
        lo, hi = float(r["low_speedup"]), float(r["high_speedup"])
        assert close(float(r["swing"]), float(r["max_speedup"]) - float(r["min_speedup"]))
        assert close(float(r["max_speedup"]), max(lo, hi)) and close(float(r["min_speedup"]), min(lo, hi))
        assert close(float(r["swing_fraction"]), float(r["swing"]) / base)
    assert [p["parameter"] for p in ranking["parameters"]] == [r["parameter"] for r in rows]
    assert close(ranking["base"]["speedup"], ranking["base"]["software_us"] / ranking["base"]["tdm_us"])
    # A 100x descriptor fetch latency (65 us a descriptor) must cost the TDM path, not the software one.
    disp = next(r for r in rows if r["parameter"] == "machine.tdm.descriptor_fetch_latency")
    assert disp["high_value"] == "x100" and disp["rank"] == "1", disp
    assert float(disp["high_speedup"]) < 0.9 * base, (disp, base)
    dj = next(p for p in ranking["parameters"] if p["parameter"] == "machine.tdm.descriptor_fetch_latency")
    assert close(dj["values"][1]["software_us"], ranking["base"]["software_us"]), "the software path moved"
    # No jitter: no noise floor measured, both columns empty, no jitter column in results.csv.
    assert all(r["noise_floor"] == "" and r["beyond_noise"] == "" for r in rows), rows
    assert "jitter" not in tdmsimtools.outputs.read_results_csv(out)[0], "a jitter column without jitter"
    assert ranking["noise_floor"] is None and ranking["jitter_points"] == []
    fig = os.path.join(out, "tornado.png")
    # A temporary of a plot killed while it wrote (a PID no process has) goes.
    stale = os.path.join(out, ".tornado.png.tmp.999999999")
    open(stale, "w").close()
    run([tdmsim, "plot", os.path.join(out, "sensitivity.csv"), "--output", fig])
    assert open(fig, "rb").read(8).startswith(b"\x89PNG") and os.path.getsize(fig) > 5000
    assert not os.path.exists(stale), "a dead plot's temporary was left"
    # With a noise floor (as a jitter sweep writes it) the tornado draws its band.
    noisy = os.path.join(out, "noisy", "sensitivity.csv")
    os.makedirs(os.path.dirname(noisy), exist_ok=True)
    with open(os.path.join(out, "sensitivity.csv")) as f, open(noisy, "w") as g:
        lines = f.read().splitlines()
        g.write(lines[0] + "\n")
        for i, line in enumerate(lines[1:]):
            g.write(line[:-1] + "0.05," + ("yes" if i == 0 else "no") + "\n")  # the two empty fields
    svg = os.path.join(out, "noisy", "tornado.svg")
    run([tdmsim, "plot", noisy, "--output", svg])
    text = open(svg).read()
    assert "noise floor (jitter)" in text, "no noise band in the tornado"
    # The table's options would be ignored by a tornado: refused, nothing drawn.
    hue = os.path.join(out, "noisy", "hue.svg")
    r = run([tdmsim, "plot", os.path.join(out, "sensitivity.csv"), "--hue", "tokens", "--output", hue], expect=2)
    assert "--hue: applies to a sweep's results.csv" in r.stderr and "tornado" in r.stderr, r.stderr
    assert not os.path.exists(hue)
    plain = os.path.join(out, "noisy", "plain.svg")
    run([tdmsim, "plot", os.path.join(out, "sensitivity.csv"), "--output", plain])
    assert "noise floor" not in open(plain).read(), "a band without a noise floor"
    before = open(os.path.join(out, "sensitivity.csv")).read()
    r = run([tdmsim, "sweep", spec, "--output", out])
    assert " 0 run now" in r.stdout and "sensitivity.csv" in r.stdout, r.stdout
    assert open(os.path.join(out, "sensitivity.csv")).read() == before
    ranked = ", ".join("%s %.4f" % (r["parameter"], float(r["swing"])) for r in rows)
    print(f"ranked: {ranked}; base {base:.4f}, fetch x100 {float(disp['high_speedup']):.4f}")


def jitter(tdmsim, work):
    spec = os.path.join(work, "jitter.yaml")
    base = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "workloads", "scenarios",
                                        "qwen3-30b-a3b-decode-mi500x-tdm.yaml"))
    with open(spec, "w") as f:
        f.write(f"name: test-jitter\nscenario: {base}\nmode: oat\njitter: 0.01\naxes:\n"
                "  machine.memory.hbm.bandwidth: [x0.8]\n  machine.tdm.movers_per_cu: [2]\n")
    listing = run([tdmsim, "sweep", spec, "--dry-run"]).stdout.splitlines()
    marked = [line.split()[0] for line in listing if line.endswith("(jitter)")]
    assert marked == ["2", "3"], listing
    out = os.path.join(work, "jitter")
    shutil.rmtree(out, ignore_errors=True)
    run([tdmsim, "sweep", spec, "--output", out, "-j", "2", "--quiet"])
    table = tdmsimtools.outputs.read_results_csv(out)
    assert list(table[0].keys())[-1] == "jitter", list(table[0].keys())
    bw = "machine.memory.hbm.bandwidth"
    # base, x0.8, x0.99, x1.01 (bandwidth's jitter), 2 movers (an absolute value: no jitter); two paths each.
    assert [(r["point"], r[bw], r["jitter"]) for r in table if r["path"] == "tdm"] == [
        ("0", "", "no"), ("1", "x0.8", "no"), ("2", "x0.99", "yes"), ("3", "x1.01", "yes"), ("4", "", "no")], table
    speedup = {}
    for r in table:
        speedup.setdefault(r["point"], {})[r["path"]] = float(r["total_us"])
    speedup = {p: t["software"] / t["tdm"] for p, t in speedup.items()}
    floor = max(abs(speedup[p] - speedup["0"]) for p in ("2", "3"))
    ranking = json.load(open(os.path.join(out, "sensitivity.json")))
    assert close(ranking["noise_floor"], floor, 1e-6), (ranking["noise_floor"], floor)
    print(f"jitter rows marked (points 2, 3); noise floor {floor:.4f} from their speedups")


def main():
    tdmsim, mode, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    if mode == "stats":
        stats(tdmsim, work)
    elif mode == "bands":
        bands(tdmsim, work)
    elif mode == "jitter":
        jitter(tdmsim, work)
    elif mode == "sensitivity":
        sensitivity(tdmsim, work, sys.argv[4])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
