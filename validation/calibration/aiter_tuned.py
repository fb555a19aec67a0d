#!/usr/bin/env python3
"""Predicts any AITER fused-MoE tuned table with the simulator and scores it: every row's
stage 1, stage 2 and total time, simulated on the machine of the row's cu_num, against
the times the table publishes.

This is how to judge the timing model on measurements it was never fitted on (the MI300X
and MI355X reports fit on ../shared/calibration/ alone): give it any tuned file of
AITER's fused MoE (`aiter/configs/*tuned_fmoe*.csv`, or a file the user's own tuning run
wrote). The machine files' values are used as shipped; nothing is fitted here.

Input (one or more CSV files). Either column layout AITER's tables use is read:

- AITER's own (`dtype`, `use_g1u1`, `doweight_stage1`, `kernelName1`, `kernelName2`, ...).
- The shorter one of ../shared/calibration/mi355x_fused_moe_aiter_tuned.csv (`tile1`,
  `tile2`, `source`).

The tile or kernel names of a 2-stage row are read as `tdmsim run --kernel-config` reads
them, by asking `tdmsim config aiter-tile` (docs/moe-plan.md "Tuned kernel tables"): a CK
tile THREADSxMxNxK or CK kernel name (`moe_ck2stages_gemm1_256x32x64x128_...`) gives its
tile; an assembly kernel's MxN or AITER's assembly stage-1 kernel name in the stage-1
column (`fmoe_stage1_bf16_pertokenFp8_g1u1_64x128_2tg_pf3`) 256 x M x N x the default K;
a FlyDSL kernel name in the column of its stage (`flydsl_moe1_afp4_wfp4_bf16_t32x256x256`,
`flydsl_moe2_..._t32x128x256_reduce`) 256 x tile_m x tile_n x tile_k;
an empty name or another kernel's (AITER's other assembly kernels, `fmoe_stage2_...`
included) the heuristic tile of the row's block_m; a name tdmsim refuses
(its M is not block_m, say) lists the row with tdmsim's reason. A 1-stage row runs AITER's
assembly 1-stage kernel: its stage-1 name, where it is one of those kernels'
(`fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x512`), gives the kernel's subGU_m x subGU_n
(`tdmsim config aiter-tile --one-stage`), else AITER's heuristic kernel runs; its stage-2
name is not read. A row whose stage 1 is an assembly
kernel runs unsplit, as AITER's fused_moe.py and tuner run it (no ksplit reaches
asm_stage1). A CK name's pipeline version reaches the scenario as its LDS buffers
(`kernel.gate_up_lds_buffers` / `down_lds_buffers`: 1 for v1, 2 for v2/v3), and an
assembly stage-1 name's `_<N>tg` as the workgroups a CU holds of it
(`kernel.gate_up_workgroups_per_cu`), and a FlyDSL stage-2 name's mode (`..._reduce`,
`..._atomic`) as the down kernel's combine (`kernel.down_combine`), as `--kernel-config` takes them.

Required columns: cu_num token model_dim inter_dim expert topk act_type q_dtype_a q_dtype_w
q_type block_m ksplit us1 us2 and one of the tile column pairs; `us` (else us1 + us2),
`run_1stage` (else 0, as AITER's `cfg.get` and tdmsim's reader take it), `source` (else the
file's name), `use_g1u1` (0/1 or False/True, as run_1stage) and `doweight_stage1` (the
model's `gating.weight_on_input`: AITER's 1-stage kernel for such per-token layers is
`fmoe_g1u1_tkw1`) are read where present. Whole numbers
and flags are read as tdmsim's table reader reads them (digits or pandas' 32.0; 0, 1, True,
False, empty = 0); a block_m or ksplit the simulator does not take (block_m 40, say) lists
the row with its reason. AITER's other columns are not read. Each row
becomes a scenario as in validation/calibration/aiter_mi355x.py: the row's shape (257, 385
or 161 experts top-9 are the DeepSeek-V3 family's routed experts + 1 shared expert fused
into the routing: aiter_mi355x.fused_shared_expert), format (`tdmsim config aiter-format`), tokens,
block_m, split-K, stages and tiles, uniform routing (seed 1), no router, kernel times
without launch overhead and without the sort (as AITER's tuner times us1 and us2).

Rows that cannot be simulated are listed with the reason, never dropped: a cu_num with no
machine (--machine CU=NAME maps one: a shipped machine of that many CUs, since AITER tunes
per cu_num and another CU count is another GPU), a format the simulator refuses or AITER
names no tdmsim format uses (torch.float32, QuantType.per_256x128, ...), `use_g1u1 0`
(AITER's ungated MLP kernels; every model here is gated), `ActivationType.No` (no gated
MLP), a time AITER marks as
failed (-1, -inf, inf, nan, empty), block_m 0 (AITER's tuner found no kernel), a tile that
does not fit (tdmsim's message), a published time of 0, a token count above --max-tokens.
Malformed input (a missing column, a number that is not one, another negative time, names
that are not AITER's, a file without rows) stops the script with exit 2, naming the file,
line and column; nothing
is written then. A tdmsim crash on a row is listed too, and the script then exits 1; one on the
calibration files' format names (read for the fit marks, before any row is simulated) exits 1
with the reason and writes nothing.

Output: the Markdown report (--markdown, else stdout) with the error per machine, source
table, format, token regime and stage count, and against the plain roofline (a format no
row of ../shared/calibration/ has on that machine, where that folder is present, is marked
"(not in the fit)": its time rests on the model's estimates); --plots DIR
a figure per machine (MACHINE-simulated-vs-published.png: simulated against published
total time, and the error by token count, with the plain roofline), linked from the
report; --output
FILE.csv the per-row predictions (one line per input row, with its status, and for a
simulated row its `kernel` column: tdmsim's kernel: line, what ran and why).

Usage:
  validation/calibration/aiter_tuned.py FILE.csv [FILE.csv ...] [--tdmsim build/apps/tdmsim/tdmsim]
      [--machine CU=NAME ...] [--max-tokens N] [--jobs J] [--store DIR] [--markdown FILE]
      [--output FILE.csv] [--plots DIR] [--quiet]"""
import argparse
import csv
import os
import re
import statistics
import sys
import tempfile
import time

import aiter_mi300x
import aiter_mi355x
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402
from tdmsimtools import err, mape, spearman  # noqa: E402
from tdmsimtools import plots, report  # noqa: E402

# cu_num -> shipped machine. 304 CUs is MI300X (MI325X has 304 as well: --machine 304=mi325x),
# 256 MI355X (workloads/machines/*.yaml `compute.cus`).
MACHINES = {304: "mi300x", 256: "mi355x"}
# The published measurements the shipped machines' values were fitted on (the files' calibration
# halves, which hold every format of their file; docs/calibration.md). Read, where ../shared is
# present, only to say which formats a machine's fit saw: a format it did not see rests on the
# model's estimates.
CALIBRATION = (aiter_mi300x.DEFAULT_CSV, aiter_mi355x.DEFAULT_CSV)
REQUIRED = ("cu_num", "token", "model_dim", "inter_dim", "expert", "topk", "act_type", "q_dtype_a",
            "q_dtype_w", "q_type", "block_m", "ksplit", "us1", "us2")
TILE_PAIRS = (("kernelName1", "kernelName2"), ("tile1", "tile2"))


# AITER's ActivationType values (No, Silu, Gelu, Swiglu in aiter_enum.h; Situv2, GeluTanh and
# Relu2 in newer AITER, as its test mocks of the enum list them) that tdmsim's models do not
# have. The timing model charges every activation one epilogue cost (the kernel profile's
# epilogue.activation_ops); beyond that the activation changes the emulator's numbers and,
# under AITER's heuristic, the stage count (fused_moe_1stage_dict), which a row fixes
# (run_1stage). So a gated layer of GeluTanh, Relu2 or Situv2 (use_g1u1 1, as AITER's g1u1
# kernels run them) is timed as a SiLU layer of its shape and stages, and its `kernel`
# column says so. No activation is no gated MLP: such a row is listed, not malformed.
OTHER_ACTIVATIONS = {
    "ActivationType.No": "no activation, not a gated MLP (every model here is one)",
}
TIMED_AS_SILU = ("ActivationType.GeluTanh", "ActivationType.Relu2", "ActivationType.Situv2")


class InputError(ValueError):
    """Malformed input: the message names the file, line and column."""


# A whole number as tdmsim's table reader takes one (descriptors/plan/kernel_config.cpp
# number: digits, or pandas' "32.0"); a time: number() below.
WHOLE = re.compile(r"^[0-9]+(\.0)?$")
FLAGS = {"0": 0, "0.0": 0, "False": 0, "false": 0, "1": 1, "1.0": 1, "True": 1, "true": 1}


def number(path, line, r, column, integer=False):
    text = (r.get(column) or "").strip()
    if integer:
        if not WHOLE.match(text):
            raise InputError(f"{path}:{line}: column {column}: {text!r} is not a whole number")
        return int(text.split(".")[0])
    # A time: a decimal; AITER's marks of a failed measurement (INVALID_TIME -1 of
    # base_tuner.py, -inf, nan, and an empty field, as pandas writes NaN) come back as nan
    # and inf as inf, and the row is listed. Anything else is not a number.
    if text == "":
        return float("nan")
    if not re.fullmatch(r"[+-]?(inf|infinity|nan|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)", text,
                        re.IGNORECASE):
        raise InputError(f"{path}:{line}: column {column}: {text!r} is not a number")
    x = float(text)
    if x in (float("inf"), float("-inf")) and "inf" not in text.lower():
        raise InputError(f"{path}:{line}: column {column}: {text!r} is out of range")
    return float("nan") if x in (-1.0, float("-inf")) else x


def flag(path, line, r, column, default):
    """A 0/1 column (AITER writes 0/1, pandas True/False), as tdmsim's table reader takes it:
    an empty field is 0; `default` where the column is absent."""
    text = (r.get(column) or "").strip()
    if column not in r:
        return default
    if text == "":
        return 0
    if text in FLAGS:
        return FLAGS[text]
    raise InputError(f"{path}:{line}: column {column}: {text!r} is not 0, 1, True or False")


def rows_of(path, tdmsim, machines, max_tokens=None, index=0):
    """The file's rows as aiter_mi355x's simulate() takes them, each with `status` "" (to
    simulate) or why it is not simulated. index: the file's place on the command line, which
    names its cases apart from another file's of the same line."""
    try:
        # A spreadsheet's byte-order mark is not part of the first column's name.
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            # Column names as AITER's tuner reads its tables (base_tuner.py _read_csv): surrounding
            # spaces and tabs dropped.
            reader.fieldnames = [h.strip() for h in (reader.fieldnames or [])]
            header = reader.fieldnames
            raw = [(reader.line_num, r) for r in reader]  # the file's line of each row (blank lines skipped)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"{path}:1: missing column(s) {', '.join(missing)}")
    if any(c in header for c in TILE_PAIRS[0]) and any(c in header for c in TILE_PAIRS[1]):
        # As tdmsim's reader: two readings of a row's kernels, refused.
        raise InputError(f"{path}:1: the header has both kernelName1/kernelName2 and tile1/tile2 columns: "
                         "keep one pair")
    pair = next((p for p in TILE_PAIRS if p[0] in header and p[1] in header), None)
    if pair is None:
        raise InputError(f"{path}:1: missing tile columns: kernelName1 and kernelName2 (or tile1 and tile2)")
    if not raw:
        raise InputError(f"{path}: no data rows")
    out = []
    for line, r in raw:
        if None in r or None in r.values():
            raise InputError(f"{path}:{line}: {len(header)} columns expected")
        for c, v in r.items():  # (no argument to tdmsim may hold one)
            if "\0" in v:
                raise InputError(f"{path}:{line}: column {c}: a NUL byte")
        n = {c: number(path, line, r, c, True) for c in ("cu_num", "token", "model_dim", "inter_dim", "expert",
                                                        "topk", "block_m", "ksplit")}
        one = flag(path, line, r, "run_1stage", 0) == 1  # absent: 0, as AITER's cfg.get
        gated = flag(path, line, r, "use_g1u1", 1) == 1
        doweight = flag(path, line, r, "doweight_stage1", 0) == 1
        t = {c: number(path, line, r, c) for c in ("us1", "us2")}
        t["us"] = number(path, line, r, "us") if (r.get("us") or "").strip() else t["us1"] + t["us2"]
        for c, x in t.items():
            if x < 0:
                raise InputError(f"{path}:{line}: column {c}: {x} is negative")
        not_measured = [c for c, x in t.items() if x != x or x == float("inf")]
        if "us" in not_measured and not (r.get("us") or "").strip():
            not_measured.remove("us")  # the sum of the two, named there
        for c in ("token", "model_dim", "inter_dim", "expert", "topk"):
            if n[c] < 1:
                raise InputError(f"{path}:{line}: column {c}: {n[c]} must be at least 1")
        quant_names = (r["q_dtype_a"], r["q_dtype_w"], r["q_type"])
        names = " / ".join(x.strip() for x in quant_names)
        crashed = ""  # why tdmsim failed on this row's names (listed; main() exits 1)
        try:
            fm = aiter_mi355x.aiter_format(tdmsim, *quant_names)
        except RuntimeError as e:
            fm, crashed = (None, "AITER quantisation not read"), " ".join(str(e).split())
        if fm[0] is None and not fm[1].startswith("AITER quantisation"):
            raise InputError(f"{path}:{line}: columns q_dtype_a/q_dtype_w/q_type: {names}: {fm[1]}")
        # AITER's activations tdmsim does not model are listed; a name AITER lacks is malformed.
        not_modelled = OTHER_ACTIVATIONS.get(r["act_type"].strip())
        act = r["act_type"].strip()
        try:
            activation = (None if not_modelled else
                          aiter_mi355x.activation_of(path, line, "ActivationType.Silu" if act in TIMED_AS_SILU else act))
        except ValueError as e:
            raise InputError(f"{e} (column act_type)") from None
        machine = machines.get(n["cu_num"])
        status = ""
        if crashed:
            status = crashed
        elif machine is None:
            status = (f"cu_num {n['cu_num']}: no machine ({', '.join(f'{k}={v}' for k, v in sorted(machines.items()))};"
                      f" --machine {n['cu_num']}=NAME maps one)")
        elif fm[0] is None:
            status = fm[1]
        elif not gated:
            status = "use_g1u1 0: AITER's ungated MLP kernels (every model here is gated)"
        elif not_modelled:
            status = f"act_type {r['act_type'].strip()}: {not_modelled}"
        elif max_tokens and n["token"] > max_tokens:
            status = f"above --max-tokens {max_tokens}"
        elif n["block_m"] == 0:
            status = "block_m 0 (AITER's tuner found no kernel for this shape)"
        elif not_measured:
            shown = [f"{c} {(r.get(c) or '').strip() or repr('')}" for c in not_measured]
            status = f"published time {', '.join(shown)} (AITER's mark of a failed measurement)"
        elif t["us"] == 0:
            status = "published time is 0"
        dtype, wdtype, quant, label = fm if fm[0] is not None else (None, None, None, names)
        source = (r.get("source") or "").strip() or os.path.basename(path)
        # Each tile or kernel name of a row to simulate, as `tdmsim run --kernel-config`
        # reads it (`tdmsim config aiter-tile`); a name it refuses is the row's reason not
        # to simulate it. A 1-stage row runs AITER's assembly 1-stage kernel: its stage-1
        # name is read as that kernel's (subGU_m x subGU_n), its stage-2 name not at all.
        tiles, buffers, unsplit, per_cu, combine = ["", ""], [0, 0], False, 0, ""
        for i, c in enumerate((pair[:1] if one else pair) if not status else ()):
            try:
                got = aiter_mi300x.aiter_tile(tdmsim, r[c].strip(), n["block_m"], i + 1, quant_names, one_stage=one)
            except RuntimeError as e:
                status = crashed = " ".join(str(e).split())
                break
            if got[0] is None:
                status = status or f"column {c}: {got[1]}"
            else:
                tiles[i], buffers[i] = got[0], got[2]
                # AITER's assembly stage 1 runs unsplit, whatever the row's ksplit, and
                # holds the workgroups a CU its name says.
                unsplit = unsplit or (i == 0 and got[1])
                per_cu = got[3] if i == 0 and not one else per_cu
                # A FlyDSL stage-2 name's combine mode (atomic or reduce).
                combine = got[4] if i == 1 else combine
        out.append(dict(
            line=line, file=path, source=source, machine=machine, cu_num=n["cu_num"], tokens=n["token"],
            hidden=n["model_dim"], inter_dim=n["inter_dim"], expert=n["expert"], topk=n["topk"],
            dtype=dtype, weight_dtype=wdtype, quant=quant, format=label, status=status,
            # (A 1-stage kernel has no split: a row's ksplit is 1 there, as --kernel-config
            # reads it; a scenario refuses a split beside stages 1.)
            block_m=n["block_m"], split_k=1 if unsplit or one else max(1, n["ksplit"]), stages=1 if one else 2,
            tile1=tiles[0], tile2=tiles[1], lds_buffers1=buffers[0], lds_buffers2=buffers[1],
            workgroups_per_cu1=per_cu, combine2=combine,
            us1=t["us1"], us2=t["us2"], us=t["us"], activation=activation, weight_on_input=doweight,
            timed_as_silu=act if act in TIMED_AS_SILU else "",
            crashed=bool(crashed),
            case=f"file{index}-line{line}"))
    return out


def fitted_formats(tdmsim, files=CALIBRATION):
    """{machine: the format labels of its calibration rows} (cu_num through the shipped
    MACHINES map, the machines the fits ran on), or None where a calibration file is
    missing (a checkout without ../shared)."""
    out = {}
    for path in files:
        if not os.path.isfile(path):
            return None
        with open(path, newline="", encoding="utf-8-sig") as f:
            for r in csv.DictReader(f):
                machine = MACHINES.get(int(r["cu_num"]))
                fm = aiter_mi300x.aiter_format(tdmsim, r["q_dtype_a"], r["q_dtype_w"], r["q_type"])
                if machine and fm[0] is not None:
                    out.setdefault(machine, set()).add(fm[3])
    return out


def simulate_all(rows, tdmsim, jobs, store=None, quiet=False):
    """Simulates every row without a status. A row tdmsim refuses (exit 2: a tile that does
    not fit, say) keeps tdmsim's message as its status, so no row is lost; any other failure
    (a crash) too, marked `crashed`: main() then exits 1."""
    t0 = time.time()
    todo = [r for r in rows if not r["status"]]
    with tempfile.TemporaryDirectory() as tmp:
        def one(r):
            try:
                return aiter_mi355x.simulate(tdmsim, tmp, r, None, "", store)
            except tdmsimtools.RunError as e:
                lines = [x for x in e.stderr.strip().splitlines() if x.strip()]
                why = re.sub(r"^(tdmsim: )?(error: )?", "", lines[-1]) if lines else ""
                why = why.replace(tmp + os.sep, "")  # the case's file by name, not its temporary folder
                if e.returncode == 2:
                    return dict(r, status="tdmsim run: " + why)
                return dict(r, status=f"tdmsim run crashed (exit {e.returncode}): {why}", crashed=True)
        done = report.parallel(one, todo, jobs, "AITER tuned tables", t0=t0, quiet=quiet)
    by = {r["case"]: r for r in done}
    return [by.get(r["case"], r) for r in rows]


def group_stats(sel):
    """aiter_mi355x.stats of the total (n, MAPE, Spearman, worst, rows beyond +-50%) with
    the median error, the stage MAPEs, the roofline's MAPE and the rows where it is closer."""
    s2 = [r for r in sel if r["stages"] == 2 and r["us2"] > 0]
    return dict(aiter_mi355x.stats(sel), median=100 * statistics.median(err(r["simt"], r["us"]) for r in sel),
                s1=mape([r for r in sel if r["us1"] > 0], "sim1", "us1"), s2=mape(s2, "sim2", "us2"),
                roof=mape(sel, "roof", "us"),
                closer=sum(abs(err(r["roof"], r["us"])) < abs(err(r["simt"], r["us"])) for r in sel))


def pct(x):
    """A percentage, or '-' for none (NaN: no row to average)."""
    return f"{x:.1f}%" if x == x else "-"


def fmt_group(label, sel):
    if not sel:
        return f"| {label} | 0 |" + " |" * 10
    g = group_stats(sel)
    w, e = g["worst"]
    rho = f"{g['spearman']:.3f}" if g["spearman"] == g["spearman"] else "-"
    return (f"| {label} | {g['n']} | {g['mape']:.1f}% | {g['median']:+.1f}% | {rho} | "
            f"{100 * e:+.0f}% ({os.path.basename(w['file'])}:{w['line']}, {w['tokens']} tok) | {g['beyond']} | "
            f"{pct(g['s1'])} | {pct(g['s2'])} | {pct(g['roof'])} | {g['closer']} |")


def summary(done, fitted=None):
    head = ["| rows | n | MAPE total | median error | Spearman | worst | beyond ±50% | MAPE stage 1 | "
            "MAPE stage 2 | roofline MAPE | rows where the roofline is closer |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    out = []
    for machine in sorted({r["machine"] for r in done}):
        on = [r for r in done if r["machine"] == machine]
        out += [f"#### {machine} (cu_num {', '.join(str(c) for c in sorted({r['cu_num'] for r in on}))})", ""]
        out += head + [fmt_group("all rows", on)]
        groups = [(f"source {s}", lambda r, s=s: r["source"] == s) for s in sorted({r["source"] for r in on})]
        seen = (fitted or {}).get(machine)
        groups += [(f"format {f}" + ("" if seen is None or f in seen else " (not in the fit)"),
                    lambda r, f=f: r["format"] == f) for f in sorted({r["format"] for r in on})]
        groups += [(f"regime {g}", lambda r, g=g: aiter_mi355x.regime(r["tokens"]) == g)
                   for g in ("decode (<=64)", "mid (65-1023)", "prefill (>=1024)")]
        groups += [("1-stage (run_1stage 1)", lambda r: r["stages"] == 1),
                   ("2-stage (run_1stage 0)", lambda r: r["stages"] == 2)]
        out += [fmt_group(label, [r for r in on if pred(r)]) for label, pred in groups]
        out.append("")
    return "\n".join(out)


def not_simulated(rows):
    skipped = [r for r in rows if r["status"]]
    if not skipped:
        return "Every row was simulated.\n"
    counts = {}
    for r in skipped:
        counts.setdefault((r["format"], r["status"]), []).append(f"{os.path.basename(r['file'])}:{r['line']}")
    out = ["| format (AITER names) | why it is not simulated | rows |", "|---|---|---|"]
    for (label, why), where in sorted(counts.items()):
        shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
        out.append(f"| {label} | {why} | {len(where)} ({shown}) |")
    return "**Not simulated**:\n\n" + "\n".join(out) + "\n"


def beyond(done):
    far = sorted((r for r in done if abs(err(r["simt"], r["us"])) > 0.5),
                 key=lambda r: -abs(err(r["simt"], r["us"])))
    if not far:
        return "No row is beyond ±50% on the total.\n"
    out = ["| row | machine | format | shape (hidden/inter/E/topk) | tokens | stages | tiles | "
           "err stage 1 / 2 / total |", "|---|---|---|---|---|---|---|---|"]
    for r in far:
        e2 = f"{100 * err(r['sim2'], r['us2']):+.0f}%" if r["stages"] == 2 and r["us2"] > 0 else "-"
        e1 = f"{100 * err(r['sim1'], r['us1']):+.0f}%" if r["us1"] > 0 else "-"
        tiles = " / ".join(t for t in (r["tile1"], r["tile2"]) if t) or (
            "AITER 1-stage" if r["stages"] == 1 else "heuristic")
        out.append(f"| {os.path.basename(r['file'])}:{r['line']} | {r['machine']} | {r['format']} | "
                   f"{r['hidden']}/{r['inter_dim']}/{r['expert']}/{r['topk']} | {r['tokens']} | {r['stages']} | "
                   f"{tiles} | {e1} / {e2} / {100 * err(r['simt'], r['us']):+.0f}% |")
    return "\n".join(out) + "\n"


def fit_note(fitted):
    """What the "(not in the fit)" marks of summary() mean, or why there are none."""
    if fitted is None:
        return ("Which formats each machine's fit saw is not shown: ../shared/calibration/ (the published "
                "measurements the machine files were fitted on) is not in this checkout.\n\n")
    seen = "; ".join(f"{m}: {', '.join(sorted(fs))}" for m, fs in sorted(fitted.items()))
    return ("A format marked (not in the fit) has no row in the measurements the machine's values were fitted "
            f"on (../shared/calibration/; {seen}): its time rests on the model's estimates (docs/moe-timing.md "
            "\"Formats\"). Rows on another machine (--machine) have no mark.\n\n")


def markdown(rows, files, command, fitted=None):
    done = [r for r in rows if not r["status"]]
    text = (report.generated_header(command) +
            "## AITER tuned tables, predicted\n\n"
            f"Files: {', '.join(f'`{f}`' for f in files)} ({len(rows)} rows, {len(done)} simulated). Each row "
            "is simulated on the machine of its cu_num with the machine file's values as shipped (nothing is "
            "fitted here; validation/calibration/aiter_tuned.py says how a row becomes a scenario). Error = "
            "simulated / published - 1. Regimes: decode <= 64 tokens, prefill >= 1024. Roofline: "
            "max(useful matrix FLOPs / peak, compulsory bytes / HBM bandwidth).\n\n" + not_simulated(rows) + "\n")
    if done:
        text += ("### Error\n\n" + fit_note(fitted) + summary(done, fitted) + "\n### Rows beyond ±50%\n\n" + beyond(done) + "\n" +
                 f"Simulation wall time: {sum(r['wall'] for r in done):.0f} s over {len(done)} rows.\n")
    return text


CSV_COLUMNS = ("file", "line", "source", "machine", "cu_num", "tokens", "model_dim", "inter_dim", "expert", "topk",
               "format", "stages", "block_m", "ksplit", "tile1", "tile2", "status", "sim_us1", "sim_us2", "sim_us",
               "roofline_us", "us1", "us2", "us", "err_total", "kernel")


def write_rows(tmp, rows):
    """The per-row predictions into `tmp` (main() renames it into place)."""
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            sim = not r["status"]
            w.writerow([r["file"], r["line"], r["source"], r["machine"] or "", r["cu_num"], r["tokens"], r["hidden"],
                        r["inter_dim"], r["expert"], r["topk"], r["format"], r["stages"], r["block_m"], r["split_k"],
                        r["tile1"], r["tile2"], r["status"] or "simulated",
                        *([f"{r['sim1']:.4f}", f"{r['sim2']:.4f}", f"{r['simt']:.4f}", f"{r['roof']:.4f}"]
                          if sim else ["", "", "", ""]),
                        r["us1"], r["us2"], r["us"], f"{err(r['simt'], r['us']):.4f}" if sim else "",
                        ((f"act_type {r['timed_as_silu']} timed as silu (one epilogue cost for every "
                          f"activation); " if r["timed_as_silu"] else "") + r.get("kernel", "")) if sim else ""])


# Logical GPUs of a compute partition mode (workloads/specs/partition.h compute_partitions).
COMPUTE_PARTITIONS = {"spx": 1, "dpx": 2, "qpx": 4, "cpx": 8}


def machine_cus(tdmsim, name):
    """The CUs a layer runs on on a shipped machine, as tdmsim resolves it (`config show`):
    compute.total_cus, over the compute partitions of a partitioned machine (a layer runs
    on one partition, and AITER's cu_num there is the partition's)."""
    p = tdmsimtools.tdmsim(tdmsim, "config", "show", report.shipped_machine(name))
    m = re.search(r"^\s*total_cus:\s*(\d+)\s*$", p.stdout, re.M) if p.returncode == 0 else None
    if not m:
        raise InputError(f"--machine: tdmsim config show cannot resolve machine {name!r}: {p.stderr.strip()}")
    part = re.search(r"^partition:\s*\n\s+compute:\s*(\w+)", p.stdout, re.M)
    return int(m.group(1)) // COMPUTE_PARTITIONS.get(part.group(1) if part else "spx", 1)


def machine_map(items, tdmsim):
    """cu_num -> machine; a mapped machine must have the row's CUs (AITER tunes per cu_num: a
    table of another CU count is another GPU)."""
    machines = dict(MACHINES)
    for item in items or []:
        cu, _, name = item.partition("=")
        if not cu.strip().isdigit() or not name.strip():
            raise InputError(f"--machine {item!r}: expected CU=NAME, e.g. 304=mi325x")
        if not os.path.exists(report.shipped_machine(name.strip())):
            raise InputError(f"--machine {item!r}: no machine {name.strip()!r} in workloads/machines")
        cus = machine_cus(tdmsim, name.strip())
        if cus != int(cu):
            raise InputError(f"--machine {item!r}: {name.strip()} runs a layer on {cus} CUs, not {int(cu)}; a machine file with "
                             f"{int(cu)} CUs (compute.dies x cus_per_die) in workloads/machines simulates those rows")
        machines[int(cu)] = name.strip()
    return machines


def draw(rows, folder):
    """A figure per machine of the simulated rows (tdmsimtools.plots.simulated_vs_published,
    coloured by format, with the plain roofline) in folder: [(machine, path)]."""
    done = [r for r in rows if not r["status"]]
    out = []
    for machine in sorted({r["machine"] for r in done}):
        sel = [r for r in done if r["machine"] == machine]
        path = os.path.join(folder, f"{machine}-simulated-vs-published.png")
        tables = len({r["source"] for r in sel})
        title = (f"{machine}, {len(sel)} row{'s' if len(sel) != 1 else ''} of {tables} "
                 f"table{'s' if tables != 1 else ''}")
        out.append((machine, plots.simulated_vs_published(path, title, sel, group=lambda r: r["format"],
                                                    published=lambda r: r["us"], roofline=lambda r: r["roof"])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="AITER tuned fused-MoE tables")
    ap.add_argument("--tdmsim", default=tdmsimtools.DEFAULT_TDMSIM)
    ap.add_argument("--machine", action="append", metavar="CU=NAME",
                    help=f"simulate rows of this cu_num on this shipped machine (default {MACHINES})")
    ap.add_argument("--max-tokens", type=int, default=None,
                    help="list rows above this token count as not simulated")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--store", help="folder keeping each simulation's result, so that a rerun simulates only "
                                    "what changed")
    ap.add_argument("--markdown", help="write the report here instead of stdout")
    ap.add_argument("--output", help="write the per-row predictions to this CSV file")
    ap.add_argument("--plots", metavar="DIR",
                    help="draw MACHINE-simulated-vs-published.png here for each machine with simulated rows "
                         "(simulated against published time, the error by token count; needs matplotlib)")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    args = ap.parse_args()
    try:
        if not (os.path.isfile(args.tdmsim) and os.access(args.tdmsim, os.X_OK)):
            raise InputError(f"--tdmsim {args.tdmsim}: not an executable file (build it: scripts/build.sh)")
        for out in (args.output, args.markdown):
            if out and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
                raise InputError(f"{out}: its folder does not exist")
            if out and os.path.exists(out) and not os.path.isfile(out):
                raise InputError(f"{out}: not a regular file")
        if args.plots:
            if not plots.have_matplotlib(__file__):
                raise InputError("--plots: matplotlib is missing (install python3-matplotlib: "
                                 "scripts/install-deps.sh)")
            # The folder is made now, before anything is simulated, so that a bad one stops the run.
            try:
                os.makedirs(args.plots, exist_ok=True)
            except OSError as e:
                raise InputError(f"--plots {args.plots}: not a folder that can be made ({e.strerror})")
        machines = machine_map(args.machine, args.tdmsim)
        for path in args.csv:
            if not os.path.isfile(path):
                raise InputError(f"{path}: not a regular file")
        rows = [r for i, path in enumerate(args.csv) for r in rows_of(path, args.tdmsim, machines, args.max_tokens, i)]
        fitted = fitted_formats(args.tdmsim)  # before the simulations, so that a failure loses none
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # tdmsim failed on a format's names (aiter_mi300x.aiter_format): nothing written
        print(f"error: {e}", file=sys.stderr)
        return 1
    rows = simulate_all(rows, args.tdmsim, args.jobs, args.store, args.quiet)
    text = markdown(rows, args.csv, report.script_command("validation/calibration/aiter_tuned.py"), fitted)
    if args.plots:
        figures = draw(rows, args.plots)
        if figures:
            # Links relative to the report's folder (stdout: the working folder); <...> holds spaces.
            where = os.path.dirname(os.path.abspath(args.markdown)) if args.markdown else os.getcwd()
            links = [(m, os.path.relpath(f, where)) for m, f in figures]
            text += "\n### Figures\n\n" + "".join(
                f"![{m}: simulated vs published]({f'<{f}>' if ' ' in f else f})\n\n" for m, f in links)
        elif not args.quiet:
            print("--plots: no simulated row, no figure", file=sys.stderr)
    # Both files written whole under temporary names, then renamed into place.
    done = []
    if args.output:
        write_rows(args.output + ".tmp", rows)
        done.append(args.output)
    if args.markdown:
        with open(args.markdown + ".tmp", "w") as f:
            f.write(text)
        done.append(args.markdown)
    for path in done:
        os.replace(path + ".tmp", path)
    if not args.markdown:
        print(text)
    crashed = [f"{r['file']}:{r['line']}" for r in rows if r.get("crashed")]
    if crashed:
        print(f"error: tdmsim crashed on {len(crashed)} row(s): {', '.join(crashed[:10])}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
