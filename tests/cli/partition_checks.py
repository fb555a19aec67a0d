#!/usr/bin/env python3
"""Partition modes of a machine (`partition:`; CTest partition.*; docs/partitions.md).

Modes:
  refuse   impossible modes exit 2 naming the file, line and key; collectives refuse a
           partitioned machine
  copy     `tdmsim microbench copy` of 512 MiB (more than the MALL) on MI300X as SPX,
           CPX+NPS1 and CPX+NPS4: a CPX partition keeps an eighth of the fabric and stays
           under it; a CPX+NPS4 partition stays under a quarter of the HBM peak (its
           summary's bound is the partition's)
  layer    a Qwen3-30B-A3B layer on one CPX+NPS4 partition: config.json shows the
           partition's machine (1 die, 2 stacks, 48 GB), and it is slower than on the
           whole GPU

Usage: partition_checks.py TDMSIM WORKDIR MODE REPO"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


write = tdmsimtools.write_text


def machine(work, repo, base, name, compute, memory):
    return write(os.path.join(work, name + ".yaml"),
                 f"kind: machine\nbase: {os.path.join(repo, 'workloads', 'machines', base + '.yaml')}\nname: {name}\n"
                 f"partition:\n  compute: {compute}\n  memory: {memory}\n")


def mode_refuse(tdmsim, work, repo):
    cases = [("h200", "dpx", "nps1", "partition.compute", "do not split evenly"),
             ("mi300x", "dpx", "nps4", "partition.memory", "spans 2 quarters"),
             ("mi300x", "spx", "nps4", "partition.memory", "spans 4 quarters"),
             ("mi300x", "cpx", "nps2", "partition.memory", "nps2")]
    for i, (base, c, m, key, what) in enumerate(cases):
        f = machine(work, repo, base, f"bad{i}", c, m)
        p = tdmsimtools.expect_exit(tdmsim, "config", "validate", f, rc=2)
        assert f"bad{i}.yaml:" in p.stderr and key in p.stderr and what in p.stderr, (base, c, m, p.stderr)
    ok = machine(work, repo, "mi300x", "ok", "cpx", "nps4")
    tdmsimtools.expect_exit(tdmsim, "config", "validate", ok)
    p = tdmsimtools.expect_exit(tdmsim, "collective", "--machine", ok, "--op", "all_to_all", "--bytes", "1MiB", rc=2)
    assert "partition" in p.stderr, p.stderr


def gbps(text):
    for unit, scale in (("TB/s", 1000.0), ("GB/s", 1.0)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    raise ValueError(text)


def copy_bw(tdmsim, work, m, name):
    out = os.path.join(work, name)
    tdmsimtools.expect_exit(tdmsim, "microbench", "copy", "--machine", m, "--bytes", "512MiB", "--output", out,
                            "--force", "--quiet")
    s = tdmsimtools.read_summary(out)
    with open(os.path.join(out, "config.json")) as f:
        s["fabric_gbps"] = gbps(json.load(f)["machine"]["memory"]["fabric"]["bandwidth"])
    return s


def mode_copy(tdmsim, work, repo):
    spx = copy_bw(tdmsim, work, "mi300x", "spx")
    nps1 = copy_bw(tdmsim, work, machine(work, repo, "mi300x", "cpx1", "cpx", "nps1"), "cpx1")
    nps4 = copy_bw(tdmsim, work, machine(work, repo, "mi300x", "cpx4", "cpx", "nps4"), "cpx4")
    b = [s["bandwidth"]["value"] for s in (spx, nps1, nps4)]
    print("copy GB/s: spx", b[0], "cpx+nps1", b[1], "cpx+nps4", b[2])
    assert nps4["bound"]["value"] * 4 == spx["bound"]["value"], (nps4["bound"], spx["bound"])
    assert b[2] <= nps4["bound"]["value"], b
    # One die of eight keeps an eighth of the package's fabric, and its copy stays under it.
    assert nps1["fabric_gbps"] * 8 == spx["fabric_gbps"], (nps1["fabric_gbps"], spx["fabric_gbps"])
    assert b[1] <= nps1["fabric_gbps"], (b, nps1["fabric_gbps"])
    assert b[0] > b[1] >= b[2] > 0, b


def mode_layer(tdmsim, work, repo):
    sc = os.path.join(repo, "workloads", "scenarios", "qwen3-30b-a3b-512tok-bf16-mi300x.yaml")
    cpx = machine(work, repo, "mi300x", "cpx4", "cpx", "nps4")
    whole = tdmsimtools.run(tdmsim, sc, os.path.join(work, "whole"), path="software")
    part = tdmsimtools.run(tdmsim, sc, os.path.join(work, "part"), path="software", machine=cpx)
    with open(os.path.join(work, "part", "config.json")) as f:
        m = json.load(f)["machine"]
    assert m["compute"]["dies"] == 1, m["compute"]
    assert m["memory"]["hbm"]["stacks"] == 2, m["memory"]["hbm"]
    assert m["memory"]["hbm"]["capacity"] == "48GB", m["memory"]["hbm"]["capacity"]
    assert m["partition"] == {"compute": "cpx", "memory": "nps4"}, m["partition"]
    t0, t1 = whole["paths"][0]["total_us"], part["paths"][0]["total_us"]
    print("layer us: whole", t0, "cpx+nps4 partition", t1)
    assert t1 > 2 * t0, (t0, t1)


def main():
    tdmsim, work, mode, repo = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"refuse": mode_refuse, "copy": mode_copy, "layer": mode_layer}[mode](tdmsim, work, os.path.abspath(repo))
    print(f"partition {mode}: ok")


if __name__ == "__main__":
    main()
