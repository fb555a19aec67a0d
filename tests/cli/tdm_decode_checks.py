#!/usr/bin/env python3
"""CLI checks of the descriptor-driven TDM unit (issue #21, part 1 and custom):

  round_trip SCENARIO [KEY=VALUE...] (KEY=VALUE: kernel keys set in a copy of the scenario)
                                     run --write-descriptors, then run --descriptors of that
                                     file: summary.json byte-identical (simulation_wall_s, the
                                     host's wall time, removed as bench/record-outputs.sh does);
                                     describe prints the stream
  corrupt SCENARIO                   a byte of the stream changed: exit 2, the byte offset in
                                     the message, no output folder
  disagree SCENARIO                  the stream of another token count: exit 2,
                                     scenario_mismatch at the layer's tokens field (byte 76)
  policies SCENARIO                  a sweep over every tdm.default_policy, custom included,
                                     completes every point
  long_slots SCENARIO                every slot record 2^32 - 1 ns long (valid): the run
                                     completes, the watchdog's limit counting the slots
  in_output SCENARIO                 --write-descriptors inside a new --output folder: written
                                     there with the run's files (the same bytes as elsewhere),
                                     again with --force; one of the folder's own names exits 2
                                     and writes nothing

Usage: tdm_decode_checks.py TDMSIM WORKDIR MODE SCENARIO [KEY=VALUE...]"""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


def tdmsim(args, expect=0):
    return tdmsimtools.expect_exit(TDMSIM, *args, rc=expect)


def summary(folder):
    with open(os.path.join(folder, "summary.json"), "rb") as f:
        lines = f.read().split(b"\n")
    return b"\n".join(l for l in lines if b'"simulation_wall_s"' not in l)


def write_stream(scenario, name, extra=()):
    path = os.path.join(WORK, name + ".tdmm")
    tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--force", "--write-descriptors", path,
            "--output", os.path.join(WORK, name), *extra])
    return path


def round_trip(scenario, kernel_keys):
    if kernel_keys:
        copy = os.path.join(WORK, "scenario.yaml")
        open(copy, "w").write(open(scenario).read() + "kernel:\n" +
                              "".join(f"  {k.replace('=', ': ')}\n" for k in kernel_keys))
        scenario = copy
    stream = write_stream(scenario, "plan")
    tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--descriptors", stream,
            "--output", os.path.join(WORK, "file")])
    a, b = summary(os.path.join(WORK, "plan")), summary(os.path.join(WORK, "file"))
    if a != b:
        sys.exit("FAILED: summary.json of the plan-built stream and of the file differ")
    with open(os.path.join(WORK, "file", "config.json")) as f:
        cfg = json.load(f)
    assert cfg["files"]["descriptors"] == os.path.abspath(stream), cfg["files"]
    stages = tdmsimtools.read_summary(os.path.join(WORK, "file"))["paths"][0]["stages"]
    print(f"identical summary.json; stages {[s['stage'] for s in stages]}")
    # describe reads the same file: one descriptor, or a stream of several.
    out = tdmsim(["describe", stream]).stdout
    n = sum(1 for s in stages if s["stage"] in ("fused", "gate_up", "down"))
    if n > 1 and f"descriptor {n} of {n}" not in out:
        sys.exit(f"FAILED: describe did not list {n} descriptors:\n{out[:400]}")


def corrupt(scenario):
    stream = write_stream(scenario, "good")
    bad = os.path.join(WORK, "bad.tdmm")
    data = bytearray(open(stream, "rb").read())
    data[100] ^= 0x01
    open(bad, "wb").write(bytes(data))
    out = os.path.join(WORK, "corrupt-out")
    r = tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--descriptors", bad, "--output", out],
               expect=2)
    if not re.search(r"bad\.tdmm: invalid descriptor stream: checksum_mismatch at byte 12", r.stderr):
        sys.exit(f"FAILED: message without the offset: {r.stderr}")
    assert not os.path.exists(out), "output folder written"
    # A truncated stream.
    open(bad, "wb").write(bytes(data[: len(data) - 8]))
    r = tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--descriptors", bad, "--output", out],
               expect=2)
    assert re.search(r"at byte [0-9]+", r.stderr), r.stderr
    assert not os.path.exists(out), "output folder written"
    print(r.stderr.strip())
    # describe says the fault of the record it is in, at its offset in the
    # stream (it had said the first record's size differs from the file's).
    two_stage = os.path.join(WORK, "two-stage.yaml")
    with open(two_stage, "w") as f:
        f.write(f"base: {scenario}\nname: two-stage\nkernel:\n  stages: 2\n")
    data = bytearray(open(write_stream(two_stage, "two"), "rb").read())
    first = int.from_bytes(data[8:12], "little")
    assert first < len(data), "a 2-stage layer's stream has two records"
    data[first + 100] ^= 0x01
    open(bad, "wb").write(bytes(data))
    r = tdmsim(["describe", bad], expect=2)
    want = f"invalid descriptor stream: checksum_mismatch at byte {first + 12}: descriptor 2 (at byte {first})"
    assert want in r.stderr, r.stderr
    print(r.stderr.strip())


def disagree(scenario):
    text = open(scenario).read()
    other = os.path.join(WORK, "other-tokens.yaml")
    tokens = int(re.search(r"^tokens: *([0-9]+)", text, re.M).group(1))
    open(other, "w").write(re.sub(r"^tokens: *[0-9]+", f"tokens: {tokens * 2}", text, flags=re.M)
                           .replace("name: ", "name: other-", 1))
    stream = write_stream(other, "other")
    out = os.path.join(WORK, "disagree-out")
    r = tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--descriptors", stream, "--output", out],
               expect=2)
    # The layer section starts at byte 64; tokens is its field at 12.
    want = f"scenario_mismatch at byte 76: descriptor 1 (id 1): layer tokens is {tokens * 2}"
    if want not in r.stderr:
        sys.exit(f"FAILED: expected '{want}' in: {r.stderr}")
    assert not os.path.exists(out), "output folder written"
    print(r.stderr.strip())


def policies(scenario):
    sweep = os.path.join(WORK, "policies.yaml")
    open(sweep, "w").write(
        "name: tdm-policies\n"
        f"scenario: {os.path.abspath(scenario)}\n"
        "axes:\n"
        "  scenario.tokens: [4]\n"
        "  machine.tdm.default_policy: [load_balance, capacity_first, low_latency, custom]\n")
    out = os.path.join(WORK, "policies-out")
    tdmsim(["sweep", sweep, "--output", out, "--force"])
    rows = tdmsimtools.outputs.read_results_jsonl(out)
    tdm = {r["inputs"]["machine.tdm.default_policy"]: r["metrics"]["total_us"]
           for r in rows if r["path"] == "tdm"}
    if sorted(tdm) != ["capacity_first", "custom", "load_balance", "low_latency"]:
        sys.exit(f"FAILED: TDM points {tdm}")
    print(f"TDM total_us by policy: {tdm}")


def in_output(scenario):
    stream = write_stream(scenario, "outside")
    out = os.path.join(WORK, "run")
    inside = os.path.join(out, "stream.tdmm")
    for extra in ([], ["--force"]):
        tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--output", out, "--write-descriptors", inside, *extra])
        assert sorted(os.listdir(out)) == [".tdmsim-output", "config.json", "stats.json", "stream.tdmm", "summary.json"], os.listdir(out)
        assert open(inside, "rb").read() == open(stream, "rb").read(), "the stream differs from one written elsewhere"
    # Reading the stream back into the folder that holds it: --force would delete it.
    r = tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--output", out, "--descriptors", inside, "--force"],
               expect=2)
    assert "which this command reads" in r.stderr, r.stderr
    assert os.path.exists(inside), "the stream was deleted"
    bad = os.path.join(WORK, "bad")
    r = tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--output", bad, "--write-descriptors",
                os.path.join(bad, "summary.json")], expect=2)
    assert "give a file name of its own" in r.stderr, r.stderr
    assert not os.path.exists(bad), "output folder written"
    print("stream written inside the output folder, with and without --force; summary.json refused")


def long_slots(scenario):
    """Every slot record's length set to the largest the format allows (2^32 - 1, about
    4.3 s in ns): a valid stream, so the run completes (slow, not stalled)."""
    import struct
    import zlib
    stream = write_stream(scenario, "short")
    data = bytearray(open(stream, "rb").read())
    at, records = 0, 0
    while at < len(data):
        total = struct.unpack_from("<I", data, at + 8)[0]
        slots_offset, slot_count = struct.unpack_from("<II", data, at + 44)
        for i in range(slot_count):
            struct.pack_into("<I", data, at + slots_offset + 48 * i + 12, 0xFFFFFFFF)
        struct.pack_into("<I", data, at + 12, 0)
        struct.pack_into("<I", data, at + 12, zlib.crc32(bytes(data[at:at + total])) & 0xFFFFFFFF)
        at += total
        records += 1
    long = os.path.join(WORK, "long.tdmm")
    open(long, "wb").write(bytes(data))
    tdmsim(["describe", long])  # the format accepts it
    out = os.path.join(WORK, "long-out")
    tdmsim(["run", scenario, "--path", "tdm", "--quiet", "--descriptors", long, "--output", out])
    total_us = tdmsimtools.read_summary(out)["paths"][0]["total_us"]
    if total_us < 4.29e6:
        sys.exit(f"FAILED: {total_us} us, less than one slot of 2^32 - 1 ns")
    print(f"{records} descriptor(s), every slot 2^32 - 1 ns: the run completes in {total_us:.0f} us of simulated time")


TDMSIM, WORK, MODE, SCENARIO = sys.argv[1:5]
shutil.rmtree(os.path.join(WORK, MODE), ignore_errors=True)
WORK = os.path.join(WORK, MODE)
os.makedirs(WORK)
{"round_trip": lambda: round_trip(SCENARIO, sys.argv[5:]), "corrupt": lambda: corrupt(SCENARIO),
 "disagree": lambda: disagree(SCENARIO), "policies": lambda: policies(SCENARIO),
 "in_output": lambda: in_output(SCENARIO), "long_slots": lambda: long_slots(SCENARIO)}[MODE]()
