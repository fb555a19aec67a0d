#!/usr/bin/env python3
"""Checks of validation/calibration/aiter_tuned.py (any AITER tuned table, predicted) on
made-up fixtures (tests/data/aiter/: invented times, not measurements).

  aiter_tuned_checks.py TDMSIM rows      # AITER's own column layout: every row kept, with its status
  aiter_tuned_checks.py TDMSIM same      # the same stage times as aiter_mi355x.py on its fixture
  aiter_tuned_checks.py TDMSIM machine   # --machine CU=NAME maps a cu_num to a machine of that many CUs
  aiter_tuned_checks.py TDMSIM bad       # malformed input: exit 2 naming file, line and column; nothing written
  aiter_tuned_checks.py TDMSIM edges     # byte-order mark, True/False, blank lines, --max-tokens, shared expert
  aiter_tuned_checks.py TDMSIM crash     # a tdmsim failing on a row's names: listed, exit 1, other rows kept
  aiter_tuned_checks.py TDMSIM config    # the stage times `tdmsim run --kernel-config` gives the rows (CK v1 names)
  aiter_tuned_checks.py TDMSIM plots     # --plots DIR: a PNG per machine, linked from the report
  aiter_tuned_checks.py TDMSIM grid      # every AITER format on both machines, 1- and 2-stage: all simulated,
                                         # none faster than the plain roofline
  aiter_tuned_checks.py TDMSIM order     # monotone in tokens; fp8 beats bf16, fp4 fp8, MI355X MI300X
  aiter_tuned_checks.py TDMSIM instances # every CK instance AITER builds for gfx942/gfx950 simulates there
  aiter_tuned_checks.py TDMSIM flydsl    # FlyDSL names: their tiles and the stage-2 mode, as --kernel-config
"""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "validation", "calibration", "aiter_tuned.py")
MI355X = os.path.join(ROOT, "validation", "calibration", "aiter_mi355x.py")
DATA = os.path.join(ROOT, "tests", "data", "aiter")
LAYOUT = os.path.join(DATA, "tuned-aiter-layout.csv")
with open(LAYOUT) as _f:
    LAYOUT_HEADER = _f.readline().strip()


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(tdmsim, *args):
    return subprocess.run([sys.executable, SCRIPT, *args, "--tdmsim", tdmsim, "--jobs", "2", "--quiet"],
                          capture_output=True, text=True)


def predicted(tdmsim, tmp, *args):
    out, md = os.path.join(tmp, "rows.csv"), os.path.join(tmp, "report.md")
    p = run(tdmsim, *args, "--output", out, "--markdown", md)
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {p.stderr}")
    with open(out) as f:
        return {int(r["line"]): r for r in csv.DictReader(f)}, open(md).read()


def check_rows(tdmsim, tmp):
    rows, text = predicted(tdmsim, tmp, LAYOUT)
    if sorted(rows) != list(range(2, 11)):
        fail(f"rows {sorted(rows)}: every input row (lines 2-10) must be in the output")
    expect = {2: "simulated", 3: "simulated", 4: "simulated", 5: "cu_num 80: no machine",
              6: "AITER quantisation (torch.int8, torch.int8, QuantType.per_Tensor)",
              7: "use_g1u1 0", 8: "does not fit on a CU of machine mi300x", 9: "simulated",
              10: "column kernelName1: tile 'fmoe_stage1_bf16_pertokenFp8_g1u1_32x128_3tg_pf3' (256x32x128x256): "
                  "its M differs from the row's block_m 64"}
    for line, status in expect.items():
        if status not in rows[line]["status"]:
            fail(f"line {line}: status {rows[line]['status']!r}, expected {status!r}")
        if (rows[line]["status"] == "simulated") != bool(rows[line]["sim_us"]):
            fail(f"line {line}: a simulated row has a time, any other none: {rows[line]}")
    # The machine follows cu_num; tiles come from CK kernel names, none from other kernels.
    if [rows[i]["machine"] for i in (2, 3, 4)] != ["mi300x", "mi300x", "mi355x"]:
        fail(f"machines {[rows[i]['machine'] for i in (2, 3, 4)]}, expected mi300x, mi300x, mi355x")
    if (rows[2]["tile1"], rows[2]["tile2"]) != ("256x32x64x128", "256x32x64x64"):
        fail(f"line 2: tiles {rows[2]['tile1']} / {rows[2]['tile2']} not read from the CK kernel names")
    if (rows[3]["tile1"], rows[3]["tile2"]) != ("256x64x128x128", ""):
        fail(f"line 3: tiles {rows[3]['tile1']!r} / {rows[3]['tile2']!r}: a non-CK name must give no tile")
    # AITER's 2-stage assembly stage-1 kernel: its tile_m x tile_n, fp8's K at M 32 (as
    # `tdmsim config aiter-tile` and --kernel-config read it).
    if (rows[9]["tile1"], rows[9]["tile2"]) != ("256x32x128x256", "256x32x64x128"):
        fail(f"line 9: tiles {rows[9]['tile1']!r} / {rows[9]['tile2']!r}, expected the assembly kernel's 32x128")
    if rows[9]["ksplit"] != "1":  # ksplit 2 in the row: AITER runs its assembly stage 1 unsplit
        fail(f"line 9: ksplit {rows[9]['ksplit']}, expected 1 (assembly stage 1)")
    # A simulated row says what ran (tdmsim's kernel: line), the CK names' pipelines too;
    # a row not simulated has no kernel.
    if "CK pipelines: gate/up v1 (1 LDS buffer), down v1 (1 LDS buffer)" not in rows[2]["kernel"]:
        fail(f"line 2: kernel column {rows[2]['kernel']!r} lacks the v1 names' pipelines")
    if rows[5]["kernel"]:
        fail(f"line 5 (not simulated) has a kernel: {rows[5]['kernel']!r}")
    if rows[4]["stages"] != "1" or float(rows[4]["sim_us2"]) != 0.0 or float(rows[4]["sim_us1"]) <= 0:
        fail(f"line 4 (run_1stage 1) is not a 1-stage layer: {rows[4]}")
    for head in ("#### mi300x (cu_num 304)", "#### mi355x (cu_num 256)", "**Not simulated**",
                 "tuned-aiter-layout.csv:5", "regime decode", "1-stage (run_1stage 1)"):
        if head not in text:
            fail(f"the report lacks {head!r}:\n{text}")
    # Which formats each machine's fit saw, where ../shared/calibration/ is present: MI300X's
    # on bf16 alone, so its fp8 FNUZ rows are marked; without it the report says why not.
    calibration = os.path.join(os.path.dirname(ROOT), "shared", "calibration")
    if all(os.path.isfile(os.path.join(calibration, f)) for f in
           ("mi300x_fused_moe_qwen3_235b_bf16.csv", "mi355x_fused_moe_aiter_tuned.csv")):
        want = ["| format fp8 FNUZ per-token (not in the fit) | 2 |", "| format bf16 | 1 |", "mi300x: bf16;",
                "| format fp8 OCP block 1x128 | 1 |"]
    else:
        want = ["Which formats each machine's fit saw is not shown", "| format fp8 FNUZ per-token | 2 |"]
    for line in want:
        if line not in text:
            fail(f"the report lacks {line!r}:\n{text}")


def check_same(tdmsim, tmp):
    """aiter_tuned.py on the curated layout gives aiter_mi355x.py's stage times (the one
    scenario builder, two readers)."""
    fixture = os.path.join(DATA, "mi355x-fixture.csv")
    rows, _ = predicted(tdmsim, tmp, fixture)
    md = os.path.join(tmp, "mi355x.md")
    p = subprocess.run([sys.executable, MI355X, "--csv", fixture, "--tdmsim", tdmsim, "--jobs", "2",
                        "--markdown", md], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"aiter_mi355x.py: exit {p.returncode}: {p.stderr}")
    ref = {}
    for line in open(md).read().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 16 and cells[0].isdigit():
            ref[int(cells[0])] = (float(cells[9]), float(cells[11]))
    if len(ref) != 5:
        fail(f"{len(ref)} simulated rows in aiter_mi355x.py's report, expected 5")
    for line, (s1, s2) in ref.items():
        got = (round(float(rows[line]["sim_us1"]), 1), round(float(rows[line]["sim_us2"]), 1))
        if got != (s1, s2):
            fail(f"line {line}: aiter_tuned.py {got}, aiter_mi355x.py {(s1, s2)}")
    if "AITER quantisation" not in rows[7]["status"]:
        fail(f"line 7 (bf16 x fp8, refused) is not listed as not simulated: {rows[7]}")


def check_edges(tdmsim, tmp):
    """Input AITER's tools or a spreadsheet may write: a byte-order mark, True/False flags,
    a blank line (rows keep their own line numbers); --max-tokens lists the rows above it;
    doweight_stage1 is the model's weight_on_input; the fused shared expert only for the
    DeepSeek-V3 family's counts."""
    with open(LAYOUT) as f:
        lines = f.read().splitlines()
    path = os.path.join(tmp, "edges.csv")
    with open(path, "w", encoding="utf-8-sig") as f:  # with a byte-order mark
        f.write(lines[0] + "\n" + lines[1] + "\n\n" + lines[3][:-2] + ",True\n")
    rows, _ = predicted(tdmsim, tmp, path, "--max-tokens", "100")
    if sorted(rows) != [2, 4]:
        fail(f"rows at lines {sorted(rows)}, expected 2 and 4 (line 3 is blank)")
    if rows[2]["status"] != "simulated" or rows[4]["stages"] != "1" or "above --max-tokens 100" not in rows[4]["status"]:
        fail(f"flags or --max-tokens: {rows}")
    # AITER's own names tdmsim does not model (an activation, a dtype, a quantisation):
    # listed, not input errors.
    path = os.path.join(tmp, "aiter-names.csv")
    with open(path, "w") as f:
        f.write(lines[0] + "\n" + lines[1].replace("ActivationType.Silu", "ActivationType.No", 1) + "\n"
                + lines[1].replace("torch.bfloat16,torch.bfloat16,torch.bfloat16", "torch.bfloat16,torch.float32,"
                                   "torch.float32", 1) + "\n"
                + lines[1].replace("QuantType.No", "QuantType.per_256x128", 1) + "\n")
    want = {2: "act_type ActivationType.No", 3: "q_dtype_a 'torch.float32' is AITER's",
            4: "QuantType.per_256x128 is AITER's"}
    # AITER's marks of a failed measurement (inf, -1, an empty field) and block_m 0 (no
    # kernel found) are listed too. AITER's ActivationType.Relu2 (gated: use_g1u1 1) is timed
    # as a SiLU layer (one epilogue cost for every activation), and its kernel column says so.
    with open(path, "a") as f:
        f.write(lines[1].replace(",8.0,", ",inf,", 1) + "\n")
        f.write(lines[1].replace(",8.0,", ",-1,", 1) + "\n")
        f.write(lines[1].replace(",10.0,", ",,", 1) + "\n")
        f.write(lines[1].replace(",32,0,10.0,", ",0,0,10.0,", 1) + "\n")
        f.write(lines[1].replace("ActivationType.Silu", "ActivationType.Relu2", 1) + "\n")
    want.update({5: "published time us2 inf (AITER's mark of a failed measurement)",
                 6: "published time us2 -1 (AITER's mark", 7: "published time us1 '' (AITER's mark",
                 8: "block_m 0 (AITER's tuner found no kernel", 9: "simulated"})
    rows, _ = predicted(tdmsim, tmp, path)
    for n, text in want.items():
        if text not in rows[n]["status"]:
            fail(f"line {n}: status {rows[n]['status']!r}, expected {text!r}")
    relu2 = rows[9]
    if not relu2["kernel"].startswith("act_type ActivationType.Relu2 timed as silu"):
        fail(f"line 9: kernel column {relu2['kernel']!r} does not say the Relu2 row was timed as silu")
    # ... and takes the time of the same row with SiLU (line 2 is that row before the edits
    # above, so its own times must match).
    silu_path = os.path.join(tmp, "silu-only.csv")
    with open(silu_path, "w") as f:
        f.write(lines[0] + "\n" + lines[1] + "\n")
    silu, _ = predicted(tdmsim, tmp, silu_path)
    if (relu2["sim_us1"], relu2["sim_us2"]) != (silu[2]["sim_us1"], silu[2]["sim_us2"]):
        fail(f"Relu2 row {relu2['sim_us1']}/{relu2['sim_us2']} us, the SiLU row {silu[2]['sim_us1']}/"
             f"{silu[2]['sim_us2']} us")
    # A table without run_1stage is 2-stage throughout (AITER's cfg.get default).
    head = lines[0].split(",")
    drop = head.index("run_1stage")
    path = os.path.join(tmp, "no-run-1stage.csv")
    with open(path, "w") as f:  # its column names with spaces after the commas, as AITER's reader takes them
        f.write(", ".join(v for i, v in enumerate(lines[0].split(",")) if i != drop) + "\n")
        f.write(",".join(v for i, v in enumerate(lines[1].split(",")) if i != drop) + "\n")
    rows, _ = predicted(tdmsim, tmp, path)
    if rows[2]["status"] != "simulated" or rows[2]["stages"] != "2":
        fail(f"a table without run_1stage: {rows[2]}")
    # A name that looks like an option is a name all the same: refused by tdmsim, listed.
    path = os.path.join(tmp, "dash.csv")
    with open(path, "w") as f:
        f.write(lines[0] + "\n" + lines[1].replace("moe_ck2stages_gemm1_", "--help_", 1) + "\n")
    rows, _ = predicted(tdmsim, tmp, path)
    if "column kernelName1: tile '--help_256x32x64x128" not in rows[2]["status"]:
        fail(f"a name starting with '-': {rows[2]['status']!r}")
    # doweight_stage1 reaches the model (gating.weight_on_input): a per-token fp8 1-stage
    # layer then runs AITER's fmoe_g1u1_tkw1, whose width pick counts 32-row blocks.
    path = os.path.join(tmp, "doweight.csv")
    head = lines[0].split(",")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        for dw in (0, 1):
            v = dict(zip(head, lines[2].split(",")))  # line 3: fp8 FNUZ per-token on mi300x
            v.update(token=64, model_dim=5120, inter_dim=1024, expert=128, topk=1, doweight_stage1=dw,
                     block_m=32, run_1stage=1, kernelName1="", kernelName2="", us2=0.0)
            w.writerow([v[c] for c in head])
    rows, _ = predicted(tdmsim, tmp, path)
    if rows[2]["status"] != "simulated" or rows[3]["status"] != "simulated" or \
            rows[2]["sim_us1"] == rows[3]["sim_us1"]:
        fail(f"doweight_stage1 0 and 1 must both simulate, at different times: {rows}")
    sys.path.insert(0, os.path.join(ROOT, "validation", "calibration"))
    import aiter_mi355x
    shared = {(e, k): aiter_mi355x.fused_shared_expert(e, k) for e, k in ((257, 9), (385, 9), (161, 9), (33, 8),
                                                                         (128, 8), (17, 2))}
    if shared != {(257, 9): True, (385, 9): True, (161, 9): True, (33, 8): False, (128, 8): False, (17, 2): False}:
        fail(f"fused shared expert rule: {shared}")


def check_machine(tdmsim, tmp):
    # 304 CUs mapped to MI325X (also 304) instead of MI300X: line 2 runs there.
    rows, _ = predicted(tdmsim, tmp, LAYOUT, "--machine", "304=mi325x")
    if rows[2]["machine"] != "mi325x" or rows[2]["status"] != "simulated":
        fail(f"--machine 304=mi325x: line 2 {rows[2]}")
    # A machine of another CU count is another GPU: refused, naming both counts.
    p = run(tdmsim, LAYOUT, "--machine", "80=mi325x")
    if p.returncode != 2 or "mi325x runs a layer on 304 CUs, not 80" not in p.stderr:
        fail(f"--machine 80=mi325x: exit {p.returncode}, {p.stderr}")
    p = run(tdmsim, LAYOUT, "--machine", "80=no_such_machine")
    if p.returncode != 2 or "no machine 'no_such_machine'" not in p.stderr:
        fail(f"--machine with an unknown machine: exit {p.returncode}, {p.stderr}")


def check_bad(tdmsim, tmp):
    with open(LAYOUT) as f:
        lines = f.read().splitlines()
    cases = {
        "no-us1.csv": (lines[0].replace(",us1,", ",us_one,"), "no-us1.csv:1: missing column(s) us1"),
        "not-number.csv": (lines[0] + "\n" + lines[1].replace(",16,1024,", ",sixteen,1024,", 1),
                           "not-number.csv:2: column token: 'sixteen' is not a whole number"),
        # Numbers and flags tdmsim's table reader refuses are refused here too.
        "signed.csv": (lines[0] + "\n" + lines[1].replace(",16,1024,", ",+16,1024,", 1),
                       "signed.csv:2: column token: '+16' is not a whole number"),
        "exponent.csv": (lines[0] + "\n" + lines[1].replace(",16,1024,", ",1.6e1,1024,", 1),
                         "exponent.csv:2: column token: '1.6e1' is not a whole number"),
        "ksplit.csv": (lines[0] + "\n" + lines[1].replace(",32,0,10.0,", ",32,-1,10.0,", 1),
                       "ksplit.csv:2: column ksplit: '-1' is not a whole number"),
        "nul.csv": (lines[0] + "\n" + lines[1].replace("moe_ck2stages_gemm1_", "moe\0", 1),
                    "nul.csv:2: column kernelName1: a NUL byte"),
        "nul-format.csv": (lines[0] + "\n" + lines[1].replace("QuantType.No", "QuantType.\0No", 1),
                           "nul-format.csv:2: column q_type: a NUL byte"),
        "upper-flag.csv": (lines[0] + "\n" + lines[1][:-2] + ",TRUE",
                           "upper-flag.csv:2: column run_1stage: 'TRUE' is not 0, 1, True or False"),
        "no-tiles.csv": (lines[0].replace("kernelName2", "kernel2"), "missing tile columns"),
        "short-row.csv": (lines[0] + "\n" + lines[1] + "\n" + "304,16,1024", "short-row.csv:3: 21 columns expected"),
        "bad-names.csv": (lines[0] + "\n" + lines[1].replace("QuantType.No", "QuantType.per_1x64"),
                          "bad-names.csv:2: columns q_dtype_a/q_dtype_w/q_type"),
        "bad-act.csv": (lines[0] + "\n" + lines[1].replace("ActivationType.Silu", "ActivationType.Relu"),
                        "bad-act.csv:2: act_type"),
        "header-only.csv": (lines[0], "header-only.csv: no data rows"),
        "negative.csv": (lines[0] + "\n" + lines[1].replace(",10.0,", ",-10.0,", 1), "negative.csv:2: column us1"),
        "bad-time.csv": (lines[0] + "\n" + lines[1].replace(",10.0,", ",ten,", 1),
                         "bad-time.csv:2: column us1: 'ten' is not a number"),
        "bad-flag.csv": (lines[0] + "\n" + lines[1][:-2] + ",2", "bad-flag.csv:2: column run_1stage: '2' is not 0, 1, True or False"),
        # A blank line is skipped, and the error still names the row's own line (4).
        "blank-line.csv": (lines[0] + "\n" + lines[1] + "\n\n" + lines[1].replace(",16,1024,", ",x,1024,", 1),
                           "blank-line.csv:4: column token"),
        "short-last.csv": (lines[0] + "\n" + lines[1].rsplit(",", 1)[0], "short-last.csv:2: 21 columns expected"),
    }
    for name, (text, message) in cases.items():
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text + "\n")
        out, md = os.path.join(tmp, name + ".rows.csv"), os.path.join(tmp, name + ".md")
        p = run(tdmsim, path, "--output", out, "--markdown", md)
        if p.returncode != 2 or message not in p.stderr:
            fail(f"{name}: exit {p.returncode}, expected 2 with {message!r}: {p.stderr}")
        if os.path.exists(out) or os.path.exists(md):
            fail(f"{name}: output written despite the error")
    p = run(tdmsim, os.path.join(tmp, "absent.csv"))
    if p.returncode != 2 or "absent.csv: not a regular file" not in p.stderr:
        fail(f"a missing file: exit {p.returncode}: {p.stderr}")
    p = run(tdmsim, "/dev/null", "--output", os.path.join(tmp, "x.csv"))
    if p.returncode != 2 or "/dev/null" not in p.stderr:
        fail(f"a special file: exit {p.returncode}: {p.stderr}")


# AITER's format names per machine (fp8 FNUZ on MI300X, OCP and the MX formats on MI355X),
# and shapes of DeepSeek-V3 TP8 (a fused shared expert), Qwen3-30B and gpt-oss-120b TP8.
# The columns of ../shared/calibration/mi355x_fused_moe_aiter_tuned.csv, the layout the
# made-up grids below are written in.
SHORT_COLUMNS = ("cu_num", "token", "model_dim", "inter_dim", "expert", "topk", "act_type", "q_dtype_a", "q_dtype_w",
                 "q_type", "block_m", "ksplit", "us1", "tile1", "us2", "tile2", "us", "run_1stage", "source")
GRID_FORMATS = {
    304: [("bfloat16", "bfloat16", "No"), ("float8_e4m3fnuz", "float8_e4m3fnuz", "per_Token"),
          ("float8_e4m3fnuz", "float8_e4m3fnuz", "per_1x128"), ("float8_e4m3fnuz", "float8_e4m3fnuz", "per_Tensor"),
          ("int8", "int8", "per_Token"), ("bfloat16", "int4", "per_1x128"), ("float8_e4m3fnuz", "int4", "per_Token")],
    256: [("bfloat16", "bfloat16", "No"), ("float8_e4m3fn", "float8_e4m3fn", "per_1x128"),
          ("float8_e4m3fn", "float8_e4m3fn", "per_1x32"), ("float4_e2m1fn_x2", "float4_e2m1fn_x2", "per_1x32"),
          ("bfloat16", "float4_e2m1fn_x2", "per_1x32"), ("float8_e4m3fn", "float4_e2m1fn_x2", "per_1x32"),
          ("bfloat16", "int4", "per_Token")],
}
GRID_SHAPES = [(7168, 256, 257, 9, "Silu"), (2048, 768, 128, 8, "Silu"), (2880, 360, 128, 4, "Swiglu")]


def check_grid(tdmsim, tmp):
    """Every format of each machine on three shapes, at 1 and 512 tokens, 1- and 2-stage
    (made-up times of 1 us): every row simulates, and none is faster than the roofline,
    a lower bound by construction."""
    path = os.path.join(tmp, "grid.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(SHORT_COLUMNS)
        for cu, formats in GRID_FORMATS.items():
            for i, (a, wt, q) in enumerate(formats):
                for j, (h, inter, e, k, act) in enumerate(GRID_SHAPES):
                    if (i + j) % 2:  # half the format x shape pairs, each format on some shape
                        continue
                    for tokens, one in ((1, 1), (1, 0), (512, 1), (512, 0)):
                        w.writerow([cu, tokens, h, inter, e, k, f"ActivationType.{act}", f"torch.{a}", f"torch.{wt}",
                                    f"QuantType.{q}", 16 if tokens == 1 else 64, 0, 1.0, "", 1.0, "", 2.0, one,
                                    f"grid-{cu}"])
    rows, _ = predicted(tdmsim, tmp, path)
    not_sim = [f"line {n}: {r['status']}" for n, r in rows.items() if r["status"] != "simulated"]
    if not_sim:
        fail("rows not simulated:\n" + "\n".join(not_sim))
    below = [f"line {n} ({r['machine']}, {r['format']}, {r['tokens']} tok, {r['stages']}-stage): "
             f"{r['sim_us']} us < roofline {r['roofline_us']} us" for n, r in rows.items()
             if float(r["sim_us"]) < float(r["roofline_us"])]
    if below:
        fail("simulated faster than the roofline:\n" + "\n".join(below))
    if len(rows) < 40:
        fail(f"{len(rows)} grid rows, expected at least 40")


# The orderings a memory- or matrix-bound layer must keep, whatever the fitted values: two
# shapes (DeepSeek-V3 TP8, gpt-oss at AITER's padded 3072) at 1-4096 tokens, the formats
# with a native matrix path on each machine (the dequantising ones, bf16 x int4 and
# bf16 x fp4, convert every weight on the vector units: at 1 token that work can outlast
# the bytes it saves, and MI355X's vector rate is MI300X's, so they are not ordered here).
ORDER_SHAPES = {"dsv3-tp8": (7168, 256, 257, 9, "Silu"), "gpt-oss": (3072, 3072, 128, 4, "Swiglu")}
ORDER_TOKENS = (1, 16, 256, 4096)
ORDER_FORMATS = {
    304: {"bf16": ("bfloat16", "bfloat16", "No"), "fp8": ("float8_e4m3fnuz", "float8_e4m3fnuz", "per_Token")},
    256: {"bf16": ("bfloat16", "bfloat16", "No"), "fp8": ("float8_e4m3fn", "float8_e4m3fn", "per_Token"),
          "fp4": ("float4_e2m1fn_x2", "float4_e2m1fn_x2", "per_1x32")},
}
# The token series may dip by 2% and no more: about the noise floor docs/sweeps.md
# "Sensitivity" measures (small shifts of any timing reshuffle a layer's last round of
# workgroups).
ORDER_NOISE = 0.02
# Half the bytes (decode) or twice the matrix rate (prefill) must show: at least this much
# faster. The model's margins are far wider (2026-12-06: fp8 / bf16 0.50-0.66, fp4 / fp8
# 0.52-0.72, the closest at 1 token).
# Compared on the 2-stage kernels, whose tiles are the same for every format. AITER's
# 1-stage kernels differ by format: its rule (asm_fmoe.cu, aiter_one_stage_tile) picks the
# widest kernel at decode, sized on the sort's padded blocks, and the per-token fp8 list has
# a 512-wide one, so half as many workgroups carry the weights at 1 token (gpt-oss on
# mi300x: 87.6 us against bf16's 92.5 on its 256-wide kernel).
ORDER_GAIN = 0.9


def check_order(tdmsim, tmp):
    """Physical orderings, on made-up times (only the simulated ones are read): every
    series, 1- and 2-stage, is monotone in tokens (within the noise); on the 2-stage
    kernels fp8 beats bf16 and fp4 beats fp8 at every token count (half the weight bytes;
    twice the matrix rate); MI355X (more HBM bandwidth and matrix rate) beats MI300X on
    every row both run, 1-stage rows included."""
    path = os.path.join(tmp, "order.csv")
    key = {}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(SHORT_COLUMNS)
        line = 1
        for cu, formats in ORDER_FORMATS.items():
            for shape, (h, inter, e, k, act) in ORDER_SHAPES.items():
                for fmt, (a, wt, q) in formats.items():
                    for one in ((0, 1) if fmt != "fp4" else (0,)):
                        for tokens in ORDER_TOKENS:
                            routed = tokens * k / e  # AITER's block_m by rows per expert
                            block_m = 32 if routed <= 32 else 64 if routed <= 256 else 128
                            w.writerow([cu, tokens, h, inter, e, k, f"ActivationType.{act}", f"torch.{a}",
                                        f"torch.{wt}", f"QuantType.{q}", block_m, 0, 1.0, "", 1.0, "", 2.0, one,
                                        f"order-{cu}"])
                            line += 1
                            key[(cu, shape, fmt, 2 - one, tokens)] = line
    rows, _ = predicted(tdmsim, tmp, path)
    if sorted(rows) != sorted(key.values()):
        fail(f"rows {sorted(rows)}: every input row (lines 2-{line}) must be in the output")
    not_sim = [f"line {n}: {r['status']}" for n, r in rows.items() if r["status"] != "simulated"]
    if not_sim:
        fail("rows not simulated:\n" + "\n".join(not_sim))
    t = {k: float(rows[n]["sim_us"]) for k, n in key.items()}
    bad = []
    for (cu, shape, fmt, stages, tokens), us in t.items():
        what = f"{shape} {fmt} {stages}-stage on cu_num {cu}"
        i = ORDER_TOKENS.index(tokens)
        if i:
            before = t[(cu, shape, fmt, stages, ORDER_TOKENS[i - 1])]
            if us < (1 - ORDER_NOISE) * before:
                bad.append(f"{what}: {us:.1f} us at {tokens} tokens, below {ORDER_TOKENS[i - 1]} tokens' {before:.1f}")
        for fewer, more in (("fp8", "bf16"), ("fp4", "fp8")):
            other = t.get((cu, shape, more, stages, tokens))
            if fmt == fewer and stages == 2 and other is not None and us > ORDER_GAIN * other:
                bad.append(f"{what} at {tokens} tokens: {us:.1f} us, not {1 - ORDER_GAIN:.0%} faster than "
                           f"{more}'s {other:.1f}")
        mi300x = t.get((304, shape, fmt, stages, tokens)) if cu == 256 else None
        if mi300x is not None and us >= mi300x:
            bad.append(f"{what} at {tokens} tokens: {us:.1f} us, not faster than cu_num 304's {mi300x:.1f}")
    if bad:
        fail("orderings broken:\n" + "\n".join(bad))


def check_crash(tdmsim, tmp):
    """A tdmsim that fails (not exit 2) on a row's names: the row is listed as a crash, the
    script exits 1, and the other rows are kept; a row already set aside (no machine) does
    not ask tdmsim about its names, so it keeps its own reason."""
    fake = os.path.join(tmp, "tdmsim")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\n"
                "case \"$*\" in *aiter-tile*moe_ck2stages_gemm1_256x64x128x128*) echo boom >&2; exit 139;; esac\n"
                f"exec {tdmsim} \"$@\"\n")
    os.chmod(fake, 0o755)
    out, md = os.path.join(tmp, "rows.csv"), os.path.join(tmp, "report.md")
    p = subprocess.run([sys.executable, SCRIPT, LAYOUT, "--tdmsim", fake, "--jobs", "2", "--quiet",
                        "--output", out, "--markdown", md], capture_output=True, text=True)
    if p.returncode != 1 or "tdmsim crashed on 1 row(s)" not in p.stderr:
        fail(f"a failing tdmsim: exit {p.returncode}, expected 1 naming the row: {p.stderr}")
    with open(out) as f:
        rows = {int(r["line"]): r for r in csv.DictReader(f)}
    if sorted(rows) != list(range(2, 11)):
        fail(f"rows {sorted(rows)}: every row must be kept")
    if "aiter-tile" not in rows[3]["status"] or "exit 139" not in rows[3]["status"] or "\n" in rows[3]["status"]:
        fail(f"line 3: status {rows[3]['status']!r}, expected the failure on one line")
    if "cu_num 80: no machine" not in rows[5]["status"] or rows[2]["status"] != "simulated":
        fail(f"lines 2 and 5 keep their own status: {rows[2]['status']!r}, {rows[5]['status']!r}")


def check_config(tdmsim, tmp):
    """The script runs a row as `tdmsim run --kernel-config TABLE` runs it: the same stage
    times, CK v1 names (one LDS buffer) included. Qwen3-235B TP8 on MI300X at 4096 and 16
    tokens (invented times); at 16 tokens one LDS buffer against two changes the down
    stage by a third, so the check can tell them apart."""
    sys.path.insert(0, os.path.join(ROOT, "validation"))
    import tdmsimtools  # noqa: E402

    def write_model(file, name, inter, experts, top_k):
        """A model of the row's shape (hidden 4096), for the scenarios below."""
        with open(os.path.join(tmp, file), "w") as f:
            f.write(f"kind: model\nname: {name}\ndescription: test\nsource: test\nhidden_size: 4096\n"
                    f"intermediate_size: {inter}\nexperts: {experts}\ntop_k: {top_k}\n"
                    "gating: {scoring: softmax, renormalize: true}\nactivation: silu\nlayers: {moe: 1, total: 1}\n")

    def layer(name, model, tokens, formats, kernel, extra=()):
        """`tdmsim run` of an MI300X layer with AITER's kernels (uniform routing, no router):
        its kernel stage times and the kernel: line's reason."""
        sc = os.path.join(tmp, name + ".yaml")
        with open(sc, "w") as f:
            f.write(f"kind: scenario\nname: {name}\ndescription: test\nmachine: mi300x\nmodel: {model}\n"
                    f"tokens: {tokens}\n{formats}path: software\nseed: 1\n"
                    "routing: {source: uniform, router_stage: given}\n"
                    f"kernel: {{source: aiter, {kernel}raster_group: 1}}\n")
        s = tdmsimtools.run(tdmsim, sc, os.path.join(tmp, "out-" + name), path="software", extra=extra, label=name)
        return tdmsimtools.stage_times(s, kernel_only=True), s["layer"]["kernel_reason"]

    def stage_of(stage, model, tokens, formats):
        """layer() of one shape and format, as (that stage's time to 3 decimals, the reason)."""
        def at(name, kernel, extra=()):
            by, reason = layer(name, model, tokens, formats, kernel, extra)
            return round(by[stage], 3), reason
        return at

    def same_as_script(at, name, table, row, named, what):
        """`--kernel-config TABLE` run through `at`: its reason holds `named`, and its time is
        the script's stage 1 of that row (written to 4 decimals: compared to the last digit)."""
        want, reason = at(name, "", ("--kernel-config", table))
        if named not in reason:
            fail(f"{what}: --kernel-config's reason lacks {named!r}: {reason}")
        got = float(row["sim_us1"])
        if abs(got - want) > 0.0015:
            fail(f"{what}: aiter_tuned.py gives {got} us, tdmsim run --kernel-config {want}")
        return want

    names = ("moe_ck2stages_gemm1_256x128x64x64_1x4_TypeCast_v1_Nswizzle0_Quant0_MulRoutedWeight0_silu_B16_B16_B16,"
             "10.0,moe_ck2stages_gemm2_256x128x64x64_1x4_TypeCastExpertWeight_v1_Nswizzle0_Quant0_MulRoutedWeight1_"
             "B16_B16_B16")
    table = os.path.join(tmp, "table.csv")
    with open(table, "w") as f:
        f.write(LAYOUT_HEADER + "\n")
        for tokens in (4096, 16):
            f.write(f"304,{tokens},4096,192,128,8,ActivationType.Silu,torch.bfloat16,torch.bfloat16,torch.bfloat16,"
                    f"QuantType.No,1,0,128,0,10.0,{names},20.0,0\n")
    rows, _ = predicted(tdmsim, tmp, table)
    write_model("model.yaml", "qwen3-tp8-shape", 192, 128, 8)

    def stages(name, tokens, kernel, extra=()):
        by, reason = layer(name, "model.yaml", tokens, "dtype: bf16\n", kernel, extra)
        return (by["gate_up"], by["down"]), reason

    for line, tokens in ((2, 4096), (3, 16)):
        want, reason = stages(f"line{line}", tokens, "", ("--kernel-config", table))
        if "CK pipelines: gate/up v1 (1 LDS buffer), down v1 (1 LDS buffer)" not in reason:
            fail(f"line {line}: --kernel-config did not take the v1 names: {reason}")
        # (The script's CSV keeps 4 decimals: equal within that rounding, not rounded twice.)
        got = (float(rows[line]["sim_us1"]), float(rows[line]["sim_us2"]))
        if any(abs(a - b) > 6e-5 for a, b in zip(got, want)):
            fail(f"line {line}: aiter_tuned.py gives stages {got} us, tdmsim run --kernel-config {want}")
        if line == 3:
            two, _ = stages("two", tokens, "stages: 2, block_m: 128, split_k: 1, gate_up_tile: 256x128x64x64, "
                            "down_tile: 256x128x64x64, gate_up_lds_buffers: 2, down_lds_buffers: 2, ")
            if abs(two[1] / want[1] - 1) < 0.1:
                fail(f"16 tokens: down {two[1]} us with two LDS buffers, {want[1]} us with one: the check "
                     "cannot tell them apart")

    # A 1-stage row naming AITER's 1-stage kernel (fp8 FNUZ per-token, I = 512, 512 tokens):
    # the script runs its 32 x 128 as --kernel-config does, and AITER's heuristic
    # kernel (no name) gives another time, so the name is what the check sees.
    one = os.path.join(tmp, "one.csv")
    with open(one, "w") as f:
        f.write(LAYOUT_HEADER + "\n")
        f.write("304,512,4096,512,128,8,ActivationType.Silu,torch.bfloat16,torch.float8_e4m3fnuz,"
                "torch.float8_e4m3fnuz,QuantType.per_Token,1,0,32,0,30.0,"
                "_ZN5aiter50fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x128E,0.0,,30.0,1\n")
    rows, _ = predicted(tdmsim, tmp, one)
    write_model("model-512.yaml", "i512-shape", 512, 128, 8)

    fused = stage_of("fused", "model-512.yaml", 512, "dtype: fp8_e4m3_fnuz\nquant: per_token\n")

    want = same_as_script(fused, "one-table", one, rows[2], "tiles 256x32x128x128 for the 1-stage kernel (named",
                          "1-stage row")
    heuristic, reason = fused("one-heuristic", "stages: 1, block_m: 32, ")
    if "256x32x128x128" in reason or abs(heuristic / want - 1) < 0.02:
        fail(f"1-stage row: AITER's heuristic kernel ({heuristic} us: {reason}) is the named one ({want} us): "
             "the check cannot tell them apart")

    # An assembly stage-1 name's workgroups a CU (_3tg): the script passes them on as
    # kernel.gate_up_workgroups_per_cu, so its stage 1 is --kernel-config's; CK's estimate
    # (2 a CU, the key left at 0) gives another time at 4096 tokens (line 3).
    asm = os.path.join(DATA, "asm-stage1-int8-mixtral-tp8-mi300x.csv")
    rows, _ = predicted(tdmsim, tmp, asm)
    write_model("model-mixtral-tp8.yaml", "mixtral-tp8-shape", 1792, 8, 2)

    int8 = stage_of("gate_up", "model-mixtral-tp8.yaml", 4096, "dtype: int8\nquant: per_token\n")

    want = same_as_script(int8, "asm-table", asm, rows[3], "gate/up: 3 workgroups a CU", "assembly stage-1 row")
    estimated, _ = int8("asm-estimate", "stages: 2, block_m: 32, split_k: 1, gate_up_tile: 256x32x128x256, ")
    if abs(estimated / want - 1) < 0.02:
        fail(f"assembly stage-1 row: CK's estimate ({estimated} us) and the name's 3 a CU ({want} us) agree: "
             "the check cannot tell them apart")


def check_plots(tdmsim, tmp):
    """--plots DIR draws a figure per machine with simulated rows (the fixture has mi300x and
    mi355x rows), linked from the Markdown report; a --plots that is a file is refused
    (exit 2) before anything is simulated."""
    figs = os.path.join(tmp, "figs")
    rows, text = predicted(tdmsim, tmp, LAYOUT, "--plots", figs)
    for machine in ("mi300x", "mi355x"):
        png = os.path.join(figs, f"{machine}-simulated-vs-published.png")
        if not os.path.isfile(png) or open(png, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            fail(f"{png} is not a PNG")
        if f"](figs/{machine}-simulated-vs-published.png)" not in text:
            fail(f"the report does not show the {machine} figure:\n{text}")
    if sorted(os.listdir(figs)) != ["mi300x-simulated-vs-published.png", "mi355x-simulated-vs-published.png"]:
        fail(f"--plots wrote {sorted(os.listdir(figs))}: one figure per machine, no temporary file")
    for bad in (LAYOUT, os.path.join(LAYOUT, "sub")):  # a file, a folder under a file
        p = run(tdmsim, LAYOUT, "--plots", bad)
        if p.returncode != 2 or "not a folder" not in p.stderr:
            fail(f"--plots {bad}: exit {p.returncode}, expected 2: {p.stderr}")
    # A published time far off any axis (1e308 us) and one of 0.001 us (+2e6 %): the figure
    # is drawn all the same (the first row left out of it, the second at the axis' edge).
    with open(LAYOUT) as f:
        lines = f.read().splitlines()
    odd = os.path.join(tmp, "odd.csv")
    with open(odd, "w") as f:
        f.write("\n".join([lines[0], lines[1], lines[1].replace(",18.0,0", ",1e308,0").replace("304,16,", "304,32,"),
                           lines[1].replace(",18.0,0", ",0.001,0").replace("304,16,", "304,64,")]) + "\n")
    rows, text = predicted(tdmsim, tmp, odd, "--plots", os.path.join(tmp, "odd"))
    if [rows[i]["status"] for i in (2, 3, 4)] != ["simulated"] * 3:
        fail(f"odd times: rows {[rows[i]['status'] for i in (2, 3, 4)]}, expected all simulated")
    if not os.path.isfile(os.path.join(tmp, "odd", "mi300x-simulated-vs-published.png")):
        fail("odd times: no figure")
    # No row simulated: no figure, said on stderr.
    none = os.path.join(tmp, "none.csv")
    with open(none, "w") as f:
        f.write(lines[0] + "\n" + lines[4] + "\n")  # cu_num 80: no machine
    p = subprocess.run([sys.executable, SCRIPT, none, "--tdmsim", tdmsim, "--plots", os.path.join(tmp, "none"),
                        "--markdown", os.path.join(tmp, "none.md")], capture_output=True, text=True)
    if p.returncode != 0 or "no simulated row, no figure" not in p.stderr or os.listdir(os.path.join(tmp, "none")):
        fail(f"no simulated row: exit {p.returncode}, {p.stderr!r}, expected 0 and a note, no figure")


# The CK 2-stage MoE instances AITER builds, per list, as (threads, M, N, K, MWaves, NWaves,
# pipeline version): ROCm/aiter csrc/ck_gemm_moe_2stages_codegen/gemm_moe_ck2stages_common.py
# at 3cbec3c (the lists without _gfx950 are the ones other GPUs, gfx942 among them, build),
# with the machine (cu_num) and AITER names of the format each list serves.
CK_INSTANCES = {
    "a16w16": (304, ("bfloat16", "bfloat16", "No"), "B16_B16_B16",
               [(256, 32, 64, 128, 1, 4, 1), (256, 32, 64, 64, 1, 4, 1), (256, 64, 64, 128, 1, 4, 1),
                (256, 64, 64, 64, 1, 4, 1), (256, 128, 64, 64, 1, 4, 1), (256, 64, 128, 128, 1, 4, 3),
                (256, 128, 128, 128, 1, 4, 3), (256, 128, 128, 64, 1, 4, 3), (256, 256, 128, 64, 1, 4, 3)],
               [(256, 32, 64, 128, 1, 4, 1), (256, 64, 64, 128, 1, 4, 1), (256, 128, 64, 64, 1, 4, 1),
                (256, 256, 64, 64, 1, 4, 1), (256, 64, 128, 128, 1, 4, 3), (256, 128, 128, 64, 1, 4, 3),
                (256, 256, 128, 64, 1, 4, 3)]),
    "a8w8": (304, ("float8_e4m3fnuz", "float8_e4m3fnuz", "per_Token"), "F8_F8_B16",
             [(256, 32, 64, 256, 1, 4, 1), (256, 32, 64, 128, 1, 4, 1), (256, 64, 64, 256, 1, 4, 1),
              (256, 64, 64, 128, 1, 4, 1), (256, 128, 64, 128, 1, 4, 1), (256, 64, 128, 256, 1, 4, 3),
              (256, 128, 128, 256, 1, 4, 3), (256, 128, 128, 128, 1, 4, 3), (256, 256, 128, 128, 1, 4, 3)],
             [(256, 32, 64, 256, 1, 4, 1), (256, 64, 64, 256, 1, 4, 1), (256, 128, 64, 128, 1, 4, 1),
              (256, 256, 64, 128, 1, 4, 1), (256, 64, 128, 256, 1, 4, 3), (256, 128, 128, 128, 1, 4, 3),
              (256, 256, 128, 128, 1, 4, 3), (256, 32, 64, 128, 1, 4, 1), (256, 64, 128, 128, 1, 4, 3)]),
    "a8w8blkscale_gfx942": (304, ("float8_e4m3fnuz", "float8_e4m3fnuz", "per_1x128"), "F8_F8_B16",
                            [(256, 64, 128, 128, 1, 4, 3)], [(256, 64, 128, 128, 1, 4, 3)]),
    "a8w4": (304, ("float8_e4m3fnuz", "int4", "per_Token"), "F8_I4_B16",
             [(256, 32, 64, 128, 1, 4, 1), (256, 64, 64, 128, 1, 4, 1), (256, 128, 64, 128, 1, 4, 1),
              (256, 256, 64, 128, 1, 4, 1)],
             [(256, 32, 128, 128, 1, 4, 1), (256, 64, 128, 128, 1, 4, 1), (256, 128, 128, 128, 1, 4, 1),
              (256, 256, 128, 128, 1, 4, 1)]),
    "a16w16_gfx950": (256, ("bfloat16", "bfloat16", "No"), "B16_B16_B16",
                      [(256, 32, 64, 128, 1, 4, 1), (256, 32, 64, 64, 1, 4, 1), (256, 64, 64, 128, 1, 4, 1),
                       (256, 64, 64, 64, 1, 4, 1), (256, 128, 64, 64, 1, 4, 1), (256, 128, 128, 64, 1, 4, 3),
                       (256, 256, 128, 64, 1, 4, 3)],
                      [(256, 32, 128, 128, 1, 4, 1), (256, 64, 128, 128, 1, 4, 1), (256, 128, 128, 64, 1, 4, 1),
                       (256, 256, 128, 64, 1, 4, 1), (256, 128, 128, 64, 1, 4, 3), (256, 256, 128, 64, 1, 4, 3)]),
    "a8w8_gfx950": (256, ("float8_e4m3fn", "float8_e4m3fn", "per_Token"), "F8_F8_B16",
                    [(256, 32, 64, 256, 1, 4, 1), (256, 32, 64, 128, 1, 4, 1), (256, 64, 64, 256, 1, 4, 1),
                     (256, 64, 64, 128, 1, 4, 1), (256, 128, 64, 128, 1, 4, 1), (256, 128, 128, 128, 1, 4, 3),
                     (256, 256, 128, 128, 1, 4, 3)],
                    [(256, 32, 128, 256, 1, 4, 1), (256, 64, 128, 256, 1, 4, 1), (256, 128, 128, 128, 1, 4, 1),
                     (256, 256, 128, 128, 1, 4, 1), (256, 128, 128, 128, 1, 4, 3), (256, 256, 128, 128, 1, 4, 3)]),
    "a8w8blkscale_gfx950": (256, ("float8_e4m3fn", "float8_e4m3fn", "per_1x128"), "F8_F8_B16",
                            [(256, 64, 128, 128, 1, 4, 3)], [(256, 64, 128, 128, 1, 4, 3)]),
    "a4w4": (256, ("float4_e2m1fn_x2", "float4_e2m1fn_x2", "per_1x32"), "FP4X2_FP4X2_B16",
             [(256, 32, 128, 128, 1, 4, 3), (256, 64, 64, 128, 2, 2, 3), (256, 128, 64, 128, 2, 2, 3)],
             [(64, 32, 32, 128, 1, 1, 1), (64, 64, 64, 128, 1, 1, 1), (64, 128, 128, 128, 1, 1, 1),
              (256, 32, 128, 128, 1, 4, 3), (256, 64, 64, 128, 2, 2, 3), (256, 128, 64, 128, 2, 2, 3)]),
}


def ck_name(stage, inst, op, dtypes):
    threads, m, n, k, mw, nw, ver = inst
    tail = "MulRoutedWeight0_silu" if stage == 1 else "MulRoutedWeight1"
    return (f"moe_ck2stages_gemm{stage}_{threads}x{m}x{n}x{k}_{mw}x{nw}_{op}_v{ver}_Nswizzle0_Quant0_"
            f"{tail}_{dtypes}")


def check_instances(tdmsim, tmp):
    """Every CK 2-stage instance AITER builds for a GPU, named in its own kernel-name form
    on a row of that GPU (a 1024-token layer, H 4096, I 1536, 128 experts top-8; made-up
    times): each simulates, none refused as not fitting a CU (a kernel AITER compiles for
    that GPU fits its LDS and registers). Each instance is paired with one of the other
    stage of the same M, so every instance of both stages appears at least once."""
    path = os.path.join(tmp, "instances.csv")
    pairs = []
    for tag, (cu, (a, w, q), dtypes, gate_up, down) in CK_INSTANCES.items():
        add = [(g, next(d for d in down if d[1] == g[1])) for g in gate_up]
        add += [(next(g for g in gate_up if g[1] == d[1]), d) for d in down]
        for g, d in dict.fromkeys(add):
            pairs.append((tag, cu, a, w, q, dtypes, g, d))
    with open(path, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(LAYOUT_HEADER.split(","))
        for tag, cu, a, w, q, dtypes, g, d in pairs:
            bf16 = a == "bfloat16"
            op1, op2 = ("TypeCast", "TypeCastExpertWeight") if bf16 else ("MulABScale", "MulABScaleExpertWeight")
            wr.writerow([cu, 1024, 4096, 1536, 128, 8, "ActivationType.Silu", "torch.bfloat16", f"torch.{a}",
                         f"torch.{w}", f"QuantType.{q}", 1, 0, g[1], 0, 10.0, ck_name(1, g, op1, dtypes), 10.0,
                         ck_name(2, d, op2, dtypes), 20.0, 0])
    rows, _ = predicted(tdmsim, tmp, path)
    if len(rows) != len(pairs):
        fail(f"{len(rows)} rows back for {len(pairs)} instance pairs")
    not_sim = [f"line {n} ({pairs[n - 2][0]}: {r['tile1']} / {r['tile2']}): {r['status']}"
               for n, r in sorted(rows.items()) if r["status"] != "simulated"]
    if not_sim:
        fail("AITER's own CK instances not simulated:\n" + "\n".join(not_sim))
    print(f"{len(pairs)} instance pairs of {len(CK_INSTANCES)} lists simulated")


def check_flydsl(tdmsim, tmp):
    """A row naming FlyDSL kernels (tests/data/aiter/flydsl-reduce-dsv3-tp8-mi355x.csv: DeepSeek-V3
    MXFP4 TP8 on MI355X, 4096 tokens; invented times): the script runs the names' tiles and the
    stage-2 name's reduce mode, and gives the stage times `tdmsim run --kernel-config` gives;
    the same row named _atomic gives another stage 2 (the reduce combine's sum and copy are
    in it, the atomic adds are not), so the check sees the mode."""
    sys.path.insert(0, os.path.join(ROOT, "validation"))
    import tdmsimtools  # noqa: E402

    reduce = os.path.join(DATA, "flydsl-reduce-dsv3-tp8-mi355x.csv")
    atomic = os.path.join(tmp, "atomic.csv")
    with open(reduce) as f, open(atomic, "w") as g:
        g.write(f.read().replace("_reduce,", "_atomic,"))
    # A model of the row's shape (257 experts top-9: 256 routed top-8 + 1 fused shared
    # expert, as the script reads it) and the row's format, run with the table.
    model = os.path.join(tmp, "model.yaml")
    with open(model, "w") as f:
        f.write("kind: model\nname: dsv3-tp8-shape\ndescription: test\nsource: test\nhidden_size: 7168\n"
                "intermediate_size: 256\nexperts: 256\ntop_k: 8\nshared_experts: 1\nshared_intermediate_size: 256\n"
                "gating: {scoring: softmax, renormalize: true}\nactivation: silu\nlayers: {moe: 1, total: 1}\n")
    sc = os.path.join(tmp, "layer.yaml")
    with open(sc, "w") as f:
        f.write("kind: scenario\nname: flydsl\ndescription: test\nmachine: mi355x\nmodel: model.yaml\n"
                "tokens: 4096\ndtype: mxfp4\nquant: per_1x32\npath: software\nseed: 1\n"
                "routing: {source: uniform, router_stage: given}\nkernel: {source: aiter, raster_group: 1}\n")
    stage2 = {}
    for mode, table in (("reduce", reduce), ("atomic", atomic)):
        rows, _ = predicted(tdmsim, tmp, table)
        r = rows[2]
        if r["status"] != "simulated":
            fail(f"{mode}: row not simulated: {r['status']}")
        want = ("tiles 256x64x256x256 / 256x64x256x256" in r["kernel"] and
                f"down combine: {'reduce' if mode == 'reduce' else 'atomic'}" in r["kernel"])
        if not want:
            fail(f"{mode}: the script's kernel line lacks the FlyDSL tiles or the combine: {r['kernel']}")
        s = tdmsimtools.run(tdmsim, sc, os.path.join(tmp, "out-" + mode), path="software",
                            extra=("--kernel-config", table), label=mode)
        by = tdmsimtools.stage_times(s, kernel_only=True)
        got = (by["gate_up"], by["down"] + by.get("combine", 0.0))
        script = (float(r["sim_us1"]), float(r["sim_us2"]))
        if any(abs(a - b) > 6e-5 for a, b in zip(script, got)):
            fail(f"{mode}: aiter_tuned.py gives stages {script} us, tdmsim run --kernel-config {got}")
        if ("combine" in by) != (mode == "reduce"):
            fail(f"{mode}: combine kernels {'missing' if mode == 'reduce' else 'present'}: {sorted(by)}")
        stage2[mode] = script[1]
    if abs(stage2["reduce"] / stage2["atomic"] - 1) < 0.02:
        fail(f"stage 2 {stage2}: the two modes agree, so the check cannot tell them apart")
    print(f"FlyDSL row: stage 2 reduce {stage2['reduce']:.1f} us, atomic {stage2['atomic']:.1f} us")


def main():
    tdmsim, mode = sys.argv[1], sys.argv[2]
    checks = dict(rows=check_rows, same=check_same, machine=check_machine, bad=check_bad, grid=check_grid,
                  edges=check_edges, crash=check_crash, config=check_config, plots=check_plots,
                  order=check_order, instances=check_instances, flydsl=check_flydsl)
    with tempfile.TemporaryDirectory() as tmp:
        checks[mode](tdmsim, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
