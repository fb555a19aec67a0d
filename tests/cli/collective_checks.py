#!/usr/bin/env python3
"""`tdmsim collective` end to end (CTest collective.end_to_end):
- a uniform all-to-all on mi300x (full mesh) and h200 (switch) equals the closed form
  computed here from the machine files' `interconnect:` values;
- ring all-gather on the mesh pays n - 1 steps and uses one link of seven;
- a hot destination in a --traffic matrix binds that GPU's ingress port;
- two nodes go through the NIC; --output writes summary.json (per-rank figures) and
  config.json; --quiet prints nothing;
- bad input exits 2 with a clear message and writes no output folder.

Usage: collective_checks.py TDMSIM WORKDIR MACHINES_DIR"""
import math
import os
import shutil
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

UNITS = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "GB/s": 1e9, "TB/s": 1e12}


def fail(msg):
    sys.exit("FAILED: " + msg)


def value(text):
    """'64GB/s' -> 6.4e10, '6us' -> 6e-6, 0.7 -> 0.7."""
    if isinstance(text, (int, float)):
        return float(text)
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * UNITS[unit]
    return float(text)


def close(a, b, what, rel=1e-6):
    if not math.isclose(a, b, rel_tol=rel):
        fail(f"{what}: {a} != {b}")


def run(binary, work, name, *args):
    out = os.path.join(work, name)
    tdmsimtools.expect_exit(binary, "collective", *args, "--output", out, "--force", "--quiet")
    return tdmsimtools.read_summary(out)


def main():
    binary, work, machines = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)  # the test's own folder: no other test writes it
    ic = {m: yaml.safe_load(open(os.path.join(machines, m + ".yaml")))["interconnect"] for m in ("mi300x", "h200")}
    size = 512 * 2**20

    # Full mesh: each pair's own links carry size / 8.
    m = ic["mi300x"]
    pair_bw = m["links_per_gpu"] // (m["gpus_per_node"] - 1) * value(m["link_bandwidth"]) * m["link_efficiency"]
    overhead = value(m.get("message_overhead", 0))
    expect = (size / 8) / pair_bw + value(m["link_latency"]) + 7 * overhead
    s = run(binary, work, "mesh", "--machine", "mi300x", "--op", "all_to_all", "--bytes", "512MiB")
    close(s["time_us"] * 1e-6, expect, "mi300x uniform all-to-all")
    close(s["busbw_gb_s"], size / expect * 7 / 8 / 1e9, "mi300x busbw")
    if not s["bottleneck"].startswith("link gpu["):
        fail(f"mi300x bottleneck {s['bottleneck']}")
    if len(s["ranks"]) != 8 or not all(math.isclose(r["sent_bytes"], size * 7 / 8) for r in s["ranks"]):
        fail(f"mi300x ranks: {s['ranks']}")

    # Switch: each GPU's port carries 7/8 of its size.
    h = ic["h200"]
    port_bw = h["links_per_gpu"] * value(h["link_bandwidth"]) * h["link_efficiency"]
    expect = (size * 7 / 8) / port_bw + value(h["link_latency"]) + 7 * value(h["message_overhead"])
    s = run(binary, work, "switch", "--machine", "h200", "--op", "all_to_all", "--bytes", str(size))
    close(s["time_us"] * 1e-6, expect, "h200 uniform all-to-all (plain byte count)")

    # Ring all-gather on the mesh: one link of seven, seven steps.
    d = run(binary, work, "ag_direct", "--machine", "mi300x", "--op", "all_gather", "--bytes", "512MiB")
    r = run(binary, work, "ag_ring", "--machine", "mi300x", "--op", "all_gather", "--bytes", "512MiB",
            "--algorithm", "ring")
    close(r["bandwidth_us"], 7 * d["bandwidth_us"], "ring all-gather bandwidth on the mesh")
    if r["steps"] != 7 or d["steps"] != 1:
        fail(f"steps: ring {r['steps']}, direct {d['steps']}")

    # A hot destination: everyone sends GPU 0 eight times as much.
    matrix = os.path.join(work, "hot.csv")
    with open(matrix, "w") as f:
        f.write("# row sends to column, bytes\n")
        for src in range(8):
            f.write(",".join("0" if src == dst else str(8_000_000 if dst == 0 else 1_000_000)
                             for dst in range(8)) + "\n")
    s = run(binary, work, "hot", "--machine", "h200", "--op", "all_to_all", "--traffic", matrix)
    if s["bottleneck"] != "port gpu[0] ingress" or not math.isclose(s["bottleneck_bytes"], 56e6):
        fail(f"hot destination: {s['bottleneck']}, {s['bottleneck_bytes']}")
    if max(s["ranks"], key=lambda x: x["time_us"])["gpu"] != 0:
        fail("the hot GPU is not the slowest rank")

    # Two nodes: the NIC binds.
    s = run(binary, work, "nodes", "--machine", "h200", "--op", "all_to_all", "--bytes", "1GiB",
            "--gpus", "16", "--nodes", "2")
    if not s["bottleneck"].startswith("nic gpu["):
        fail(f"two nodes: bottleneck {s['bottleneck']}")
    cfg = tdmsimtools.runner.json.load(open(os.path.join(work, "nodes", "config.json")))
    if cfg["machine"]["interconnect"]["nic"]["bandwidth"] != h["nic"]["bandwidth"]:
        fail("config.json lacks the resolved interconnect")

    p = tdmsimtools.expect_exit(binary, "collective", "-m", "h200", "--op", "all_gather", "--bytes", "1MiB", "-q")
    if p.stdout:
        fail(f"--quiet printed {p.stdout!r}")
    p = tdmsimtools.expect_exit(binary, "collective", "-m", "h200", "--op", "all_gather", "--bytes", "1MiB")
    if "busbw" not in p.stdout or "bottleneck port gpu[" not in p.stdout:
        fail(f"summary line: {p.stdout!r}")

    # Bad input: exit 2, a message naming the problem, no output folder.
    no_ic = os.path.join(work, "no-interconnect.yaml")
    with open(no_ic, "w") as f:
        f.write(f"base: {os.path.join(machines, 'mi300x.yaml')}\nname: bare\ninterconnect: ~\n")
    ragged = os.path.join(work, "ragged.csv")
    with open(ragged, "w") as f:
        f.write("0,1\n1\n")
    # Byte counts are whole decimal numbers (1000.7 had become 1001, 0x10 16).
    fraction = os.path.join(work, "fraction.csv")
    with open(fraction, "w") as f:
        f.write("0, 1000.7\n1,0\n")
    hexa = os.path.join(work, "hex.csv")
    with open(hexa, "w") as f:
        f.write("0,1\n0x10,0\n")
    fifo = os.path.join(work, "fifo.csv")
    os.mkfifo(fifo)  # (it had blocked the command forever)
    bad = [
        (["--op", "all_to_none", "--bytes", "1MiB"], "--op: expected all_to_all or all_gather"),
        (["--op", "all_to_all", "--bytes", "1MiB", "--algorithm", "tree"], "--algorithm: expected direct or ring"),
        (["--op", "all_to_all"], "give exactly one of --bytes"),
        (["--op", "all_to_all", "--bytes", "1MiB", "--traffic", matrix], "give exactly one of --bytes"),
        (["--op", "all_gather", "--traffic", matrix], "--traffic is an all-to-all's matrix"),
        (["--op", "all_to_all", "--bytes", "1Mb"], "--bytes"),
        (["--op", "all_to_all", "--bytes", "1MiB", "--message-bytes", "0"], "--message-bytes: must be above 0"),
        (["--op", "all_to_all", "--bytes", "1MiB", "--gpus", "16", "--nodes", "3"], "16 GPUs do not split evenly over 3 nodes"),
        (["--op", "all_to_all", "--traffic", ragged, "--gpus", "2"], "ragged.csv:2: 1 columns, expected --gpus (2)"),
        (["--op", "all_to_all", "--traffic", os.path.join(work, "absent.csv")], "absent.csv' does not exist"),
        (["--op", "all_to_all", "--traffic", fraction, "--gpus", "2"],
         "fraction.csv:1:3: expected a whole number of bytes (decimal digits, at most 2^53), got ' 1000.7'"),
        (["--op", "all_to_all", "--traffic", hexa, "--gpus", "2"], "hex.csv:2:1: expected a whole number"),
        (["--op", "all_to_all", "--traffic", fifo, "--gpus", "2"], "is not a regular file (a FIFO)"),
        (["--op", "all_to_all", "--traffic", "/dev/zero", "--gpus", "2"], "is not a regular file"),
    ]
    for i, (args, message) in enumerate(bad):
        out = os.path.join(work, f"bad{i}")
        p = tdmsimtools.expect_exit(binary, "collective", "--machine", "h200", *args, "--output", out, rc=2)
        if message not in p.stderr:
            fail(f"{args}: stderr lacks {message!r}: {p.stderr!r}")
        if os.path.exists(out):
            fail(f"{args}: wrote {out}")
    # The model's n x n tables, counted against the host-memory limit before any work.
    out = os.path.join(work, "too-large")
    p = tdmsimtools.expect_exit(binary, "collective", "--machine", "h200", "--op", "all_to_all", "--bytes", "1GiB",
                                "--gpus", "16384", "--nodes", "2048", "--output", out, rc=2,
                                env=dict(os.environ, TDMSIM_MEMORY_LIMIT="1GiB"))
    if "collective on 16384 GPUs needs about 2.0 GiB" not in p.stderr or os.path.exists(out):
        fail(f"memory limit: {p.stderr!r}")
    p = tdmsimtools.expect_exit(binary, "collective", "--machine", no_ic, "--op", "all_to_all", "--bytes", "1MiB",
                                rc=2)
    if "has no interconnect: section" not in p.stderr:
        fail(f"machine without interconnect: {p.stderr!r}")
    print("ok: closed forms, ring, hot destination, NIC, output, quiet and bad input")


if __name__ == "__main__":
    main()
