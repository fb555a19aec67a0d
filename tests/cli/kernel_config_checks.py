#!/usr/bin/env python3
"""Command-line checks of tuned kernel tables (kernel.config, --kernel-config,
kernel.heuristic; docs/moe-plan.md "Tuned kernel tables"). CTest runs each
mode as its own test.

  good         the hand-made tables drive the run: the row's line, block_m,
               tiles, split-K and stages in summary.json; --kernel-config and
               the scenario key agree; --verbose prints the lookup; no row:
               the rule that chose is recorded; kernel.heuristic: aiter; one
               row for AITER's kernels and ours (AITER's gate/up N per half)
  sweep        kernel.config as a sweep axis: results.csv names the row per point
  deepseek     DeepSeek-V3 TP8 fp8 block-scale on MI355X looked up in the
               MI355X calibration table (../shared/calibration; 77 without it)
  calibration  every distinct kernel configuration of both calibration tables
               (tile1, tile2, block_m, ksplit, run_1stage, shape) through
               `tdmsim run --kernel-config` at its smallest token count (at
               most 64: the row's token rewritten, keeping it fast): each
               runs with the row's choice, or exits 2 naming the tile, with no
               output folder and no uncaught exception (77 without the tables)

Usage: kernel_config_checks.py TDMSIM WORKDIR MODE"""
import concurrent.futures
import csv
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "data", "kernel_config")
CALIBRATION = os.path.join(os.path.dirname(ROOT), "shared", "calibration")
TABLES = ["mi355x_fused_moe_aiter_tuned.csv", "mi300x_fused_moe_qwen3_235b_bf16.csv"]
MACHINE_OF_CUS = {256: "mi355x", 304: "mi300x"}


def run(tdmsim, args, out=None, expect=0):
    cmd = ["run", *args, "--quiet"]
    if out:
        shutil.rmtree(out, ignore_errors=True)
        cmd += ["--output", out]
    return tdmsimtools.expect_exit(tdmsim, *cmd, rc=expect)


summary = tdmsimtools.read_summary


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")


def good(tdmsim, work):
    # The scenario key: 20 tokens pad to 32, line 3 of short_tiles.csv.
    out = os.path.join(work, "key")
    run(tdmsim, [os.path.join(DATA, "tiny-fp8.yaml")], out)
    layer = summary(out)["layer"]
    src = layer["kernel_source"]
    check(src["chosen_by"] == "kernel.config row", f"chosen_by {src}")
    check(src["config"]["line"] == 3 and src["config"]["matched"], f"row {src}")
    check(src["config"]["file"].endswith("short_tiles.csv"), f"file {src}")
    check(src["config"]["padded_token"] == 32, f"padded {src}")
    check(layer["block_m"] == 32 and layer["split_k"] == 2 and layer["stages"] == 2, f"choice {layer}")
    check(layer["down_tile"] == "64x32x32x64", f"down tile {layer}")
    check("short_tiles.csv:3" in layer["kernel_reason"], layer["kernel_reason"])
    # --kernel-config on a scenario without one: the same choice.
    out2 = os.path.join(work, "option")
    run(tdmsim, [os.path.join(DATA, "tiny-fp8-no-config.yaml"), "--kernel-config",
                 os.path.join(DATA, "short_tiles.csv")], out2)
    layer2 = summary(out2)["layer"]
    for k in ("block_m", "split_k", "stages", "gate_up_tile", "down_tile"):
        check(layer2[k] == layer[k], f"--kernel-config {k}: {layer2[k]} vs {layer[k]}")
    # 64 tokens: line 4, run_1stage 1.
    r = tdmsimtools.tdmsim(tdmsim, "run", os.path.join(DATA, "tiny-fp8-no-config.yaml"), "--kernel-config",
                           os.path.join(DATA, "short_tiles.csv"), "--verbose")
    check(r.returncode == 0, r.stderr)
    check("kernel.config: looked up cu_num 256, token 32 (padded from 20)" in r.stdout, r.stdout)
    # No row (ck_names.csv is for other layers): the project's rule, recorded.
    out3 = os.path.join(work, "nomatch")
    r = run(tdmsim, [os.path.join(DATA, "tiny-fp8-no-config.yaml"), "--kernel-config",
                     os.path.join(DATA, "ck_names.csv"), "--verbose"], out3)
    src3 = summary(out3)["layer"]["kernel_source"]
    check(src3["chosen_by"] == "tdmsim heuristic" and src3["config"]["line"] is None, f"no match {src3}")
    check("no row matched" in src3["config"]["detail"], src3["config"]["detail"])
    # kernel.heuristic: aiter, set through a scenario overlay.
    sc = os.path.join(work, "aiter.yaml")
    with open(sc, "w") as f:
        f.write(f"kind: scenario\nname: tiny-aiter\nmachine: mi355x\nmodel: {os.path.join(DATA, 'tiny-model.yaml')}\n"
                f"tokens: 20\ndtype: fp8_e4m3\nquant: per_token\npath: software\nkernel: {{heuristic: aiter}}\n")
    out4 = os.path.join(work, "aiter")
    run(tdmsim, [sc], out4)
    layer4 = summary(out4)["layer"]
    check(layer4["kernel_source"]["chosen_by"] == "aiter heuristic", f"aiter {layer4['kernel_source']}")
    check("AITER's default" in layer4["kernel_reason"], layer4["kernel_reason"])
    # The same row (1 token: line 2, tile1 16x128: K 256 in fp8) for AITER's kernels and for
    # ours: the name is printed as written by both, but AITER's N is per half
    # (N of gate and N of up a workgroup), so its gate/up grid is half ours.
    grids = {}
    for source in ("tdmsim", "aiter"):
        sc = os.path.join(work, f"row-{source}.yaml")
        with open(sc, "w") as f:
            f.write(f"kind: scenario\nname: tiny-row-{source}\nmachine: mi355x\n"
                    f"model: {os.path.join(DATA, 'tiny-model.yaml')}\ntokens: 1\ndtype: fp8_e4m3\nquant: per_token\n"
                    f"path: software\nrouting: {{source: uniform}}\n"
                    f"kernel: {{source: {source}, config: {os.path.join(DATA, 'short_tiles.csv')}}}\n")
        o = os.path.join(work, f"row-{source}")
        run(tdmsim, [sc], o)
        s5 = summary(o)
        lay = s5["layer"]
        check(lay["kernel_source"]["config"]["line"] == 2, f"{source} row {lay['kernel_source']}")
        check(lay["gate_up_tile"] == "256x16x128x256", f"{source} gate_up_tile {lay['gate_up_tile']}")
        check("tiles 256x16x128x256 / " in lay["kernel_reason"], lay["kernel_reason"])
        # AITER's kernels split stage 1 only, ours both (summary.json layer.split_down).
        check(lay["split_down"] == (source == "tdmsim"), f"{source} split_down {lay['split_down']}")
        stages = s5["paths"][0]["stages"]
        grids[source] = next(st["workgroups"] for st in stages if st["stage"] == "gate_up")
    check(grids["tdmsim"] == 2 * grids["aiter"] and grids["aiter"] > 0, f"gate/up grids {grids}")
    print("good: ok")


def sweep(tdmsim, work):
    out = os.path.join(work, "sweep")
    shutil.rmtree(out, ignore_errors=True)
    r = tdmsimtools.tdmsim(tdmsim, "sweep", os.path.join(DATA, "tiny-sweep.yaml"), "--output", out, "-j", "1",
                           "--quiet")
    check(r.returncode == 0, f"sweep exit {r.returncode}\n{r.stderr}")
    rows = tdmsimtools.outputs.read_results_csv(out)
    check(len(rows) == 4, f"{len(rows)} rows")
    got = {(r["scenario.tokens"], os.path.basename(r["scenario.kernel.config"])):
           (r["kernel_chosen_by"], r["kernel_config_line"]) for r in rows}
    want = {("20", "short_tiles.csv"): ("kernel.config row", "3"),
            ("64", "short_tiles.csv"): ("kernel.config row", "4"),
            ("20", "ck_names.csv"): ("tdmsim heuristic", ""),
            ("64", "ck_names.csv"): ("tdmsim heuristic", "")}
    check(got == want, f"results {got}")
    print("sweep: ok")


def calibration_rows(name):
    with open(os.path.join(CALIBRATION, name), newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        return header, [(i + 2, r) for i, r in enumerate(reader)]


def deepseek(tdmsim, work):
    path = os.path.join(CALIBRATION, TABLES[0])
    if not os.path.exists(path):
        print(f"skipped: {path} is absent")
        sys.exit(77)
    _, rows = calibration_rows(TABLES[0])
    sc = os.path.join(work, "ds.yaml")
    with open(sc, "w") as f:
        f.write(f"kind: scenario\nname: ds-v3-kernel-config\nmachine: mi355x\nmodel: deepseek-v3\ntokens: 256\n"
                f"dtype: fp8_e4m3\nquant: block_128\npath: software\nparallel: {{tp: 8}}\n"
                f"routing: {{source: uniform}}\n")
    out = os.path.join(work, "ds")
    run(tdmsim, [sc, "--kernel-config", path], out)
    layer = summary(out)["layer"]
    src = layer["kernel_source"]["config"]
    check(src["matched"], f"DeepSeek-V3 TP8 fp8 block-scale at 256 tokens matched no row: {src['detail']}")
    row = dict(rows)[src["line"]]
    # The key this layer must have: 256 + 1 shared experts, top-8 + 1.
    check((row["cu_num"], row["token"], row["model_dim"], row["inter_dim"], row["expert"], row["topk"],
           row["q_type"]) == ("256", "256", "7168", "256", "257", "9", "QuantType.per_1x128"), f"row {row}")
    check(layer["block_m"] == int(row["block_m"]), f"block_m {layer['block_m']} vs {row['block_m']}")
    check(layer["stages"] == (1 if row["run_1stage"] == "1" else 2), "stages")
    for col, key in (("tile1", "gate_up_tile"), ("tile2", "down_tile")):
        if row[col]:
            check(layer[key] == row[col], f"{key} {layer[key]} vs {row[col]}")
    print(f"deepseek: row {src['line']}: ok")


# AITER activation names -> model activation.
ACTIVATION = {"ActivationType.Silu": "silu", "ActivationType.Gelu": "gelu", "ActivationType.Swiglu": "swiglu_oai"}
# Formats tdmsim expresses today -> (dtype, quant) (descriptors/plan/aiter_names.cpp).
FORMATS = {("torch.bfloat16", "QuantType.No"): ("bf16", "none"),
           ("torch.float8_e4m3fn", "QuantType.per_1x128"): ("fp8_e4m3", "block_128"),
           ("torch.float8_e4m3fn", "QuantType.per_Token"): ("fp8_e4m3", "per_token")}
TILE_COLUMNS = {"tile1": "tile2", "kernelName1": "kernelName2"}
SIM_TOKENS = 64


def one_config(tdmsim, work, n, name, header, line, row):
    """Runs one distinct configuration; returns an error text or None."""
    t1 = "tile1" if "tile1" in header else "kernelName1"
    t2 = TILE_COLUMNS[t1]
    row = dict(row)
    # The configuration, not the token count, is under test: larger layers
    # run at 64 tokens (a power of two, so the row's token is the padded one).
    row["token"] = str(min(int(row["token"]), SIM_TOKENS))
    fmt = FORMATS.get((row["q_dtype_a"], row["q_type"])) if row["q_dtype_a"] == row["q_dtype_w"] else None
    bypass = fmt == ("fp8_e4m3", "block_128") and int(row["token"]) * int(row["topk"]) <= 128
    note = ""
    if fmt is None or bypass:
        # A format tdmsim cannot express yet (MXFP4, MXFP8), or an fp8
        # block-scale row AITER's lookup bypasses: the row's configuration on
        # fp8 per-token, 8-bit operands, so the tile's LDS bytes are at least
        # those of its 4-bit or 8-bit format.
        note = f" (run as fp8 per-token: {row['q_dtype_a']} {row['q_type']})"
        row["q_dtype_a"] = row["q_dtype_w"] = "torch.float8_e4m3fn"
        row["q_type"] = "QuantType.per_Token"
        fmt = ("fp8_e4m3", "per_token")
    folder = os.path.join(work, f"c{n}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    table = os.path.join(folder, "table.csv")
    with open(table, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerow(row)
    act = ACTIVATION[row["act_type"]]
    with open(os.path.join(folder, "model.yaml"), "w") as f:
        f.write(f"kind: model\nname: cal-{n}\nsource: {name} line {line}\nhidden_size: {row['model_dim']}\nintermediate_size: {row['inter_dim']}\n"
                f"experts: {row['expert']}\ntop_k: {row['topk']}\ngating: {{scoring: softmax, renormalize: true}}\n"
                f"activation: {act}\n" + ("activation_limit: 7.0\n" if act == "swiglu_oai" else "") +
                "layers: {moe: 1, total: 1}\n")
    with open(os.path.join(folder, "scenario.yaml"), "w") as f:
        f.write(f"kind: scenario\nname: cal-{n}\nmachine: {MACHINE_OF_CUS[int(row['cu_num'])]}\nmodel: model.yaml\n"
                f"tokens: {row['token']}\ndtype: {fmt[0]}\nquant: {fmt[1]}\npath: software\n"
                f"routing: {{source: uniform}}\n")
    out = os.path.join(folder, "out")
    r = tdmsimtools.tdmsim(tdmsim, "run", os.path.join(folder, "scenario.yaml"), "--kernel-config", table,
                           "--quiet", "--output", out)
    what = f"{name}:{line} tiles '{row[t1]}' / '{row[t2]}' block_m {row['block_m']} run_1stage {row['run_1stage']}{note}"
    if "uncaught" in r.stderr or "E549" in r.stderr:
        return f"{what}: uncaught exception reached the user: {r.stderr.strip()}"
    if r.returncode == 2:
        if os.path.exists(out):
            return f"{what}: exit 2 but the output folder exists"
        named = [t for t in (row[t1], row[t2]) if t and t in r.stderr] or ["tile" in r.stderr and "tile"]
        if not any(named):
            return f"{what}: exit 2 without naming the tile: {r.stderr.strip()}"
        return ("refused", what, r.stderr.strip().splitlines()[-1])
    if r.returncode != 0:
        return f"{what}: exit {r.returncode}: {r.stderr.strip()}"
    layer = summary(out)["layer"]
    src = layer["kernel_source"].get("config", {})
    if src.get("line") != 2:
        return f"{what}: the row did not choose: {src}"
    want_stages = 1 if row["run_1stage"] in ("1", "True") else 2
    if layer["block_m"] != int(row["block_m"]) or layer["stages"] != want_stages:
        return f"{what}: ran block_m {layer['block_m']} {layer['stages']}-stage"
    shutil.rmtree(folder, ignore_errors=True)
    return ("ran", what, "")


def calibration(tdmsim, work):
    if not all(os.path.exists(os.path.join(CALIBRATION, t)) for t in TABLES):
        print(f"skipped: the calibration tables are absent from {CALIBRATION}")
        sys.exit(77)
    jobs = []
    for name in TABLES:
        header, rows = calibration_rows(name)
        t1 = "tile1" if "tile1" in header else "kernelName1"
        first = {}
        for line, r in rows:
            key = (r["cu_num"], r[t1], r[TILE_COLUMNS[t1]], r["block_m"], r["ksplit"], r["run_1stage"],
                   r["model_dim"], r["inter_dim"], r["expert"], r["topk"], r["act_type"], r["q_dtype_a"],
                   r["q_dtype_w"], r["q_type"])
            if key not in first or int(r["token"]) < int(first[key][1]["token"]):
                first[key] = (line, r)
        jobs += [(name, header, line, r) for line, r in sorted(first.values(), key=lambda x: x[0])]
    os.makedirs(work, exist_ok=True)
    errors, ran, refused = [], 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        futures = [ex.submit(one_config, tdmsim, work, n, *j) for n, j in enumerate(jobs)]
        for f in futures:
            res = f.result()
            if isinstance(res, str):
                errors.append(res)
            elif res[0] == "ran":
                ran += 1
            else:
                refused.append(res)
    for r in refused:
        print(f"refused (exit 2): {r[1]}: {r[2]}")
    print(f"{len(jobs)} distinct configurations: {ran} ran with the row's choice, {len(refused)} refused naming "
          f"the tile, {len(errors)} wrong")
    if errors:
        sys.exit("FAILED:\n" + "\n".join(errors))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tdmsim, work, mode = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    {"good": good, "sweep": sweep, "deepseek": deepseek, "calibration": calibration}[mode](tdmsim, work)


if __name__ == "__main__":
    main()
