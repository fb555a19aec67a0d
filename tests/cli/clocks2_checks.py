#!/usr/bin/env python3
"""Clocks under load in `tdmsim run`'s outputs (docs/simulator.md "Clocks
under load"). CTest runs each mode as its own test.

  direction MACHINE   on a machine with a `power:` section, a decode layer
                      (Qwen3-30B, 4 tokens, bf16: its expert GEMMs wait on
                      their weights) runs its expert GEMMs at a higher clock
                      than a prefill layer (4096 tokens: matrix-bound), whose
                      gate/up runs below compute.clock; kernels without matrix work
                      run at compute.clock; every clock is whole MHz, in
                      summary.json and in the text table's MHz column
  peak MACHINE        a machine without one runs every stage at compute.clock

Usage: clocks2_checks.py TDMSIM WORKDIR MODE MACHINE_FILE PEAK_MHZ (its compute.clock)"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

SCENARIO = """name: clocks-{tokens}tok
description: "Qwen3-30B-A3B bf16, {tokens} tokens, for the clock governor's checks"
machine: {machine}
model: qwen3-30b-a3b
tokens: {tokens}
dtype: bf16
seed: 7
path: software
"""


def run(tdmsim, work, tokens, machine):
    scen = os.path.join(work, f"clocks-{tokens}tok.yaml")
    with open(scen, "w") as f:
        f.write(SCENARIO.format(tokens=tokens, machine=machine))
    out = os.path.join(work, f"out-{tokens}")
    shutil.rmtree(out, ignore_errors=True)
    r = tdmsimtools.expect_exit(tdmsim, "run", scen, "--output", out)
    stages = {s["stage"]: s for s in tdmsimtools.read_summary(out)["paths"][0]["stages"]}
    for s in stages.values():
        assert s["clock_mhz"] == int(s["clock_mhz"]), f"{s['stage']}: {s['clock_mhz']} MHz is not whole"
    assert "MHz" in r.stdout, "no MHz column in the text table"
    return stages


def main():
    tdmsim, work, mode, machine, peak = sys.argv[1:6]
    machine = os.path.abspath(machine)
    peak = float(peak)
    os.makedirs(work, exist_ok=True)
    decode = run(tdmsim, work, 4, machine)
    if mode == "peak":
        for s in decode.values():
            assert s["clock_mhz"] == peak, f"{s['stage']} at {s['clock_mhz']} MHz, compute.clock {peak}"
        print(f"every stage at {peak:.0f} MHz")
        return
    prefill = run(tdmsim, work, 4096, machine)
    for name in ("gate_up", "down"):
        d, p = decode[name]["clock_mhz"], prefill[name]["clock_mhz"]
        print(f"{name}: decode {d:.0f} MHz, prefill {p:.0f} MHz (compute.clock {peak:.0f})")
        assert d >= p, f"decode {name} ({d} MHz) below prefill ({p} MHz)"
    # The prefill gate/up (the layer's densest kernel: 1851 MHz on the H200
    # when written) is throttled, the decode one is not.
    assert prefill["gate_up"]["clock_mhz"] < peak, "prefill gate_up is not slowed by the power limit"
    assert decode["gate_up"]["clock_mhz"] > prefill["gate_up"]["clock_mhz"]
    for stages in (decode, prefill):
        for name in ("sort", "zero_out"):
            if name in stages:
                assert stages[name]["clock_mhz"] == peak, f"{name} (no matrix work) below compute.clock"


if __name__ == "__main__":
    main()
