#!/usr/bin/env python3
"""Reproduces measured MI300X fused-MoE stage times (AITER CK 2-stage kernels,
Qwen3-235B-A22B bf16, TP4 and TP8 shards) on the simulator's mi300x machine.

The measurements are read at run time from
../shared/calibration/mi300x_fused_moe_qwen3_235b_bf16.csv (not part of this
repository: it is never copied here). For each row a scenario is generated
with the row's token count, shard (inter_dim = 1536 / tp), block_m, split-K
and the tiles and CK pipelines read off the kernel names by `tdmsim config aiter-tile`
(moe_ck2stages_gemm1_256x32x64x128_1x4_TypeCast_v1_... -> gate_up_tile 256x32x64x128,
threads x M x N x K, and gate_up_lds_buffers 1, v1's one LDS buffer), and simulated with
`tdmsim run --path software`. The simulated stage times are kernel times
without the host launch overhead, as the measured us1/us2 are.
The scenarios set kernel.source: aiter: the measured kernels are AITER's, not
ours, so the simulator charges none of our kernels' code-object instruction
mix or LDS layout (docs/moe-timing.md "CDNA main-loop issue").

Rows are split into a calibration half and a held-out half by a fixed rule
(alternate rows in the file's order, per shard) before anything is fitted.
With --fit, each value of the fitted parameter is simulated on the
calibration rows only; the value with the lowest fit_objective (the mean of the
total stage time's, stage 1's and stage 2's MAPE) is kept, and both halves are then
reported with it. The held-out rows never
influence the choice.

Fitted parameter (the one the unfitted report pointed at):
  memory.l2.atomic_bytes_per_clock_per_channel of mi300x: the L2 atomic units'
  rate, which bounds the down kernel's scatter-add of every (token, expert)
  output row into the token's row.

validation/report.py writes this report as the MI300X section of
docs/validation.md (collect() and section() below).

Usage:
  validation/calibration/aiter_mi300x.py [--csv PATH] [--tdmsim build/apps/tdmsim/tdmsim]
      [--max-tokens N] [--jobs J] [--fit] [--markdown FILE]
Progress goes to stderr; the Markdown report to --markdown (or stdout)."""
import csv
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402
from tdmsimtools import ROOT, err, mape, spearman  # noqa: E402,F401 (err, mape: aiter_mi355x uses them from here)
from tdmsimtools import report  # noqa: E402


def fit_objective(res):
    """What the fits minimise, in percent: the mean of the total (stage 1 + stage 2) time's
    MAPE, stage 1's and stage 2's (over the 2-stage rows; a 1-stage row has no stage 2).
    Each row measures both stages; on the total alone, stage errors that cancel score as
    well as stages that are right (docs/calibration.md "Kernel boundaries"). Rows: dicts
    with sim1/us1, sim2/us2 and simt, and the measured total under reft (MI300X) or us."""
    key = "reft" if "reft" in res[0] else "us"
    s2 = [r for r in res if r.get("stages", 2) == 2]
    total = mape(res, "simt", key)
    return (total + mape(res, "sim1", "us1") + (mape(s2, "sim2", "us2") if s2 else total)) / 3


HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CSV = os.path.join(os.path.dirname(ROOT), "shared", "calibration",
                           "mi300x_fused_moe_qwen3_235b_bf16.csv")
MODEL_INTER = 1536  # Qwen3-235B-A22B intermediate size (workloads/models/qwen3-235b-a22b.yaml)


def aiter_tile(tdmsim, name, block_m, stage, names=None, one_stage=False, memo={}):
    """(tile, assembly_stage1, lds_buffers, workgroups_per_cu, combine) of a tuned table's tile or kernel name at
    block_m in stage 1 or 2 (one_stage: a run_1stage row's stage-1 name, read as AITER's
    1-stage assembly kernel): tile "" for the default tile of block_m, assembly_stage1
    whether it is AITER's assembly stage-1 kernel (which runs unsplit), lds_buffers the
    LDS buffers of a CK name's pipeline (1 for v1, 2 for v2/v3, 0 where the name gives no
    version: the scenario's kernel.*_lds_buffers), workgroups_per_cu what an assembly stage-1
    kernel's name says of its occupancy (its `_<N>tg`; 0 for any other name: the scenario's
    kernel.gate_up_workgroups_per_cu), combine what a FlyDSL stage-2 name's mode says ("atomic" or
    "reduce": the scenario's kernel.down_combine; "" for any other name); or (None, reason, 0, 0, "") where tdmsim
    refuses the name (exit 2). Asked of `tdmsim config aiter-tile` (plan::read_aiter_tile, the
    reading `tdmsim run --kernel-config` takes), so this script keeps no reading of its
    own. names: the row's (q_dtype_a, q_dtype_w, q_type), which set an assembly kernel's K.
    Any other exit of tdmsim raises RuntimeError."""
    key = (tdmsim, name, block_m, stage, tuple(names or ()), one_stage)
    if key not in memo:
        # --format's three values first: a "--" right after them would only end that list,
        # and the name after "--" may start with "-".
        fmt = ["--format", *names] if names else []
        p = tdmsimtools.tdmsim(tdmsim, "config", "aiter-tile", *fmt, "--block-m", str(block_m), "--stage",
                               str(stage), *(["--one-stage"] if one_stage else []), "--", name)
        if p.returncode == 0:
            kv = dict(line.split(": ", 1) for line in p.stdout.splitlines() if ": " in line)
            memo[key] = ("" if kv["tile"] == "default" else kv["tile"], kv["assembly_stage1"] == "1",
                         int(kv["lds_buffers"]), int(kv["workgroups_per_cu"]),
                         "" if kv["combine"] == "machine" else kv["combine"])
        elif p.returncode == 2:
            why = " ".join(p.stderr.split()).removeprefix("tdmsim: error: ")  # one line, for a table cell
            memo[key] = (None, why or "refused (exit 2)", 0, 0, "")
        else:
            raise RuntimeError(f"tdmsim config aiter-tile {name!r} failed (exit {p.returncode}): {p.stderr.strip()}")
    return memo[key]


def tile_of(tdmsim, r, stage):
    """(CK tile, LDS buffers of its pipeline) of the row's kernelName1 (stage 1) or
    kernelName2 (stage 2)."""
    column = f"kernelName{stage}"
    tile, why, buffers, _, _ = aiter_tile(tdmsim, r[column], int(r["block_m"]), stage,
                                    (r["q_dtype_a"], r["q_dtype_w"], r["q_type"]))
    if not tile:  # refused (None) or the default tile ("")
        raise ValueError(f"{column} {r[column]!r}: {why if tile is None else 'names no CK tile'}")
    return tile, buffers


def aiter_format(tdmsim, q_dtype_a, q_dtype_w, q_type, memo={}):
    """(dtype, weight_dtype, quant, label) of AITER's names, or (None, reason) where tdmsim
    refuses them (exit 2): asked of `tdmsim config aiter-format` (formats_from_aiter,
    workloads/specs/aiter_names.cpp), the one place AITER's names meet the simulator's, so
    this script keeps no table of its own. Any other exit of tdmsim raises RuntimeError."""
    key = (tdmsim, q_dtype_a, q_dtype_w, q_type)
    if key not in memo:
        p = tdmsimtools.tdmsim(tdmsim, "config", "aiter-format", q_dtype_a, q_dtype_w, q_type)
        if p.returncode == 0:
            kv = dict(line.split(": ", 1) for line in p.stdout.splitlines() if ": " in line)
            memo[key] = (kv["dtype"], kv["weight_dtype"], kv["quant"], kv["label"])
        elif p.returncode == 2:
            memo[key] = (None, " ".join(p.stderr.split()).removeprefix("tdmsim: error: ") or "refused (exit 2)")
        else:  # not a refusal: tdmsim failed
            raise RuntimeError(f"tdmsim config aiter-format failed (exit {p.returncode}): {p.stderr.strip()}")
    return memo[key]


def rows_of(path, tdmsim):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    out = []
    seen = {}
    for r in rows:
        inter = int(r["inter_dim"])
        tp = MODEL_INTER // inter
        if tp * inter != MODEL_INTER:
            raise ValueError(f"inter_dim {inter} is not 1536 / tp")
        if int(r["model_dim"]) != 4096 or int(r["expert"]) != 128 or int(r["topk"]) != 8:
            raise ValueError("row is not a Qwen3-235B-A22B shape")
        fm = aiter_format(tdmsim, r["q_dtype_a"], r["q_dtype_w"], r["q_type"])
        if fm[0] is None:
            raise ValueError(f"{path}: format {r['q_dtype_a']} / {r['q_dtype_w']} / {r['q_type']}: {fm[1]}")
        k = seen.setdefault(tp, 0)
        seen[tp] += 1
        (tile1, lds1), (tile2, lds2) = tile_of(tdmsim, r, 1), tile_of(tdmsim, r, 2)
        out.append(dict(
            tokens=int(r["token"]), tp=tp, block_m=int(r["block_m"]),
            split_k=max(1, int(r["ksplit"])), gate_up_tile=tile1, down_tile=tile2,
            gate_up_lds_buffers=lds1, down_lds_buffers=lds2, us1=float(r["us1"]), us2=float(r["us2"]),
            cu_num=int(r["cu_num"]), dtype=fm[0], weight_dtype=fm[1], quant=fm[2],
            role="calibration" if k % 2 == 0 else "held out"))
    return out


def scenario_yaml(r):
    return (f"name: aiter-qwen3-235b-tp{r['tp']}-{r['tokens']}tok\n"
            f"description: AITER CK 2-stage fused MoE, measured on MI300X (calibration CSV)\n"
            f"machine: mi300x\nmodel: qwen3-235b-a22b\ntokens: {r['tokens']}\n"
            f"dtype: {r['dtype']}\nweight_dtype: {r['weight_dtype']}\nquant: {r['quant']}\n"
            f"path: software\nseed: 1\nparallel: {{tp: {r['tp']}}}\n"
            f"routing: {{source: uniform, router_stage: given}}\n"  # AITER times fused_moe alone, no router
            f"kernel: {{source: aiter, stages: 2, block_m: {r['block_m']}, split_k: {r['split_k']}, "
            f"gate_up_tile: {r['gate_up_tile']}, down_tile: {r['down_tile']}, "
            f"gate_up_lds_buffers: {r['gate_up_lds_buffers']}, down_lds_buffers: {r['down_lds_buffers']}, "
            f"raster_group: 1}}\n")  # block after block, as CK orders its grid (docs/moe-plan.md; also the default for source aiter)


FIT_KEY = "atomic_bytes_per_clock_per_channel"
# The fitted pair (atomic rate, kernels.matrix_efficiency), every pair of the two grids.
# The rate bounds the down kernel's scatter-add; the efficiency the compute-bound gate/up
# kernels of prefill (stage 1 ran 41-66% fast at 2048-8192 tokens with 1).
FIT_ATOMIC = (1, 2, 3, 4, 6, 8)
FIT_EFFICIENCY = (0.25, 0.35, 0.5, 0.7, 1.0)


def fit_label(value):
    return f"{FIT_KEY} {value[0]}, matrix_efficiency {value[1]}"


def machine_overlay(folder, value):
    return report.fit_overlay(folder, "mi300x", FIT_KEY, value)


def store_key(tdmsim, sc, machine):
    """What a simulation depends on: the binary (size, mtime), the scenario, the model and the
    machine (overlay and the shipped file it is based on)."""
    return report.store_key(tdmsim, [sc, os.path.join(ROOT, "workloads/models/qwen3-235b-a22b.yaml"),
                                      *report.shipped_machine_inputs("mi300x")] + ([machine] if machine else []))


def simulate(tdmsim, folder, r, machine=None, store=None):
    """One row's simulated stage times. store: a folder of earlier results by store_key."""
    name = f"tp{r['tp']}_{r['tokens']}" + (f"_{os.path.basename(machine)[:-5]}" if machine else "")
    sc = os.path.join(folder, name + ".yaml")
    with open(sc, "w") as f:
        f.write(scenario_yaml(r))
    out = os.path.join(folder, name)
    results = report.ResultStore(store, "mi300x-")
    key = store_key(tdmsim, sc, machine) if store else None
    saved = results.get(key) if key else None
    if saved is not None:
        return dict(r, **saved)
    t0 = time.time()
    s = tdmsimtools.run(tdmsim, sc, out, path="software", machine=machine, label=name)
    stages = {st["stage"]: st for st in s["paths"][0]["stages"]}
    kernel_us = tdmsimtools.kernel_us
    r = dict(r)
    r["sim1"] = kernel_us(stages["gate_up"]) + (kernel_us(stages["reduce"]) if "reduce" in stages else 0)
    r["sim2"] = kernel_us(stages["down"])
    r["wall"] = time.time() - t0
    if key:
        results.put(key, {k: r[k] for k in ("sim1", "sim2", "wall")})
    return r


def table(rows):
    # Simulated times and errors only: the measured values stay in ../shared
    # (the data file is not to be copied into the project).
    lines = ["| tp | tokens | block_m | tiles (gate_up / down) | us1 sim | err | "
             "us2 sim | err | total err | role |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        tot = err(r["sim1"] + r["sim2"], r["us1"] + r["us2"])
        lines.append(f"| {r['tp']} | {r['tokens']} | {r['block_m']} | {r['gate_up_tile']} / "
                     f"{r['down_tile']} | {r['sim1']:.1f} | {100 * err(r['sim1'], r['us1']):+.0f}% | "
                     f"{r['sim2']:.1f} | {100 * err(r['sim2'], r['us2']):+.0f}% | "
                     f"{100 * tot:+.0f}% | {r['role']} |")
    return "\n".join(lines)


def summary(rows):
    out = ["| rows | n | MAPE stage 1 | MAPE stage 2 | MAPE total | median total error | Spearman total | "
           "worst total | beyond ±50% |", "|---|---|---|---|---|---|---|---|---|"]
    for role in ("calibration", "held out", "all"):
        sel = [r for r in rows if role == "all" or r["role"] == role]
        for r in sel:
            r["simt"] = r["sim1"] + r["sim2"]
            r["reft"] = r["us1"] + r["us2"]
        errs = sorted(err(r["simt"], r["reft"]) for r in sel)
        med = errs[len(errs) // 2] if errs else float("nan")
        worst = max(errs, key=abs) if errs else float("nan")
        out.append(f"| {role} | {len(sel)} | {mape(sel, 'sim1', 'us1'):.1f}% | "
                   f"{mape(sel, 'sim2', 'us2'):.1f}% | {mape(sel, 'simt', 'reft'):.1f}% | {100 * med:+.0f}% | "
                   f"{spearman([r['simt'] for r in sel], [r['reft'] for r in sel]):.3f} | {100 * worst:+.0f}% | "
                   f"{sum(1 for e in errs if abs(e) > 0.5)} |")
    return "\n".join(out)


def collect(rows, tdmsim, jobs, fit, quiet=False, cache=None, store=None):
    """Simulates the rows (with fit: first the fit grid on the calibration rows, then
    all rows with the chosen value). cache: {(fit value or 0, tp, tokens): (sim1, sim2,
    wall)} replaces tdmsim (a missing entry is an error). Returns (rows with sim1/sim2,
    the fit table's lines, the simulated times as dicts for a cache)."""
    t0 = time.time()
    sims = []

    def one(folder, r, value, machine):
        if cache is not None:
            key = (value or (0, 0), r["tp"], r["tokens"])
            if key not in cache:
                raise RuntimeError(f"no cached MI300X simulation for tp {r['tp']}, {r['tokens']} tokens"
                                   + (f", {fit_label(value)}" if value else "") + ": run without --no-sim")
            out = dict(r)
            out["sim1"], out["sim2"], out["wall"] = cache[key]
            return out
        return simulate(tdmsim, folder, r, machine, store)

    def run_all(folder, selection, value, label):
        machine = machine_overlay(folder, value) if value and cache is None else None
        return report.parallel(
            lambda r: one(folder, r, value, machine), selection, jobs, label, t0=t0, quiet=quiet,
            on_result=lambda d: sims.append(dict(value=value or (0, 0), tp=d["tp"], tokens=d["tokens"],
                                                 sim1=d["sim1"], sim2=d["sim2"], wall=d["wall"])))

    fit_lines = []
    with tempfile.TemporaryDirectory() as tmp:
        value = None
        if fit:
            calibration = [r for r in rows if r["role"] == "calibration"]
            scores = {}
            fit_lines = [f"| `memory.l2.{FIT_KEY}` | `kernels.matrix_efficiency` | objective | "
                         "calibration MAPE (total) | stage 1 | stage 2 |", "|---|---|---|---|---|---|"]

            def score(v):
                if v not in scores:
                    res = run_all(tmp, calibration, v, f"MI300X fit {fit_label(v)}")
                    for r in res:
                        r["simt"], r["reft"] = r["sim1"] + r["sim2"], r["us1"] + r["us2"]
                    scores[v] = fit_objective(res)
                    fit_lines.append(f"| {v[0]} | {v[1]} | {scores[v]:.1f}% | {mape(res, 'simt', 'reft'):.1f}% | "
                                     f"{mape(res, 'sim1', 'us1'):.1f}% | {mape(res, 'sim2', 'us2'):.1f}% |")
                return scores[v]

            # Every pair of the two grids (30 points of 14 rows: a minute or two on 2 cores);
            # one parameter after the other stopped in a different corner as the model
            # changed (2026-12-06).
            value = min(((a, e) for a in FIT_ATOMIC for e in FIT_EFFICIENCY), key=lambda v: (score(v), v))
            edge = [name for name, g, x in (("rate", FIT_ATOMIC, value[0]), ("efficiency", FIT_EFFICIENCY, value[1]))
                    if x in (g[0], g[-1])]
            fit_lines.append(f"\nChosen: {fit_label(value)} (lowest objective: the mean of the total's, stage 1's "
                             "and stage 2's calibration MAPE)"
                             + (f"; at the edge of the grid in {', '.join(edge)}." if edge else
                                "; inside the grid in both parameters."))
        done = run_all(tmp, rows, value, "MI300X report")
    done.sort(key=lambda r: (r["tp"], r["tokens"]))
    return done, fit_lines, sims


TITLE = "# Validation: MoE layer times against measurements\n\n"
SHARED_CSV_NAME = "../shared/calibration/mi300x_fused_moe_qwen3_235b_bf16.csv"


def section(done, fit_lines):
    """The MI300X section of docs/validation.md (a level-2 heading and its body)."""
    text = (
        "## MI300X, AITER CK 2-stage fused MoE, Qwen3-235B-A22B bf16 (TP4, TP8)\n\n"
        f"Measured: `{SHARED_CSV_NAME}`, read at run time and\n"
        "not copied here. Each row is reproduced as a scenario on the `mi300x` machine, with the\n"
        "row's tokens, shard, block_m, split-K, and the tiles and CK pipelines (v1: one LDS buffer, v3:\n"
        "two; `kernel.gate_up_lds_buffers` / `down_lds_buffers`) in its kernel names. Uniform routing\n"
        "(seed 1) stands in for the benchmark's random top-k. The simulated times are kernel times\n"
        "without launch overhead, as us1 and us2 are, and with no router (`routing.router_stage:\n"
        "given`: AITER times fused_moe alone). Calibration and held-out rows alternate\n"
        "in the file's order per shard, and were fixed before any fit. Error = simulated /\n"
        "measured - 1; the measured times themselves are only in the data file.\n\n")
    if fit_lines:
        text += ("### Fit (calibration rows only)\n\n" + "\n".join(fit_lines) + "\n\n"
                 "### Error with the fitted value\n\n")
    return (text + summary(done) + "\n\n### Per row\n\n" + table(done) + "\n\n"
            f"Simulation wall time: {sum(r['wall'] for r in done):.0f} s over {len(done)} rows "
            f"(longest {max(r['wall'] for r in done):.0f} s).\n")


def skipped_section(path):
    return report.skipped_section("MI300X, AITER CK 2-stage fused MoE, Qwen3-235B-A22B bf16 (TP4, TP8)",
                                  path, SHARED_CSV_NAME)


def main():
    ap = report.calibration_arguments(
        __doc__.splitlines()[0], DEFAULT_CSV, os.cpu_count() or 1,
        fit_help=f"fit {FIT_KEY} on the calibration rows before reporting",
        store_help="folder keeping each simulation's result, so that a rerun simulates only what changed")
    args = ap.parse_args()
    report.require_csv(args.csv)
    rows = [r for r in rows_of(args.csv, args.tdmsim) if r["tokens"] <= args.max_tokens]
    done, fit_lines, _ = collect(rows, args.tdmsim, args.jobs, args.fit, store=args.store)
    command = report.script_command("validation/calibration/aiter_mi300x.py")
    report.emit(TITLE + report.generated_header(command) + section(done, fit_lines), args.markdown)


if __name__ == "__main__":
    main()
