#!/usr/bin/env python3
"""Reproduces published AITER fused-MoE times on MI355X (five tuned tables: DeepSeek-V3
fp8 block-scale and MXFP4, gpt-oss MXFP4, GLM-5 MXFP8, Qwen3-235B bf16) on the
simulator's mi355x machine, and fits the L2 atomic rate of mi355x on the calibration half.

The measurements are read at run time from
../shared/calibration/mi355x_fused_moe_aiter_tuned.csv (never copied here). Each row
becomes a scenario: a model file with the row's shape (model_dim = hidden size, inter_dim
= the shard's intermediate size, expert/topk; 257 experts top-9 = DeepSeek-V3's 256
routed + 1 shared expert fused into the routing, as AITER runs it), the row's dtype and
quantisation (FORMATS below, the only place the CSV's names are mapped), tokens,
block_m, split-K, tiles and stages:

- `run_1stage 1`: kernel.stages 1 and no tile, so that the simulator's heuristic gives
  the layer AITER's 1-stage assembly kernel tile (subGU_m = block_m rows by subGU_n
  intermediate columns, 256 threads, subGU_n by AITER's rule: docs/moe-timing.md). The
  measured time is us1 (us2 is 0): stage 1 of the report.
- `run_1stage 0`: kernel.stages 2, tile1/tile2 as CK names THREADSxMxNxK; an empty tile
  name (the assembly and FlyDSL kernels of the tuned tables name no CK tile) takes the
  simulator's heuristic tile for the row's block_m.

Every scenario sets kernel.source: aiter: the measured kernels are AITER's, so none of
our kernels' code-object instruction mix or LDS layout is charged (docs/moe-timing.md
"CDNA main-loop issue").

Each row's format comes from `tdmsim config aiter-format` (formats_from_aiter, the
project's one mapping of AITER's q_dtype_a / q_dtype_w / q_type names). A row of AITER's
names that the simulator refuses is listed as not simulated, with the reason; names that
are not AITER's at all stop the script (exit 2, naming the file and line).

Calibration and held-out halves alternate in the file's order per source table, fixed
before anything is fitted. With --fit, memory.l2.atomic_bytes_per_clock_per_channel
(FIT_ATOMIC) and kernels.matrix_efficiency (FIT_EFFICIENCY) are searched one after the
other (rate, efficiency, rate, efficiency) on every calibration row (fit_rows); the pair
with the lowest aiter_mi300x.fit_objective (the mean of the total time's, stage 1's and, on 2-stage
rows, stage 2's MAPE) is kept, and both halves are then reported with it.
--store keeps every simulation's result, so a rerun simulates only what changed.

The roofline beside it is the plain one on the same rows: max(useful matrix FLOPs /
peak, compulsory bytes / HBM bandwidth), the `floor.us` of `tdmsim run`'s summary.

Usage:
  validation/calibration/aiter_mi355x.py [--csv PATH] [--tdmsim build/apps/tdmsim/tdmsim]
      [--max-tokens N] [--lines L1,L2,...] [--jobs J] [--fit] [--store DIR] [--markdown FILE]
validation/report.py writes this report as the MI355X section of docs/validation.md."""
import csv
import json
import os
import sys
import tempfile
import threading
import time

import aiter_mi300x
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402
from tdmsimtools import ROOT, err  # noqa: E402
from tdmsimtools import report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CSV = os.path.join(os.path.dirname(ROOT), "shared", "calibration",
                           "mi355x_fused_moe_aiter_tuned.csv")
SHARED_CSV_NAME = "../shared/calibration/mi355x_fused_moe_aiter_tuned.csv"
MACHINE = "mi355x"



aiter_format = aiter_mi300x.aiter_format


FIT_KEY = "atomic_bytes_per_clock_per_channel"
# The fitted parameters of mi355x and their grids (calibration rows only): the L2
# atomic units' rate (memory.l2), which bounds the combine of the 1-stage kernel and of
# the 2-stage down kernel, and the MoE main loops' fraction of the matrix rate
# (kernels.matrix_efficiency), which the compute-bound gate/up kernels of prefill show.
FIT_ATOMIC = (2, 3, 4, 6, 8, 12)
FIT_EFFICIENCY = (0.25, 0.35, 0.5, 0.7, 1.0)
FIT_START_EFFICIENCY = 0.7  # where the search starts (the efficiency before the 2026-12-02 fit)
# The fit scores every calibration row. (A third of them, those of at most 8192 tokens,
# was scored before for CPU cost: it leaves out the compute-bound prefill rows that pin
# the efficiency, and with the run-ahead model it chose 3 and 1.0, 15.0% on all
# calibration rows against 12.0% at 4 and 0.35: docs/calibration.md.) About 22 CPU
# minutes for the whole search (3 min on 16 cores; --store keeps every simulation).
FIT_SUBSAMPLE_RULE = "every calibration row"


def fit_rows(rows):
    return [r for r in rows if r["role"] == "calibration"]


def regime(tokens):
    return "decode (<=64)" if tokens <= 64 else "prefill (>=1024)" if tokens >= 1024 else "mid (65-1023)"


def rows_of(path, tdmsim):
    """The file's rows; each row's format through `tdmsim config aiter-format`. A row whose
    names match no supported format keeps dtype None and the reason in `why`."""
    with open(path) as f:
        raw = list(csv.DictReader(f))
    out, seen = [], {}
    for i, r in enumerate(raw, start=2):
        fm = aiter_format(tdmsim, r["q_dtype_a"], r["q_dtype_w"], r["q_type"])
        names = f"{r['q_dtype_a']} / {r['q_dtype_w']} / {r['q_type']}"
        if fm[0] is None and not fm[1].startswith("AITER quantisation"):
            # Not AITER's names at all (formats_from_aiter's other messages): bad input.
            raise ValueError(f"{path}:{i}: format {names}: {fm[1]}")
        if fm[0] is None:  # AITER's names of a combination the simulator refuses: listed, with why
            dtype, wdtype, quant, label, why = None, None, None, names, fm[1]
        else:
            (dtype, wdtype, quant, label), why = fm, ""
        src = r["source"]
        k = seen.setdefault(src, 0)
        seen[src] += 1
        one = int(r["run_1stage"]) == 1
        row = dict(line=i, source=src, tokens=int(r["token"]), hidden=int(r["model_dim"]),
                   inter_dim=int(r["inter_dim"]), expert=int(r["expert"]), topk=int(r["topk"]),
                   dtype=dtype, weight_dtype=wdtype, quant=quant, format=label, why=why, block_m=int(r["block_m"]),
                   split_k=1 if one else max(1, int(r["ksplit"])), stages=1 if one else 2,  # (no split in 1 stage)
                   tile1=r["tile1"].strip(), tile2=r["tile2"].strip(),
                   us1=float(r["us1"]), us2=float(r["us2"]), us=float(r["us"]),
                   role="calibration" if k % 2 == 0 else "held out", machine=MACHINE, file=SHARED_CSV_NAME,
                   activation=activation_of(path, i, r["act_type"]))
        if one:  # the 1-stage kernels are AITER's assembly kernels: the simulator's heuristic picks their tile
            row["tile1"] = row["tile2"] = ""
        out.append(row)
    return out


# AITER's act_type -> the model's activation keys. AITER's Swiglu is gpt-oss's clamped
# SwiGLU (alpha 1.702, (up + 1), limit 7.0: huggingface.co/openai/gpt-oss-120b config.json
# swiglu_limit), the rows of gptoss_fp4_tuned_fmoe.csv.
ACTIVATIONS = {
    "ActivationType.Silu": "activation: silu",
    "ActivationType.Swiglu": "activation: swiglu_oai\nactivation_limit: 7.0",
    "ActivationType.Gelu": "activation: gelu",
}


def activation_of(path, line, act_type):
    if act_type.strip() not in ACTIVATIONS:
        raise ValueError(f"{path}:{line}: act_type {act_type!r}: not one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[act_type.strip()]


def fused_shared_expert(expert, topk):
    """Whether AITER's expert/topk count a shared expert fused into the routing, as the
    DeepSeek-V3 family runs: 256, 384 or 160 routed experts + 1 shared, top-8 + 1 (257 top-9
    DeepSeek-V3, 385 top-9 Kimi K2, 161 top-9 GLM-4.5), every token's last row going to the
    shared expert. The rule: an odd count whose routed part is a multiple of 32 and at least
    128, with topk above 1. An expert-parallel shard's 33 experts top-8 (32 local + 1, the
    dsv3_fp4 rows of the MI355X file) stay 33 plain experts, as the calibration has them."""
    routed = expert - 1
    return expert % 2 == 1 and routed % 32 == 0 and routed >= 128 and topk > 1


def model_yaml(r):
    """A model file of the row's shape, with a fused shared expert where
    fused_shared_expert says so, and the routed weight on the expert's input where the row
    says doweight_stage1 (`weight_on_input`, rows of aiter_tuned.py)."""
    routed, top, shared = r["expert"], r["topk"], 0
    if fused_shared_expert(r["expert"], r["topk"]):
        routed, top, shared = r["expert"] - 1, r["topk"] - 1, 1
    return (f"kind: model\nname: aiter-shape-{r['hidden']}-{r['inter_dim']}-{r['expert']}-{r['topk']}\n"
            f"description: shape of an AITER tuned-table row (validation/calibration/aiter_mi355x.py)\n"
            f"source: {json.dumps(r['file'])}\n"
            f"hidden_size: {r['hidden']}\nintermediate_size: {r['inter_dim']}\n"
            f"experts: {routed}\ntop_k: {top}\nshared_experts: {shared}\n"
            f"shared_intermediate_size: {r['inter_dim'] if shared else 0}\n"
            f"gating: {{scoring: softmax, renormalize: true"
            f"{', weight_on_input: true' if r.get('weight_on_input') else ''}}}\n{r['activation']}\n"
            f"layers: {{moe: 1, total: 1}}\n")


def scenario_yaml(r, model_path):
    # Text from the CSV (tile names, the source table, the file's path) goes in as JSON
    # strings, which YAML reads as they are whatever they hold.
    kernel = f"stages: {r['stages']}, block_m: {r['block_m']}, split_k: {r['split_k']}"
    if r["tile1"]:
        kernel += f", gate_up_tile: {json.dumps(r['tile1'])}"
    if r["tile2"]:
        kernel += f", down_tile: {json.dumps(r['tile2'])}"
    # A CK name's pipeline, an assembly stage-1 name's workgroups a CU and a FlyDSL stage-2
    # name's combine (aiter_tuned.py's rows; the calibration file's short names give none).
    for key, column in (("gate_up_lds_buffers", "lds_buffers1"), ("down_lds_buffers", "lds_buffers2"),
                        ("gate_up_workgroups_per_cu", "workgroups_per_cu1"), ("down_combine", "combine2")):
        if r.get(column):
            kernel += f", {key}: {r[column]}"
    description = f"AITER fused MoE on {r['machine']}, {r['source']} ({r['file']})"
    return (f"kind: scenario\nname: aiter-{r['machine']}-line{r['line']}\n"
            f"description: {json.dumps(description)}\n"
            f"machine: {r['machine']}\nmodel: {json.dumps(model_path)}\ntokens: {r['tokens']}\n"
            f"dtype: {r['dtype']}\nweight_dtype: {r['weight_dtype']}\nquant: {r['quant']}\npath: software\nseed: 1\n"
            f"routing: {{source: uniform, router_stage: given}}\n"  # AITER times fused_moe alone, no router
            f"kernel: {{source: aiter, {kernel}, raster_group: 1}}\n")


def write_case(folder, r):
    name = r.get("case", f"line{r['line']}")
    model = os.path.join(folder, name + "-model.yaml")
    with open(model, "w") as f:
        f.write(model_yaml(r))
    sc = os.path.join(folder, name + ".yaml")
    with open(sc, "w") as f:
        f.write(scenario_yaml(r, model))
    return name, sc


def expressible(tdmsim, folder, rows):
    """{format label: reason or ""}: why a scenario of the format cannot be simulated; ""
    where `tdmsim config aiter-format` maps the names and `tdmsim config validate` accepts a
    scenario of the format (one probe per format, on its first row)."""
    ok = {}
    for r in rows:
        if r["format"] in ok:
            continue
        if r["dtype"] is None:
            ok[r["format"]] = r["why"]
            continue
        _, sc = write_case(folder, r)
        p = tdmsimtools.tdmsim(tdmsim, "config", "validate", sc)
        ok[r["format"]] = "" if p.returncode == 0 else p.stderr.strip().splitlines()[0]
    return ok


def fit_label(value):
    return f"{FIT_KEY} {value[0]}, matrix_efficiency {value[1]}"


def machine_overlay(folder, value):
    return report.fit_overlay(folder, MACHINE, FIT_KEY, value)


def store_key(tdmsim, sc, machine, name=MACHINE):
    """What a simulation depends on: the binary (size, mtime), the scenario and model files
    (with the temporary folder's name taken out) and the machine (the shipped file `name`
    and the overlay)."""
    paths = [sc, sc.replace(".yaml", "-model.yaml"),
             *report.shipped_machine_inputs(name)] + (machine if isinstance(machine, list) else
                                                         [machine] if machine else [])
    return report.store_key(tdmsim, paths, strip=os.path.dirname(sc))


def two_combines(r):
    """Whether the row's stage 2 may be AITER's FlyDSL MXFP4 kernel, which has two combines:
    atomic adds into the output, or `reduce` (plain stores of every (token, slot) row, then
    `target.view(tokens, topk, H).sum(dim=1)` and `out.copy_`: aiter/ops/flydsl moe kernels,
    `get_flydsl_stage2_kernels` modes "atomic" and "reduce", registered for 4-bit weights).
    The rows that name no stage-2 tile (not a CK kernel) with fp4 weights, 2-stage."""
    return r["stages"] == 2 and not r["tile2"] and "fp4" in (r["weight_dtype"] or "")


def reduce_overlay(folder, machine, name=MACHINE):
    """A machine file over `machine` (an overlay of a fit grid point, or the shipped file
    `name`) with kernels.combine reduce."""
    path = (machine or os.path.join(folder, name)).replace(".yaml", "") + "_reduce.yaml"
    # Written whole under a name of this thread's, then renamed over: the rows of a grid
    # point write it from several threads, and a reader must never see it half written.
    tmp = f"{path}.tmp.{threading.get_ident()}"
    with open(tmp, "w") as f:
        f.write(f"kind: machine\nbase: {machine or report.shipped_machine(name)}\n"
                f"name: {name}\nkernels: {{combine: reduce}}\n")
    os.replace(tmp, path)
    return path


def simulate(tdmsim, folder, r, machine=None, tag="", store=None, both_combines=False):
    """One row's simulated stage times. store: a folder of earlier results by store_key, so a
    grid point's rows are simulated once (a temporary folder: --store). With both_combines
    (--two-combines), a row with two combines (two_combines) is simulated with each and
    keeps the faster stage 2, as AITER's tuner keeps the fastest candidate kernel
    (r["combine"] says which)."""
    name, sc = write_case(folder, r)
    machines = [machine] + ([reduce_overlay(folder, machine, r["machine"])] if both_combines and two_combines(r)
                            else [])
    results = report.ResultStore(store)
    key = store_key(tdmsim, sc, [m for m in machines if m], r["machine"]) if store else None
    saved = results.get(key) if key else None
    if saved is not None and "kernel" in saved:  # a result stored without the kernel line is simulated again
        return dict(r, **saved)
    t0 = time.time()
    r = dict(r)
    # The first run's combine: what the row's FlyDSL stage-2 name says (kernel.down_combine,
    # aiter_tuned.py's rows), else atomic.
    for second, (m, combine) in enumerate(zip(machines, (r.get("combine2") or "atomic", "reduce"))):
        out = os.path.join(folder, name + tag + ("-reduce" if combine == "reduce" else ""))
        s = tdmsimtools.run(tdmsim, sc, out, path="software", machine=m, label=f"line {r['line']}")
        path = s["paths"][0]
        by = tdmsimtools.stage_times(s, kernel_only=True)
        # Stage 1: gate/up (with its split-K reduction), or the fused kernel; stage 2: down
        # (with the reduce combine's sum and copy). The sort is not in AITER's us1/us2 (its
        # tuner times the GEMM kernels alone).
        sim2 = by.get("down", 0.0) + by.get("combine", 0.0)
        if second and sim2 >= r["sim2"]:  # the reduce combine keeps the faster stage 2
            continue
        r["sim1"] = by.get("fused", 0.0) + by.get("gate_up", 0.0) + by.get("reduce", 0.0) + by.get("quant_inter", 0.0)
        r["sim2"] = sim2
        r["combine"] = combine
        r["roof"] = path["floor"]["us"]
        r["kernel"] = s["layer"]["kernel_reason"]  # what ran and why (the printed kernel: line)
    r["simt"] = r["sim1"] + r["sim2"]
    r["wall"] = time.time() - t0
    if key:
        results.put(key, {k: r[k] for k in ("sim1", "sim2", "simt", "roof", "wall", "combine", "kernel")})
    return r


def collect(rows, tdmsim, jobs, fit, quiet=False, cache=None, store=None, both_combines=False):
    """Simulates the expressible rows (with fit: the grid on the calibration rows first).
    cache: {((atomic, efficiency) or (0, 0), line): (sim1, sim2, roof, wall, combine)} replaces tdmsim. Returns
    (simulated rows, rows not yet expressible, fit lines, chosen value, sims for a cache)."""
    t0 = time.time()
    sims = []
    with tempfile.TemporaryDirectory() as tmp:
        if cache is None:
            why = expressible(tdmsim, tmp, rows)
        else:
            lines = {k[1] for k in cache}
            why = {}
            for r in rows:
                if why.get(r["format"]) != "":
                    why[r["format"]] = "" if r["line"] in lines else (r["why"] or "not in the saved predictions")
        todo = [r for r in rows if not why[r["format"]]]
        missing = [dict(r, why=why[r["format"]]) for r in rows if why[r["format"]]]

        def one(r, value, machine):
            if cache is not None:
                key = (value or (0, 0), r["line"])
                if key not in cache:
                    raise RuntimeError(f"no cached MI355X simulation for line {r['line']}: run without --no-sim")
                out = dict(r)
                out["sim1"], out["sim2"], out["roof"], out["wall"], out["combine"] = cache[key]
                out["simt"] = out["sim1"] + out["sim2"]
                return out
            return simulate(tdmsim, tmp, r, machine, f"-{value[0]}-{value[1]}" if value else "", store,
                            both_combines)

        def run_all(selection, value, label):
            machine = machine_overlay(tmp, value) if value and cache is None else None
            return report.parallel(
                lambda r: one(r, value, machine), selection, jobs, label, t0=t0, quiet=quiet,
                on_result=lambda d: sims.append(dict(value=value or (0, 0), line=d["line"], sim1=d["sim1"],
                                                     sim2=d["sim2"], roof=d["roof"], wall=d["wall"],
                                                     combine=d.get("combine", "atomic"))))

        fit_lines, value = [], None
        if fit:
            calibration = fit_rows(todo)
            scores = {}
            fit_lines = [f"| `memory.l2.{FIT_KEY}` | `kernels.matrix_efficiency` | objective | "
                         "calibration MAPE (total) | stage 1 | stage 2 | Spearman |", "|---|---|---|---|---|---|---|"]

            def score(v):
                if v not in scores:
                    res = run_all(calibration, v, f"MI355X fit {fit_label(v)}")
                    scores[v] = aiter_mi300x.fit_objective(res)
                    s2 = [r for r in res if r["stages"] == 2]
                    fit_lines.append(f"| {v[0]} | {v[1]} | {scores[v]:.1f}% | {aiter_mi300x.mape(res, 'simt', 'us'):.1f}% | "
                                     f"{aiter_mi300x.mape(res, 'sim1', 'us1'):.1f}% | "
                                     f"{aiter_mi300x.mape(s2, 'sim2', 'us2'):.1f}% | "
                                     f"{spearman([r['simt'] for r in res], [r['us'] for r in res]):.3f} |")
                return scores[v]

            # Coordinate search: the atomic rate at the start efficiency, the efficiency at the
            # best rate, the rate again at the best efficiency, the efficiency again at that
            # rate (each point simulated once).
            value = (FIT_ATOMIC[1], FIT_START_EFFICIENCY)
            for axis in (0, 1, 0, 1):
                grid = FIT_ATOMIC if axis == 0 else FIT_EFFICIENCY
                value = min(((g, value[1]) if axis == 0 else (value[0], g) for g in grid),
                            key=lambda v: (score(v), v))
            edge = [name for name, g, x in (("rate", FIT_ATOMIC, value[0]), ("efficiency", FIT_EFFICIENCY, value[1]))
                    if x in (g[0], g[-1])]
            fit_lines.append(f"\nChosen: {fit_label(value)} (lowest objective: the mean of the total's, stage "
                             f"1's and stage 2's calibration MAPE, on "
                             f"{len(calibration)} calibration rows: {FIT_SUBSAMPLE_RULE})"
                             + (f"; at the edge of the grid in {', '.join(edge)}." if edge else
                                "; inside the grid in both parameters."))
        done = run_all(todo, value, "MI355X report")
    done.sort(key=lambda r: r["line"])
    return done, missing, fit_lines, value, sims


spearman = tdmsimtools.spearman


def stats(sel, key_sim="simt", key_ref="us"):
    if not sel:
        return dict(n=0, mape=float("nan"), spearman=float("nan"), worst=None, beyond=0)
    errs = [err(r[key_sim], r[key_ref]) for r in sel]
    worst = max(range(len(sel)), key=lambda i: abs(errs[i]))
    return dict(n=len(sel), mape=100 * sum(abs(e) for e in errs) / len(errs),
                spearman=spearman([r[key_sim] for r in sel], [r[key_ref] for r in sel]),
                worst=(sel[worst], errs[worst]), beyond=sum(1 for e in errs if abs(e) > 0.5))


def fmt_stats(s):
    if not s["n"]:
        return "| 0 | | | | |"
    w, e = s["worst"]
    return (f"| {s['n']} | {s['mape']:.1f}% | {s['spearman']:.3f} | {100 * e:+.0f}% (line {w['line']}, "
            f"{w['tokens']} tok) | {s['beyond']} |")


def summary(done):
    out = ["| rows | split | n | MAPE total | Spearman | worst | beyond ±50% |", "|---|---|---|---|---|---|---|"]
    groups = [("all rows", lambda r: True)]
    groups += [(f"format {f}", (lambda f: lambda r: r["format"] == f)(f))
               for f in sorted({r["format"] for r in done})]
    groups += [(f"regime {g}", (lambda g: lambda r: regime(r["tokens"]) == g)(g))
               for g in ("decode (<=64)", "mid (65-1023)", "prefill (>=1024)")]
    groups += [("1-stage (run_1stage 1)", lambda r: r["stages"] == 1),
               ("2-stage (run_1stage 0)", lambda r: r["stages"] == 2)]
    for label, pred in groups:
        for role in ("calibration", "held out"):
            sel = [r for r in done if pred(r) and r["role"] == role]
            out.append(f"| {label} | {role} " + fmt_stats(stats(sel)))
    return "\n".join(out)


def stage_table(done):
    out = ["| split | stage 1 MAPE (gate/up or fused) | stage 2 MAPE (down, 2-stage rows) |", "|---|---|---|"]
    for role in ("calibration", "held out"):
        sel = [r for r in done if r["role"] == role]
        s2 = [r for r in sel if r["stages"] == 2]
        out.append(f"| {role} | {aiter_mi300x.mape(sel, 'sim1', 'us1'):.1f}% | "
                   f"{aiter_mi300x.mape(s2, 'sim2', 'us2'):.1f}% |")
    return "\n".join(out)


def roofline_table(done):
    out = ["| split | n | simulator MAPE | Spearman | roofline MAPE | Spearman | worst roofline | "
           "rows where the roofline is closer |", "|---|---|---|---|---|---|---|---|"]
    for role in ("calibration", "held out", "all"):
        sel = [r for r in done if role == "all" or r["role"] == role]
        s, f = stats(sel), stats(sel, "roof")
        w = f"{100 * f['worst'][1]:+.0f}%" if f["worst"] else ""
        closer = [r for r in sel if abs(err(r["roof"], r["us"])) < abs(err(r["simt"], r["us"]))]
        lines = ", ".join(str(r["line"]) for r in closer)
        out.append(f"| {role} | {s['n']} | {s['mape']:.1f}% | {s['spearman']:.3f} | {f['mape']:.1f}% | "
                   f"{f['spearman']:.3f} | {w} | {len(closer)}" + (f" ({'line' if len(closer) == 1 else 'lines'} {lines})" if closer and role != "all" else "")
                   + " |")
    return "\n".join(out)


def table(done):
    lines = ["| line | source | format | tokens | E/topk | I | stages | block_m | tiles | sim us1 | err | "
             "sim us2 | err | total err | roofline err | role |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in done:
        e2 = f"{100 * err(r['sim2'], r['us2']):+.0f}%" if r["stages"] == 2 and r["us2"] > 0 else ""
        tiles = (r["tile1"] + (" / " + r["tile2"] if r["tile2"] else "") if r["tile1"] or r["tile2"]
                 else "AITER 1-stage" if r["stages"] == 1 else "heuristic")
        if r.get("combine") == "reduce":
            tiles += ", reduce"
        lines.append(f"| {r['line']} | {r['source'].replace('.csv', '')} | {r['format']} | {r['tokens']} | "
                     f"{r['expert']}/{r['topk']} | {r['inter_dim']} | {r['stages']} | {r['block_m']} | {tiles} | "
                     f"{r['sim1']:.1f} | {100 * err(r['sim1'], r['us1']):+.0f}% | {r['sim2']:.1f} | {e2} | "
                     f"{100 * err(r['simt'], r['us']):+.0f}% | {100 * err(r['roof'], r['us']):+.0f}% | {r['role']} |")
    return "\n".join(lines)


def missing_table(missing):
    if not missing:
        return "Every row's format is expressible: all rows are simulated.\n"
    counts = {}
    for r in missing:
        key = (r["format"], r["why"])
        counts.setdefault(key, [0, 0])
        counts[key][0 if r["role"] == "calibration" else 1] += 1
    out = ["| format (AITER names) | why it is not simulated | rows (calibration / held out) |", "|---|---|---|"]
    for (label, why), (c, h) in sorted(counts.items()):
        out.append(f"| {label} | {why} | {c + h} ({c} / {h}) |")
    return ("**Not simulated** (the reason is `tdmsim config aiter-format`'s or "
            "`tdmsim config validate`'s):\n\n" + "\n".join(out) + "\n")


def section(done, missing, fit_lines, value):
    text = (
        "## MI355X, AITER fused MoE (five tuned tables: fp8 block-scale, MXFP4, MXFP8, bf16)\n\n"
        f"Measured: `{SHARED_CSV_NAME}`, read at run time and not copied here. Each row\n"
        "is reproduced as a scenario on the `mi355x` machine with the row's shape (257 experts\n"
        "top-9 = 256 routed + 1 shared expert fused in), format (AITER's q_dtype_a / q_dtype_w /\n"
        "q_type through `tdmsim config aiter-format`, the project's one mapping), tokens, block_m,\n"
        "split-K, stages (`run_1stage`) and tiles (CK names; an empty name takes the heuristic tile of the\n"
        "row's block_m; a 1-stage row takes AITER's assembly kernel tile, docs/moe-timing.md).\n"
        "Uniform routing (seed 1). Simulated times are kernel times without launch overhead and\n"
        "without the sort, as AITER's tuner times us1/us2, and with no router (`routing.router_stage:\n"
        "given`). Calibration and held-out rows alternate in\n"
        "the file's order per source table, fixed before the fit. Error = simulated / measured - 1;\n"
        "the measured times themselves are only in the data file. Regimes: decode <= 64 tokens,\n"
        "prefill >= 1024.\n\n" + missing_table(missing) + "\n")
    if fit_lines:
        text += "### Fit (calibration rows only)\n\n" + "\n".join(fit_lines) + "\n\n"
    else:
        text += ("The fitted values (`memory.l2.atomic_bytes_per_clock_per_channel`, "
                 "`kernels.matrix_efficiency`) are the machine file's; their fit on the calibration rows is in "
                 "docs/calibration.md (`--fit`, or validation/report.py `--mi355x-fit`, reruns it).\n\n")
    text += ("### Error" + (f" with {fit_label(value)}" if value else " (the machine file's values)") + "\n\n" + summary(done) +
             "\n\n### Per stage\n\n" + stage_table(done) +
             "\n\n### Against a plain roofline (max(FLOPs / peak, bytes / HBM bandwidth))\n\n" +
             roofline_table(done) + "\n\n### Rows beyond ±50%\n\n" + beyond_table(done) + beyond_note(done) +
             "\n### Per row\n\n" + table(done) + "\n\n" +
             (f"Simulation wall time: {sum(r['wall'] for r in done):.0f} s over {len(done)} rows "
              f"(longest {max(r['wall'] for r in done):.0f} s).\n" if done else ""))
    return text


BEYOND_NOTE = """
Evidence, for what no model change here explains (docs/moe-timing.md "Accuracy (MI355X)"):
the fp8 block-scale CK down kernel `256x64x128x128` at 128 experts, I = 384 (lines 2-6) costs
about ten times more per routed row than the bf16 CK down kernel of the same shape (Qwen3-235B
rows), though the bf16 kernel reads twice the weight bytes: no machine rate (L2 atomics, HBM,
MFMA) can be slow for one and not the other. The sources rule out the candidates checked:
both AITER instances add their rows into the bf16 output two values at a time (`EVec = 2` in
`gemm_moe_ck2stages_common_blockscale.cuh` and `gemm_moe_ck2stages_common.cuh`: the same packed
bf16 atomic, no fp32 buffer or cast); K = 384 is three whole K tiles of 128 (no padding); AITER's
tuner (`gemm_moe_tune.py`) sorts before either stage, quantises the intermediate per 1x128 in
its timed stage 1 and times stage 2 as a `torch.zeros` of the output plus the kernel. What sets
the instance apart is its pipeline: for block_m 64 AITER builds CK's v3 pipeline (two LDS buffers;
`gen_instances.py` `A8W8_blockscale_gemm2_heuristic_dispatch`, `a8w8_gemm2_blockscale_kernels_list`),
for the 16- and 32-row instances (lines 7, 13, 18-22: stage 2 {v1_range} here) v1; but the
simulated down stage did not depend on its occupancy (2026-12-03, commit 102cda8's model: one
workgroup per CU instead of two gave 32.0-43.5 against 33.8-43.8 us over lines 2-6, published
59.9-247.7). The MXFP4 down stages at prefill (line 42, +55% until 2026-12-06) came within
±50% when the atomic units' adds stopped overlapping the next workgroups' matrix work
(`memory.l2.atomic_sharing: workgroups`, refitted rate 6; docs/moe-timing.md "AITER's 1-stage kernels and the combine (MI-series)", its item on how the atomic
units are shared). The gpt-oss
I = 3072 rows (8192-32768 tokens) break their own series' scaling: the published cost per token
rises from 4096 to 8192 tokens in both stages, which no kernel of fixed efficiency does, nor a
power-limited clock: matching stage 1 would take 1641, 830, 1055 and 1761 MHz at 4096,
8192, 16384 and 32768 tokens (the simulated gate/up kernels are matrix-bound, 85-97% busy),
while a clock set by the power limit falls steadily with that activity (a trial `power:`
section gives 1911, 1788, 1682 and 1655 MHz). mi355x has no `power:` section: no sustained
clock of it is published (docs/calibration.md).
"""


def beyond_note(done):
    """BEYOND_NOTE with this run's stage-2 error range of the v1-pipeline fp8 block-scale rows."""
    v1 = [100 * err(r["sim2"], r["us2"]) for r in done if r["line"] in (7, 13, 18, 19, 20, 21, 22) and
          r["stages"] == 2 and r["us2"] > 0]
    return BEYOND_NOTE.format(v1_range=f"within {min(v1):+.0f}% to {max(v1):+.0f}%" if v1 else "not simulated")


def beyond_table(done):
    """The rows beyond +-50% on the total, each with what the published rows themselves show
    (same-shape rows of another format, the row's own series); docs/moe-timing.md has the
    kernels' side."""
    far = [r for r in done if abs(err(r["simt"], r["us"])) > 0.5]
    if not far:
        return "No row is beyond ±50% on the total.\n"
    out = ["| line | format, tokens | err stage 1 / 2 / total | what the published rows show |", "|---|---|---|---|"]
    by_shape = {}
    for r in done:
        by_shape.setdefault((r["hidden"], r["inter_dim"], r["expert"], r["topk"], r["tokens"]), []).append(r)
    for r in far:
        e2 = f"{100 * err(r['sim2'], r['us2']):+.0f}%" if r["stages"] == 2 else "-"
        note = ""
        twins = [t for t in by_shape[(r["hidden"], r["inter_dim"], r["expert"], r["topk"], r["tokens"])]
                 if t["format"] != r["format"] and t["stages"] == 2 and r["stages"] == 2]
        series = sorted((t for t in done if t["source"] == r["source"] and t["format"] == r["format"] and
                         (t["hidden"], t["inter_dim"], t["expert"], t["topk"]) ==
                         (r["hidden"], r["inter_dim"], r["expert"], r["topk"])), key=lambda t: t["tokens"])
        if twins:
            t = twins[0]
            note = (f"same shape and tokens in {t['format']} (line {t['line']}, CK down tile {t['tile2'] or 'unnamed'}): "
                    f"published stage 2 {t['us2']:.1f} us against {r['us2']:.1f} here, with the same bf16 atomic combine and "
                    f"{'more' if t['weight_dtype'] == 'bf16' else 'as many'} weight bytes; ")
        prev = [t for t in series if t["tokens"] < r["tokens"]]
        if prev:
            p = prev[-1]
            d_rows = (r["tokens"] - p["tokens"]) * r["topk"]
            note += (f"stage 1 {1000 * p['us1'] / p['tokens']:.0f} -> {1000 * r['us1'] / r['tokens']:.0f} ns a token, "
                     f"stage 2 +{1000 * (r['us2'] - p['us2']) / d_rows:.1f} ns a routed row from {p['tokens']} tokens "
                     f"(line {p['line']})")
        if two_combines(r) and r.get("combine") != "reduce":
            note += "; stage 2 names no kernel: FlyDSL's, whose reduce combine has no atomics, is a candidate (`--two-combines`)"
        out.append(f"| {r['line']} | {r['format']}, {r['tokens']} | {100 * err(r['sim1'], r['us1']):+.0f}% / {e2} / "
                   f"{100 * err(r['simt'], r['us']):+.0f}% | {note} |")
    return "\n".join(out) + "\n"


def skipped_section(path):
    return report.skipped_section("MI355X, AITER fused MoE (five tuned tables: fp8 block-scale, MXFP4, MXFP8, bf16)",
                                  path, SHARED_CSV_NAME)


def main():
    ap = report.calibration_arguments(
        __doc__.splitlines()[0], DEFAULT_CSV, 2,
        fit_help=f"fit {FIT_KEY} and kernels.matrix_efficiency on the calibration rows first",
        store_help="folder keeping each simulation's result (by binary, scenario and machine), so that a rerun "
                   "simulates only what changed")
    ap.add_argument("--lines", help="simulate only these rows (the data file's line numbers, comma-separated; "
                                    "for iterating on a model change: the figures are then of those rows alone)")
    ap.add_argument("--two-combines", action="store_true",
                    help="simulate each 2-stage MXFP4 row without a stage-2 tile with both of FlyDSL's combines "
                         "(atomic, reduce) and keep the faster stage 2 (docs/moe-timing.md)")
    args = ap.parse_args()
    report.require_csv(args.csv)
    try:
        rows = [r for r in rows_of(args.csv, args.tdmsim) if r["tokens"] <= args.max_tokens]
        if args.lines:
            wanted = {int(x) for x in args.lines.split(",") if x.strip()}
            unknown = wanted - {r["line"] for r in rows}
            if unknown:
                raise ValueError(f"{args.csv}: --lines: no row at line(s) {', '.join(map(str, sorted(unknown)))}")
            rows = [r for r in rows if r["line"] in wanted]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    done, missing, fit_lines, value, _ = collect(rows, args.tdmsim, args.jobs, args.fit, store=args.store,
                                                 both_combines=args.two_combines)
    command = report.script_command("validation/calibration/aiter_mi355x.py")
    report.emit(report.generated_header(command) + section(done, missing, fit_lines, value), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
