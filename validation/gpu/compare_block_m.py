#!/usr/bin/env python3
"""Measured block sizes on the H200 against the simulator: for every scenario
measured at two or more fixed block_m (a folder written like
validation/data/h200/moe/blockm-2026-12-05: scenarios/NAME-mM.yaml and its
index.csv, as validation/gpu/make_block_m_grid.py writes them, and runs.jsonl
from validation/gpu/run_batch.sh --scenarios), the measured and predicted layer
times at each M, the speedup of the smallest M over the largest measured and
predicted, and the M the heuristic picks now. Then, per layer, the measured
fastest M, and the measured time of the M the simulator predicts fastest and of
the heuristic's M over the fastest (the regret). Writes Markdown (--output,
else stdout).

compare_block_m.py TDMSIM FOLDER [--jobs N] [--output FILE.md] [--check]
                  [--sim-tolerance X] [--heuristic-tolerance X]

Exit 0, 1 when a scenario's run failed its checks or ran another kernel
configuration than its scenario fixes, or (--check) when for some layer fewer
than two block sizes passed, the heuristic's M was not measured, the M the
simulator predicts fastest measures more than --sim-tolerance (default 1.10)
times the measured fastest, or the heuristic's M more than
--heuristic-tolerance (default 1.12) times it; 2 on bad input. (The defaults
are regression guards set above the worst of the 2026-12-05 grid, 1.07 and
1.11; a tolerance of 1 asks for the measured fastest M itself.)
"""
import argparse
import json
import math
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h200_data  # noqa: E402  (COMPARED_KERNELS, measured_us, KERNEL_KEYS, SCENARIO_DIR)
import tdmsimtools  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tdmsim")
    ap.add_argument("folder")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--output")
    ap.add_argument("--check", action="store_true",
                    help="fail unless the simulator's and the heuristic's M measure near the fastest")
    ap.add_argument("--sim-tolerance", type=float, default=1.10,
                    help="--check: the simulator's fastest M may measure this times the fastest (1.10)")
    ap.add_argument("--heuristic-tolerance", type=float, default=1.12,
                    help="--check: the heuristic's M may measure this times the fastest (1.12)")
    a = ap.parse_args()
    runs_path = os.path.join(a.folder, "runs.jsonl")
    try:
        runs = {r["case"]: r for r in h200_data.load_runs(runs_path)}
    except h200_data.DataError as e:
        print(f"compare_block_m.py: {e}", file=sys.stderr)
        return 2
    pairs = {}
    for name in runs:
        m = re.fullmatch(r"(.+)-m(\d+)", name)
        if not m:
            print(f"compare_block_m.py: {runs_path}: case {name} is not NAME-mM", file=sys.stderr)
            return 2
        pairs.setdefault(m.group(1), {})[int(m.group(2))] = name
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        def predict(name):
            scen = os.path.join(a.folder, "scenarios", name + ".yaml")
            s = tdmsimtools.run(a.tdmsim, scen, os.path.join(tmp, name), path="software",
                                extra=h200_data.one_gpu(scen), label=name)
            return name, s["paths"][0]["total_us"], s["layer"]

        def pick(base):  # the heuristic's block_m for the scenario as the batch has it
            scen = os.path.join(h200_data.SCENARIO_DIR, base + ".yaml")
            s = tdmsimtools.run(a.tdmsim, scen, os.path.join(tmp, base), path="software",
                                extra=h200_data.one_gpu(scen), label=base)
            return base, s["layer"]["block_m"]

        pred = {n: (us, layer) for n, us, layer in
                tdmsimtools.report.parallel(predict, sorted(runs), a.jobs, "block_m pairs", quiet=True)}
        heur = dict(tdmsimtools.report.parallel(pick, sorted(pairs), a.jobs, "heuristic", quiet=True))
    lines = ["| layer | M | measured us | predicted us | error | measured speedup | predicted speedup | heuristic |",
             "|---|---|---|---|---|---|---|---|"]
    regrets = ["| layer | measured fastest M | simulator's fastest M | its regret | heuristic | its regret |",
               "|---|---|---|---|---|---|"]
    sim_regrets, heur_regrets = [], []
    for base in sorted(pairs):
        ms = sorted(pairs[base])
        times = {}
        for m in ms:
            r = runs[pairs[base][m]]
            us, layer = pred[pairs[base][m]]
            mism = h200_data.kernel_mismatch(r, dict(kernel={k: layer.get(k) for k in h200_data.KERNEL_KEYS}))
            if r.get("rc") != 0 or not r.get("checks", {}).get("ok") or mism:
                bad.append(f"{pairs[base][m]}: rc {r.get('rc')}, checks {r.get('checks', {}).get('ok')}, "
                           f"{'; '.join(mism) or 'configuration as planned'}")
                continue
            times[m] = (h200_data.measured_us(r), us)
        for i, m in enumerate(ms):
            if m not in times:
                continue
            meas, p = times[m]
            speed = ""
            if i == 0 and ms[-1] in times:
                big = times[ms[-1]]
                speed = f"| {big[0] / meas:.2f}x | {big[1] / p:.2f}x | {heur[base]}"
            else:
                speed = "| | |"
            lines.append(f"| {base if i == 0 else ''} | {m} | {meas:.1f} | {p:.1f} | {100 * (p / meas - 1):+.1f}% "
                         f"{speed} |")
        if len(times) < 2:
            if a.check:
                bad.append(f"{base}: fewer than two block sizes measured and passing their checks")
            continue
        fastest = min(times, key=lambda m: times[m][0])
        sim_m = min(times, key=lambda m: times[m][1])
        sim_r = times[sim_m][0] / times[fastest][0]
        sim_regrets.append(sim_r)
        if heur[base] not in times:
            heur_cell = f"{heur[base]} | (not measured)"
            if a.check:
                bad.append(f"{base}: the heuristic's M {heur[base]} was not measured")
        else:
            heur_r = times[heur[base]][0] / times[fastest][0]
            heur_regrets.append(heur_r)
            heur_cell = f"{heur[base]} | {heur_r:.3f}"
            if a.check and heur_r > a.heuristic_tolerance:
                bad.append(f"{base}: the heuristic's M {heur[base]} measures {heur_r:.3f}x the fastest "
                           f"(M {fastest}), over {a.heuristic_tolerance}")
        if a.check and sim_r > a.sim_tolerance:
            bad.append(f"{base}: the simulator's fastest M {sim_m} measures {sim_r:.3f}x the fastest "
                       f"(M {fastest}), over {a.sim_tolerance}")
        regrets.append(f"| {base} | {fastest} | {sim_m} | {sim_r:.3f} | {heur_cell} |")

    def summary(name, rs):
        if not rs:
            return f"{name}: no layer measured at its M"
        geo = math.exp(sum(math.log(r) for r in rs) / len(rs))
        return (f"{name}: geometric-mean regret {geo:.3f}, worst {max(rs):.3f}, "
                f"{sum(r > 1.05 for r in rs)} of {len(rs)} layers more than 5% off")
    text = ("\n".join(lines) + "\n\n" + "\n".join(regrets) + "\n\n" + summary("Simulator", sim_regrets) +
            ".\n\n" + summary("Heuristic", heur_regrets) + ".\n")
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for b in bad:
        print(f"compare_block_m.py: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
