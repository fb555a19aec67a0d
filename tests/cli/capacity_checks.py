#!/usr/bin/env python3
"""Expert capacity through the CLI (tests/cli/capacity.cmake).

  capacity_checks.py TDMSIM run  WORK SCENARIO   tdmsim run: summary.json's layer.capacity
                                                 and the text summary agree with each other
                                                 and with the layout, both paths
  capacity_checks.py TDMSIM sweep WORK SWEEP     tdmsim sweep: results.csv's capacity columns

The run check also emulates the layer: `tdmsim emulate` reports the same capacity object,
marks exactly the dropped picks in routing_ids.npy (id 0xffffffff, weight 0) and its
output y differs from the uncapped layer's.
"""
import csv
import json
import math
import struct
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd):
    return tdmsimtools.expect_exit(cmd[0], *cmd[1:]).stdout


def check_run(tdmsim, work, scenario):
    shutil.rmtree(work, ignore_errors=True)
    out = run([tdmsim, "run", scenario, "--output", work, "--quiet"])
    capped = tdmsimtools.read_summary(work)
    c = capped["layer"]["capacity"]
    if not c["enabled"] or c["overflow"] != "drop" or c["capacity_factor"] != 1.0:
        fail(f"capacity object does not describe the scenario: {c}")
    tokens, top_k, experts = capped["layer"]["tokens"], 8, 128  # qwen3-30b-a3b
    if c["capacity"] != math.ceil(1.0 * tokens * top_k / experts):
        fail(f"capacity {c['capacity']} != ceil(1.0 * {tokens} * {top_k} / {experts})")
    if c["pairs"] != tokens * top_k or c["dropped_pairs"] <= 0:
        fail(f"expected dropped pairs in a skewed layer at factor 1: {c}")
    if c["dropped_pairs"] + c["rerouted_pairs"] != c["overflowed_pairs"] or c["rerouted_pairs"] != 0:
        fail(f"drop: every overflowing pick must be dropped: {c}")
    if abs(c["dropped_fraction"] - c["dropped_pairs"] / c["pairs"]) > 1e-12:
        fail(f"dropped_fraction is not dropped / pairs: {c}")
    # The layout holds exactly the kept picks (qwen3-30b-a3b has no shared experts).
    if capped["layer"]["rows"] != c["pairs"] - c["dropped_pairs"]:
        fail(f"layout rows {capped['layer']['rows']} != pairs - dropped {c}")
    if [p["path"] for p in capped["paths"]] != ["software", "tdm"]:
        fail("both paths must run the capped layer")

    # The same layer without the capacity: more rows, never less time, and a
    # disabled capacity object.
    free_dir = work + "-free"
    shutil.rmtree(free_dir, ignore_errors=True)
    free_yaml = work + "-free.yaml"
    # (Its overflow: policy goes too: with no capacity it would change nothing, refused.)
    text = open(scenario).read().replace("capacity_factor: 1.0", "capacity_factor: none")
    text = text.replace("  overflow: drop\n", "")
    text = text.replace("name: capacity-drop", "name: capacity-free")
    with open(free_yaml, "w") as f:
        f.write(text)
    run([tdmsim, "run", free_yaml, "--output", free_dir, "--quiet"])
    free = tdmsimtools.read_summary(free_dir)
    fc = free["layer"]["capacity"]
    if fc["enabled"] or fc["dropped_pairs"] != 0 or fc["capacity_factor"] is not None:
        fail(f"no capacity must report nothing dropped: {fc}")
    if free["layer"]["rows"] != c["pairs"]:
        fail("the uncapped layout must hold every pick")
    if c["max_expert_demand"] <= c["capacity"] or c["experts_over_capacity"] <= 0:
        fail(f"a skewed layer that drops must have asked some expert for more than capacity: {c}")

    # The text summary states the same figures.
    text_out = run([tdmsim, "run", scenario])
    want = (f"{c['dropped_pairs']} of {c['pairs']} token-expert picks dropped "
            f"({100.0 * c['dropped_fraction']:.1f}%)")
    if want not in text_out:
        fail(f"text summary lacks '{want}':\n{text_out}")
    print(f"ok: capacity {c['capacity']}, dropped {c['dropped_pairs']}/{c['pairs']}, rows "
          f"{capped['layer']['rows']} vs {free['layer']['rows']}")
    check_emulate(tdmsim, work, scenario, free_yaml, c)


def npy_uint32(path):
    """The values of a little-endian uint32 .npy file (format 1.0), without numpy."""
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY" or data[6] != 1:
        fail(f"{path}: not a version 1 .npy file")
    header_len = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + header_len].decode("latin1")
    if "'<u4'" not in header:
        fail(f"{path}: expected uint32 ids, header {header}")
    body = data[10 + header_len:]
    return struct.unpack(f"<{len(body) // 4}I", body)


def check_emulate(tdmsim, work, scenario, free_yaml, run_capacity):
    emu_dir, free_dir = work + "-emu", work + "-emu-free"
    for d in (emu_dir, free_dir):
        shutil.rmtree(d, ignore_errors=True)
    text_out = run([tdmsim, "emulate", scenario, "--output", emu_dir])
    run([tdmsim, "emulate", free_yaml, "--output", free_dir, "--quiet"])
    capped = json.load(open(os.path.join(emu_dir, "summary.json")))
    free = json.load(open(os.path.join(free_dir, "summary.json")))
    if capped.get("capacity") != run_capacity:
        fail(f"emulate's capacity object differs from run's:\n{capped.get('capacity')}\n{run_capacity}")
    if free["capacity"]["enabled"] or free["capacity"]["dropped_pairs"] != 0:
        fail(f"uncapped emulation must drop nothing: {free['capacity']}")
    ids = npy_uint32(os.path.join(emu_dir, "routing_ids.npy"))
    marked = sum(1 for i in ids if i == 0xFFFFFFFF)
    if marked != run_capacity["dropped_pairs"]:
        fail(f"routing_ids.npy marks {marked} dropped picks, the summary says {run_capacity['dropped_pairs']}")
    if any(i == 0xFFFFFFFF for i in npy_uint32(os.path.join(free_dir, "routing_ids.npy"))):
        fail("the uncapped emulation marks a pick as dropped")
    if capped["arrays"]["y"]["fnv1a64"] == free["arrays"]["y"]["fnv1a64"]:
        fail("dropping picks left the layer output y unchanged")
    want = f"{run_capacity['dropped_pairs']} of {run_capacity['pairs']} token-expert picks dropped"
    if want not in text_out:
        fail(f"emulate's text summary lacks '{want}':\n{text_out}")
    print(f"ok: emulate marks {marked} dropped picks, y {capped['arrays']['y']['fnv1a64']} vs "
          f"{free['arrays']['y']['fnv1a64']}")


def check_sweep(tdmsim, work, sweep):
    shutil.rmtree(work, ignore_errors=True)
    run([tdmsim, "sweep", sweep, "--output", work, "-j", "2", "--quiet"])
    rows = list(csv.DictReader(open(os.path.join(work, "results.csv"))))
    if len(rows) != 4:
        fail(f"expected 4 rows, got {len(rows)}")
    for col in ("scenario.routing.capacity_factor", "scenario.routing.overflow", "capacity", "dropped_pairs", "dropped_fraction",
                "rerouted_pairs", "rerouted_fraction"):
        if col not in rows[0]:
            fail(f"results.csv lacks column {col}: {list(rows[0])}")
    by = {(r["scenario.routing.overflow"], r["scenario.routing.capacity_factor"]): r for r in rows}
    for policy in ("drop", "reroute"):
        none = by[(policy, "none")]
        if none["capacity"] != "" or int(none["dropped_pairs"]) != 0 or int(none["rerouted_pairs"]) != 0:
            fail(f"capacity_factor none must drop and reroute nothing: {none}")
    drop, reroute = by[("drop", "1.0")], by[("reroute", "1.0")]
    if int(drop["capacity"]) != 1 or int(drop["dropped_pairs"]) <= 0 or int(drop["rerouted_pairs"]) != 0:
        fail(f"drop at factor 1 (capacity ceil(16*8/128) = 1) must drop: {drop}")
    if int(reroute["rerouted_pairs"]) != int(drop["dropped_pairs"]) - int(reroute["dropped_pairs"]):
        fail(f"reroute moves what drop drops, less what finds no room: {drop} {reroute}")
    if int(reroute["rerouted_pairs"]) <= 0:
        fail(f"reroute must move picks: {reroute}")
    if abs(float(drop["dropped_fraction"]) - int(drop["dropped_pairs"]) / 128) > 1e-9:
        fail(f"dropped_fraction != dropped_pairs / 128: {drop}")
    print(f"ok: drop {drop['dropped_pairs']}, reroute {reroute['rerouted_pairs']} moved "
          f"{reroute['dropped_pairs']} dropped")


if __name__ == "__main__":
    tdmsim, mode, work, spec = sys.argv[1:5]
    {"run": check_run, "sweep": check_sweep}[mode](tdmsim, work, spec)
