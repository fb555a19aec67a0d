#!/usr/bin/env python3
"""CLI checks of the TDM unit's slot models, dynamic policy and the tdm: parameters
that bind only on some layers (issue #21, part 3; docs/moe-timing.md, docs/yaml-reference.md):

  models SCENARIO      tdm.slot_model wave_synchronous written out gives a summary.json
                       byte-identical to the default; continuous and skip_drained and
                       policy dynamic run; prints the TDM speedup of each
  binds SCENARIO PARAM LOW HIGH [KEY=VALUE...]
                       the TDM path's total differs between tdm.PARAM: LOW and HIGH
                       (with the other tdm keys KEY=VALUE set in both): the parameter
                       changes the result on this layer
  partition SCENARIO LENGTH...
                       tdm.slot_model skip_drained at each tdm.slot_length runs (the run's
                       own check that every kernel's CU-slot causes partition its window
                       passes) and the TDM path's causes add up to its total
  inert SCENARIO PARAM LOW HIGH
                       the TDM path's total is the same for both values (the parameter
                       does not bind on this layer, as docs/yaml-reference.md says)

Usage: slot_models_checks.py TDMSIM WORKDIR MODE ARGS..."""
import json
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tdmsim(args, expect=0):
    return tdmsimtools.expect_exit(TDMSIM, *args, rc=expect)


def machine(name, tdm_keys):
    """An overlay of mi500x-tdm with these tdm: keys."""
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"base: {ROOT}/workloads/machines/mi500x-tdm.yaml\nname: {name}\n")
        if tdm_keys:  # an empty `tdm:` would remove the section
            f.write("tdm:\n")
        for k, v in tdm_keys.items():
            f.write(f"  {k}: {v}\n")
    return path


def run(scenario, name, tdm_keys, path="tdm"):
    out = os.path.join(WORK, name)
    args = ["run", scenario, "--path", path, "--quiet", "--force", "--output", out]
    if tdm_keys is not None:
        args += ["--machine", machine(name + "-machine", tdm_keys)]
    tdmsim(args)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    return summary, json.dumps(strip(summary), sort_keys=True)


def strip(v):
    """The summary without what names the machine file or the host's wall time."""
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items()
                if k not in ("machine", "simulation_wall_s", "files")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def total(summary, path="tdm"):
    return next(p["total_us"] for p in summary["paths"] if p["path"] == path)


def models(scenario):
    base, base_raw = run(scenario, "default", {}, "both")
    same, same_raw = run(scenario, "explicit", {"slot_model": "wave_synchronous"}, "both")
    if base_raw != same_raw:
        sys.exit("FAILED: slot_model wave_synchronous differs from the default")
    sw = total(base, "software")
    print(f"software {sw:.3f} us")
    for model in ("wave_synchronous", "continuous", "skip_drained"):
        for policy in ("load_balance", "dynamic"):
            s, _ = run(scenario, f"{model}-{policy}",
                       {"slot_model": model, "default_policy": policy}, "tdm")
            t = total(s)
            print(f"{model:17s} {policy:13s} tdm {t:9.3f} us  speedup {sw / t:.3f}")


def partition(scenario, lengths):
    for length in lengths:
        s, _ = run(scenario, f"skip_drained-{length}", {"slot_model": "skip_drained", "slot_length": length})
        p = next(p for p in s["paths"] if p["path"] == "tdm")
        causes = sum(v for k, v in p["time_by_cause"].items() if k != "detail")
        print(f"skip_drained slot_length {length}: tdm {p['total_us']:.3f} us, causes {causes:.3f} us")
        if abs(causes - p["total_us"]) > 1e-6 * p["total_us"]:
            sys.exit(f"FAILED: slot_length {length}: the causes do not add up to the TDM total")


def kv(pairs):
    return dict(p.split("=", 1) for p in pairs)


def binds(scenario, param, low, high, extra, expect_same):
    keys = kv(extra)
    a, _ = run(scenario, f"{param}-{low}", {**keys, param: low})
    b, _ = run(scenario, f"{param}-{high}", {**keys, param: high})
    ta, tb = total(a), total(b)
    print(f"tdm.{param}: {low} -> {ta:.3f} us, {high} -> {tb:.3f} us")
    if expect_same and ta != tb:
        sys.exit(f"FAILED: tdm.{param} changed the TDM time on this layer")
    if not expect_same and ta == tb:
        sys.exit(f"FAILED: tdm.{param} has no effect on this layer")


if __name__ == "__main__":
    TDMSIM, WORK, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(WORK, exist_ok=True)
    if MODE == "models":
        models(sys.argv[4])
    elif MODE == "partition":
        partition(sys.argv[4], sys.argv[5:])
    elif MODE in ("binds", "inert"):
        binds(sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8:], MODE == "inert")
    else:
        sys.exit(f"unknown mode {MODE}")
